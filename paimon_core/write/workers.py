"""The process-wide thread pools that write bucket files in parallel.

Writers are short-lived (one per commit is common), and starting threads costs more than
writing a small file: writers of the same width share one pool, created on first use and
re-created in a forked child (a parent's threads do not survive ``fork``). Tasks run on it
never wait for other tasks of the pool, so sharing cannot deadlock.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_pools: dict[int, ThreadPoolExecutor] = {}
_lock = threading.Lock()


def shared_executor(workers: int) -> ThreadPoolExecutor:
    """The shared pool of ``workers`` threads."""
    with _lock:
        pool = _pools.get(workers)
        if pool is None:
            pool = ThreadPoolExecutor(workers, thread_name_prefix=f"paimon-write-{workers}")
            _pools[workers] = pool
        return pool


def _forget_after_fork() -> None:
    global _lock
    _pools.clear()
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
