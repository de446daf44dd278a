"""The Spark compaction job against ``table.compact`` in one process (``bench/scale.py --spark``;
issue 16): 4M rows in 8 buckets, each run on a fresh copy of the cached scale table, measured
over the whole process tree; the Spark session start-up measured apart. See bench/README.md."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from proctree import PAGE, TICK, proc_stat, tree
from scale import (
    CHILD_TIMEOUT_S,
    REPO,
    TABLE,
    Digest,
    check_digest,
    prepare,
    table_dir,
)

SPARK_ROWS, SPARK_BUCKETS = 4_000_000, 8
SPARK_RATIO_LIMIT = 2.0


def measure_tree(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``cmd`` and measure its process tree: CPU = own user + sys of every process of the
    tree (the last sample of each, every 0.1 s; a process loses at most its last 0.1 s),
    peak RSS = the largest sum of the tree's RSS over the samples; wall time; stdout."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO, env=env)
    last: dict[tuple[int, int], int] = {}
    peak = [0]
    stop = threading.Event()

    def sample() -> None:
        while True:
            rss = 0
            for pid in tree(proc.pid):
                st = proc_stat(pid)
                if st is None:
                    continue
                last[(pid, int(st[19]))] = int(st[11]) + int(st[12])  # utime + stime
                rss += int(st[21]) * PAGE
            peak[0] = max(peak[0], rss)
            if stop.wait(0.1):
                return

    t0 = time.perf_counter()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate(timeout=CHILD_TIMEOUT_S)
    wall = time.perf_counter() - t0
    stop.set()
    sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} failed (exit {proc.returncode}):\n{err[-3000:]}")
    return {"wall_s": wall, "cpu_s": sum(last.values()) / TICK,
            "peak_rss_mb": peak[0] / 2**20, "stdout": out[-2000:],
            "load1": round(os.getloadavg()[0], 2)}


# ----------------------------------------------------------------------- Spark vs in-process
SESSION_ONLY = (  # the session exactly as pipelines.compact starts it (its local JVM flags)
    "import sys, time; sys.path.insert(0, '.');"
    "from pipelines.session import get_session, LOCAL_DEFAULTS;"
    "from pipelines.config import SparkSettings; from pipelines.compact import _session_conf;"
    "st = SparkSettings.from_env();"
    "s = get_session(st, conf=_session_conf(st, LOCAL_DEFAULTS)); s.range(1).count(); s.stop()"
)


def spark_vs_inprocess(cache: Path, gen_path: Path, rounds: int, fresh: bool
                       ) -> tuple[dict[str, Any], list[str]]:
    prep = prepare(cache, gen_path, SPARK_ROWS, SPARK_BUCKETS, fresh)
    tdir = table_dir(cache, SPARK_ROWS, SPARK_BUCKETS)
    py = sys.executable
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    runs: dict[str, list[dict[str, Any]]] = {"spark_job": [], "in_process": [],
                                             "session_start": []}
    failures: list[str] = []
    for rnd in range(rounds):
        order = ["spark_job", "in_process", "session_start"]
        order = order[rnd % 3:] + order[:rnd % 3]
        for what in order:
            with tempfile.TemporaryDirectory(prefix="bench-scale-spark-") as tmp:
                wh = Path(tmp) / "wh"
                if what != "session_start":
                    shutil.copytree(tdir / "wh", wh)
                if what == "spark_job":
                    cmd = [py, "-m", "pipelines.compact", "--warehouse", str(wh),
                           "--table", TABLE, "--full"]
                elif what == "in_process":
                    cmd = [py, "-c", "import sys; from paimon_core import FileSystemCatalog;"
                           f"FileSystemCatalog({str(wh)!r}).get_table({TABLE!r})"
                           ".compact(strategy='full', commit_user='bench')"]
                else:
                    cmd = [py, "-c", SESSION_ONLY]
                try:
                    r = measure_tree(cmd, env)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    failures.append(f"spark ratio round {rnd + 1} {what}: {e}"[:500])
                    continue
                if what != "session_start":
                    d = Digest()
                    from paimon_core import FileSystemCatalog

                    t = FileSystemCatalog(str(wh)).get_table(TABLE)
                    rb = t.new_read_builder()
                    plan = rb.new_scan().plan()
                    for b in rb.new_read().to_batches(plan.splits):
                        d.add_batch(b)
                    ok, msg = check_digest(d, prep["expected_rows"],
                                           int(prep["expected_checksum"]))
                    r["check"] = [ok, msg]
                    r["live_files_after"] = sum(len(s.files) for s in plan.splits)
                    if not ok:
                        failures.append(f"spark ratio {what}: check FAILED: {msg}")
                r.pop("stdout", None)
                runs[what].append(r)
                print(f"  round {rnd + 1}/{rounds}  {what:<14} wall {r['wall_s']:7.2f} s  "
                      f"cpu {r['cpu_s']:7.2f} s  peak tree RSS {r['peak_rss_mb']:6.0f} MB  "
                      f"load {r['load1']}" + (f"  check {'ok' if r['check'][0] else 'FAILED'}"
                                              if "check" in r else ""), flush=True)
    med = {k: {m: statistics.median(r[m] for r in v) for m in ("wall_s", "cpu_s",
                                                               "peak_rss_mb")}
           for k, v in runs.items() if v}
    res: dict[str, Any] = {"rows": SPARK_ROWS, "buckets": SPARK_BUCKETS, "runs": runs,
                           "medians": med}
    if {"spark_job", "in_process", "session_start"} <= med.keys():
        j, i, s = med["spark_job"], med["in_process"], med["session_start"]
        res["cpu_ratio_total"] = j["cpu_s"] / i["cpu_s"]
        res["cpu_ratio_ex_session"] = (j["cpu_s"] - s["cpu_s"]) / i["cpu_s"]
        res["wall_ratio_total"] = j["wall_s"] / i["wall_s"]
        res["wall_ratio_ex_session"] = (j["wall_s"] - s["wall_s"]) / i["wall_s"]
    return res, failures


def spark_targets(sp: dict[str, Any]) -> list[dict[str, Any]]:
    if "cpu_ratio_ex_session" not in sp:
        return []
    v = sp["cpu_ratio_ex_session"]
    return [{"target": "pipelines.compact --full CPU (minus Spark session start-up) <= 2x "
                       "table.compact(full) CPU, 4M rows x 8 buckets", "value": v,
             "limit": SPARK_RATIO_LIMIT, "pass": v <= SPARK_RATIO_LIMIT}]


def spark_report(sp: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    if sp.get("medians"):
        lines.append("")
        for k, m in sp["medians"].items():
            lines.append(f"compaction 4M x 8  {k:<14} wall {m['wall_s']:7.2f} s  cpu "
                         f"{m['cpu_s']:7.2f} s  peak tree RSS {m['peak_rss_mb']:6.0f} MB")
        if "cpu_ratio_total" in sp:
            lines.append(f"  Spark job / in-process: CPU {sp['cpu_ratio_total']:.2f}x total, "
                         f"{sp['cpu_ratio_ex_session']:.2f}x without the session start-up; "
                         f"wall {sp['wall_ratio_total']:.2f}x / "
                         f"{sp['wall_ratio_ex_session']:.2f}x")
    return lines
