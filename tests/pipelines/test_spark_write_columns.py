"""Issue 27 (Spark data source): every column a write hands the ``paimon`` source is written
or refused, never dropped (``df.write``, ``writeStream``, SQL ``INSERT``; primary-key and
append tables), ``write.merge-schema`` / ``mergeSchema`` adds columns as paimon-spark does and
publishes the schema only once every task succeeded; ``writeStream`` into a primary-key table
from a multi-partition stream is routed by bucket, exactly once across a restart. Expected
results are written by hand."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import SchemaError, UnsupportedError
from paimon_core.catalog import FileSystemCatalog
from paimon_core.schema_builder import Schema
from paimon_core.table import FileStoreTable
from tests.pipelines.spark_warehouse import session_warehouse
from tests.tables import write_rows

pytestmark = pytest.mark.spark

KV = Schema.of([("id", "BIGINT NOT NULL"), ("v", "STRING")], primary_keys=["id"],
               options={"bucket": "2"})


@pytest.fixture(scope="module")
def wh(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A warehouse set as the session's ``spark.paimon.warehouse`` (unset afterwards)."""
    yield from session_warehouse(spark, tmp_path_factory, "sparkcols")


def _create(wh: Path, ident: str, schema: Schema) -> FileStoreTable:
    return FileSystemCatalog(str(wh)).create_table(ident, schema)


def _rows(t: FileStoreTable) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in t.to_arrow().to_pylist())


def _fresh(t: FileStoreTable, wh: Path) -> FileStoreTable:
    return FileSystemCatalog(str(wh)).get_table(str(t.identifier))


def test_extra_column_refused_then_added_with_merge_schema(spark: Any, wh: Path) -> None:
    t = _create(wh, "db.kv", KV)
    extra = spark.createDataFrame([(1, "a", 10), (2, "b", 20)], "id long, v string, extra int")
    with pytest.raises(SchemaError, match=r"^column\(s\) \['extra'\] of the written rows are "
                       r"not in table db\.kv .*write\.merge-schema=true"):
        extra.write.format("paimon").save("db.kv")
    assert t.latest_snapshot() is None and _fresh(t, wh).schema.id == 0
    # paimon-spark's option: the column is added (nullable, at the end) and written
    extra.write.format("paimon").option("write.merge-schema", "true").save("db.kv")
    t = _fresh(t, wh)
    assert [(f.name, f.type.sql()) for f in t.schema.fields] == [
        ("id", "BIGINT NOT NULL"), ("v", "STRING"), ("extra", "INT")]
    assert _rows(t) == [(1, "a", 10), (2, "b", 20)]
    # Spark's / Delta's name, on a multi-partition frame (shuffled by bucket); a table column
    # the rows lack is written as NULL; the newer row of key 2 wins
    more = spark.sparkContext.parallelize([(2, "b2", 7.5), (3, "c", 8.5)], 2).toDF(
        "id long, v string, score double")
    more.write.format("paimon").option("mergeSchema", "true").save("db.kv")
    t = _fresh(t, wh)
    assert t.schema.field_names == ["id", "v", "extra", "score"]
    assert _rows(t) == [(1, "a", 10, None), (2, "b2", None, 7.5), (3, "c", None, 8.5)]
    # without the option a missing column is refused too, by name
    with pytest.raises(SchemaError, match=r"lack column\(s\) \['extra', 'score'\] of table "
                       r"db\.kv"):
        spark.createDataFrame([(4, "d")], "id long, v string").write.format("paimon").save(
            "db.kv")


