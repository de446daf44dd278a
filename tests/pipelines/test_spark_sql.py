"""Issue 18 (scope 2-4) through a real local Spark session: tables by name in Spark SQL with
the warehouse from ``spark.paimon.warehouse``, views that see new snapshots, ``INSERT INTO`` /
``INSERT OVERWRITE``, ``df.write.format("paimon")`` without a mode (table created from the
DataFrame, row kinds), the ``writeStream`` sink (exactly-once across a replayed batch), system
table functions and procedures; every table written is read back by Paimon Java 0.9 (one
oracle batch for the module). References: paimon_core's own read of the same table."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.schema_builder import Schema
from paimon_core.table import FileStoreTable
from tests.pipelines.spark_warehouse import session_warehouse
from tests.tables import write_rows

pytestmark = pytest.mark.spark

ORDERS = Schema.of([("pt", "STRING"), ("id", "BIGINT"), ("amount", "DOUBLE")],
                   partition_keys=["pt"], options={"bucket": "-1"})


@pytest.fixture(scope="module")
def wh(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A warehouse set as the session's ``spark.paimon.warehouse`` (unset afterwards)."""
    yield from session_warehouse(spark, tmp_path_factory, "sparksql",
                                 drop=("sql_orders", "sql_orders_v1"))


def _table(wh: Path, ident: str) -> FileStoreTable:
    return FileSystemCatalog(str(wh)).get_table(ident)


def _rows(t: FileStoreTable, *cols: str) -> list[tuple[Any, ...]]:
    data = t.to_arrow()
    return sorted(zip(*(data.column(c).to_pylist() for c in cols)))


def _orders(pts: str, lo: int, hi: int) -> pa.Table:
    ids = list(range(lo, hi))
    return pa.table({"pt": [pts[i % len(pts)] for i in ids], "id": ids,
                     "amount": [i / 2 for i in ids]})


@pytest.fixture(scope="module")
def orders(wh: Path) -> FileStoreTable:
    t = FileSystemCatalog(str(wh)).create_table("db.orders", ORDERS)
    write_rows(t, _orders("ab", 0, 10), 1, user="fixture")
    return t


def test_sql_table_by_name_reads_and_writes(spark: Any, wh: Path, orders: FileStoreTable
                                            ) -> None:
    # no warehouse option: it comes from the session conf
    spark.sql("CREATE TABLE sql_orders USING paimon OPTIONS (table 'db.orders')")
    assert spark.sql("SELECT count(*) AS n FROM sql_orders").first()["n"] == 10
    spark.sql("INSERT INTO sql_orders VALUES ('c', 100, 1.5), ('a', 101, 2.5)")
    got = sorted(tuple(r) for r in spark.sql("SELECT pt, id, amount FROM sql_orders").collect())
    assert got == _rows(orders, "pt", "id", "amount") and len(got) == 12
    # INSERT OVERWRITE of the rows of one partition replaces that partition only (Paimon's
    # dynamic partition overwrite)
    spark.sql("INSERT OVERWRITE sql_orders SELECT 'b', 500, 9.0")
    assert _rows(orders, "pt", "id") == sorted(
        [(p, i) for p, i, _ in got if p != "b"] + [("b", 500)])
    # a catalog table keeps its OPTIONS: here a time travel
    spark.sql("CREATE TABLE sql_orders_v1 USING paimon "
              "OPTIONS (table 'db.orders', 'scan.snapshot-id' '1')")
    assert spark.sql("SELECT count(*) AS n FROM sql_orders_v1").first()["n"] == 10


def test_view_sees_new_snapshots(spark: Any, wh: Path, orders: FileStoreTable) -> None:
    spark.read.format("paimon").load("db.orders").createOrReplaceTempView("orders_view")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW orders_sql_view USING paimon "
              "OPTIONS (table 'db.orders')")
    before = orders.to_arrow().num_rows
    for view in ("orders_view", "orders_sql_view"):
        assert spark.sql(f"SELECT count(*) AS n FROM {view}").first()["n"] == before
    write_rows(orders, _orders("abd", 2000, 2007), 50, user="fixture")
    after = orders.to_arrow().num_rows
    assert after == before + 7
    for view in ("orders_view", "orders_sql_view"):
        assert spark.sql(f"SELECT count(*) AS n FROM {view}").first()["n"] == after
        got = sorted(tuple(r) for r in spark.sql(f"SELECT pt, id FROM {view}").collect())
        assert got == _rows(orders, "pt", "id")
    # time travel stays pinned
    first = spark.read.format("paimon").option("scan.snapshot-id", "1").load("db.orders")
    assert first.count() == 10


