"""Write-side column statistics vs a row-by-row model of Java's collectors."""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_core.datafile.stats import (
    DEFAULT_STATS_MODE,
    KEY_STATS_MODE,
    StatsMode,
    collect_stats,
    column_stats,
    column_stats_runs,
    parse_stats_mode,
    simple_stats,
    stats_modes,
    truncate_max,
)
from paimon_core.errors import SchemaError
from paimon_core.spec.binary_row import deserialize_binary_row, serialize_binary_row
from paimon_core.types import AtomicType, DataType, TypeRoot, parse_sql_type
from tests.profiles import examples
from tests.rowgen import ALL_TYPES, arrow_column, random_rows

FULL = StatsMode("full")
TYPES = [
    "BOOLEAN", "TINYINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(10, 2)",
    "DECIMAL(38, 10)", "STRING", "BYTES", "DATE", "TIME", "TIMESTAMP(3)", "TIMESTAMP(6)",
    "TIMESTAMP(9)", "TIMESTAMP_LTZ(6)",
]


def java_order(v: Any, t: AtomicType) -> Any:
    """Sort key of Java's comparison (Double.compare for floats, unsigned bytes for text)."""
    if t.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        if math.isnan(v):
            return (1, 0.0, 0)
        return (0, v, 0 if math.copysign(1.0, v) < 0 else 1)
    if t.root in (TypeRoot.VARCHAR, TypeRoot.CHAR):
        return v.encode("utf-8")
    return v


def reference(values: list[Any], t: AtomicType) -> tuple[Any, Any, int]:
    present = [v for v in values if v is not None]
    nulls = len(values) - len(present)
    if not present:
        return None, None, nulls
    lo = present[0]
    hi = present[0]
    for v in present[1:]:  # a streaming collector: replace only on strictly smaller/greater
        if java_order(v, t) < java_order(lo, t):
            lo = v
        if java_order(v, t) > java_order(hi, t):
            hi = v
    return lo, hi, nulls


def bits(row: bytes) -> bytes:
    return row


@settings(max_examples=examples(60))
@given(seed=st.integers(0, 2**32), n=st.integers(1, 40), null_rate=st.sampled_from([0, 0.3, 1]))
def test_full_stats_match_row_by_row_model(seed: int, n: int, null_rate: float) -> None:
    types: list[DataType] = [parse_sql_type(s) for s in TYPES]
    rows = random_rows(types, n, seed, null_rate)
    cols = [arrow_column([r[i] for r in rows], t) for i, t in enumerate(types)]
    stats = collect_stats(cols, types, [FULL] * len(types))
    refs = [reference([r[i] for r in rows], t) for i, t in enumerate(types)]  # type: ignore[arg-type]
    assert stats.null_counts == tuple(r[2] for r in refs)
    assert stats.min_values == serialize_binary_row([r[0] for r in refs], types)
    assert stats.max_values == serialize_binary_row([r[1] for r in refs], types)


def _f(v: float) -> bytes:
    return struct.pack("<d", v)


@pytest.mark.parametrize(
    "values, lo, hi",
    [
        ([1.0, float("nan"), -0.0, 0.0, None], -0.0, float("nan")),
        ([0.0, -0.0], -0.0, 0.0),
        ([-0.0, 0.0], -0.0, 0.0),
        ([-0.0, -0.0], -0.0, -0.0),
        ([0.0], 0.0, 0.0),
        ([float("nan"), None, float("nan")], float("nan"), float("nan")),
        ([float("inf"), float("-inf")], float("-inf"), float("inf")),
        ([float("nan"), float("inf")], float("inf"), float("nan")),
    ],
)
def test_java_double_order(values: list[float | None], lo: float, hi: float) -> None:
    t = parse_sql_type("DOUBLE")
    s = column_stats(pa.array(values, pa.float64()), t, FULL)
    assert _f(s.min) == _f(lo) or (math.isnan(s.min) and math.isnan(lo))
    assert _f(s.max) == _f(hi) or (math.isnan(s.max) and math.isnan(hi))
    assert math.copysign(1, s.min) == math.copysign(1, lo)
    assert math.copysign(1, s.max) == math.copysign(1, hi)
    assert s.null_count == values.count(None)


def test_float32_nan_max() -> None:
    t = parse_sql_type("FLOAT")
    s = collect_stats([pa.array([1.5, float("nan")], pa.float32())], [t], [FULL])
    assert deserialize_binary_row(s.min_values, [t]) == [1.5]
    assert math.isnan(deserialize_binary_row(s.max_values, [t])[0])