def test_merge_schema_widens_numbers_and_refuses_explicit_cast(spark: Any, wh: Path) -> None:
    """An append table: INT -> BIGINT and DECIMAL(5,2) -> DECIMAL(9,2) are widened (as
    paimon-spark's merge does); narrower data keeps the column's type (values checked); a
    lossy retyping asked for with write.merge-schema.explicit-cast is refused, by column."""
    t = _create(wh, "db.app", Schema.of([("id", "INT"), ("n", "INT"), ("d", "DECIMAL(5, 2)"),
                                         ("big", "BIGINT")]))
    spark.createDataFrame([(1, 5_000_000_000, "123.45", 7)], "id int, n long, d string, big int"
                          ).selectExpr("id", "n", "CAST(d AS DECIMAL(9, 2)) AS d", "big") \
        .write.format("paimon").option("write.merge-schema", "true").save("db.app")
    t = _fresh(t, wh)
    assert [(f.name, f.type.sql()) for f in t.schema.fields] == [
        ("id", "INT"), ("n", "BIGINT"), ("d", "DECIMAL(9, 2)"), ("big", "BIGINT")]
    from decimal import Decimal
    assert _rows(t) == [(1, 5_000_000_000, Decimal("123.45"), 7)]
    with pytest.raises(UnsupportedError, match=r"write\.merge-schema\.explicit-cast=true: "
                       r"column 'n' of db\.app would change from BIGINT to INT"):
        spark.createDataFrame([(2, 3, 1)], "id int, n int, big long").write.format("paimon") \
            .options(**{"write.merge-schema": "true",
                        "write.merge-schema.explicit-cast": "true"}).save("db.app")
    assert _fresh(t, wh).schema.id == 1


def test_merge_schema_is_not_published_when_a_task_fails(spark: Any, wh: Path) -> None:
    """paimon-spark commits the new schema before writing; here a failing task (a NULL
    primary key) leaves the schema and the files as they were."""
    t = _create(wh, "db.kv_fail", KV)
    write_rows(t, pa.table({"id": [1], "v": ["a"]}), 1, user="fixture")
    files = sorted(p.name for p in Path(t.path).rglob("data-*"))
    bad = spark.createDataFrame([(2, "b", 1), (None, "c", 2)], "id long, v string, extra int")
    with pytest.raises(SchemaError, match="'id'"):
        bad.coalesce(1).write.format("paimon").option("write.merge-schema", "true").save(
            "db.kv_fail")
    t = _fresh(t, wh)
    assert t.schema.id == 0 and t.schema.field_names == ["id", "v"]
    assert not (Path(t.path) / "schema" / "schema-1").exists()
    assert sorted(p.name for p in Path(t.path).rglob("data-*")) == files
    assert _rows(t) == [(1, "a")]


def test_stream_and_sql_insert_columns(spark: Any, wh: Path, tmp_path: Path) -> None:
    """writeStream with an extra column: refused by name, added with write.merge-schema; a SQL
    INSERT with one column too many is refused by Spark itself (never dropped)."""
    _create(wh, "db.st_cols", Schema.of([("id", "BIGINT"), ("v", "STRING")]))
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.json").write_text(json.dumps({"id": 1, "v": "a", "extra": 3}) + "\n")

    def run(**opts: str) -> Any:
        q = (spark.readStream.schema("id long, v string, extra long").json(str(src))
             .writeStream.format("paimon").options(**opts)
             .option("checkpointLocation", str(tmp_path / f"cp{len(opts)}"))
             .trigger(availableNow=True).start("db.st_cols"))
        try:
            q.awaitTermination(600)
        except Exception as e:  # StreamingQueryException
            return e
        finally:
            q.stop()
        return None

    err = run()
    assert err is not None and "column(s) ['extra'] of the written rows are not in table " \
        "db.st_cols" in str(err)
    assert run(**{"write.merge-schema": "true"}) is None
    t = FileSystemCatalog(str(wh)).get_table("db.st_cols")
    assert t.schema.field_names == ["id", "v", "extra"] and _rows(t) == [(1, "a", 3)]
    spark.sql("CREATE TABLE st_cols USING paimon OPTIONS (table 'db.st_cols')")
    try:
        with pytest.raises(Exception, match="TOO_MANY_DATA_COLUMNS"):
            spark.sql("INSERT INTO st_cols SELECT 2 AS a, 'b' AS b, 4 AS c, 5 AS d")
    finally:
        spark.sql("DROP TABLE IF EXISTS st_cols")
    assert _rows(t) == [(1, "a", 3)]


