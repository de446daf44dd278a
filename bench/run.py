"""``make bench``: paimon_core vs pypaimon 2.1 (± pypaimon-rust) vs plain pyarrow Parquet.

See bench/README.md. Read steps (on tables written by pypaimon 2.1 from
``shared/bench/gen.py``):
  w1_all     read the 2,000,000-row append table
  w1_day     read ``dt = '2024-01-02'`` of it (500,000 rows)
  w2_merged  merged read of the primary-key table (1,100,000 rows, latest version wins)
Write steps (``bench/writes.py``; each library writes into a fresh warehouse):
  w1_write   2,000,000 rows into a new append table partitioned by ``dt``, one commit
  w2_write   the 7 W2 commits into a new primary-key table (insert 1M, upsert 200k, 5 x 20k)

Every measurement runs in a fresh subprocess (ours and plain Parquet: this venv; pypaimon:
the oracle venv, through ``bench/pypaimon_side.py``), so each one has its own peak RSS
(VmHWM, taken after its first read). A process reads ``--reps`` times (default 3): the first
read is reported as *cold*, the fastest of the others as *warm* (the headline figure), with
the CPU seconds of that read. Rounds are interleaved (the library order rotates each round);
we report medians over rounds and the minimum. The first round also checks every result
against gen.py (not timed); a failed check makes the run exit 1. Missing a performance
target never does.

Usage:
  .venv/bin/python bench/run.py [--fresh] [--rounds N] [--reps N] [--steps ...] [--libs ...]
  .venv/bin/python bench/run.py --profile        # cProfile of our W2 merged read only
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from maintenance import (
    MAINT_STEPS,
    maintenance_report,
    maintenance_targets,
    measure_maintenance,
)
from pypaimon_side import check_result, cpu_s, dir_bytes, load_gen, timed_reads
from writes import (
    WRITE_LIBS,
    WRITE_STEPS,
    measure_writes,
    run_json,
    rust_python,
    write_report,
    write_targets,
)

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"
DEFAULT_GEN = REPO.parent / "shared" / "bench" / "gen.py"

READ_STEPS = ("w1_all", "w1_day", "w2_merged")
STEPS = READ_STEPS + WRITE_STEPS + MAINT_STEPS
LIBS = ("ours", "pypaimon", "pypaimon_rust", "arrow_scan", "parquet_1file", "parquet_4files")
ALL_LIBS = tuple(dict.fromkeys(LIBS + WRITE_LIBS))
# Which libraries run which step (W1's plain Parquet copy is one zstd file per day).
STEP_LIBS = {
    "w1_all": ("ours", "pypaimon", "parquet_4files"),
    "w1_day": ("ours", "pypaimon", "parquet_4files"),
    "w2_merged": ("ours", "pypaimon", "pypaimon_rust", "arrow_scan", "parquet_1file",
                  "parquet_4files"),
}
# The columns a merged read of W2 must decode: the 8 of gen.py and the row kind. ``arrow_scan``
# reads exactly these from the table's live data files (the decode floor of a merged read).
ARROW_SCAN_EXTRA = ("_VALUE_KIND",)
STEP_ROWS = {"w1_all": 2_000_000, "w1_day": 500_000, "w2_merged": 1_100_000}
STEP_TITLES = {
    "w1_all": "W1 read all (2M rows)",
    "w1_day": "W1 read one day (500k rows)",
    "w2_merged": "W2 merged read (1.1M rows)",
}
PARQUET_ZSTD_LEVEL = 1  # = Paimon's default file.compression.zstd-level
CHILD_TIMEOUT_S = 600


# --------------------------------------------------------------------------- children
def child_main(args: argparse.Namespace) -> int:
    """One timed read in this fresh process; prints one JSON line."""
    import pyarrow as pa
    import pyarrow.compute
    import pyarrow.dataset
    import pyarrow.parquet as pq

    # imports are not timed: pyarrow.dataset (which pq.read_table imports lazily on its
    # first call, ~0.5 s) and pyarrow.compute are loaded up front for every library
    del pyarrow.compute, pyarrow.dataset
    gen = load_gen(args.gen)
    cache = Path(args.cache)
    step, lib = args.step, args.child
    imported: dict[str, float] = {}
    if lib == "ours":
        c0, t0 = cpu_s(), time.perf_counter()
        from paimon_core import FileSystemCatalog

        imported = {"import_s": time.perf_counter() - t0, "import_cpu_s": cpu_s() - c0}

        wh = str(cache / "wh")
        name = "db.w2" if step == "w2_merged" else "db.w1"
        flt = f"dt = '{gen.FILTER_DAY}'" if step == "w1_day" else None

        def run() -> Any:
            return FileSystemCatalog(wh).get_table(name).to_arrow(filter=flt)
    elif lib == "arrow_scan":
        from paimon_core import FileSystemCatalog

        # planned before the clock: the raw scan is the floor of the decode alone
        paths, cols = live_data_files(FileSystemCatalog(str(cache / "wh")).get_table("db.w2"),
                                      gen.SCHEMA.names)

        def run() -> Any:
            return pq.read_table(paths, columns=cols, partitioning=None)
    else:
        pdir = cache / "parquet"
        if step == "w2_merged":
            src = str(pdir / "w2_1file" / "w2.parquet") if lib == "parquet_1file" else str(
                pdir / "w2_4files")
        else:
            src = str(pdir / "w1_4files")
        filters = [("dt", "=", gen.FILTER_DAY)] if step == "w1_day" else None

        def run() -> Any:
            return pq.read_table(src, filters=filters)

    if args.profile:
        import cProfile
        import io
        import pstats
        import threading

        # cProfile sees only its own thread: profile every thread the read starts too
        # (ThreadPoolExecutor workers), then merge. Worker idle time shows as queue waits.
        thread_profs: list[cProfile.Profile] = []
        orig_run = threading.Thread.run

        def profiled_run(self: threading.Thread) -> None:
            p = cProfile.Profile()
            thread_profs.append(p)
            p.runcall(orig_run, self)

        for _ in range(args.reps - 1):
            run()  # unprofiled warm-up read(s): profile the steady state
        threading.Thread.run = profiled_run  # type: ignore[method-assign]
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        result = prof.runcall(run)
        seconds = time.perf_counter() - t0
        buf = io.StringIO()
        st = pstats.Stats(prof, stream=buf)
        for p in thread_profs:
            st.add(p)
        buf.write(f"cProfile of {lib} {step} (read {args.reps} of a fresh process): "
                  f"{seconds:.3f} s wall under the profiler; "
                  f"main thread + {len(thread_profs)} worker threads merged (times add up "
                  "across threads)\n")
        st.sort_stats("tottime").print_stats(30)
        st.sort_stats("cumulative").print_stats(40)
        Path(args.profile).write_text(buf.getvalue())
        print(json.dumps({"seconds": seconds, "rows": result.num_rows}))
        sys.stdout.flush()
        os._exit(0)

    out, result = timed_reads(run, args.reps)
    out.update(imported)
    if args.check and lib == "arrow_scan":  # every version of every key: count only
        out["check"] = [True, f"{result.num_rows} rows decoded (raw, unmerged)"]
    elif args.check:
        out["check"] = check_result(gen, step, result, pa)
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: not part of the measurement


# --------------------------------------------------------------------------- helpers
def live_data_files(table: Any, names: list[str]) -> tuple[list[str], list[str]]:
    """The paths of the table's live data files (latest snapshot) and the columns a merged
    read decodes from them (``names`` + :data:`ARROW_SCAN_EXTRA`)."""
    splits = table.new_read_builder().new_scan().plan().splits
    paths = [f"{s.bucket_path}/{f.file_name}" for s in splits for f in s.files]
    return paths, [*names, *ARROW_SCAN_EXTRA]


def oracle_python(gen_path: Path) -> str:
    """The oracle venv's python (pypaimon 2.1 + pyarrow 19)."""
    home = os.environ.get("PAIMON_ORACLE_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "paimon-oracle")
    py = os.path.join(home, "venv", "bin", "python")
    if os.access(py, os.X_OK):
        return py
    oracle = gen_path.resolve().parent.parent / "oracle" / "oracle"
    info = subprocess.run([str(oracle), "info"], capture_output=True, text=True, check=True)
    return str(json.loads(info.stdout)["python"])


def du_mb(path: Path) -> float:
    return dir_bytes(path) / 1e6


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --------------------------------------------------------------------------- preparation
def prepare(cache: Path, gen_path: Path, py_oracle: str, fresh: bool) -> dict[str, Any]:
    """Tables written once per gen.py version; ``prep.json`` is the completion stamp."""
    stamp = cache / "prep.json"
    if stamp.exists() and not fresh:
        cached = dict(json.loads(stamp.read_text()))
        cached["cached"] = True
        return cached
    if cache.exists():
        shutil.rmtree(cache)
    cache.mkdir(parents=True)
    print(f"preparing tables in {cache} (pypaimon 2.1 writes W1 and the 7 W2 commits; "
          "about a minute) ...", flush=True)
    t0 = time.perf_counter()
    prep: dict[str, Any] = {"pypaimon": run_json(
        [py_oracle, str(BENCH / "pypaimon_side.py"), "prepare",
         "--warehouse", str(cache / "wh"), "--gen", str(gen_path)], "pypaimon prepare")}
    prep["pypaimon"]["wall_s"] = time.perf_counter() - t0
    prep["parquet"] = write_parquet(cache / "parquet", load_gen(str(gen_path)))
    prep["bytes_mb"] = {
        "paimon_w1": du_mb(cache / "wh" / "db.db" / "w1"),
        "paimon_w2": du_mb(cache / "wh" / "db.db" / "w2"),
        **{f"parquet_{d.name}": du_mb(d) for d in sorted((cache / "parquet").iterdir())},
    }
    prep["load_avg"] = loadavg()
    prep["created"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    stamp.write_text(json.dumps(prep, indent=1))
    prep["cached"] = False
    return prep


def write_parquet(pdir: Path, gen: Any) -> dict[str, float]:
    """The plain-Parquet floor: same rows, zstd (level 1, as Paimon's default)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    def write(table: Any, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, str(path), compression="zstd",
                       compression_level=PARQUET_ZSTD_LEVEL)

    def per_day(table: Any, d: Path) -> float:
        parts = [table.filter(pc.equal(table.column("dt"), day)) for day in gen.DAYS]
        t0 = time.perf_counter()
        for day, part in zip(gen.DAYS, parts):
            write(part, d / f"{day}.parquet")
        return time.perf_counter() - t0

    times: dict[str, float] = {}
    w1 = gen.w1()
    times["w1_4files_write"] = per_day(w1, pdir / "w1_4files")
    del w1
    w2 = gen.w2_expected()
    t0 = time.perf_counter()
    write(w2, pdir / "w2_1file" / "w2.parquet")
    times["w2_1file_write"] = time.perf_counter() - t0
    times["w2_4files_write"] = per_day(w2, pdir / "w2_4files")
    return times


# --------------------------------------------------------------------------- measuring
def child_cmd(lib: str, step: str, cache: Path, gen_path: Path, py_oracle: str,
              check: bool, reps: int, py_rust: str | None = None) -> list[str]:
    if lib in ("pypaimon", "pypaimon_rust"):
        if step == "w2_merged" and lib == "pypaimon":
            reps = 1  # 12-25 s of Python work: a second read would add nothing but time
        py = py_oracle if lib == "pypaimon" else str(py_rust)
        cmd = [py, str(BENCH / "pypaimon_side.py"), "read",
               "--warehouse", str(cache / "wh"), "--gen", str(gen_path), "--step", step]
        if lib == "pypaimon_rust":
            cmd.append("--native")
    else:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", lib, "--step", step,
               "--cache", str(cache), "--gen", str(gen_path)]
    cmd += ["--reps", str(reps)]
    return [*cmd, "--check"] if check else cmd


def measure(args: argparse.Namespace, cache: Path, gen_path: Path,
            py_oracle: str) -> tuple[dict[str, Any], list[str]]:
    """Interleaved rounds; returns (per-step results, failures)."""
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    checks: dict[str, dict[str, Any]] = {}
    failures: list[str] = []
    plan = [(s, lib) for s in args.steps for lib in STEP_LIBS[s] if lib in args.libs]
    py_rust: str | None = None
    if any(lib == "pypaimon_rust" for _, lib in plan):
        py_rust, note = rust_python()
        print(f"pypaimon + pypaimon-rust (read.native.enabled): {note}", flush=True)
        if py_rust is None:
            plan = [(s, lib) for s, lib in plan if lib != "pypaimon_rust"]
    for rnd in range(args.rounds):
        for step in args.steps:
            libs = [lib for s, lib in plan if s == step]
            k = rnd % max(len(libs), 1)
            for lib in libs[k:] + libs[:k]:  # rotate the order every round
                check = rnd == 0
                try:
                    res = run_json(child_cmd(lib, step, cache, gen_path, py_oracle, check,
                                             args.reps, py_rust), f"{lib} {step}")
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    last = [ln for ln in str(e).splitlines() if ln.strip()][-1:]
                    failures.append(f"round {rnd + 1} {lib} {step}: run failed: "
                                    + (last[0] if last else repr(e)))
                    print(f"!!! {lib} {step} FAILED: {e}", flush=True)
                    continue
                if res["rows"] != STEP_ROWS[step] and lib != "arrow_scan":
                    failures.append(f"{lib} {step}: {res['rows']} rows, expected "
                                    f"{STEP_ROWS[step]}")
                if lib == "pypaimon_rust" and not res.get("pypaimon_rust_imported"):
                    failures.append(f"round {rnd + 1} pypaimon_rust {step}: pypaimon did not "
                                    "import pypaimon_rust (not a native read)")
                if check:
                    ok, msg = res.pop("check")
                    checks[f"{lib}/{step}"] = {"ok": ok, "message": msg}
                    if not ok:
                        failures.append(f"{lib} {step}: correctness check FAILED: {msg}")
                        print(f"!!! CORRECTNESS CHECK FAILED: {lib} {step}: {msg}", flush=True)
                runs.setdefault((step, lib), []).append(res)
                print(f"  round {rnd + 1}/{args.rounds}  {step:<10} {lib:<15} "
                      f"warm {res['seconds']:7.3f} s  cold {res['cold_s']:7.3f} s  "
                      f"cpu {res['cpu_s']:7.3f} s  peak {res['peak_rss_mb']:5.0f} MB"
                      + ("  check: " + ("ok" if checks[f'{lib}/{step}']['ok'] else "FAILED")
                         if check else ""), flush=True)

    steps: dict[str, Any] = {}
    for step in args.steps:
        libs_out: dict[str, Any] = {}
        for lib in STEP_LIBS[step]:
            rs = runs.get((step, lib))
            if not rs:
                continue
            secs = [r["seconds"] for r in rs]
            cold = [r["cold_s"] for r in rs]
            cpu = [r["cpu_s"] for r in rs]
            cold_cpu = [r.get("cold_cpu_s", float("nan")) for r in rs]
            imp = [r["import_s"] for r in rs if "import_s" in r]
            imp_cpu = [r["import_cpu_s"] for r in rs if "import_cpu_s" in r]
            libs_out[lib] = {
                "median_s": statistics.median(secs), "min_s": min(secs),
                "cold_median_s": statistics.median(cold), "cold_min_s": min(cold),
                "cpu_median_s": statistics.median(cpu),
                "cold_cpu_median_s": statistics.median(cold_cpu),
                "import_median_s": statistics.median(imp) if imp else None,
                "import_cpu_median_s": statistics.median(imp_cpu) if imp_cpu else None,
                # a fresh process's whole cost: the library's import + its first read
                "fresh_cpu_median_s": statistics.median(
                    r.get("import_cpu_s", float("nan")) + r.get("cold_cpu_s", float("nan"))
                    for r in rs),
                "peak_rss_mb": max(r["peak_rss_mb"] for r in rs),
                "base_rss_mb": statistics.median(r["base_rss_mb"] for r in rs),
                "runs_s": secs, "cold_runs_s": cold, "cpu_runs_s": cpu,
                "reads_per_process": len(rs[0]["seconds_all"]), "rows": rs[0]["rows"],
                "check": checks.get(f"{lib}/{step}"),
            }
        steps[step] = {"title": STEP_TITLES[step], "libs": libs_out,
                       "ratios": ratios(libs_out, "median_s"),
                       "ratios_min": ratios(libs_out, "min_s"),
                       "ratios_cold": ratios(libs_out, "cold_median_s"),
                       "ratios_cpu": ratios(libs_out, "cpu_median_s"),
                       "ratios_cold_cpu": ratios(libs_out, "cold_cpu_median_s"),
                       "ratios_fresh_cpu": ratios(libs_out, "fresh_cpu_median_s")}
    return steps, failures


def ratios(libs: dict[str, Any], key: str) -> dict[str, float]:
    """speed-up vs pypaimon (pypaimon / ours) and ours / plain Parquet, on medians of ``key``."""
    out: dict[str, float] = {}
    ours = libs.get("ours")
    if not ours:
        return out
    o = ours[key]
    if "pypaimon" in libs:
        out["speedup_vs_pypaimon"] = libs["pypaimon"][key] / o
    if "pypaimon_rust" in libs:
        out["ours_over_pypaimon_rust"] = o / libs["pypaimon_rust"][key]
    for lib in ("arrow_scan", "parquet_1file", "parquet_4files"):
        if lib in libs:
            out[f"ours_over_{lib}"] = o / libs[lib][key]
    return {k: v for k, v in out.items() if v == v}  # NaN: a figure the library lacks


def targets(steps: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 16's targets on the W2 merged read (they replace issue 2's "<= 2x plain Parquet",
    which the layout pypaimon writes does not allow; the ratios stay in the table)."""
    w2 = steps.get("w2_merged", {})
    out = []

    def others(key: str, kinds: tuple[str, ...] = ("min", "cpu", "cold")
               ) -> dict[str, float | None]:
        return {f"value_{k}": w2.get(f"ratios_{k}", {}).get(key) for k in kinds}

    cpu = w2.get("ratios_cpu", {})
    if "ours_over_arrow_scan" in cpu:
        v = cpu["ours_over_arrow_scan"]
        out.append({"target": "W2 merged read CPU <= 1.5x a raw Arrow scan of the same files "
                              "and columns (warm cpu medians)", "value": v,
                    **others("ours_over_arrow_scan", ("min", "cold_cpu")), "limit": 1.5,
                    "pass": v <= 1.5})
    r = w2.get("ratios", {})
    if "speedup_vs_pypaimon" in r:
        v = r["speedup_vs_pypaimon"]
        out.append({"target": "W2 merged read >= 10x faster than pypaimon 2.1",
                    "value": v, **others("speedup_vs_pypaimon"), "limit": 10.0,
                    "pass": v >= 10.0})
    for label, key in (("wall", "ratios_cold"), ("CPU", "ratios_cold_cpu")):
        v = w2.get(key, {}).get("ours_over_pypaimon_rust")
        if v is not None:
            out.append({"target": f"W2 merged read, first read of a fresh process: {label} "
                                  "<= 0.8x pypaimon + pypaimon-rust (cold medians)",
                        "value": v, "limit": 0.8, "pass": v <= 0.8})
    return out


# --------------------------------------------------------------------------- report
def report(res: dict[str, Any]) -> str:
    lines = []
    prep = res["prep"]
    pw = prep["pypaimon"]
    lines.append(f"pypaimon {pw.get('pypaimon')} writes (s){' [cached]' if prep['cached'] else ''}"
                 f": W1 2M {pw['w1_write']:.2f}; W2 "
                 + ", ".join(f"{k} {v:.2f}" for k, v in pw["w2_write"].items()))
    lines.append("plain Parquet writes (s): "
                 + ", ".join(f"{k} {v:.2f}" for k, v in prep["parquet"].items()))
    lines.append("on disk (MB): " + ", ".join(f"{k} {v:.1f}" for k, v in prep["bytes_mb"].items()))
    lines.append("")
    hdr = (f"{'step':<28} {'library':<15} {'median s':>9} {'min s':>7} {'cold s':>7} "
           f"{'cpu s':>7} {'peak RSS MB':>12} {'(base)':>7}")
    if res["steps"]:
        lines.append(hdr)
        lines.append("-" * len(hdr))
    for s in res["steps"].values():
        for lib, v in s["libs"].items():
            lines.append(f"{s['title']:<28} {lib:<15} {v['median_s']:9.3f} {v['min_s']:7.3f} "
                         f"{v['cold_median_s']:7.3f} {v['cpu_median_s']:7.3f} "
                         f"{v['peak_rss_mb']:12.0f} {v['base_rss_mb']:7.0f}")
        for lib, v in s["libs"].items():
            if v.get("import_median_s") is not None:
                lines.append(f"  {lib}: import {v['import_median_s']:.3f} s "
                             f"({v['import_cpu_median_s']:.3f} s CPU); cold read "
                             f"{v['cold_median_s']:.3f} s ({v['cold_cpu_median_s']:.3f} s CPU)")
        for label, key in (("warm", "ratios"), ("min", "ratios_min"), ("cold", "ratios_cold"),
                           ("cpu", "ratios_cpu"), ("cold cpu", "ratios_cold_cpu"),
                           ("import+cold cpu", "ratios_fresh_cpu")):
            if s.get(key):
                lines.append(f"{'  ratios (' + label + ')':<28} " + "; ".join(
                    (f"speed-up vs pypaimon {v:.1f}x" if k == "speedup_vs_pypaimon"
                     else f"ours/{k[len('ours_over_'):]} {v:.2f}") for k, v in s[key].items()))
        lines.append("")
    if res.get("write_steps"):
        lines.extend(write_report(res["write_steps"], res["write_targets"]))
        lines.append(f"pypaimon + pypaimon-rust: {res.get('pypaimon_rust_note')}")
        lines.append("")
    if res.get("maintenance"):
        lines.extend(maintenance_report(res["maintenance"]))
        lines.append("")
    for t in res.get("maintenance_targets", []):
        lines.append(f"{'PASS' if t['pass'] else 'MISS'}  {t['target']}: {t['value']:.2f} "
                     f"(limit {t['limit']:g})")
    for t in res["targets"]:
        more = "".join(f"; {k} {t['value_' + k]:.2f}" for k in ("min", "cpu", "cold", "cold_cpu")
                       if t.get("value_" + k) is not None)
        lines.append(f"{'PASS' if t['pass'] else 'MISS'}  {t['target']}: {t['value']:.2f} "
                     f"(limit {t['limit']:g}{more})")
    lines.append(f"load average: start {res['load_avg_start']}, end {res['load_avg_end']} "
                 f"({res['machine']['cpus']} CPUs); {res['rounds']} rounds, medians; "
                 "median/min s = warm read (fastest of a process's reads after its first), "
                 "cold = first read of a fresh process, cpu = user+sys CPU s of the warm read")
    if res["failures"]:
        lines.append("")
        lines.append("CORRECTNESS / RUN FAILURES:")
        lines.extend("  " + f for f in res["failures"])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="paimon_core read benchmark (make bench)")
    ap.add_argument("--fresh", action="store_true", help="rebuild the cached tables")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of the read steps")
    ap.add_argument("--write-rounds", type=int, default=3, help="rounds of the write steps")
    ap.add_argument("--maint-rounds", type=int, default=3,
                    help="rounds of W3 compaction + W4 expiry (each on a fresh copy)")
    ap.add_argument("--pypaimon-w2-rounds", type=int, default=1,
                    help="rounds of pure pypaimon's W2 write (~45 s each)")
    ap.add_argument("--reps", type=int, default=3,
                    help="reads per measuring process: the first is reported as cold, the "
                         "fastest of the others as warm (pypaimon's W2 read: always 1)")
    ap.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS))
    ap.add_argument("--libs", nargs="+", choices=ALL_LIBS, default=list(ALL_LIBS))
    ap.add_argument("--gen", default=str(DEFAULT_GEN), help="path of shared/bench/gen.py")
    ap.add_argument("--json", default=str(RESULTS / "latest.json"))
    ap.add_argument("--profile", nargs="?", const=str(RESULTS / "profile_w2_merged.txt"),
                    help="only cProfile our W2 merged read, write the stats to this file")
    # internal: one measurement in a fresh process
    ap.add_argument("--child", choices=["ours", "arrow_scan", "parquet_1file", "parquet_4files"],
                    help=argparse.SUPPRESS)
    ap.add_argument("--step", choices=READ_STEPS, help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    ap.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child_main(args)

    gen_path = Path(args.gen).resolve()
    if not gen_path.exists():
        print(f"gen.py not found at {gen_path} (shared/ must sit beside the repo)",
              file=sys.stderr)
        return 2
    sha = hashlib.sha256(gen_path.read_bytes()).hexdigest()
    cache = RESULTS / "cache" / sha[:16]
    py_oracle = oracle_python(gen_path)
    load_start = loadavg()
    print(f"load average {load_start} on {os.cpu_count()} CPUs", flush=True)
    prep = prepare(cache, gen_path, py_oracle, args.fresh)

    if args.profile:
        out = Path(args.profile)
        out.parent.mkdir(parents=True, exist_ok=True)
        cmd = [*child_cmd("ours", "w2_merged", cache, gen_path, py_oracle, False,
                                 args.reps), "--profile", str(out)]
        r = run_json(cmd, "profile")
        print(out.read_text())
        print(f"profile written to {out} ({r['seconds']:.3f} s under cProfile)")
        return 0

    run_maint = any(s in MAINT_STEPS for s in args.steps) and "ours" in args.libs
    wsteps = [s for s in args.steps if s in WRITE_STEPS]
    wlibs = [lib for lib in args.libs if lib in WRITE_LIBS]
    args.steps = [s for s in args.steps if s in READ_STEPS]
    args.libs = [lib for lib in args.libs if lib in LIBS]
    steps, failures = measure(args, cache, gen_path, py_oracle)
    write_res: dict[str, Any] = {}
    rust_note = "not run"
    if wsteps:
        py_rust, rust_note = (rust_python() if "pypaimon_rust" in wlibs
                              else (None, "not run"))
        print(f"pypaimon + pypaimon-rust: {rust_note}", flush=True)
        write_res, wfail = measure_writes(wsteps, wlibs, args.write_rounds,
                                          args.pypaimon_w2_rounds, gen_path, py_oracle,
                                          py_rust, rust_note)
        failures += wfail
    maint: dict[str, Any] = {}
    if run_maint:
        print("W3 compaction + W4 expiry (ours; pypaimon supports neither)", flush=True)
        maint, mfail = measure_maintenance(cache, gen_path, args.maint_rounds, args.reps)
        failures += mfail
    import pyarrow as pa

    res: dict[str, Any] = {
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "gen_sha256": sha, "cache": str(cache), "rounds": args.rounds,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform(), "pyarrow_ours": pa.__version__},
        "load_avg_start": load_start, "load_avg_end": loadavg(),
        "prep": prep, "steps": steps, "targets": targets(steps),
        "write_rounds": args.write_rounds, "pypaimon_w2_rounds": args.pypaimon_w2_rounds,
        "write_steps": write_res, "write_targets": write_targets(write_res),
        "pypaimon_rust_note": rust_note, "maintenance": maint,
        "maintenance_targets": maintenance_targets(maint), "failures": failures,
    }
    text = report(res)
    print()
    print(text)
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"\nresults: {out}")
    if failures:
        print("\n!!! BENCHMARK CORRECTNESS FAILURE (see above): exit 1", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
