"""The write half of ``make bench`` (see bench/README.md): W1 write and the 7 W2 commits.

Libraries:
  ours            paimon_core (this venv), ``FileSystemCatalog`` → ``new_write`` →
                  ``write_arrow`` → ``prepare_commit`` → ``new_commit(user).commit(msgs, i)``
  ours_orc        the same, tables with ``file.format=orc`` (ORC data files; target: CPU
                  within 1.5x of ours, issue 31)
  ours_avro       the same, tables with ``file.format=avro`` (Avro data files; the same
                  target)
  pypaimon        pypaimon 2.1, pure Python (the oracle venv; ``pypaimon_side.py write``)
  pypaimon_rust   pypaimon 2.1 + pypaimon-rust 0.4 (``bench/results/venv-rust``; the table
                  options ``write.native.enabled`` / ``commit.native.enabled`` switch pypaimon
                  to its ``NativeTableWrite``; the child reports the writer class it got)
  parquet_*       plain ``pq.write_table`` (zstd level 1) of W1's rows: one file, or one
                  file per day (the split by day is done before timing)

Every write runs in a fresh subprocess into a new, empty warehouse under
``bench/results/wtmp/`` (removed afterwards). The input is generated before the clock
starts; the time covers writing *and* committing. Peak RSS is the process's VmHWM after the
write (``base`` = RSS before it, input already in memory).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from pypaimon_side import check_result, cpu_s, load_gen, peak_rss_mb, rss_mb

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
RUST_VENV = RESULTS / "venv-rust"
RUST_PINS = ["pypaimon==2.1.0", "pypaimon-rust==0.4.0", "pyarrow<20"]
WRITE_STEPS = ("w1_write", "w2_write")
WRITE_LIBS = ("ours", "ours_orc", "ours_avro", "pypaimon", "pypaimon_rust",
              "parquet_1file", "parquet_4files")
WRITE_STEP_LIBS = {
    "w1_write": ("ours", "ours_orc", "ours_avro", "pypaimon", "pypaimon_rust",
                 "parquet_1file", "parquet_4files"),
    "w2_write": ("ours", "ours_orc", "ours_avro", "pypaimon", "pypaimon_rust"),
}
# our libraries writing another file.format (issue 31: CPU within 1.5x of our Parquet)
FORMAT_LIBS = {"ours_orc": "orc", "ours_avro": "avro"}
ORC_OVER_PARQUET_CPU = 1.5
WRITE_TITLES = {"w1_write": "W1 write (2M rows, 1 commit)",
                "w2_write": "W2 write (7 commits)"}
# W2 parts reported on their own: the 1M insert, the 200k upsert, the 5 x 20k upserts
W2_PARTS = ("insert", "upsert_200k", "upserts_5x20k")
W2_TITLES = {"insert": "W2 insert 1M", "upsert_200k": "W2 upsert 200k",
             "upserts_5x20k": "W2 5 x 20k upserts (total)"}
PARQUET_ZSTD_LEVEL = 1
CHILD_TIMEOUT_S = 600


# --------------------------------------------------------------------------- children
def child_main(args: argparse.Namespace) -> int:
    """One timed write in this fresh process (ours / plain Parquet); prints one JSON line."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    gen = load_gen(args.gen)
    wh = Path(args.warehouse)
    parts: dict[str, float] = {}
    out: dict[str, Any] = {}
    if args.child == "ours" or args.child in FORMAT_LIBS:
        from paimon_core import FileSystemCatalog, Schema

        fmt = {"file.format": FORMAT_LIBS[args.child]} if args.child in FORMAT_LIBS else {}
        cat = FileSystemCatalog(str(wh))
        user = f"bench-{uuid.uuid4()}"
        if args.step == "w1_write":
            name = "db.w1"
            cat.create_table(name, Schema.from_arrow(gen.SCHEMA, partition_keys=["dt"],
                                                     options=fmt))
            batches = [("w1", gen.w1())]
        else:
            name = "db.w2"
            cat.create_table(name, Schema.from_arrow(
                gen.SCHEMA, partition_keys=["dt"], primary_keys=["id", "dt"],
                # write-only: no compaction inside the writer (Java's default compacts after
                # some commits; pypaimon never does): the same work as the peers, like for
                # like. Compaction is measured on its own (W3, bench/maintenance.py).
                options={"bucket": "4", "write-only": "true", **fmt}))
            batches = list(gen.w2_batches())
        out["base_rss_mb"] = rss_mb()
        c0 = cpu_s()
        for i, (part, batch) in enumerate(batches):
            t = cat.get_table(name)  # fresh handle per commit (as pypaimon_side does)
            t0 = time.perf_counter()
            w = t.new_write(commit_user=user)
            w.write_arrow(batch)
            msgs = w.prepare_commit()
            t.new_commit(user).commit(msgs, i)
            parts[part] = time.perf_counter() - t0
        out["cpu_s"] = cpu_s() - c0
        out["peak_rss_mb"] = peak_rss_mb()
        if args.check:  # read back with our reader (not timed)
            result = cat.get_table(name).to_arrow()
            if args.step == "w2_write":
                ok, msg = gen.check_w2(result)
                out["check"] = [bool(ok), msg]
            else:
                out["check"] = check_result(gen, "w1_all", result, pa)
    else:  # plain Parquet of W1's rows
        data = gen.w1()

        def write(table: Any, path: Path) -> None:
            pq.write_table(table, str(path), compression="zstd",
                           compression_level=PARQUET_ZSTD_LEVEL)

        wh.mkdir(parents=True, exist_ok=True)
        if args.child == "parquet_4files":
            days = [(d, data.filter(pc.equal(data.column("dt"), d))) for d in gen.DAYS]
        out["base_rss_mb"] = rss_mb()
        c0 = cpu_s()
        t0 = time.perf_counter()
        if args.child == "parquet_4files":
            for d, part_t in days:
                write(part_t, wh / f"{d}.parquet")
        else:
            write(data, wh / "w1.parquet")
        parts["w1"] = time.perf_counter() - t0
        out["cpu_s"] = cpu_s() - c0
        out["peak_rss_mb"] = peak_rss_mb()
        if args.check:
            got = pq.read_table(str(wh))
            out["check"] = [got.num_rows == gen.N_W1, f"{got.num_rows} rows read back"]
    out["parts"] = parts
    out["seconds"] = sum(parts.values())
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    os._exit(0)


