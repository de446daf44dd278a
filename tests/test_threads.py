"""paimon_core.threads: the one width of paimon_core's pools (environment, per-process limit,
cores capped by Arrow's pool), used by reads, writes and in-process compaction."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_core.threads as threads
from paimon_core import SchemaError
from paimon_core.integration import limit_threads, pool_threads
from tests.tables import pk_table


@pytest.fixture(autouse=True)
def _restore(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(threads.THREADS_ENV, raising=False)
    monkeypatch.setattr(threads, "_limit", None)
    arrow = pa.cpu_count()
    yield
    pa.set_cpu_count(arrow)


def test_default_is_the_cores_capped_by_arrow() -> None:
    cores = len(os.sched_getaffinity(0))
    assert threads.available_cores() == cores
    assert pool_threads() == min(cores, pa.cpu_count())
    pa.set_cpu_count(1)  # a process that narrows Arrow narrows ours
    assert pool_threads() == 1


def test_environment_wins_and_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(threads.THREADS_ENV, "3")
    limit_threads(1)
    assert pool_threads() == 3
    for bad in ("0", "-2", "two"):
        monkeypatch.setenv(threads.THREADS_ENV, bad)
        with pytest.raises(SchemaError, match=threads.THREADS_ENV):
            pool_threads()


def test_limit_narrows_ours_and_arrows() -> None:
    limit_threads(1)
    assert (pool_threads(), pa.cpu_count()) == (1, 1)
    with pytest.raises(SchemaError):
        limit_threads(0)


def test_reads_and_writes_take_the_width(tmp_path: Path) -> None:
    limit_threads(1)
    t = pk_table(tmp_path)
    assert t.new_read_builder().new_read().max_workers == 1
    assert t.new_write("u").max_workers == 1
