"""Scale step of ``make bench`` (issue 16, scope 6): memory and CPU of the merged read, the
streaming read and the full compaction of one primary-key table at 1M, 4M and 16M rows, in
1 and 8 buckets; and the Spark compaction job against ``table.compact`` in one process.

    .venv/bin/python bench/scale.py                       # 1M, 4M, 16M x 1 and 8 buckets
    .venv/bin/python bench/scale.py --sizes 1000000 --buckets 1   # quick / CI
    BENCH_SCALE_SIZES=1M make bench                       # 1M rows only, through make
    .venv/bin/python bench/scale.py --spark only          # only the Spark-vs-in-process ratio

* **Table** (cached under ``bench/results/cache/scale/<gen.py digest>/n<N>_b<B>/``, ``prep.json``
  the completion stamp): ``db.s``, primary key ``id``, no partition, ``bucket = B``, the rows of
  ``shared/bench/gen.py``'s ``make_rows`` (``c_i64 = id * 16 + version``): N rows (ids
  ``0..N-1``, version 0) written by our writer in one commit, then 3 upserts of N/10 random
  existing ids (versions 1, 2, 3), one commit each.
* **Steps**, each in a FRESH process (``--child``): ``read`` = ``table.to_arrow()``;
  ``stream`` = ``TableRead.to_batches`` over the plan's splits, each batch digested and
  dropped; ``compact`` = ``table.compact(strategy="full")`` on a fresh copy of the table, then
  (not timed, after the peak is taken) a streaming read of the result. Measured: wall, CPU
  (user + sys of the process, every thread), peak RSS (VmHWM) and the peak growth above the
  process's base (VmRSS after the imports, right before the step; VmHWM is reset there through
  ``/proc/self/clear_refs``), rows/s and CPU µs per row.
* **Correct** on every step and every run (exit 1 when wrong): the row count and a checksum of
  the (id, version) pairs (a 64-bit mix of ``c_i64`` summed over the rows) equal the
  generator's model of the latest version per key; every row also has ``c_i64 // 16 == id``.
* **Targets** (PASS / MISS, a miss never fails the run): the peak growth of ``stream`` and of
  ``compact`` on the 16M-row single bucket <= 512 MB, and flat from 4M to 16M (16M growth
  <= 1.25x the 4M growth); CPU per row of every step within 10 % of the baseline recorded in
  :data:`BASELINE_CPU_US_PER_ROW` (the whole-bucket code of 2026-11-25, measured by this step).
* **Spark vs in-process compaction** (``--spark``, 4M rows in 8 buckets): ``python -m
  pipelines.jobs.compact --full`` against ``table.compact(strategy="full")`` in a fresh process,
  each on a fresh copy, both measured over the whole process tree (driver, JVM, Python workers:
  CPU of every process sampled every 0.1 s); the session start-up is marked by the job itself
  in the same run (``PAIMON_JOB_CPU_LOG``) and taken off the job's figure for the target:
  job - start-up <= 2x in-process CPU (``bench/scale_spark.py``).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"
if str(BENCH) not in sys.path:  # run as a script or loaded by path (tests)
    sys.path.insert(0, str(BENCH))

from proctree import cpu_s, status_mb  # noqa: E402

DEFAULT_GEN = Path(os.environ.get("PAIMON_SHARED") or REPO.parent / "shared") / "bench" / "gen.py"
SCALE_STEPS = ("read", "stream", "compact")
DEFAULT_SIZES = (1_000_000, 4_000_000, 16_000_000)
DEFAULT_BUCKETS = (1, 8)
SIZES_ENV = "BENCH_SCALE_SIZES"  # e.g. "1000000" for a quick run
UPSERTS = 3
INSERT_CHUNK = 1_000_000  # rows generated (and handed to write_arrow) at a time
TABLE = "db.s"
GROWTH_LIMIT_MB = 512.0
FLAT_FACTOR = 1.25  # "flat from 4M to 16M": growth(16M) <= 1.25 x growth(4M)
CPU_TOLERANCE = 1.10
CHILD_TIMEOUT_S = 1800
LAYOUT_VERSION = "scale-1"  # bump when the generated table changes (part of the cache key)
# CPU µs per live row of each step by (rows, buckets): "today" for issue 16's "CPU per row no
# worse than today (± 10 %)", measured by this step on the whole-bucket code (main at c12ac59,
# 2026-11-25 23:58-00:22 UTC): medians of 3 fresh processes at 1M and 4M, one at 16M; the
# machine was shared with other sessions (load average 5-16), which inflates CPU a little.
BASELINE_CPU_US_PER_ROW: dict[str, dict[tuple[int, int], float]] = {
    "read": {(1_000_000, 1): 0.62, (1_000_000, 8): 0.93, (4_000_000, 1): 0.62,
             (4_000_000, 8): 0.53, (16_000_000, 1): 0.53, (16_000_000, 8): 0.61},
    "stream": {(1_000_000, 1): 0.36, (1_000_000, 8): 0.35, (4_000_000, 1): 0.44,
               (4_000_000, 8): 0.35, (16_000_000, 1): 0.53, (16_000_000, 8): 0.25},
    "compact": {(1_000_000, 1): 0.70, (1_000_000, 8): 0.87, (4_000_000, 1): 0.85,
                (4_000_000, 8): 0.88, (16_000_000, 1): 0.99, (16_000_000, 8): 0.92},
}
_MIX = np.uint64(0x9E3779B97F4A7C15)


# ----------------------------------------------------------------------- the model + check
def load_gen(path: str | Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_gen", str(path))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def upsert_ids(n: int, k: int, seed: int) -> np.ndarray:
    """The N/10 distinct existing ids the ``k``-th upsert (1..3) rewrites with version k."""
    rng = np.random.Generator(np.random.PCG64([seed, 300 + k, n]))
    return np.sort(rng.choice(n, size=n // 10, replace=False)).astype(np.int64)


def mix(c_i64: np.ndarray) -> np.ndarray:
    """A 64-bit mix of ``id * 16 + version`` per row (a change of any id or version changes
    the sum with probability ~1 - 2^-64; wrapping uint64 arithmetic)."""
    x = c_i64.astype(np.uint64, copy=False)
    x = (x ^ (x >> np.uint64(31))) * _MIX
    return x ^ (x >> np.uint64(29))


@dataclass
class Digest:
    """Row count and version checksum of a read, accumulated batch by batch."""

    rows: int = 0
    checksum: int = 0
    bad_rows: int = 0  # rows whose c_i64 // 16 != id

    def update(self, ids: np.ndarray, c_i64: np.ndarray) -> None:
        self.rows += len(ids)
        with np.errstate(over="ignore"):
            s = int(mix(c_i64).sum(dtype=np.uint64))
        self.checksum = (self.checksum + s) % 2**64
        self.bad_rows += int(np.count_nonzero((c_i64 >> 4) != ids))

    def add_batch(self, batch: Any) -> None:
        self.update(batch.column("id").to_numpy(zero_copy_only=False),
                    batch.column("c_i64").to_numpy(zero_copy_only=False))


def expected_digest(n: int, seed: int) -> tuple[Digest, list[int]]:
    """The model: ids 0..n-1, each at the version of the last upsert that wrote it."""
    version = np.zeros(n, dtype=np.int64)
    for k in range(1, UPSERTS + 1):
        version[upsert_ids(n, k, seed)] = k
    d = Digest()
    ids = np.arange(n, dtype=np.int64)
    d.update(ids, ids * 16 + version)
    return d, np.bincount(version, minlength=UPSERTS + 1).tolist()


def check_digest(got: Digest, rows: int, checksum: int) -> tuple[bool, str]:
    """(ok, message): ``got`` against the model's row count and checksum."""
    if got.rows != rows:
        return False, f"row count {got.rows:,} != expected {rows:,}"
    if got.bad_rows:
        return False, f"{got.bad_rows:,} rows whose c_i64 does not belong to their id"
    if got.checksum != checksum:
        return False, ("version checksum differs from the model (a key at a stale version, "
                       "a duplicate or a missing key)")
    return True, f"{rows:,} rows, versions per key as the model"


