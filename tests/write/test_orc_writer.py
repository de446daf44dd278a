"""ORC data files (``file.format=orc``): the file layout, the writer options as Java names
them, and what is refused. Java and pypaimon reading them: tests/interop/test_orc_interop.py."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as paorc
import pytest

from paimon_core.datafile.writer import DataFileWriter
from paimon_core.errors import SchemaError, UnsupportedError
from paimon_core.io.file_io import FileIO
from paimon_core.layout import DataFilePathFactory
from paimon_core.schema_builder import Schema
from paimon_core.spec.schema import TableSchema
from paimon_core.write.input import conform_input


def orc_schema(cols: list[tuple[str, str]], pk: list[str] | None = None,
               **options: str) -> TableSchema:
    return Schema.of(cols, primary_keys=pk or [],
                     options={"file.format": "orc", "bucket": "1" if pk else "-1",
                              **options}).to_table_schema()


def write_data_file(tmp: Path, schema: TableSchema, data: pa.Table) -> Path:
    """One data file of ``data`` in ``schema``'s file format (a primary-key table's file with
    sequence numbers 0.. and +I rows); its path."""
    w = DataFileWriter(FileIO(str(tmp)), schema, DataFilePathFactory(schema.file_format))
    table, _ = conform_input(data, schema)
    if schema.primary_keys:
        n = table.num_rows
        table = table.append_column("_SEQUENCE_NUMBER", pa.array(range(n), pa.int64()))
        table = table.append_column("_VALUE_KIND", pa.array([0] * n, pa.int8()))
        meta = w.write_kv_file(str(tmp), table)
    else:
        meta = w.write_append_file(str(tmp), table, 0)
    assert meta.file_name.endswith("." + schema.file_format)
    return tmp / meta.file_name


def write(tmp: Path, schema: TableSchema, data: pa.Table) -> paorc.ORCFile:
    return paorc.ORCFile(str(write_data_file(tmp, schema, data)))


def test_kv_file_layout_and_types(tmp_path: Path) -> None:
    s = orc_schema([("k", "INT NOT NULL"), ("t", "TIME"), ("ms", "MULTISET<STRING>"),
                    ("ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("ts", "TIMESTAMP(9)"),
                    ("r", "ROW<a TIME, b ARRAY<TIME>>"), ("dec", "DECIMAL(20, 3)")], pk=["k"])
    f = write(tmp_path, s, pa.table({
        "k": pa.array([1, 2], pa.int32()),
        "t": pa.array([dt.time(1, 2, 3), None]),
        "ms": pa.array([[("a", 2)], None], pa.map_(pa.string(), pa.int32())),
        "ltz": pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.UTC), None]),
        "ts": pa.array([dt.datetime(1969, 12, 31, 23, 59, 59), None], pa.timestamp("ns")),
        "r": pa.array([{"a": dt.time(0, 0, 1), "b": [dt.time(0, 0, 2)]}, None]),
        "dec": pa.array([None, None], pa.decimal128(20, 3)),
    }))
    # Java's toOrcType: TIME is int (millis), MULTISET map<element, int>, LTZ the instant type
    want = pa.schema([
        ("_KEY_k", pa.int32()), ("_SEQUENCE_NUMBER", pa.int64()), ("_VALUE_KIND", pa.int8()),
        ("k", pa.int32()), ("t", pa.int32()), ("ms", pa.map_(pa.string(), pa.int32())),
        ("ltz", pa.timestamp("ns", tz="UTC")), ("ts", pa.timestamp("ns")),
        ("r", pa.struct([("a", pa.int32()), ("b", pa.list_(pa.int32()))])),
        ("dec", pa.decimal128(20, 3)),
    ])
    assert f.schema.remove_metadata().equals(want, check_metadata=False), f.schema
    rows = f.read().to_pylist()
    assert rows[0]["t"] == 3723000 and rows[0]["ms"] == [("a", 2)]
    assert rows[0]["r"] == {"a": 1000, "b": [2000]}


def test_options_as_java_names_them(tmp_path: Path) -> None:
    cols = [("a", "INT"), ("s", "STRING")]
    data = pa.table({"a": pa.array(range(50_000), pa.int32()),
                     "s": [f"v{i % 7}-{i * 7919 % 100_003}" for i in range(50_000)]})
    f = write(tmp_path / "d", orc_schema(cols), data)
    assert (f.compression, f.compression_size, f.row_index_stride) == ("ZSTD", 64 << 10, 10000)
    assert f.nstripes == 1
    assert f.file_version == "0.12"  # ORC's default orc.write.format, as Java writes
    # orc.write.format=0.11 (integer RLE v1): the same values
    v11 = write(tmp_path / "v11", orc_schema(cols, **{"orc.write.format": "0.11"}), data)
    assert v11.file_version == "0.11"
    assert v11.read().equals(f.read())
    f = write(tmp_path / "s", orc_schema(cols, **{"file.compression": "snappy"}), data)
    assert f.compression == "SNAPPY"
    f = write(tmp_path / "o", orc_schema(cols, **{"file.compression": "snappy",
                                                 "orc.compress": "LZ4"}), data)
    assert f.compression == "LZ4"  # orc.compress wins over file.compression, as in Java
    f = write(tmp_path / "n", orc_schema(cols, **{"file.compression": "none",
                                                 "orc.compress.size": "262144",
                                                 "orc.row.index.stride": "5000"}), data)
    assert (f.compression, f.compression_size, f.row_index_stride) == (
        "UNCOMPRESSED", 262144, 5000)
    # file.block-size is the stripe size (OrcFileFormat.getOrcProperties)
    f = write(tmp_path / "b", orc_schema(cols, **{"file.block-size": "32 kb",
                                                 "orc.write.batch-size": "512"}), data)
    assert f.nstripes > 1
    assert f.read().equals(paorc.ORCFile(str(next((tmp_path / "d").glob("*.orc")))).read())
    f = write(tmp_path / "bf", orc_schema(cols, **{"orc.bloom.filter.columns": "s"}), data)
    assert f.read().column("s").to_pylist()[:2] == ["v0-0", "v1-7919"]


@pytest.mark.parametrize(("options", "error", "names"), [
    ({"file.compression": "lzo"}, UnsupportedError, "file.compression='lzo'"),
    ({"file.compression": "gzip"}, UnsupportedError, "file.compression='gzip'"),
    ({"orc.compress": "brotli"}, UnsupportedError, "orc.compress='brotli'"),
    ({"orc.use.zerocopy": "true"}, UnsupportedError, "orc.use.zerocopy"),
    ({"orc.stripe.size": "64mb"}, SchemaError, "orc.stripe.size"),
    ({"orc.write.format": "0.13"}, SchemaError, "orc.write.format='0.13'"),
    ({"orc.bloom.filter.columns": "nope"}, SchemaError, "'nope'"),
    ({"orc.dictionary.key.threshold": "2"}, SchemaError, "orc.dictionary.key.threshold"),
    ({"file.format.per.level": "0:avro"}, UnsupportedError, "file.format.per.level"),
    ({"file.compression.per.level": "0:lz4"}, UnsupportedError, "file.compression.per.level"),
])
def test_options_refused_with_their_name(tmp_path: Path, options: dict[str, str],
                                         error: type[Exception], names: str) -> None:
    with pytest.raises(error, match=names.replace("(", r"\(").replace(".", r"\.")):
        write(tmp_path, orc_schema([("a", "INT")], **options), pa.table({"a": [1]}))


def test_timestamps_java_cannot_read_are_refused(tmp_path: Path) -> None:
    s = orc_schema([("ts", "TIMESTAMP(9)"), ("r", "ROW<x ARRAY<TIMESTAMP(6)>>")])
    ok = pa.table({
        "ts": pa.array([-1_000_000, 1, None], pa.timestamp("ns")),  # whole ms before 1970
        "r": pa.array([{"x": [dt.datetime(1969, 12, 31, 23, 59, 59, 999000)]}, None, None]),
    })
    assert write(tmp_path / "ok", s, ok).read().column("ts").to_pylist()[2] is None
    bad = ok.set_column(0, "ts", pa.array([None, -1, 5], pa.timestamp("ns")))
    with pytest.raises(UnsupportedError, match=r"column 'ts': timestamp 1969-12-31 23:59:59"):
        write(tmp_path / "bad", s, bad)
    nested = ok.set_column(1, "r", pa.array(
        [None, {"x": [None, dt.datetime(1900, 1, 1, 0, 0, 0, 1)]}, None]))
    with pytest.raises(UnsupportedError, match=r"column 'r\.x': timestamp 1900-01-01"):
        write(tmp_path / "nested", s, nested)


# ALTER file.format parquet -> orc -> avro in one table: tests/write/test_avro_writer.py