def test_df_write_without_mode_creates_table_and_row_kinds(spark: Any, wh: Path) -> None:
    df = spark.createDataFrame([(p, i, f"v{i}") for p in ("x", "y") for i in range(6)],
                               "pt string, id long, v string").coalesce(1)
    (df.write.format("paimon")
     .options(**{"primary-key": "pt,id", "partition": "pt", "bucket": "2",
                 "file.format": "parquet"})
     .save("db.created"))
    t = _table(wh, "db.created")
    assert list(t.schema.primary_keys) == ["pt", "id"] and list(t.schema.partition_keys) == ["pt"]
    assert t.schema.num_buckets == 2 and t.schema.options.get("file.format") == "parquet"
    assert _rows(t, "pt", "id", "v") == sorted(tuple(r) for r in df.collect())
    assert {s.bucket for s in t.new_read_builder().new_scan().plan().splits} == {0, 1}
    # row kinds through the _row_kind column: an update and a delete
    changes = spark.createDataFrame([("x", 1, "new", "+U"), ("y", 2, "y2", "-D")],
                                    "pt string, id long, v string, _row_kind string")
    changes.coalesce(1).write.format("paimon").save("db.created")
    got = dict(((p, i), v) for p, i, v in _rows(t, "pt", "id", "v"))
    assert got[("x", 1)] == "new" and ("y", 2) not in got and len(got) == 11


def test_pk_df_write_from_many_partitions_is_bucketed(spark: Any, wh: Path) -> None:
    """paimon-spark shuffles a primary-key write by bucket: four partitions, every one holding
    a copy of the duplicated keys, into a 3-bucket table (each bucket from one task, or the
    commit would refuse). The merged result: unique keys exactly; a duplicated key (Spark
    gives no order between tasks) one of its input rows."""
    chunks = [[(k, f"u{k}") for k in range(10 * c, 10 * c + 10)]
              + [(k, f"d{k}-{c}") for k in range(40, 50)] for c in range(4)]
    df = spark.sparkContext.parallelize([r for ch in chunks for r in ch], 4).toDF(
        "id long, v string")
    assert df.rdd.getNumPartitions() == 4
    df.write.format("paimon").options(**{"primary-key": "id", "bucket": "3"}).save(
        "db.pk_many")
    t = _table(wh, "db.pk_many")
    got = dict(_rows(t, "id", "v"))
    assert sorted(got) == list(range(50))
    assert all(got[k] == f"u{k}" for k in range(40))
    assert all(got[k] in {f"d{k}-{c}" for c in range(4)} for k in range(40, 50))
    assert {s.bucket for s in t.new_read_builder().new_scan().plan().splits} == {0, 1, 2}
    # a second many-partition write over it: the newer rows win, in every bucket
    df2 = spark.sparkContext.parallelize([(k, f"n{k}") for k in range(0, 50, 2)], 4).toDF(
        "id long, v string")
    df2.write.format("paimon").save("db.pk_many")
    got2 = dict(_rows(t, "id", "v"))
    assert got2 == {**got, **{k: f"n{k}" for k in range(0, 50, 2)}}


def test_pk_sql_insert_from_many_tasks_into_one_bucket(spark: Any, wh: Path) -> None:
    """spark.sql runs an INSERT through df.write (pipelines.spark_source.statements): shuffled by
    bucket, from any number of tasks, whatever the SELECT's column names. A parameterized
    INSERT reaches the source with Spark's partitioning (a Python data source has no
    distribution hook): many tasks into one bucket is refused before anything lands."""
    FileSystemCatalog(str(wh)).create_table("db.pk_one", Schema.of(
        [("id", "BIGINT NOT NULL"), ("v", "STRING")], primary_keys=["id"],
        options={"bucket": "1"}))
    spark.sql("CREATE TABLE pk_one USING paimon OPTIONS (table 'db.pk_one')")
    try:
        t = _table(wh, "db.pk_one")
        with pytest.raises(Exception, match="more than one Spark task") as err:
            spark.sql("INSERT INTO pk_one SELECT id AS k, :v AS w FROM range(0, 40, 1, 2)",
                      args={"v": "v"})
        assert str(err.value).lstrip().startswith("[PYTHON_DATA_SOURCE_ERROR] Failed to "
                                                  "commit or abort Python data source write: "
                                                  "paimon_core.errors.UnsupportedError: ")
        assert t.latest_snapshot() is None
        assert not list(Path(t.path).rglob("data-*.parquet"))
        # the same columns as the table's, from two tasks: written
        spark.sql("INSERT INTO pk_one SELECT id, CAST(id AS STRING) AS v "
                  "FROM range(0, 40, 1, 2)")
        assert _rows(t, "id", "v") == sorted((i, str(i)) for i in range(40))
        assert len(t.snapshot_manager.list_snapshot_ids()) == 1
    finally:
        spark.sql("DROP TABLE IF EXISTS pk_one")


