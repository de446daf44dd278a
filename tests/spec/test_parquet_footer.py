"""The Thrift compact codec and the Parquet footer on top of it: real footers (pyarrow's of
many shapes, Java 0.9's golden file) decode and encode back to the same bytes; the timestamp
annotation lands exactly where pyarrow itself would have put it; corrupt footers give typed
errors."""

from __future__ import annotations

import contextlib
import io
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_core.errors import CorruptMetadataError
from paimon_core.spec.parquet_footer import (
    TAIL_SIZE,
    TimestampAnnotation,
    annotate_timestamps,
    decode_file_metadata,
    encode_footer,
    footer_start,
    schema_leaves,
)
from paimon_core.spec.thrift_compact import (
    CType,
    TField,
    ThriftDecodeError,
    TList,
    TMap,
    TStruct,
    decode_struct,
    encode_struct,
)

JAVA_FILE = Path(__file__).parent / "data" / "java09_timestamps.parquet"


def _footer(data: bytes) -> bytes:
    start = footer_start(data[-TAIL_SIZE:], len(data), "f")
    return data[start:-TAIL_SIZE]


def _write(table: pa.Table, **kwargs: Any) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, **kwargs)
    return sink.getvalue()


def _nested_table(n: int) -> pa.Table:
    return pa.table({
        "i": pa.array(range(n), pa.int32()),
        "s": pa.array([f"v{i % 7}" if i % 5 else None for i in range(n)]),
        "d": pa.array([i / 3 for i in range(n)]),
        "b": pa.array([i % 2 == 0 for i in range(n)]),
        "ts": pa.array(range(n), pa.timestamp("us", "UTC")),
        "dec": pa.array([None] * n, pa.decimal128(30, 4)),
        "l": pa.array([[i, None] for i in range(n)], pa.list_(pa.int64())),
        "m": pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
        "r": pa.array([{"x": i, "y": "é中😀"} for i in range(n)],
                      pa.struct([("x", pa.int16()), ("y", pa.string())])),
    })


PYARROW_FILES = {
    "plain": lambda: _write(_nested_table(10)),
    "no stats, snappy": lambda: _write(_nested_table(10), write_statistics=False,
                                       compression="snappy"),
    "many row groups + page index": lambda: _write(_nested_table(5000), row_group_size=700,
                                                   write_page_index=True),
    "int96 + kv metadata": lambda: _write(
        _nested_table(3).replace_schema_metadata({"k": "v" * 300}),
        use_deprecated_int96_timestamps=True),
    "dictionary, v2 pages": lambda: _write(_nested_table(3000), data_page_version="2.0",
                                           use_dictionary=["s", "m"]),
    "no columns": lambda: _write(pa.table({"a": pa.array([], pa.int8())}).drop(["a"])),
}


@pytest.mark.parametrize("name", PYARROW_FILES)
def test_pyarrow_footers_round_trip_byte_for_byte(name: str) -> None:
    data = PYARROW_FILES[name]()
    footer = _footer(data)
    meta, end = decode_struct(footer)
    assert end == len(footer)
    assert encode_struct(meta) == footer
    assert encode_footer(decode_file_metadata(footer, "f")) == data[len(data) - len(footer) - 8:]
    partial = decode_file_metadata(footer, "f", schema_only=True)
    assert [f.id for f in partial.fields] == [1, 2] and partial.rest
    assert partial.list_at(2) == meta.list_at(2)
    assert encode_struct(partial) == footer


def test_java_footer_round_trips_byte_for_byte() -> None:
    data = JAVA_FILE.read_bytes()
    footer = _footer(data)
    meta = decode_file_metadata(footer, "java")
    assert encode_struct(meta) == footer
    assert b"parquet-mr" in meta.value(6)  # type: ignore[operator]


