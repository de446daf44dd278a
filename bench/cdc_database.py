"""Whole-database CDC benchmark (issue 30, scope 8): one canal-json landing of 20 tables
(``bench/canal_db.py``), three ways over the same files, in one run:

    .venv/bin/python bench/cdc_database.py [--events 4000000] [--rounds 3]
        [--sides dbsync,single,spark] [--single session|cli] [--bucket 4]
    .venv/bin/python bench/cdc_database.py --shape ci        # 20,000 events, 1 round (smoke)

* **dbsync** (a): ``python -m pipelines.jobs.cdc_sync_database --warehouse W --database shop
  --landing L --format canal-json`` (plus ``--dbsync-arg``s): one pass writes every table.
* **single** (b): the single-table job once per table, routed by the event's table
  (``--source-table <table>``), each table created with :func:`canal_db.paimon_schema`
  (``bucket`` = ``--bucket``). ``--single cli`` (default): 20 processes ``python -m
  pipelines.jobs.cdc_ingest ... --source-table T --schema T.json`` (what 20 jobs cost, each
  with its Spark session); ``--single session``: one process, one session, 20 calls of
  :func:`pipelines.cdc.ingest.ingest` with ``CdcOptions(source_table=T)`` (the work alone).
* **spark** (c): what a Spark user writes without us, one process: ``spark.read.schema(S)
  .json(batch)`` (``S`` declares ``data`` as the union of the 20 tables' columns, all text,
  plus ``database``, ``table``, ``ts``, ``type``), ``posexplode(data)``, persisted once; then
  per table: filter by database and table, the last change per key (``max_by(struct(type,
  row), struct(ts, pos))`` grouped by the key columns), deletes dropped, values cast to the
  tables' types, ``write.parquet`` per table.

Each side runs in fresh processes measured as a tree (``bench/scale_spark.measure_tree``: CPU
of every process of the tree -- driver, JVM, Python workers --, peak tree RSS, wall); the
sides alternate within a round, the first side rotating per round; medians over rounds. Our
own children print :mod:`pipelines.cputrace` markers, so their session start-up is reported
apart. **Checks** (first round, not timed; exit 1 if wrong): every table of every side equals
:func:`canal_db.expected` (every column). **Targets** (issue 30; ``PASS`` / ``MISS``, never a
failure): dbsync <= 0.5x the CPU of single, and <= 0.8x spark. Single-table CDC against plain
Spark at 1M and 4M events is ``bench/cdc.py``'s step. Writes ``bench/results/cdc_database.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TREE_ENV = "BENCH_CODE_TREE"
BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"
for _p in (str(BENCH), str(REPO), os.environ.get(TREE_ENV, "")):
    if _p and _p not in sys.path:
        sys.path.insert(0, _p)  # a --single-tree child: that tree's pipelines first

import canal_db  # noqa: E402
from scale_spark import measure_tree  # noqa: E402

from pipelines.cputrace import CPU_LOG_ENV, read_marks  # noqa: E402

SEED = 20260530
SHAPES = {"full": (4_000_000, 8, 3), "ci": (20_000, 2, 1)}  # events, files, rounds
TARGET_SINGLE, TARGET_SPARK = 0.5, 0.8
SIDES = ("dbsync", "single", "spark")
FORMAT = "canal-json"
MASTER = "local[2]"  # every side's Spark master (the machine's 2 cores)


# ---------------------------------------------------------------------------- the landing


def landing(events: int, files: int) -> tuple[Path, canal_db.Feed, dict[str, Any]]:
    """The cached landing of ``events`` events (generated once per version of the generator),
    its feed and facts."""
    digest = hashlib.sha256((BENCH / "canal_db.py").read_bytes()).hexdigest()[:12]
    cache = RESULTS / "cache" / f"canaldb-{digest}-{SEED}-{events}-{files}"
    feed = canal_db.generate(events, SEED)
    stamp = cache / "done.json"
    if not stamp.is_file():
        shutil.rmtree(cache, ignore_errors=True)
        t = time.perf_counter()
        canal_db.write_landing(feed, cache / "landing", files)
        stamp.write_text(json.dumps({"generate_s": round(time.perf_counter() - t, 1)}))
    facts = json.loads(stamp.read_text())
    facts["bytes"] = sum(p.stat().st_size for p in (cache / "landing" / "batch-000001").iterdir())
    facts["events"] = events
    facts["events_per_table"] = {s.name: int((feed.table == i).sum())
                                 for i, s in enumerate(feed.specs)}
    return cache / "landing", feed, facts


# ---------------------------------------------------------------------------- children


def _session() -> Any:
    from pipelines.cputrace import mark
    from pipelines.session import get_session

    spark = get_session(master=MASTER,
                        app_name="paimon-bench-cdc-database")
    spark.sparkContext.setLogLevel("ERROR")
    mark("session")
    return spark


def child_spark(spark: Any, batch: Path, out: Path, specs: list[canal_db.TableSpec]) -> None:
    """Plain Spark doing the routing (module docs, (c))."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    names = sorted({c.name for s in specs for c in s.columns})
    row = T.StructType([T.StructField(n, T.StringType()) for n in names])
    schema = T.StructType([
        T.StructField("data", T.ArrayType(row)), T.StructField("database", T.StringType()),
        T.StructField("table", T.StringType()), T.StructField("ts", T.LongType()),
        T.StructField("type", T.StringType())])
    events = (spark.read.schema(schema).json(str(batch))
              .select("database", "table", "ts", "type", F.posexplode("data").alias("pos", "d"))
              .persist(StorageLevel.MEMORY_AND_DISK))
    for spec in specs:
        mine = events.where((F.col("database") == canal_db.DATABASE)
                            & (F.col("table") == spec.name)
                            & F.col("type").isin("INSERT", "UPDATE", "DELETE"))
        latest = (mine.groupBy(*[F.col("d." + k).alias(k) for k in spec.primary_keys])
                  .agg(F.max_by(F.struct("type", "d"), F.struct("ts", "pos")).alias("m"))
                  .where(F.col("m.type") != "DELETE"))
        latest.select(*[_typed(F, c) for c in spec.columns]).write.mode("overwrite").parquet(
            str(out / spec.name))
    events.unpersist()


