"""W1-W4 of ``make bench`` for this tree against an earlier revision, in one run: is a change
a regression on the write path? (issue 28: "CPU within 5 % in the same run")

    .venv/bin/python bench/revisions.py --base 92a1596 [--rounds 5]

The base revision's ``paimon_core`` is exported with ``git archive`` into
``bench/results/revisions/<sha>/`` and put first on ``PYTHONPATH`` of the children; both sides
run this tree's harness (``writes.py --child ours``: W1 write, W2's 7 commits;
``maintenance.py --child``: W3 full compaction of the pypaimon-written W2 table, W4 expiry),
each in a fresh process, the two sides alternating round by round (first side alternating
too), so load drifts hit both alike. Reported: median CPU seconds (user + sys) and wall per
step and side, the ratio this / base, and PASS when every ratio is within ``--limit``
(default 1.05). Every child checks its result (rows read back), and the children confirm
which ``paimon_core`` they imported.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from writes import run_json  # noqa: E402

CHILD_TIMEOUT_S = 900
STEPS = ("w1_write", "w2_write", "w3_compact", "w4_expire")


def export(rev: str) -> Path:
    """``paimon_core`` of ``rev`` under ``bench/results/revisions/<sha>`` (once)."""
    sha = subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout.strip()
    out = RESULTS / "revisions" / sha[:12]
    if not (out / "paimon_core" / "__init__.py").exists():
        out.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", sha, "paimon_core"], cwd=REPO,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree) + os.pathsep + str(REPO)}


def imported_from(tree: Path) -> str:
    return subprocess.run([sys.executable, "-c", "import paimon_core; print(paimon_core.__file__)"],
                          env=_env(tree), capture_output=True, text=True, check=True,
                          cwd="/").stdout.strip()  # not the cwd's paimon_core


def one_round(tree: Path, gen: Path, cache: Path, tmp: Path, steps: list[str]
              ) -> dict[str, dict[str, float]]:
    """W1, W2 (writes.py children) and W3 + W4 (one maintenance.py child) on ``tree``."""
    import shutil

    out: dict[str, dict[str, float]] = {}
    for step in (s for s in ("w1_write", "w2_write") if s in steps):
        wh = tmp / step
        shutil.rmtree(wh, ignore_errors=True)
        try:
            r = run_json([sys.executable, str(BENCH / "writes.py"), "--child", "ours",
                          "--step", step, "--warehouse", str(wh), "--gen", str(gen), "--check"],
                         step, env=_env(tree), cwd=REPO, timeout=CHILD_TIMEOUT_S)
        finally:
            shutil.rmtree(wh, ignore_errors=True)
        ok, msg = r["check"]
        if not ok:
            raise RuntimeError(f"{step} on {tree}: check FAILED: {msg}")
        out[step] = {"cpu_s": r["cpu_s"], "wall_s": r["seconds"]}
    if not {"w3_compact", "w4_expire"} & set(steps):
        return out
    r = run_json([sys.executable, str(BENCH / "maintenance.py"), "--child", "--cache",
                  str(cache), "--gen", str(gen), "--reps", "1"], "w3/w4", env=_env(tree),
                 cwd=REPO, timeout=CHILD_TIMEOUT_S)
    for key in ("read_after_compact_check", "read_after_expire_check"):
        if not r[key][0]:
            raise RuntimeError(f"w3/w4 on {tree}: {key} FAILED: {r[key][1]}")
    out["w3_compact"] = {"cpu_s": r["compact_cpu_s"], "wall_s": r["compact_s"]}
    out["w4_expire"] = {"cpu_s": r["expire_cpu_s"], "wall_s": r["expire_s"]}
    return out


def main(argv: list[str] | None = None) -> int:
    import hashlib

    from run import oracle_python, prepare

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the git revision to compare against")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS))
    ap.add_argument("--limit", type=float, default=1.05, help="largest CPU ratio this / base")
    ap.add_argument("--gen", default=str(REPO.parent / "shared" / "bench" / "gen.py"))
    ap.add_argument("--json", default=str(RESULTS / "revisions.json"))
    a = ap.parse_args(argv)
    gen = Path(a.gen).resolve()
    cache = RESULTS / "cache" / hashlib.sha256(gen.read_bytes()).hexdigest()[:16]
    prepare(cache, gen, oracle_python(gen), False)  # the W2 table W3 compacts
    sides = {"this": REPO, "base": export(a.base)}
    for name, tree in sides.items():
        got = imported_from(tree)
        if not got.startswith(str(tree)):
            print(f"{name}: paimon_core imported from {got}, not {tree}", file=sys.stderr)
            return 2
    load_start = [round(x, 2) for x in os.getloadavg()]
    print(f"W1-W4: this tree vs {a.base} ({sides['base']}), {a.rounds} rounds, load "
          f"{load_start} on {os.cpu_count()} CPUs", flush=True)
    runs: dict[str, list[dict[str, dict[str, float]]]] = {"this": [], "base": []}
    tmp = RESULTS / "revisions" / "wtmp"
    for rnd in range(a.rounds):
        order = ["this", "base"] if rnd % 2 == 0 else ["base", "this"]
        for side in order:
            r = one_round(sides[side], gen, cache, tmp, a.steps)
            runs[side].append(r)
            print(f"  round {rnd + 1}/{a.rounds} {side:<4} " + "  ".join(
                f"{s} {r[s]['cpu_s']:.3f}" for s in a.steps) + f"  (cpu s; load "
                f"{os.getloadavg()[0]:.2f})", flush=True)
    res: dict[str, Any] = {"base": a.base, "rounds": a.rounds, "load_avg_start": load_start,
                           "steps": {}}
    ok = True
    print(f"\n{'step':<11} {'this cpu':>9} {'base cpu':>9} {'ratio':>6}  wall this / base")
    for s in a.steps:
        med = {side: {k: statistics.median(r[s][k] for r in runs[side])
                      for k in ("cpu_s", "wall_s")} for side in runs}
        ratio = med["this"]["cpu_s"] / med["base"]["cpu_s"]
        ok = ok and ratio <= a.limit
        res["steps"][s] = {**{f"{side}_{k}": v for side in med for k, v in med[side].items()},
                           "cpu_ratio": ratio}
        print(f"{s:<11} {med['this']['cpu_s']:9.3f} {med['base']['cpu_s']:9.3f} {ratio:6.3f}"
              f"  {med['this']['wall_s']:.3f} / {med['base']['wall_s']:.3f}")
    res["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    res["pass"] = ok
    print(f"{'PASS' if ok else 'MISS'}: every CPU ratio <= {a.limit} (medians of {a.rounds} "
          f"fresh processes per side; load {load_start} -> {res['load_avg_end']})")
    Path(a.json).write_text(json.dumps({**res, "runs": runs}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
