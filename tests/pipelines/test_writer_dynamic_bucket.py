"""The DataFrame write into dynamic bucket primary-key tables (``bucket=-1``): rows routed to
assigner channels (one task per channel), every key in one bucket whose hash index holds it,
updates land in the key's stored bucket, INSERT OVERWRITE assigns afresh and replaces the
partition's index; ``df.write.format("paimon")`` routes them the same way, a SQL INSERT
(which the source cannot route) is refused with an error naming ``bucket``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from paimon_core.bucket import hash_codes
from paimon_core.fsck import fsck
from paimon_core.spec.hash_index import decode_hash_index
from paimon_core.table import FileStoreTable
from pipelines.config import CatalogSettings
from pipelines.writer import WriteSpec, write_dataframe
from tests.tables import make_table

pytestmark = pytest.mark.spark

DDL = "pt string, id long, v string"


def _table(wh: Path) -> FileStoreTable:
    return make_table(wh, [("pt", "STRING"), ("id", "BIGINT"), ("v", "STRING")],
                      partition_keys=["pt"], primary_keys=["pt", "id"],
                      options={"bucket": "-1", "dynamic-bucket.target-row-num": "25",
                               "dynamic-bucket.assigner-parallelism": "3"})


def _state(t: FileStoreTable) -> tuple[dict[tuple[str, int], str], dict[tuple[str, int], int]]:
    """Rows and bucket of every key; checks each key's hash is in its bucket's index and no
    hash is in two buckets of a partition."""
    snap = t.latest_snapshot()
    assert snap is not None and snap.index_manifest
    index: dict[tuple[bytes, int], set[int]] = {}
    for e in t.new_planner(t.schema, None).manifests.index_manifest(snap.index_manifest):
        p = Path(t.path) / "index" / e.file_name
        index[(e.partition, e.bucket)] = set(decode_hash_index(p.read_bytes(), str(p)).tolist())
    for part in {p for p, _ in index}:
        sets = [s for (p, _), s in index.items() if p == part]
        assert sum(map(len, sets)) == len(set().union(*sets))
    rows: dict[tuple[str, int], str] = {}
    buckets: dict[tuple[str, int], int] = {}
    rb = t.new_read_builder()
    for split in rb.new_scan().plan().splits:
        data = rb.new_read().to_arrow([split])
        hashes = hash_codes([data.column("id")], [t.schema.field("id").type]).tolist()
        assert set(hashes) <= index[(split.partition, split.bucket)]
        for r in data.to_pylist():
            key = (r["pt"], r["id"])
            assert key not in rows, f"{key} in two buckets"
            rows[key] = r["v"]
            buckets[key] = split.bucket
    return rows, buckets


def test_write_dataframe_routes_by_assigner_channel(spark: Any, tmp_path: Path) -> None:
    t = _table(tmp_path)
    settings = CatalogSettings(str(tmp_path))
    first = [(("a", "b")[i % 2], i, f"v{i}") for i in range(200)]
    res = write_dataframe(spark.createDataFrame(first, DDL).repartition(4), settings, "db.t",
                          spec=WriteSpec("w", 1))
    assert res.rows == 200
    rows, buckets = _state(t)
    assert rows == {(p, i): v for p, i, v in first}
    # 100 keys per partition, at most 25 per bucket: at least 4 buckets each
    assert all(len({b for (p, _), b in buckets.items() if p == part}) >= 4 for part in "ab")
    # updates of stored keys and new keys: stored keys stay where they are
    second = [("a", i, f"w{i}") for i in range(0, 300, 3)]
    write_dataframe(spark.createDataFrame(second, DDL).repartition(2), settings, "db.t",
                    spec=WriteSpec("w", 2))
    rows2, buckets2 = _state(t)
    assert rows2 == {**rows, **{(p, i): v for p, i, v in second}}
    assert all(buckets2[k] == b for k, b in buckets.items())
    # a re-run of batch 2 applies nothing
    assert write_dataframe(spark.createDataFrame(second, DDL), settings, "db.t",
                           spec=WriteSpec("w", 2)).skipped
    # INSERT OVERWRITE of partition b: fresh buckets, b's index replaced, a untouched
    third = [("b", i, f"o{i}") for i in range(1000, 1010)]
    write_dataframe(spark.createDataFrame(third, DDL), settings, "db.t", mode="overwrite",
                    overwrite_partition={"pt": "b"}, spec=WriteSpec("w", 3))
    rows3, buckets3 = _state(t)
    assert rows3 == {**{k: v for k, v in rows2.items() if k[0] == "a"},
                     **{(p, i): v for p, i, v in third}}
    assert all(buckets3[k] == buckets2[k] for k in rows3 if k[0] == "a")
    assert fsck(t, deep=True).ok


def test_data_source_and_sql_insert_route_dynamic_pk_tables(
        spark: Any, tmp_path: Path) -> None:
    t = _table(tmp_path)
    base = [(("a", "b")[i % 2], i % 40, f"v{i}") for i in range(80)]  # every key twice
    df = spark.sparkContext.parallelize(base, 4).toDF(DDL)
    df.write.format("paimon").options(warehouse=str(tmp_path)).mode("append").save("db.t")
    rows, _ = _state(t)  # each key in one bucket, whose index holds it
    assert sorted(rows) == sorted({(p, i) for p, i, _ in base})
    assert all(v in {w for p2, i2, w in base if (p2, i2) == k} for k, v in rows.items())
    assert fsck(t, deep=True).ok
    spark.sql(f"CREATE TABLE dyn_t USING paimon OPTIONS (warehouse '{tmp_path}', "
              "table 'db.t')")
    try:  # an INSERT is written as df.write is (pipelines.spark_source.statements): routed the same
        spark.sql("INSERT INTO dyn_t SELECT 'a' AS p, 1000 AS i, 'x' AS w")
        spark.sql("INSERT INTO dyn_t SELECT 'a' AS p, 1 AS i, 'new' AS w")
        rows, _ = _state(t)
        assert rows[("a", 1000)] == "x" and rows[("a", 1)] == "new"
        assert fsck(t, deep=True).ok
    finally:
        spark.sql("DROP TABLE IF EXISTS dyn_t")


def test_killed_assigner_task_is_retried(spark: Any, tmp_path: Path) -> None:
    """A task (assigner channel 0) killed mid-write is retried: the new attempt loads the
    index again and assigns as the first would have; rows land once, the index agrees."""
    import os

    t = _table(tmp_path)
    settings = CatalogSettings(str(tmp_path))
    base = [(("a", "b")[i % 2], i, f"v{i}") for i in range(100)]
    write_dataframe(spark.createDataFrame(base, DDL), settings, "db.t", spec=WriteSpec("w", 1))
    _, buckets = _state(t)
    ups = [(("a", "b")[i % 2], i, f"u{i}") for i in range(50, 250)]

    def kill_first_attempt(partition: int, attempt: int, batches: int) -> None:
        if partition == 0 and attempt == 0 and batches >= 2:
            os._exit(13)  # the Python worker vanishes: no cleanup, no message

    old = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "20")
    try:
        res = write_dataframe(spark.createDataFrame(ups, DDL), settings, "db.t",
                              spec=WriteSpec("w", 2),
                              fault_hook=kill_first_attempt)
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", old)
    assert res.rows == 200
    rows, buckets2 = _state(t)
    assert rows == {**{(p, i): v for p, i, v in base}, **{(p, i): v for p, i, v in ups}}
    assert all(buckets2[k] == b for k, b in buckets.items())
    assert fsck(t, deep=True).ok
