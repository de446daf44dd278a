"""Issue 29 (scope 2): the options a SQL user gives a ``USING paimon`` table act or are refused
by name: ``INSERT INTO t WITH (...)`` (that write's options), ``SET spark.paimon.<key>`` (the
session's later writes), and a ``CREATE TABLE ... OPTIONS (table 'db.t', ...)`` mapping an
existing table (acting on its reads and INSERTs). Expected results are written by hand."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from paimon_core.catalog import FileSystemCatalog
from pipelines.spark_errors import raising_typed
from pipelines.spark_source.options import UnknownOptionError
from tests.pipelines.spark_warehouse import session_warehouse

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def wh(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield from session_warehouse(spark, tmp_path_factory, "sparksqlopts",
                                 drop=["sq_t", "sq_map", "sq_pin"])


def _codecs(wh: Path, ident: str) -> set[str]:
    """The parquet codecs of the files the latest snapshot of ``ident`` added."""
    t = FileSystemCatalog(str(wh)).get_table(ident)
    snap = t.latest_snapshot()
    assert snap is not None
    rows = t.inspect.delta_files(snap.id).to_pylist()
    paths = [next(Path(t.path).rglob(r["file_path"])) for r in rows if r["kind"] == "ADD"]
    return {pq.ParquetFile(p).metadata.row_group(0).column(0).compression for p in paths}


def test_insert_with_options_and_set_apply_to_writes(spark: Any, wh: Path) -> None:
    spark.sql("CREATE TABLE sq_t (id BIGINT, v STRING) USING paimon OPTIONS (table 'db.sq_t')")
    spark.sql("INSERT INTO sq_t WITH ('file.compression' = 'gzip') VALUES (1, 'a')")
    assert _codecs(wh, "db.sq_t") == {"GZIP"}
    spark.sql("INSERT INTO sq_t VALUES (2, 'b')")
    assert _codecs(wh, "db.sq_t") == {"ZSTD"}  # that write's only
    # a SELECT's options: this read's
    assert [tuple(r) for r in spark.sql(
        "SELECT * FROM sq_t WITH ('scan.snapshot-id' = '1')").collect()] == [(1, "a")]
    with pytest.raises(UnknownOptionError, match=re.escape("did you mean 'file.compression'")
                       ), raising_typed():
        spark.sql("INSERT INTO sq_t WITH ('file.compresion' = 'gzip') VALUES (3, 'c')")
    spark.sql("SET spark.paimon.file.compression = gzip")
    try:
        spark.sql("INSERT INTO sq_t VALUES (4, 'd')")
        assert _codecs(wh, "db.sq_t") == {"GZIP"}
    finally:
        spark.sql("RESET spark.paimon.file.compression")
    spark.sql("INSERT INTO sq_t VALUES (5, 'e')")
    assert _codecs(wh, "db.sq_t") == {"ZSTD"}
    t = FileSystemCatalog(str(wh)).get_table("db.sq_t")
    assert t.schema.options == {}  # nothing stored
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [1, 2, 4, 5]


def test_a_mapping_create_s_options_act_on_its_reads_and_inserts(spark: Any, wh: Path
                                                                  ) -> None:
    spark.sql("CREATE TABLE sq_t0 (id BIGINT, v STRING) USING paimon "
              "OPTIONS (table 'db.sq_src')")
    spark.sql("INSERT INTO sq_t0 VALUES (1, 'a')")
    spark.sql("INSERT INTO sq_t0 VALUES (2, 'b')")
    spark.sql("DROP TABLE sq_t0")
    spark.sql("CREATE TABLE sq_map USING paimon OPTIONS (table 'db.sq_src', "
              "'file.compression' 'gzip')")
    spark.sql("INSERT INTO sq_map VALUES (3, 'c')")
    assert _codecs(wh, "db.sq_src") == {"GZIP"}
    assert FileSystemCatalog(str(wh)).get_table("db.sq_src").schema.options == {}
    spark.sql("CREATE TABLE sq_pin USING paimon OPTIONS (table 'db.sq_src', "
              "'scan.snapshot-id' '1')")
    assert [tuple(r) for r in spark.sql("SELECT * FROM sq_pin").collect()] == [(1, "a")]