def test_truncate_16() -> None:
    t = parse_sql_type("STRING")
    long_a = "a" * 20
    long_b = "b" * 17
    s = column_stats(pa.array([long_a, long_b, "aaa"]), t, DEFAULT_STATS_MODE)
    assert (s.min, s.max) == ("aaa", "b" * 15 + "c")
    s = column_stats(pa.array([long_a, "ab"]), t, DEFAULT_STATS_MODE)
    assert (s.min, s.max) == ("a" * 16, "ab")
    # 16 code points, not bytes
    cjk = "中" * 16 + "x"
    s = column_stats(pa.array([cjk]), t, DEFAULT_STATS_MODE)
    assert s.min == "中" * 16 and s.max == "中" * 15 + chr(ord("中") + 1)
    # no code point can be incremented: min and max become unknown, null count stays
    top = chr(0x10FFFF) * 17
    s = column_stats(pa.array([top, None]), t, DEFAULT_STATS_MODE)
    assert (s.min, s.max, s.null_count) == (None, None, 1)
    assert truncate_max(chr(0x10FFFF) * 3 + "a" + chr(0x10FFFF) * 3, 5) == (
        chr(0x10FFFF) * 3 + "b"
    )
    # truncation only affects strings
    s = column_stats(pa.array([b"x" * 40]), parse_sql_type("BYTES"), DEFAULT_STATS_MODE)
    assert s.max == b"x" * 40


def test_unsigned_byte_order() -> None:
    s = column_stats(pa.array(["\xff", "a", "Z", "é"]), parse_sql_type("STRING"), FULL)
    assert (s.min, s.max) == ("Z", "\xff")  # U+00FF = c3 bf > é = c3 a9
    s = column_stats(pa.array([b"\x80", b"\x7f", b"\x00\xff"]), parse_sql_type("BYTES"), FULL)
    assert (s.min, s.max) == (b"\x00\xff", b"\x80")


def test_modes_and_nested() -> None:
    assert parse_stats_mode("TRUNCATE(8)") == StatsMode("truncate", 8)
    assert parse_stats_mode(" Full ") == FULL
    for bad in ("truncate(0)", "truncate(x)", "some"):
        with pytest.raises(SchemaError):
            parse_stats_mode(bad)
    col = pa.array([3, None, 1])
    t = parse_sql_type("INT")
    assert column_stats(col, t, StatsMode("none")) == column_stats(col, t, StatsMode("none"))
    assert column_stats(col, t, StatsMode("none")).null_count is None
    c = column_stats(col, t, StatsMode("counts"))
    assert (c.min, c.max, c.null_count) == (None, None, 1)
    arr_t = parse_sql_type("ARRAY<INT>")
    n = column_stats(pa.array([[1], None]), arr_t, FULL)
    assert (n.min, n.max, n.null_count) == (None, None, 1)
    opts = {"metadata.stats-mode": "counts", "fields.b.stats-mode": "full"}
    assert stats_modes(opts, ["a", "b", "k"], ["k"]) == [
        StatsMode("counts"), FULL, KEY_STATS_MODE
    ]
    assert stats_modes({}, ["a"]) == [DEFAULT_STATS_MODE]
    stats = collect_stats([col, pa.array([[1], None])], [t, arr_t],
                          [StatsMode("none"), FULL])
    assert stats.null_counts == (None, 1)
    assert deserialize_binary_row(stats.min_values, [t, arr_t]) == [None, None]


def test_all_null_column() -> None:
    t = parse_sql_type("TIMESTAMP(9)")
    s = column_stats(pa.nulls(3, pa.timestamp("ns")), t, FULL)
    assert (s.min, s.max, s.null_count) == (None, None, 3)


def test_chunked_columns() -> None:
    t = parse_sql_type("DOUBLE")
    col = pa.chunked_array([[1.0, None], [float("nan")], [-2.0]])
    s = column_stats(col, t, FULL)
    assert s.min == -2.0 and math.isnan(s.max) and s.null_count == 1


@settings(max_examples=examples(60))
@given(seed=st.integers(0, 2**32), lengths=st.lists(st.integers(1, 12), min_size=1, max_size=6),
       null_rate=st.sampled_from([0, 0.3, 1]),
       mode=st.sampled_from([FULL, DEFAULT_STATS_MODE, StatsMode("truncate", 2),
                             StatsMode("counts"), StatsMode("none")]))
def test_stats_of_runs_equal_stats_of_each_run(seed: int, lengths: list[int], null_rate: float,
                                               mode: StatsMode) -> None:
    """One aggregation over many runs (the small files of a commit) gives every run the
    stats collect_stats gives it alone: all types (temporal units, floats with NaN and
    -0.0, truncated text), all modes, nested columns, all-null runs."""
    types: list[DataType] = [parse_sql_type(s) for s in [*ALL_TYPES, "ARRAY<INT>"]]
    n = sum(lengths)
    rows = random_rows(types[:-1], n, seed, null_rate)
    cols = [arrow_column([r[i] for r in rows], t) for i, t in enumerate(types[:-1])]
    cols.append(pa.array([None if i % 3 == 0 else [i] for i in range(n)], pa.list_(pa.int32())))
    modes = [mode] * len(types)
    starts = [0]
    for k in lengths[:-1]:
        starts.append(starts[-1] + k)
    nullable = [t.with_nullable(True) for t in types]
    got = [simple_stats(r, nullable)
           for r in column_stats_runs(cols, types, modes, np.array(starts))]
    for s0, k, g in zip(starts, lengths, got):
        assert g == collect_stats([c.slice(s0, k) for c in cols], types, modes)


def test_stats_runs_reject_empty_runs() -> None:
    t = parse_sql_type("INT")
    with pytest.raises(SchemaError):
        column_stats_runs([pa.array([1, 2])], [t], [FULL], np.array([0, 2]))