def test_insert_overwrite_whole_table_and_partition_clause(spark: Any, wh: Path) -> None:
    """INSERT OVERWRITE replaces only the partitions in the data (paimon-spark's default
    dynamic-partition-overwrite=true, see test_sql_table_by_name_reads_and_writes); with
    'dynamic-partition-overwrite' 'false' the whole table. A PARTITION clause: Spark sees a
    Python data source table as unpartitioned and refuses it (README says so)."""
    t = FileSystemCatalog(str(wh)).create_table("db.ow", ORDERS)
    write_rows(t, _orders("ab", 0, 6), 1, user="fixture")
    spark.sql("CREATE TABLE ow_all USING paimon OPTIONS (table 'db.ow', "
              "'dynamic-partition-overwrite' 'false')")
    try:
        spark.sql("INSERT OVERWRITE ow_all SELECT 'b', 900, 1.0")
        assert _rows(t, "pt", "id") == [("b", 900)]
        with pytest.raises(Exception, match="NON_PARTITION_COLUMN"):
            spark.sql("INSERT OVERWRITE ow_all PARTITION (pt='a') SELECT 5, 1.0")
        assert _rows(t, "pt", "id") == [("b", 900)]
    finally:
        spark.sql("DROP TABLE IF EXISTS ow_all")


def test_rollback_from_sql(spark: Any, wh: Path) -> None:
    """paimon_rollback('db.t', snapshot id | tag): the table equals what time travel read at
    the target before; newer snapshots and tags are gone; fsck clean, no orphan."""
    from paimon_core.fsck import fsck, orphan_files

    t = FileSystemCatalog(str(wh)).create_table("db.rolled", Schema.of(
        [("id", "BIGINT NOT NULL"), ("v", "STRING")], primary_keys=["id"],
        options={"bucket": "2"}))
    for i in range(4):
        write_rows(t, pa.table({"id": [i, i + 1], "v": [f"r{i}", f"r{i}"]}), i + 1,
                   user="fixture")
        if i == 1:
            t.create_tag("two")
    at = {sid: sorted((r["id"], r["v"]) for r in t.to_arrow(snapshot_id=sid).to_pylist())
          for sid in (2, 3)}
    t.create_tag("four")
    res = spark.sql("SELECT * FROM paimon_rollback('db.rolled', 3)").first()
    assert tuple(res) == (3, 1, 1, res["deleted_files"]) and res["deleted_files"] > 0
    assert _rows(t, "id", "v") == at[3] and dict(t.list_tags()) == {"two": 2}
    res = spark.sql("SELECT * FROM paimon_rollback('db.rolled', 'two')").first()
    assert res["snapshot_id"] == 2 and _rows(t, "id", "v") == at[2]
    assert t.snapshot_manager.list_snapshot_ids() == [1, 2]
    report = fsck(t, deep=True)
    assert report.ok, [f.to_json() for f in report.errors]
    assert orphan_files(t, 2**62) == []
    with pytest.raises(Exception, match="snapshot 7 does not exist"):
        spark.sql("SELECT * FROM paimon_rollback('db.rolled', 7)").collect()


