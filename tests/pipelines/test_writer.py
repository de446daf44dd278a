"""The bucketed DataFrame write: Paimon's bucket routing (one task per bucket), one commit,
exactly-once re-runs, cleanup of failed commits, and a task killed mid-write and retried."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from paimon_core.bucket import bucket_ids
from paimon_core.errors import SchemaError
from paimon_core.fsck import fsck
from paimon_core.orphans import remove_orphan_files
from paimon_core.table import FileStoreTable
from pipelines.config import CatalogSettings
from pipelines.writer import WriteSpec, write_dataframe
from tests.tables import make_table

pytestmark = pytest.mark.spark

ROWS = [(("a", "b")[i % 2], i, f"v{i}") for i in range(400)]
DDL = "pt string, id long, v string"


def _table(wh: Path, **options: str) -> FileStoreTable:
    return make_table(wh, [("pt", "STRING"), ("id", "BIGINT"), ("v", "STRING")],
                      partition_keys=["pt"], primary_keys=["pt", "id"],
                      options={"bucket": "4", **options})


def _data_files(t: FileStoreTable) -> set[str]:
    return {str(p) for p in Path(t.path).rglob("data-*.parquet")}


def _live(t: FileStoreTable) -> set[str]:
    return {f"{s.bucket_path}/{f.file_name}"
            for s in t.new_read_builder().new_scan().plan().splits for f in s.files}


def test_bucket_routing_one_task_per_bucket(spark: Any, tmp_path: Path) -> None:
    t = _table(tmp_path)
    df = spark.createDataFrame(ROWS, DDL).repartition(3)  # each bucket spread over 3 inputs
    res = write_dataframe(df, CatalogSettings(str(tmp_path)), "db.t", spec=WriteSpec("w", 1))
    assert res.snapshot_ids == (1,) and res.rows == 400 and not res.skipped
    splits = t.new_read_builder().new_scan().plan().splits
    assert sorted((s.partition_values, s.bucket) for s in splits) == [
        ((p,), b) for p in ("a", "b") for b in range(4)]
    read = t.new_read_builder().new_read()
    writers = set()
    for s in splits:
        assert len(s.files) == 1  # one TableWrite owned the bucket
        writers.add(s.files[0].file_name.rsplit("-", 1)[0])
        rows = read.read_split(s)
        # Paimon's bucket function (not Spark's hash) put every row here
        expected = bucket_ids([rows.column("id")], [t.schema.field("id").type], 4)
        assert np.array_equal(expected, np.full(rows.num_rows, s.bucket))
    assert len(writers) == 4  # 4 tasks (one per bucket id), each wrote both partitions
    got = sorted((r["pt"], r["id"], r["v"]) for r in t.to_arrow().to_pylist())
    assert got == sorted(ROWS)
    before = _data_files(t)
    again = write_dataframe(df, CatalogSettings(str(tmp_path)), "db.t", spec=WriteSpec("w", 1))
    assert again.skipped and again.snapshot_ids == ()
    assert _data_files(t) == before and t.latest_snapshot().id == 1  # type: ignore[union-attr]


def test_failed_commit_deletes_its_files(spark: Any, tmp_path: Path) -> None:
    t = _table(tmp_path)
    df = spark.createDataFrame(ROWS[:20], DDL)
    with pytest.raises(SchemaError, match="received rows of partition"):
        write_dataframe(df, CatalogSettings(str(tmp_path)), "db.t", mode="overwrite",
                        overwrite_partition={"pt": "a"})
    assert _data_files(t) == set() and t.latest_snapshot() is None


def test_killed_task_is_retried_without_duplicates(spark: Any, tmp_path: Path) -> None:
    # a tiny write buffer: the task flushes data files before it is killed
    t = _table(tmp_path, **{"write-buffer-size": "256 b", "write-only": "true"})
    ups = [(pt, i, f"{v}-x") for pt, i, v in ROWS]

    def kill_first_attempt(partition: int, attempt: int, batches: int) -> None:
        if partition == 0 and attempt == 0 and batches >= 3:
            os._exit(13)  # the Python worker vanishes: no cleanup, no message

    old = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "20")
    try:
        res = write_dataframe(spark.createDataFrame(ups, DDL), CatalogSettings(str(tmp_path)),
                              "db.t", spec=WriteSpec("w", 7),
                              fault_hook=kill_first_attempt)
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", old)
    assert res.snapshot_ids == (1,) and res.rows == 400
    got = sorted((r["pt"], r["id"], r["v"]) for r in t.to_arrow().to_pylist())
    assert got == sorted(ups)  # every row exactly once
    orphans = _data_files(t) - _live(t)
    assert orphans, "the killed attempt left its flushed files behind"
    assert fsck(t).ok
    removed = remove_orphan_files(t, int(time.time() * 1000) + 60_000)
    assert set(removed.paths) == orphans
    assert _data_files(t) == _live(t) and fsck(t).ok
    assert sorted((r["pt"], r["id"], r["v"]) for r in t.to_arrow().to_pylist()) == sorted(ups)
