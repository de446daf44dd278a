"""``spark.read.format("paimon")`` against paimon_core's own read (with and without filters,
projection, time travel), ``spark.readStream.format("paimon")`` across a restart from its
checkpoint, and ``df.write.format("paimon")``."""

from __future__ import annotations

import datetime
import decimal
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.schema_builder import Schema
from paimon_core.table import FileStoreTable
from tests.tables import make_table, write_rows

pytestmark = pytest.mark.spark

KEYS = ["pt", "id"]
SCHEMA = Schema.of(
    [("pt", "STRING"), ("id", "BIGINT"), ("name", "STRING"), ("amt", "DECIMAL(10, 2)"),
     ("score", "DOUBLE"), ("d", "DATE"), ("ts", "TIMESTAMP(6)"),
     ("ltz", "TIMESTAMP(3) WITH LOCAL TIME ZONE")],
    partition_keys=["pt"], primary_keys=KEYS, options={"bucket": "2"},
)


def _rows(lo: int, hi: int, tag: str) -> pa.Table:
    ids = list(range(lo, hi))
    return pa.table({
        "pt": [("a", "b", "c")[i % 3] for i in ids],
        "id": ids,
        "name": [f"n{i}-{tag}" for i in ids],
        "amt": [None if i % 7 == 0 else decimal.Decimal(i) / 4 for i in ids],
        "score": [(-0.0 if i % 5 == 0 else i / 10) for i in ids],
        "d": [datetime.date(2024, 1, 1) + datetime.timedelta(days=i % 40) for i in ids],
        "ts": [datetime.datetime(2024, 2, 1, 12) + datetime.timedelta(seconds=i) for i in ids],
        "ltz": pa.array([1_700_000_000_000 + i for i in ids], pa.timestamp("ms", tz="UTC")),
    })


def _commit(table: FileStoreTable, data: pa.Table, ident: int, *, kinds: list[str] | None = None
            ) -> None:
    if kinds is not None:
        data = data.append_column("_k", pa.array(kinds))
    write_rows(table, data, ident, user="fixture",
               row_kind_column="_k" if kinds is not None else None)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> FileStoreTable:
    wh = tmp_path_factory.mktemp("source-wh")
    t = FileSystemCatalog(str(wh)).create_table("db.t", SCHEMA)
    _commit(t, _rows(0, 60, "v1"), 1)
    t.create_tag("first", 1)
    upd = _rows(20, 40, "v2")
    _commit(t, upd, 2, kinds=["-D" if i % 4 == 0 else "+U" for i in range(20, 40)])
    _commit(t, _rows(60, 75, "v3"), 3)
    return t


def _spark_read(spark: Any, table: FileStoreTable, **options: str) -> Any:
    return spark.read.format("paimon").option("warehouse", table.path.rsplit("/db.db", 1)[0]) \
        .options(**options).load("db.t")


def _sorted(t: pa.Table) -> pa.Table:
    keys = [k for k in KEYS if k in t.column_names] or [t.column_names[0]]
    return t.sort_by([(k, "ascending") for k in keys])


def _expected(table: FileStoreTable, spark_df: Any, **kw: Any) -> pa.Table:
    """paimon_core's read, cast to the Arrow types Spark returns."""
    from pipelines.spark_types import conform_to_spark

    ours = table.to_arrow(**kw)
    return conform_to_spark(ours, spark_df.toArrow().schema)


def test_batch_read_equals_paimon_core(spark: Any, table: FileStoreTable) -> None:
    df = _spark_read(spark, table)
    got = _sorted(df.toArrow())
    assert got.num_rows == 60 - 5 + 15  # 5 of the 20 updated keys were deleted
    assert got.equals(_sorted(_expected(table, df)))
    assert [f.name for f in df.schema.fields] == SCHEMA.to_table_schema(0).field_names
    assert not df.schema["id"].nullable and df.schema["name"].nullable
    # one input partition per split when packing is off: 3 partitions x 2 buckets
    raw = _spark_read(spark, table, **{"split.target-size": "0"})
    assert raw.rdd.getNumPartitions() == 6


