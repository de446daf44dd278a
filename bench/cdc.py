"""CDC ingest benchmark (issue 15, scope 7): Debezium change events through Spark ``local[2]``
with ``pipelines.cdc.ingest`` (the full decoder) against what a Spark user does without us on
the same events in the same run.

    .venv/bin/python bench/cdc.py [--sizes 1000000,4000000] [--rounds 3]
        [--encoding connect|plain] [--master local[2]] [--no-direct]

* **Events** (fixed seed, ``tests/pipelines/cdcgen.py``; ``events / 5`` keys: inserts, updates,
  deletes, ~1 % duplicates, 2 malformed lines, shuffled; one batch of 8 JSON-lines files,
  cached under ``bench/results/cache/``). ``--encoding connect`` (default): every line is
  Debezium's JSON converter output with schemas enabled, ``{"schema": <envelope schema>,
  "payload": ...}``, ``amount`` a Kafka Connect ``Decimal`` (base64 bytes, scale 2) and ``ts``
  an ``io.debezium.time.MicroTimestamp``, so the decoder reads every event's ``schema``;
  ``plain``: the payload alone, ``amount`` as decimal text and ``ts`` epoch millis.
* **Ours**: ``pipelines.cdc.ingest.ingest`` into a fresh table (``bucket = 4``, partitioned by
  ``region``, ``sequence.field = _seq``): decode, classify, quarantine, latest change per key
  by source position, write, one commit.
* **Baseline** (what a Spark user writes): ``spark.read.schema(S).json(dir)`` with ``S`` the
  Debezium envelope of the table (``payload.{before, after, source.lsn, op}``); the image is
  ``after`` (``before`` for deletes); the latest change per key is ``max_by(struct(op, image),
  source.lsn)`` grouped by key; deletes dropped; ``amount`` from the Connect bytes with
  ``conv(hex(unbase64(...)), 16, 10)`` (non-negative amounts only: a general decoding needs a
  UDF) and ``ts`` with ``timestamp_micros``; written as Parquet. Malformed lines become NULLs
  (PERMISSIVE) and are filtered out; nothing is quarantined or reported.
* **Measured** per run: wall time, CPU seconds of the whole process tree (this driver process,
  the JVM and the Python workers: ``utime + stime`` and the reaped children's, from
  ``/proc``, sampled every 0.2 s per process, since Spark's Python daemon does not reap its
  workers' times), peak RSS of the tree (same samples), events/s, load average. One
  warm-up of both sides on 20k events first (JIT, worker start); then ``--rounds`` rounds
  per size, ours and the baseline alternating; medians reported. The
  target: ours ≤ 0.8x the baseline's CPU and wall at every size (a miss is reported as
  MISS, never a failure).
* **Correct** (not timed; exit 1 if not): our table's rows equal the baseline's Parquet rows,
  and their count and ``_seq`` sum equal the generator's model.
* **Context** (sizes ≤ 1M unless ``--no-direct``): the same files decoded with the job's
  decoder in this one process and written with one ``TableWrite`` (no Spark).

Prints a summary and writes ``bench/results/cdc.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"
sys.path.insert(0, str(REPO))
if os.environ.get("BENCH_CODE_TREE"):  # another revision's pipelines (bench/cdc_database.py
    sys.path.insert(0, os.environ["BENCH_CODE_TREE"])  # --single-tree; run from that tree)

import pyarrow as pa  # noqa: E402
from proctree import PAGE, TICK, proc_stat, tree  # noqa: E402

from paimon_core import FileSystemCatalog, Schema  # noqa: E402
from tests.pipelines.cdcgen import SCHEMA, generate, write_landing  # noqa: E402

SEED = 20240101
TARGET = 0.8  # ours / baseline, CPU and wall
WARMUP_EVENTS = 20_000
FILES = 8

# ---------------------------------------------------------------------------- events


def _landing(events: int, encoding: str) -> tuple[Path, dict[str, Any]]:
    """The batch directory of ``events`` events (generated once, cached) and its facts:
    events, live keys and the sum of their ``_seq`` (the model's, for the check)."""
    cache = RESULTS / "cache" / f"cdc-{SEED}-{events}-{encoding}"
    stamp = cache / "done.json"
    if not stamp.is_file():
        if cache.exists():
            shutil.rmtree(cache)
        t = time.perf_counter()
        stream = generate(seed=SEED, keys=max(1, events // 5), events=events, batches=1,
                          late=0.0, duplicates=0.01, malformed_per_batch=2,
                          evolve_from_batch=None, encoding=encoding)
        write_landing(stream, str(cache / "landing"), files_per_batch=FILES,
                      envelope=encoding == "connect")
        facts = {"events": stream.events, "live_keys": len(stream.model),
                 "seq_sum": sum(r["_seq"] for r in stream.model.values()),
                 "generate_s": round(time.perf_counter() - t, 1)}
        del stream
        stamp.write_text(json.dumps(facts))
    facts = json.loads(stamp.read_text())
    facts["bytes"] = sum(p.stat().st_size for p in (cache / "landing" / "batch-000001").iterdir())
    return cache / "landing", facts


# ---------------------------------------------------------------------------- the process tree

def tree_cpu(root: int) -> dict[tuple[int, int], int]:
    """CPU clock ticks of every process of ``root``'s tree, by (pid, start time): user +
    system time and that of its reaped children. Spark's Python daemon ignores SIGCHLD, so
    its workers' time never reaches it when they exit: :func:`measure` samples the tree and
    keeps each process's last value."""
    out = {}
    for pid in tree(root):
        st = proc_stat(pid)
        if st is not None:
            out[(pid, int(st[19]))] = sum(int(x) for x in st[11:15])  # utime .. cstime
    return out


def tree_rss(root: int) -> int:
    total = 0
    for pid in tree(root):
        try:
            with open(f"/proc/{pid}/statm") as fh:
                total += int(fh.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            pass
    return total


@dataclass
class Run:
    """One measured run."""

    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    load1: float


def measure(fn: Callable[..., object], *args: Any) -> Run:
    """Run ``fn(*args)`` and measure the whole process tree (this process, the JVM, the
    workers): the tree is sampled every 0.2 s (CPU of each process, RSS); a process that
    exits between two samples loses at most its last 0.2 s."""
    me = os.getpid()
    start = tree_cpu(me)
    last = dict(start)
    peak = [tree_rss(me)]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.2):
            last.update(tree_cpu(me))
            peak[0] = max(peak[0], tree_rss(me))

    sampler = threading.Thread(target=sample, daemon=True)
    t0 = time.perf_counter()
    sampler.start()
    try:
        fn(*args)
    finally:
        stop.set()
        sampler.join()
    wall = time.perf_counter() - t0
    last.update(tree_cpu(me))
    cpu = sum(last.values()) - sum(start.values())
    return Run(round(wall, 3), round(cpu / TICK, 2), round(peak[0] / 2**20, 1),
               round(os.getloadavg()[0], 2))


# ---------------------------------------------------------------------------- the two sides


def ours(spark: Any, landing: Path, wh: Path, quarantine: Path) -> None:
    from pipelines.cdc.ingest import CdcOptions, ingest
    from pipelines.config import CatalogSettings

    (report,) = ingest(spark, CatalogSettings(str(wh)), "db.cdc", str(landing),
                       CdcOptions(quarantine=str(quarantine)), schema=Schema.from_json(SCHEMA))
    if report.malformed != 2:
        raise AssertionError(f"expected the 2 malformed lines to be quarantined: {report}")


def baseline(spark: Any, landing: Path, out: Path, encoding: str) -> None:
    """What a Spark user writes without us (see the module docs)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    image = T.StructType([
        T.StructField("region", T.StringType()), T.StructField("id", T.LongType()),
        T.StructField("name", T.StringType()), T.StructField("amount", T.StringType()),
        T.StructField("qty", T.IntegerType()), T.StructField("ts", T.LongType())])
    payload = T.StructType([
        T.StructField("before", image), T.StructField("after", image),
        T.StructField("source", T.StructType([T.StructField("lsn", T.LongType())])),
        T.StructField("op", T.StringType())])
    connect = encoding == "connect"
    schema = T.StructType([T.StructField("payload", payload)]) if connect else payload
    df = spark.read.schema(schema).json(str(landing / "batch-000001"))
    if connect:
        df = df.select("payload.*")
    img = F.when(F.col("op") == "d", F.col("before")).otherwise(F.col("after"))
    changes = (df.where(F.col("op").isin("c", "r", "u", "d"))
               .select(img.alias("i"), "op", F.col("source.lsn").alias("lsn"))
               .where(F.col("lsn").isNotNull() & F.col("i.region").isNotNull()
                      & F.col("i.id").isNotNull()))
    latest = (changes.groupBy(F.col("i.region").alias("region"), F.col("i.id").alias("id"))
              .agg(F.max_by(F.struct("op", "i"), "lsn").alias("m"), F.max("lsn").alias("_seq"))
              .where(F.col("m.op") != "d"))
    if connect:
        unscaled = F.conv(F.hex(F.unbase64(F.col("m.i.amount"))), 16, 10)
        amount = (unscaled.cast("decimal(20,0)") / F.lit(100)).cast("decimal(12,2)")
        ts = F.timestamp_micros(F.col("m.i.ts"))
    else:
        amount = F.col("m.i.amount").cast("decimal(12,2)")
        ts = F.timestamp_millis(F.col("m.i.ts"))
    (latest.select("region", "id", F.col("m.i.name").alias("name"), amount.alias("amount"),
                   F.col("m.i.qty").alias("qty"), ts.alias("ts"), "_seq")
     .write.mode("overwrite").parquet(str(out)))


def direct(landing: Path, wh: Path) -> None:
    """The same files decoded with the job's decoder in this one process and written with
    one ``TableWrite`` (no Spark): context only."""
    import pyarrow.compute as pc

    from pipelines.cdc.decode import decode_file
    from pipelines.cdc.settings import DecodeSettings

    table = FileSystemCatalog(str(wh)).create_table("db.cdc", Schema.from_json(SCHEMA))
    names = [*table.schema.field_names, "_kind"]
    w = table.new_write("direct")
    for i, f in enumerate(sorted((landing / "batch-000001").iterdir())):
        rows = decode_file(f.read_bytes(), table.schema, file_index=i, bucket=False,
                           threads=True, settings=DecodeSettings(sequence_column="_seq"))
        w.write_arrow(rows.filter(pc.is_null(rows.column("_error"))).select(names),
                      row_kind_column="_kind")
    table.new_commit("direct").commit(w.prepare_commit(), 1)


# ---------------------------------------------------------------------------- the check


_COLUMNS = ["region", "id", "name", "amount", "qty", "ts", "_seq"]


def _canonical(t: pa.Table) -> pa.Table:
    """The rows with one type per column (``ts`` as epoch microseconds), sorted by key."""
    cols = {}
    for name in _COLUMNS:
        col = t.column(name).combine_chunks()
        if pa.types.is_timestamp(col.type):
            col = col.cast(pa.timestamp("us", tz=col.type.tz)).cast(pa.int64())
        cols[name] = col
    types = {"region": pa.string(), "id": pa.int64(), "name": pa.string(),
             "amount": pa.decimal128(12, 2), "qty": pa.int32(), "ts": pa.int64(),
             "_seq": pa.int64()}
    out = pa.table({n: cols[n].cast(types[n]) for n in _COLUMNS})
    return out.sort_by([("region", "ascending"), ("id", "ascending")])


def check(wh: Path, parquet: Path, facts: dict[str, Any]) -> str | None:
    """None when our table, the baseline's Parquet and the model agree; else what differs."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    got = _canonical(FileSystemCatalog(str(wh)).get_table("db.cdc").to_arrow())
    base = _canonical(pq.read_table(str(parquet)))
    if got.num_rows != facts["live_keys"] or pc.sum(got.column("_seq")).as_py() != \
            facts["seq_sum"]:
        return (f"our table has {got.num_rows} rows (model: {facts['live_keys']}) "
                f"with _seq sum {pc.sum(got.column('_seq')).as_py()} (model: "
                f"{facts['seq_sum']})")
    if not got.equals(base):
        if got.num_rows != base.num_rows:
            return f"ours {got.num_rows} rows, the baseline {base.num_rows}"
        bad = [c for c in _COLUMNS if not got.column(c).equals(base.column(c))]
        return f"ours and the baseline differ in columns {bad}"
    return None


# ---------------------------------------------------------------------------- main


def _median(runs: list[Run], key: str) -> float:
    return float(statistics.median(getattr(r, key) for r in runs))


def bench_size(spark: Any, events: int, rounds: int, encoding: str, work: Path,
               with_direct: bool) -> dict[str, Any]:
    t = time.perf_counter()
    landing, facts = _landing(events, encoding)
    print(f"\n{facts['events']:,} events ({facts['bytes'] / 2**20:,.0f} MiB of JSON, "
          f"{facts['live_keys']:,} live keys), ready in {time.perf_counter() - t:.1f} s "
          f"(generated in {facts['generate_s']} s)", flush=True)
    load_start = os.getloadavg()
    mine: list[Run] = []
    theirs: list[Run] = []
    error = None
    for r in range(rounds):
        wh, q, pq_dir = work / f"ours-{events}-{r}", work / f"q-{events}-{r}", \
            work / f"base-{events}-{r}"
        mine.append(measure(ours, spark, landing, wh, q))
        theirs.append(measure(baseline, spark, landing, pq_dir, encoding))
        print(f"  round {r}: ours {mine[-1]}\n           baseline {theirs[-1]}", flush=True)
        if r == 0:
            error = check(wh, pq_dir, facts)
            print(f"  check: {'ok' if error is None else 'WRONG: ' + error}", flush=True)
        for d in (wh, q, pq_dir):
            shutil.rmtree(d, ignore_errors=True)
    out: dict[str, Any] = {
        "events": facts["events"], "json_bytes": facts["bytes"], "live_keys": facts["live_keys"],
        "rounds": rounds, "ours": [asdict(x) for x in mine],
        "baseline": [asdict(x) for x in theirs], "correct": error is None, "error": error,
        "load_avg_start": load_start, "load_avg_end": os.getloadavg(),
    }
    for side, runs in (("ours", mine), ("baseline", theirs)):
        out[f"{side}_median"] = {k: _median(runs, k) for k in ("wall_s", "cpu_s")}
        out[f"{side}_median"]["peak_rss_mb"] = max(x.peak_rss_mb for x in runs)
        out[f"{side}_median"]["events_per_s"] = round(facts["events"] /
                                                      out[f"{side}_median"]["wall_s"])
    for k in ("wall_s", "cpu_s"):
        ratio = out["ours_median"][k] / out["baseline_median"][k]
        out[f"ratio_{k[:-2]}"] = round(ratio, 3)
        out[f"target_{k[:-2]}"] = "ok" if ratio <= TARGET else "MISS"
    if with_direct:
        d = work / f"direct-{events}"
        run = measure(direct, landing, d)
        shutil.rmtree(d, ignore_errors=True)
        out["direct_decode_and_write"] = asdict(run)
        print(f"  context: decode + write in one process, no Spark: {run}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--sizes", default="1000000,4000000",
                   help="comma-separated event counts (default 1M and 4M)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--encoding", choices=["connect", "plain"], default="connect")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--no-direct", action="store_true",
                   help="skip the one-process decode + write context run")
    p.add_argument("--output", default=str(RESULTS / "cdc.json"))
    args = p.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    RESULTS.mkdir(parents=True, exist_ok=True)

    import pipelines
    from pipelines.session import get_session

    print(f"pipelines from {Path(pipelines.__file__).parent.parent}", flush=True)
    t = time.perf_counter()
    spark = get_session(master=args.master, app_name="paimon-bench-cdc")
    spark.sparkContext.setLogLevel("ERROR")
    session_s = time.perf_counter() - t
    print(f"spark session ({args.master}): {session_s:.1f} s; load average "
          f"{os.getloadavg()[0]:.2f}; {os.cpu_count()} CPUs", flush=True)
    work = Path(tempfile.mkdtemp(prefix="bench-cdc-"))
    results: list[dict[str, Any]] = []
    try:
        landing, _ = _landing(WARMUP_EVENTS, args.encoding)
        warm = [measure(ours, spark, landing, work / "warm", work / "warm-q"),
                measure(baseline, spark, landing, work / "warm-pq", args.encoding)]
        print(f"warm-up ({WARMUP_EVENTS:,} events): ours {warm[0].wall_s} s, baseline "
              f"{warm[1].wall_s} s", flush=True)
        for n in sizes:
            results.append(bench_size(spark, n, max(1, args.rounds), args.encoding, work,
                                      with_direct=not args.no_direct and n <= 1_000_000))
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)

    doc = {"master": args.master, "encoding": args.encoding, "session_start_s": session_s,
           "target_ratio": TARGET, "cpu_count": os.cpu_count(), "sizes": results}
    Path(args.output).write_text(json.dumps(doc, indent=2) + "\n")
    print()
    ok = True
    for r in results:
        o, b = r["ours_median"], r["baseline_median"]
        print(f"CDC {r['events']:,} events ({args.encoding}): ours {o['wall_s']:.2f} s wall, "
              f"{o['cpu_s']:.1f} s CPU, {o['events_per_s']:,} events/s, peak RSS "
              f"{o['peak_rss_mb']:,.0f} MB | baseline {b['wall_s']:.2f} s, {b['cpu_s']:.1f} s "
              f"CPU, {b['events_per_s']:,} events/s, {b['peak_rss_mb']:,.0f} MB | ours/baseline "
              f"CPU {r['ratio_cpu']:.2f}x ({r['target_cpu']}), wall {r['ratio_wall']:.2f}x "
              f"({r['target_wall']}) (target <= {TARGET}x) | load average "
              f"{r['load_avg_start'][0]:.1f} -> {r['load_avg_end'][0]:.1f}"
              + ("" if r["correct"] else f" | WRONG: {r['error']}"))
        ok = ok and r["correct"]
    print(f"wrote {args.output}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
