"""W2 on a ``deletion-vectors.enabled=true`` primary-key table written by us (issue 31's bench
line; part of ``make bench``).

The 7 W2 commits of ``shared/bench/gen.py`` (insert 1M, upsert 200k, 5 x 20k) are written by
paimon_core into a DV table (``bucket=4``, partitioned by ``dt``, key ``id, dt``): every
commit compacts its level-0 files up with a lookup and marks the superseded rows in deletion
vectors, so the merged read is a raw scan of the level >= 1 files minus a bitmap. The same
commits go into a Delta table with delta-rs (``write_deltalake`` then ``merge`` upserts:
copy-on-write). Then, each in a fresh process, interleaved for ``--rounds`` rounds:

  ours_dv     ``table.to_arrow()`` of the DV table (the merged read; checked against gen.py)
  arrow_scan  ``pq.read_table`` of the same table's live data files, the 8 columns, no
              deletion vector applied (the decode floor: target ours <= 1.05x its CPU)
  delta       ``DeltaTable(path).to_pyarrow_table()`` of the Delta table (checked against
              gen.py; target: ours ahead of it)

Each process reads ``--reps`` times; the fastest read after the first is its *warm* read (CPU
seconds reported). Medians over rounds; the load average is printed with every figure.

``--compression CODEC`` writes our table with ``file.compression=CODEC`` instead of Paimon's
default (zstd) into its own cache (``cache/dv-CODEC``): a finding about the codec, never the
target's figure (the target is measured at Paimon's defaults).

Usage:
  .venv/bin/python bench/dv.py [--rounds 3] [--reps 3] [--fresh] [--sides ours_dv,arrow_scan,delta]
                               [--compression snappy]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pypaimon_side import cpu_s, load_gen, timed_reads

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
DEFAULT_GEN = BENCH.parent.parent / "shared" / "bench" / "gen.py"
SIDES = ("ours_dv", "arrow_scan", "delta")
TABLE = "db.w2dv"
TARGET_RAW = 1.05


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --------------------------------------------------------------------------- preparation
def prepare(cache: Path, gen_path: Path, fresh: bool,
            compression: str | None = None) -> dict[str, Any]:
    """Write both tables once (``prep.json`` is the completion stamp)."""
    stamp = cache / "prep.json"
    if stamp.exists() and not fresh:
        return dict(json.loads(stamp.read_text()), cached=True)
    if cache.exists():
        shutil.rmtree(cache)
    cache.mkdir(parents=True)
    gen = load_gen(str(gen_path))
    batches = list(gen.w2_batches())
    from paimon_core import FileSystemCatalog, Schema

    print(f"preparing {cache}: our DV table and the Delta table (7 W2 commits each) ...",
          flush=True)
    cat = FileSystemCatalog(str(cache / "wh"))
    cat.create_table(TABLE, Schema.from_arrow(
        gen.SCHEMA, partition_keys=["dt"], primary_keys=["id", "dt"],
        options={"bucket": "4", "deletion-vectors.enabled": "true",
                 **({"file.compression": compression} if compression else {})}))
    prep: dict[str, Any] = {"load_avg_before": loadavg(), "file.compression": compression}
    c0 = cpu_s()
    for i, (_, batch) in enumerate(batches):
        t = cat.get_table(TABLE)
        w = t.new_write(commit_user="bench-dv")
        w.write_arrow(batch)
        t.new_commit("bench-dv").commit(w.prepare_commit(), i)
        w.close()
    prep["ours_write_cpu_s"] = cpu_s() - c0
    from deltalake import DeltaTable, write_deltalake

    delta = str(cache / "delta")
    c0 = cpu_s()
    write_deltalake(delta, batches[0][1], partition_by=["dt"])
    for _, batch in batches[1:]:
        (DeltaTable(delta).merge(source=batch, predicate="t.id = s.id AND t.dt = s.dt",
                                 source_alias="s", target_alias="t")
         .when_matched_update_all().when_not_matched_insert_all().execute())
    prep["delta_write_cpu_s"] = cpu_s() - c0
    prep["load_avg_after"] = loadavg()
    prep["created"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    stamp.write_text(json.dumps(prep, indent=1))
    return dict(prep, cached=False)


def live_files(cache: Path) -> tuple[list[str], int]:
    """The DV table's live data files and how many rows its deletion vectors remove."""
    from paimon_core import FileSystemCatalog

    table = FileSystemCatalog(str(cache / "wh")).get_table(TABLE)
    splits = table.new_read_builder().new_scan().plan().splits
    paths = [f"{s.bucket_path}/{f.file_name}" for s in splits for f in s.files]
    idx = table.inspect.table_indexes().column("dv_ranges").to_pylist()
    return paths, sum(r["_CARDINALITY"] or 0 for ranges in idx for r in ranges or ())


