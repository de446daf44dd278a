"""Helpers of the compaction tests: fake file metadata, tables, models."""

from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa

from paimon_core.compact.levels import LevelSortedRun
from paimon_core.spec.binary_row import serialize_binary_row
from paimon_core.spec.manifest import DataFileMeta, FileSource
from paimon_core.spec.stats import EMPTY_STATS, unknown_stats
from paimon_core.table import FileStoreTable
from paimon_core.types import parse_sql_type
from tests.tables import make_table

INT = parse_sql_type("INT NOT NULL")
_n = itertools.count()


def fmeta(size: int = 100, *, level: int = 0, keys: tuple[int, int] = (0, 10), seq: tuple[int, int]
          = (0, 0), deletes: int | None = 0, rows: int = 10, name: str | None = None
          ) -> DataFileMeta:
    """A fake primary-key data file (INT key)."""
    n = next(_n)
    return DataFileMeta(
        name or f"data-fake-{n}.parquet", size, rows, serialize_binary_row([keys[0]], [INT]),
        serialize_binary_row([keys[1]], [INT]), EMPTY_STATS, unknown_stats(2), seq[0], seq[1],
        0, level, (), n, deletes, None, FileSource.APPEND, None, None, None, None)


def decode_int_key(b: bytes) -> tuple[Any, ...]:
    from paimon_core.spec.binary_row import deserialize_binary_row
    return tuple(deserialize_binary_row(b, [INT]))


def runs(*spec: tuple[int, int]) -> list[LevelSortedRun]:
    """Runs from ``(level, size)`` pairs, one single-file run each."""
    return [LevelSortedRun(level, (fmeta(size, level=level),)) for level, size in spec]


def pk_table(root: str, name: str = "db.t", *, partitioned: bool = False,
             **options: str) -> FileStoreTable:
    cols = [("id", "INT NOT NULL"), ("v", "STRING"), ("n", "BIGINT")]
    pks = ["id"]
    parts: list[str] = []
    if partitioned:
        cols = [("pt", "STRING NOT NULL"), *cols]
        pks = ["pt", "id"]
        parts = ["pt"]
    opts = {"bucket": "2", **options}
    return make_table(root, cols, name=name, partition_keys=parts, primary_keys=pks,
                      options=opts)


def rows(ids: list[int], v: list[str | None], *, pt: list[str] | None = None,
         kinds: list[str] | None = None) -> pa.Table:
    d: dict[str, Any] = {}
    if pt is not None:
        d["pt"] = pt
    d["id"] = pa.array(ids, pa.int32())
    d["v"] = pa.array(v, pa.string())
    d["n"] = pa.array([i * 10 for i in ids], pa.int64())
    if kinds is not None:
        d["_k"] = kinds
    return pa.table(d)


def read_sorted(table: FileStoreTable, snapshot_id: int | None = None) -> list[dict[str, Any]]:
    got = table.to_arrow(snapshot_id=snapshot_id).to_pylist()
    return sorted(got, key=lambda r: tuple(r[c] for c in ("pt", "id") if c in r))
