"""``table.inspect``: hand-written expectations on small tables (the Java comparison is
``tests/interop/test_inspect_interop.py``)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.consumer import Consumer, ConsumerManager
from paimon_core.inspect import (
    FILES_SCHEMA,
    SNAPSHOTS_SCHEMA,
    SYSTEM_TABLES,
    split_system_table,
)
from paimon_core.inspect_text import java_text
from paimon_core.schema_builder import Schema
from paimon_core.schema_change import AddColumn
from paimon_core.table import FileStoreTable
from paimon_core.types import parse_sql_type


def _write(table: FileStoreTable, rows: dict[str, list[Any]], delete: bool = False) -> None:
    w = table.new_write("u")
    if delete:
        w.delete_arrow(pa.table(rows))
    else:
        w.write_arrow(pa.table(rows))
    table.new_commit(w.commit_user).commit(w.prepare_commit())


@pytest.fixture
def pk(tmp_path: Path) -> FileStoreTable:
    """Snapshots: 1 APPEND (3 rows), 2 APPEND (1 update), 3 APPEND (1 delete), 4 COMPACT of
    dt=a, 5 APPEND into dt=b."""
    cat = FileSystemCatalog(str(tmp_path))
    t = cat.create_table("db.t", Schema.of(
        [("dt", "STRING"), ("id", "INT"), ("v", "STRING")],
        partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "1"}))
    _write(t, {"dt": ["a", "a", "b"], "id": [1, 2, 3], "v": ["x", "y", "z"]})
    _write(t, {"dt": ["a"], "id": [1], "v": ["x2"]})
    _write(t, {"dt": ["a"], "id": [2]}, delete=True)
    t.compact([{"dt": "a"}])
    _write(t, {"dt": ["b"], "id": [4], "v": [None]})
    return t


def test_snapshots(pk: FileStoreTable) -> None:
    s = pk.inspect.snapshots()
    assert s.schema == SNAPSHOTS_SCHEMA
    assert s.column("snapshot_id").to_pylist() == [1, 2, 3, 4, 5]
    assert s.column("commit_kind").to_pylist() == ["APPEND"] * 3 + ["COMPACT", "APPEND"]
    assert s.column("delta_record_count").to_pylist() == [3, 1, 1, -3, 1]
    assert s.column("total_record_count").to_pylist() == [3, 4, 5, 2, 3]
    first = pk.snapshot_manager.snapshot(1)
    assert s.column("commit_time")[0].as_py() == dt.datetime.fromtimestamp(
        first.time_millis / 1000, dt.UTC).replace(tzinfo=None)


def test_files_levels_keys_and_stats(pk: FileStoreTable) -> None:
    f = pk.inspect.files()
    assert f.schema == FILES_SCHEMA
    rows = f.to_pylist()
    assert [(r["partition"], r["level"], r["record_count"]) for r in rows] == [
        ("[a]", 5, 1), ("[b]", 0, 3 - 2), ("[b]", 0, 1)]
    a = rows[0]
    assert (a["min_key"], a["max_key"]) == ("[1]", "[1]")
    assert a["null_value_counts"] == "{dt=0, id=0, v=0}"
    assert (a["min_value_stats"], a["max_value_stats"]) == ("{dt=a, id=1, v=x2}",) * 2
    assert a["file_format"] == "parquet" and a["file_path"].startswith("data-")
    assert rows[2]["null_value_counts"] == "{dt=0, id=0, v=1}"
    assert rows[2]["min_value_stats"] == "{dt=b, id=4, v=null}"


def test_files_time_travel(pk: FileStoreTable) -> None:
    at2 = pk.inspect.files(snapshot_id=2)
    assert sorted(zip(at2.column("partition").to_pylist(), at2.column("level").to_pylist(),
                      at2.column("record_count").to_pylist())) == [
        ("[a]", 0, 1), ("[a]", 0, 2), ("[b]", 0, 1)]
    pk.create_tag("two", 2)
    assert pk.inspect.files(tag="two").equals(at2)


def test_partitions_and_buckets(pk: FileStoreTable) -> None:
    p = pk.inspect.partitions().to_pylist()
    assert [(r["partition"], r["record_count"], r["file_count"]) for r in p] == [
        ("[a]", 1, 1), ("[b]", 2, 2)]
    b = pk.inspect.buckets().to_pylist()
    assert [(r["partition"], r["bucket"], r["file_count"], r["sorted_runs"], r["max_level"])
            for r in b] == [("[a]", 0, 1, 1, 5), ("[b]", 0, 2, 2, 0)]
    at3 = pk.inspect.buckets(snapshot_id=3).to_pylist()
    assert [(r["partition"], r["sorted_runs"]) for r in at3] == [("[a]", 3), ("[b]", 1)]
    files = pk.inspect.files()
    assert sum(r["file_size_in_bytes"] for r in b) == sum(
        files.column("file_size_in_bytes").to_pylist())


def test_manifests(pk: FileStoreTable) -> None:
    m = pk.inspect.manifests(snapshot_id=1)
    assert m.num_rows == 1 and m.column("num_added_files").to_pylist() == [2]
    latest = pk.inspect.manifests()
    assert sum(latest.column("num_added_files").to_pylist()) - sum(
        latest.column("num_deleted_files").to_pylist()) == pk.inspect.files().num_rows


def test_audit_log_and_ro(pk: FileStoreTable) -> None:
    audit = pk.inspect.audit_log(snapshot_id=3)
    assert audit.column_names == ["rowkind", "dt", "id", "v"]
    assert sorted(map(tuple, (r.values() for r in audit.to_pylist()))) == [
        ("+I", "a", 1, "x2"), ("+I", "b", 3, "z"), ("-D", "a", 2, None)]
    # read-optimized: only the compacted (top-level) files, so dt=b is not seen yet
    assert pk.inspect.ro().to_pylist() == [{"dt": "a", "id": 1, "v": "x2"}]
    assert pk.inspect.ro(snapshot_id=3).num_rows == 0


def test_schemas_options_tags_consumers(pk: FileStoreTable) -> None:
    pk.alter([AddColumn("n", "BIGINT")])
    s = pk.inspect.schemas().to_pylist()
    assert [r["schema_id"] for r in s] == [0, 1]
    assert s[1]["fields"].endswith('{"id":3,"name":"n","type":"BIGINT"}]')
    assert (s[0]["partition_keys"], s[0]["primary_keys"], s[0]["options"]) == (
        '["dt"]', '["dt","id"]', '{"bucket":"1"}')
    assert pk.inspect.options().to_pylist() == [{"key": "bucket", "value": "1"}]
    pk.create_tag("b", 1, time_retained=dt.timedelta(hours=25, seconds=1.5))
    pk.create_tag("a", 3)
    tags = pk.inspect.tags().to_pylist()
    assert [(t["tag_name"], t["snapshot_id"], t["record_count"], t["time_retained"])
            for t in tags] == [("a", 3, 5, None), ("b", 1, 3, "PT25H1.5S")]
    assert tags[0]["create_time"] is None and tags[1]["create_time"] is not None
    ConsumerManager(pk.file_io, pk.path).reset_consumer("etl", Consumer(next_snapshot=4))
    assert pk.inspect.consumers().to_pylist() == [{"consumer_id": "etl",
                                                   "next_snapshot_id": 4}]


def test_empty_table(tmp_path: Path) -> None:
    t = FileSystemCatalog(str(tmp_path)).create_table(
        "db.e", Schema.of([("id", "INT"), ("v", "STRING")]))
    for name in SYSTEM_TABLES:
        out = t.inspect.system_table(name)
        assert out.num_rows == (1 if name == "schemas" else 0), name
    assert t.inspect.audit_log().column_names == ["rowkind", "id", "v"]


def test_append_table_files(tmp_path: Path) -> None:
    t = FileSystemCatalog(str(tmp_path)).create_table(
        "db.ap", Schema.of([("id", "INT"), ("d", "DATE"), ("x", "DOUBLE")]))
    _write(t, {"id": [1, 2], "d": [dt.date(1970, 1, 2), None], "x": [1e10, 0.5]})
    (row,) = t.inspect.files().to_pylist()
    assert row["partition"] == "[]" and row["min_key"] is None
    assert row["min_value_stats"] == "{d=1, id=1, x=0.5}"
    assert row["max_value_stats"] == "{d=1, id=2, x=1.0E10}"
    assert t.inspect.buckets().column("sorted_runs").to_pylist() == [1]


def test_system_table_names() -> None:
    assert split_system_table("t$files") == ("t", "files")
    assert split_system_table("t$Snapshots") == ("t", "snapshots")
    assert split_system_table("t") == ("t", None)
    with pytest.raises(ValueError, match="unknown system table"):
        split_system_table("t$nope")


def test_no_time_travel_where_java_has_none(pk: FileStoreTable) -> None:
    with pytest.raises(ValueError, match="no time travel"):
        pk.inspect.system_table("snapshots", snapshot_id=1)


@pytest.mark.parametrize(("value", "sql", "text"), [
    (None, "INT", "null"), (True, "BOOLEAN", "true"), (1.0, "DOUBLE", "1.0"),
    (1e-4, "DOUBLE", "1.0E-4"), (-2.5e7, "DOUBLE", "-2.5E7"), (0.1, "FLOAT", "0.1"),
    (Decimal("0E-10"), "DECIMAL(20, 10)", "0.0000000000"),
    (dt.date(1969, 12, 31), "DATE", "-1"),
    (dt.datetime(1, 1, 1, 0, 0, 0, 734000), "TIMESTAMP(3)", "0001-01-01T00:00:00.734"),
    (dt.datetime(2024, 5, 6, 7, 8), "TIMESTAMP(6)", "2024-05-06T07:08"),
    (dt.datetime(2024, 5, 6, 7, 8, 9, 123456), "TIMESTAMP(6)", "2024-05-06T07:08:09.123456"),
])
def test_java_text(value: Any, sql: str, text: str) -> None:
    assert java_text(value, parse_sql_type(sql)) == text


def test_filters(pk: FileStoreTable) -> None:
    b = pk.inspect.files(partition={"dt": "b"})
    assert set(b.column("partition").to_pylist()) == {"[b]"} and b.num_rows == 2
    assert pk.inspect.files(bucket=1).num_rows == 0
    assert pk.inspect.buckets(partition={"dt": "a"}, bucket=0).column(
        "sorted_runs").to_pylist() == [1]
    assert pk.inspect.partitions(partition={"dt": "a"}).column("partition").to_pylist() == [
        "[a]"]


def test_delta_files(pk: FileStoreTable) -> None:
    d1 = pk.inspect.delta_files(1).to_pylist()
    assert sorted((r["kind"], r["partition"], r["record_count"]) for r in d1) == [
        ("ADD", "[a]", 2), ("ADD", "[b]", 1)]
    d3 = pk.inspect.delta_files(3).to_pylist()
    assert [(r["kind"], r["record_count"], r["delete_row_count"]) for r in d3] == [
        ("ADD", 1, 1)]
    compact = pk.inspect.delta_files(4)
    kinds = compact.column("kind").to_pylist()
    assert kinds.count("DELETE") == 3 and kinds.count("ADD") == 1
    assert compact.filter(pc.equal(compact.column("kind"), "ADD")).column(
        "level").to_pylist() == [5]
