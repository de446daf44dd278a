"""Old values read after a type change, as Paimon Java 0.9's ``CastExecutors`` reads them.

The expected values are written by hand from Java's rules (the oracle comparison of the same
casts is tests/interop/test_cast_evolution_interop.py): truncation toward zero and Java's
primitive narrowing for integers, HALF_UP for decimals, Java's number and timestamp text.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from decimal import Decimal as D
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import CastError, UnsupportedError
from paimon_core.read.casts import cast_evolved
from paimon_core.schema_builder import Schema
from paimon_core.spec.schema import encode_schema
from paimon_core.types import parse_sql_type
from tests.tables import write_rows

TS = [dt.datetime(2024, 1, 2, 3, 4, 5, 678901), dt.datetime(1969, 12, 31, 23, 0, 0, 500000)]

CASES: list[tuple[str, str, pa.Array, list[Any]]] = [
    ("DECIMAL(10, 2)", "INT", pa.array([D("12.99"), D("-7.99"), None], pa.decimal128(10, 2)),
     [12, -7, None]),
    ("DECIMAL(10, 2)", "TINYINT", pa.array([D("300.5")], pa.decimal128(10, 2)), [44]),
    ("DOUBLE", "INT", pa.array([1.9, -1.9, float("nan"), 1e20, -1e20]),
     [1, -1, 0, 2**31 - 1, -(2**31)]),
    ("DOUBLE", "BIGINT", pa.array([1e30, -2.5]), [2**63 - 1, -2]),
    ("DOUBLE", "SMALLINT", pa.array([1e10, 70000.7]), [-1, 4464]),  # (short)(int) d
    ("BIGINT", "INT", pa.array([2**40 + 5, -(2**31) - 1]), [5, 2**31 - 1]),
    ("STRING", "DECIMAL(10, 2)", pa.array(["2.345", "-2.345", ".5", "1e2", "-0.005", None]),
     [D("2.35"), D("-2.35"), D("0.50"), D("100.00"), D("-0.01"), None]),
    ("DECIMAL(10, 4)", "DECIMAL(6, 2)", pa.array([D("1.2350"), D("-99.9950")],
                                                 pa.decimal128(10, 4)),
     [D("1.24"), D("-100.00")]),
    ("FLOAT", "DECIMAL(6, 3)", pa.array([0.1, -1.5], pa.float32()), [D("0.100"), D("-1.500")]),
    ("DOUBLE", "DECIMAL(5, 2)", pa.array([2.675, 0.125]), [D("2.68"), D("0.13")]),
    ("INT", "DECIMAL(5, 1)", pa.array([1234, -9999]), [D("1234.0"), D("-9999.0")]),
    ("DECIMAL(10, 3)", "DOUBLE", pa.array([D("0.100"), D("-2.675")], pa.decimal128(10, 3)),
     [0.1, -2.675]),
    ("STRING", "INT", pa.array(["42", "-3.9", "+7", ".", None]), [42, -3, 7, 0, None]),
    ("STRING", "DOUBLE", pa.array([" 1.5 ", "-2e3", "NaN", "1d"]), [1.5, -2000.0, None, 1.0]),
    ("STRING", "BOOLEAN", pa.array(["yes", "F", "1", "No"]), [True, False, True, False]),
    ("INT", "STRING", pa.array([7, -1]), ["7", "-1"]),
    ("DOUBLE", "STRING", pa.array([1e10, 0.0001, 100.0, 12.5, 1e-3]),
     ["1.0E10", "1.0E-4", "100.0", "12.5", "0.001"]),
    ("DECIMAL(8, 3)", "STRING", pa.array([D("1.500")], pa.decimal128(8, 3)), ["1.500"]),
    ("BOOLEAN", "INT", pa.array([True, False, None]), [1, 0, None]),
    ("BOOLEAN", "STRING", pa.array([True, False]), ["true", "false"]),
    ("INT", "BOOLEAN", pa.array([0, 5, -1]), [False, True, True]),
    ("BIGINT", "BOOLEAN", pa.array([2**32]), [False]),  # Number.intValue() wraps first
    ("STRING", "CHAR(4)", pa.array(["ab", "abcdef"]), ["ab  ", "abcd"]),
    ("STRING", "VARCHAR(3)", pa.array(["abcdef", "é"]), ["abc", "é"]),
    ("BYTES", "BINARY(3)", pa.array([b"\x01\x02\x03\x04", b"\x09"]),
     [b"\x01\x02\x03", b"\x09\x00\x00"]),
    ("STRING", "BYTES", pa.array(["hé"]), ["hé".encode()]),
    ("TIMESTAMP(6)", "DATE", pa.array(TS, pa.timestamp("us")),
     [dt.date(2024, 1, 2), dt.date(1970, 1, 1)]),  # millis / 86400000 toward zero
    ("TIMESTAMP(6)", "TIMESTAMP(0)", pa.array(TS, pa.timestamp("us")),
     [dt.datetime(2024, 1, 2, 3, 4, 5), dt.datetime(1969, 12, 31, 23, 0, 1)]),
    ("TIMESTAMP(6)", "TIMESTAMP(3)", pa.array(TS, pa.timestamp("us")),
     [dt.datetime(2024, 1, 2, 3, 4, 5, 678000), dt.datetime(1969, 12, 31, 23, 0, 0, 500000)]),
    ("TIMESTAMP(6)", "STRING", pa.array(TS, pa.timestamp("us")),
     ["2024-01-02 03:04:05.678901", "1969-12-31 23:00:00.500000"]),
    ("TIMESTAMP(3)", "BIGINT", pa.array([TS[0], dt.datetime(1969, 12, 31, 23, 59, 59, 500000)],
                                        pa.timestamp("ms")), [1704164645, 0]),
    ("DATE", "TIMESTAMP(3)", pa.array([dt.date(2024, 2, 29)]), [dt.datetime(2024, 2, 29)]),
    ("DATE", "STRING", pa.array([dt.date(2024, 2, 29)]), ["2024-02-29"]),
    ("STRING", "DATE", pa.array(["2024-3-5", "19000"]), [dt.date(2024, 3, 5), dt.date(2022, 1, 8)]),
    ("STRING", "TIMESTAMP(3)", pa.array(["2024-01-02 03:04:05.123456", "2024-01-02"]),
     [dt.datetime(2024, 1, 2, 3, 4, 5, 123000), dt.datetime(2024, 1, 2)]),
    ("TIME(3)", "STRING", pa.array([dt.time(1, 2, 3, 500000), dt.time(0, 0)], pa.time32("ms")),
     ["01:02:03.5", "00:00:00.0"]),
    ("INT", "TIMESTAMP(3)", pa.array([86400]), [dt.datetime(1970, 1, 2)]),
    ("STRING", "TIME(3)", pa.array(["01:02:03.5", "1:2", "3723004"]),
     [dt.time(1, 2, 3, 500000), dt.time(1, 2), dt.time(1, 2, 3, 4000)]),
]


@pytest.mark.parametrize("source, target, values, expected", CASES,
                         ids=[f"{s}->{t}" for s, t, _, _ in CASES])
def test_cast_reads_as_java(source: str, target: str, values: pa.Array,
                            expected: list[Any]) -> None:
    out = cast_evolved(values, parse_sql_type(source), parse_sql_type(target)).to_pylist()
    if target == "DOUBLE" and source == "STRING":
        assert out[2] != out[2]  # NaN
        out[2] = None
    assert out == expected


@pytest.mark.parametrize("source, target, value, message", [
    ("STRING", "INT", "x1", "not an integer"),
    ("STRING", "INT", " 1", "not an integer"),  # Java does not trim
    ("STRING", "INT", "2147483648", "overflow"),
    ("STRING", "TINYINT", "128", "overflow"),
    ("STRING", "BOOLEAN", "maybe", "not a boolean"),
    ("STRING", "DECIMAL(10, 2)", "99999999.995", "more than 10 digits"),
    ("DOUBLE", "DECIMAL(10, 2)", float("nan"), "not a decimal number"),
    ("INT", "DECIMAL(3, 1)", 100, "more than 3 digits"),
    ("STRING", "DATE", "yesterday", "not a date"),
])
def test_values_java_cannot_read_fail_naming_them(source: str, target: str, value: Any,
                                                  message: str) -> None:
    with pytest.raises(CastError, match=message) as e:
        cast_evolved(pa.array([None, value]), parse_sql_type(source), parse_sql_type(target))
    assert str(e.value.value) in (str(value), "NaN")


def test_casts_java_has_not_are_refused() -> None:
    for source, target in (("DOUBLE", "BOOLEAN"), ("DECIMAL(5, 2)", "TIMESTAMP(3)"),
                           ("ARRAY<INT>", "STRING")):
        with pytest.raises(UnsupportedError, match="no cast"):
            cast_evolved(pa.nulls(1, pa.int32()), parse_sql_type(source),
                         parse_sql_type(target))


def test_a_table_altered_by_java_reads_and_filters(tmp_path: Path) -> None:
    """A schema-1 laid out as Java's ALTER writes it (DECIMAL(10, 2) -> INT, DOUBLE -> INT,
    STRING -> DECIMAL(10, 2)) over a file written with schema 0: the read converts, filters
    see the converted values and never lose an old row to the old file's stats."""
    cat = FileSystemCatalog(str(tmp_path / "wh"))
    t = cat.create_table("db.t", Schema.of([("id", "INT"), ("d", "DECIMAL(10, 2)"),
                                            ("x", "DOUBLE"), ("s", "STRING")]))
    write_rows(t, pa.table({"id": pa.array([1, 2], pa.int32()),
                            "d": pa.array([D("12.99"), D("-7.99")], pa.decimal128(10, 2)),
                            "x": [1.9, -1.9], "s": ["2.345", "-2.345"]}))
    s0 = t.schema
    s1 = replace(s0, id=1, fields=tuple(
        replace(f, type=parse_sql_type({"d": "INT", "x": "INT", "s": "DECIMAL(10, 2)"}[f.name]))
        if f.name != "id" else f for f in s0.fields))
    (Path(t.path) / "schema" / "schema-1").write_bytes(encode_schema(s1))
    t = cat.get_table("db.t")
    assert t.to_arrow().sort_by("id").to_pylist() == [
        {"id": 1, "d": 12, "x": 1, "s": D("2.35")}, {"id": 2, "d": -7, "x": -1, "s": D("-2.35")}]
    # the old file's stats say d in [-7.99, 12.99]: "d = 12" must still find row 1
    assert t.to_arrow(filter="d = 12").column("id").to_pylist() == [1]
    assert t.to_arrow(filter="s >= 2.35").column("id").to_pylist() == [1]
    assert t.to_arrow(filter="x < 0").column("id").to_pylist() == [2]