@pytest.mark.parametrize(
    ("spark_filter", "paimon_filter"),
    [
        ("pt = 'b'", ["pt = 'b'"]),
        ("id >= 10 AND id < 33", ["id >= 10", "id < 33"]),
        ("pt IN ('a', 'c') AND name LIKE 'n2%'", ["pt IN ('a', 'c')", "name STARTSWITH 'n2'"]),
        ("amt IS NULL AND d = DATE'2024-01-08'", ["amt IS NULL", "d = '2024-01-08'"]),
        ("amt > 10.25 AND NOT pt = 'a'", ["amt > 10.25", "pt != 'a'"]),
        ("score >= 0.0", None),  # not pushed (-0.0): Spark's own semantics
        ("id = 3 OR pt = 'c'", None),  # OR: not pushed
    ],
)
def test_filtered_read_equals_paimon_core(spark: Any, table: FileStoreTable,
                                          spark_filter: str, paimon_filter: list[str] | None
                                          ) -> None:
    import pyarrow.compute as pc

    df = _spark_read(spark, table).filter(spark_filter)
    got = _sorted(df.toArrow())
    if paimon_filter is not None:
        expected = _sorted(_expected(table, df, filter=paimon_filter))
    else:
        full = _sorted(_expected(table, df))
        mask = (pc.greater_equal(full["score"], 0.0) if spark_filter.startswith("score")
                else pc.or_(pc.equal(full["id"], 3), pc.equal(full["pt"], "c")))
        expected = full.filter(mask)
    assert got.num_rows > 0
    assert got.equals(expected)


def test_projection_and_time_travel(spark: Any, table: FileStoreTable) -> None:
    cols = _spark_read(spark, table, columns="id,name")
    assert cols.columns == ["id", "name"]
    assert _sorted(cols.toArrow()).equals(
        _sorted(_expected(table, cols, columns=["id", "name"])))
    user = spark.read.format("paimon").schema("name STRING, id BIGINT") \
        .option("warehouse", table.path.rsplit("/db.db", 1)[0]).load("db.t")
    assert user.columns == ["name", "id"] and user.count() == 70
    for kw, opts in [({"snapshot_id": 1}, {"scan.snapshot-id": "1"}),
                     ({"tag": "first"}, {"tag": "first"}),
                     ({"snapshot_id": 2},
                      {"timestamp-millis": str(table.snapshot_manager.snapshot(2).time_millis)})]:
        df = _spark_read(spark, table, **opts)
        assert _sorted(df.toArrow()).equals(_sorted(_expected(table, df, **kw))), opts
    kinds = _spark_read(spark, table, **{"read.changelog": "true", "scan.snapshot-id": "1"})
    assert kinds.columns[0] == "_kind"
    assert {r["_kind"] for r in kinds.select("_kind").distinct().collect()} == {"+I"}


def _stream_table(tmp: Path) -> FileStoreTable:
    return make_table(tmp / "wh", [("id", "BIGINT"), ("v", "STRING"), ("batch", "INT")],
                      name="db.s", primary_keys=["id"], options={"bucket": "2"})


def _append(t: FileStoreTable, ident: int, ids: list[int], kinds: list[str] | None = None
            ) -> None:
    data = pa.table({"id": ids, "v": [f"v{i}-{ident}" for i in ids],
                     "batch": pa.array([ident] * len(ids), pa.int32())})
    _commit(t, data, ident, kinds=kinds)


def test_stream_restart_neither_skips_nor_repeats(spark: Any, tmp_path: Path) -> None:
    t = _stream_table(tmp_path)
    _append(t, 1, [1, 2, 3])
    _append(t, 2, [4, 5])
    ck, out = tmp_path / "ck", tmp_path / "out"

    def run() -> None:
        q = (spark.readStream.format("paimon").option("warehouse", str(tmp_path / "wh"))
             .option("table", "db.s").option("read.changelog", "true")
             .option("consumer-id", "spark-sink").load()
             .writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(ck)).trigger(processingTime="200 milliseconds")
             .start())
        try:
            q.processAllAvailable()
        finally:
            q.stop()

    run()  # latest-full: the state of snapshot 2
    first = sorted((r["_kind"], r["id"], r["batch"]) for r in spark.read.parquet(str(out))
                   .collect())
    assert first == [("+I", 1, 1), ("+I", 2, 1), ("+I", 3, 1), ("+I", 4, 2), ("+I", 5, 2)]
    _append(t, 3, [1, 6])
    t.compact()  # snapshot 4: COMPACT, no changes for a stream without changelog
    _append(t, 5, [2, 6], kinds=["-D", "+U"])
    run()  # restarted from the checkpoint: snapshots 3..5, each once
    rows = sorted((r["_kind"], r["id"], r["batch"]) for r in spark.read.parquet(str(out))
                  .collect())
    assert rows == sorted([*first, ("+I", 1, 3), ("+I", 6, 3), ("-D", 2, 5), ("+U", 6, 5)])
    # Spark commits a micro-batch's end offset to the source when it plans the next batch:
    # the consumer lags one batch behind the sink (never ahead of it)
    consumer = json.loads((Path(t.path) / "consumer" / "consumer-spark-sink").read_text())
    assert consumer == {"nextSnapshot": 3}
    run()  # nothing new: nothing repeated
    assert spark.read.parquet(str(out)).count() == len(rows)


