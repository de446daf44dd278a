"""CDC ingest benchmark: 1M Debezium-style change events through Spark ``local[2]`` vs the same
rows written directly with paimon_core.

    .venv/bin/python bench/cdc.py [--events N] [--keys N] [--rounds 2] [--master local[2]]

* The events (fixed seed, ``tests/pipelines/cdcgen.py``: inserts, updates, deletes, ~1 %
  duplicates, 2 malformed lines, shuffled within the batch) are written once as 8 JSON-lines
  files of one batch and cached under ``bench/results/cache/cdc-<seed>-<events>-<keys>/``.
* **Spark**: ``pipelines.cdc_ingest.ingest`` into a fresh table per round (parse, classify,
  quarantine, order by source position, deduplicate per key, bucket, write, one commit).
  Session start-up is timed separately; the first round (JIT, Python workers) is reported on
  its own, the headline is the median of the later rounds (or the only one).
* **Direct** (the headline ratio): the same change rows (every valid event as one
  ``+I``/``+U``/``-D`` row with ``_seq`` = its position, in file order, decoded from the JSON
  beforehand, untimed) written with one ``TableWrite`` + one commit into a fresh table of the
  same schema (the writer merges them by ``sequence.field``). Also reported: writing only the
  final rows (the last change of every key), the lower floor; and the same JSON files decoded
  with the job's own decoder in one process and written (no Spark): the Spark overhead.
* Correctness (not timed): the ingested table and the direct one equal the generator's model
  state.

Prints a summary and writes ``bench/results/cdc.json``. Target: Spark within 3x of direct.
A missed target is reported, never a failure; a wrong result exits 1.
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"
sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402

from paimon_core import FileSystemCatalog, Schema  # noqa: E402
from tests.pipelines.cdcgen import SCHEMA, CdcStream, generate, write_landing  # noqa: E402

SEED = 20240101
TARGET_RATIO = 3.0


def _landing(events: int, keys: int) -> tuple[Path, CdcStream]:
    cache = RESULTS / "cache" / f"cdc-{SEED}-{events}-{keys}"
    t = time.perf_counter()
    stream = generate(seed=SEED, keys=keys, events=events, batches=1, late=0.0,
                      duplicates=0.01, malformed_per_batch=2, evolve_from_batch=None)
    gen_s = time.perf_counter() - t
    stamp = cache / "done.json"
    if not stamp.is_file():
        if cache.exists():
            shutil.rmtree(cache)
        write_landing(stream, str(cache / "landing"), files_per_batch=8)
        stamp.write_text(json.dumps({"events": stream.events, "generate_s": gen_s}))
    return cache / "landing", stream


_TYPES = {"region": pa.string(), "id": pa.int64(), "name": pa.string(),
          "amount": pa.decimal128(12, 2), "qty": pa.int32(), "ts": pa.timestamp("ms"),
          "_seq": pa.int64()}


def _rows_table(cols: dict[str, list[Any]], kinds: list[str]) -> pa.Table:
    table = pa.table({n: pa.array(v, _TYPES[n]) for n, v in cols.items()})
    return table.append_column("_kind", pa.array(kinds, pa.string()))


def _value(name: str, v: Any) -> Any:
    if v is None:
        return None
    if name == "amount":
        return decimal.Decimal(v)
    if name == "ts":
        return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=v)
    return v


def _event_rows(stream: CdcStream) -> pa.Table:
    """Every valid event of the stream as one change row (``+I``/``+U`` of ``after``, ``-D``
    of ``before``, ``_seq`` = its position), in file order: what the Spark job hands to its
    writers before deduplication, decoded without Spark (not timed)."""
    cols: dict[str, list[Any]] = {n: [] for n in _TYPES}
    kinds: list[str] = []
    for line in (x for b in stream.batches for x in b):
        try:
            ev = json.loads(line)
            image = ev["before"] if ev["op"] == "d" else ev["after"]
            lsn = int(ev["source"]["lsn"])
            int(image["id"])
        except (ValueError, KeyError, TypeError):
            continue  # the malformed lines
        for name in cols:
            cols[name].append(lsn if name == "_seq" else _value(name, image.get(name)))
        kinds.append({"c": "+I", "r": "+I", "u": "+U", "d": "-D"}[ev["op"]])
    return _rows_table(cols, kinds)


def _final_rows(stream: CdcStream) -> pa.Table:
    """The rows ingest commits for a single batch: live keys' last images, ``-D`` for the
    keys whose last event is a delete."""
    cols: dict[str, list[Any]] = {n: [] for n in _TYPES}
    kinds: list[str] = []
    for (_region, _key), r in sorted(stream.model.items()):
        for name in cols:
            cols[name].append(_value(name, r.get(name)))
        kinds.append("+U")
    for region, key in stream.deleted_keys:
        for name in cols:
            cols[name].append({"region": region, "id": key}.get(name))
        kinds.append("-D")
    return _rows_table(cols, kinds)


def _direct_from_files(work: Path, name: str, landing: Path) -> float:
    """The same JSON files decoded in this one process with the job's decoder
    (``pipelines.cdc_decode.decode_file``, as the job's tasks call it) and written with one
    ``TableWrite``: Spark's overhead is the difference."""
    import pyarrow.compute as pc

    from pipelines.cdc_decode import decode_file

    schema = Schema.from_json(SCHEMA)
    table = FileSystemCatalog(str(work / name)).create_table("db.cdc", schema)
    names = [*table.schema.field_names, "_kind"]
    files = sorted(p for p in (landing / "batch-000001").iterdir() if p.is_file())
    t = time.perf_counter()
    w = table.new_write("direct")
    for i, f in enumerate(files):
        rows = decode_file(f.read_bytes(), table.schema, file_index=i, sequence_column="_seq",
                           bucket=False, threads=True)
        rows = rows.filter(pc.is_null(rows.column("_error"))).select(names)
        w.write_arrow(rows, row_kind_column="_kind")
    table.new_commit("direct").commit(w.prepare_commit(), 1)
    return time.perf_counter() - t


def _direct(work: Path, name: str, rows: pa.Table) -> float:
    table = FileSystemCatalog(str(work / name)).create_table("db.cdc", Schema.from_json(SCHEMA))
    t = time.perf_counter()
    w = table.new_write("direct")
    w.write_arrow(rows, row_kind_column="_kind")
    table.new_commit("direct").commit(w.prepare_commit(), 1)
    return time.perf_counter() - t


def _check(wh: str, stream: CdcStream) -> bool:
    table = FileSystemCatalog(wh).get_table("db.cdc")
    got = table.to_arrow(columns=["region", "id", "_seq"])
    if got.num_rows != len(stream.model):
        print(f"  WRONG: {got.num_rows} rows, model has {len(stream.model)}")
        return False
    seqs = dict(zip(zip(got.column("region").to_pylist(), got.column("id").to_pylist()),
                    got.column("_seq").to_pylist()))
    bad = [k for k, r in stream.model.items() if seqs.get(k) != r["_seq"]]
    if bad:
        print(f"  WRONG: {len(bad)} keys differ from the model, e.g. {bad[:3]}")
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--keys", type=int, default=200_000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--output", default=str(RESULTS / "cdc.json"))
    args = p.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)

    t = time.perf_counter()
    landing, stream = _landing(args.events, args.keys)
    print(f"events: {stream.events:,} ({len(stream.model):,} live keys), "
          f"prepared in {time.perf_counter() - t:.1f} s")
    events_rows = _event_rows(stream)
    final_rows = _final_rows(stream)

    t = time.perf_counter()
    from pipelines.cdc_ingest import CdcOptions, ingest
    from pipelines.config import CatalogSettings
    from pipelines.session import get_session

    spark = get_session(master=args.master, app_name="paimon-bench-cdc",
                        conf={"spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.setLogLevel("ERROR")
    session_s = time.perf_counter() - t
    print(f"spark session ({args.master}): {session_s:.1f} s")

    ok = True
    spark_s: list[float] = []
    direct_s: list[float] = []
    final_s: list[float] = []
    decode_s: list[float] = []
    work = Path(tempfile.mkdtemp(prefix="bench-cdc-"))
    try:
        schema = Schema.from_json(SCHEMA)
        for r in range(max(1, args.rounds)):
            wh = str(work / f"spark-{r}")
            t = time.perf_counter()
            reports = ingest(spark, CatalogSettings(wh), "db.cdc", str(landing),
                             CdcOptions(quarantine=str(work / f"q-{r}")), schema=schema)
            spark_s.append(time.perf_counter() - t)
            rep = reports[0]
            print(f"  round {r}: spark ingest {spark_s[-1]:.2f} s "
                  f"({rep.events:,} events, {rep.malformed} malformed, "
                  f"{rep.rows_written:,} rows written)")
            if r == 0:
                ok = _check(wh, stream) and ok
            direct_s.append(_direct(work, f"direct-{r}", events_rows))
            final_s.append(_direct(work, f"final-{r}", final_rows))
            decode_s.append(_direct_from_files(work, f"files-{r}", landing))
            print(f"  round {r}: direct write of the {events_rows.num_rows:,} change rows "
                  f"{direct_s[-1]:.2f} s; of the {final_rows.num_rows:,} final rows "
                  f"{final_s[-1]:.2f} s; decode the files + write in one process "
                  f"{decode_s[-1]:.2f} s")
            if r == 0:
                for name in ("direct-0", "files-0"):
                    ok = _check(str(work / name), stream) and ok
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)

    later = spark_s[1:] or spark_s
    spark_med = statistics.median(later)
    direct_med = statistics.median(direct_s)
    final_med = statistics.median(final_s)
    decode_med = statistics.median(decode_s)
    ratio = spark_med / direct_med if direct_med else float("inf")
    result = {
        "events": stream.events, "change_rows": events_rows.num_rows,
        "rows_committed": final_rows.num_rows, "master": args.master,
        "session_start_s": round(session_s, 3), "spark_first_round_s": round(spark_s[0], 3),
        "spark_s": round(spark_med, 3), "direct_s": round(direct_med, 3),
        "direct_final_rows_s": round(final_med, 3),
        "direct_decode_and_write_s": round(decode_med, 3),
        "ratio_vs_decode_and_write": round(spark_med / decode_med, 2),
        "spark_events_per_s": round(stream.events / spark_med),
        "direct_rows_per_s": round(events_rows.num_rows / direct_med),
        "ratio": round(ratio, 2), "ratio_vs_final_rows": round(spark_med / final_med, 2),
        "target_ratio": TARGET_RATIO, "target_met": ratio <= TARGET_RATIO, "correct": ok,
        "rounds": {"spark": spark_s, "direct": direct_s, "direct_final": final_s,
                   "direct_decode_and_write": decode_s},
        "cpu_count": os.cpu_count(),
        "load_avg": os.getloadavg(),
    }
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n")
    verdict = "ok" if ratio <= TARGET_RATIO else "MISS"
    print(f"CDC ingest: {result['spark_events_per_s']:,} events/s through Spark "
          f"({spark_med:.2f} s); the same change rows written directly {direct_med:.2f} s: "
          f"ratio {ratio:.2f}x (target <= {TARGET_RATIO}x: {verdict}); vs the final rows "
          f"only {result['ratio_vs_final_rows']:.2f}x; vs decoding the same files and writing "
          f"in one process ({decode_med:.2f} s) {result['ratio_vs_decode_and_write']:.2f}x; "
          f"session start {session_s:.1f} s not included; load average "
          f"{os.getloadavg()[0]:.1f}")
    print(f"wrote {args.output}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
