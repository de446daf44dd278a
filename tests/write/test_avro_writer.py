"""Avro data files (``file.format=avro``): the schema Java 0.9 writes, the bytes of each
value (against fastavro's own encoder and Java's ``BigInteger.toByteArray`` for decimals),
the codec options as Java names them, and what is refused. Java and pypaimon reading our
files: tests/interop/test_avro_interop.py."""

from __future__ import annotations

import datetime as dt
import io
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_core.datafile.avro_encode import encode_records
from paimon_core.datafile.avro_layout import AvroLayout, AvroOptions
from paimon_core.errors import SchemaError, UnsupportedError
from paimon_core.schema_builder import Schema
from paimon_core.spec.schema import TableSchema
from paimon_core.types import parse_sql_type, to_arrow_type
from tests.interop.test_write_interop import cli, cli_ok
from tests.profiles import examples
from tests.write.test_orc_writer import write_data_file


def avro_schema(cols: list[tuple[str, str]], pk: list[str] | None = None,
                **options: str) -> TableSchema:
    return Schema.of(cols, primary_keys=pk or [],
                     options={"file.format": "avro", "bucket": "1" if pk else "-1",
                              **options}).to_table_schema()


def read(path: Path) -> tuple[Any, str, list[dict[str, Any]]]:
    with open(path, "rb") as fh:
        r = fastavro.reader(fh)
        return r.writer_schema, r.codec, list(r)


NULLABLE = "default"


