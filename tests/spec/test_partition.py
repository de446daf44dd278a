"""Partition directory names: Java's legacy value rendering, escaping, default partition name,
Java Float/Double.toString, and hostile values staying inside the table."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import posixpath
from typing import Any

import numpy as np
import pytest

from paimon_core.errors import SchemaError, UnsupportedError
from paimon_core.spec.partition import (
    DEFAULT_PARTITION_NAME,
    escape_path_name,
    java_double_to_string,
    java_float_to_string,
    local_date_time_string,
    parse_partition_path,
    partition_path,
    partition_value_string,
    unescape_path_name,
)
from paimon_core.types import parse_sql_type

T = parse_sql_type
D = decimal.Decimal

# ---------------------------------------------------------------------------------------------
# escaping (PartitionPathUtils)

SPECIAL = '"#%\'*/:=?\\{}[]^\x7f'


@pytest.mark.parametrize("c", list(SPECIAL) + [chr(i) for i in range(1, 0x20)] + ["\x00"])
def test_every_special_char_is_escaped(c: str) -> None:
    escaped = escape_path_name(f"a{c}b")
    assert escaped == f"a%{ord(c):02X}b"
    assert unescape_path_name(escaped) == f"a{c}b"


def test_escape_examples() -> None:
    assert escape_path_name("a/b=c") == "a%2Fb%3Dc"
    assert escape_path_name("x:y?z") == "x%3Ay%3Fz"
    assert escape_path_name("100%") == "100%25"
    assert escape_path_name("\n") == "%0A"
    assert escape_path_name("\x7f") == "%7F"
    # kept literally: spaces, dots, non-ASCII, other punctuation
    for kept in ("a b", "..", ".", "é中😀", "a-b_c~!@$&()+,;<>|`", "\u00a0"):
        assert escape_path_name(kept) == kept
    with pytest.raises(SchemaError):
        escape_path_name("")


def test_unescape_java_quirks() -> None:
    assert unescape_path_name("%41%4a%4A") == "AJJ"
    assert unescape_path_name("%4") == "%4"  # too short at the end
    assert unescape_path_name("%ZZ") == "%ZZ"
    assert unescape_path_name("%+F") == "\x0f"  # Integer.parseInt("+F", 16) == 15
    assert unescape_path_name("%-1") == "%-1"  # negative code: kept
    assert unescape_path_name("100%25") == "100%"


# ---------------------------------------------------------------------------------------------
# value rendering (InternalRowPartitionComputer, legacy names)


@pytest.mark.parametrize(
    ("type_", "value", "text"),
    [
        ("STRING", "2024-01-01", "2024-01-01"),
        ("STRING", " a ", " a "),
        ("BOOLEAN", True, "true"),
        ("BOOLEAN", False, "false"),
        ("TINYINT", -5, "-5"),
        ("BIGINT", 2**63 - 1, "9223372036854775807"),
        ("DATE", dt.date(2024, 1, 1), "19723"),
        ("DATE", dt.date(1969, 12, 31), "-1"),
        ("TIME", dt.time(1, 2, 3), "3723000"),
        ("TIME(3)", dt.time(0, 0, 0, 5000), "5"),
        ("TIMESTAMP(6)", dt.datetime(2024, 1, 1, 1, 2), "2024-01-01T01:02"),
        ("TIMESTAMP(6)", dt.datetime(2024, 1, 1, 1, 2, 3), "2024-01-01T01:02:03"),
        ("TIMESTAMP(6)", dt.datetime(2024, 1, 1, 1, 2, 0, 456000), "2024-01-01T01:02:00.456"),
        ("TIMESTAMP(6)", dt.datetime(2024, 1, 1, 1, 2, 3, 456789), "2024-01-01T01:02:03.456789"),
        ("TIMESTAMP(6)", dt.datetime(2024, 1, 1, 1, 2, 3, 450000), "2024-01-01T01:02:03.450"),
        ("TIMESTAMP(3)", dt.datetime(2024, 1, 1, 1, 2, 3, 456789), "2024-01-01T01:02:03.456"),
        ("TIMESTAMP(0)", dt.datetime(2024, 1, 1, 0, 0, 0, 999999), "2024-01-01T00:00"),
        ("TIMESTAMP(9)", 1_704_070_923_456_789_123, "2024-01-01T01:02:03.456789123"),
        ("TIMESTAMP(9)", 1_704_070_923_000_000_100, "2024-01-01T01:02:03.000000100"),
        ("TIMESTAMP(3)", dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
         "1969-12-31T23:59:59.999"),
        ("TIMESTAMP_LTZ(3)", dt.datetime(2024, 1, 1, 3, 0, tzinfo=dt.timezone(
            dt.timedelta(hours=2))), "2024-01-01T01:00"),
        ("DECIMAL(10, 2)", D("12.3"), "12.30"),
        ("DECIMAL(10, 2)", D("-0.00"), "0.00"),
        ("DECIMAL(10, 2)", D("-0.5"), "-0.50"),
        ("DECIMAL(5, 0)", D("12"), "12"),
        ("DECIMAL(38, 10)", D("-12345678901234567890.0123456789"),
         "-12345678901234567890.0123456789"),
        ("DOUBLE", 1.0, "1.0"),
        ("DOUBLE", 1e10, "1.0E10"),
        ("DOUBLE", 1e-5, "1.0E-5"),
        ("DOUBLE", 0.001, "0.001"),
        ("DOUBLE", 100.0, "100.0"),
        ("DOUBLE", 1e7, "1.0E7"),
        ("DOUBLE", 1234567.5, "1234567.5"),
        ("DOUBLE", 0.1, "0.1"),
        ("DOUBLE", -2.5e-4, "-2.5E-4"),
        ("DOUBLE", math.nan, "NaN"),
        ("DOUBLE", math.inf, "Infinity"),
        ("DOUBLE", -math.inf, "-Infinity"),
        ("DOUBLE", -0.0, "-0.0"),
        ("FLOAT", 1.1, "1.1"),
        ("FLOAT", 1e10, "1.0E10"),
        ("FLOAT", 0.1, "0.1"),
        ("FLOAT", 3.4028234663852886e38, "3.4028235E38"),
        ("FLOAT", 1.401298464324817e-45, "1.4E-45"),
    ],
)
def test_value_rendering(type_: str, value: Any, text: str) -> None:
    assert partition_value_string(value, T(type_)) == text


@pytest.mark.parametrize("blank", [None, "", " ", "  ", "\t", "\n\r", "\u3000", "\u2003\u2028",
                                   "\x1c"])
def test_default_partition_name(blank: Any) -> None:
    assert partition_value_string(blank, T("STRING")) == DEFAULT_PARTITION_NAME
    assert partition_value_string(blank, T("STRING"), "dflt") == "dflt"


@pytest.mark.parametrize("not_blank", ["\u00a0", "\u2007", "\u202f", "\u200b", "_"])
def test_non_breaking_spaces_are_not_blank(not_blank: str) -> None:
    # Java Character.isWhitespace excludes the non-breaking spaces
    assert partition_value_string(not_blank, T("STRING")) == not_blank


def test_unsupported_and_bad_values() -> None:
    with pytest.raises(UnsupportedError):
        partition_value_string(b"x", T("BYTES"))  # Java would print an identity hash
    with pytest.raises(UnsupportedError):
        partition_value_string([1], T("ARRAY<INT>"))
    with pytest.raises(SchemaError):
        partition_value_string(1, T("STRING"))
    with pytest.raises(SchemaError):
        partition_value_string(D("1000"), T("DECIMAL(3, 0)"))


def test_local_date_time_string_years() -> None:
    day = 86_400_000
    assert local_date_time_string(0, 0) == "1970-01-01T00:00"
    assert local_date_time_string(-62_135_596_800_000, 0) == "0001-01-01T00:00"
    assert local_date_time_string(-62_135_596_800_000 - 366 * day, 0) == "0000-01-01T00:00"
    assert local_date_time_string(-62_135_596_800_000 - 731 * day, 0) == "-0001-01-01T00:00"
    assert local_date_time_string(253_402_300_800_000, 0) == "+10000-01-01T00:00"
    assert local_date_time_string(1, 1) == "1970-01-01T00:00:00.001000001"


# ---------------------------------------------------------------------------------------------
# Java Float/Double.toString: legacy (JDK 8-18) vs shortest (JDK 19+)


@pytest.mark.parametrize(
    ("value", "legacy", "shortest"),
    [
        (2e23, "1.9999999999999998E23", "2.0E23"),
        (8.41e21, "8.409999999999999E21", "8.41E21"),
        (1e23, "9.999999999999999E22", "1.0E23"),
        (5e-324, "4.9E-324", "4.9E-324"),
        (1e-323, "1.0E-323", "9.9E-324"),
        (1.7976931348623157e308, "1.7976931348623157E308", "1.7976931348623157E308"),
        (123456789.0, "1.23456789E8", "1.23456789E8"),
        (9999999.999, "9999999.999", "9999999.999"),
    ],
)
def test_double_to_string_formats(value: float, legacy: str, shortest: str) -> None:
    assert java_double_to_string(value) == legacy
    assert java_double_to_string(value, fmt="shortest") == shortest
    assert float(legacy) == value and float(shortest) == value


def test_float_to_string_formats() -> None:
    assert java_float_to_string(1.17549435e-38) == "1.17549435E-38"
    assert java_float_to_string(1.17549435e-38, fmt="shortest") == "1.1754944E-38"
    assert java_float_to_string(2.48781808e8) == "2.48781808E8"
    assert java_float_to_string(2.48781808e8, fmt="shortest") == "2.4878181E8"
    for s in ("NaN", "Infinity"):
        assert java_float_to_string(float(s)) == s
    rng = np.random.default_rng(1)
    for bits in rng.integers(0, 2**32, 300, dtype=np.uint64):
        v = float(np.array(bits, dtype=np.uint32).view(np.float32))
        if math.isfinite(v):
            for fmt in ("legacy", "shortest"):
                assert np.float32(float(java_float_to_string(v, fmt=fmt))) == np.float32(v)


def test_partition_value_float_format_option() -> None:
    assert partition_value_string(2e23, T("DOUBLE")) == "1.9999999999999998E23"
    assert partition_value_string(2e23, T("DOUBLE"), float_format="shortest") == "2.0E23"


# ---------------------------------------------------------------------------------------------
# paths


def test_partition_path() -> None:
    types = [T("DATE"), T("INT"), T("STRING")]
    assert partition_path([dt.date(2024, 1, 1), 5, "a b"], ["dt", "hr", "s"], types) == (
        "dt=19723/hr=5/s=a b")
    assert partition_path([None, None, ""], ["dt", "hr", "s"], types) == (
        "dt=__DEFAULT_PARTITION__/hr=__DEFAULT_PARTITION__/s=__DEFAULT_PARTITION__")
    assert partition_path([None], ["k"], [T("INT")], default_name="none") == "k=none"
    assert partition_path([], [], []) == ""
    assert partition_path(["v"], ["we/ird=key"], [T("STRING")]) == "we%2Fird%3Dkey=v"
    with pytest.raises(SchemaError):
        partition_path([1, 2], ["a"], [T("INT")])


@pytest.mark.parametrize(
    ("value", "component"),
    [
        ("../../x", "k=..%2F..%2Fx"),
        ("..", "k=.."),
        (".", "k=."),
        ("/", "k=%2F"),
        ("a/../../b", "k=a%2F..%2F..%2Fb"),
        ("\\..\\", "k=%5C..%5C"),
        ("C:\\x", "k=C%3A%5Cx"),
    ],
)
def test_hostile_values_stay_inside_the_table(value: str, component: str) -> None:
    rel = partition_path([value], ["k"], [T("STRING")])
    assert rel == component
    assert "/" not in rel  # one single directory level
    root = "/warehouse/db.db/t"
    full = posixpath.normpath(posixpath.join(root, rel, "bucket-0"))
    assert full.startswith(root + "/k=")
    assert parse_partition_path(rel, ["k"], [T("STRING")]) == [value]


@pytest.mark.parametrize(
    ("type_", "value"),
    [
        ("STRING", "a/b=c:d%"), ("INT", -3), ("BIGINT", 2**40), ("BOOLEAN", True),
        ("DATE", dt.date(2024, 2, 29)), ("TIME", dt.time(1, 2, 3, 4000)),
        ("TIMESTAMP(6)", dt.datetime(2024, 1, 1, 1, 2, 3, 456789)),
        ("TIMESTAMP(3)", dt.datetime(2024, 1, 1)),
        ("TIMESTAMP_LTZ(6)", dt.datetime(2024, 1, 1, 5, tzinfo=dt.UTC)),
        ("DECIMAL(10, 2)", D("-12.30")), ("DOUBLE", 1e-5), ("FLOAT", 1.5), ("DOUBLE", None),
    ],
)
def test_parse_partition_path_round_trip(type_: str, value: Any) -> None:
    t = T(type_)
    path = partition_path([value, "x"], ["p", "q"], [t, T("STRING")])
    assert parse_partition_path(path, ["p", "q"], [t, T("STRING")]) == [value, "x"]
    assert parse_partition_path("/" + path + "/", ["p", "q"], [t, T("STRING")]) == [value, "x"]


def test_parse_partition_path_errors() -> None:
    assert parse_partition_path("", [], []) == []
    assert parse_partition_path("dt=2024-01-01", ["dt"], [T("DATE")]) == [dt.date(2024, 1, 1)]
    for bad in ("dt=1/x=2", "x=1", "dt", "dt=", "=1"):
        with pytest.raises(SchemaError):
            parse_partition_path(bad, ["dt"], [T("INT")])
    with pytest.raises(SchemaError):
        parse_partition_path("dt=abc", ["dt"], [T("INT")])
