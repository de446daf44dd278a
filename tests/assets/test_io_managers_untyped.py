"""The IO managers with columns the frame leaves untyped (all-null, or no rows) and empty
frames, through ``dg.materialize`` on a real catalog: the column takes the table's type, a
new table refuses it by name, an empty frame overwrites its partition to empty."""

from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from assets.io_managers_spark import PaimonSparkIOManager
from assets.resources import PaimonCatalog, SparkResource
from paimon_core import FileSystemCatalog
from tests.assets.io_helpers import DAILY, io_manager, materialize, refused, sorted_rows


def _null_frames(kind: str) -> tuple[Any, Any, Any]:
    """(day 02 with an all-null ``v``, day 01 with no rows, a new table's all-null ``v``)
    as the frame type writes them: Arrow ``null`` columns, pandas object columns of None /
    an empty frame, polars ``Null`` columns."""
    if kind == "arrow":
        return (pa.table({"dt": ["2024-01-02"], "id": [3], "v": pa.nulls(1)}),
                pa.table({"dt": pa.nulls(0), "id": pa.nulls(0), "v": pa.nulls(0)}),
                pa.table({"id": [1], "v": pa.nulls(1)}))
    if kind == "pandas":
        return (pd.DataFrame({"dt": ["2024-01-02"], "id": [3], "v": [None]}),
                pd.DataFrame(columns=["dt", "id", "v"]),
                pd.DataFrame({"id": [1], "v": [None]}))
    return (pl.DataFrame({"dt": ["2024-01-02"], "id": [3], "v": [None]}),
            pl.DataFrame({"dt": [], "id": [], "v": []}),
            pl.DataFrame({"id": [1], "v": [None]}))


@pytest.mark.parametrize("kind", ["arrow", "pandas", "polars"])
def test_all_null_and_empty_columns_take_the_table_type(tmp_path: Path, kind: str) -> None:
    """An all-null column of a typed table is written as nulls of the table's type; an empty
    frame for a partition overwrites it to empty; only a column with no table type to take
    (a new table, a new column) is refused, named."""
    all_null, empty, new_table = _null_frames(kind)
    frames = iter([pa.table({"dt": ["2024-01-01"] * 2, "id": [1, 2], "v": [1.5, 2.5]}),
                   all_null, empty])

    @dg.asset(key=["n", "t"], partitions_def=DAILY,
              metadata={"partition_expr": "dt", "primary_key": ["dt", "id"]})
    def t() -> Any:
        return next(frames)

    io = io_manager(kind, tmp_path)
    assert materialize([t], io_manager("arrow", tmp_path), tmp_path,
                       partition_key="2024-01-01").success
    assert materialize([t], io, tmp_path, partition_key="2024-01-02").success
    table = FileSystemCatalog(str(tmp_path)).get_table("n.t")
    assert table.schema.field("v").type.sql() == "DOUBLE" and table.schema.id == 0
    assert sorted_rows(table.to_arrow(), "dt", "id") == [
        {"dt": "2024-01-01", "id": 1, "v": 1.5}, {"dt": "2024-01-01", "id": 2, "v": 2.5},
        {"dt": "2024-01-02", "id": 3, "v": None}]
    # the empty frame for day 01: day 01 is now empty, day 02 untouched
    assert materialize([t], io, tmp_path, partition_key="2024-01-01").success
    table = FileSystemCatalog(str(tmp_path)).get_table("n.t")
    assert sorted_rows(table.to_arrow(), "dt", "id") == [{"dt": "2024-01-02", "id": 3, "v": None}]
    assert table.latest_snapshot().commit_kind.value == "OVERWRITE"

    @dg.asset(key=["n", "fresh"])
    def fresh() -> Any:
        return new_table

    err = str(refused([fresh], io, tmp_path))
    assert "'v'" in err and "does not exist yet" in err, err
    assert not FileSystemCatalog(str(tmp_path)).table_exists("n.fresh")

    @dg.asset(key=["n", "t"], partitions_def=DAILY, metadata={"partition_expr": "dt"})
    def extra() -> Any:
        return pa.table({"dt": ["2024-01-03"], "id": [4], "v": [1.0], "w": pa.nulls(1)})

    err = str(refused([extra], io_manager("arrow", tmp_path), tmp_path, partition_key="2024-01-03"))
    assert "'w'" in err and "has no column" in err, err
    assert FileSystemCatalog(str(tmp_path)).get_table("n.t").schema.field_names == [
        "dt", "id", "v"]


def test_pandas_frame_without_columns_empties_the_partition(tmp_path: Path) -> None:
    """``pd.DataFrame()`` for a partition of a primary-key table (NOT NULL key columns it
    lacks) overwrites the partition by nothing."""
    frames = iter([pd.DataFrame({"dt": ["2024-01-01"], "id": [1]}), pd.DataFrame()])

    @dg.asset(key=["n", "kv"], partitions_def=DAILY,
              metadata={"partition_expr": "dt", "primary_key": ["dt", "id"]})
    def kv() -> pd.DataFrame:
        return next(frames)

    io = io_manager("pandas", tmp_path)
    for _ in range(2):
        assert materialize([kv], io, tmp_path, partition_key="2024-01-01").success
    assert FileSystemCatalog(str(tmp_path)).get_table("n.kv").to_arrow().num_rows == 0


@pytest.mark.spark
def test_spark_null_column_and_empty_partition(tmp_path: Path, spark: Any) -> None:
    """The Spark IO manager: a ``NullType`` column (``F.lit(None)``) takes the table's type;
    an empty DataFrame for a partition overwrites it to empty."""
    from pyspark.sql import functions as F

    frames = iter([
        lambda: spark.createDataFrame([(1, "a", "2024-01-01"), (2, "b", "2024-01-01")],
                                      "id BIGINT, v STRING, dt STRING"),
        lambda: spark.createDataFrame([(3, "2024-01-02")], "id BIGINT, dt STRING")
        .withColumn("v", F.lit(None)),
        lambda: spark.createDataFrame([], "id BIGINT, v STRING, dt STRING"),
    ])

    @dg.asset(key=["sn", "t"], partitions_def=DAILY,
              metadata={"partition_expr": "dt", "primary_key": ["dt", "id"]})
    def t() -> Any:
        return next(frames)()

    io = PaimonSparkIOManager(catalog=PaimonCatalog(warehouse=str(tmp_path)),
                              spark=SparkResource(master="local[2]"))
    for day in ("2024-01-01", "2024-01-02", "2024-01-01"):
        assert materialize([t], io, tmp_path, partition_key=day).success
    table = FileSystemCatalog(str(tmp_path)).get_table("sn.t")
    assert table.schema.field("v").type.sql() == "STRING"
    assert sorted_rows(table.to_arrow(), "id") == [{"id": 3, "v": None, "dt": "2024-01-02"}]
