"""Parquet layout and DataFileMeta of written files."""

from __future__ import annotations

import datetime as dt
import decimal
import os
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_core.datafile.formats import format_options
from paimon_core.datafile.writer import (
    DataFileWriter,
    local_now_millis,
    split_by_size,
)
from paimon_core.errors import StorageError, UnsupportedError
from paimon_core.io.file_io import FileIO
from paimon_core.layout import DataFilePathFactory
from paimon_core.schema_builder import Schema
from paimon_core.spec.binary_row import deserialize_binary_row, serialize_binary_row
from paimon_core.spec.manifest import FileSource
from paimon_core.spec.schema import TableSchema
from paimon_core.spec.stats import EMPTY_ROW, EMPTY_STATS
from paimon_core.types import parse_sql_type
from paimon_core.write.input import conform_input

D = decimal.Decimal

# Paimon type -> (parquet physical type, logical type string prefix or None)
PHYSICAL = [
    ("BOOLEAN", "BOOLEAN", None),
    ("TINYINT", "INT32", "Int(bitWidth=8, isSigned=true)"),
    ("SMALLINT", "INT32", "Int(bitWidth=16, isSigned=true)"),
    ("INT", "INT32", None),
    ("BIGINT", "INT64", None),
    ("FLOAT", "FLOAT", None),
    ("DOUBLE", "DOUBLE", None),
    ("DECIMAL(9, 2)", "INT32", "Decimal(precision=9, scale=2)"),
    ("DECIMAL(18, 4)", "INT64", "Decimal(precision=18, scale=4)"),
    ("DECIMAL(38, 10)", "FIXED_LEN_BYTE_ARRAY", "Decimal(precision=38, scale=10)"),
    ("CHAR(3)", "BYTE_ARRAY", "String"),
    ("VARCHAR(10)", "BYTE_ARRAY", "String"),
    ("STRING", "BYTE_ARRAY", "String"),
    ("BINARY(2)", "BYTE_ARRAY", None),
    ("VARBINARY(10)", "BYTE_ARRAY", None),
    ("BYTES", "BYTE_ARRAY", None),
    ("DATE", "INT32", "Date"),
    ("TIME", "INT32", "Time(isAdjustedToUTC=false, timeUnit=milliseconds)"),
    ("TIMESTAMP(0)", "INT64", "Timestamp(isAdjustedToUTC=false, timeUnit=milliseconds"),
    ("TIMESTAMP(3)", "INT64", "Timestamp(isAdjustedToUTC=false, timeUnit=milliseconds"),
    ("TIMESTAMP(6)", "INT64", "Timestamp(isAdjustedToUTC=false, timeUnit=microseconds"),
    ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "INT64",
     "Timestamp(isAdjustedToUTC=true, timeUnit=milliseconds"),
    ("TIMESTAMP(6) WITH LOCAL TIME ZONE", "INT64",
     "Timestamp(isAdjustedToUTC=true, timeUnit=microseconds"),
]

VALUES: dict[str, list[Any]] = {
    "BOOLEAN": [True, None], "TINYINT": [-128, 127], "SMALLINT": [1, None], "INT": [5, -5],
    "BIGINT": [2**62, None], "FLOAT": [1.5, None], "DOUBLE": [-0.0, 2.5],
    "DECIMAL(9, 2)": [D("1234567.89"), None], "DECIMAL(18, 4)": [D("-1.0001"), D("7")],
    "DECIMAL(38, 10)": [D("1234567890123456789012345678.0123456789"), None],
    "CHAR(3)": ["abc", None], "VARCHAR(10)": ["x", "yy"], "STRING": ["hello world!", ""],
    "BINARY(2)": [b"\x00\x01", None], "VARBINARY(10)": [b"", b"\xff"], "BYTES": [b"b", None],
    "DATE": [dt.date(1969, 12, 31), dt.date(2024, 2, 29)],
    "TIME": [dt.time(23, 59, 59), None],
    "TIMESTAMP(0)": [dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59)],
    "TIMESTAMP(3)": [dt.datetime(2024, 1, 1, 1, 2, 3, 456000), None],
    "TIMESTAMP(6)": [dt.datetime(1900, 1, 1, 0, 0, 0, 1), None],
    "TIMESTAMP(3) WITH LOCAL TIME ZONE": [dt.datetime(2024, 1, 1, tzinfo=dt.UTC), None],
    "TIMESTAMP(6) WITH LOCAL TIME ZONE": [None, dt.datetime(2000, 1, 1, 0, 0, 0, 5, dt.UTC)],
}


