"""The Spark compaction job against ``table.compact`` in one process (``bench/scale.py --spark``;
issue 16): 4M rows in 8 buckets, each run on a fresh copy of the cached scale table, measured
over the whole process tree. The Spark session's start-up is taken from the same run: the job
marks the CPU of its process tree at session-ready and after the work
(``PAIMON_JOB_CPU_LOG=1``, :mod:`pipelines.cputrace`), so "job minus start-up" is one run's
delta, not the difference of two separate runs. See bench/README.md."""

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

from pipelines.cputrace import CPU_LOG_ENV  # (proctree put this checkout on the path)

SPARK_ROWS, SPARK_BUCKETS = 4_000_000, 8
SPARK_RATIO_LIMIT = 2.0
MEDIAN_KEYS = ("wall_s", "cpu_s", "peak_rss_mb", "startup_cpu_s", "work_cpu_s",
               "ex_startup_cpu_s", "startup_wall_s", "work_wall_s", "ex_startup_wall_s")


def measure_tree(cmd: list[str], env: dict[str, str] | None = None, cwd: Path = REPO
                 ) -> dict[str, Any]:
    """Run ``cmd`` (in ``cwd``) and measure its process tree: CPU = own user + sys of every
    process of the tree (the last sample of each, every 0.1 s; a process loses at most its
    last 0.1 s), peak RSS = the largest sum of the tree's RSS over the samples; wall time;
    stdout."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=cwd, env=env)
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

    t0, unix0 = time.perf_counter(), time.time()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate(timeout=CHILD_TIMEOUT_S)
    wall = time.perf_counter() - t0
    stop.set()
    sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} failed (exit {proc.returncode}):\n{err[-3000:]}")
    return {"wall_s": wall, "cpu_s": sum(last.values()) / TICK,
            "peak_rss_mb": peak[0] / 2**20, "stdout": out[-2000:], "stderr": err,
            "unix_start": unix0, "load1": round(os.getloadavg()[0], 2)}


# ----------------------------------------------------------------------- Spark vs in-process
def _job_phases(r: dict[str, Any]) -> None:
    """Split a job run's figures at its markers (:func:`pipelines.cputrace.read_marks`):
    ``startup`` = interpreter, imports and session up to session-ready; ``work`` = planning,
    the tasks and the commit; ``ex_startup`` = the whole run minus ``startup`` (the work, the
    session's stop and the JVM's exit)."""
    from pipelines.cputrace import read_marks

    marks = read_marks(r.pop("stderr"))
    if not {"session", "work"} <= marks.keys():
        raise RuntimeError("the job printed no CPU markers (PAIMON_JOB_CPU_LOG)")
    s, w = marks["session"], marks["work"]
    r["startup_cpu_s"] = s["tree_cpu_s"]
    r["work_cpu_s"] = w["tree_cpu_s"] - s["tree_cpu_s"]
    r["ex_startup_cpu_s"] = r["cpu_s"] - s["tree_cpu_s"]
    r["startup_wall_s"] = s["unix_time"] - r["unix_start"]
    r["work_wall_s"] = w["unix_time"] - s["unix_time"]
    r["ex_startup_wall_s"] = r["wall_s"] - r["startup_wall_s"]


def _archive_state() -> str:
    """Whether the job will find its class-data archive (:mod:`pipelines.jvm_archive`)."""
    from pipelines.jobs.compact import LOCAL_JVM_FLAGS
    from pipelines.jvm_archive import class_archive

    arch = class_archive(LOCAL_JVM_FLAGS)
    return "off" if arch is None else (
        "present" if arch.part is None else "absent: written by spark_job_first")


def _check(wh: Path, prep: dict[str, Any], r: dict[str, Any]) -> str | None:
    """Check the compacted table like the scale steps (rows, versions); the failure, if any."""
    from paimon_core import FileSystemCatalog

    d = Digest()
    t = FileSystemCatalog(str(wh)).get_table(TABLE)
    rb = t.new_read_builder()
    plan = rb.new_scan().plan()
    for b in rb.new_read().to_batches(plan.splits):
        d.add_batch(b)
    ok, msg = check_digest(d, prep["expected_rows"], int(prep["expected_checksum"]))
    r["check"] = [ok, msg]
    r["live_files_after"] = sum(len(s.files) for s in plan.splits)
    return None if ok else msg


def spark_vs_inprocess(cache: Path, gen_path: Path, rounds: int, fresh: bool
                       ) -> tuple[dict[str, Any], list[str]]:
    prep = prepare(cache, gen_path, SPARK_ROWS, SPARK_BUCKETS, fresh)
    tdir = table_dir(cache, SPARK_ROWS, SPARK_BUCKETS)
    py = sys.executable
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           CPU_LOG_ENV: "1"}
    runs: dict[str, list[dict[str, Any]]] = {}
    failures: list[str] = []
    archive = _archive_state()
    # the first run of the job on this machine writes the class-data archive
    # (pipelines.jvm_archive), later runs map it: a first run is reported apart
    schedule = [("spark_job_first", 0)] if archive == "absent" else []
    for rnd in range(rounds):
        order = ["spark_job", "in_process"]
        schedule += [(w, rnd) for w in order[rnd % 2:] + order[:rnd % 2]]
    for what, rnd in schedule:
        with tempfile.TemporaryDirectory(prefix="bench-scale-spark-") as tmp:
            wh = Path(tmp) / "wh"
            shutil.copytree(tdir / "wh", wh)
            if what.startswith("spark_job"):
                cmd = [py, "-m", "pipelines.jobs.compact", "--warehouse", str(wh), "--table", TABLE,
                       "--full"]
            else:
                cmd = [py, "-c", "from paimon_core import FileSystemCatalog;"
                       f"FileSystemCatalog({str(wh)!r}).get_table({TABLE!r})"
                       ".compact(strategy='full', commit_user='bench')"]
            try:
                r = measure_tree(cmd, env)
                if what.startswith("spark_job"):
                    _job_phases(r)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                failures.append(f"spark ratio round {rnd + 1} {what}: {e}"[:500])
                continue
            r.pop("stderr", None)
            r.pop("stdout", None)
            bad = _check(wh, prep, r)
            if bad is not None:
                failures.append(f"spark ratio {what}: check FAILED: {bad}")
        runs.setdefault(what, []).append(r)
        phases = (f"  (start-up {r['startup_cpu_s']:6.2f} s, work {r['work_cpu_s']:6.2f} s)"
                  if "startup_cpu_s" in r else "")
        print(f"  round {rnd + 1}/{rounds}  {what:<16} wall {r['wall_s']:7.2f} s  cpu "
              f"{r['cpu_s']:7.2f} s{phases}  peak tree RSS {r['peak_rss_mb']:6.0f} MB  "
              f"load {r['load1']}  check {'ok' if bad is None else 'FAILED'}", flush=True)
    med = {k: {m: statistics.median(r[m] for r in v) for m in MEDIAN_KEYS if m in v[0]}
           for k, v in runs.items() if v}
    res: dict[str, Any] = {"rows": SPARK_ROWS, "buckets": SPARK_BUCKETS, "runs": runs,
                           "medians": med, "class_archive": archive}
    if {"spark_job", "in_process"} <= med.keys():
        j, i = med["spark_job"], med["in_process"]
        res["cpu_ratio_total"] = j["cpu_s"] / i["cpu_s"]
        res["cpu_ratio_ex_session"] = j["ex_startup_cpu_s"] / i["cpu_s"]
        res["cpu_ratio_work"] = j["work_cpu_s"] / i["cpu_s"]
        res["wall_ratio_total"] = j["wall_s"] / i["wall_s"]
        res["wall_ratio_ex_session"] = j["ex_startup_wall_s"] / i["wall_s"]
    return res, failures


def spark_targets(sp: dict[str, Any]) -> list[dict[str, Any]]:
    if "cpu_ratio_ex_session" not in sp:
        return []
    v = sp["cpu_ratio_ex_session"]
    return [{"target": "pipelines.jobs.compact --full CPU minus its session start-up (one run's "
                       "markers) <= 2x table.compact(full) CPU, 4M rows x 8 buckets", "value": v,
             "limit": SPARK_RATIO_LIMIT, "pass": v <= SPARK_RATIO_LIMIT}]


def spark_report(sp: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    if sp.get("medians"):
        lines.append("")
        for k, m in sp["medians"].items():
            lines.append(f"compaction 4M x 8  {k:<16} wall {m['wall_s']:7.2f} s  cpu "
                         f"{m['cpu_s']:7.2f} s  peak tree RSS {m['peak_rss_mb']:6.0f} MB")
            if "startup_cpu_s" in m:
                lines.append(f"{'':<36}session start-up: wall {m['startup_wall_s']:6.2f} s  "
                             f"cpu {m['startup_cpu_s']:6.2f} s; work: wall "
                             f"{m['work_wall_s']:6.2f} s  cpu {m['work_cpu_s']:6.2f} s")
        if "cpu_ratio_total" in sp:
            lines.append(f"  Spark job / in-process: CPU {sp['cpu_ratio_total']:.2f}x total, "
                         f"{sp['cpu_ratio_ex_session']:.2f}x without the session start-up "
                         f"({sp['cpu_ratio_work']:.2f}x the work alone); wall "
                         f"{sp['wall_ratio_total']:.2f}x / {sp['wall_ratio_ex_session']:.2f}x "
                         f"(class-data archive: {sp['class_archive']})")
    return lines