def test_kv_file_schema_is_javas(tmp_path: Path) -> None:
    s = avro_schema([("k", "INT NOT NULL"), ("t", "TIME"), ("ms", "MULTISET<STRING>"),
                     ("mi", "MAP<INT NOT NULL, STRING>"),
                     ("ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("ts", "TIMESTAMP(3)"),
                     ("r", "ROW<a TIME, b ARRAY<TINYINT>>"), ("dec", "DECIMAL(20, 3)")],
                    pk=["k"])
    path = write_data_file(tmp_path, s, pa.table({
        "k": pa.array([1], pa.int32()), "t": pa.array([dt.time(1, 2, 3)]),
        "ms": pa.array([[("a", 2)]], pa.map_(pa.string(), pa.int32())),
        "mi": pa.array([[(7, None)]], pa.map_(pa.int32(), pa.string())),
        "ltz": pa.array([dt.datetime(2024, 1, 1, 0, 0, 0, 1, tzinfo=dt.UTC)]),
        "ts": pa.array([dt.datetime(1969, 12, 31, 23, 59, 59, 999000)]),
        "r": pa.array([{"a": dt.time(0, 0, 1), "b": [-1, None]}]),
        "dec": pa.array([Decimal("-0.001")], pa.decimal128(20, 3)),
    }))
    schema, codec, rows = read(path)
    rec = "org.apache.paimon.avro.generated.record"

    def opt(t: Any, name: str) -> dict[str, Any]:
        return {"name": name, "type": ["null", t], NULLABLE: None}

    time_ms = {"type": "int", "logicalType": "time-millis"}
    # AvroSchemaConverter: nested records named <parent>_<field>, non-string map keys as an
    # array of {key, value} records, MULTISET a map of nullable ints
    assert schema == {"type": "record", "name": rec, "fields": [
        {"name": "_KEY_k", "type": "int"}, {"name": "_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_VALUE_KIND", "type": "int"}, {"name": "k", "type": "int"},
        opt(time_ms, "t"), opt({"type": "map", "values": ["null", "int"]}, "ms"),
        opt({"type": "array", "logicalType": "map", "items": {
            "type": "record", "name": f"{rec}_mi", "fields": [
                {"name": "key", "type": "int"}, opt("string", "value")]}}, "mi"),
        opt({"type": "long", "logicalType": "local-timestamp-micros"}, "ltz"),
        opt({"type": "long", "logicalType": "timestamp-millis"}, "ts"),
        opt({"type": "record", "name": f"{rec}_r", "fields": [
            opt(time_ms, "a"), opt({"type": "array", "items": ["null", "int"]}, "b")]}, "r"),
        opt({"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 3}, "dec"),
    ]}
    assert codec == "zstandard"  # file.compression=zstd, Java 0.9's default
    assert rows == [{
        "_KEY_k": 1, "_SEQUENCE_NUMBER": 0, "_VALUE_KIND": 0, "k": 1, "t": dt.time(1, 2, 3),
        "ms": {"a": 2}, "mi": [{"key": 7, "value": None}],
        "ltz": dt.datetime(2024, 1, 1, 0, 0, 0, 1),
        "ts": dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=dt.UTC),
        "r": {"a": dt.time(0, 0, 1), "b": [-1, None]}, "dec": Decimal("-0.001")}]


# (type, values): each row's bytes equal fastavro's schemaless encoding of the same value
ENCODED: list[tuple[str, list[Any]]] = [
    ("BIGINT", [0, -1, 1, 63, -64, 64, 2**31, -2**55, 2**56, 2**62, 2**63 - 1, -2**63, None]),
    ("INT NOT NULL", [0, -2**31, 2**31 - 1, 300]),
    ("SMALLINT", [-32768, None, 5]), ("TINYINT", [-128, 127, None]),
    ("DOUBLE", [1.5, -0.0, 1e300, None]), ("FLOAT", [0.25, None]),
    ("BOOLEAN", [True, False, None]),
    ("STRING", ["", "héllo", None, "x" * 47, "y" * 48]),
    ("STRING", ["z" * 49, None, "", "long " * 40]),
    ("STRING", ["", None, ""]),  # nothing but empty strings
    ("ARRAY<ROW<d DECIMAL(38, 10), t TIME, m MULTISET<INT NOT NULL>>>",
     [[{"d": Decimal("-1.5"), "t": dt.time(0, 0, 1), "m": [(2, 3)]}, None], None, []]),
    ("BYTES", [b"", b"\x00\xff", None]),
    ("DATE", [dt.date(1900, 1, 1), dt.date(2024, 2, 29), None]),
    ("TIMESTAMP(6)", [dt.datetime(1969, 12, 31, 23, 59, 59, 999999), None]),
    ("ARRAY<STRING>", [["a", None, ""], [], None, ["b" * 60]]),
    ("ARRAY<ARRAY<INT NOT NULL>>", [[[1, 2], []], [], None, [[3]]]),
    ("MAP<STRING, BIGINT>", [[("a", 1), ("b", None)], [], None]),
    ("ROW<x INT NOT NULL, y STRING, z ARRAY<DOUBLE>>",
     [{"x": 1, "y": None, "z": [1.0, None]}, None, {"x": -5, "y": "s", "z": None}]),
]


def _python(value: Any, t: pa.DataType) -> Any:
    """A pyarrow value as fastavro's writer takes it (string-keyed maps as dicts, timestamps
    aware)."""
    if value is None:
        return None
    if pa.types.is_map(t):
        if pa.types.is_string(t.key_type):
            return {k: _python(v, t.item_type) for k, v in value}
        # a non-string key: Java's array of {key, value} records
        return [{"key": _python(k, t.key_type), "value": _python(v, t.item_type)}
                for k, v in value]
    if pa.types.is_list(t):
        return [_python(v, t.value_type) for v in value]
    if pa.types.is_struct(t):
        return {f.name: _python(value[f.name], f.type) for f in t}
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=dt.UTC)
    return value


@pytest.mark.parametrize(("type_", "values"), ENCODED)
def test_value_bytes_equal_fastavros_encoding(type_: str, values: list[Any]) -> None:
    t = parse_sql_type(type_)
    layout = AvroLayout.of([("c", t, t.nullable)], AvroOptions())
    arr = pa.array(values, layout.schema.field("c").type)
    table = pa.table({"c": arr})
    for piece in (table, table.slice(1)):  # a slice too (array offsets)
        records = encode_records(piece, layout.types).to_pylist()
        parsed = fastavro.parse_schema(layout.avro)
        for i, value in enumerate(piece.column("c").to_pylist()):
            want = io.BytesIO()
            fastavro.schemaless_writer(want, parsed, {"c": _python(value, arr.type)})
            assert records[i] == want.getvalue(), (type_, value)


def test_decimals_are_javas_minimal_twos_complement() -> None:
    t = parse_sql_type("DECIMAL(38, 0)")
    layout = AvroLayout.of([("d", t, False)], AvroOptions())
    values = [0, 127, 128, -1, -128, -129, 255, 2**63, -(10**38 - 1)]
    arr = pa.array([Decimal(v) for v in values], pa.decimal128(38, 0))
    records = encode_records(pa.table({"d": arr}), layout.types).to_pylist()
    for v, rec in zip(values, records):
        n = max(1, (v.bit_length() + 8) // 8) if v >= 0 else (
            (~v).bit_length() + 8) // 8  # BigInteger.toByteArray: bitLength() / 8 + 1
        want = v.to_bytes(n, "big", signed=True)
        assert rec == bytes([2 * len(want)]) + want, v
    assert records[:6] == [b"\x02\x00", b"\x02\x7f", b"\x04\x00\x80", b"\x02\xff",
                           b"\x02\x80", b"\x04\xff\x7f"]


@pytest.mark.parametrize(("options", "codec"), [
    ({}, "zstandard"),
    ({"file.compression": "snappy", "avro.codec": "deflate"}, "deflate"),
    ({"avro.codec": "null"}, "null"),
    ({"avro.codec": "bzip2"}, "bzip2"),
    ({"avro.codec": "ZSTANDARD", "file.compression.zstd-level": "9"}, "zstandard"),
])
def test_codec_as_java_names_it(tmp_path: Path, options: dict[str, str], codec: str) -> None:
    n = 70_000  # more than one block and one encoding chunk
    data = pa.table({"a": pa.array(range(n), pa.int32()),
                     "s": [f"v{i % 7}-{i * 7919 % 100_003}" if i % 5 else None
                           for i in range(n)]})
    _, got, rows = read(write_data_file(tmp_path, avro_schema([("a", "INT"), ("s", "STRING")],
                                                    **options), data))
    assert got == codec
    assert rows == data.to_pylist()


@pytest.mark.parametrize(("options", "cols", "error", "names"), [
    ({"avro.codec": "zstd"}, None, SchemaError, "avro.codec='zstd'"),
    # codecs Java 0.9's bundle cannot read (tests/interop/test_avro_interop.py)
    ({"avro.codec": "snappy"}, None, UnsupportedError, "avro.codec='snappy'"),
    ({"avro.codec": "xz"}, None, UnsupportedError, "avro.codec='xz'"),
    # Java's choice for any file.compression but zstd is snappy
    ({"file.compression": "lz4"}, None, UnsupportedError, "file.compression='lz4'"),
    ({"avro.block-size": "1"}, None, UnsupportedError, "avro.block-size"),
    ({"avro.row-name-mapping": "oops"}, None, SchemaError, "avro.row-name-mapping"),
    ({}, [("ts", "TIMESTAMP(9)")], UnsupportedError, "column 'ts'"),
    ({}, [("t", "TIME(6)")], UnsupportedError, "column 't'"),
    ({}, [("my-col", "INT")], UnsupportedError, "'my-col'"),
])
def test_refused_with_their_name(tmp_path: Path, options: dict[str, str],
                                 cols: list[tuple[str, str]] | None, error: type[Exception],
                                 names: str) -> None:
    data = pa.table({n: pa.array([None], to_arrow_type(parse_sql_type(t)))
                     for n, t in (cols or [("a", "INT")])})
    with pytest.raises(error, match=names.replace("(", r"\(").replace(".", r"\.")):
        # types Avro cannot hold are refused with the schema, the rest by the writer
        write_data_file(tmp_path, avro_schema(cols or [("a", "INT")], **options), data)


def test_row_name_mapping_renames_records(tmp_path: Path) -> None:
    rec = "org.apache.paimon.avro.generated.record"
    # Java maps a name, then derives the nested ones from the mapped name (top_r)
    s = avro_schema([("r", "ROW<a INT>")],
                    **{"avro.row-name-mapping": f"{rec}:top,{rec}_r:unused,top_r:inner"})
    schema, _, rows = read(write_data_file(tmp_path, s, pa.table({"r": [{"a": 1}]})))
    assert schema["name"] == "top"
    assert schema["fields"][0]["type"][1]["name"] == "inner"
    assert rows == [{"r": {"a": 1}}]


def test_alter_to_avro_writes_avro_beside_parquet_and_orc(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"fields": [{"name": "k", "type": "INT NOT NULL"},
                                             {"name": "v", "type": "STRING"}],
                                  "primary_keys": ["k"], "options": {"bucket": "1"}}))
    rows = tmp_path / "r.jsonl"
    table = ["--warehouse", wh, "--table", "db.t"]
    cli_ok(["create", *table, "--schema", str(schema)])
    for fmt, lines in (("parquet", '{"k": 1, "v": "parquet"}\n{"k": 2, "v": "parquet"}\n'),
                       ("orc", '{"k": 2, "v": "orc"}\n{"k": 3, "v": "orc"}\n'),
                       ("avro", '{"k": 3, "v": "avro"}\n{"k": 4, "v": "avro"}\n')):
        if fmt != "parquet":
            cli_ok(["alter", *table, "--set-option", f"file.format={fmt}"])
        rows.write_text(lines)
        cli_ok(["write", *table, "--input", str(rows)])
    files = sorted(p.suffix for p in Path(wh, "db.db", "t", "bucket-0").iterdir())
    assert files == [".avro", ".orc", ".parquet"]
    want = ['{"k":1,"v":"parquet"}', '{"k":2,"v":"orc"}', '{"k":3,"v":"avro"}',
            '{"k":4,"v":"avro"}']
    assert cli_ok(["read", *table]) == want
    cli_ok(["compact", *table])
    files = sorted(p.suffix for p in Path(wh, "db.db", "t", "bucket-0").iterdir())
    assert ".avro" in files
    assert cli_ok(["read", *table]) == want