def test_stream_reads_a_truncate_with_streaming_read_overwrite(spark: Any, tmp_path: Path
                                                               ) -> None:
    t = _stream_table(tmp_path)
    _append(t, 1, [1, 2, 3])
    t.new_commit("truncater").truncate(2)  # snapshot 2: OVERWRITE, the table empty
    _append(t, 3, [3, 4])

    def stream(**options: str) -> list[tuple[str, int, int]]:
        out = tmp_path / f"out-{len(options)}"
        q = (spark.readStream.format("paimon").option("warehouse", str(tmp_path / "wh"))
             .option("table", "db.s").option("read.changelog", "true")
             .option("scan.mode", "from-snapshot").option("scan.snapshot-id", "1")
             .options(**options).load()
             .writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(tmp_path / f"ck-{len(options)}"))
             .trigger(availableNow=True).start())
        try:
            q.awaitTermination()
        finally:
            q.stop()
        return sorted((r["_kind"], r["id"], r["batch"])
                      for r in spark.read.parquet(str(out)).collect())

    inserts = [("+I", 1, 1), ("+I", 2, 1), ("+I", 3, 1), ("+I", 3, 3), ("+I", 4, 3)]
    # the truncate retracts every row snapshot 1 wrote
    assert stream(**{"streaming-read-overwrite": "true"}) == sorted(
        [*inserts, ("-D", 1, 1), ("-D", 2, 1), ("-D", 3, 1)])
    assert stream() == inserts  # Paimon's default: OVERWRITE snapshots are skipped


def test_format_writer_append_overwrite_exactly_once(spark: Any, tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    schema = Schema.of([("pt", "INT"), ("id", "BIGINT"), ("s", "STRING")],
                       partition_keys=["pt"], options={"bucket": "-1"})
    t = FileSystemCatalog(wh).create_table("db.a", schema)
    df = spark.createDataFrame([(p, i, f"s{i}") for p in (1, 2) for i in range(5)],
                               "pt int, id long, s string").repartition(3)
    opts = {"warehouse": wh, "commit.user": "writer", "commit.identifier": "1"}
    df.write.format("paimon").options(**opts).mode("append").save("db.a")
    df.write.format("paimon").options(**opts).mode("append").save("db.a")  # same id: no-op
    assert t.to_arrow().num_rows == 10
    assert t.latest_snapshot().id == 1  # type: ignore[union-attr]
    new = spark.createDataFrame([(2, 100, "x")], "pt int, id long, s string")
    new.write.format("paimon").options(warehouse=wh, **{"overwrite.partition": "pt=2"}) \
        .mode("overwrite").save("db.a")
    got = sorted((r["pt"], r["id"]) for r in t.to_arrow().to_pylist())
    assert got == [(1, i) for i in range(5)] + [(2, 100)]
    live = {f.file_name for s in t.new_read_builder().new_scan().plan().splits for f in s.files}
    on_disk = {p.name for p in Path(t.path).rglob("data-*.parquet")}
    assert on_disk >= live and len(live) > 0


@pytest.mark.s3
def test_read_and_write_on_s3(spark: Any, s3_root: tuple[str, dict[str, str]]) -> None:
    from pipelines.config import CatalogSettings
    from pipelines.writer import WriteSpec, write_dataframe

    root, storage = s3_root
    cat = FileSystemCatalog(root, storage)
    cat.create_table("db.t", SCHEMA)
    src = _rows(0, 30, "s3")
    df = spark.createDataFrame(src)
    res = write_dataframe(df, CatalogSettings(root, storage), "db.t", spec=WriteSpec("s3"))
    assert res.snapshot_ids == (1,) and res.rows == 30
    table = cat.get_table("db.t")
    got = spark.read.format("paimon").options(warehouse=root, **storage).load("db.t") \
        .filter("pt = 'a'")
    assert _sorted(got.toArrow()).equals(_sorted(_expected(table, got, filter="pt = 'a'")))
