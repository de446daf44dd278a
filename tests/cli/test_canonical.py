"""paimon_core.cli.canonical against the oracle's own canonicaliser (shared/oracle).

The oracle module needs only the stdlib at import time (pyarrow/numpy are imported lazily
inside its functions), so it is loaded by path into this interpreter. When the oracle file is
not there (shared/ not checked out beside the repo) the comparison tests are skipped locally and
fail under CI=true; the hand-written goldens run everywhere.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import random
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest

from paimon_core.cli.canonical import canon_values, canonical_lines
from paimon_core.errors import SchemaError
from paimon_core.types import DataField, parse_sql_type, to_arrow_type


def _fields(cols: list[tuple[str, str]]) -> list[DataField]:
    return [DataField(i, n, parse_sql_type(t)) for i, (n, t) in enumerate(cols)]


def _table(cols: list[tuple[str, str]], data: dict[str, list[Any]]) -> pa.Table:
    arrays = []
    for name, t in cols:
        arrays.append(pa.array(data[name], type=to_arrow_type(parse_sql_type(t))))
    return pa.Table.from_arrays(arrays, names=[n for n, _ in cols])


def _compare(oracle: ModuleType, table: pa.Table, cols: list[tuple[str, str]],
             kind_col: str | None = None) -> list[str]:
    ours = canonical_lines(table, _fields(cols), kind_col)
    theirs = oracle.canonical_lines(table, [(n, oracle.parse_type(t)) for n, t in cols], kind_col)
    assert ours == theirs
    return ours


def _us(s: str) -> int:
    d = dt.datetime.fromisoformat(s) - dt.datetime(1970, 1, 1)
    return (d.days * 86400 + d.seconds) * 10**6 + d.microseconds


# --------------------------------------------------------------------------------------------
# hand-written goldens (do not depend on the oracle)


def test_golden_scalars() -> None:
    cols = [("b", "BOOLEAN"), ("i", "INT"), ("f", "FLOAT"), ("d", "DOUBLE"),
            ("dec", "DECIMAL(10, 3)"), ("s", "STRING"), ("bin", "BYTES"), ("dt", "DATE"),
            ("tm", "TIME(3)"), ("ts", "TIMESTAMP(3)"), ("ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE")]
    data: dict[str, list[Any]] = {
        "b": [True, None], "i": [-7, None], "f": [1.1, float("nan")], "d": [-0.0, float("-inf")],
        "dec": [decimal.Decimal("12.3"), None], "s": ['é"\\\n', None], "bin": [b"\x00\xff", None],
        "dt": [dt.date(1, 1, 1), None], "tm": [dt.time(1, 2, 3, 45000), None],
        "ts": [_us("1969-12-31 23:59:59.999") // 1000, None],
        "ltz": [_us("2024-02-29 12:00:00.000001"), None],
    }
    lines = canonical_lines(_table(cols, data), _fields(cols))
    assert lines == [
        '{"b":null,"i":null,"f":"NaN","d":"-Infinity","dec":null,"s":null,"bin":null,'
        '"dt":null,"tm":null,"ts":null,"ltz":null}',
        '{"b":true,"i":-7,"f":1.1,"d":-0.0,"dec":"12.300","s":"é\\"\\\\\\n","bin":"AP8=",'
        '"dt":"0001-01-01","tm":"01:02:03.045","ts":"1969-12-31 23:59:59.999",'
        '"ltz":"2024-02-29 12:00:00.000001Z"}',
    ]


def test_golden_nested_and_kind() -> None:
    cols = [("m", "MAP<INT, STRING>"), ("a", "ARRAY<INT>"), ("r", "ROW<x INT, y STRING>")]
    table = _table(cols, {
        "m": [[(9, "a"), (10, "b")], None],
        "a": [[3, None, 1], []],
        "r": [{"x": 1, "y": None}, None],
    }).append_column("k", pa.array(["-U", "+I"]))
    lines = canonical_lines(table, _fields(cols), kind_col="k")
    # map keys sort by their JSON text: "10" < "9"
    assert lines == [
        '{"_kind":"+I","m":null,"a":[],"r":null}',
        '{"_kind":"-U","m":[[10,"b"],[9,"a"]],"a":[3,null,1],"r":{"x":1,"y":null}}',
    ]


def test_kind_codes_as_bytes() -> None:
    cols = [("i", "INT")]
    table = _table(cols, {"i": [1, 2, 3, 4]}).append_column("_k", pa.array([0, 1, 2, 3], pa.int8()))
    assert canonical_lines(table, _fields(cols), "_k") == [
        '{"_kind":"+I","i":1}', '{"_kind":"+U","i":3}', '{"_kind":"-D","i":4}',
        '{"_kind":"-U","i":2}']


def test_multiset_from_map_of_counts() -> None:
    t = parse_sql_type("MULTISET<STRING>")
    arr = pa.array([[("b", 2), ("a", 1)], None, []], type=to_arrow_type(t))
    assert canon_values(arr, t) == [["a", "b", "b"], None, []]
    # and from a plain list (what a list-typed engine returns)
    assert canon_values(pa.array([[3, 1, 2]]), parse_sql_type("MULTISET<INT>")) == [[1, 2, 3]]


def test_errors() -> None:
    cols = [("i", "INT")]
    with pytest.raises(SchemaError):
        canonical_lines(_table(cols, {"i": [1]}), _fields([*cols, ("j", "INT")]))
    with pytest.raises(SchemaError):
        canonical_lines(_table(cols, {"i": [1]}), _fields(cols), kind_col="nope")
    with pytest.raises(SchemaError):
        canon_values(pa.array(["x"]), parse_sql_type("TIMESTAMP(3)"))


def test_empty_table() -> None:
    cols = [("i", "INT"), ("a", "ARRAY<STRING>")]
    assert canonical_lines(_table(cols, {"i": [], "a": []}), _fields(cols)) == []


# --------------------------------------------------------------------------------------------
# against the oracle

_FLOATS = [0.0, -0.0, 1.1, 0.1, -2.5, float("nan"), float("inf"), float("-inf"), 3.4028235e38,
           -3.4028235e38, 1e-45, 1.17549435e-38, 1e-5, 1e-4, 123456.789, 1e16, 1e15, 16777217.0,
           0.3, 1 / 3, None]
_DOUBLES = [*_FLOATS, 1e300, 5e-324, 0.1 + 0.2, 2.0**53 + 1, 1e-7, 123456789012345680.0]


def test_oracle_numbers(oracle: ModuleType) -> None:
    cols = [("f", "FLOAT"), ("d", "DOUBLE")]
    n = max(len(_FLOATS), len(_DOUBLES))
    data = {"f": (_FLOATS * 2)[:n], "d": _DOUBLES[:n]}
    _compare(oracle, _table(cols, data), cols)


def test_oracle_ints_and_bools(oracle: ModuleType) -> None:
    cols = [("t", "TINYINT"), ("s", "SMALLINT"), ("i", "INT NOT NULL"), ("b", "BIGINT"),
            ("z", "BOOLEAN")]
    data: dict[str, list[Any]] = {"t": [-128, 127, 0, None], "s": [-32768, 32767, None, 1],
            "i": [-(2**31), 2**31 - 1, 0, 5], "b": [-(2**63), 2**63 - 1, None, 0],
            "z": [True, False, None, True]}
    _compare(oracle, _table(cols, data), cols)


def test_oracle_decimals(oracle: ModuleType) -> None:
    cols = [("a", "DECIMAL(5, 2)"), ("b", "DECIMAL(18, 4)"), ("c", "DECIMAL(38, 10)"),
            ("d", "DECIMAL(10, 0)"), ("e", "DECIMAL(38, 38)")]
    D = decimal.Decimal
    data: dict[str, list[Any]] = {
        "a": [D("0"), D("-0.01"), D("999.99"), D("-999.99"), None, D("1.5")],
        "b": [D("0.0001"), D("-99999999999999.9999"), D("1"), None, D("12.3400"), D("0")],
        "c": [D("0.0000000001"), D("-0.0000000001"), D("9" * 28 + "." + "9" * 10),
              D("-1" + "0" * 27), None, D("0")],
        "d": [D("0"), D("-1"), D("9999999999"), None, D("42"), D("-42")],
        "e": [D("0." + "0" * 37 + "1"), D("-0." + "9" * 38), D("0"), None, D("0.5"), D("0")],
    }
    lines = _compare(oracle, _table(cols, data), cols)
    assert '"c":"0.0000000001"' in "".join(lines)  # not 1E-10


def test_oracle_strings_and_binary(oracle: ModuleType) -> None:
    cols = [("c", "CHAR(3)"), ("v", "VARCHAR(20)"), ("s", "STRING"), ("bn", "BINARY(4)"),
            ("vb", "BYTES")]
    data: dict[str, list[Any]] = {
        "c": ["a", "abc", None, "ü", "", " x ", "\x00", "a/b"],
        "v": ['"quoted"', "back\\slash", "tab\tnl\n", "\u2028\u2029", "\x7f\x1f", "😀 emoji",
             None, "x=y%"],
        "s": ["a" * 100, "ünïcødé 中文", "", None, "\ud7ff\ue000", "</script>", "'", "€"],
        "bn": [b"\x00\x00\x00\x00", b"\xff\xfe\xfd\xfc", None, b"abcd", b"", b"a", b"\n", b"?>?"],
        "vb": [b"", None, bytes(range(256)), b"x", b"\x00", b"==", b"\xff" * 7, b"hello world"],
    }
    _compare(oracle, _table(cols, data), cols)


def test_oracle_temporal(oracle: ModuleType) -> None:
    cols = [("d", "DATE"), ("t0", "TIME(0)"), ("t3", "TIME(3)"), ("t6", "TIME(6)"),
            ("s0", "TIMESTAMP(0)"), ("s3", "TIMESTAMP(3)"), ("s6", "TIMESTAMP(6)"),
            ("s9", "TIMESTAMP(9)"), ("l3", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
            ("l9", "TIMESTAMP_LTZ(9)"), ("l0", "TIMESTAMP(0) WITH LOCAL TIME ZONE")]
    us = [_us(s) for s in ("1970-01-01 00:00:00", "1969-12-31 23:59:59.999999",
                           "0001-01-01 00:00:00", "9999-12-31 23:59:59.999999",
                           "2024-02-29 13:14:15.123456", "1900-06-15 08:00:00.5")]
    ns9 = [0, -1, -(2**63) + 1, 2**63 - 1, 1_700_000_000_123_456_789, -123_456_789]
    data: dict[str, list[Any]] = {
        "d": [-719162, -1, 0, 2932896, 19782, None],
        "t0": [0, 86399000, None, 3723000, 1000, 59000],
        "t3": [0, 86399999, 45296789, None, 1, 999],
        "t6": [0, 1, 86399999, 500, None, 12],
        "s0": [u // 10**6 for u in us[:5]] + [None],
        "s3": [u // 1000 for u in us[:5]] + [None],
        "s6": us,
        "s9": [*ns9[:5], None],
        "l3": [u // 1000 for u in us],
        "l9": ns9,
        "l0": [None] + [u // 10**6 for u in us[1:]],
    }
    _compare(oracle, _table(cols, data), cols)


def test_oracle_other_arrow_units(oracle: ModuleType) -> None:
    """Timestamps in a finer unit than the precision, large_string, chunked and sliced arrays."""
    cols = [("ts", "TIMESTAMP(3)"), ("l", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("s", "STRING"),
            ("t", "TIME(3)"), ("c", "TIMESTAMP(6)"), ("c9", "TIMESTAMP(9)")]
    ts = pa.array([0, -1_500_000, 1_234_567_890, None], pa.timestamp("ns"))
    coarse = pa.array([0, -1, 253402300799, None], pa.timestamp("s"))  # coarser than p
    ltz = pa.array([0, -1, 10**12, 5], pa.timestamp("ns", tz="Europe/Berlin"))
    s = pa.chunked_array([pa.array(["x", None], pa.large_string()),
                          pa.array(["é", "z"], pa.large_string())])
    t = pa.array([0, 1_500, None, 86_399_999_999], pa.time64("us"))
    table = pa.table({"ts": ts, "l": ltz, "s": s, "t": t, "c": coarse,
                      "c9": pa.array([1, -1, None, 10**13], pa.timestamp("ms"))})
    _compare(oracle, table, cols)
    _compare(oracle, table.slice(1, 2), cols)


def test_oracle_nested(oracle: ModuleType) -> None:
    cols = [
        ("a", "ARRAY<INT>"),
        ("as_", "ARRAY<STRING NOT NULL>"),
        ("m", "MAP<STRING, DOUBLE>"),
        ("mi", "MAP<INT, ARRAY<TIMESTAMP(3)>>"),
        ("md", "MAP<DATE, DECIMAL(20, 2)>"),
        ("r", "ROW<x INT, y STRING, z ARRAY<FLOAT>, w ROW<q BYTES, t TIME(3)>>"),
        ("ar", "ARRAY<ROW<k STRING, v MAP<STRING, INT>>>"),
        ("aa", "ARRAY<ARRAY<BIGINT>>"),
    ]
    D = decimal.Decimal
    data: dict[str, list[Any]] = {
        "a": [[1, None, 3], [], None, [2**31 - 1]],
        "as_": [["x", "y"], None, [], ["z" * 20]],
        "m": [{"b": 1.5, "a": float("nan"), "": -0.0}, {}, None, {"k": None}],
        "mi": [[(10, [0, None]), (9, []), (-1, None)], None, [], [(0, [1])]],
        "md": [[(0, D("1.10")), (-1, None)], None, [(19782, D("-123456789012345678.99"))], []],
        "r": [{"x": 1, "y": "a", "z": [1.1, None], "w": {"q": b"\x01", "t": 1}},
              None,
              {"x": None, "y": None, "z": None, "w": None},
              {"x": 0, "y": "", "z": [], "w": {"q": None, "t": None}}],
        "ar": [[{"k": "a", "v": {"z": 1, "a": None}}, None], None, [], [{"k": None, "v": None}]],
        "aa": [[[1, 2], None, []], None, [[]], [[2**62]]],
    }
    table = _table(cols, data)
    _compare(oracle, table, cols)
    _compare(oracle, table.slice(1, 3), cols)
    _compare(oracle, pa.concat_tables([table.slice(2), table.slice(0, 2)]), cols)


def test_oracle_random_battery(oracle: ModuleType) -> None:
    """2 000 seeded random rows over every atomic type, a nested column and a kind column."""
    rnd = random.Random(20240601)
    cols = [("id", "BIGINT"), ("f", "FLOAT"), ("d", "DOUBLE"), ("dec", "DECIMAL(12, 3)"),
            ("big", "DECIMAL(30, 6)"), ("s", "STRING"), ("b", "BYTES"), ("dt", "DATE"),
            ("ts", "TIMESTAMP(6)"), ("ns", "TIMESTAMP(9)"), ("m", "MAP<STRING, INT>")]
    n = 2000
    alphabet = "ab/=% \"\\é中😀\n"

    def maybe(v: Any) -> Any:
        return None if rnd.random() < 0.1 else v

    data: dict[str, list[Any]] = {
        "id": [maybe(rnd.randint(-(2**63), 2**63 - 1)) for _ in range(n)],
        "f": [maybe(rnd.choice([rnd.uniform(-1e6, 1e6), rnd.random() * 1e-30,
                                 float("nan"), -0.0])) for _ in range(n)],
        "d": [maybe(rnd.choice([rnd.uniform(-1e6, 1e6), rnd.random() * 1e-300, 1e22,
                                 float("inf")])) for _ in range(n)],
        "dec": [maybe(decimal.Decimal(rnd.randint(-(10**12) + 1, 10**12 - 1)).scaleb(-3))
                for _ in range(n)],
        "big": [maybe(decimal.Decimal(rnd.randint(-(10**30) + 1, 10**30 - 1)).scaleb(-6))
                for _ in range(n)],
        "s": [maybe("".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 12))))
              for _ in range(n)],
        "b": [maybe(rnd.randbytes(rnd.randint(0, 9))) for _ in range(n)],
        "dt": [maybe(rnd.randint(-719162, 2932896)) for _ in range(n)],
        "ts": [maybe(rnd.randint(-62135596800 * 10**6, 253402300799 * 10**6)) for _ in range(n)],
        "ns": [maybe(rnd.randint(-(2**63) + 1, 2**63 - 1)) for _ in range(n)],
        "m": [maybe({"".join(rnd.choice(alphabet) for _ in range(3)): maybe(rnd.randint(-9, 9))
                     for _ in range(rnd.randint(0, 4))}) for _ in range(n)],
    }
    table = _table(cols, data)
    table = table.append_column("_k", pa.array([rnd.choice(["+I", "-U", "+U", "-D"])
                                                 for _ in range(n)]))
    lines = _compare(oracle, table, cols, kind_col="_k")
    assert len(lines) == n
    assert all(json.loads(x) for x in lines[:5])


def test_oracle_float32_bit_patterns(oracle: ModuleType) -> None:
    """Shortest float32 digits on 200 000 random bit patterns (NaN payloads, subnormals...)."""
    import numpy as np

    bits = np.random.default_rng(7).integers(0, 2**32, 200_000, dtype=np.uint64)
    floats = pa.array(bits.astype(np.uint32).view(np.float32))
    doubles = pa.array(np.random.default_rng(8).integers(0, 2**64, 200_000, dtype=np.uint64)
                       .view(np.float64))
    cols = [("f", "FLOAT"), ("d", "DOUBLE")]
    _compare(oracle, pa.table({"f": floats, "d": doubles}), cols)