def test_create_and_alter_refuse_types_avro_cannot_hold(tmp_path: Path) -> None:
    """Java's SchemaValidation calls ``AvroFileFormat.validateDataFields`` on create and
    ALTER: a TIMESTAMP(9) column and file.format=avro do not go together."""
    wh = str(tmp_path / "wh")
    fields = [{"name": "k", "type": "INT"}, {"name": "ts", "type": "TIMESTAMP(9)"}]
    for name, options in (("a", {"file.format": "avro"}), ("p", {})):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"fields": fields, "options": {"bucket": "-1", **options}}))
        rc, _, err = cli(["create", "--warehouse", wh, "--table", f"db.{name}",
                          "--schema", str(path)])
        assert (rc == 0) == (name == "p"), err
    rc, _, err = cli(["alter", "--warehouse", wh, "--table", "db.p",
                      "--set-option", "file.format=avro"])
    assert rc != 0 and "column 'ts': TIMESTAMP(9) has no Avro type" in err


# several columns in one record, so that each piece starts at every byte offset of the
# encoder's 8-byte words and straddles them: ints of every varint length (1-10 bytes),
# strings of 0-48 bytes (multi-byte UTF-8 too), floats, booleans, nulls anywhere
_RECORD_COLUMNS = [("i", "BIGINT"), ("b", "BOOLEAN"), ("s", "STRING"), ("n", "INT NOT NULL"),
                   ("d", "DOUBLE"), ("f", "FLOAT"), ("t", "STRING NOT NULL"),
                   ("l", "BIGINT NOT NULL")]