# --------------------------------------------------------------------------- rust venv
def rust_python() -> tuple[str | None, str]:
    """(python of the pypaimon + pypaimon-rust venv, or None; a note). Creates the venv
    under bench/results/ on first use (``python3 -m venv`` + pip, pins above)."""
    py = RUST_VENV / "bin" / "python"
    ok_stamp = RUST_VENV / ".bench-ok"
    if py.exists() and ok_stamp.exists():
        return str(py), ok_stamp.read_text().strip()
    print(f"creating {RUST_VENV} ({' '.join(RUST_PINS)}) ...", flush=True)
    try:
        base = shutil.which("python3") or "python3"
        subprocess.run([base, "-m", "venv", str(RUST_VENV)], check=True,
                       capture_output=True, text=True, timeout=300)
        subprocess.run([str(py), "-m", "pip", "install", "-q", *RUST_PINS], check=True,
                       capture_output=True, text=True, timeout=900)
        probe = subprocess.run(
            [str(py), "-c", "import pypaimon_rust.datafusion, importlib.metadata as m; "
             "print('pypaimon', m.version('pypaimon'), 'pypaimon-rust', "
             "m.version('pypaimon-rust'), 'pyarrow', m.version('pyarrow'))"],
            check=True, capture_output=True, text=True, timeout=120)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
        err = getattr(e, "stderr", None) or str(e)
        return None, f"unavailable: venv-rust setup failed: {str(err).strip()[-500:]}"
    note = probe.stdout.strip()
    ok_stamp.write_text(note + "\n")
    return str(py), note