def test_stats_of_old_files_never_drop_rows_after_a_lossy_change(tmp_path: Path) -> None:
    """Same type root, other values: VARCHAR(10) -> VARCHAR(3) truncates, DECIMAL(10, 4) ->
    DECIMAL(6, 2) rounds, TIMESTAMP(6) -> TIMESTAMP(0) truncates. The old file's min/max
    ('abcdef', 1.2350, ...) would exclude the converted values a filter asks for."""
    cat = FileSystemCatalog(str(tmp_path / "wh"))
    t = cat.create_table("db.t", Schema.of([("id", "INT"), ("v", "VARCHAR(10)"),
                                            ("d", "DECIMAL(10, 4)"), ("ts", "TIMESTAMP(6)")]))
    write_rows(t, pa.table({"id": pa.array([1], pa.int32()), "v": ["abcdef"],
                            "d": pa.array([D("1.2350")], pa.decimal128(10, 4)),
                            "ts": pa.array([dt.datetime(2024, 1, 1, 0, 0, 0, 900000)],
                                           pa.timestamp("us"))}))
    new = {"v": "VARCHAR(3)", "d": "DECIMAL(6, 2)", "ts": "TIMESTAMP(0)"}
    s0 = t.schema
    s1 = replace(s0, id=1, fields=tuple(replace(f, type=parse_sql_type(new[f.name]))
                                        if f.name in new else f for f in s0.fields))
    (Path(t.path) / "schema" / "schema-1").write_bytes(encode_schema(s1))
    t = cat.get_table("db.t")
    assert t.to_arrow().to_pylist() == [
        {"id": 1, "v": "abc", "d": D("1.24"), "ts": dt.datetime(2024, 1, 1)}]
    for where in ("v = 'abc'", "d = 1.24", "d >= 1.24", "ts <= '2024-01-01 00:00:00'"):
        assert t.to_arrow(filter=where).num_rows == 1, where
