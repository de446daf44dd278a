"""`make demo`: the whole story, headless, on the embedded defaults.

A Dagster instance (SQLite under ``$PAIMON_DEMO_DIR/dagster_home``), a local warehouse and
landing zone, Spark ``local[2]``:

1. generate a CDC feed (customers and orders: snapshot, inserts, updates, deletes, duplicates,
   shuffled arrival, a few malformed lines) and daily exchange-rate extracts;
2. day by day: ingest the CDC partitions and overwrite the rates partition (Spark jobs), then
   tick the sensor on ``cdc.orders``: it requests a run per new snapshot range, which updates
   ``mart.orders_enriched`` from the incremental changes only;
3. re-run the whole date range as a backfill: nothing is applied twice;
4. tick the compaction schedules: one run per bucket that needs compaction;
5. expire snapshots of every table;
6. run the asset checks, verify every table against the feed's model, print the figures.

Every step runs one of the code location's named jobs (``assets/demo/``: the components'
jobs, ``cdc_ingest_job``, ``expiry_job``, ``table_checks_job``) in the instance, so ``make ui``
shows the runs under their jobs afterwards. Exits non-zero on any failure.

The demo works in ``$PAIMON_DEMO_DIR`` and replaces a previous demo there (saying so); a
directory that is not a previous demo's is left alone unless ``--reset`` (or
``PAIMON_DEMO_RESET=1``) is given.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any, TextIO

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DEMO_DIR = Path(os.environ.get("PAIMON_DEMO_DIR") or Path(os.environ.get("TMPDIR", "/tmp"))
                / "paimon-pipelines-demo")
#: where everything but the story goes (Dagster's and Spark's own output, warnings)
LOG_NAME = "demo.log"
#: the file that marks a directory as the demo's (replaced without asking)
MARKER = ".paimon-pipelines-demo"
#: what the demo makes in its directory (a demo made before the marker existed holds only these)
DEMO_SUBDIRS = ("dagster_home", "warehouse", "landing")


def _kib(n: int) -> str:
    return f"{n / 1024:,.1f} KiB"


def _md(result: Any, asset: Any) -> dict[str, Any]:
    mats = result.asset_materializations_for_node(asset.op.name)
    return {k: v.value for k, v in mats[-1].metadata.items()}


def story_terminal(log: Path) -> TextIO:
    """Send this process's standard output and error (file descriptors 1 and 2, which the
    Spark JVM and Dagster's log capture inherit) to ``log``; return a stream on the terminal
    the demo was started from, for the story alone."""
    sys.stdout.flush()
    sys.stderr.flush()
    story = os.fdopen(os.dup(1), "w", buffering=1)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    return story


class Demo:
    def __init__(self, out: TextIO | None = None) -> None:
        self.started = time.monotonic()
        self.failures: list[str] = []
        self.out = out or sys.stdout

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def step(self, n: int, title: str) -> None:
        self.say(f"\n[{n}/6] {title}  (+{time.monotonic() - self.started:.0f}s)")

    def check(self, ok: bool, what: str) -> None:
        self.say(f"      {'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            self.failures.append(what)


def _captured_bytes(storage: Path, run_id: str) -> int:
    """The bytes of ``run_id``'s captured stdout/stderr (the local compute log manager's files
    under the instance's storage directory: what the UI's stdout/stderr tabs show)."""
    logs = storage / run_id / "compute_logs"
    return sum(p.stat().st_size for p in logs.glob("*.[oe][ur][tr]")) if logs.is_dir() else 0


def is_previous_demo(path: Path) -> bool:
    """``path`` is a demo's directory: it has the marker, or (made by a demo older than the
    marker) it holds nothing but the demo's own directories with the demo's Dagster
    instance in ``dagster_home``."""
    if (path / MARKER).exists():
        return True
    names = {p.name for p in path.iterdir()}
    return (names <= set(DEMO_SUBDIRS) and all((path / n).is_dir() for n in names)
            and (path / "dagster_home" / "dagster.yaml").is_file())


def prepare(reset: bool) -> dict[str, Path] | None:
    """The demo's directories, emptied; None (and why) when ``DEMO_DIR`` holds something
    that is not a previous demo and ``reset`` is not given."""
    if DEMO_DIR.exists() and any(DEMO_DIR.iterdir()):
        if not is_previous_demo(DEMO_DIR) and not reset:
            print(f"{DEMO_DIR} exists and is not a previous demo's directory (no {MARKER}): "
                  "not touching it. Set PAIMON_DEMO_DIR (make demo DEMO_DIR=...) to another "
                  "directory, or run with --reset (PAIMON_DEMO_RESET=1) to delete it.",
                  file=sys.stderr)
            return None
        print(f"replacing the previous demo in {DEMO_DIR} (its Dagster instance, warehouse "
              "and landing zone)", flush=True)
        shutil.rmtree(DEMO_DIR)
    DEMO_DIR.mkdir(parents=True, exist_ok=True)
    (DEMO_DIR / MARKER).write_text("made by scripts/demo.py (make demo); replaced by the next "
                                   "make demo\n")
    dirs = {k: DEMO_DIR / k for k in DEMO_SUBDIRS}
    for p in dirs.values():
        p.mkdir(parents=True)
    shutil.copy(REPO / "dagster.yaml", dirs["dagster_home"] / "dagster.yaml")
    os.environ["DAGSTER_HOME"] = str(dirs["dagster_home"])
    os.environ["PAIMON_WAREHOUSE"] = str(dirs["warehouse"])
    os.environ["PAIMON_LANDING"] = str(dirs["landing"])
    os.environ.setdefault("TZ", "UTC")
    return dirs


def main(demo: Demo) -> int:
    """The story; ``demo`` prints it (the caller has sent everything else to the log)."""
    dirs = {k: DEMO_DIR / k for k in DEMO_SUBDIRS}
    demo.say(f"Paimon Pipelines demo in {DEMO_DIR} (Dagster's and Spark's own output: "
             f"{DEMO_DIR / LOG_NAME})")

    import dagster as dg
    import pyarrow as pa

    from assets import defs
    from assets.cdc import cdc_customers, cdc_orders
    from assets.demo_data import generate
    from assets.derived import enrich_orders, orders_enriched, orders_snapshot_sensor
    from assets.maintenance import compactions, expiry_assets
    from assets.overwrite import fx_rates
    from assets.resources import LandingZone, PaimonCatalog, SparkResource
    from assets.runs import register_pools
    from assets.tables import ALL_TABLES, CUSTOMERS, FX_RATES, ORDERS, ORDERS_ENRICHED
    from paimon_core.catalog import FileSystemCatalog
    from paimon_core.fsck import fsck
    from paimon_core.io.file_io import FileIO
    from pipelines.session import is_connect

    instance = dg.DagsterInstance.get()
    register_pools(instance)  # before any run is queued (assets/runs.py)
    spark = SparkResource(master="local[2]", app_name="paimon-demo")
    res: dict[str, Any] = {
        "catalog": PaimonCatalog(warehouse=str(dirs["warehouse"])),
        "landing": LandingZone(root=str(dirs["landing"])),
        "spark": spark,
    }

    def run(job: str, **kw: Any) -> Any:
        """One run of the code location's job ``job`` in the instance (its resources: the
        location's, from PAIMON_WAREHOUSE / PAIMON_LANDING)."""
        return defs.resolve_job_def(job).execute_in_process(
            instance=instance, run_config=kw.pop("run_config", {}), **kw)

    def sensor_tick(cursor: str | None) -> Any:
        tick = orders_snapshot_sensor(dg.build_sensor_context(
            instance=instance, cursor=cursor, resources={"catalog": res["catalog"]}))
        assert isinstance(tick, dg.SensorResult)
        return tick

    # ------------------------------------------------------------------ 1. the feed
    demo.step(1, "Generate a CDC feed (Debezium JSON) and daily rate extracts")
    landing = str(dirs["landing"])
    feed = generate(FileIO(landing), landing)
    for table in ("cdc.customers", "cdc.orders"):
        per_day = ", ".join(f"{d}: {n}" for d, n in feed.events[table].items())
        bad = sum(feed.malformed[table].values())
        demo.say(f"      {table:<14} events per day {per_day}  ({bad} malformed)")
    demo.say(f"      expected final state: {len(feed.customers)} customers, "
             f"{len(feed.orders)} orders")
    if not is_connect(spark.session()):  # a shared Spark Connect server logs to its own file
        spark.session().sparkContext.setLogLevel("ERROR")

    # ------------------------------------------------------------------ 2. day by day
    demo.step(2, "Ingest day by day; the sensor drives the incremental derived table")
    cursor: str | None = None
    for day in feed.days:
        result = run("cdc_ingest_job", partition_key=day)
        for asset in (cdc_customers, cdc_orders):
            md = _md(result, asset)
            demo.say(
                f"      {day} {md['paimon/table']:<14} snapshot {md['paimon/snapshot_id']:>2} "
                f"{md['paimon/commit_kind']:<6} events {md['cdc/events']:>5} "
                f"(quarantined {md['cdc/quarantined']}) -> +{md['paimon/rows_added']} "
                f"-{md['paimon/rows_deleted']} rows, {md['paimon/files_added']} files, "
                f"{_kib(md['paimon/bytes_added'])}")
        md = _md(run("fx_rates_overwrite_job", partition_key=day), fx_rates)
        demo.say(f"      {day} {'ref.fx_rates':<14} snapshot {md['paimon/snapshot_id']:>2} "
                 f"{md['paimon/commit_kind']:<9} partition {md['overwrite/partition']}: "
                 f"{md['overwrite/rows']} rows")
        tick = sensor_tick(cursor)
        cursor = tick.cursor
        for req in tick.run_requests:
            out = run("mart_orders_enriched_job", run_config=req.run_config,
                      tags={**req.tags, "dagster/run_key": req.run_key})
            md = _md(out, orders_enriched)
            demo.say(
                f"      {day} sensor -> run {req.run_key}: {md['paimon/mode']} read "
                f"{md['paimon/source_rows_read']} changed rows of source snapshots "
                f"{md['paimon/source_range']} -> mart.orders_enriched snapshot "
                f"{md['paimon/snapshot_id']}: {md['paimon/upserts']} upserts, "
                f"{md['paimon/deletes']} deletes")

    # ------------------------------------------------------------------ 3. backfill again
    demo.step(3, f"Backfill {feed.days[0]}..{feed.days[-1]} once more (exactly once)")
    rng = {"dagster/asset_partition_range_start": feed.days[0],
           "dagster/asset_partition_range_end": feed.days[-1]}
    result = run("cdc_ingest_job", tags=rng)
    for asset in (cdc_customers, cdc_orders):
        md = _md(result, asset)
        demo.check(md["paimon/rows_added"] == 0 and len(md["cdc/already_committed_days"]) == 3,
                   f"{md['paimon/table']}: days already committed "
                   f"{md['cdc/already_committed_days']}, rows applied {md['paimon/rows_added']}")

    # ------------------------------------------------------------------ 4. compaction
    demo.step(4, "Compaction: the schedules request one run per bucket that needs it")
    repo = defs.get_repository_def()
    when = dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0)
    for comp in compactions:
        ctx = dg.build_schedule_context(instance=instance, scheduled_execution_time=when,
                                        resources={"catalog": res["catalog"]},
                                        repository_def=repo)
        tick_result: Any = comp.schedule.evaluate_tick(ctx)
        if not tick_result.run_requests:
            demo.say(f"      {comp.asset.key.to_user_string()}: {tick_result.skip_message}")
        for req in tick_result.run_requests or []:
            md = _md(run(comp.job.name, partition_key=req.partition_key, tags=req.tags),
                     comp.asset)
            demo.say(
                f"      {req.partition_key:<34} files {md['compact/files_before']:>2}"
                f" -> {md['compact/files_after']}, sorted runs "
                f"{md['compact/sorted_runs_before']} -> {md['compact/sorted_runs_after']}, "
                f"{_kib(md['compact/bytes_rewritten'])} rewritten into "
                f"{_kib(md['compact/bytes_written'])} (snapshot {md['paimon/snapshot_id']})")
    tick = sensor_tick(cursor)
    cursor = tick.cursor
    what = tick.skip_reason.skip_message if tick.skip_reason else tick.run_requests
    demo.say(f"      sensor after compaction: {what}")

    # ------------------------------------------------------------------ 5. expiry
    demo.step(5, "Expire snapshots (retention: snapshot.num-retained.min/max = 2/4)")
    result = run("expiry_job")
    for asset in expiry_assets:
        md = _md(result, asset)
        demo.say(
            f"      {md['paimon/table']:<20} expired {md['expire/snapshots_expired']} "
            f"{md['expire/expired_ids']}, snapshots {md['expire/retained_before']} -> "
            f"{md['expire/retained_after']}, {md['expire/files_deleted']} files / "
            f"{_kib(md['expire/bytes_freed'])} freed")

    # ------------------------------------------------------------------ 6. checks
    demo.step(6, "Asset checks and verification against the feed's model")
    result = run("table_checks_job")
    by_table: dict[str, list[str]] = {}
    for ev in result.get_asset_check_evaluations():
        mark = "ok" if ev.passed else "FAILED"
        by_table.setdefault(ev.asset_key.to_user_string(), []).append(
            f"{ev.check_name} {mark}")
        if not ev.passed:
            demo.failures.append(f"check {ev.asset_key.to_user_string()}:{ev.check_name}")
    for key, marks in sorted(by_table.items()):
        demo.say(f"      {key:<22} {', '.join(sorted(marks))}")

    catalog = FileSystemCatalog(str(dirs["warehouse"]))

    def state(identifier: str, key: str, drop: tuple[str, ...] = ()) -> dict[Any, Any]:
        rows = catalog.get_table(identifier).to_arrow().to_pylist()
        return {r[key]: {k: v for k, v in r.items() if k not in drop} for r in rows}

    demo.check(state(CUSTOMERS.identifier, "customer_id", ("src_lsn",)) == feed.customers,
               f"cdc.customers equals the model ({len(feed.customers)} rows)")
    demo.check(state(ORDERS.identifier, "order_id", ("src_lsn",)) == feed.orders,
               f"cdc.orders equals the model ({len(feed.orders)} rows)")
    model = enrich_orders(pa.Table.from_pylist(list(feed.orders.values())), 0)
    expected = {r["order_id"]: r for r in model.drop_columns(["source_snapshot"]).to_pylist()}
    demo.check(state(ORDERS_ENRICHED.identifier, "order_id", ("source_snapshot",)) == expected,
               f"mart.orders_enriched equals enrich(cdc.orders) ({len(expected)} rows), "
               "maintained from incremental changes only")
    demo.check(len(catalog.get_table(FX_RATES.identifier).to_arrow()) == 5 * len(feed.days),
               f"ref.fx_rates holds {len(feed.days)} partitions x 5 rates")
    for spec in ALL_TABLES:
        demo.check(fsck(catalog.get_table(spec.identifier)).ok, f"fsck {spec.identifier}")

    demo.say("\n      table                 snapshots   rows  records  files  bytes")
    from assets.metadata import table_stats

    for spec in ALL_TABLES:
        t = catalog.get_table(spec.identifier)
        sm = t.snapshot_manager
        st = table_stats(t, small_file_bytes=spec.small_file_bytes)
        rows = t.to_arrow().num_rows
        demo.say(f"      {spec.identifier:<21} {sm.earliest_snapshot_id():>3}..{st.snapshot_id:<4}"
                 f" {rows:>6} {st.records:>8} {st.files:>6}  {_kib(st.bytes)}")
    runs = len(instance.get_runs())
    logged = [r.run_id for r in instance.get_runs()
              if _captured_bytes(Path(instance.storage_directory()), r.run_id) > 0]
    demo.check(len(logged) == runs,
               f"each run's stdout/stderr is kept for the UI ({len(logged)} of {runs} runs)")
    demo.say(f"\n{runs} Dagster runs recorded in {dirs['dagster_home']} "
             f"({time.monotonic() - demo.started:.0f}s). Browse them: make ui")
    if demo.failures:
        demo.say(f"DEMO FAILED: {demo.failures}")
        return 1
    return 0


def run_demo() -> int:
    """Prepare the directory, send Dagster's and Spark's own output to its log, tell the story;
    any failure is shown on the terminal (with the log's last lines) and exits non-zero."""
    reset = "--reset" in sys.argv[1:] or os.environ.get("PAIMON_DEMO_RESET") == "1"
    if prepare(reset) is None:
        return 2
    log = DEMO_DIR / LOG_NAME
    demo = Demo(story_terminal(log))
    try:
        return main(demo)
    except Exception:  # any failure: show it and exit non-zero
        demo.say(traceback.format_exc())
        tail = log.read_text(errors="replace").splitlines()[-40:]
        demo.say(f"last lines of {log}:\n" + "\n".join(tail))
        demo.say("DEMO FAILED")
        return 1


if __name__ == "__main__":
    sys.exit(run_demo())
