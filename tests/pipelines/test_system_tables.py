"""``spark.read.format("paimon").load("db.t$<name>")`` serves ``table.inspect``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.table import FileStoreTable
from tests.tables import two_commit_pk_table

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def wh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("system-tables")
    two_commit_pk_table(wh)
    return wh


def _load(spark: Any, wh: Path, name: str, **options: str) -> Any:
    return spark.read.format("paimon").option("warehouse", str(wh)).options(**options) \
        .load(name)


def _table(wh: Path) -> FileStoreTable:
    return FileSystemCatalog(str(wh)).get_table("db.t")


def test_snapshots_and_files(spark: Any, wh: Path) -> None:
    snaps = _load(spark, wh, "db.t$snapshots")
    ours = _table(wh).inspect.snapshots()
    assert snaps.columns == ours.column_names
    rows = [r.asDict() for r in snaps.orderBy("snapshot_id").collect()]
    assert [r["snapshot_id"] for r in rows] == [1, 2]
    assert [r["commit_time"] for r in rows] == ours.column("commit_time").to_pylist()
    files = _load(spark, wh, "db.t$files", **{"scan.snapshot-id": "1"})
    assert files.count() == 2
    assert {r["partition"] for r in files.collect()} == {"[a]", "[b]"}


def test_buckets_and_audit_log(spark: Any, wh: Path) -> None:
    buckets = _load(spark, wh, "db.t$buckets").orderBy("partition").collect()
    assert [(r["partition"], r["sorted_runs"]) for r in buckets] == [("[a]", 2), ("[b]", 1)]
    audit = _load(spark, wh, "db.t$audit_log")
    assert audit.columns == ["rowkind", "dt", "id", "v"]
    assert sorted(tuple(r) for r in audit.collect()) == [("+I", "a", 1, "x2"),
                                                          ("+I", "b", 2, "y")]
    assert _load(spark, wh, "db.t$consumers").count() == 0
