"""How wide paimon_core's own thread pools are: the one home of that setting.

paimon_core fans work out on Python threads in three places: :class:`TableRead` (splits
merged in parallel), :class:`TableWrite` (bucket files written in parallel) and the in-process
compaction (:class:`LocalExecutor`, buckets in parallel). Every one of those threads calls
into Arrow, which decodes Parquet and runs compute kernels on its own pool of
``pa.cpu_count()`` threads. A Python pool wider than the cores stacks on Arrow's: on 2 cores
with a busy neighbour, 4 Python threads over Arrow's pool spent their time switching (a read's
CPU rose 1.5-4x under load while a plain Arrow scan's stayed within 20 %; issue 16).

The width (:func:`pool_threads`):

* ``PAIMON_THREADS`` (environment), a positive integer, when set: e.g. ``1`` for a process
  that already runs one task per core;
* else :func:`limit_threads`'s value in this process (a Spark task calls it with its task's
  CPUs, ``spark.task.cpus``, so that its pools do not fan out over the cores other tasks use);
* else the cores this process may run on (``os.sched_getaffinity``, else ``os.cpu_count()``),
  capped by Arrow's pool size (``pa.cpu_count()``: ``OMP_NUM_THREADS``,
  ``pa.set_cpu_count``): a process that narrows Arrow narrows ours too.

An explicit ``max_workers`` given to one of those classes still wins for that object.
"""

from __future__ import annotations

import os

import pyarrow as pa

from paimon_core.errors import SchemaError

__all__ = ["THREADS_ENV", "available_cores", "limit_threads", "pool_threads"]

#: environment variable fixing the width of paimon_core's pools
THREADS_ENV = "PAIMON_THREADS"

_limit: int | None = None


def available_cores() -> int:
    """The CPUs this process may run on (its affinity mask; cgroup quotas are not seen)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def _positive(value: str | int, what: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise SchemaError(f"{what} must be a positive integer, got {value!r}")
    return n


def pool_threads() -> int:
    """Threads for one of paimon_core's pools (module docs: environment, limit, cores).

    Raises:
        SchemaError: ``PAIMON_THREADS`` is set to something other than a positive integer.
    """
    env = os.environ.get(THREADS_ENV, "").strip()
    if env:
        return _positive(env, THREADS_ENV)
    if _limit is not None:
        return _limit
    arrow: int = pa.cpu_count()
    return max(1, min(available_cores(), arrow))


def limit_threads(threads: int) -> None:
    """Use at most ``threads`` threads in this process: paimon_core's pools and Arrow's CPU
    pool (``pa.set_cpu_count``). For a worker that runs one task on ``threads`` cores, e.g. a
    Spark task (``TaskContext.cpus()``).

    Raises:
        SchemaError: ``threads`` is not a positive integer.
    """
    global _limit
    n = _positive(threads, "threads")
    _limit = n
    if pa.cpu_count() != n:
        pa.set_cpu_count(n)