# --------------------------------------------------------------------------- measuring
def write_cmd(lib: str, step: str, wh: Path, gen_path: Path, py_oracle: str,
              py_rust: str | None, check: bool) -> list[str]:
    if lib in ("pypaimon", "pypaimon_rust"):
        py = py_oracle if lib == "pypaimon" else str(py_rust)
        cmd = [py, str(BENCH / "pypaimon_side.py"), "write", "--warehouse", str(wh),
               "--gen", str(gen_path), "--step", step]
        if lib == "pypaimon_rust":
            cmd.append("--native")
    else:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", lib, "--step", step,
               "--warehouse", str(wh), "--gen", str(gen_path)]
    return [*cmd, "--check"] if check else cmd


def run_json(cmd: list[str], what: str, *, env: dict[str, str] | None = None,
             cwd: Path | None = None, timeout: float = CHILD_TIMEOUT_S) -> dict[str, Any]:
    """Run a child, return its last JSON line on stdout (raise with its stderr on failure)."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        raise RuntimeError(f"{what} failed (exit {p.returncode}):\n{p.stderr[-4000:]}")
    return dict(json.loads(lines[-1]))


def _w2_split(parts: dict[str, float]) -> dict[str, float]:
    small = {k: v for k, v in parts.items() if k.startswith("upsert_20k_")}
    return {"insert": parts["insert"], "upsert_200k": parts["upsert_200k"],
            "upserts_5x20k": sum(small.values()), **small}


def measure_writes(steps: list[str], libs: list[str], rounds: int, pypaimon_w2_rounds: int,
                   gen_path: Path, py_oracle: str, py_rust: str | None,
                   rust_note: str) -> tuple[dict[str, Any], list[str]]:
    """Interleaved rounds of the write steps; returns (per-step results, failures).

    pypaimon (pure Python) W2 takes ~45 s per run: it runs only ``pypaimon_w2_rounds``
    times (the first rounds)."""
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    checks: dict[str, dict[str, Any]] = {}
    failures: list[str] = []
    unavailable: dict[str, str] = {}
    if py_rust is None:
        unavailable["pypaimon_rust"] = rust_note
    tmp = RESULTS / "wtmp"
    for rnd in range(rounds):
        for step in steps:
            ls = [lib for lib in WRITE_STEP_LIBS[step] if lib in libs
                  and lib not in unavailable
                  and not (lib == "pypaimon" and step == "w2_write"
                           and rnd >= pypaimon_w2_rounds)]
            k = rnd % max(len(ls), 1)
            for lib in ls[k:] + ls[:k]:
                check = rnd == 0 and lib != "pypaimon"  # pypaimon's own read-back: ~15 s
                wh = tmp / f"{lib}-{step}"
                shutil.rmtree(wh, ignore_errors=True)
                try:
                    res = run_json(write_cmd(lib, step, wh, gen_path, py_oracle, py_rust,
                                             check), f"{lib} {step}")
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    last = [ln for ln in str(e).splitlines() if ln.strip()][-1:]
                    failures.append(f"round {rnd + 1} {lib} {step}: run failed: "
                                    + (last[0] if last else repr(e)))
                    print(f"!!! {lib} {step} FAILED: {e}", flush=True)
                    continue
                finally:
                    shutil.rmtree(wh, ignore_errors=True)
                if lib == "pypaimon_rust" and res.get("writer_classes") != ["NativeTableWrite"]:
                    unavailable[lib] = ("unavailable: pypaimon fell back to its Python writer "
                                        f"({res.get('writer_classes')})")
                    print(f"!!! {lib}: {unavailable[lib]}", flush=True)
                    continue
                if check:
                    ok, msg = res.pop("check")
                    checks[f"{lib}/{step}"] = {"ok": ok, "message": msg}
                    if not ok:
                        failures.append(f"{lib} {step}: correctness check FAILED: {msg}")
                        print(f"!!! CORRECTNESS CHECK FAILED: {lib} {step}: {msg}", flush=True)
                runs.setdefault((step, lib), []).append(res)
                extra = ""
                if step == "w2_write":
                    sp = _w2_split(res["parts"])
                    extra = "  (" + ", ".join(f"{p} {sp[p]:.3f}" for p in W2_PARTS) + ")"
                print(f"  write round {rnd + 1}/{rounds}  {step:<9} {lib:<15} "
                      f"{res['seconds']:7.3f} s  cpu {res['cpu_s']:7.3f} s  "
                      f"peak {res['peak_rss_mb']:5.0f} MB{extra}"
                      + ("  check: " + ("ok" if checks[f'{lib}/{step}']['ok'] else "FAILED")
                         if check else ""), flush=True)
    shutil.rmtree(tmp, ignore_errors=True)

    out: dict[str, Any] = {}
    for step in steps:
        libs_out: dict[str, Any] = {}
        for lib in WRITE_STEP_LIBS[step]:
            if lib not in libs:
                continue
            rs = runs.get((step, lib))
            if not rs:
                libs_out[lib] = {"unavailable": unavailable.get(lib, "no successful run")}
                continue
            per_part: dict[str, list[float]] = {}
            for r in rs:
                split = _w2_split(r["parts"]) if step == "w2_write" else {}
                for p, v in {"total": r["seconds"], **split}.items():
                    per_part.setdefault(p, []).append(v)
            libs_out[lib] = {
                "median_s": statistics.median(per_part["total"]), "min_s": min(per_part["total"]),
                "cpu_median_s": statistics.median(r["cpu_s"] for r in rs),
                "peak_rss_mb": max(r["peak_rss_mb"] for r in rs),
                "base_rss_mb": statistics.median(r["base_rss_mb"] for r in rs),
                "runs_s": per_part["total"], "n_runs": len(rs),
                "parts": {p: {"median_s": statistics.median(v), "min_s": min(v), "runs_s": v}
                          for p, v in per_part.items() if p != "total"},
                "check": checks.get(f"{lib}/{step}"),
                **{k: rs[0][k] for k in ("writer_classes", "pypaimon_rust",
                                         "pypaimon_rust_module", "pypaimon")
                   if k in rs[0]},
            }
        out[step] = {"title": WRITE_TITLES[step], "libs": libs_out,
                     "ratios": write_ratios(step, libs_out, "median_s"),
                     "ratios_min": write_ratios(step, libs_out, "min_s")}
    return out, failures


def _val(entry: dict[str, Any], part: str | None, key: str) -> float | None:
    if "median_s" not in entry:
        return None
    if part is None:
        return float(entry[key])
    p = entry["parts"].get(part)
    return float(p[key]) if p else None


def write_ratios(step: str, libs: dict[str, Any], key: str) -> dict[str, float | str]:
    """speed-ups (other / ours) per part, and ours / plain Parquet for W1."""
    out: dict[str, float | str] = {}
    ours = libs.get("ours", {})
    parts: list[str | None] = [None] if step == "w1_write" else list(W2_PARTS)
    for part in parts:
        o = _val(ours, part, key)
        if o is None:
            continue
        tag = part or "total"
        for lib in ("pypaimon", "pypaimon_rust"):
            if lib in libs:
                v = _val(libs[lib], part, key)
                out[f"{tag}_speedup_vs_{lib}"] = v / o if v else "unavailable"
        if step == "w1_write":
            for lib in ("parquet_1file", "parquet_4files"):
                v = _val(libs.get(lib, {}), None, key)
                if v:
                    out[f"ours_over_{lib}"] = o / v
    parquet = libs.get("ours", {})
    for lib, fmt in FORMAT_LIBS.items():
        other = libs.get(lib, {})
        if "cpu_median_s" in other and "cpu_median_s" in parquet:
            out[f"{fmt}_over_parquet_cpu"] = other["cpu_median_s"] / parquet["cpu_median_s"]
    return out


def write_targets(wsteps: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 3's write targets, on medians (min in ``value_min``)."""
    out: list[dict[str, Any]] = []
    w1 = wsteps.get("w1_write")
    if w1:
        for lib in ("parquet_1file", "parquet_4files"):
            k = f"ours_over_{lib}"
            if k in w1["ratios"]:
                v = w1["ratios"][k]
                out.append({"target": f"W1 write <= 1.3x plain Parquet ({lib})", "value": v,
                            "value_min": w1["ratios_min"].get(k), "limit": 1.3,
                            "pass": v <= 1.3})
    w2 = wsteps.get("w2_write")
    if w2:
        for part in W2_PARTS:
            for lib, limit, what in (("pypaimon_rust", 1.0, "faster than pypaimon-rust"),
                                     ("pypaimon", 15.0, ">= 15x faster than pypaimon 2.1")):
                k = f"{part}_speedup_vs_{lib}"
                if k not in w2["ratios"]:
                    continue
                v = w2["ratios"][k]
                t: dict[str, Any] = {"target": f"{W2_TITLES[part]} {what}", "limit": limit,
                                     "value_min": w2["ratios_min"].get(k)}
                if isinstance(v, str):  # the other library could not be measured
                    t.update(value=None, unavailable=v, **{"pass": None})
                else:
                    t.update(value=v, **{"pass": v > limit if limit == 1.0 else v >= limit})
                out.append(t)
    for step, res in wsteps.items():  # issue 31: ORC/Avro files cost at most 1.5x Parquet
        for fmt in FORMAT_LIBS.values():
            v = res["ratios"].get(f"{fmt}_over_parquet_cpu")
            if isinstance(v, float):
                out.append({"target": f"{WRITE_TITLES[step]}: {fmt.upper()} CPU <= "
                                      f"{ORC_OVER_PARQUET_CPU:g}x our Parquet", "value": v,
                            "value_min": None, "limit": ORC_OVER_PARQUET_CPU,
                            "pass": v <= ORC_OVER_PARQUET_CPU})
    return out


