# Paimon Pipelines — every set-up step lives here (a fresh clone needs only python3.11 + Java 17).
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
SHARED ?= $(abspath ../shared)
ORACLE := $(SHARED)/oracle/oracle
SPARK_JARS = $(shell $(PY) -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))' 2>/dev/null)
export PAIMON_ORACLE_SPARK_JARS = $(SPARK_JARS)
export TZ := UTC
PYTEST_ARGS ?=
# pytest-xdist workers of `make test` (tests sharing a SparkSession, the interop oracle batches,
# the race pool or a module's fixtures stay on one worker: tests/conftest.py); 0 = in-process
TEST_WORKERS ?= 2

.PHONY: install oracle lint typecheck unit test test-prod demo prod-demo ui bench clean

$(VENV)/.installed: requirements.lock requirements-build.txt pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q -r requirements-build.txt
	$(PIP) install -q -r requirements.lock
	$(PIP) install -q --no-deps --no-build-isolation -e .
	touch $@

install: $(VENV)/.installed

# The reference implementations (Paimon Java 0.9 + pypaimon 2.1), installed by the shared
# oracle's own setup; the runtime jars come from our pyspark install (no big download).
oracle: install
	@test -x $(ORACLE) || { echo "oracle not found at $(ORACLE) (shared/ must sit beside the repo)"; exit 1; }
	$(ORACLE) setup -q

lint: install
	$(VENV)/bin/ruff check paimon_core pipelines assets tests bench scripts

typecheck: install
	$(VENV)/bin/mypy paimon_core

unit: install
	$(VENV)/bin/pytest -q -m "not oracle" $(PYTEST_ARGS)

# Hypothesis: the thorough "ci" profile when CI is set, the fast "dev" one otherwise (an
# explicit HYPOTHESIS_PROFILE wins); see tests/profiles.py. PAIMON_TEST_TIMES=path also
# writes the per-folder time table that pytest prints at the end.
test: export HYPOTHESIS_PROFILE ?= $(if $(CI),ci,dev)
test: install oracle lint typecheck
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

# The production topology (docker/compose.yaml as loopback processes: Postgres, moto S3, a Spark
# master + 2 workers, code server, webserver, daemon) and the story driven through GraphQL
# (tests/prod; not part of `make test`: pyproject's norecursedirs). Under 10 minutes.
test-prod: install
	$(VENV)/bin/pytest -q tests/prod $(PYTEST_ARGS)

# The same topology and story with each step's figures; the services stay up (Dagster UI and
# Spark master UI printed) until Ctrl-C. PROD_DEMO_ARGS=--stop stops them at the end.
PROD_DEMO_DIR ?= $(if $(TMPDIR),$(TMPDIR),/tmp)/paimon-prod-demo
PROD_DEMO_ARGS ?=
prod-demo: install
	$(PY) scripts/prod_demo.py --root $(PROD_DEMO_DIR) $(PROD_DEMO_ARGS)

# The whole story, headless, on the embedded defaults (SQLite Dagster instance, local lake,
# Spark local[2]): a CDC feed -> ingestion -> sensor-driven derived table -> compaction ->
# expiry, with each step's figures. The data stays in $(DEMO_DIR) for `make ui`.
DEMO_DIR ?= $(if $(TMPDIR),$(TMPDIR),/tmp)/paimon-pipelines-demo
UI_PORT ?= 3000
export PAIMON_DEMO_DIR := $(DEMO_DIR)

demo: install
	$(PY) scripts/demo.py $(if $(RESET),--reset)

# dagster dev on 127.0.0.1:$(UI_PORT) over the demo's instance and lake (runs the demo first
# when there is none)
ui: install
	UI_PORT=$(UI_PORT) PY=$(PY) scripts/ui.sh

# BENCH_SCALE_SIZES=1000000 (or 1M,4M) limits the scale step (default 1M,4M,16M rows).
# BENCH_METADATA_SIZES=1M (or 100k,1M) sizes the metadata step (default 100k data-file entries;
# the 1M-entry table is opt-in: its build takes about an hour).
# Byte-compiled first: a fresh measuring process must not pay for compiling our sources.
bench: install oracle
	$(PY) -m compileall -q paimon_core pipelines
	$(PY) bench/run.py
	$(PY) bench/dv.py
	$(PY) bench/scale.py
	$(PY) bench/cdc.py
	$(PY) bench/cdc_database.py --single-tables orders,payments,audit_log
	$(PY) bench/metadata_scale.py

# docker/secrets.env with random secrets for docker/compose.yaml (kept if it exists)
.PHONY: prod-secrets
prod-secrets:
	sh docker/make-secrets.sh

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build *.egg-info