def col_name(i: int) -> str:
    return f"c{i}"


def all_types_schema(pk: bool) -> TableSchema:
    cols = [(col_name(i), t) for i, (t, _, _) in enumerate(PHYSICAL)]
    if pk:
        cols = [("id", "INT"), *cols]
        return Schema.of(cols, primary_keys=["id"], options={"bucket": "1"}).to_table_schema()
    return Schema.of(cols).to_table_schema()


def all_types_data(pk: bool) -> pa.Table:
    cols: dict[str, Any] = {}
    if pk:
        cols["id"] = pa.array([1, 2], pa.int32())
    for i, (t, _, _) in enumerate(PHYSICAL):
        from paimon_core.types import to_arrow_type
        cols[col_name(i)] = pa.array(VALUES[t], to_arrow_type(parse_sql_type(t)))
    return pa.table(cols)


def physical_of(path: str) -> dict[str, tuple[str, str]]:
    s = pq.ParquetFile(path).schema
    return {
        s.column(i).name: (s.column(i).physical_type, str(s.column(i).logical_type))
        for i in range(len(s))
    }


def writer(tmp: Path, schema: TableSchema) -> DataFileWriter:
    return DataFileWriter(FileIO(str(tmp)), schema, DataFilePathFactory(schema.file_format))


def test_append_file_physical_types_and_meta(tmp_path: Path) -> None:
    schema = all_types_schema(pk=False)
    data, _ = conform_input(all_types_data(pk=False), schema)
    w = writer(tmp_path, schema)
    before = local_now_millis()
    meta = w.write_append_file(str(tmp_path / "bucket-0"), data, 7)
    path = str(tmp_path / "bucket-0" / meta.file_name)
    phys = physical_of(path)
    for i, (t, ptype, logical) in enumerate(PHYSICAL):
        got_p, got_l = phys[col_name(i)]
        assert got_p == ptype, (t, got_p)
        if logical is not None:
            assert got_l.startswith(logical), (t, got_l)
    # the file reads back to exactly the input
    back = pq.read_table(path)
    for i, (t, _, _) in enumerate(PHYSICAL):
        got = back.column(col_name(i))
        want = data.column(col_name(i))
        assert got.cast(want.type).to_pylist() == want.to_pylist(), t
    assert re.fullmatch(r"data-[0-9a-f-]{36}-0\.parquet", meta.file_name)
    assert meta.file_size == os.path.getsize(path)
    assert meta.row_count == 2
    assert (meta.min_key, meta.max_key, meta.key_stats) == (EMPTY_ROW, EMPTY_ROW, EMPTY_STATS)
    assert (meta.min_sequence_number, meta.max_sequence_number) == (7, 8)
    assert (meta.level, meta.extra_files, meta.delete_row_count) == (0, (), 0)
    assert meta.file_source is FileSource.APPEND and meta.value_stats_cols is None
    assert meta.schema_id == schema.id and meta.embedded_index is None
    assert before - 1000 <= (meta.creation_time or 0) <= local_now_millis() + 1000
    # full-arity value stats, default truncate(16)
    types = [f.type for f in schema.fields]
    assert meta.value_stats.null_counts == tuple(
        sum(v is None for v in VALUES[t]) for t, _, _ in PHYSICAL
    )
    mins = deserialize_binary_row(meta.value_stats.min_values, types)
    maxs = deserialize_binary_row(meta.value_stats.max_values, types)
    by_type = {t: (lo, hi) for (t, _, _), lo, hi in zip(PHYSICAL, mins, maxs)}
    assert by_type["TINYINT"] == (-128, 127)
    assert by_type["DOUBLE"] == (-0.0, 2.5)
    assert by_type["STRING"] == ("", "hello world!")
    assert by_type["DECIMAL(18, 4)"] == (D("-1.0001"), D("7.0000"))
    assert by_type["DATE"] == (dt.date(1969, 12, 31), dt.date(2024, 2, 29))
    assert by_type["TIMESTAMP(6)"] == (dt.datetime(1900, 1, 1, 0, 0, 0, 1),) * 2
    assert by_type["VARBINARY(10)"] == (b"", b"\xff")


