#!/usr/bin/env bash
# `make ui`: dagster dev on 127.0.0.1 over the demo's Dagster instance and lake.
# Runs the demo first when its data is not there (PAIMON_DEMO_DIR, set by the Makefile).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
DEMO_DIR=${PAIMON_DEMO_DIR:-${TMPDIR:-/tmp}/paimon-pipelines-demo}
PORT=${UI_PORT:-3000}
if [ ! -f "$DEMO_DIR/dagster_home/dagster.yaml" ] || [ ! -d "$DEMO_DIR/warehouse" ]; then
    echo "no demo data in $DEMO_DIR: running the demo first"
    PAIMON_DEMO_DIR="$DEMO_DIR" "$PY" scripts/demo.py
fi
export DAGSTER_HOME="$DEMO_DIR/dagster_home"
export PAIMON_WAREHOUSE="$DEMO_DIR/warehouse"
export PAIMON_LANDING="$DEMO_DIR/landing"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# the instance's pools before it queues a run (assets/runs.py); idempotent
"$PY" -W ignore -m assets.pools
# the Spark Connect server the runs share (pipelines/connect.py), started in the background
# now so that the first run finds it up; it stops by itself after 30 idle minutes
# (PAIMON_SPARK_CONNECT=off: a JVM per run instead)
case "${PAIMON_SPARK_CONNECT:-auto}" in
    auto) "$PY" -W ignore -m pipelines.connect start & ;;
esac
echo "Dagster UI on http://127.0.0.1:$PORT  (DAGSTER_HOME=$DAGSTER_HOME, Ctrl-C to stop)"
exec "$(dirname "$PY")/dagster" dev -w workspace.yaml -h 127.0.0.1 -p "$PORT"