def test_task_errors_reach_the_user_typed_first(spark: Any, wh: Path) -> None:
    """A value the table cannot store exactly, raised inside a write task: df.write and a SQL
    INSERT (run through df.write by spark.sql) raise the Paimon error itself (Spark's
    exception as its cause); a parameterized INSERT (Spark's own path) gives an exception
    whose text starts with it; none carries a Python traceback."""
    from paimon_core import SchemaError
    from pipelines.spark_errors import typed_error

    FileSystemCatalog(str(wh)).create_table("db.narrow", Schema.of(
        [("id", "BIGINT"), ("s", "VARCHAR(3)")]))
    df = spark.createDataFrame([(1, "abcdef")], "id long, s string")
    with pytest.raises(SchemaError, match=r"^column 's' is VARCHAR\(3\) but row 0 holds "
                       r"'abcdef' of 6 characters$") as err:
        df.write.format("paimon").save("db.narrow")
    assert err.value.__cause__ is not None
    assert "Traceback" not in str(err.value.__cause__)
    spark.sql("CREATE TABLE narrow USING paimon OPTIONS (table 'db.narrow')")
    try:
        with pytest.raises(SchemaError, match=r"^column 's' is VARCHAR\(3\) but row 0 holds "
                           r"'toolong'") as typed_sql:
            spark.sql("INSERT INTO narrow SELECT 2, 'toolong'")
        assert "Traceback" not in str(typed_sql.value.__cause__)
        with pytest.raises(Exception) as sql_err:
            spark.sql("INSERT INTO narrow SELECT :id, 'toolong'", args={"id": 2})
        text = str(sql_err.value).lstrip()
        first_lines = text.splitlines()[:2]
        assert first_lines[1].startswith("paimon_core.errors.SchemaError: column 's' is "
                                         "VARCHAR(3) but row 0 holds 'toolong'"), text[:500]
        assert "Traceback" not in text and "Job aborted" not in text
        typed = typed_error(sql_err.value)
        assert isinstance(typed, SchemaError) and str(typed).startswith("column 's'")
    finally:
        spark.sql("DROP TABLE IF EXISTS narrow")
    assert _table(wh, "db.narrow").latest_snapshot() is None


def test_write_stream_exactly_once_across_a_replayed_batch(spark: Any, wh: Path,
                                                           tmp_path: Path) -> None:
    src = FileSystemCatalog(str(wh)).create_table("db.stream_src", ORDERS)
    write_rows(src, _orders("ab", 0, 8), 1, user="fixture")
    checkpoint = tmp_path / "cp"

    def run() -> None:
        q = (spark.readStream.format("paimon").load("db.stream_src")
             .writeStream.format("paimon").option("checkpointLocation", str(checkpoint))
             .option("table", "db.stream_sink").trigger(availableNow=True).start())
        try:
            q.awaitTermination(600)
            assert not q.isActive and q.exception() is None
        finally:
            q.stop()

    run()
    sink = _table(wh, "db.stream_sink")
    assert _rows(sink, "pt", "id") == _rows(src, "pt", "id")
    snapshots = sink.snapshot_manager.latest_snapshot_id()
    assert snapshots is not None
    # a crash after the sink committed the last batch but before Spark recorded it: Spark
    # replays that batch on restart with the same batch id; the sink must not apply it again
    commits = sorted((checkpoint / "commits").glob("[0-9]*"), key=lambda p: int(p.name))
    last = commits[-1]
    last.unlink()
    (last.parent / f".{last.name}.crc").unlink(missing_ok=True)  # Hadoop's checksum file
    run()
    assert (checkpoint / "commits" / last.name).exists()  # Spark did replay the batch
    assert sink.snapshot_manager.latest_snapshot_id() == snapshots
    assert _rows(sink, "pt", "id") == _rows(src, "pt", "id")


def test_system_tables_and_procedures_from_sql(spark: Any, wh: Path) -> None:
    t = FileSystemCatalog(str(wh)).create_table("db.maint", Schema.of(
        [("id", "BIGINT NOT NULL"), ("v", "STRING")], primary_keys=["id"],
        options={"bucket": "1"}))
    for i in range(3):
        write_rows(t, pa.table({"id": [i, i + 1], "v": [f"r{i}", f"r{i}"]}), i + 1,
                   user="fixture")
    snaps = spark.sql("SELECT * FROM paimon_snapshots('db.maint')").toArrow()
    ref = t.inspect.snapshots()
    assert snaps.column("snapshot_id").to_pylist() == ref.column("snapshot_id").to_pylist()
    assert snaps.schema.names == ref.schema.names
    # a sample of the rest (every one is a query with its own analysis worker: CI time)
    for fn in ("options", "buckets", "audit_log"):
        got = spark.sql(f"SELECT * FROM paimon_{fn}('db.maint')").toArrow()
        want = t.inspect.system_table(fn)  # type: ignore[arg-type]
        assert got.num_rows == want.num_rows, fn
        assert got.schema.names == want.schema.names, fn
    files_at_1 = spark.sql("SELECT * FROM paimon_files('db.maint', 1)").count()
    assert files_at_1 == t.inspect.system_table("files", snapshot_id=1).num_rows

    tag = spark.sql("SELECT * FROM paimon_create_tag('db.maint', 'v2', 2)").first()
    assert tuple(tag) == (True, 2) and dict(t.list_tags()) == {"v2": 2}
    assert spark.sql("SELECT tag_name FROM paimon_tags('db.maint')").first()[0] == "v2"
    before = _rows(t, "id", "v")
    res = spark.sql("SELECT * FROM paimon_compact('db.maint')").first()
    latest = t.latest_snapshot()
    assert latest is not None and res["result"] and res["snapshot_id"] == latest.id
    assert latest.commit_kind.value == "COMPACT" and _rows(t, "id", "v") == before
    exp = spark.sql("SELECT * FROM paimon_expire_snapshots('db.maint', 1, 1)").first()
    assert exp["expired_snapshots"] == 3
    assert t.snapshot_manager.earliest_snapshot_id() == latest.id
    assert _rows(t, "id", "v") == before


