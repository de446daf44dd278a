"""A ``deletion-vectors.enabled`` primary-key table written with ``df.write.format("paimon")``
(one task per bucket: each compacts its level-0 file up and marks what it supersedes), read
back, and its vectors shown by ``load("db.t$table_indexes")`` as ``table.inspect`` shows them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.fsck import fsck
from paimon_core.schema_builder import Schema
from paimon_core.spec.snapshot import CommitKind

pytestmark = pytest.mark.spark


def test_spark_writes_a_deletion_vector_table(spark: Any, tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    FileSystemCatalog(wh).create_table("db.t", Schema.of(
        [("id", "INT NOT NULL"), ("v", "STRING")], primary_keys=["id"],
        options={"bucket": "2", "deletion-vectors.enabled": "true"}))
    for rows in ([(i, f"a{i}") for i in range(100)], [(i, f"b{i}") for i in range(0, 100, 3)]):
        spark.createDataFrame(rows, "id INT, v STRING").write.format("paimon") \
            .option("warehouse", wh).mode("append").save("db.t")
    t = FileSystemCatalog(wh).get_table("db.t")
    got = {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert got == {i: f"b{i}" if i % 3 == 0 else f"a{i}" for i in range(100)}
    assert [s.commit_kind for s in t.snapshot_manager.snapshots()] == [
        CommitKind.APPEND, CommitKind.COMPACT] * 2
    ours = t.inspect.table_indexes()
    marked = sum(r["_CARDINALITY"] for x in ours.column("dv_ranges").to_pylist() for r in x)
    assert marked == 34  # every id of the second write superseded a row of the first
    seen = spark.read.format("paimon").option("warehouse", wh).load("db.t$table_indexes")
    assert sorted(r["file_name"] for r in seen.collect()) == sorted(
        ours.column("file_name").to_pylist())
    assert fsck(t).ok
