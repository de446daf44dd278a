"""The --filter parser against the oracle's own parser (shared/oracle/paimon_oracle.py, loaded
in-process by path: it needs only the stdlib at import time).

For every (type, literal) both accept, our literal must equal the oracle's ``py_value`` (the
value both engines receive; FLOAT rounded to float32 as Java's ``Float.valueOf`` does, and
timestamps compared as epoch nanos). Inputs the oracle mishandles are listed separately.
"""

from __future__ import annotations

import datetime as dt
import math
from types import ModuleType
from typing import Any

import pytest

from paimon_core.errors import FilterError
from paimon_core.scan.predicate import Leaf, parse_filter
from paimon_core.scan.predicate_literal import timestamp_nanos, to_float32
from paimon_core.types import DataField, parse_sql_type

LITERALS: dict[str, list[str]] = {
    "BOOLEAN": ["true", "false", "'TRUE'", "'false'", "0", "1", "NULL"],
    "TINYINT": ["0", "-128", "127", "'12'", "3.0", "1e2", "'-7'", "NULL"],
    "INT": ["0", "-2147483648", "2147483647", "'42'", "2.0", "-0", "1E3", "'+5'"],
    "BIGINT": ["9223372036854775807", "-9223372036854775808", "'123'", "4.0"],
    "FLOAT": [
        "1.1",
        "0.1",
        "-0.0",
        "NaN",
        "Infinity",
        "-Infinity",
        "'nan'",
        "'-inf'",
        "1e-40",
        "3.4028235e38",
        "16777217",
        "'2.5'",
        "0.30000001192092896",
        "1e39",
    ],
    "DOUBLE": ["1.1", "-0.0", "0", "NaN", "'Infinity'", "1e308", "5e-324", "'3.25'", "-7"],
    "DECIMAL(10, 2)": [
        "21.005",
        "-21.005",
        "'1.2'",
        "0",
        "99999999.99",
        "'-0.001'",
        "1e3",
        "0.005",
        "12345678.994",
    ],
    "DECIMAL(38, 10)": [
        "1234567890123456789012345678.0123456789",
        "'-1234567890123456789012345678.01234567895'",
        "1e-11",
        "5e-11",
    ],
    "DECIMAL(20, 0)": ["12345678901234567890", "0.5", "-0.5", "1.4999999999999999999999"],
    "STRING": [
        "'abc'",
        "''",
        "'it''s'",
        "'a''''b'",
        "bare",
        "12",
        "1.50",
        "'NULL'",
        "NULL",
        '"json"',
        "'ünï'",
        "'x y '",
        "'a'b'",
    ],
    "CHAR(2)": ["'ab'", "'a'"],
    "BYTES": ["'AAEC/w=='", "''", "'gA=='", "'YWJj'"],
    "DATE": [
        "'2024-02-29'",
        "2024-02-29",
        "'0001-01-01'",
        "'9999-12-31'",
        "0",
        "-1",
        "19000",
        "'2020-01-02 10:11:12'",
        "'20200102'",
    ],
    "TIME(3)": ["'12:34:56.789'", "'00:00'", "'23:59:59.999999'", "'1:02:03'", "'12:34:56.7'"],
    "TIME(0)": ["'12:34:56.789'", "'23:59'"],
    "TIME(1)": ["'12:34:56.789'"],
}
TS = [
    "'2020-01-02 03:04:05.123456789'",
    "'2020-01-02T03:04:05'",
    "'2020-01-02'",
    "'1969-12-31 23:59:59.999999999'",
    "'2020-01-02 03:04:05.5Z'",
    "'2020-01-02 03:04+01:00'",
    "'2020-01-02 03:04:05-0130'",
    "'0001-01-01 00:00:00'",
    "'2262-04-11 23:47:16.854775807'",
    "'1677-09-21 00:12:43.145224192'",
    "'2020-1-2 3:04:05.1'",
]
for _p in (0, 1, 3, 6, 7, 9):
    LITERALS[f"TIMESTAMP({_p})"] = TS
    LITERALS[f"TIMESTAMP({_p}) WITH LOCAL TIME ZONE"] = TS


