"""BinaryRow codec: the worked examples of paimon-format.md §5.3, Java's canonical null forms,
golden rows produced by Paimon 0.9 Java (nested types), and hypothesis round trips."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import struct
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_core.bucket import hash_binary_row
from paimon_core.errors import CorruptMetadataError, SchemaError, UnsupportedError
from paimon_core.spec.binary_row import (
    EMPTY_ROW,
    EMPTY_ROW_SERIALIZED,
    binary_row_arity,
    decode_binary_row,
    deserialize_binary_row,
    encode_binary_row,
    fixed_part_size,
    null_bits_size,
    serialize_binary_row,
    timestamp_to_millis_nanos,
)
from paimon_core.types import AtomicType, DataType, TypeRoot, parse_sql_type
from tests.profiles import examples

T = parse_sql_type
UTC = dt.UTC

# ---------------------------------------------------------------------------------------------
# paimon-format.md §5.3


def test_worked_example_int_string_null() -> None:
    types = [T("INT"), T("STRING"), T("BIGINT")]
    row = encode_binary_row([5, "abc", None], types)
    assert row.hex() == (
        "0004000000000000" "0500000000000000" "6162630000000083" "0000000000000000"
    )
    assert serialize_binary_row([5, "abc", None], types) == bytes.fromhex("00000003") + row
    assert deserialize_binary_row(bytes.fromhex("00000003") + row, types) == [5, "abc", None]


def test_worked_example_long_string() -> None:
    row = encode_binary_row(["hello world!"], [T("STRING")])
    assert row.hex() == (
        "0000000000000000" "0c00000010000000" "68656c6c6f20776f" "726c642100000000"
    )
    assert decode_binary_row(row, [T("STRING")]) == ["hello world!"]


def test_worked_example_partition_as_in_manifest() -> None:
    expected = "00000001" "0000000000000000" "0a00000010000000" "323032342d30312d3031000000000000"
    assert serialize_binary_row(["2024-01-01"], [T("STRING")]).hex() == expected
    assert deserialize_binary_row(bytes.fromhex(expected), [T("STRING")]) == ["2024-01-01"]


def test_worked_example_timestamp6() -> None:
    expected = "00000001" "0000000000000000" "080a0c0010000000" "c0c48ac28c010000"
    value = dt.datetime(2024, 1, 1, 1, 2, 3, 456789)
    assert serialize_binary_row([value], [T("TIMESTAMP(6)")]).hex() == expected
    assert deserialize_binary_row(bytes.fromhex(expected), [T("TIMESTAMP(6)")]) == [value]
    exact = deserialize_binary_row(bytes.fromhex(expected), [T("TIMESTAMP(6)")],
                                   exact_timestamps=True)
    assert exact == [1704070923456 * 1_000_000 + 789_000]


def test_empty_row() -> None:
    assert bytes.fromhex("00000000" + "00" * 8) == EMPTY_ROW_SERIALIZED
    assert len(EMPTY_ROW_SERIALIZED) == 12
    assert serialize_binary_row([], []) == EMPTY_ROW_SERIALIZED
    assert encode_binary_row([], []) == EMPTY_ROW
    assert deserialize_binary_row(EMPTY_ROW_SERIALIZED, []) == []
    assert binary_row_arity(EMPTY_ROW_SERIALIZED) == 0


def test_header_width() -> None:
    assert [null_bits_size(n) for n in (0, 1, 56, 57, 120, 121)] == [8, 8, 8, 16, 16, 24]
    assert fixed_part_size(3) == 32
    types = [T("INT")] * 60
    values: list[Any] = [None if i in (0, 55, 56, 59) else i for i in range(60)]
    row = encode_binary_row(values, types)
    assert len(row) == 16 + 8 * 60
    # bit i + 8: field 0 -> byte 1 bit 0; 55 -> byte 7 bit 7; 56 -> byte 8 bit 0; 59 -> bit 3
    assert row[:16].hex() == "0001000000000080" "0900000000000000"
    assert decode_binary_row(row, types) == values


def test_row_kind_byte() -> None:
    assert encode_binary_row([1], [T("INT")], row_kind=3)[0] == 3
    with pytest.raises(SchemaError):
        encode_binary_row([1], [T("INT")], row_kind=4)


# ---------------------------------------------------------------------------------------------
# slots and canonical null forms


@pytest.mark.parametrize(
    ("type_", "value", "slot"),
    [
        ("BOOLEAN", True, "0100000000000000"),
        ("TINYINT", -1, "ff00000000000000"),  # only byte 0, no sign extension
        ("SMALLINT", -2, "feff000000000000"),
        ("INT", -1, "ffffffff00000000"),
        ("BIGINT", -1, "ffffffffffffffff"),
        ("FLOAT", 1.0, "0000803f00000000"),
        ("FLOAT", -0.0, "0000008000000000"),
        ("DOUBLE", -0.0, "0000000000000080"),
        ("DOUBLE", math.nan, "000000000000f87f"),
        ("DECIMAL(10, 2)", decimal.Decimal("12.34"), "d204000000000000"),
        ("DECIMAL(18, 0)", decimal.Decimal(-1), "ffffffffffffffff"),
        ("DATE", dt.date(2024, 1, 1), "0b4d000000000000"),
        ("TIME", dt.time(1, 2, 3, 456000), "c0d0380000000000"),
        ("TIMESTAMP(3)", dt.datetime(1970, 1, 1, 0, 0, 0, 1000), "0100000000000000"),
        ("TIMESTAMP(3)", dt.datetime(1969, 12, 31, 23, 59, 59, 999000), "ffffffffffffffff"),
        ("STRING", "", "0000000000000080"),
        ("STRING", "1234567", "3132333435363787"),
        ("BYTES", b"\x00\xff", "00ff000000000082"),
        ("STRING", "é", "c3a9000000000082"),
    ],
)
def test_slot_encoding(type_: str, value: Any, slot: str) -> None:
    row = encode_binary_row([value], [T(type_)])
    assert row.hex() == "0000000000000000" + slot
    back = decode_binary_row(row, [T(type_)])[0]
    if isinstance(value, float) and math.isnan(value):
        assert math.isnan(back)
    else:
        assert back == value
        assert math.copysign(1, back) == math.copysign(1, value) if isinstance(value, float) \
            else True


def test_canonical_null_forms() -> None:
    types = [T("DECIMAL(20, 2)"), T("TIMESTAMP(6)"), T("INT"), T("DECIMAL(20,2)"),
             T("TIMESTAMP(3)"), T("DECIMAL(18, 2)"), T("TIMESTAMP_LTZ(9)"), T("STRING")]
    row = encode_binary_row([None, None, None, decimal.Decimal(5), None, None, None, None], types)
    assert row.hex() == (
        "00f7000000000000"  # fields 0,1,2,4,5,6,7 null
        "0000000048000000"  # null DECIMAL(20,2): offset 72, size 0
        "0000000058000000"  # null TIMESTAMP(6): offset 88
        "0000000000000000"  # null INT
        "0200000060000000"  # DECIMAL(20,2) 5.00 = 500 -> 2 bytes at offset 96
        "0000000000000000"  # null TIMESTAMP(3): compact, zero slot
        "0000000000000000"  # null DECIMAL(18,2): compact, zero slot
        "0000000070000000"  # null TIMESTAMP_LTZ(9): offset 112
        "0000000000000000"  # null STRING: zero slot, no inline marker
        + "00" * 16  # reserved for field 0
        + "00" * 8  # reserved for field 1
        + "01f4" + "00" * 14  # BigInteger.toByteArray(500) = 01 f4
        + "00" * 8  # reserved for field 6
    )
    assert decode_binary_row(row, types) == [None, None, None, decimal.Decimal("5.00")] + [None] * 4


@pytest.mark.parametrize(
    ("unscaled", "payload"),
    [(0, "00"), (1, "01"), (-1, "ff"), (127, "7f"), (128, "0080"), (-128, "80"), (-129, "ff7f"),
     (10**38 - 1, "4b3b4ca85a86c47a098a223fffffffff"),
     (-(10**38) + 1, "b4c4b357a5793b85f675ddc000000001")],
)
def test_non_compact_decimal_bytes(unscaled: int, payload: str) -> None:
    t = T("DECIMAL(38, 0)")
    row = encode_binary_row([decimal.Decimal(unscaled)], [t])
    n = len(payload) // 2
    assert row[8:16] == struct.pack("<q", (16 << 32) | n)
    assert row[16:32].hex() == payload + "00" * (16 - n)
    assert decode_binary_row(row, [t]) == [decimal.Decimal(unscaled)]


def test_timestamp_precision_truncation_and_inputs() -> None:
    t9, t6, t4, t0 = T("TIMESTAMP(9)"), T("TIMESTAMP(6)"), T("TIMESTAMP(4)"), T("TIMESTAMP(0)")
    nanos = 1_704_070_923_456_789_123
    assert timestamp_to_millis_nanos(nanos, 9, False) == (1_704_070_923_456, 789_123)
    assert timestamp_to_millis_nanos(nanos, 6, False) == (1_704_070_923_456, 789_000)
    assert timestamp_to_millis_nanos(nanos, 4, False) == (1_704_070_923_456, 700_000)
    assert timestamp_to_millis_nanos(nanos, 0, False) == (1_704_070_923_000, 0)
    assert timestamp_to_millis_nanos(-1, 9, False) == (-1, 999_999)  # floored
    same = [nanos, (1_704_070_923_456, 789_123), pd.Timestamp(nanos),
            np.datetime64(nanos, "ns")]
    rows = {encode_binary_row([v], [t9]) for v in same}
    assert len(rows) == 1
    assert decode_binary_row(rows.pop(), [t9], exact_timestamps=True) == [nanos]
    d = dt.datetime(2024, 1, 1, 1, 2, 3, 456789)
    assert decode_binary_row(encode_binary_row([d], [t6]), [t6]) == [d]
    assert decode_binary_row(encode_binary_row([d], [t4]), [t4]) == [d.replace(microsecond=456700)]
    assert decode_binary_row(encode_binary_row([d], [t0]), [t0]) == [d.replace(microsecond=0)]


def test_timestamp_ltz_is_utc_instant() -> None:
    t = T("TIMESTAMP_LTZ(6)")
    aware = dt.datetime(2024, 1, 1, 3, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    naive_utc = dt.datetime(2024, 1, 1, 1, 0)
    assert encode_binary_row([aware], [t]) == encode_binary_row([naive_utc], [t])
    assert decode_binary_row(encode_binary_row([aware], [t]), [t]) == [
        dt.datetime(2024, 1, 1, 1, 0, tzinfo=UTC)
    ]
    # TIMESTAMP (no time zone) keeps the wall clock of an aware datetime
    assert encode_binary_row([aware], [T("TIMESTAMP(6)")]) == encode_binary_row(
        [dt.datetime(2024, 1, 1, 3, 0)], [T("TIMESTAMP(6)")]
    )


def test_decimal_rounding_and_overflow() -> None:
    t = T("DECIMAL(5, 2)")
    row = encode_binary_row([decimal.Decimal("1.005")], [t])  # HALF_UP like Java
    assert decode_binary_row(row, [t]) == [decimal.Decimal("1.01")]
    assert encode_binary_row([decimal.Decimal("-1.005")], [t]) == encode_binary_row(["-1.01"], [t])
    assert encode_binary_row([12], [t]) == encode_binary_row([decimal.Decimal("12.00")], [t])
    with pytest.raises(SchemaError):
        encode_binary_row([decimal.Decimal("1000")], [t])
    with pytest.raises(SchemaError):
        encode_binary_row([decimal.Decimal("NaN")], [t])
    with pytest.raises(SchemaError):
        encode_binary_row([1.5], [t])


@pytest.mark.parametrize(
    ("type_", "value"),
    [("TINYINT", 128), ("SMALLINT", -32769), ("INT", 2**31), ("BIGINT", 2**63), ("INT", "1"),
     ("INT", True), ("STRING", b"x"), ("BYTES", "x"), ("FLOAT", 1e39), ("DATE", "2024-01-01"),
     ("DATE", dt.datetime(2024, 1, 1)), ("DOUBLE", "x"), ("DOUBLE", "1.5"), ("FLOAT", True),
     ("BOOLEAN", "false"), ("BOOLEAN", 1)],
)
def test_encode_rejects_bad_values(type_: str, value: Any) -> None:
    with pytest.raises(SchemaError):
        encode_binary_row([value], [T(type_)])


def test_numpy_and_arrow_scalars_are_accepted() -> None:
    import pyarrow as pa

    types = [T("BOOLEAN"), T("INT"), T("DOUBLE"), T("FLOAT"), T("DECIMAL(5, 1)"), T("STRING"),
             T("DATE"), T("TIMESTAMP(9)")]
    plain = [True, 7, 1.5, 2.5, decimal.Decimal("1.5"), "x", dt.date(2024, 1, 1), 10**18 + 1]
    numpy_values = [np.bool_(True), np.int16(7), np.float64(1.5), np.float32(2.5),
                    decimal.Decimal("1.5"), np.str_("x"), dt.date(2024, 1, 1),
                    np.datetime64(10**18 + 1, "ns")]
    arrow_values = [pa.scalar(v, type=ty).as_py() for v, ty in zip(
        plain[:-1], [pa.bool_(), pa.int32(), pa.float64(), pa.float32(), pa.decimal128(5, 1),
                     pa.string(), pa.date32()])]
    arrow_values.append(pa.scalar(10**18 + 1, pa.timestamp("ns")).as_py())  # pandas.Timestamp
    expected = encode_binary_row(plain, types)
    assert encode_binary_row(numpy_values, types) == expected
    assert encode_binary_row(arrow_values, types) == expected
    assert encode_binary_row([np.int64(12)], [T("DECIMAL(5, 1)")]) == encode_binary_row(
        [decimal.Decimal(12)], [T("DECIMAL(5, 1)")])


def test_encode_arity_mismatch_and_nested() -> None:
    with pytest.raises(SchemaError):
        encode_binary_row([1, 2], [T("INT")])
    with pytest.raises(UnsupportedError):
        encode_binary_row([[1]], [T("ARRAY<INT>")])
    # a null nested value is just a null bit and a zero slot
    assert encode_binary_row([None], [T("ARRAY<INT>")]).hex() == "0001000000000000" + "00" * 8


# ---------------------------------------------------------------------------------------------
# malformed input


def test_deserialize_checks_arity_and_reports_path() -> None:
    data = serialize_binary_row([1, 2], [T("INT"), T("INT")])
    with pytest.raises(CorruptMetadataError) as e:
        deserialize_binary_row(data, [T("INT")], path="manifest/m-1")
    assert e.value.path == "manifest/m-1"
    with pytest.raises(CorruptMetadataError):
        deserialize_binary_row(b"\x00\x00", [])
    with pytest.raises(CorruptMetadataError):
        binary_row_arity(b"\xff\xff\xff\xff")


@pytest.mark.parametrize(
    "row_hex",
    [
        "00000000000000",  # shorter than the fixed part
        "0000000000000000" "0c00000010000000" "68656c6c6f20776f",  # var part cut off
        "0000000000000000" "0c000000f0ffffff",  # offset far outside
    ],
)
def test_decode_rejects_truncated_rows(row_hex: str) -> None:
    with pytest.raises(CorruptMetadataError):
        decode_binary_row(bytes.fromhex(row_hex), [T("STRING")], path="p")


def test_decode_rejects_bad_nanos_and_empty_decimal() -> None:
    bad_nanos = "0000000000000000" "40420f0010000000" "0000000000000000"  # nanos = 1_000_000
    with pytest.raises(CorruptMetadataError):
        decode_binary_row(bytes.fromhex(bad_nanos), [T("TIMESTAMP(9)")])
    empty_decimal = "0000000000000000" "0000000010000000" + "00" * 16
    with pytest.raises(CorruptMetadataError):
        decode_binary_row(bytes.fromhex(empty_decimal), [T("DECIMAL(20, 2)")])


def test_decode_out_of_python_range() -> None:
    row = encode_binary_row([(253_402_300_800_000, 0)], [T("TIMESTAMP(3)")])  # year 10000
    with pytest.raises(UnsupportedError):
        decode_binary_row(row, [T("TIMESTAMP(3)")])
    assert decode_binary_row(row, [T("TIMESTAMP(3)")], exact_timestamps=True) == [
        253_402_300_800_000 * 1_000_000
    ]
    with pytest.raises(UnsupportedError):
        decode_binary_row(encode_binary_row([3_000_000], [T("DATE")]), [T("DATE")])


def test_invalid_utf8_decodes_leniently() -> None:
    row = bytes.fromhex("0000000000000000" "ff00000000000081")
    assert decode_binary_row(row, [T("STRING")]) == ["\ufffd"]


# ---------------------------------------------------------------------------------------------
# nested types: rows serialised by Paimon 0.9 Java (InternalRowSerializer.toBinaryRow)

ROW_T = "ROW<x INT, y STRING>"
NESTED1_TYPES = ["ARRAY<INT>", "MAP<STRING NOT NULL, BIGINT>", ROW_T, "ARRAY<STRING>",
                 "MULTISET<STRING>", "INT"]
NESTED2_TYPES = ["ARRAY<DECIMAL(20, 2)>", "ARRAY<TIMESTAMP(6)>", "ARRAY<BOOLEAN>",
                 "ARRAY<SMALLINT>", "ARRAY<DOUBLE>", "ARRAY<ARRAY<INT>>", f"ARRAY<{ROW_T}>",
                 "ARRAY<DATE>", "ARRAY<TINYINT>", "ARRAY<BYTES>", "ARRAY<DECIMAL(10, 3)>",
                 "ARRAY<FLOAT>"]
JAVA_NESTED = {
    "nested1": (
        1233665908,
        "000000000000000018000000380000004400000050000000280000009800000038000000c000000024000000"
        "f80000002a000000000000000300000002000000010000000000000003000000000000002800000002000000"
        "000000006b310000000000820e00000018000000612d6c6f6e672d6b65792d31323300000200000002000000"
        "0a00000000000000000000000000000000000000000000000000000007000000000000000c00000018000000"
        "68656c6c6f20776f726c642100000000030000000200000073686f7274000085000000000000000014000000"
        "2000000061206d756368206c6f6e67657220737472696e670000000010000000010000000000000078000000"
        "000000810100000000000000020000000000000000000000",
    ),
    "nested_nulls": (
        555162120,
        "003f000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
        "000000000000000000000000",
    ),
    "nested2": (
        -193174404,
        "0000000000000000400000006800000020000000a800000010000000c800000010000000d800000020000000"
        "e80000003800000008010000600000004001000010000000a001000010000000b001000028000000c0010000"
        "10000000e801000010000000f801000003000000020000000800000020000000000000000000000001000000"
        "30000000112210f47de981150000000000000000ff0000000000000000000000000000000200000002000000"
        "080a0c00180000000000000000000000c0c48ac28c0100000300000002000000010000000000000002000000"
        "00000000feff2c01000000000300000002000000000000000000f83f00000000000000000000000000000080"
        "0300000002000000100000002000000000000000000000000800000030000000020000000000000001000000"
        "0200000000000000000000000300000002000000180000002000000000000000000000002800000038000000"
        "000000000000000001000000000000006100000000000081000100000000000000000000000000000c000000"
        "180000006262626262626262626262620000000002000000020000000b4d0000000000000300000002000000"
        "ff00050000000000020000000000000001020300000000830900000018000000000102030405060708000000"
        "0000000001000000000000002efbffffffffffff02000000020000000000204000000000",
    ),
    "empty_array": (
        -2074941042,
        "000000000000000008000000100000000000000000000000",
    ),
}

D = decimal.Decimal


@pytest.mark.parametrize(
    ("name", "types", "expected"),
    [
        ("nested1", NESTED1_TYPES,
         [[1, None, 3], [("k1", 10), ("a-long-key-123", None)], {"x": 7, "y": "hello world!"},
          ["short", None, "a much longer string"], [("x", 2)], 42]),
        ("nested_nulls", NESTED1_TYPES, [None] * 6),
        ("nested2", NESTED2_TYPES,
         [[D("12345678901234567.89"), None, D("-0.01")],
          [dt.datetime(2024, 1, 1, 1, 2, 3, 456789), None], [True, None, False], [-2, 300],
          [1.5, None, -0.0], [[1, 2], None, []],
          [{"x": 1, "y": "a"}, None, {"x": None, "y": "bbbbbbbbbbbb"}],
          [dt.date(2024, 1, 1), None], [-1, None, 5],
          [b"\x01\x02\x03", bytes(range(9))], [D("-1.234")], [2.5, None]]),
        ("empty_array", ["ARRAY<INT>"], [[]]),
    ],
)
def test_decode_nested_rows_written_by_java(name: str, types: list[str], expected: Any) -> None:
    java_hash, hexbytes = JAVA_NESTED[name]
    row = bytes.fromhex(hexbytes)
    got = decode_binary_row(row, [T(t) for t in types])
    assert got == expected
    assert hash_binary_row(row) == java_hash
    assert repr(got) == repr(expected)  # -0.0 and decimal scales too


def test_decode_nested_rejects_bad_offsets() -> None:
    _, hexbytes = JAVA_NESTED["nested1"]
    row = bytearray(bytes.fromhex(hexbytes))
    row[8:16] = struct.pack("<q", (4000 << 32) | 24)  # ARRAY slot pointing outside
    with pytest.raises(CorruptMetadataError):
        decode_binary_row(bytes(row), [T(t) for t in NESTED1_TYPES])


# ---------------------------------------------------------------------------------------------
# round trips (hypothesis)


def _strategy(t: AtomicType) -> st.SearchStrategy[Any]:
    r = t.root
    if r is TypeRoot.BOOLEAN:
        return st.booleans()
    if r in (TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT):
        bits = {TypeRoot.TINYINT: 8, TypeRoot.SMALLINT: 16, TypeRoot.INT: 32,
                TypeRoot.BIGINT: 64}[r]
        return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    if r is TypeRoot.FLOAT:
        return st.floats(width=32)
    if r is TypeRoot.DOUBLE:
        return st.floats()
    if r is TypeRoot.DECIMAL:
        p, s = t.precision or 10, t.scale or 0
        return st.integers(-(10**p) + 1, 10**p - 1).map(lambda u: decimal.Decimal(f"{u}E-{s}"))
    if r in (TypeRoot.CHAR, TypeRoot.VARCHAR):
        return st.text(max_size=30)
    if r in (TypeRoot.BINARY, TypeRoot.VARBINARY):
        return st.binary(max_size=30)
    if r is TypeRoot.DATE:
        return st.dates()
    if r is TypeRoot.TIME:
        return st.times().map(lambda v: v.replace(microsecond=v.microsecond // 1000 * 1000))
    p = t.precision if t.precision is not None else 6
    if p > 6:
        return st.integers(-(2**62), 2**62).map(lambda n: n - n % 10 ** (9 - p))
    unit = 10 ** (6 - p)
    naive = st.datetimes().map(
        lambda v: v.replace(microsecond=v.microsecond - v.microsecond % unit)
    )
    if r is TypeRoot.TIMESTAMP_LTZ:
        return naive.map(lambda v: v.replace(tzinfo=UTC))
    return naive


ROUND_TRIP_TYPES = [
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(10, 2)",
    "DECIMAL(18, 18)", "DECIMAL(19, 0)", "DECIMAL(38, 10)", "CHAR(3)", "STRING", "BINARY(2)",
    "BYTES", "DATE", "TIME", "TIMESTAMP(0)", "TIMESTAMP(3)", "TIMESTAMP(5)", "TIMESTAMP(6)",
    "TIMESTAMP(7)", "TIMESTAMP(9)", "TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(6)", "TIMESTAMP_LTZ(9)",
]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                     math.copysign(1, b))
    return bool(a == b) and type(a) is type(b)


@pytest.mark.parametrize("type_", ROUND_TRIP_TYPES)
@settings(max_examples=examples(60))
@given(data=st.data())
def test_round_trip_every_atomic_type(type_: str, data: st.DataObject) -> None:
    t = T(type_)
    assert isinstance(t, AtomicType)
    values = data.draw(st.lists(st.one_of(st.none(), _strategy(t)), min_size=1, max_size=4))
    types: list[DataType] = [t] * len(values)
    exact = t.root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ) and (t.precision or 0) > 6
    row = encode_binary_row(values, types)
    assert len(row) % 8 == 0
    back = deserialize_binary_row(serialize_binary_row(values, types), types,
                                  exact_timestamps=exact)
    assert all(_same(a, b) for a, b in zip(values, back)), (values, back)
    assert encode_binary_row(back, types) == row
