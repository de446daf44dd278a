"""CPU of a job's process tree (the driver, its JVM and the JVM's Python workers), read from
``/proc``, and the opt-in phase markers a job prints with it.

A Spark job's CPU is spread over processes that come and go (the launcher JVM, the driver
JVM, the Python worker daemon and its forked workers). Measuring the session's start-up in a
separate run and subtracting it from a whole job's CPU takes the difference of two large,
noisy numbers; instead a job marks its phases *inside one run*: with ``PAIMON_JOB_CPU_LOG=1``
in its environment it prints, on stderr, one line per phase::

    paimon-job-cpu {"phase": "session", "tree_cpu_s": 7.41, "unix_time": 1764130000.12}

``tree_cpu_s`` is the user + system CPU of every live process of the tree rooted at the
driver, plus what their reaped children used (``cutime`` / ``cstime``: the launcher JVM,
exited helpers), so a later phase's figure minus an earlier one is what the job spent in
between. ``bench/scale_spark.py`` reads the markers (:func:`read_marks`); ``bench/proctree.py``
re-exports the ``/proc`` readers.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from typing import Any

__all__ = ["CPU_LOG_ENV", "MARKER", "PAGE", "TICK", "mark", "proc_stat", "read_marks",
           "tree", "tree_cpu_s"]

#: clock ticks per second (``/proc/<pid>/stat`` times) and bytes per page (RSS)
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
#: the environment variable that turns the markers on ("1"), and the markers' prefix
CPU_LOG_ENV = "PAIMON_JOB_CPU_LOG"
MARKER = "paimon-job-cpu"


def proc_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or None
    when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    return raw[raw.rfind(")") + 2:].split()


def tree(root: int) -> list[int]:
    """``root`` and every descendant (by the parent ids of all processes)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st is not None:
                children.setdefault(int(st[1]), []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def tree_cpu_s(root: int | None = None) -> float:
    """CPU seconds of the process tree rooted at ``root`` (default: this process): user +
    system of every live process plus those of its reaped children. Without ``/proc``: this
    process and its reaped children only."""
    root = os.getpid() if root is None else root
    if not os.path.isdir(f"/proc/{root}"):
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    ticks = 0
    for pid in tree(root):
        st = proc_stat(pid)
        if st is not None:  # utime, stime, cutime, cstime
            ticks += int(st[11]) + int(st[12]) + int(st[13]) + int(st[14])
    return ticks / TICK


def mark(phase: str) -> None:
    """Print the phase marker (module docs) when ``PAIMON_JOB_CPU_LOG`` is set; else nothing
    (not even a look at ``/proc``)."""
    if os.environ.get(CPU_LOG_ENV, "") in ("", "0"):
        return
    line = json.dumps({"phase": phase, "tree_cpu_s": round(tree_cpu_s(), 3),
                       "unix_time": round(time.time(), 3)})
    print(f"{MARKER} {line}", file=sys.stderr, flush=True)


def read_marks(text: str) -> dict[str, dict[str, Any]]:
    """The markers in a job's stderr, by phase (the last one of each phase)."""
    out: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        if line.startswith(MARKER + " "):
            rec = json.loads(line[len(MARKER) + 1:])
            out[str(rec["phase"])] = rec
    return out