def test_codec_values_round_trip() -> None:
    inner = TStruct([TField(1, CType.BOOL_TRUE, False), TField(3, CType.BYTE, -128)])
    s = TStruct([
        TField(1, CType.BOOL_TRUE, True),
        TField(2, CType.I16, -(2**15)),
        TField(20, CType.I32, 2**31 - 1),  # delta > 15: long field header
        TField(5, CType.I64, -(2**63)),  # decreasing id: long field header
        TField(-3, CType.DOUBLE, -0.5),
        TField(6, CType.BINARY, b"\x00" * 300),
        TField(7, CType.LIST, TList(CType.BOOL_TRUE, [True, False, True])),
        TField(8, CType.SET, TList(CType.I32, list(range(40)), is_set=True)),
        TField(9, CType.MAP, TMap(CType.BINARY, CType.STRUCT, [(b"a", inner), (b"b", TStruct())])),
        TField(10, CType.MAP, TMap(0, 0)),
        TField(11, CType.STRUCT, inner),
        TField(12, CType.LIST, TList(CType.LIST, [TList(CType.I64, [1, -1])])),
    ])
    data = encode_struct(s)
    back, end = decode_struct(data)
    assert end == len(data)
    assert back == s
    assert encode_struct(back) == data
    with pytest.raises(ValueError):
        encode_struct(TStruct([TField(1, CType.I32, 2**31)]))
    with pytest.raises(TypeError):
        encode_struct(TStruct([TField(1, CType.BINARY, "text")]))


def test_partly_decoded_struct() -> None:
    s = TStruct([TField(1, CType.I32, 1), TField(2, CType.BINARY, b"x"),
                 TField(3, CType.STRUCT, TStruct([TField(1, CType.I64, 5)])),
                 TField(30, CType.I32, 3)])
    data = encode_struct(s)
    head, end = decode_struct(data, until=2)
    assert end == len(data) and [f.id for f in head.fields] == [1, 2]
    head.put(1, CType.I32, 10)
    head.put(2, CType.BINARY, b"changed")
    back, _ = decode_struct(encode_struct(head))
    assert back == TStruct([TField(1, CType.I32, 10), TField(2, CType.BINARY, b"changed"),
                            *s.fields[2:]])
    with pytest.raises(ValueError, match="undecoded"):
        head.put(4, CType.I32, 1)
    with pytest.raises(ValueError, match="undecoded"):
        head.remove(2)
    assert decode_struct(data, until=99)[0] == s  # never reached: all decoded


def test_put_keeps_field_order() -> None:
    s = TStruct([TField(1, CType.I32, 1), TField(4, CType.I32, 4), TField(9, CType.I32, 9)])
    s.put(6, CType.I32, 6)
    s.put(10, CType.BOOL_FALSE, False)
    s.put(4, CType.I32, 40)
    assert [(f.id, f.value) for f in s.fields] == [(1, 1), (4, 40), (6, 6), (9, 9), (10, False)]
    assert s.remove(6) and not s.remove(6)


# ---------------------------------------------------------------------------------------------
# the annotation

ANNOTATED = {
    ("ms",): TimestampAnnotation("ms", False),
    ("us_utc",): TimestampAnnotation("us", True),
    ("l", "list", "element"): TimestampAnnotation("us", False),
    ("m", "key_value", "key"): TimestampAnnotation("ms", True),
    ("r", "a"): TimestampAnnotation("ms", False),
}


def _annotation_tables(ts: bool) -> pa.Table:
    """The same values as timestamp columns (``ts``) or as plain int64 beside INT96 ones."""
    def t(unit: str, tz: str | None = None) -> pa.DataType:
        return pa.timestamp(unit, tz) if ts else pa.int64()

    return pa.table({
        "id": pa.array([1, 2, 3], pa.int32()),
        "ms": pa.array([-1, None, 253402300799999], t("ms")),
        "us_utc": pa.array([1, 2, -62135596800000000], t("us", "UTC")),
        "n": pa.array([1, -1, None], pa.int64()),
        "l": pa.array([[1, None], None, []], pa.list_(t("us"))),
        "m": pa.array([[(5, "x")], [], None], pa.map_(t("ms", "UTC"), pa.string())),
        "r": pa.array([{"a": 7, "b": 8}, None, {"a": None, "b": 1}],
                      pa.struct([("a", t("ms")), ("b", pa.timestamp("ns"))])),
    })