# ----------------------------------------------------------------------- memory / CPU
def reset_peak() -> bool:
    """Reset this process's VmHWM to its current RSS (Linux ``clear_refs`` 5)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


# ----------------------------------------------------------------------- preparation
def table_dir(cache: Path, n: int, buckets: int) -> Path:
    return cache / f"n{n}_b{buckets}"


def prepare_child(wh: Path, gen_path: str, n: int, buckets: int) -> dict[str, Any]:
    """Write the table (N rows in one commit, then 3 upserts of N/10); returns write facts."""
    from paimon_core import FileSystemCatalog, Schema

    gen = load_gen(gen_path)
    cat = FileSystemCatalog(str(wh))
    table = cat.create_table(TABLE, Schema.from_arrow(
        gen.SCHEMA, primary_keys=["id"], options={"bucket": str(buckets)}))
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    builder = table.new_batch_write_builder()
    with builder.new_write() as w:
        for start in range(0, n, INSERT_CHUNK):
            ids = np.arange(start, min(n, start + INSERT_CHUNK), dtype=np.int64)
            w.write_arrow(gen.make_rows(ids, 0, seed_salt=40 + start // INSERT_CHUNK))
        msgs = w.prepare_commit()
    builder.new_commit().commit(msgs)
    out["insert_s"] = time.perf_counter() - t0
    for k in range(1, UPSERTS + 1):
        table = cat.get_table(TABLE)
        t0 = time.perf_counter()
        builder = table.new_batch_write_builder()
        with builder.new_write() as w:
            w.write_arrow(gen.make_rows(upsert_ids(n, k, gen.SEED), k, seed_salt=50 + k))
            msgs = w.prepare_commit()
        builder.new_commit().commit(msgs)
        out[f"upsert{k}_s"] = time.perf_counter() - t0
    out["peak_rss_mb"] = status_mb("VmHWM")
    return out


def prepare(cache: Path, gen_path: Path, n: int, buckets: int, fresh: bool) -> dict[str, Any]:
    tdir = table_dir(cache, n, buckets)
    stamp = tdir / "prep.json"
    if stamp.exists() and not fresh:
        return dict(json.loads(stamp.read_text()))
    if tdir.exists():
        shutil.rmtree(tdir)
    tdir.mkdir(parents=True)
    print(f"  preparing {n:,} rows in {buckets} bucket(s) under {tdir} ...", flush=True)
    facts = run_child(["--child", "prepare", "--table-dir", str(tdir), "--gen", str(gen_path),
                       "--n", str(n), "--buckets", str(buckets)], f"prepare {n} x {buckets}")
    gen = load_gen(gen_path)
    d, hist = expected_digest(n, gen.SEED)
    prep = {"n": n, "buckets": buckets, "write": facts, "expected_rows": d.rows,
            "expected_checksum": str(d.checksum), "version_histogram": hist,
            "bytes_mb": sum(f.stat().st_size for f in (tdir / "wh").rglob("*")
                            if f.is_file()) / 1e6,
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
    stamp.write_text(json.dumps(prep, indent=1))
    return prep


# ----------------------------------------------------------------------- one step (child)
def step_child(step: str, tdir: Path, rows: int, checksum: int) -> dict[str, Any]:
    """One measured step in this fresh process; correctness checked after the peak."""
    import pyarrow
    import pyarrow.compute
    import pyarrow.dataset  # noqa: F401

    import paimon_core  # noqa: F401
    from paimon_core import FileSystemCatalog

    scratch: tempfile.TemporaryDirectory[str] | None = None
    wh = tdir / "wh"
    if step == "compact":  # a fresh copy: compaction rewrites the table
        scratch = tempfile.TemporaryDirectory(prefix="bench-scale-")
        wh = Path(scratch.name) / "wh"
        shutil.copytree(tdir / "wh", wh)
    digest = Digest()
    base = status_mb("VmRSS")
    reset = reset_peak()
    c0, t0 = cpu_s(), time.perf_counter()
    table = FileSystemCatalog(str(wh)).get_table(TABLE)
    extra: dict[str, Any] = {}
    if step == "read":
        result = table.to_arrow()
        extra["result_mb"] = result.nbytes / 2**20
    elif step == "stream":
        rb = table.new_read_builder()
        read = rb.new_read()
        for batch in read.to_batches(rb.new_scan().plan().splits):
            digest.add_batch(batch)
            del batch
    else:
        extra["snapshot"] = table.compact(strategy="full", commit_user="bench-scale")
    wall = time.perf_counter() - t0
    cpu = cpu_s() - c0
    peak = status_mb("VmHWM")
    if step == "read":
        for batch in result.to_batches():
            digest.add_batch(batch)
        del result
    elif step == "compact":
        table = FileSystemCatalog(str(wh)).get_table(TABLE)
        rb = table.new_read_builder()
        plan = rb.new_scan().plan()
        extra["live_files_after"] = sum(len(s.files) for s in plan.splits)
        for batch in rb.new_read().to_batches(plan.splits):
            digest.add_batch(batch)
    ok, msg = check_digest(digest, rows, checksum)
    if scratch is not None:
        scratch.cleanup()
    return {"step": step, "wall_s": wall, "cpu_s": cpu, "base_rss_mb": base,
            "peak_rss_mb": peak, "growth_mb": peak - base, "peak_reset": reset,
            "rows": digest.rows, "check": [ok, msg], **extra}


# ----------------------------------------------------------------------- driver
def run_child(args: list[str], what: str) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), *args]
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, env=env)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        raise RuntimeError(f"{what} failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
    return dict(json.loads(lines[-1]))


def parse_sizes(text: str | None) -> tuple[int, ...]:
    """``"1000000,4M,16M"`` -> sizes (``k`` / ``M`` suffixes allowed)."""
    if not text:
        return DEFAULT_SIZES
    out = []
    for part in text.replace(" ", ",").split(","):
        if part:
            mult = {"k": 1_000, "m": 1_000_000}.get(part[-1].lower(), 1)
            out.append(int(float(part[:-1] if mult > 1 else part) * mult))
    return tuple(out)


def measure_scale(cache: Path, gen_path: Path, sizes: Iterable[int], buckets: Iterable[int],
                  steps: Iterable[str], rounds: int, fresh: bool
                  ) -> tuple[dict[str, Any], list[str]]:
    """Every (size, buckets, step), ``rounds`` fresh processes each (steps interleaved)."""
    res: dict[str, Any] = {}
    failures: list[str] = []
    for n in sizes:
        for b in buckets:
            prep = prepare(cache, gen_path, n, b, fresh)
            tdir = table_dir(cache, n, b)
            key = f"{n}x{b}"
            res[key] = {"n": n, "buckets": b, "bytes_mb": prep["bytes_mb"], "steps": {}}
            per: dict[str, list[dict[str, Any]]] = {}
            for rnd in range(rounds):
                for step in steps:
                    try:
                        r = run_child(["--child", step, "--table-dir", str(tdir),
                                       "--rows", str(prep["expected_rows"]),
                                       "--checksum", prep["expected_checksum"]],
                                      f"scale {step} {key}")
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        failures.append(f"scale {step} {key} round {rnd + 1}: "
                                        + (str(e).strip().splitlines() or ["?"])[-1])
                        print(f"!!! scale {step} {key} FAILED: {e}", flush=True)
                        continue
                    r["load1"] = round(os.getloadavg()[0], 2)
                    if not r["check"][0]:
                        failures.append(f"scale {step} {key}: check FAILED: {r['check'][1]}")
                    per.setdefault(step, []).append(r)
                    print(f"  {n:>11,} rows x {b} bucket(s)  {step:<8} round {rnd + 1}/{rounds}"
                          f"  wall {r['wall_s']:7.2f} s  cpu {r['cpu_s']:7.2f} s  peak "
                          f"{r['peak_rss_mb']:6.0f} MB (+{r['growth_mb']:.0f} over "
                          f"{r['base_rss_mb']:.0f})  load {r['load1']}  check "
                          f"{'ok' if r['check'][0] else 'FAILED: ' + r['check'][1]}",
                          flush=True)
            for step, rs in per.items():
                med_cpu = statistics.median(r["cpu_s"] for r in rs)
                med_wall = statistics.median(r["wall_s"] for r in rs)
                res[key]["steps"][step] = {
                    "wall_s": med_wall, "cpu_s": med_cpu,
                    "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in rs),
                    "growth_mb": statistics.median(r["growth_mb"] for r in rs),
                    "base_rss_mb": statistics.median(r["base_rss_mb"] for r in rs),
                    "rows_per_s": n / med_wall, "cpu_us_per_row": med_cpu / n * 1e6,
                    "runs": rs,
                }
    return res, failures


def scale_targets(res: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def growth(n: int, b: int, step: str) -> float | None:
        s = res.get(f"{n}x{b}", {}).get("steps", {}).get(step)
        return None if s is None else float(s["growth_mb"])

    for step in ("stream", "compact"):
        g16 = growth(16_000_000, 1, step)
        if g16 is not None:
            out.append({"target": f"scale {step}: peak RSS growth at 16M rows, 1 bucket "
                                  f"<= {GROWTH_LIMIT_MB:.0f} MB", "value": g16,
                        "limit": GROWTH_LIMIT_MB, "pass": g16 <= GROWTH_LIMIT_MB})
        g4 = growth(4_000_000, 1, step)
        if g16 is not None and g4 is not None:
            v = g16 / g4
            out.append({"target": f"scale {step}: growth flat from 4M to 16M rows, 1 bucket "
                                  f"(16M / 4M <= {FLAT_FACTOR})", "value": v,
                        "limit": FLAT_FACTOR, "pass": v <= FLAT_FACTOR})
    for _key, entry in res.items():
        for step, s in entry["steps"].items():
            base = BASELINE_CPU_US_PER_ROW.get(step, {}).get((entry["n"], entry["buckets"]))
            if base is None:
                continue
            v = s["cpu_us_per_row"] / base
            out.append({"target": f"scale {step} {entry['n'] // 1_000_000}M x "
                                  f"{entry['buckets']}: CPU/row within 10 % of the baseline "
                                  f"{base:.2f} us", "value": v, "limit": CPU_TOLERANCE,
                        "pass": v <= CPU_TOLERANCE})
    return out


def scale_report(res: dict[str, Any], sp: dict[str, Any]) -> list[str]:
    from scale_spark import spark_report

    lines = []
    hdr = (f"{'scale (rows x buckets)':<24} {'step':<8} {'wall s':>8} {'cpu s':>8} "
           f"{'us/row':>7} {'Mrows/s':>8} {'peak MB':>8} {'growth MB':>10} {'base':>6}")
    if res:
        lines += [hdr, "-" * len(hdr)]
    for _key, e in res.items():
        for step, s in e["steps"].items():
            lines.append(f"{e['n']:>12,} x {e['buckets']:<9} {step:<8} {s['wall_s']:8.2f} "
                         f"{s['cpu_s']:8.2f} {s['cpu_us_per_row']:7.2f} "
                         f"{s['rows_per_s'] / 1e6:8.2f} {s['peak_rss_mb']:8.0f} "
                         f"{s['growth_mb']:10.0f} {s['base_rss_mb']:6.0f}")
    return lines + spark_report(sp)
    return lines


def format_targets(targets: list[dict[str, Any]]) -> list[str]:
    return [f"{'PASS' if t['pass'] else 'MISS'}  {t['target']}: {t['value']:.2f} "
            f"(limit {t['limit']:g})" for t in targets]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="scale step of make bench (issue 16)")
    ap.add_argument("--sizes", default=os.environ.get(SIZES_ENV),
                    help=f"rows, comma separated, k/M suffixes (default 1M,4M,16M; env "
                         f"{SIZES_ENV})")
    ap.add_argument("--buckets", type=int, nargs="+", default=list(DEFAULT_BUCKETS))
    ap.add_argument("--steps", nargs="+", choices=SCALE_STEPS, default=list(SCALE_STEPS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--spark", choices=["yes", "no", "only"],
                    help="the Spark-vs-in-process compaction ratio (4M x 8; default: yes when "
                         "the sizes include 4M)")
    ap.add_argument("--spark-rounds", type=int, default=3)
    ap.add_argument("--fresh", action="store_true", help="rebuild the cached tables")
    ap.add_argument("--gen", default=str(DEFAULT_GEN))
    ap.add_argument("--json", default=str(RESULTS / "scale.json"))
    # internal: one step / the preparation in a fresh process
    ap.add_argument("--child", choices=[*SCALE_STEPS, "prepare"], help=argparse.SUPPRESS)
    ap.add_argument("--table-dir", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--rows", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--checksum", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        tdir = Path(a.table_dir)
        if a.child == "prepare":
            out = prepare_child(tdir / "wh", a.gen, a.n, a.buckets[0])
        else:
            out = step_child(a.child, tdir, a.rows, int(a.checksum))
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
        os._exit(0)

    gen_path = Path(a.gen).resolve()
    sha = hashlib.sha256(gen_path.read_bytes() + LAYOUT_VERSION.encode()).hexdigest()
    cache = RESULTS / "cache" / "scale" / sha[:16]
    load_start = [round(x, 2) for x in os.getloadavg()]
    print(f"scale step: load average {load_start} on {os.cpu_count()} CPUs", flush=True)
    failures: list[str] = []
    res: dict[str, Any] = {}
    sizes = parse_sizes(a.sizes)
    if a.spark is None:  # a quick run (BENCH_SCALE_SIZES=1M) skips the 4M Spark comparison
        from scale_spark import SPARK_ROWS

        a.spark = "yes" if SPARK_ROWS in sizes else "no"
    if a.spark != "only":
        res, failures = measure_scale(cache, gen_path, sizes, a.buckets,
                                      a.steps, a.rounds, a.fresh)
    sp: dict[str, Any] = {}
    from scale_spark import SPARK_BUCKETS, SPARK_ROWS, spark_targets, spark_vs_inprocess

    if a.spark != "no":
        print(f"Spark compaction job vs in-process ({SPARK_ROWS:,} rows x {SPARK_BUCKETS})",
              flush=True)
        sp, f2 = spark_vs_inprocess(cache, gen_path, a.spark_rounds, a.fresh)
        failures += f2
    targets = scale_targets(res) + spark_targets(sp)
    out = {"created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
           "load_avg_start": load_start,
           "load_avg_end": [round(x, 2) for x in os.getloadavg()],
           "scale": res, "spark": sp, "targets": targets, "failures": failures,
           "baseline_cpu_us_per_row": {k: {f"{n}x{b}": v for (n, b), v in d.items()}
                                       for k, d in BASELINE_CPU_US_PER_ROW.items()}}
    print()
    print("\n".join([*scale_report(res, sp), "", *format_targets(targets)]))
    print(f"load average: start {out['load_avg_start']}, end {out['load_avg_end']}; medians "
          f"of {a.rounds} fresh processes per step; growth = peak RSS above the process's "
          "RSS after imports")
    p = Path(a.json)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(out, indent=1) + "\n")
    print(f"results: {p}")
    if failures:
        print("CORRECTNESS / RUN FAILURES:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