# --------------------------------------------------------------------------- one read
def child_main(args: argparse.Namespace) -> int:
    import pyarrow.compute
    import pyarrow.dataset
    import pyarrow.parquet as pq

    del pyarrow.compute, pyarrow.dataset  # imported before the clock, for every side
    gen = load_gen(args.gen)
    cache = Path(args.cache)
    if args.child == "ours_dv":
        from paimon_core import FileSystemCatalog

        def run() -> Any:
            return FileSystemCatalog(str(cache / "wh")).get_table(TABLE).to_arrow()
    elif args.child == "arrow_scan":
        paths, _ = live_files(cache)  # planned before the clock

        def run() -> Any:
            return pq.read_table(paths, columns=gen.SCHEMA.names, partitioning=None)
    else:
        from deltalake import DeltaTable

        def run() -> Any:
            return DeltaTable(str(cache / "delta")).to_pyarrow_table()

    out, result = timed_reads(run, args.reps)
    if args.check and args.child != "arrow_scan":
        ok, msg = gen.check_w2(result)
        out["check"] = [bool(ok), msg]
    elif args.check:
        out["check"] = [True, f"{result.num_rows} rows decoded (raw)"]
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    os._exit(0)


# --------------------------------------------------------------------------- driver
def measure(args: argparse.Namespace, cache: Path, gen_path: Path) -> dict[str, Any]:
    sides = [s for s in args.sides.split(",") if s]
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in sides}
    for rnd in range(args.rounds):
        order = sides[rnd % len(sides):] + sides[:rnd % len(sides)]
        for side in order:
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", side,
                   "--cache", str(cache), "--gen", str(gen_path), "--reps", str(args.reps)]
            if rnd == 0:
                cmd.append("--check")
            la = loadavg()
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                raise SystemExit(f"{side} failed: {proc.stderr[-2000:]}")
            res = json.loads(proc.stdout.strip().splitlines()[-1])
            res["load_avg"] = la
            runs[side].append(res)
            check = res.get("check")
            if check is not None and not check[0]:
                raise SystemExit(f"{side}: wrong result: {check[1]}")
            print(f"  round {rnd + 1} {side:10s} warm {res['seconds']:.3f} s wall, "
                  f"{res['cpu_s']:.3f} s CPU (cold {res['cold_cpu_s']:.3f}), "
                  f"peak RSS {res['peak_rss_mb']:.0f} MB, load {la}", flush=True)
    return {s: {"runs": r, "cpu_median": statistics.median(x["cpu_s"] for x in r),
                "cpu_min": min(x["cpu_s"] for x in r),
                "wall_median": statistics.median(x["seconds"] for x in r)}
            for s, r in runs.items()}


def report(res: dict[str, Any], prep: dict[str, Any], dv_rows: int, files: int) -> list[str]:
    codec = prep.get("file.compression") or "zstd, Paimon's default"
    lines = [f"W2 on a deletion-vector table written by us (file.compression {codec}; "
             f"{files} live files, {dv_rows} rows "
             f"removed by deletion vectors); write CPU ours {prep['ours_write_cpu_s']:.2f} s, "
             f"delta-rs {prep['delta_write_cpu_s']:.2f} s (load {prep['load_avg_after']})"]
    for side, r in res.items():
        lines.append(f"  {side:10s} CPU median {r['cpu_median']:.3f} s (min {r['cpu_min']:.3f}), "
                     f"wall median {r['wall_median']:.3f} s")
    ours = res.get("ours_dv")
    for other, target, what in (("arrow_scan", TARGET_RAW, "a raw Arrow scan of its files"),
                                ("delta", 1.0, "delta-rs's read of the same data")):
        if ours is None or other not in res:
            continue
        ratio = ours["cpu_median"] / res[other]["cpu_median"]
        lo = ours["cpu_min"] / res[other]["cpu_min"]
        ok = "PASS" if ratio <= target else "MISS"
        lines.append(f"  target: W2 DV merged read CPU <= {target:.2f}x {what}: "
                     f"{ratio:.2f}x (of the minima {lo:.2f}x) {ok}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--fresh", action="store_true", help="rewrite the cached tables")
    ap.add_argument("--sides", default=",".join(SIDES))
    ap.add_argument("--gen", default=str(DEFAULT_GEN))
    ap.add_argument("--compression", help="file.compression of our table (default: Paimon's)")
    ap.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    ap.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child_main(args)
    unknown = [s for s in args.sides.split(",") if s and s not in SIDES]
    if unknown:
        ap.error(f"unknown side(s) {unknown} (known: {', '.join(SIDES)})")
    gen_path = Path(args.gen)
    cache = RESULTS / "cache" / ("dv" if not args.compression else f"dv-{args.compression}")
    prep = prepare(cache, gen_path, args.fresh, args.compression)
    paths, dv_rows = live_files(cache)
    t0 = time.perf_counter()
    res = measure(args, cache, gen_path)
    lines = report(res, prep, dv_rows, len(paths))
    print("\n".join(lines))
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = RESULTS / f"dv-{stamp}.json"
    out.write_text(json.dumps({"prep": prep, "sides": res, "report": lines,
                               "seconds": time.perf_counter() - t0}, indent=1))
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