def _typed(F: Any, c: canal_db.Column) -> Any:
    v = F.col("m.d." + c.name)
    if c.paimon == "BOOLEAN":
        v = v == F.lit("1")
    elif c.paimon.startswith("TIMESTAMP"):
        v = F.to_timestamp(v, "yyyy-MM-dd HH:mm:ss")
    else:
        v = v.cast(c.paimon.replace("VARCHAR(64)", "STRING").replace("VARCHAR(255)", "STRING"))
    return v.alias(c.name)


def child_single(spark: Any, batch_root: Path, wh: Path, specs: list[canal_db.TableSpec],
                 bucket: int) -> None:
    """20 single-table runs in one session (module docs, (b) ``session``)."""
    from paimon_core import Schema
    from pipelines.cdc.ingest import CdcOptions, ingest
    from pipelines.config import CatalogSettings

    for spec in specs:
        schema = Schema.from_json(canal_db.paimon_schema(spec, {"bucket": str(bucket)}))
        for r in ingest(spark, CatalogSettings(str(wh)), f"{canal_db.DATABASE}.{spec.name}",
                        str(batch_root), CdcOptions(format=FORMAT, source_table=spec.name,
                                                    quarantine=str(wh / "_q" / spec.name)),
                        schema=schema):
            print(r.to_json(), flush=True)


def run_child(args: argparse.Namespace) -> int:
    import pipelines
    from pipelines.cputrace import mark

    print(f"pipelines from {Path(pipelines.__file__).parent.parent}", file=sys.stderr)
    specs = canal_db.specs(SEED)
    spark = _session()
    try:
        if args.child == "spark":
            child_spark(spark, Path(args.landing) / "batch-000001", Path(args.out), specs)
        else:
            child_single(spark, Path(args.landing), Path(args.out), single_specs(args),
                         args.bucket)
        mark("work")
    finally:
        spark.stop()
    return 0


# ---------------------------------------------------------------------------- the sides