_varint_ints = st.one_of(*(st.integers(-(2 ** (7 * k)), 2 ** (7 * k)) for k in range(1, 10)),
                         st.integers(-(2**63), 2**63 - 1))
_texts = st.text(alphabet=st.sampled_from("aé€😀"), max_size=12).filter(
    lambda x: len(x.encode()) <= 48)
_row = st.fixed_dictionaries({
    "i": st.none() | _varint_ints, "b": st.none() | st.booleans(), "s": st.none() | _texts,
    "n": st.integers(-(2**31), 2**31 - 1), "d": st.none() | st.floats(allow_nan=False),
    "f": st.none() | st.floats(width=32, allow_nan=False), "t": _texts, "l": _varint_ints})


@settings(max_examples=examples(50))
@given(rows=st.lists(_row, min_size=1, max_size=40), start=st.integers(0, 3),
       same=st.booleans())
def test_records_equal_fastavros_encoding(rows: list[dict[str, Any]], start: int,
                                          same: bool) -> None:
    if same:  # columns of one value (as a partition column in its files)
        rows = [{**r, "s": rows[0]["s"], "t": rows[0]["t"], "l": rows[0]["l"]} for r in rows]
    types = [parse_sql_type(t) for _, t in _RECORD_COLUMNS]
    layout = AvroLayout.of([(n, t, t.nullable) for (n, _), t in zip(_RECORD_COLUMNS, types)],
                           AvroOptions())
    table = pa.Table.from_pylist(rows, schema=layout.schema).slice(min(start, len(rows) - 1))
    parsed = fastavro.parse_schema(layout.avro)
    records = encode_records(table, layout.types).to_pylist()
    for got, row in zip(records, table.to_pylist(), strict=True):
        want = io.BytesIO()
        fastavro.schemaless_writer(want, parsed, row)
        assert got == want.getvalue(), row
