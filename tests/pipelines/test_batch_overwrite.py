"""INSERT OVERWRITE from Parquet / CSV / JSON files and from another table: exactly the target
partitions are replaced (static and dynamic), everything else is untouched."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import SchemaError
from paimon_core.fsck import fsck
from paimon_core.schema_builder import Schema
from paimon_core.table import FileStoreTable
from pipelines.batch_overwrite import conform_to_table, load_files, overwrite
from pipelines.config import CatalogSettings
from pipelines.jobs.batch_overwrite import main
from tests.tables import make_catalog, sorted_rows, write_rows

pytestmark = pytest.mark.spark

SCHEMA = Schema.of([("dt", "DATE"), ("id", "BIGINT"), ("v", "STRING"), ("qty", "INT")],
                   partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "2"})
DAYS = [datetime.date(2024, 1, d) for d in (1, 2, 3)]


def _rows(t: FileStoreTable) -> list[tuple[Any, ...]]:
    return sorted_rows(t, "dt", "id", "v", "qty")


@pytest.fixture
def table(tmp_path: Path) -> FileStoreTable:
    t = make_catalog(tmp_path / "wh").create_table("db.t", SCHEMA)
    write_rows(t, pa.table({"dt": [d for d in DAYS for _ in range(3)],
                            "id": [i for _ in DAYS for i in range(3)],
                            "v": ["old"] * 9, "qty": pa.array([1] * 9, pa.int32())}),
               user="seed")
    return t


def test_static_overwrite_from_parquet(spark: Any, table: FileStoreTable, tmp_path: Path
                                       ) -> None:
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": [10, 11], "v": ["new", "new"]}), src)  # no dt, no qty
    settings = CatalogSettings(str(tmp_path / "wh"))
    df = load_files(spark, str(src), "parquet", table.schema, settings)
    res = overwrite(spark, settings, "db.t", df, partition={"dt": "2024-01-02"})
    assert res.snapshot_ids == (2,)
    snap = table.latest_snapshot()
    assert snap is not None and snap.commit_kind.value == "OVERWRITE"
    expected = sorted([(d, i, "old", 1) for d in (DAYS[0], DAYS[2]) for i in range(3)]
                      + [(DAYS[1], 10, "new", None), (DAYS[1], 11, "new", None)])
    assert _rows(table) == expected
    assert fsck(table).ok


def test_dynamic_overwrite_from_csv_and_json(spark: Any, table: FileStoreTable, tmp_path: Path
                                             ) -> None:
    csv = tmp_path / "csv"
    csv.mkdir()
    (csv / "a.csv").write_text("dt,id,v,qty\n2024-01-01,5,csv,7\n2024-01-03,6,csv,8\n")
    settings = CatalogSettings(str(tmp_path / "wh"))
    overwrite(spark, settings, "db.t", load_files(spark, str(csv), "csv", table.schema,
                                                  settings))
    expected = sorted([(DAYS[1], i, "old", 1) for i in range(3)]
                      + [(DAYS[0], 5, "csv", 7), (DAYS[2], 6, "csv", 8)])
    assert _rows(table) == expected  # only the two partitions in the input were replaced
    js = tmp_path / "j.json"
    js.write_text(json.dumps({"dt": "2024-01-02", "id": 1, "v": "json", "qty": 2}) + "\n")
    overwrite(spark, settings, "db.t", load_files(spark, str(js), "json", table.schema,
                                                  settings))
    expected = sorted([(DAYS[1], 1, "json", 2), (DAYS[0], 5, "csv", 7), (DAYS[2], 6, "csv", 8)])
    assert _rows(table) == expected
    # the CLI, from another table of the warehouse, whole-table overwrite
    cat = FileSystemCatalog(str(tmp_path / "wh"))
    src = cat.create_table("db.src", Schema.of([("dt", "DATE"), ("id", "BIGINT"),
                                                ("v", "STRING"), ("qty", "INT")]))
    w = src.new_write("x")
    w.write_arrow(pa.table({"dt": [DAYS[2]], "id": [99], "v": ["src"],
                            "qty": pa.array([3], pa.int32())}))
    src.new_commit("x").commit(w.prepare_commit())
    assert main(["--warehouse", str(tmp_path / "wh"), "--table", "db.t",
                 "--source-table", "db.src", "--whole-table"]) == 0
    assert _rows(table) == [(DAYS[2], 99, "src", 3)]


def test_conform_rejects_unknown_and_missing_columns(spark: Any, table: FileStoreTable) -> None:
    df = spark.createDataFrame([(1, "x", 5)], "id long, v string, extra int")
    with pytest.raises(SchemaError, match="extra"):
        conform_to_table(df, table.schema)
    with pytest.raises(SchemaError, match="NOT NULL column 'dt'"):
        conform_to_table(spark.createDataFrame([(1,)], "id long"), table.schema)
    ok = conform_to_table(spark.createDataFrame([(1,)], "id int"), table.schema,
                          {"dt": "2024-01-05"})
    assert ok.columns == ["dt", "id", "v", "qty"]
    assert str(ok.schema["id"].dataType) == "LongType()"