def _ours(tname: str, text: str, op: str = "=") -> Any:
    f = [DataField(0, "c", parse_sql_type(tname))]
    p = parse_filter(f"c {op} {text}", f)
    assert isinstance(p, Leaf)
    return p.literals


def _theirs(oracle: ModuleType, tname: str, text: str, op: str = "=") -> Any:
    t = oracle.parse_type(tname)
    col, _, _, raw = oracle.parse_filter(f"c {op} {text}", [("c", t)])
    assert col == "c"
    raws = raw if isinstance(raw, list) else [raw]
    return tuple(oracle.py_value(r, t) for r in raws), t


def _norm(v: Any, kind: str) -> Any:
    if v is None:
        return None
    if kind in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return timestamp_nanos(v)
    if kind == "FLOAT":
        return ("nan",) if math.isnan(v) else (to_float32(v), math.copysign(1, v))
    if kind == "DOUBLE":
        return ("nan",) if math.isnan(v) else (v, math.copysign(1, v))
    if kind == "DECIMAL":
        return (v, str(v))
    return (type(v).__name__, v)


@pytest.mark.parametrize("tname,text", [(t, x) for t, xs in LITERALS.items() for x in xs])
def test_literal_equals_oracle_py_value(oracle: ModuleType, tname: str, text: str) -> None:
    theirs, t = _theirs(oracle, tname, text)
    ours = _ours(tname, text)
    kind = t.kind
    assert [_norm(v, kind) for v in ours] == [_norm(v, kind) for v in theirs]


def test_in_lists_equal_oracle(oracle: ModuleType) -> None:
    for tname, text in [
        ("INT", "(1, 2, NULL)"),
        ("STRING", "('a', 'b''c', NULL, d)"),
        ("DATE", "('2020-01-01', 5)"),
        ("DOUBLE", "(NaN, -0.0, 1)"),
        ("DECIMAL(5, 2)", "(1.005, '2')"),
        ("TIMESTAMP(9)", "('2020-01-01 00:00:00.000000001')"),
        ("INT", "(1,)"),
    ]:
        for op in ("IN", "NOT IN"):
            theirs, t = _theirs(oracle, tname, text, op)
            ours = _ours(tname, text, op)
            assert [_norm(v, t.kind) for v in ours] == [_norm(v, t.kind) for v in theirs]


@pytest.mark.parametrize(
    "expr,oracle_literal,ours",
    [
        # the oracle's regex takes '=' before '==' and reads the rest as a bare word
        ("c == 'x'", "= 'x'", "x"),
        # the oracle splits IN lists on every comma and tracks <, > as brackets
        ("c IN ('a,b')", ["'a", "b'"], ("a,b",)),
    ],
)
def test_known_oracle_parser_quirks(
    oracle: ModuleType, expr: str, oracle_literal: Any, ours: Any
) -> None:
    t = oracle.parse_type("STRING")
    assert oracle.parse_filter(expr, [("c", t)])[3] == oracle_literal
    p = parse_filter(expr, [DataField(0, "c", parse_sql_type("STRING"))])
    assert isinstance(p, Leaf)
    assert p.literals == (ours if isinstance(ours, tuple) else (ours,))


@pytest.mark.parametrize(
    "tname,text",
    [
        ("INT", "'abc'"),
        ("TINYINT", "1.5"),
        ("DECIMAL(5, 2)", "1000"),
        ("DECIMAL(5, 2)", "'x'"),
        ("BOOLEAN", "'yes'"),
        ("TIMESTAMP(6)", "5"),
        ("TIMESTAMP(6)", "'nope'"),
        ("TIME(3)", "'1:2'"),
        ("DATE", "'2020-13-01'"),
    ],
)
def test_both_reject(oracle: ModuleType, tname: str, text: str) -> None:
    with pytest.raises(Exception):  # noqa: B017 - the oracle raises UsageError/ValueError
        _theirs(oracle, tname, text)
    with pytest.raises(FilterError):
        _ours(tname, text)


def test_time_literal_type(oracle: ModuleType) -> None:
    (v,), _ = _theirs(oracle, "TIME(3)", "'01:02:03.456'")
    assert v == dt.time(1, 2, 3, 456000) == _ours("TIME(3)", "'01:02:03.456'")[0]