@pytest.mark.oracle
def test_java_reads_tables_written_from_spark(wh: Path, tmp_path: Path) -> None:
    """Paimon Java 0.9 reads every table this module wrote through SQL, df.write and the
    streaming sink (one oracle batch), as paimon_core does."""
    from tests.interop.oracle import ensure_ready, run_batches

    copy = tmp_path / "wh"
    shutil.copytree(wh, copy)
    tables = {"db.orders": ("pt", "id", "amount"), "db.created": ("pt", "id", "v"),
              "db.stream_sink": ("pt", "id", "amount"), "db.maint": ("id", "v"),
              "db.pk_many": ("id", "v"), "db.rolled": ("id", "v"), "db.ow": ("pt", "id")}
    present = {k: v for k, v in tables.items()
               if (copy / k.replace(".", ".db/")).is_dir()}
    assert present, "no table was written"
    ensure_ready()
    cmds = [{"cmd": "read", "warehouse": str(copy), "table": ident, "engine": "java",
             "output": str(tmp_path / f"{ident}.jsonl")} for ident in present]
    result = run_batches({"sparksql": cmds}, tmp_path)["sparksql"]
    assert not result.failures(), result.stderr[-3000:]
    for ident, cols in present.items():
        java = sorted(tuple(r[c] for c in cols) for r in (
            json.loads(x) for x in (tmp_path / f"{ident}.jsonl").read_text().splitlines()))
        assert java == _rows(_table(copy, ident), *cols), ident


README_MARKER = '"spark.paimon.warehouse": "/data/warehouse"'


def test_readme_spark_sql_block_runs_as_written(spark: Any, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """README's Spark SQL / DataFrame block, as written (only the warehouse path replaced),
    in the test session (tests/test_readme_examples.py lists it in NOT_RUN for that)."""
    from pipelines.spark_source.sql import register_sql
    from tests.readme_harness import README
    from tests.test_readme_examples import WAREHOUSE, orders_table, readme_blocks

    (code,) = [c for _, c in readme_blocks(README.read_text()) if README_MARKER in c]
    wh = tmp_path / "warehouse"
    orders = orders_table(wh, commits=2)
    before = orders.to_arrow().num_rows
    try:
        exec(compile(code.replace(WAREHOUSE, str(wh)), "README.md", "exec"),
             {"__name__": "readme"})
        assert orders.to_arrow().num_rows == before + 1
        # compacted, then rolled back to the tag taken before: the INSERT's snapshot is latest
        latest = orders.latest_snapshot()
        tags = dict(orders.list_tags())
        assert latest is not None and latest.commit_kind.value == "APPEND"
        assert latest.id == tags["before-compact"]
        assert not orders.snapshot_manager.snapshot_exists(latest.id + 1)
        # the typed error of the bad write was caught and printed (its message names the key)
        assert "'id'" in capsys.readouterr().out.strip().splitlines()[-1]
        kv = _table(wh, "db.kv")
        assert kv.schema.field_names == ["id", "v", "extra"]  # write.merge-schema added it
        assert _rows(kv, "id", "v", "extra") == [(1, "a", None), (3, "c", 7)]
        assert sorted(tuple(r) for r in spark.sql("SELECT id, v FROM kv").collect()) == [
            (1, "a"), (3, "c")]
        # CREATE TABLE with columns created the Paimon table; the INSERT filled it
        events = _table(wh, "default.events")
        assert list(events.schema.primary_keys) == ["id", "dt"]
        assert len(_rows(events, "id")) == 10
    finally:
        spark.sql("DROP TABLE IF EXISTS orders")
        spark.sql("DROP TABLE IF EXISTS events")
        spark.sql("DROP VIEW IF EXISTS kv")
        spark.conf.unset("spark.paimon.warehouse")
        register_sql(spark)