def test_pk_file_layout_and_meta(tmp_path: Path) -> None:
    schema = Schema.of(
        [("pt", "STRING"), ("k1", "STRING"), ("k2", "BIGINT"), ("v", "DOUBLE")],
        partition_keys=["pt"], primary_keys=["pt", "k1", "k2"], options={"bucket": "1"},
    ).to_table_schema()
    rows = pa.table({
        "pt": ["p"] * 3, "k1": ["a", "a", "b" * 20], "k2": [1, 2, 0], "v": [1.0, None, 3.0],
        "_SEQUENCE_NUMBER": pa.array([10, 4, 12], pa.int64()),
        "_VALUE_KIND": pa.array([0, 3, 2], pa.int8()),
    })
    w = writer(tmp_path, schema)
    meta = w.write_kv_file(str(tmp_path), rows)
    path = str(tmp_path / meta.file_name)
    f = pq.ParquetFile(path)
    assert f.schema_arrow.names == ["_KEY_k1", "_KEY_k2", "_SEQUENCE_NUMBER", "_VALUE_KIND",
                                    "pt", "k1", "k2", "v"]
    phys = physical_of(path)
    assert phys["_SEQUENCE_NUMBER"][0] == "INT64"
    assert phys["_VALUE_KIND"] == ("INT32", "Int(bitWidth=8, isSigned=true)")
    assert not f.schema_arrow.field("_KEY_k1").nullable
    t = f.read()
    assert t.column("_KEY_k1").to_pylist() == ["a", "a", "b" * 20]
    key_types = [parse_sql_type("STRING NOT NULL"), parse_sql_type("BIGINT NOT NULL")]
    assert meta.min_key == serialize_binary_row(["a", 1], key_types)
    assert meta.max_key == serialize_binary_row(["b" * 20, 0], key_types)
    assert (meta.min_sequence_number, meta.max_sequence_number) == (4, 12)
    assert meta.delete_row_count == 1
    # key columns use truncate(128): the 20-char key is kept whole
    kmin = deserialize_binary_row(meta.key_stats.min_values, key_types)
    kmax = deserialize_binary_row(meta.key_stats.max_values, key_types)
    assert (kmin, kmax, meta.key_stats.null_counts) == (["a", 0], ["b" * 20, 2], (0, 0))
    vtypes = [fl.type for fl in schema.fields]
    vmax = deserialize_binary_row(meta.value_stats.max_values, vtypes)
    assert vmax == ["p", "b" * 20, 2, 3.0]
    assert meta.value_stats.null_counts == (0, 0, 0, 1)
    cl = w.write_kv_file(str(tmp_path), rows, changelog=True)
    assert cl.file_name.startswith("changelog-") and cl.file_name.endswith("-1.parquet")


