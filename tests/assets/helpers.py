"""Helpers of the assets tests: write ``cdc.orders`` changes directly with paimon_core (what
the CDC ingestion job commits), and read tables back as plain dicts."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from paimon_core.table import FileStoreTable
from tests.tables import write_rows

CDC_USER = "test-cdc"


_LSN = [0]


def order_rows(
    ids: Sequence[int],
    status: Sequence[str] | str,
    kinds: Sequence[str] | str = "+I",
    *,
    amount: str = "10.00",
    lsn: Sequence[int] | None = None,
) -> pa.Table:
    """``cdc.orders`` rows with their kinds in ``_k``; source positions ``lsn`` (default:
    increasing over the test session, i.e. in commit order)."""
    n = len(ids)
    ks = [kinds] * n if isinstance(kinds, str) else list(kinds)
    statuses = [status] * n if isinstance(status, str) else list(status)
    positions = [_next_lsn() for _ in range(n)] if lsn is None else list(lsn)
    return pa.table({
        "_k": pa.array(ks, pa.string()),
        "order_id": pa.array(list(ids), pa.int64()),
        "customer_id": pa.array([i % 7 for i in ids], pa.int64()),
        "status": pa.array(statuses, pa.string()),
        "amount": pa.array([decimal.Decimal(amount) * i for i in ids], pa.decimal128(12, 2)),
        "currency": pa.array(["EUR"] * n, pa.string()),
        "created_at": pa.array([datetime.datetime(2024, 3, 1)] * n, pa.timestamp("ms")),
        "updated_at": pa.array([datetime.datetime(2024, 3, 2)] * n, pa.timestamp("ms")),
        "src_lsn": pa.array(positions, pa.int64()),
    })


def _next_lsn() -> int:
    _LSN[0] += 1
    return _LSN[0]


def commit_orders(table: FileStoreTable, rows: pa.Table, identifier: int) -> int:
    """One APPEND snapshot of ``rows`` (kinds in ``_k``); returns its id."""
    ids = write_rows(table, rows, identifier, user=CDC_USER, row_kind_column="_k")
    assert len(ids) == 1
    return ids[0]


def by_key(table: FileStoreTable, key: str) -> dict[object, dict[str, object]]:
    return {r[key]: r for r in table.to_arrow().to_pylist()}


def assert_spark_metadata(md: dict[str, object], spark: Any) -> None:
    """A Spark run's metadata names the application of the process's session (asked of the
    session's own SparkContext) and its driver UI when it has one (local mode: none)."""
    sc = spark.sparkContext
    assert md["spark/application_id"] == sc.applicationId
    assert md["spark/master"] == sc.master
    assert md.get("spark/ui_url") == (sc.uiWebUrl or None)
    cap = spark.conf.get("spark.cores.max", None)
    assert md.get("spark/cores_max") == (int(cap) if cap else None)
