"""The process tree of a benchmark run, read from ``/proc`` (the readers the bench steps share:
the Spark job, its JVM and Python workers are one tree; their home is
:mod:`pipelines.cputrace`, which the jobs' own CPU markers use too)."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

_REPO = str(Path(__file__).resolve().parent.parent)
if _REPO not in sys.path:  # this checkout's pipelines
    sys.path.insert(0, _REPO)

# the /proc readers live with the job's own CPU markers (pipelines.cputrace), re-exported here
from pipelines.cputrace import PAGE, TICK, proc_stat, tree  # noqa: E402

__all__ = ["PAGE", "TICK", "cpu_s", "proc_stat", "status_mb", "tree"]


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