@pytest.mark.parametrize("bucket", ["2", "-1"])
def test_write_stream_into_pk_table_from_many_partitions(spark: Any, wh: Path, tmp_path: Path,
                                                         bucket: str) -> None:
    """A file stream of three files per micro-batch (three Spark partitions) into a
    primary-key table (fixed and dynamic bucket) with a sequence field: keys repeat across the
    files of a batch and across batches; the merged table keeps each key's highest sequence.
    A batch Spark replays after a crash (its commit marker removed) is not applied twice."""
    ident = f"db.st_pk{bucket.replace('-', 'm')}"
    _create(wh, ident, Schema.of(
        [("id", "BIGINT NOT NULL"), ("v", "STRING"), ("seq", "BIGINT")], primary_keys=["id"],
        options={"bucket": bucket, "sequence.field": "seq"}))
    src, cp = tmp_path / "in", tmp_path / "cp"
    src.mkdir()

    def land(name: str, rows: list[tuple[int, str, int]]) -> None:
        (src / name).write_text("".join(
            json.dumps({"id": i, "v": v, "seq": s}) + "\n" for i, v, s in rows))

    def run() -> None:
        q = (spark.readStream.schema("id long, v string, seq long")
             .option("maxFilesPerTrigger", "3").json(str(src))
             .writeStream.format("paimon").option("checkpointLocation", str(cp))
             .trigger(availableNow=True).start(ident))
        try:
            q.awaitTermination(600)
            assert q.exception() is None, q.exception()
        finally:
            q.stop()

    land("1.json", [(1, "a1", 1), (2, "b1", 1), (3, "c1", 5)])
    land("2.json", [(1, "a2", 2), (4, "d1", 1), (3, "c0", 4)])
    land("3.json", [(2, "b0", 0), (5, "e1", 1), (6, "f1", 1)])
    run()
    t = FileSystemCatalog(str(wh)).get_table(ident)
    first = [(1, "a2", 2), (2, "b1", 1), (3, "c1", 5), (4, "d1", 1), (5, "e1", 1),
             (6, "f1", 1)]
    assert _rows(t) == first
    snapshots = t.snapshot_manager.latest_snapshot_id()
    # a crash after the sink committed the batch, before Spark recorded it: replayed, not
    # applied again (an append-only count would show it: the snapshot count stays)
    commits = sorted((cp / "commits").glob("[0-9]*"), key=lambda p: int(p.name))
    commits[-1].unlink()
    (commits[-1].parent / f".{commits[-1].name}.crc").unlink(missing_ok=True)
    run()
    assert t.snapshot_manager.latest_snapshot_id() == snapshots and _rows(t) == first
    land("4.json", [(1, "a3", 3), (6, "f0", 0), (7, "g1", 1)])
    land("5.json", [(7, "g2", 2), (2, "b2", 2)])
    land("6.json", [(8, "h1", 1)])
    run()
    assert _rows(t) == [(1, "a3", 3), (2, "b2", 2), (3, "c1", 5), (4, "d1", 1), (5, "e1", 1),
                        (6, "f1", 1), (7, "g2", 2), (8, "h1", 1)]


@pytest.mark.oracle
def test_java_reads_the_evolved_and_streamed_tables(wh: Path, tmp_path: Path) -> None:
    """Paimon Java 0.9 reads the tables whose schema a write evolved (published by the
    driver after the tasks wrote with it) and the streamed primary-key tables, as paimon_core
    does (one oracle batch)."""
    import shutil

    from tests.interop.oracle import ensure_ready, run_batches

    copy = tmp_path / "wh"
    shutil.copytree(wh, copy)
    idents = [i for i in ("db.kv", "db.app", "db.st_cols", "db.st_pk2", "db.st_pkm1")
              if (copy / i.replace(".", ".db/")).is_dir()]
    assert idents, "no table was written"
    ensure_ready()
    cmds = [{"cmd": "read", "warehouse": str(copy), "table": ident, "engine": "java",
             "output": str(tmp_path / f"{ident}.jsonl")} for ident in idents]
    result = run_batches({"sparkcols": cmds}, tmp_path)["sparkcols"]
    assert not result.failures(), result.stderr[-3000:]
    for ident in idents:
        t = FileSystemCatalog(str(copy)).get_table(ident)
        names = t.schema.field_names
        java = sorted(tuple(r[c] for c in names) for r in (
            json.loads(x) for x in (tmp_path / f"{ident}.jsonl").read_text().splitlines()))
        ours = sorted(tuple(r[c] for c in names) for r in t.to_arrow().to_pylist())
        assert java == [tuple(_json(v) for v in row) for row in ours], ident


def _json(v: Any) -> Any:
    """A value as the oracle's JSON lines give it (decimals as text)."""
    from decimal import Decimal

    return str(v) if isinstance(v, Decimal) else v