# --------------------------------------------------------------------------- report
def write_report(wsteps: dict[str, Any], targets: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    hdr = (f"{'write step':<30} {'library':<15} {'median s':>9} {'min s':>7} {'cpu s':>7} "
           f"{'peak RSS MB':>12} {'(base)':>7} {'runs':>5}")
    lines.append(hdr)
    lines.append("-" * len(hdr))
    for step, s in wsteps.items():
        for lib, v in s["libs"].items():
            if "median_s" not in v:
                lines.append(f"{s['title']:<30} {lib:<15} {v['unavailable']}")
                continue
            lines.append(f"{s['title']:<30} {lib:<15} {v['median_s']:9.3f} {v['min_s']:7.3f} "
                         f"{v['cpu_median_s']:7.3f} {v['peak_rss_mb']:12.0f} "
                         f"{v['base_rss_mb']:7.0f} {v['n_runs']:5d}")
        if step == "w2_write":
            for part in W2_PARTS:
                for lib, v in s["libs"].items():
                    if "median_s" in v:
                        p = v["parts"][part]
                        lines.append(f"{'  ' + W2_TITLES[part]:<30} {lib:<15} "
                                     f"{p['median_s']:9.3f} {p['min_s']:7.3f}")
            for lib, v in s["libs"].items():
                if "median_s" in v:
                    each = [v["parts"][k]["median_s"] for k in sorted(v["parts"])
                            if k.startswith("upsert_20k_")]
                    lines.append(f"{'  each 20k upsert (median)':<30} {lib:<15} "
                                 + " ".join(f"{x:.3f}" for x in each))
        for lib, v in s["libs"].items():
            if "writer_classes" in v and lib == "pypaimon_rust":
                lines.append(f"  {lib}: pypaimon writer {v['writer_classes']}, pypaimon_rust "
                             f"{v.get('pypaimon_rust')} imported from "
                             f"{v.get('pypaimon_rust_module')}")
        for label, key in (("median", "ratios"), ("min", "ratios_min")):
            if s[key]:
                lines.append(f"{'  ratios (' + label + ')':<30} " + "; ".join(
                    f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                    for k, v in s[key].items()))
        lines.append("")
    for t in targets:
        if t["pass"] is None:
            lines.append(f"N/A   {t['target']}: {t.get('unavailable')}")
            continue
        more = f"; min {t['value_min']:.2f}" if isinstance(t.get("value_min"), float) else ""
        lines.append(f"{'PASS' if t['pass'] else 'MISS'}  {t['target']}: {t['value']:.2f} "
                     f"(limit {t['limit']:g}; on medians{more})")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="one timed write (child of bench/run.py)")
    ap.add_argument("--child", choices=["ours", *FORMAT_LIBS, "parquet_1file", "parquet_4files"],
                    required=True)
    ap.add_argument("--step", choices=WRITE_STEPS, required=True)
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--check", action="store_true")
    return child_main(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
