"""The process tree of a benchmark run, read from ``/proc`` (the one home of the readers the
bench steps share: the Spark job, its JVM and Python workers are one tree)."""

from __future__ import annotations

import os
import resource

#: clock ticks per second (``/proc/<pid>/stat`` times) and bytes per page (RSS)
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


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


def status_mb(key: str) -> float:
    """A ``/proc/self/status`` field given in kB (``VmRSS``, ``VmHWM``...) in MB; NaN when
    absent."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def cpu_s() -> float:
    """User + system CPU seconds of this process so far (all threads)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