def test_timestamp9_is_int96(tmp_path: Path) -> None:
    schema = Schema.of([("a", "TIMESTAMP(9)"), ("b", "TIMESTAMP(7) WITH LOCAL TIME ZONE"),
                        ("n", "INT")]).to_table_schema()
    nanos = 1_704_070_923_456_789_123
    data, _ = conform_input(pa.table({
        "a": pa.array([nanos], pa.timestamp("ns")),
        "b": pa.array([nanos - nanos % 100], pa.timestamp("ns", "UTC")),
        "n": [1]}), schema)
    meta = writer(tmp_path, schema).write_append_file(str(tmp_path), data, 0)
    phys = physical_of(str(tmp_path / meta.file_name))
    assert phys["a"][0] == "INT96" and phys["b"][0] == "INT96"
    back = pq.read_table(str(tmp_path / meta.file_name))
    assert back.column("a").cast(pa.int64()).to_pylist() == [nanos]
    stats_types = [f.type for f in schema.fields]
    mins = deserialize_binary_row(meta.value_stats.min_values, stats_types,
                                  exact_timestamps=True)
    assert mins[0] == nanos
    # alone with INT96 leaves, the file keeps pyarrow's ARROW:schema (tests/write/
    # test_timestamp_layout.py: files mixing precisions)
    assert b"ARROW:schema" in (pq.ParquetFile(str(tmp_path / meta.file_name)).metadata.metadata
                               or {})


def test_format_options(tmp_path: Path) -> None:
    s = Schema.of([("a", "INT")], options={"file.compression": "snappy"}).to_table_schema()
    data, _ = conform_input(pa.table({"a": [1, 2]}), s)
    meta = writer(tmp_path, s).write_append_file(str(tmp_path), data, 0)
    md = pq.ParquetFile(str(tmp_path / meta.file_name)).metadata
    assert md.row_group(0).column(0).compression == "SNAPPY"
    s = Schema.of([("a", "INT")]).to_table_schema()
    meta = writer(tmp_path, s).write_append_file(str(tmp_path), data, 0)
    md = pq.ParquetFile(str(tmp_path / meta.file_name)).metadata
    assert md.row_group(0).column(0).compression == "ZSTD"
    with pytest.raises(UnsupportedError):
        format_options(Schema.of([("a", "INT")], options={"file.compression": "lzo"})
                       .to_table_schema())


def test_names_are_unique_and_never_overwritten(tmp_path: Path) -> None:
    pf = DataFilePathFactory()
    names = {pf.new_data_file_name() for _ in range(100)} | {
        pf.new_changelog_file_name() for _ in range(100)}
    assert len(names) == 200
    assert DataFilePathFactory().uuid != pf.uuid
    s = Schema.of([("a", "INT")]).to_table_schema()
    w = writer(tmp_path, s)
    data, _ = conform_input(pa.table({"a": [1]}), s)
    # a file that already has the next name is never overwritten
    nxt = f"data-{w.path_factory.uuid}-0.parquet"
    (tmp_path / nxt).write_bytes(b"precious")
    with pytest.raises(StorageError, match="exists"):
        w.write_append_file(str(tmp_path), data, 0)
    assert (tmp_path / nxt).read_bytes() == b"precious"
    meta = w.write_append_file(str(tmp_path), data, 0)
    assert meta.file_name.endswith("-1.parquet")


def test_memory_filesystem() -> None:
    s = Schema.of([("a", "INT")]).to_table_schema()
    fio = FileIO("memory://wtest")
    w = DataFileWriter(fio, s, DataFilePathFactory())
    data, _ = conform_input(pa.table({"a": [1, 2, 3]}), s)
    meta = w.write_append_file("memory://wtest/t/bucket-0", data, 0)
    path = f"memory://wtest/t/bucket-0/{meta.file_name}"
    assert fio.size(path) == meta.file_size
    assert w.written_paths == [path]


def test_split_by_size() -> None:
    t = pa.table({"a": pa.array(range(1000), pa.int64())})  # 8000 bytes
    parts = split_by_size(t, 3000)
    assert [p.num_rows for p in parts] == [375, 375, 250]
    assert split_by_size(t, 10**6) == [t]
    assert split_by_size(t.slice(0, 0), 10) == []
    assert [p.num_rows for p in split_by_size(t, 1)] == [1] * 1000