def test_annotation_is_what_pyarrow_writes_for_timestamps() -> None:
    native = _write(_annotation_tables(ts=True), use_deprecated_int96_timestamps=False,
                    coerce_timestamps=None)
    plain = _write(_annotation_tables(ts=False), use_deprecated_int96_timestamps=True,
                   store_schema=False)
    meta = decode_file_metadata(_footer(plain), "f", schema_only=True)
    annotate_timestamps(meta, ANNOTATED, "f")
    data = plain[: len(plain) - len(_footer(plain)) - TAIL_SIZE] + encode_footer(meta)
    want = schema_leaves(decode_file_metadata(_footer(native), "n"), "n")
    got = schema_leaves(decode_file_metadata(_footer(data), "f"), "f")
    for leaf in ANNOTATED:
        assert encode_struct(got[leaf]) == encode_struct(want[leaf]), leaf
    assert got[("r", "b")].value(1) == 3  # INT96 left alone
    assert got[("n",)].get(10) is None
    back = pq.read_table(pa.BufferReader(data))
    expect = _annotation_tables(ts=True)
    assert back.schema == expect.schema
    for name in expect.column_names:
        assert back.column(name).to_pylist() == expect.column(name).to_pylist(), name
    # the row groups (offsets, statistics) and all else are untouched: only the schema changed
    before = decode_file_metadata(_footer(plain), "f")
    after = decode_file_metadata(_footer(data), "f")
    assert [f.id for f in before.fields] == [f.id for f in after.fields]
    for f in after.fields:
        assert f.id == 2 or f == before.get(f.id)


@pytest.mark.parametrize("leaves, match", [
    ({("nope",): TimestampAnnotation("ms", False)}, "no leaf 'nope'"),
    ({("id",): TimestampAnnotation("ms", False)}, "'id' is not INT64"),
    ({("r",): TimestampAnnotation("ms", False)}, "no leaf 'r'"),
])
def test_annotation_refuses_other_leaves(leaves: dict[Any, TimestampAnnotation],
                                         match: str) -> None:
    plain = _write(_annotation_tables(ts=False), use_deprecated_int96_timestamps=True)
    meta = decode_file_metadata(_footer(plain), "f")
    with pytest.raises(CorruptMetadataError, match=match):
        annotate_timestamps(meta, leaves, "f")
    annotate_timestamps(meta, {("ms",): TimestampAnnotation("ms", False)}, "f")
    with pytest.raises(CorruptMetadataError, match="already annotated"):
        annotate_timestamps(meta, {("ms",): TimestampAnnotation("ms", False)}, "f")


# ---------------------------------------------------------------------------------------------
# corrupt input


def test_corrupt_tails() -> None:
    data = PYARROW_FILES["plain"]()
    with pytest.raises(CorruptMetadataError, match="PAR1"):
        footer_start(data[-8:-4] + b"PAR2", len(data), "f")
    with pytest.raises(CorruptMetadataError, match="PAR1"):
        footer_start(b"AR1", 3, "f")
    with pytest.raises(CorruptMetadataError, match="does not fit"):
        footer_start((len(data)).to_bytes(4, "little") + b"PAR1", len(data), "f")
    with pytest.raises(CorruptMetadataError, match="does not fit"):
        footer_start(b"\x00\x00\x00\x00PAR1", len(data), "f")


def _small_footer() -> bytes:
    return _footer(_write(pa.table({"a": pa.array([1, None], pa.int32()),
                                    "l": pa.array([["x"], None])})))


def test_truncated_and_padded_footers() -> None:
    footer = _small_footer()
    for n in range(len(footer)):
        with pytest.raises(CorruptMetadataError):
            decode_file_metadata(footer[:n], "f")
    with pytest.raises(CorruptMetadataError, match="ends at byte"):
        decode_file_metadata(footer + b"\x00", "f")


@pytest.mark.parametrize("data, reason", [
    (b"\x1d", "unknown compact type 13"),
    (b"\x15\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", "varint longer"),
    (b"\x15\xff\xff\xff\xff\x1f", "out of range"),  # an I32 field of 2**33
    (b"\x19\xf5\xff\xff\xff\x0f", "container of"),  # a list claiming 4e9 elements
    (b"\x1c" * 100, "nested deeper"),
    (b"\x10", "bad field header"),
    (b"\x18\x05ab", "truncated"),
])
def test_malformed_structs(data: bytes, reason: str) -> None:
    with pytest.raises(ThriftDecodeError, match=reason):
        decode_struct(data)


def test_random_damage_gives_typed_errors_only() -> None:
    footer = _small_footer()
    rng = random.Random(7)
    decoded = 0
    for _ in range(1500):
        b = bytearray(footer)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        try:
            meta = decode_file_metadata(bytes(b), "f")
        except CorruptMetadataError:
            continue
        decoded += 1
        with contextlib.suppress(CorruptMetadataError):
            schema_leaves(meta, "f")
    assert decoded > 0
