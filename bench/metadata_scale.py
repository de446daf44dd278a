"""Metadata scale step of ``make bench`` (issue 28, scope 4): what planning, committing and
expiring cost on a table of many data-file entries over 10,000 partitions, ours against
pypaimon 2.1 (pure Python, and with pypaimon-rust 0.4's planner) on the same table.

    .venv/bin/python bench/metadata_scale.py                 # 100k entries (the default)
    BENCH_METADATA_SIZES=1M make bench                       # 1M entries (opt-in: ~1 h build)
    .venv/bin/python bench/metadata_scale.py --sizes 200 --partitions 20 --rounds 1  # smoke

* **Table** (layout in :mod:`metadata_steps`): ``db.meta``, primary key (``part``, ``id``),
  ``part`` INT the partition (10,000), ``bucket = 2``; N entries (data files of one row each,
  real Parquet) written by our writer in 10 commits of N/10, each commit in a fresh process.
  Cached under ``bench/results/cache/metadata/<digest>/e<N>_p<P>/`` (``prep.json`` the
  completion stamp, holding the build's figures): the digest covers every ``paimon_core``
  source and the layout, so a change of our writer or committer rebuilds (and re-measures)
  the table.
* **Steps**, each in a fresh process (wall, CPU = user + sys of every thread, peak RSS growth
  above the RSS right before the step, VmHWM reset through ``/proc/self/clear_refs``):
  ``build`` each of the 10 commits (the commit measured; the write's CPU beside it);
  ``plan_full`` / ``plan_one`` (``part = P/2``) by us, pypaimon and pypaimon + rust
  (``scan.native-plan.enabled``); ``commit1`` one 1-row file committed to the built table by
  us and by pypaimon (on private copies: data files hard-linked); ``expire`` of the 10 build
  snapshots (after an unmeasured 1-file commit); ``day``: a CDC commit of 1,000 rows into 4
  partitions, then one compaction commit per bucket of them. Every step checks its result
  (planned files, snapshot ids, rows) and a wrong result fails the run (exit 1).
* **S3** (:mod:`metadata_s3`): the same operations on a small primary-key table of 20
  snapshots on moto_server behind ``scripts/s3proxy.py``'s proxy, requests counted by method.
* **Java 0.9 spot check**: the oracle (Java) and pypaimon read 5 partitions of the latest
  snapshot of the built table; the rows must be identical and what the layout wrote.
* **Targets** (issue 28; PASS / MISS, a miss never fails the run) in :func:`targets`.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"
if str(BENCH) not in sys.path:  # run as a script or loaded by path (tests)
    sys.path.insert(0, str(BENCH))

from metadata_checks import java_spot_check, targets  # noqa: E402
from metadata_steps import COMMITS, MUTATING, ONE_FILE_ID, STEPS, TABLE, Layout  # noqa: E402
from scale import format_targets, parse_sizes  # noqa: E402

SIZES_ENV = "BENCH_METADATA_SIZES"  # e.g. "1M" for the 1M-entry table (opt-in)
DEFAULT_SIZES = (100_000,)
DEFAULT_PARTITIONS = 10_000
LAYOUT_VERSION = "metadata-1"  # bump when the layout changes (part of the cache key)
CHILD_TIMEOUT_S = 3600
PEERS = ("pypaimon", "pypaimon_rust")


# ----------------------------------------------------------------------- children
def run_json(cmd: list[str], what: str, cwd: Path | None = None) -> dict[str, Any]:
    """Run a child; its last stdout line is its JSON answer (raise with stderr on failure)."""
    from writes import run_json as run_child

    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = run_child(cmd, what, env=env, cwd=cwd, timeout=CHILD_TIMEOUT_S)
    out["load1"] = round(os.getloadavg()[0], 2)
    return out


def ours_cmd(step: str, wh: Path, lay: Layout, commit: int = 0) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--child", step, "--warehouse",
            str(wh), "--entries", str(lay.entries), "--partitions", str(lay.partitions),
            "--commit", str(commit)]


def peer_cmd(lib: str, py: str, step: str, wh: Path, lay: Layout) -> list[str]:
    side = [py, str(BENCH / "pypaimon_meta_side.py")]
    base = ["--warehouse", str(wh), "--table", TABLE]
    if step == "commit1":
        return [*side, "commit", *base, "--part", str(lay.one_part()), "--id", str(ONE_FILE_ID)]
    part = ["--part", str(lay.one_part())] if step == "plan_one" else []
    native = ["--native"] if lib == "pypaimon_rust" else []
    return [*side, "plan", *base, *part, *native]


def peer_pythons(gen_path: Path, rust: bool) -> dict[str, str]:
    """The peers' pythons: the oracle venv (pypaimon 2.1) and, with ``rust``,
    ``bench/results/venv-rust`` (pypaimon 2.1 + pypaimon-rust 0.4; made on first use,
    skipped when it cannot be)."""
    from run import oracle_python
    from writes import rust_python

    out = {"pypaimon": oracle_python(gen_path)}
    if not rust:
        return out
    py, note = rust_python()
    if py is None:
        print(f"  pypaimon_rust {note}", flush=True)
    else:
        out["pypaimon_rust"] = py
    return out


# ----------------------------------------------------------------------- the build
def source_digest(lay: Layout) -> str:
    """Digest of the inputs of a built table: every paimon_core source, the layout
    (:data:`LAYOUT_VERSION`: bump it when :mod:`metadata_steps`' layout changes) and the
    sizes."""
    h = hashlib.sha256(f"{LAYOUT_VERSION} {lay.entries} {lay.partitions}".encode())
    for p in sorted((REPO / "paimon_core").rglob("*.py")):
        h.update(str(p.relative_to(REPO)).encode() + p.read_bytes())
    return h.hexdigest()[:16]


def build(cache: Path, lay: Layout, fresh: bool) -> dict[str, Any]:
    """The built table (cached); its prep.json holds the build's figures."""
    tdir = cache / source_digest(lay) / f"e{lay.entries}_p{lay.partitions}"
    stamp = tdir / "prep.json"
    if stamp.exists() and not fresh:
        return {**json.loads(stamp.read_text()), "dir": str(tdir)}
    if tdir.exists():
        import shutil

        shutil.rmtree(tdir)
    tdir.mkdir(parents=True)
    print(f"  building {lay.entries:,} entries over {lay.partitions:,} partitions in "
          f"{COMMITS} commits under {tdir} ...", flush=True)
    commits = []
    for k in range(COMMITS):
        r = run_json(ours_cmd("build", tdir / "wh", lay, k), f"build commit {k + 1}")
        print(f"    commit {k + 1:>2}: commit cpu {r['cpu_s']:7.2f} s wall {r['wall_s']:7.2f} s"
              f"  +{r['growth_mb']:.0f} MB (peak {r['peak_rss_mb']:.0f})  write cpu "
              f"{r['write_cpu_s']:.1f} s  load {r['load1']}", flush=True)
        if not r["check"][0]:
            raise RuntimeError(f"build commit {k + 1}: check FAILED: {r['check'][1]}")
        commits.append(r)
    prep = {"entries": lay.entries, "partitions": lay.partitions, "commits": commits,
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
    stamp.write_text(json.dumps(prep, indent=1))
    return {**prep, "dir": str(tdir)}


# ----------------------------------------------------------------------- measuring
def one_run(lib: str, step: str, wh: Path, lay: Layout, pys: dict[str, str]) -> dict[str, Any]:
    """One fresh process of ``lib`` doing ``step`` (on a private copy when it writes)."""
    from metadata_steps import copy_table

    with tempfile.TemporaryDirectory(prefix="bench-meta-") as tmp:
        use = wh
        if step in MUTATING:
            use = Path(tmp) / "wh"
            copy_table(wh, use)
        if lib == "ours":
            return run_json(ours_cmd(step, use, lay), f"ours {step}")
        return run_json(peer_cmd(lib, pys[lib], step, use, lay), f"{lib} {step}", cwd=BENCH)


def peer_check(lib: str, step: str, r: dict[str, Any], lay: Layout) -> list[Any]:
    if step == "commit1":
        return [r["files"] == 1, f"{r['files']} file committed"]
    want = lay.per_partition if step == "plan_one" else lay.entries
    msg = f"{r['files']:,} files planned, {want:,} expected"
    if lib == "pypaimon_rust":
        if not r["native_planned"]:
            return [False, msg + "; pypaimon fell back to its Python planner"]
        msg += " (native planner)"
    return [r["files"] == want, msg]


def measure(wh: Path, lay: Layout, pys: dict[str, str], steps: list[str], rounds: int,
            ) -> tuple[dict[str, Any], list[str]]:
    """Each (step, library) ``rounds`` times, interleaved; medians."""
    libs = {"plan_full": ["ours", *PEERS], "plan_one": ["ours", *PEERS],
            "commit1": ["ours", "pypaimon"], "expire": ["ours"], "day": ["ours"]}
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    failures: list[str] = []
    for rnd in range(rounds):
        for step in steps:
            for lib in (x for x in libs[step] if x == "ours" or x in pys):
                try:
                    r = one_run(lib, step, wh, lay, pys)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    failures.append(f"{lib} {step} round {rnd + 1}: "
                                    + (str(e).strip().splitlines() or ["?"])[-1])
                    print(f"!!! {lib} {step} FAILED: {e}", flush=True)
                    continue
                if lib != "ours":
                    r["check"] = peer_check(lib, step, r, lay)
                if not r["check"][0]:
                    failures.append(f"{lib} {step}: check FAILED: {r['check'][1]}")
                runs.setdefault(step, {}).setdefault(lib, []).append(r)
                print(f"  {step:<9} {lib:<13} round {rnd + 1}/{rounds}  cpu {r['cpu_s']:8.3f} s"
                      f"  wall {r['wall_s']:8.3f} s  +{r['growth_mb']:.0f} MB  load "
                      f"{r['load1']}  {'ok' if r['check'][0] else 'FAILED'}: {r['check'][1]}",
                      flush=True)
    res = {step: {lib: {"cpu_s": statistics.median(r["cpu_s"] for r in rs),
                        "wall_s": statistics.median(r["wall_s"] for r in rs),
                        "growth_mb": statistics.median(r["growth_mb"] for r in rs),
                        "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in rs),
                        **({"write_cpu_s": statistics.median(r["write_cpu_s"] for r in rs)}
                           if all("write_cpu_s" in r for r in rs) else {}),
                        "runs": rs} for lib, rs in by_lib.items()}
           for step, by_lib in runs.items()}
    return res, failures


# ----------------------------------------------------------------------- report
def report(prep: dict[str, Any], res: dict[str, Any], s3: dict[str, Any]) -> list[str]:
    lines = [f"metadata scale: {prep['entries']:,} entries over {prep['partitions']:,} "
             f"partitions (cpu / wall s, growth MB: medians)"]
    hdr = f"{'step':<22} {'library':<14} {'cpu s':>9} {'wall s':>9} {'growth MB':>10}"
    lines += [hdr, "-" * len(hdr)]
    for i in sorted({0, len(prep["commits"]) - 1}):
        c = prep["commits"][i]
        lines.append(f"{f'build commit {i + 1}':<22} {'ours':<14} {c['cpu_s']:9.3f} "
                     f"{c['wall_s']:9.3f} {c['growth_mb']:10.0f}")
    for step, by_lib in res.items():
        for lib, s in by_lib.items():
            lines.append(f"{step:<22} {lib:<14} {s['cpu_s']:9.3f} {s['wall_s']:9.3f} "
                         f"{s['growth_mb']:10.0f}")
            if "write_cpu_s" in s:  # the write before the measured commit
                lines.append(f"{'  its write':<22} {lib:<14} {s['write_cpu_s']:9.3f}")
    if s3.get("steps"):
        lines += ["", f"S3 requests ({s3['table']}), by method:"]
        for step, c in s3["steps"].items():
            by = ", ".join(f"{m} {n}" for m, n in sorted(c["by_method"].items()))
            lines.append(f"  {step:<12} {c['total']:>4}  ({by})")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="metadata scale step of make bench (issue 28)")
    ap.add_argument("--sizes", default=os.environ.get(SIZES_ENV),
                    help=f"data-file entries, comma separated, k/M suffixes (default 100k; env "
                         f"{SIZES_ENV}, e.g. 1M)")
    ap.add_argument("--partitions", type=int, default=DEFAULT_PARTITIONS)
    ap.add_argument("--steps", nargs="+", choices=list(STEPS), default=list(STEPS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-peers", action="store_true", help="ours only (no pypaimon)")
    ap.add_argument("--no-rust", action="store_true",
                    help="no pypaimon-rust (does not create bench/results/venv-rust)")
    ap.add_argument("--no-java", action="store_true", help="skip the Java 0.9 spot check")
    ap.add_argument("--no-s3", action="store_true", help="skip the S3 request counts")
    ap.add_argument("--fresh", action="store_true", help="rebuild the cached tables")
    ap.add_argument("--gen", default=str(Path(os.environ.get("PAIMON_SHARED")
                                              or REPO.parent / "shared") / "bench" / "gen.py"))
    ap.add_argument("--json", default=str(RESULTS / "metadata.json"))
    ap.add_argument("--cache", default=str(RESULTS / "cache" / "metadata"),
                    help="where the built tables are cached")
    ap.add_argument("--s3-snapshots", type=int, default=None,
                    help="snapshots of the S3 table (default 20; at least 11)")
    # internal: one step in a fresh process
    ap.add_argument("--child", choices=["build", *STEPS], help=argparse.SUPPRESS)
    ap.add_argument("--warehouse", help=argparse.SUPPRESS)
    ap.add_argument("--entries", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--commit", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        from metadata_steps import build_commit

        lay = Layout(a.entries, a.partitions)
        wh = Path(a.warehouse)
        out = build_commit(wh, lay, a.commit) if a.child == "build" else STEPS[a.child](wh, lay)
        sys.stdout.write(json.dumps(out, default=str) + "\n")
        sys.stdout.flush()
        os._exit(0)
    return drive(a)


def drive(a: argparse.Namespace) -> int:
    load_start = [round(x, 2) for x in os.getloadavg()]
    print(f"metadata scale step: load average {load_start} on {os.cpu_count()} CPUs", flush=True)
    pys = {} if a.no_peers else peer_pythons(Path(a.gen), not a.no_rust)
    sizes = parse_sizes(a.sizes) if a.sizes else DEFAULT_SIZES
    out: dict[str, Any] = {"load_avg_start": load_start, "sizes": {}}
    failures: list[str] = []
    for n in sizes:
        lay = Layout(n, a.partitions)
        lay.check()
        prep = build(Path(a.cache), lay, a.fresh)
        wh = Path(prep["dir"]) / "wh"
        res, f = measure(wh, lay, pys, a.steps, a.rounds)
        failures += f
        java: dict[str, Any] = {}
        if not a.no_java:
            java = java_spot_check(wh, lay, pys.get("pypaimon"), Path(a.gen))
            print(f"  Java 0.9 spot check: {'ok' if java['ok'] else 'FAILED'}: {java['message']}",
                  flush=True)
            if not java["ok"]:
                failures.append(f"java spot check at {n:,}: {java['message']}")
        out["sizes"][str(n)] = {"build": prep, "steps": res, "java_spot_check": java}
    s3: dict[str, Any] = {}
    if not a.no_s3:
        from metadata_s3 import run_s3

        s3 = run_s3(a.s3_snapshots)
        failures += s3.get("failures", [])
    out["s3"] = s3
    out["targets"] = targets(out)
    out["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    out["created"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    out["failures"] = failures
    print()
    for n, e in out["sizes"].items():
        print("\n".join(report(e["build"], e["steps"], s3 if n == str(sizes[-1]) else {})))
    print("\n".join(["", *format_targets(out["targets"])]))
    print(f"load average: start {load_start}, end {out['load_avg_end']}; medians of "
          f"{a.rounds} fresh processes per step; growth = peak RSS above the RSS before it")
    p = Path(a.json)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(out, indent=1, default=str) + "\n")
    print(f"results: {p}")
    if failures:
        print("CORRECTNESS / RUN FAILURES:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
