"""paimon_core.scan.predicate: parsing, Java row semantics on Arrow, stats/partition/bucket
pruning. Expected row sets are written by hand from Paimon's LeafFunction sources (0.9/master)."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

import pyarrow as pa
import pytest

from paimon_core.errors import FilterError
from paimon_core.scan.predicate import (
    And,
    ColumnStats,
    Leaf,
    Op,
    Or,
    and_,
    bind,
    bucket_key_equalities,
    equal,
    evaluate_row,
    filter_table,
    greater_or_equal,
    greater_than,
    is_in,
    is_not_in,
    is_not_null,
    is_null,
    less_or_equal,
    less_than,
    might_match,
    not_equal,
    or_,
    parse_filter,
    parse_filters,
    partition_predicate,
    referenced_fields,
    starts_with,
    to_arrow_expression,
)
from paimon_core.types import DataField, parse_sql_type, to_arrow_type

D = decimal.Decimal
UTC = dt.UTC
NAN = math.nan

SCHEMA = [
    ("b", "BOOLEAN"),
    ("i8", "TINYINT"),
    ("i16", "SMALLINT"),
    ("i", "INT"),
    ("l", "BIGINT"),
    ("f", "FLOAT"),
    ("d", "DOUBLE"),
    ("dec", "DECIMAL(10, 2)"),
    ("dec38", "DECIMAL(38, 4)"),
    ("c", "CHAR(3)"),
    ("s", "STRING"),
    ("bin", "BYTES"),
    ("dt", "DATE"),
    ("tm", "TIME(3)"),
    ("tm0", "TIME"),
    ("ts0", "TIMESTAMP(0)"),
    ("ts3", "TIMESTAMP(3)"),
    ("ts6", "TIMESTAMP(6)"),
    ("ts9", "TIMESTAMP(9)"),
    ("ltz3", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
    ("ltz6", "TIMESTAMP_LTZ(6)"),
    ("ltz9", "TIMESTAMP(9) WITH LOCAL TIME ZONE"),
    ("arr", "ARRAY<INT>"),
    ("pt", "STRING"),
]
FIELDS = [DataField(i, n, parse_sql_type(t)) for i, (n, t) in enumerate(SCHEMA)]


def lit(expr: str) -> Any:
    p = parse_filter(expr, FIELDS)
    assert isinstance(p, Leaf)
    return p.literals if p.op in (Op.IN, Op.NOT_IN) else p.literals[0]


def table(col: str, values: list[Any]) -> pa.Table:
    f = next(x for x in FIELDS if x.name == col)
    return pa.table({col: pa.array(values, type=to_arrow_type(f.type))})


def rows(col: str, values: list[Any], expr: str | Any) -> list[int]:
    """Indices of the rows of a one-column table that the filter selects; also checks that
    filter_table and evaluate_row agree row by row."""
    pred = parse_filter(expr, FIELDS) if isinstance(expr, str) else expr
    t = table(col, values).append_column("_idx", pa.array(range(len(values)), pa.int64()))
    got = filter_table(t, pred, FIELDS).column("_idx").to_pylist()
    ref = [k for k, v in enumerate(values) if evaluate_row(pred, {col: v}, fields=FIELDS)]
    assert got == ref, f"{pred}: arrow {got} != row-by-row {ref}"
    return got


# ---------------------------------------------------------------------------------------------
# parsing


@pytest.mark.parametrize(
    "expr,op",
    [
        ("i = 1", Op.EQ),
        ("i == 1", Op.EQ),
        ("i != 1", Op.NE),
        ("i <> 1", Op.NE),
        ("i < 1", Op.LT),
        ("i <= 1", Op.LE),
        ("i > 1", Op.GT),
        ("i >= 1", Op.GE),
        ("i IN (1, 2)", Op.IN),
        ("i in(1,2)", Op.IN),
        ("i NOT IN (1)", Op.NOT_IN),
        ("i not   in (1)", Op.NOT_IN),
        ("i IS NULL", Op.IS_NULL),
        ("i is not null", Op.IS_NOT_NULL),
        ("s STARTSWITH 'a'", Op.STARTS_WITH),
        ("`i`=1", Op.EQ),
        ("  i>=1  ", Op.GE),
    ],
)
def test_parse_operators(expr: str, op: Op) -> None:
    p = parse_filter(expr, FIELDS)
    assert isinstance(p, Leaf)
    assert p.op is op
    assert p.field == ("s" if op is Op.STARTS_WITH else "i")


def test_parse_literals_per_type() -> None:
    assert lit("b = true") is True
    assert lit("b = 'FALSE'") is False
    assert lit("b = 1") is True
    assert lit("i8 = -128") == -128
    assert lit("i16 = '300'") == 300
    assert lit("i = 2.0") == 2
    assert lit("i = 1e3") == 1000
    assert lit("l = 9007199254740993") == 9007199254740993
    assert lit("l = 9007199254740993.0") == 9007199254740993  # exact, not via float
    assert lit("l = -9223372036854775808") == -(2**63)
    assert lit("d = 1.5") == 1.5
    assert lit("d = NaN") != lit("d = NaN")  # NaN
    assert math.isnan(lit("d = 'nan'"))
    assert lit("d = -Infinity") == -math.inf
    neg = lit("d = -0.0")
    assert neg == 0 and math.copysign(1, neg) == -1
    assert lit("f = 1.1") == 1.100000023841858  # float32(1.1), as Java's Float.valueOf
    assert lit("f = 1e39") == math.inf
    assert lit("dec = 21.005") == D("21.01")  # HALF_UP to the scale
    assert lit("dec = '-21.005'") == D("-21.01")
    assert str(lit("dec = 1")) == "1.00"
    big = "1234567890123456789012345678901234.56785"
    assert lit(f"dec38 = {big}") == D("1234567890123456789012345678901234.5679")
    assert lit(f"dec38 = '{big}'") == D("1234567890123456789012345678901234.5679")
    assert lit("c = 'ab'") == "ab"
    assert lit("s = 12") == "12"
    assert lit("s = 1.50") == "1.5"  # the oracle's str(float)
    assert lit('s = "x y"') == "x y"
    assert lit("s = bare") == "bare"
    assert lit("s = 'NULL'") == "NULL"
    assert lit("s = NULL") is None
    assert lit("s = ''") == ""
    assert lit("s = 'it''s'") == "it's"
    assert lit("s = 'ünï ''q'' '") == "ünï 'q' "
    assert lit("bin = 'AAEC/w=='") == b"\x00\x01\x02\xff"
    assert lit("dt = '2024-02-29'") == dt.date(2024, 2, 29)
    assert lit("dt = 2024-02-29") == dt.date(2024, 2, 29)
    assert lit("dt = '2024-02-29 10:00:00'") == dt.date(2024, 2, 29)
    assert lit("dt = 0") == dt.date(1970, 1, 1)
    assert lit("dt = -1") == dt.date(1969, 12, 31)
    assert lit("tm = '12:34:56.789999'") == dt.time(12, 34, 56, 789000)
    assert lit("tm0 = '12:34:56.789'") == dt.time(12, 34, 56)
    assert lit("tm = '7:05'") == dt.time(7, 5)


def test_parse_timestamps_each_precision() -> None:
    text = "'2020-01-02 03:04:05.123456789'"
    assert lit(f"ts0 = {text}") == dt.datetime(2020, 1, 2, 3, 4, 5)
    assert lit(f"ts3 = {text}") == dt.datetime(2020, 1, 2, 3, 4, 5, 123000)
    assert lit(f"ts6 = {text}") == dt.datetime(2020, 1, 2, 3, 4, 5, 123456)
    assert lit(f"ts9 = {text}") == 1577934245123456789
    assert lit(f"ltz3 = {text}") == dt.datetime(2020, 1, 2, 3, 4, 5, 123000, tzinfo=UTC)
    assert lit(f"ltz9 = {text}") == 1577934245123456789
    assert lit("ltz6 = '2020-01-02T03:04:05+01:00'") == dt.datetime(2020, 1, 2, 2, 4, 5, tzinfo=UTC)
    assert lit("ltz6 = '2020-01-02 03:04:05Z'") == dt.datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC)
    # like the oracle, an offset is honoured for TIMESTAMP too
    assert lit("ts6 = '2020-01-02 03:04:05-0130'") == dt.datetime(2020, 1, 2, 4, 34, 5)
    assert lit("ts6 = '2020-01-02'") == dt.datetime(2020, 1, 2)
    assert lit("ts6 = '0001-01-01 00:00:00'") == dt.datetime(1, 1, 1)
    assert lit("ts3 = '1969-12-31 23:59:59.9999'") == dt.datetime(1969, 12, 31, 23, 59, 59, 999000)
    assert lit("ts9 = '1969-12-31 23:59:59.999999999'") == -1


def test_parse_in_lists() -> None:
    assert lit("i IN (1, 2, NULL)") == (1, 2, None)
    assert lit("i IN (1,)") == (1,)  # trailing empty item dropped, like the oracle
    assert lit("s IN ('a,b', 'c')") == ("a,b", "c")
    assert lit("s IN ('<', '>', 'x''y')") == ("<", ">", "x'y")
    assert lit('s IN ("a,\\"b", \'c\')') == ('a,"b', "c")
    assert lit("dt IN ('2020-01-01', 18262)") == (dt.date(2020, 1, 1), dt.date(2020, 1, 1))
    p = parse_filter("i NOT IN (3)", FIELDS)
    assert p == Leaf("i", Op.NOT_IN, (3,))


@pytest.mark.parametrize(
    "expr,needle",
    [
        ("nope = 1", "nope"),
        ("I = 1", "'I'"),  # case-sensitive names
        ("i = 'abc'", "'abc'"),
        ("i = 1.5", "1.5"),
        ("i = true", "True"),
        ("i = NaN", "nan"),
        ("i8 = 128", "128"),
        ("i16 = -32769", "-32769"),
        ("i = 2147483648", "2147483648"),
        ("l = 9223372036854775808", "9223372036854775808"),
        ("b = 2", "2"),
        ("b = 'yes'", "yes"),
        ("d = 'abc'", "abc"),
        ("d = true", "True"),
        ("dec = 123456789.00", "does not fit"),
        ("dec = 99999999.995", "does not fit"),
        ("dec = 'NaN'", "NaN"),
        ("dec = 'x'", "'x'"),
        ("bin = 'abc'", "abc"),
        ("bin = 12", "12"),
        ("dt = '2020-13-01'", "2020-13-01"),
        ("dt = true", "True"),
        ("tm = '25:00'", "25:00"),
        ("tm = '10:61'", "10:61"),
        ("tm = 5", "5"),
        ("ts6 = 5", "5"),
        ("ts6 = '2020-02-30'", "2020-02-30"),
        ("ts6 = '2020-01-01 24:00:00'", "24:00"),
        ("ts6 = 'yesterday'", "yesterday"),
        ("ts6 = '10000-01-01'", "10000"),
        ("i IS NULL 1", "junk"),
        ("i IN 1, 2", "parenthesised"),
        ("i IN ()", "empty"),
        ("i IN (1,,2)", "missing"),
        ("s IN ('a)", "unterminated"),
        ("s IN ('a, b)", "unterminated"),
        ("i =", "missing"),
        ("i ~ 1", "cannot parse"),
        ("1i = 1", "cannot parse"),
        ("i STARTSWITH 'a'", "STARTSWITH"),
        ("arr = 1", "nested"),
        ("arr IN (1)", "nested"),
        ("i = [1]", "[1]"),
    ],
)
def test_parse_errors(expr: str, needle: str) -> None:
    with pytest.raises(FilterError) as e:
        parse_filter(expr, FIELDS)
    assert needle in str(e.value)


def test_parse_nested_null_checks_and_filters() -> None:
    assert parse_filter("arr IS NULL", FIELDS) == Leaf("arr", Op.IS_NULL)
    assert parse_filters([], FIELDS) is None
    assert parse_filters(["i > 1"], FIELDS) == Leaf("i", Op.GT, (1,))
    p = parse_filters(["i > 1", "pt IN ('a','b')", "s IS NULL"], FIELDS)
    assert p == And((Leaf("i", Op.GT, (1,)), Leaf("pt", Op.IN, ("a", "b")), Leaf("s", Op.IS_NULL)))
    assert str(p) == "(i > 1 AND pt IN ('a', 'b') AND s IS NULL)"


def test_model_and_builders() -> None:
    assert and_(equal("a", 1)) == equal("a", 1)
    nested = and_(and_(equal("a", 1), equal("b", 2)), equal("c", 3))
    assert isinstance(nested, And) and len(nested.children) == 3
    o = or_(equal("a", 1), or_(equal("a", 2), equal("a", 3)))
    assert isinstance(o, Or) and len(o.children) == 3
    assert referenced_fields(and_(o, is_null("z"), starts_with("s", "x"))) == {"a", "z", "s"}
    with pytest.raises(FilterError):
        and_()
    with pytest.raises(FilterError):
        Leaf("a", Op.EQ, ())
    with pytest.raises(FilterError):
        Leaf("a", Op.IS_NULL, (1,))
    with pytest.raises(FilterError):
        And(())
    assert is_in("a", [1, 2]).literals == (1, 2)
    assert hash(equal("a", D("1.0"))) == hash(equal("a", D("1.00")))
    # bind normalises builder literals like the parser does
    b = bind(
        and_(equal("dec", D("1.005")), less_than("f", 1.1), greater_than("ts9", "2020-01-01")),
        FIELDS,
    )
    assert b == And(
        (
            Leaf("dec", Op.EQ, (D("1.01"),)),
            Leaf("f", Op.LT, (1.100000023841858,)),
            Leaf("ts9", Op.GT, (1577836800 * 10**9,)),
        )
    )
    assert bind(equal("ts3", dt.datetime(2020, 1, 1, 0, 0, 0, 999999)), FIELDS) == equal(
        "ts3", dt.datetime(2020, 1, 1, 0, 0, 0, 999000)
    )
    with pytest.raises(FilterError, match="nope"):
        bind(equal("nope", 1), FIELDS)
    with pytest.raises(FilterError, match="'i'"):
        bind(equal("i", "x"), FIELDS)
    with pytest.raises(FilterError):
        bind(equal("i", True), FIELDS)
    with pytest.raises(FilterError):
        bind(equal("s", 1), FIELDS)
    with pytest.raises(FilterError):
        bind(equal("i8", 1000), FIELDS)


# ---------------------------------------------------------------------------------------------
# row semantics (filter_table == evaluate_row == hand-written Java expectations)

DOUBLES = [0.0, -0.0, NAN, 1.0, -1.0, math.inf, -math.inf, None, 2.5]


@pytest.mark.parametrize("col", ["d", "f"])
def test_float_semantics_java_compare_to(col: str) -> None:
    v = DOUBLES
    r = lambda e: rows(col, v, e.replace("x", col))  # noqa: E731
    assert r("x = 0.0") == [0]  # -0.0 is not 0.0 for Double.compareTo
    assert r("x = -0.0") == [1]
    assert r("x = NaN") == [2]  # NaN equals NaN
    assert r("x = 1") == [3]
    assert r("x != 1") == [0, 1, 2, 4, 5, 6, 8]  # nulls excluded, NaN included
    assert r("x != NaN") == [0, 1, 3, 4, 5, 6, 8]
    assert r("x != 0.0") == [1, 2, 3, 4, 5, 6, 8]
    assert r("x > 1") == [2, 5, 8]  # NaN is greater than everything
    assert r("x > Infinity") == [2]
    assert r("x > NaN") == []
    assert r("x >= NaN") == [2]
    assert r("x < NaN") == [0, 1, 3, 4, 5, 6, 8]
    assert r("x <= NaN") == [0, 1, 2, 3, 4, 5, 6, 8]
    assert r("x < 0.0") == [1, 4, 6]  # -0.0 < 0.0
    assert r("x < -0.0") == [4, 6]
    assert r("x <= -0.0") == [1, 4, 6]
    assert r("x <= 0.0") == [0, 1, 4, 6]
    assert r("x > -0.0") == [0, 2, 3, 5, 8]
    assert r("x > 0.0") == [2, 3, 5, 8]
    assert r("x >= 0.0") == [0, 2, 3, 5, 8]
    assert r("x >= -0.0") == [0, 1, 2, 3, 5, 8]
    assert r("x >= -1") == [0, 1, 2, 3, 4, 5, 8]
    assert r("x < 2.5") == [0, 1, 3, 4, 6]
    assert r("x IN (NaN, -0.0, 7)") == [1, 2]
    assert r("x IN (0.0, NULL)") == [0]
    assert r("x NOT IN (0.0, NaN, 1)") == [1, 4, 5, 6, 8]
    assert r("x NOT IN (1, NULL)") == []
    assert r("x IS NULL") == [7]  # NaN is not null
    assert r("x IS NOT NULL") == [0, 1, 2, 3, 4, 5, 6, 8]
    assert r("x = NULL") == []
    assert r("x != NULL") == []


def test_float32_literal_rounding() -> None:
    vals = [1.100000023841858, 1.0999999046325684, None]  # float32(1.1) and its predecessor
    assert rows("f", vals, "f = 1.1") == [0]
    assert rows("f", vals, "f < 1.1") == [1]
    # 16777217 is not a float32: the literal rounds (ties to even) to 2^24
    assert rows("f", [16777218.0, 16777216.0], "f = 16777217") == [1]
    assert rows("f", [16777218.0, 16777216.0], "f > 16777217") == [0]
    assert rows("d", [1.100000023841858, 1.1], "d = 1.1") == [1]


def test_integer_and_boolean_semantics() -> None:
    assert rows("i8", [-128, 0, 127, None], "i8 >= 0") == [1, 2]
    assert rows("i16", [-5, 5, None], "i16 != 5") == [0]
    assert rows("i", [1, 2, 3, None, 2], "i IN (2, NULL, 9)") == [1, 4]
    assert rows("i", [1, 2, 3, None], "i NOT IN (2, 9)") == [0, 2]
    assert rows("i", [1, 2, None], "i NOT IN (2, NULL)") == []
    assert rows("l", [-(2**63), 2**63 - 1, None], "l > -9223372036854775808") == [1]
    assert rows("l", [-(2**63), 2**63 - 1, None], "l <= -9223372036854775808") == [0]
    assert rows("b", [True, False, None], "b = true") == [0]
    assert rows("b", [True, False, None], "b != true") == [1]
    assert rows("b", [True, False, None], "b < true") == [1]  # Boolean.compareTo
    assert rows("b", [True, False, None], "b >= false") == [0, 1]
    assert rows("b", [True, False, None], "b IN (false, NULL)") == [1]
    assert rows("i", [None, None], "i IS NULL") == [0, 1]


def test_decimal_semantics() -> None:
    v = [D("1.00"), D("-1.00"), D("21.01"), None, D("99999999.99")]
    assert rows("dec", v, "dec = 21.005") == [2]  # literal rounded HALF_UP first
    assert rows("dec", v, "dec > -1") == [0, 2, 4]
    assert rows("dec", v, "dec <= '1'") == [0, 1]
    assert rows("dec", v, "dec IN (1, 99999999.99)") == [0, 4]
    assert rows("dec", v, "dec NOT IN (1)") == [1, 2, 4]
    big = [
        D("1234567890123456789012345678901234.5678"),
        D("-0.0001"),
        None,
        D("9999999999999999999999999999999999.9999"),
    ]
    assert rows("dec38", big, "dec38 >= 1234567890123456789012345678901234.5678") == [0, 3]
    assert rows("dec38", big, "dec38 < '0'") == [1]
    assert rows("dec38", big, "dec38 = -0.0001") == [1]
    assert rows("dec38", big, "dec38 != 9999999999999999999999999999999999.9999") == [0, 1]


def test_string_and_binary_semantics() -> None:
    v = ["a", "ab", "b", "", None, "it's", "ü", "Z", "a,b"]
    assert rows("s", v, "s = 'it''s'") == [5]
    assert rows("s", v, "s > 'a'") == [1, 2, 5, 6, 8]  # code point order: 'Z' < 'a' < 'ü'
    assert rows("s", v, "s < 'a'") == [3, 7]
    assert rows("s", v, "s STARTSWITH 'a'") == [0, 1, 8]
    assert rows("s", v, "s STARTSWITH ''") == [0, 1, 2, 3, 5, 6, 7, 8]
    assert rows("s", v, "s IN ('a,b', '', NULL)") == [3, 8]
    assert rows("s", v, "s NOT IN ('a', 'b')") == [1, 3, 5, 6, 7, 8]
    assert rows("s", v, "s != ''") == [0, 1, 2, 5, 6, 7, 8]
    assert rows("c", ["ab", "ab ", None], "c = 'ab'") == [0]  # no CHAR padding
    bv = [b"\x00", b"\x7f", b"\x80", b"\xff\x00", b"", None, b"\x80\x01"]
    assert rows("bin", bv, "bin = 'gA=='") == [2]
    # unsigned byte order (Paimon >= 2.0, pypaimon); Paimon 0.9 compared signed bytes
    assert rows("bin", bv, "bin > 'fw=='") == [2, 3, 6]
    assert rows("bin", bv, "bin < 'gA=='") == [0, 1, 4]
    assert rows("bin", bv, "bin STARTSWITH 'gA=='") == [2, 6]
    assert rows("bin", bv, "bin IN ('AA==', '')") == [0, 4]
    assert rows("bin", bv, "bin NOT IN ('AA==')") == [1, 2, 3, 4, 6]
    assert rows("bin", bv, starts_with("bin", b"\xff")) == [3]


def test_date_time_semantics() -> None:
    dv = [dt.date(2020, 1, 1), dt.date(1969, 12, 31), None, dt.date(9999, 12, 31)]
    assert rows("dt", dv, "dt >= '2020-01-01'") == [0, 3]
    assert rows("dt", dv, "dt < 0") == [1]
    assert rows("dt", dv, "dt IN ('2020-01-01', -1)") == [0, 1]
    tv = [dt.time(0, 0), dt.time(12, 0, 0, 5000), dt.time(23, 59, 59, 999000), None]
    assert rows("tm", tv, "tm > '12:00'") == [1, 2]
    assert rows("tm", tv, "tm = '12:00:00.005'") == [1]
    assert rows("tm", tv, "tm = '12:00:00.0059'") == [1]  # truncated to ms
    assert rows("tm", tv, "tm IN ('00:00', '23:59:59.999')") == [0, 2]
    assert rows("tm", tv, "tm NOT IN ('00:00')") == [1, 2]
    # TIME(0): the literal is truncated to seconds, like the oracle
    assert rows("tm0", [dt.time(1, 2, 3), dt.time(1, 2, 4)], "tm0 = '01:02:03.9'") == [0]


def test_timestamp_semantics_each_precision() -> None:
    base = dt.datetime(2020, 1, 2, 3, 4, 5)
    v0 = [base, base + dt.timedelta(seconds=1), None, dt.datetime(1, 1, 1), dt.datetime(9999, 1, 1)]
    assert rows("ts0", v0, "ts0 = '2020-01-02 03:04:05.999'") == [0]  # literal truncated
    assert rows("ts0", v0, "ts0 > '2020-01-02 03:04:05.5'") == [1, 4]
    assert rows("ts0", v0, "ts0 < '1000-01-01'") == [3]
    v3 = [base.replace(microsecond=123000), base.replace(microsecond=124000), None]
    assert rows("ts3", v3, "ts3 = '2020-01-02 03:04:05.1239'") == [0]
    assert rows("ts3", v3, "ts3 >= '2020-01-02T03:04:05.124'") == [1]
    v6 = [base.replace(microsecond=1), base, None, dt.datetime(1969, 12, 31, 23, 59, 59, 999999)]
    assert rows("ts6", v6, "ts6 > '2020-01-02 03:04:05'") == [0]
    assert rows("ts6", v6, "ts6 < '1970-01-01'") == [3]
    assert rows("ts6", v6, "ts6 IN ('2020-01-02 03:04:05.000001', NULL)") == [0]
    n = 1577934245123456789
    v9 = [n, n + 1, n - 1, None, -1, 0]
    assert rows("ts9", v9, "ts9 = '2020-01-02 03:04:05.123456789'") == [0]
    assert rows("ts9", v9, "ts9 > '2020-01-02 03:04:05.123456789'") == [1]
    assert rows("ts9", v9, "ts9 <= '2020-01-02 03:04:05.123456789'") == [0, 2, 4, 5]
    assert rows("ts9", v9, "ts9 < '1970-01-01'") == [4]
    assert rows("ts9", v9, "ts9 NOT IN ('1970-01-01', '1969-12-31 23:59:59.999999999')") == [
        0,
        1,
        2,
    ]
    # LTZ: instants; literals with an offset are converted to UTC
    lv = [
        dt.datetime(2020, 1, 2, 2, 4, 5, tzinfo=UTC),
        dt.datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC),
        None,
    ]
    assert rows("ltz6", lv, "ltz6 = '2020-01-02 03:04:05+01:00'") == [0]
    assert rows("ltz6", lv, "ltz6 > '2020-01-02 02:04:05Z'") == [1]
    assert rows("ltz3", lv, "ltz3 != '2020-01-02 03:04:05'") == [0]
    assert rows("ltz9", [n, None, n + 1], "ltz9 >= '2020-01-02 04:04:05.123456790+01:00'") == [2]


def test_timestamp_literal_not_representable_in_column_unit() -> None:
    # builder literals with more precision than the column (not bound: exact Java comparison)
    f = [DataField(0, "t", parse_sql_type("TIMESTAMP(3)"))]
    t = pa.table({"t": pa.array([0, 1, 2, None], pa.timestamp("ms"))})
    half = 1_500_000  # 1.5 ms in nanos, as an unbound int literal
    schema_us = pa.table({"t": t.column("t").cast(pa.timestamp("us"))})
    for tab in (t, schema_us):
        # bound: literal truncated to ms -> 1 ms
        assert filter_table(tab, greater_than("t", half), f).num_rows == 1
    # the Arrow layer itself handles a literal its unit cannot hold exactly
    from paimon_core.scan.predicate_arrow import _expr

    types = {"t": f[0].type}

    def sel(p: Leaf) -> int:
        return t.filter(_expr(p, types, t.schema)).num_rows

    assert sel(Leaf("t", Op.EQ, (half,))) == 0
    assert sel(Leaf("t", Op.NE, (half,))) == 3
    assert sel(Leaf("t", Op.LT, (half,))) == 2
    assert sel(Leaf("t", Op.LE, (half,))) == 2
    assert sel(Leaf("t", Op.GT, (half,))) == 1
    assert sel(Leaf("t", Op.GE, (half,))) == 1
    assert sel(Leaf("t", Op.IN, (half, 0))) == 1
    assert sel(Leaf("t", Op.NOT_IN, (half, 0))) == 2
    huge = dt.datetime(9999, 1, 1)
    tn = pa.table({"t": pa.array([0, None], pa.timestamp("ns"))})
    assert tn.filter(_expr(Leaf("t", Op.LT, (huge,)), types, tn.schema)).num_rows == 1
    assert tn.filter(_expr(Leaf("t", Op.GT, (huge,)), types, tn.schema)).num_rows == 0
    assert tn.filter(_expr(Leaf("t", Op.EQ, (huge,)), types, tn.schema)).num_rows == 0
    assert tn.filter(_expr(Leaf("t", Op.NE, (huge,)), types, tn.schema)).num_rows == 1
    tiny = dt.datetime(1, 1, 1)
    assert tn.filter(_expr(Leaf("t", Op.GE, (tiny,)), types, tn.schema)).num_rows == 1
    assert tn.filter(_expr(Leaf("t", Op.LE, (tiny,)), types, tn.schema)).num_rows == 0


def test_compound_and_null_semantics() -> None:
    t = pa.table(
        {
            "i": pa.array([1, None, 3, 4], pa.int32()),
            "s": pa.array(["x", "y", None, "x"], pa.string()),
        }
    )

    def sel(expr: Any) -> list[int]:
        got = filter_table(t, expr, FIELDS)
        return [r["i"] for r in got.to_pylist()]

    # a null in one OR branch does not hide a true other branch
    assert sel(or_(not_equal("i", 1), equal("s", "y"))) == [None, 3, 4]
    assert sel(and_(greater_than("i", 0), not_equal("s", "y"))) == [1, 4]
    assert sel(or_(is_null("i"), is_null("s"))) == [None, 3]
    assert sel(and_(is_not_null("i"), or_(less_than("i", 2), greater_or_equal("i", 4)))) == [1, 4]
    assert sel(or_(is_in("i", [None]), less_or_equal("i", 1))) == [1]
    assert sel(is_not_in("s", [])) == [1, None, 4]
    assert sel(is_in("s", [])) == []
    e = to_arrow_expression(equal("i", 1), FIELDS)
    assert "is_valid(i)" in str(e)


def test_filter_table_errors() -> None:
    t = pa.table({"i": pa.array([1], pa.int32())})
    with pytest.raises(FilterError):
        filter_table(t, equal("s", "x"), FIELDS)  # column missing from the table
    with pytest.raises(FilterError):
        filter_table(t, equal("zz", 1), FIELDS)  # unknown column
    with pytest.raises(FilterError):
        to_arrow_expression(starts_with("i", "1"), FIELDS)
    with pytest.raises(FilterError):
        evaluate_row(equal("i", 1), {"s": "x"})
    with pytest.raises(FilterError):
        evaluate_row(equal("i", 1), {"i": "x"})


# ---------------------------------------------------------------------------------------------
# stats pruning: LeafPredicate.test(rowCount, min, max, nullCounts), conservative


def mm(pred: Any, mn: Any, mx: Any, nc: int | None, rc: int = 10, col: str = "i") -> bool:
    return might_match(pred, {col: ColumnStats(mn, mx, nc)}, rc)


def test_might_match_truth_table() -> None:
    assert mm(equal("i", 5), 1, 10, 0)
    assert mm(equal("i", 1), 1, 10, 0) and mm(equal("i", 10), 1, 10, 0)
    assert not mm(equal("i", 0), 1, 10, 0)
    assert not mm(equal("i", 11), 1, 10, 0)
    assert not mm(not_equal("i", 5), 5, 5, 0)
    assert mm(not_equal("i", 5), 5, 6, 0)
    assert not mm(less_than("i", 1), 1, 10, 0)
    assert mm(less_than("i", 2), 1, 10, 0)
    assert not mm(less_or_equal("i", 0), 1, 10, 0)
    assert mm(less_or_equal("i", 1), 1, 10, 0)
    assert not mm(greater_than("i", 10), 1, 10, 0)
    assert mm(greater_than("i", 9), 1, 10, 0)
    assert not mm(greater_or_equal("i", 11), 1, 10, 0)
    assert mm(greater_or_equal("i", 10), 1, 10, 0)
    assert mm(is_in("i", [0, 5, 20]), 1, 10, 0)
    assert not mm(is_in("i", [0, 20, None]), 1, 10, 0)
    assert not mm(is_not_in("i", [3]), 3, 3, 0)
    assert mm(is_not_in("i", [3]), 3, 4, 0)
    assert not mm(is_not_in("i", [4, None]), 1, 10, 0)
    # nulls
    assert not mm(is_null("i"), 1, 10, 0)
    assert mm(is_null("i"), 1, 10, 1)
    assert mm(is_null("i"), 1, 10, None)
    assert mm(is_not_null("i"), None, None, 9)
    assert not mm(is_not_null("i"), None, None, 10)
    assert not mm(equal("i", 5), None, None, 10)  # all null
    assert not mm(not_equal("i", 5), None, None, 10)
    assert not mm(is_in("i", [5]), None, None, 10)
    assert mm(equal("i", 5), None, None, 3)  # unknown min/max
    assert mm(equal("i", 5), None, 10, None)
    assert not mm(equal("i", None), 1, 10, 0)  # = NULL matches nothing
    assert mm(equal("i", 0), 1, 10, 11)  # inconsistent stats: not trusted
    # missing column / unknown stats / incomparable
    assert might_match(equal("zz", 1), {}, 10)
    assert mm(equal("i", "x"), 1, 10, 0)
    assert mm(equal("i", 5), dt.date(2020, 1, 1), dt.date(2021, 1, 1), 0)
    # compound
    p = and_(equal("i", 5), equal("s", "a"))
    st = {"i": ColumnStats(1, 10, 0), "s": ColumnStats("b", "c", 0)}
    assert not might_match(p, st, 10)
    assert might_match(or_(equal("i", 5), equal("s", "a")), st, 10)
    assert not might_match(or_(equal("i", 50), equal("s", "a")), st, 10)


def test_might_match_strings_and_binary() -> None:
    s = "s"
    assert mm(starts_with(s, "ab"), "aa", "ac", 0, col=s)
    assert mm(starts_with(s, "ab"), "ab", "ab", 0, col=s)
    assert mm(starts_with(s, "ab"), "abz", "b", 0, col=s)
    assert not mm(starts_with(s, "ab"), "ac", "b", 0, col=s)
    assert not mm(starts_with(s, "ab"), "a", "aaz", 0, col=s)
    assert mm(starts_with(s, "ab"), "a", "ab", 0, col=s)
    assert not mm(equal(s, "ü"), "a", "z", 0, col=s)
    # binary stats order depends on the writer (Java 0.9 signed): never pruned on values
    assert mm(equal("bin", b"\x00"), b"\x80", b"\x01", 0, col="bin")
    assert mm(starts_with("bin", b"\x00"), b"\x80", b"\x81", 0, col="bin")
    assert not mm(equal("bin", b"\x00"), None, None, 10, col="bin")


def test_might_match_floats_conservative() -> None:
    d = "d"
    assert mm(greater_than(d, 100.0), 1.0, 2.0, 0, col=d)  # NaN rows may hide from stats
    assert mm(greater_or_equal(d, 100.0), 1.0, 2.0, 0, col=d)
    assert not mm(greater_than(d, NAN), 1.0, 2.0, 0, col=d)
    assert mm(not_equal(d, 1.0), 1.0, 1.0, 0, col=d)
    assert mm(is_not_in(d, [1.0]), 1.0, 1.0, 0, col=d)
    assert mm(equal(d, NAN), 1.0, 2.0, 0, col=d)
    assert not mm(equal(d, 3.0), 1.0, 2.0, 0, col=d)
    assert not mm(less_than(d, 1.0), 1.0, 2.0, 0, col=d)
    assert mm(less_than(d, 0.0), 0.0, 2.0, 0, col=d)  # a 0.0 min may be -0.0
    assert mm(greater_than(d, 0.0), -1.0, 0.0, 0, col=d)
    assert mm(equal(d, -0.0), 0.0, 1.0, 0, col=d)
    assert mm(equal(d, 0.0), -1.0, -0.0, 0, col=d)
    assert mm(equal(d, 5.0), NAN, NAN, 0, col=d)
    assert mm(less_than(d, -5.0), 1.0, NAN, 0, col=d)
    assert not mm(greater_than(d, 1.0), None, None, 10, col=d)


def test_might_match_timestamps() -> None:
    n = 1577934245123456789
    stats = {
        "ts9": ColumnStats(dt.datetime(2020, 1, 2), dt.datetime(2020, 1, 2, 3, 4, 5, 123456), 0)
    }
    # a datetime max may have lost nanoseconds: .123456 may really be .123456999
    p = parse_filter("ts9 > '2020-01-02 03:04:05.123456789'", FIELDS)
    assert might_match(p, stats, 5, fields=FIELDS)
    assert might_match(p, stats, 5)
    assert not might_match(parse_filter("ts9 > '2020-01-02 03:04:05.123457'", FIELDS), stats, 5)
    exact = {"ts9": ColumnStats(n - 10, n, 0)}
    assert not might_match(p, exact, 5)
    assert might_match(parse_filter("ts9 = '2020-01-02 03:04:05.123456789'", FIELDS), exact, 5)
    # p <= 6: datetimes are exact, no widening when the precision is known
    s6 = {"ts6": ColumnStats(dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 2), 0)}
    assert not might_match(greater_than("ts6", "2020-01-02"), s6, 5, fields=FIELDS)
    assert might_match(greater_or_equal("ts6", "2020-01-02"), s6, 5, fields=FIELDS)
    lz = {
        "ltz6": ColumnStats(
            dt.datetime(2020, 1, 1, tzinfo=UTC), dt.datetime(2020, 1, 2, tzinfo=UTC), 0
        )
    }
    assert not might_match(
        parse_filter("ltz6 < '2020-01-01 01:00:00+02:00'", FIELDS), lz, 1, fields=FIELDS
    )
    assert might_match(
        parse_filter("ltz6 < '2020-01-01 03:00:00+02:00'", FIELDS), lz, 1, fields=FIELDS
    )


def test_might_match_decimal_dates() -> None:
    st = {"dec": ColumnStats(D("1.00"), D("2.00"), 0)}
    assert might_match(parse_filter("dec = 1.995", FIELDS), st, 3)  # -> 2.00
    assert might_match(parse_filter("dec = 1.994", FIELDS), st, 3)  # -> 1.99
    assert not might_match(parse_filter("dec = 2.005", FIELDS), st, 3)  # -> 2.01
    assert not might_match(parse_filter("dec > 2", FIELDS), st, 3)
    sd = {"dt": ColumnStats(dt.date(2020, 1, 1), dt.date(2020, 12, 31), 0)}
    assert not might_match(parse_filter("dt < '2020-01-01'", FIELDS), sd, 3)
    assert might_match(parse_filter("dt IN ('2019-01-01', '2020-06-01')", FIELDS), sd, 3)


# ---------------------------------------------------------------------------------------------
# partition and bucket pruning


def test_partition_predicate_splitting() -> None:
    pt = ["pt", "dt"]
    assert partition_predicate(None, pt) is None
    assert partition_predicate(equal("i", 1), pt) is None
    assert partition_predicate(equal("pt", "a"), pt) == equal("pt", "a")
    p = and_(equal("pt", "a"), greater_than("i", 1), or_(equal("dt", 1), is_null("pt")))
    assert partition_predicate(p, pt) == And((equal("pt", "a"), or_(equal("dt", 1), is_null("pt"))))
    # an OR mixing partition and data columns is dropped
    assert partition_predicate(or_(equal("pt", "a"), equal("i", 1)), pt) is None
    assert partition_predicate(and_(or_(equal("pt", "a"), equal("i", 1)), equal("dt", 2)), pt) == (
        equal("dt", 2)
    )
    # nested ANDs are split too
    p2 = And((And((equal("pt", "a"), equal("i", 1))), equal("dt", 3)))
    assert partition_predicate(p2, pt) == And((equal("pt", "a"), equal("dt", 3)))


def test_evaluate_row_partitions() -> None:
    p = parse_filters(["pt IN ('a', 'b')", "dt >= '2020-01-01'"], FIELDS)
    assert p is not None
    assert evaluate_row(p, {"pt": "a", "dt": dt.date(2020, 1, 1)})
    assert not evaluate_row(p, {"pt": "c", "dt": dt.date(2020, 1, 1)})
    assert not evaluate_row(p, {"pt": None, "dt": dt.date(2020, 1, 1)})
    assert not evaluate_row(p, {"pt": "a", "dt": None})
    assert evaluate_row(parse_filter("pt IS NULL", FIELDS), {"pt": None})
    assert not evaluate_row(parse_filter("pt != 'a'", FIELDS), {"pt": None})
    assert evaluate_row(equal("d", NAN), {"d": NAN})
    assert not evaluate_row(equal("d", 0.0), {"d": -0.0})
    assert evaluate_row(greater_than("ts9", dt.datetime(2020, 1, 1)), {"ts9": 1577836800000000001})
    assert evaluate_row(
        equal("ltz6", dt.datetime(2020, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))),
        {"ltz6": dt.datetime(2020, 1, 1, tzinfo=UTC)},
    )


def test_bucket_key_equalities() -> None:
    keys = ["k1", "k2"]
    assert bucket_key_equalities(None, keys) is None
    assert bucket_key_equalities(equal("k1", 1), keys) is None  # k2 not pinned
    assert bucket_key_equalities(and_(equal("k1", 1), equal("k2", "a")), keys) == [(1, "a")]
    p = and_(is_in("k1", [1, 2, 2, None]), or_(equal("k2", "a"), equal("k2", "b")), equal("x", 0))
    assert bucket_key_equalities(p, keys) == [(1, "a"), (1, "b"), (2, "a"), (2, "b")]
    # several conjuncts on one key intersect
    p = and_(is_in("k1", [1, 2, 3]), is_in("k1", [3, 2, 9]), equal("k2", "a"))
    assert bucket_key_equalities(p, keys) == [(2, "a"), (3, "a")]
    assert bucket_key_equalities(and_(equal("k1", 1), equal("k1", 2), equal("k2", "a")), keys) == []
    assert bucket_key_equalities(and_(equal("k1", None), equal("k2", "a")), keys) == []
    # an OR over different columns or with a range does not pin
    assert (
        bucket_key_equalities(and_(or_(equal("k1", 1), equal("k2", "a")), equal("k2", "a")), keys)
        is None
    )
    assert (
        bucket_key_equalities(
            and_(or_(equal("k1", 1), greater_than("k1", 5)), equal("k2", "a")), keys
        )
        is None
    )
    assert bucket_key_equalities(or_(and_(equal("k1", 1), equal("k2", "a"))), keys) == [(1, "a")]
    assert bucket_key_equalities(and_(greater_than("k1", 1), equal("k2", "a")), keys) is None
    # at most 100 combinations
    p = and_(is_in("k1", range(10)), is_in("k2", range(10)))
    assert (
        bucket_key_equalities(p, keys) is not None
        and len(bucket_key_equalities(p, keys) or []) == 100
    )
    p = and_(is_in("k1", range(11)), is_in("k2", range(10)))
    assert bucket_key_equalities(p, keys) is None
    # Java equality: -0.0 and 0.0 are distinct keys, NaN is one key
    p = is_in("k", [0.0, -0.0, 0.0])
    got = bucket_key_equalities(p, ["k"])
    assert got is not None and len(got) == 2
    assert [math.copysign(1, v[0]) for v in got] == [1, -1]
    # NaN payloads are hashed as written (no normalisation): no bucket pruning on NaN
    assert bucket_key_equalities(is_in("k", [1.0, NAN]), ["k"]) is None
    assert bucket_key_equalities(is_in("k", [D("1.0"), D("1.00")]), ["k"]) == [(D("1.0"),)]
    assert bucket_key_equalities(equal("k", 1), []) is None


def test_filter_table_adapts_literals_to_the_actual_arrow_types() -> None:
    t = pa.table(
        {
            "s": pa.array(["a", "ab", None], pa.large_string()),
            "bin": pa.array([b"a", b"\x80", None], pa.large_binary()),
            "ts6": pa.array([0, 10**9, None], pa.timestamp("ns")),
            "ltz6": pa.array([0, 10**6, None], pa.timestamp("us", tz="+00:00")),
            "tm": pa.array([0, 5 * 10**6, None], pa.time64("us")),
            "i": pa.array([1, 2, None], pa.int64()),
            "dec": pa.array([D("1"), D("2.5"), None], pa.decimal128(20, 3)),
            "d": pa.array([1.0, NAN, None], pa.float32()),
        }
    )
    cases = {
        "s IN ('a', 'x')": 1,
        "s STARTSWITH 'a'": 2,
        "bin > 'YQ=='": 1,
        "bin IN ('gA==')": 1,
        "ts6 > '1970-01-01'": 1,
        "ts6 IN ('1970-01-01 00:00:01')": 1,
        "ltz6 >= '1970-01-01 00:00:01'": 1,
        "ltz6 IN ('1970-01-01 00:00:01', '1970-01-01')": 2,
        "tm = '00:00:05'": 1,
        "tm IN ('00:00:05', NULL)": 1,
        "i IN (2)": 1,
        "dec = 2.5": 1,
        "dec IN (1)": 1,
        "d > 0.5": 2,
        "d IN (NaN)": 1,
    }
    for expr, n in cases.items():
        assert filter_table(t, parse_filter(expr, FIELDS), FIELDS).num_rows == n, expr


def test_bind_accepts_the_value_convention_alternatives() -> None:
    b = bind(
        and_(
            equal("dt", 1),
            equal("tm", 3_723_456),
            equal("tm0", dt.time(1, 2, 3, 999999)),
            equal("ts6", dt.datetime(2020, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))),
            equal("ltz9", dt.datetime(2020, 1, 1, tzinfo=UTC)),
            equal("bin", bytearray(b"\x01")),
            equal("dec38", 5),
            equal("d", 1),
        ),
        FIELDS,
    )
    assert isinstance(b, And)
    assert [c.literals[0] for c in b.children if isinstance(c, Leaf)] == [
        dt.date(1970, 1, 2),
        dt.time(1, 2, 3, 456000),
        dt.time(1, 2, 3),
        dt.datetime(2020, 1, 1),
        1577836800 * 10**9,
        b"\x01",
        D("5.0000"),
        1.0,
    ]
    with pytest.raises(FilterError):
        bind(equal("tm", 86_400_000), FIELDS)