def export_tree(rev: str) -> Path:
    """``pipelines`` and ``paimon_core`` of revision ``rev`` under
    ``bench/results/trees/<sha>`` (once): the code a ``--single-tree`` side runs."""
    sha = subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout.strip()
    out = RESULTS / "trees" / sha[:12]
    if not (out / "pipelines" / "__init__.py").exists():
        out.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", sha, "pipelines", "paimon_core"], cwd=REPO,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def _env(tree: Path | None = None) -> dict[str, str]:
    """The children's environment: CPU markers on; ``tree`` (else this checkout) first on the
    path of the driver and of the Spark workers."""
    first = [str(tree)] if tree is not None else []
    env = {**os.environ, CPU_LOG_ENV: "1", "PYTHONPATH": os.pathsep.join(
        [*first, str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    if tree is not None:
        env[TREE_ENV] = str(tree)
    return env


def _phases(r: dict[str, Any]) -> dict[str, Any]:
    err = r.pop("stderr", "")
    code = [ln for ln in err.splitlines() if ln.startswith("pipelines from ")]
    if code:
        r["code"] = code[0][len("pipelines from "):]
    marks = read_marks(err)
    r.pop("stdout", None)
    if {"session", "work"} <= marks.keys():
        r["startup_cpu_s"] = marks["session"]["tree_cpu_s"]
        r["work_cpu_s"] = marks["work"]["tree_cpu_s"] - marks["session"]["tree_cpu_s"]
    return r


def _sum(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {k: sum(r[k] for r in runs) for k in ("wall_s", "cpu_s")}
    out["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    out["load1"] = runs[-1]["load1"]
    for k in ("startup_cpu_s", "work_cpu_s"):
        if all(k in r for r in runs):
            out[k] = sum(r[k] for r in runs)
    out["processes"] = len(runs)
    out["per_table"] = [{k: r[k] for k in ("table", "cpu_s", "wall_s", "peak_rss_mb")}
                        for r in runs]
    return out


def estimate_single(per_table: list[dict[str, Any]], events: dict[str, int]
                    ) -> float | None:
    """The CPU of the 20 single-table runs estimated from a sample of them (``--single-tables``
    with ``--single cli``): a least-squares line ``cpu = a + b * events of the table`` (each
    run reads the whole landing: ``a``; its own table's rows: ``b``), summed over the 20
    tables. None with fewer than 2 runs."""
    import numpy as np

    if len(per_table) < 2:
        return None
    x = np.array([events[r["table"]] for r in per_table], float)
    y = np.array([r["cpu_s"] for r in per_table], float)
    b, a = np.polyfit(x, y, 1)
    return float(a * len(events) + b * sum(events.values()))


class Timeline:
    """Where the database sync's CPU goes: every 0.5 s, the CPU of this process's tree (each
    process's last value kept, as ``measure_tree``) and whether the routing pass's marker
    (``<landing>/_staging/batch-000001/_routed.json``) exists; after the run,
    :meth:`phases` splits the CPU at the routing marker and at each table's first snapshot
    (the job commits the tables one after the other)."""

    def __init__(self, land: Path) -> None:
        import threading

        self.marker = land / "_staging" / "batch-000001" / "_routed.json"
        self.samples: list[tuple[float, float, bool]] = []
        self._last: dict[tuple[int, int], int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from proctree import TICK, proc_stat, tree

        while True:
            for pid in tree(os.getpid()):
                st = proc_stat(pid)
                if st is not None:
                    self._last[(pid, int(st[19]))] = int(st[11]) + int(st[12])
            self.samples.append((time.time(), sum(self._last.values()) / TICK,
                                 self.marker.exists()))
            if self._stop.wait(0.5):
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _cpu_at(self, t: float) -> float:
        return next((c for (u, c, _) in self.samples if u >= t), self.samples[-1][1])

    def phases(self, wh: Path) -> dict[str, float]:
        """CPU seconds: ``routing`` (start -> the marker), then per table (previous commit ->
        its first snapshot), ``rest`` (the last commit -> the end)."""
        if not self.samples:
            return {}
        t0, c0 = self.samples[0][0], self.samples[0][1]
        routed = next((u for (u, _, m) in self.samples if m), None)
        out: dict[str, float] = {}
        prev_c = c0
        if routed is not None:
            prev_c = self._cpu_at(routed)
            out["routing"] = round(prev_c - c0, 1)
            out["routing_wall_s"] = round(routed - t0, 1)
        snaps = sorted((f.stat().st_mtime, f.parent.parent.name)
                       for f in wh.glob(f"{canal_db.DATABASE}.db/*/snapshot/snapshot-1"))
        for mtime, name in snaps:
            c = self._cpu_at(mtime)
            out[name] = round(c - prev_c, 1)
            prev_c = c
        out["rest"] = round(self.samples[-1][1] - prev_c, 1)
        return out


def single_specs(args: argparse.Namespace) -> list[canal_db.TableSpec]:
    """The tables the single side runs: all, or ``--single-tables`` (a sample: the side's
    figures are then of those runs, and the 20 runs' total is estimated apart)."""
    specs = canal_db.specs(SEED)
    if not getattr(args, "single_tables", None):
        return specs
    names = args.single_tables.split(",")
    unknown = sorted(set(names) - {s.name for s in specs})
    if unknown:
        raise SystemExit(f"--single-tables: unknown tables {unknown}")
    return [s for s in specs if s.name in names]


def run_side(side: str, land: Path, wh: Path, work: Path, args: argparse.Namespace
             ) -> dict[str, Any]:
    py = sys.executable
    if side == "dbsync":
        cmd = [py, "-m", "pipelines.jobs.cdc_sync_database", "--warehouse", str(wh),
               "--database", canal_db.DATABASE, "--landing", str(land), "--format", FORMAT,
               "--master", MASTER, "--table-conf", f"bucket={args.bucket}",
               "--quarantine", str(work / "q-dbsync"), *args.dbsync_arg]
        # the job stages the routed lines in <landing>/_staging (and notes the batch done
        # there): every run starts from the bare landing
        shutil.rmtree(land / "_staging", ignore_errors=True)
        timeline = Timeline(land)
        try:
            r = _phases(measure_tree(cmd, _env()))
        finally:
            timeline.stop()
            shutil.rmtree(land / "_staging", ignore_errors=True)
        r["cpu_by_phase"] = timeline.phases(wh)
        return r
    tree = args.tree if side == "single" else None
    # the Spark workers start in the driver's directory, which comes first on their path:
    # with a --single-tree, that tree
    cwd = tree or REPO
    if side == "spark" or args.single == "session":
        cmd = [py, str(Path(__file__)), "--child", side, "--landing", str(land),
               "--out", str(wh), "--bucket", str(args.bucket)]
        if side == "single" and args.single_tables:
            cmd += ["--single-tables", args.single_tables]
        return _phases(measure_tree(cmd, _env(tree), cwd))
    runs = []
    for spec in single_specs(args):
        sch = work / f"{spec.name}.json"
        sch.write_text(json.dumps(canal_db.paimon_schema(spec, {"bucket": str(args.bucket)})))
        cmd = [py, "-m", "pipelines.jobs.cdc_ingest", "--warehouse", str(wh), "--table",
               f"{canal_db.DATABASE}.{spec.name}", "--landing", str(land), "--format", FORMAT,
               "--source-table", spec.name, "--schema", str(sch), "--master", MASTER,
               "--quarantine", str(work / "q" / spec.name)]
        runs.append(_phases(measure_tree(cmd, _env(tree), cwd)))
        runs[-1]["table"] = spec.name
        # each run as it ends: 20 runs take long on a busy machine, and their figures are
        # worth having even when the side is cut short
        print(f"    single {len(runs)}/{len(single_specs(args))} {spec.name}: cpu "
              f"{runs[-1]['cpu_s']:.1f} s, wall {runs[-1]['wall_s']:.1f} s, load "
              f"{runs[-1]['load1']}", flush=True)
    return _sum(runs)


def check_side(side: str, out: Path, feed: canal_db.Feed, tables: set[str] | None = None
               ) -> list[str]:
    """Every table (of ``tables``) of a side's output against the model: the failures."""
    import pyarrow.parquet as pq

    from paimon_core import FileSystemCatalog

    bad = []
    cat = None if side == "spark" else FileSystemCatalog(str(out))
    for i, spec in enumerate(feed.specs):
        if tables is not None and spec.name not in tables:
            continue
        try:
            got = (pq.read_table(str(out / spec.name)) if cat is None else
                   cat.get_table(f"{canal_db.DATABASE}.{spec.name}").to_arrow())
        except Exception as e:  # reported as the side's failure
            bad.append(f"{spec.name}: {type(e).__name__}: {e}"[:300])
            continue
        err = canal_db.check(feed, i, got)
        if err is not None:
            bad.append(err)
    return bad


def available(side: str, tree: Path | None = None) -> str | None:
    """Why ``side`` cannot run with this checkout (the single side: with ``tree``), or None."""
    if side == "dbsync" and importlib.util.find_spec("pipelines.jobs.cdc_sync_database") is None:
        return "no pipelines.jobs.cdc_sync_database in this checkout"
    if side == "single":
        job = (tree or REPO) / "pipelines" / "jobs" / "cdc_ingest.py"
        if "--source-table" not in job.read_text():
            return f"{job} has no --source-table (no routing by the event's table)"
    return None


# ---------------------------------------------------------------------------- main

MEDIANS = ("wall_s", "cpu_s", "peak_rss_mb", "startup_cpu_s", "work_cpu_s")


def _medians(runs: list[dict[str, Any]]) -> dict[str, float]:
    return {k: round(float(statistics.median(r[k] for r in runs)), 2) for k in MEDIANS
            if runs and all(k in r for r in runs)}


def targets(med: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    out = []
    for other, limit in (("single", TARGET_SINGLE), ("spark", TARGET_SPARK)):
        if "dbsync" in med and other in med:
            for k in ("cpu_s", "wall_s"):
                if k == "wall_s" and "estimated" in med[other]:
                    continue
                v = med["dbsync"][k] / med[other][k]
                est = " (single: ESTIMATED from sampled runs)" if "estimated" in med[other] else ""
                out.append({"target": f"dbsync / {other} {k[:-2]} <= {limit}{est}", "value":
                            round(v, 3), "limit": limit, "pass": v <= limit})
    return out


def bench(args: argparse.Namespace) -> dict[str, Any]:
    events, files, rounds = SHAPES[args.shape]
    events = args.events or events
    rounds = args.rounds or rounds
    t = time.perf_counter()
    land, feed, facts = landing(events, files)
    print(f"{events:,} canal-json events of {len(feed.specs)} tables "
          f"({facts['bytes'] / 2**20:,.0f} MiB, {files} files), ready in "
          f"{time.perf_counter() - t:.1f} s (generated in {facts['generate_s']} s)", flush=True)
    sides, skipped = [], {}
    for s in args.sides.split(","):
        why = available(s, args.tree)
        if why is None:
            sides.append(s)
        else:
            skipped[s] = why
            print(f"  {s}: SKIPPED ({why})", flush=True)
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in sides}
    failures: list[str] = []
    load_start = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="bench-cdcdb-"))
    try:
        for rnd in range(rounds):
            for side in sides[rnd % len(sides):] + sides[:rnd % len(sides)] if sides else []:
                out = work / f"{side}-{rnd}"
                try:
                    r = run_side(side, land, out, work, args)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    failures.append(f"{side} round {rnd + 1}: {e}"[:3000])
                    print(f"  round {rnd + 1} {side}: FAILED {str(e)[:2000]}", flush=True)
                    continue
                if rnd == 0:
                    sample = ({x.name for x in single_specs(args)}
                              if side == "single" and args.single_tables else None)
                    bad = check_side(side, out, feed, sample)
                    r["check"] = bad or "ok"
                    failures += [f"{side}: {b}" for b in bad]
                runs[side].append(r)
                extra = (f" (session start-up {r['startup_cpu_s']:.1f} s, work "
                         f"{r['work_cpu_s']:.1f} s)" if "work_cpu_s" in r else "")
                if r.get("cpu_by_phase"):
                    extra += f"\n    cpu by phase: {r['cpu_by_phase']}"
                print(f"  round {rnd + 1} {side:<7} wall {r['wall_s']:8.2f} s  cpu "
                      f"{r['cpu_s']:8.2f} s{extra}  peak tree RSS {r['peak_rss_mb']:6.0f} MB  "
                      f"load {r['load1']}  check {r.get('check', '-') if rnd == 0 else '-'}",
                      flush=True)
                shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {s: _medians(v) for s, v in runs.items() if v}
    if "single" in med and args.single_tables and runs["single"][0].get("per_table"):
        est = estimate_single(runs["single"][0]["per_table"], facts["events_per_table"])
        if est is not None:  # the targets then use the estimate of the 20 runs
            med["single_sampled"] = med.pop("single")
            med["single"] = {"cpu_s": round(est, 1), "wall_s": float("nan"),
                             "peak_rss_mb": med["single_sampled"]["peak_rss_mb"],
                             "estimated": 1.0}
    return {"events": events, "files": files, "rounds": rounds, "facts": facts,
            "single_mode": args.single, "single_tree": args.single_tree, "bucket": args.bucket,
            "skipped": skipped,
            "runs": runs, "medians": med, "targets": targets(med), "failures": failures,
            "load_avg_start": load_start, "load_avg_end": os.getloadavg(),
            "cpu_count": os.cpu_count()}


def report(res: dict[str, Any]) -> list[str]:
    lines = [f"\nwhole-database CDC, {res['events']:,} events, 20 tables, {res['rounds']} "
             f"round(s), medians (single: {res['single_mode']}); load average "
             f"{res['load_avg_start'][0]:.1f} -> {res['load_avg_end'][0]:.1f}"]
    for side, m in res["medians"].items():
        extra = (f"  (start-up {m['startup_cpu_s']:.1f} s, work {m['work_cpu_s']:.1f} s)"
                 if "work_cpu_s" in m else "")
        lines.append(f"  {side:<7} wall {m['wall_s']:8.2f} s  cpu {m['cpu_s']:8.2f} s{extra}  "
                     f"peak tree RSS {m['peak_rss_mb']:6.0f} MB  "
                     f"{res['events'] / m['wall_s']:,.0f} events/s")
    if "single_sampled" in res["medians"]:
        lines.append(f"  single: {res['medians']['single']['cpu_s']:.1f} s CPU for the 20 runs, "
                     f"ESTIMATED from the sampled runs {res['runs']['single'][0]['per_table']}")
    for t in res["targets"]:
        lines.append(f"  {'PASS' if t['pass'] else 'MISS'} {t['target']}: {t['value']:.2f}")
    lines += [f"  SKIPPED {s}: {why}" for s, why in res["skipped"].items()]
    lines += [f"  FAILED {f}" for f in res["failures"]]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--shape", choices=sorted(SHAPES), default="full")
    p.add_argument("--events", type=int, help="events (default: the shape's)")
    p.add_argument("--rounds", type=int, help="rounds (default: the shape's)")
    p.add_argument("--sides", default=",".join(SIDES))
    p.add_argument("--single", choices=["cli", "session"], default="cli")
    p.add_argument("--bucket", type=int, default=4,
                   help="bucket of every table (single: --schema; dbsync: --table-conf)")
    p.add_argument("--dbsync-arg", action="append", default=[],
                   help="extra argument of the database sync job (repeatable)")
    p.add_argument("--single-tables", metavar="T,...",
                   help="run the single side for these tables only (a sample)")
    p.add_argument("--single-tree", metavar="REV",
                   help="run the single side with this revision's pipelines and paimon_core "
                        "(git archive; --single session: a checkout whose job lacks routing)")
    p.add_argument("--output", default=str(RESULTS / "cdc_database.json"))
    p.add_argument("--child", choices=["spark", "single"], help=argparse.SUPPRESS)
    p.add_argument("--landing", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return run_child(args)
    args.tree = export_tree(args.single_tree) if args.single_tree else None
    RESULTS.mkdir(parents=True, exist_ok=True)
    res = bench(args)
    Path(args.output).write_text(json.dumps(res, indent=2, default=str) + "\n")
    print("\n".join(report(res)))
    print(f"wrote {args.output}")
    return 1 if res["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
