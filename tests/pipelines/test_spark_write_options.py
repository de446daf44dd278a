"""Issue 29 (scope 2): the Paimon table options of a ``df.write.format("paimon")`` into an
EXISTING table act on that write (``FileStoreTable.copy``) and are never stored; an option
fixed for the table's life that differs is refused by name, a bad value by name and value, a
misspelt key as before. Expected results are written by hand."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from paimon_core import ImmutableOptionError, SchemaError
from paimon_core.catalog import FileSystemCatalog
from paimon_core.schema_builder import Schema
from paimon_core.table import FileStoreTable
from pipelines.spark_source.options import UnknownOptionError
from tests.pipelines.spark_warehouse import session_warehouse

pytestmark = pytest.mark.spark

LOGS = Schema.of([("id", "BIGINT"), ("payload", "STRING")])
KV = Schema.of([("id", "BIGINT NOT NULL"), ("payload", "STRING")], primary_keys=["id"],
               options={"bucket": "2"})


@pytest.fixture(scope="module")
def wh(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield from session_warehouse(spark, tmp_path_factory, "sparkwopts")


def _rows(spark: Any, partitions: int) -> Any:
    """4,000 rows of about 1 KB each (~4 MB of text: one file at the default target size)."""
    return spark.range(4000).selectExpr("id", "repeat(cast(id as string), 250) as payload") \
        .repartition(partitions)


def _fresh(wh: Path, ident: str) -> FileStoreTable:
    return FileSystemCatalog(str(wh)).get_table(ident)


def _added(t: FileStoreTable) -> list[str]:
    """The full paths of the data files the latest snapshot added."""
    snap = t.latest_snapshot()
    assert snap is not None
    delta = t.inspect.delta_files(snap.id).to_pylist()
    return [str(next(Path(t.path).rglob(r["file_path"]))) for r in delta if r["kind"] == "ADD"]


def _codecs(paths: list[str]) -> set[str]:
    return {pq.ParquetFile(p).metadata.row_group(0).column(0).compression for p in paths}


def test_table_options_act_on_the_write_and_are_not_stored(spark: Any, wh: Path) -> None:
    FileSystemCatalog(str(wh)).create_table("db.logs", LOGS)
    _rows(spark, 1).write.format("paimon").option("target-file-size", "512 kb") \
        .option("file.compression", "gzip").mode("append").save("db.logs")
    t = _fresh(wh, "db.logs")
    files = _added(t)
    assert len(files) >= 4, files  # ~4 MB cut at 512 KB (one Spark task)
    assert _codecs(files) == {"GZIP"}
    # stored: nothing of it (one schema, no option)
    assert t.schema.id == 0 and t.schema.options == {}
    # the next write without the options: one file, the table's default codec
    _rows(spark, 1).write.format("paimon").mode("append").save("db.logs")
    t = _fresh(wh, "db.logs")
    files = _added(t)
    assert len(files) == 1 and _codecs(files) == {"ZSTD"}
    assert t.to_arrow().num_rows == 8000


def test_primary_key_write_keeps_its_keys_and_applies_the_rest(spark: Any, wh: Path) -> None:
    FileSystemCatalog(str(wh)).create_table("db.kv", KV)
    # the table's own bucket and key restated (a create-or-append job's options) are no
    # change; target-file-size acts on the two buckets' files (shuffled from 2 partitions)
    _rows(spark, 2).write.format("paimon").option("bucket", "2").option("primary-key", "id") \
        .option("target-file-size", "512 kb").mode("append").save("db.kv")
    t = _fresh(wh, "db.kv")
    files = _added(t)
    assert len(files) >= 6, files  # ~2 MB per bucket cut at 512 KB
    assert t.schema.id == 0 and t.schema.options == {"bucket": "2"}
    assert t.to_arrow().num_rows == 4000


def test_an_immutable_option_that_differs_is_refused_by_name(spark: Any, wh: Path) -> None:
    FileSystemCatalog(str(wh)).create_table("db.fixed", KV)
    df = _rows(spark, 1)
    with pytest.raises(ImmutableOptionError) as e:
        df.write.format("paimon").option("bucket", "4").mode("append").save("db.fixed")
    first = str(e.value).strip().splitlines()[0]
    assert first.startswith("option 'bucket' cannot be overlaid for one job: the table has "
                            "bucket='2', given bucket='4'"), first
    with pytest.raises(ImmutableOptionError, match="option 'merge-engine'"):
        df.write.format("paimon").option("merge-engine", "first-row").mode("append") \
            .save("db.fixed")
    t = _fresh(wh, "db.fixed")
    assert t.latest_snapshot() is None and t.schema.options == {"bucket": "2"}


def test_misspelt_keys_and_bad_values_are_refused(spark: Any, wh: Path) -> None:
    FileSystemCatalog(str(wh)).create_table("db.typo", LOGS)
    df = _rows(spark, 1)
    with pytest.raises(UnknownOptionError, match="did you mean 'target-file-size'"):
        df.write.format("paimon").option("target-file-sise", "1 mb").mode("append") \
            .save("db.typo")
    with pytest.raises(SchemaError, match=r"target-file-size.*'12 apples'"):
        df.write.format("paimon").option("target-file-size", "12 apples").mode("append") \
            .save("db.typo")
    assert _fresh(wh, "db.typo").latest_snapshot() is None


def test_a_bad_value_for_the_table_a_write_creates_is_refused(spark: Any, wh: Path) -> None:
    """The write creates the table with its table options: a bad value is refused by name
    and value before anything is created (it used to be stored, and the table was broken)."""
    df = _rows(spark, 1)
    with pytest.raises(SchemaError, match=r"option write-only='maybe' is not a boolean"):
        df.write.format("paimon").option("write-only", "maybe").mode("append") \
            .save("db.created_bad")
    with pytest.raises(SchemaError, match=r"option target-file-size='12 apples' is not a "
                       "memory size"):
        df.write.format("paimon").option("primary-key", "id").option("bucket", "2") \
            .option("target-file-size", "12 apples").mode("append").save("db.created_bad")
    assert not FileSystemCatalog(str(wh)).table_exists("db.created_bad")
