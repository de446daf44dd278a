"""Issue 29 (scope 2): a Paimon table option given to ``spark.read`` / ``readStream`` /
``writeStream`` / SQL acts on that job through ``FileStoreTable.copy`` or is refused by name;
per-field options (``fields.<name>.*``) reach the table a write or a CREATE makes, and one
naming a field that is not a column is refused naming the field. Expected results are written
by hand."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from paimon_core import ImmutableOptionError, SchemaError, UnsupportedError
from paimon_core.catalog import FileSystemCatalog
from paimon_core.schema_builder import Schema
from paimon_core.table import FileStoreTable
from pipelines.spark_errors import raising_typed
from tests.pipelines.spark_warehouse import session_warehouse

pytestmark = pytest.mark.spark

#: an aggregation table: amount summed per id, note the last non-null value
AGG = Schema.of([("id", "BIGINT NOT NULL"), ("amount", "BIGINT"), ("note", "STRING")],
                primary_keys=["id"],
                options={"bucket": "1", "merge-engine": "aggregation",
                         "fields.amount.aggregate-function": "sum"})


@pytest.fixture(scope="module")
def wh(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield from session_warehouse(spark, tmp_path_factory, "sparkropts", drop=["agg_sql"])


def _table(wh: Path, ident: str) -> FileStoreTable:
    return FileSystemCatalog(str(wh)).get_table(ident)


def _write(t: FileStoreTable, rows: list[tuple[int, int, str]]) -> None:
    import pyarrow as pa

    data = pa.table({"id": pa.array([r[0] for r in rows], pa.int64()),
                     "amount": pa.array([r[1] for r in rows], pa.int64()),
                     "note": [r[2] for r in rows]})
    builder = t.new_batch_write_builder("test")
    with builder.new_write() as w:
        w.write_arrow(data)
        messages = w.prepare_commit()
    builder.new_commit().commit(messages)


def _read(spark: Any, ident: str, **opts: str) -> list[tuple[Any, ...]]:
    """The rows of a read; a Paimon error Spark reports is raised as that error."""
    with raising_typed():
        df = spark.read.format("paimon").options(**opts).load(ident)
        return sorted(tuple(r) for r in df.collect())


@pytest.fixture(scope="module")
def agg(wh: Path) -> str:
    t = FileSystemCatalog(str(wh)).create_table("db.agg", AGG)
    _write(t, [(1, 5, "a"), (2, 1, "b")])
    _write(t, [(1, 7, "c")])
    return "db.agg"


def test_a_merge_option_of_a_read_acts_on_that_read(spark: Any, agg: str) -> None:
    assert _read(spark, agg) == [(1, 12, "c"), (2, 1, "b")]
    # the per-field aggregate of this read only: max instead of sum
    assert _read(spark, agg, **{"fields.amount.aggregate-function": "max"}) == \
        [(1, 7, "c"), (2, 1, "b")]
    assert _read(spark, agg, **{"fields.note.aggregate-function": "first_non_null_value"}) \
        == [(1, 12, "a"), (2, 1, "b")]
    assert _read(spark, agg) == [(1, 12, "c"), (2, 1, "b")]  # nothing stored


def test_read_options_refused_by_name(spark: Any, agg: str) -> None:
    with pytest.raises(SchemaError, match="field 'nope' is not a column"):
        _read(spark, agg, **{"fields.nope.aggregate-function": "max"})
    with pytest.raises(SchemaError, match=re.escape("fields.amount.default-value")):
        _read(spark, agg, **{"fields.amount.default-value": "0"})
    with pytest.raises(ImmutableOptionError, match="'merge-engine'"):
        _read(spark, agg, **{"merge-engine": "deduplicate"})
    with pytest.raises(ImmutableOptionError, match="'bucket'"):
        _read(spark, agg, bucket="4")
    for key, value in (("scan.watermark", "5"), ("scan.version", "1"),
                       ("scan.file-creation-time-millis", "0")):
        with pytest.raises(UnsupportedError, match=re.escape(f"option {key} is not supported")):
            _read(spark, agg, **{key: value})
    with pytest.raises(UnsupportedError, match=re.escape("scan.mode=compacted-full")):
        _read(spark, agg, **{"scan.mode": "compacted-full"})
    with pytest.raises(SchemaError, match=re.escape("changelog-producer='bogus'")):
        _read(spark, agg, **{"changelog-producer": "bogus"})


def test_stream_read_refuses_a_start_it_cannot_make(spark: Any, agg: str,
                                                   tmp_path: Path) -> None:
    q = (spark.readStream.format("paimon").option("scan.version", "1").load(agg)
         .writeStream.format("memory").queryName("ropts_version")
         .option("checkpointLocation", str(tmp_path / "cp"))
         .trigger(availableNow=True).start())
    try:
        with pytest.raises(Exception,
                           match=re.escape("scan.version cannot start a streaming read")):
            q.awaitTermination(600)
    finally:
        q.stop()


def test_field_options_reach_a_table_df_write_creates(spark: Any, wh: Path) -> None:
    rows = spark.createDataFrame([(1, 5, "a"), (2, 1, "b")], "id long, amount long, note string")
    (rows.write.format("paimon").option("primary-key", "id").option("bucket", "1")
     .option("merge-engine", "aggregation")
     .option("fields.amount.aggregate-function", "sum").save("db.agg_new"))
    t = _table(wh, "db.agg_new")
    assert t.schema.options["fields.amount.aggregate-function"] == "sum"
    spark.createDataFrame([(1, 7, "c")], "id long, amount long, note string") \
        .write.format("paimon").save("db.agg_new")
    assert _read(spark, "db.agg_new") == [(1, 12, "c"), (2, 1, "b")]
    # on a write into the existing table: a field that is not a column, refused by name
    with pytest.raises(SchemaError, match="field 'nope' is not a column"):
        spark.createDataFrame([(3, 1, "d")], "id long, amount long, note string") \
            .write.format("paimon").option("fields.nope.ignore-retract", "true") \
            .save("db.agg_new")
    assert _read(spark, "db.agg_new") == [(1, 12, "c"), (2, 1, "b")]


def test_field_options_reach_a_table_sql_creates(spark: Any, wh: Path) -> None:
    spark.sql("CREATE TABLE agg_sql (id BIGINT NOT NULL, amount BIGINT, note STRING) "
              "USING paimon TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '1', "
              "'merge-engine' = 'aggregation', 'fields.amount.aggregate-function' = 'sum') "
              "OPTIONS (table 'db.agg_sql')")
    t = _table(wh, "db.agg_sql")
    assert t.schema.options["fields.amount.aggregate-function"] == "sum"
    spark.sql("INSERT INTO agg_sql VALUES (1, 5, 'a'), (2, 1, 'b')")
    spark.sql("INSERT INTO agg_sql VALUES (1, 7, 'c')")
    assert sorted(tuple(r) for r in spark.sql("SELECT * FROM agg_sql").collect()) == \
        [(1, 12, "c"), (2, 1, "b")]


def test_write_stream_options_act_per_micro_batch(spark: Any, wh: Path, tmp_path: Path
                                                  ) -> None:
    FileSystemCatalog(str(wh)).create_table(
        "db.st_opts", Schema.of([("id", "BIGINT"), ("v", "STRING")]))
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.json").write_text(json.dumps({"id": 1, "v": "a"}) + "\n")

    def run(name: str, **opts: str) -> Exception | None:
        q = (spark.readStream.schema("id long, v string").json(str(src))
             .writeStream.format("paimon").options(**opts)
             .option("checkpointLocation", str(tmp_path / name))
             .trigger(availableNow=True).start("db.st_opts"))
        try:
            q.awaitTermination(600)
        except Exception as e:  # StreamingQueryException
            return e
        finally:
            q.stop()
        return None

    with pytest.raises(ImmutableOptionError, match="option 'bucket' cannot be overlaid"):
        run("cp_bucket", bucket="3")  # refused when the query starts
    assert run("cp_gzip", **{"file.compression": "gzip"}) is None
    t = _table(wh, "db.st_opts")
    snap = t.latest_snapshot()
    assert snap is not None
    added = [r["file_path"] for r in t.inspect.delta_files(snap.id).to_pylist()
             if r["kind"] == "ADD"]
    paths = [next(Path(t.path).rglob(p)) for p in added]
    assert {pq.ParquetFile(p).metadata.row_group(0).column(0).compression for p in paths} \
        == {"GZIP"}
    assert t.schema.id == 0 and t.schema.options == {}  # nothing stored
    assert sorted(tuple(r.values()) for r in t.to_arrow().to_pylist()) == [(1, "a")]
