"""The DataFrame write into cross-partition tables (``bucket=-1``, primary key ``id`` without
the partition key ``pt``): rows routed by key slice (one task holds every version of its keys),
a key written to another partition leaves its old one; ``df.write.format("paimon")`` routes
the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from paimon_core.fsck import fsck
from paimon_core.table import FileStoreTable
from pipelines.config import CatalogSettings
from pipelines.writer import WriteSpec, write_dataframe
from tests.tables import make_table

pytestmark = pytest.mark.spark

DDL = "pt string, id long, v string"


def _state(t: FileStoreTable) -> dict[int, tuple[str, str]]:
    """id -> (pt, v) of every live row; a key stored twice fails."""
    out: dict[int, tuple[str, str]] = {}
    for r in t.to_arrow().to_pylist():
        assert r["id"] not in out, f"key {r['id']} stored twice"
        out[r["id"]] = (r["pt"], r["v"])
    return out


def test_moved_keys_leave_their_partition(spark: Any, tmp_path: Path) -> None:
    t = make_table(tmp_path, [("pt", "STRING"), ("id", "BIGINT NOT NULL"), ("v", "STRING")],
                   partition_keys=["pt"], primary_keys=["id"],
                   options={"bucket": "-1", "dynamic-bucket.target-row-num": "10"})
    settings = CatalogSettings(str(tmp_path))
    first = [(("a", "b")[i % 2], i, f"v{i}") for i in range(100)]
    write_dataframe(spark.createDataFrame(first, DDL).repartition(3), settings, "db.t",
                    spec=WriteSpec("w", 1))
    assert _state(t) == {i: (p, v) for p, i, v in first}
    second = [("c", i, f"w{i}") for i in range(0, 100, 4)] + [("a", 200, "n")]
    write_dataframe(spark.createDataFrame(second, DDL).repartition(2), settings, "db.t",
                    spec=WriteSpec("w", 2))
    expected = {**{i: (p, v) for p, i, v in first}, **{i: (p, v) for p, i, v in second}}
    assert _state(t) == expected
    # keys 0, 4, ... come back to a through the data source
    third = [("a", i, f"x{i}") for i in range(0, 100, 8)]
    spark.createDataFrame(third, DDL).write.format("paimon").options(
        warehouse=str(tmp_path)).mode("append").save("db.t")
    assert _state(t) == {**expected, **{i: (p, v) for p, i, v in third}}
    assert fsck(t, deep=True).ok
