"""Property tests of paimon_core.scan.predicate over random data of every atomic type:

* the Arrow expression selects exactly the rows the row-by-row evaluator (Java semantics)
  accepts;
* stats pruning never prunes a file that holds a matching row, whichever way the file's stats
  were computed (Java order with NaN as max, Arrow's NaN-ignoring min/max with arbitrary zero
  signs, timestamps decoded to microseconds, unknown null counts).
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core.scan.predicate import (
    ColumnStats,
    Leaf,
    Op,
    and_,
    bind,
    evaluate_row,
    filter_table,
    might_match,
    or_,
)
from paimon_core.scan.predicate_literal import java_compare
from paimon_core.types import DataField, parse_sql_type, to_arrow_type
from tests.profiles import examples

UTC = dt.UTC
SPECIAL_F = [0.0, -0.0, math.nan, math.inf, -math.inf, 1.0, -1.0]


def _ms(t: dt.time) -> dt.time:
    return t.replace(microsecond=t.microsecond - t.microsecond % 1000)


def _dts(unit_us: int) -> st.SearchStrategy[dt.datetime]:
    return st.datetimes().map(
        lambda d: d.replace(microsecond=d.microsecond - d.microsecond % unit_us)
    )


VALUES: dict[str, st.SearchStrategy[Any]] = {
    "BOOLEAN": st.booleans(),
    "TINYINT": st.integers(-128, 127),
    "INT": st.integers(-5, 5) | st.integers(-(2**31), 2**31 - 1),
    "BIGINT": st.integers(-(2**63), 2**63 - 1),
    "FLOAT": st.sampled_from(SPECIAL_F) | st.floats(width=32),
    "DOUBLE": st.sampled_from(SPECIAL_F) | st.floats(),
    "DECIMAL(5, 2)": st.decimals(
        min_value=-999, max_value=999, places=2, allow_nan=False, allow_infinity=False
    ),
    "DECIMAL(38, 4)": st.decimals(
        min_value=-(10**33), max_value=10**33, places=4, allow_nan=False, allow_infinity=False
    ),
    "STRING": st.text(alphabet="ab'ü,Z\x00\U0001f600", max_size=4),
    "BYTES": st.binary(max_size=3) | st.sampled_from([b"\x80", b"\x7f", b"\xff\x00", b""]),
    "DATE": st.dates(),
    "TIME(3)": st.times().map(_ms),
    "TIMESTAMP(0)": _dts(1_000_000),
    "TIMESTAMP(3)": _dts(1000),
    "TIMESTAMP(6)": _dts(1),
    "TIMESTAMP(9)": st.integers(-(2**63) + 1, 2**63 - 1) | st.integers(-3, 3),
    "TIMESTAMP_LTZ(6)": st.datetimes(timezones=st.just(UTC)),
}
TYPE_NAMES = sorted(VALUES)
VALUE_OPS = [Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.IN, Op.NOT_IN]


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, list[Any], Any]:
    tname = draw(st.sampled_from(TYPE_NAMES))
    vs = VALUES[tname]
    pool = draw(st.lists(vs, min_size=1, max_size=4))
    pick = st.sampled_from(pool)
    data = draw(st.lists(st.none() | pick | pick | vs, max_size=12))
    lit = st.none() | pick | pick | pick | vs | vs

    def leaf() -> Leaf:
        ops = [*VALUE_OPS, Op.IS_NULL, Op.IS_NOT_NULL]
        if tname in ("STRING", "BYTES"):
            ops.append(Op.STARTS_WITH)
        op = draw(st.sampled_from(ops))
        if op in (Op.IS_NULL, Op.IS_NOT_NULL):
            return Leaf("c", op)
        if op in (Op.IN, Op.NOT_IN):
            return Leaf("c", op, tuple(draw(st.lists(lit, max_size=3))))
        if op is Op.STARTS_WITH:
            v = draw(pick | vs)
            return Leaf("c", op, (v[: draw(st.integers(0, len(v)))],))
        return Leaf("c", op, (draw(lit),))

    shape = draw(st.sampled_from(["leaf", "leaf", "and", "or"]))
    pred: Any = leaf()
    if shape == "and":
        pred = and_(pred, leaf())
    elif shape == "or":
        pred = or_(pred, leaf())
    return tname, data, pred


def _java_min_max(vals: list[Any]) -> tuple[Any, Any]:
    key = functools.cmp_to_key(lambda a, b: java_compare(a, b) or 0)
    s = sorted(vals, key=key)
    return s[0], s[-1]


def _stats_variants(tname: str, arr: pa.Array, data: list[Any]) -> list[ColumnStats]:
    nonnull = [v for v in data if v is not None]
    nc = len(data) - len(nonnull)
    out = [ColumnStats(None, None, nc), ColumnStats(None, None, None)]
    if not nonnull:
        return out
    mn, mx = _java_min_max(nonnull)
    out += [ColumnStats(mn, mx, nc), ColumnStats(mn, mx, None)]
    # Arrow/Parquet style: NaN left out, zero sign arbitrary
    mm = pc.min_max(arr)
    amn, amx = mm["min"].as_py(), mm["max"].as_py()
    if tname == "TIMESTAMP(9)":
        amn, amx = mm["min"].cast(pa.int64()).as_py(), mm["max"].cast(pa.int64()).as_py()
    if amn is not None:
        out.append(ColumnStats(amn, amx, nc))
        if isinstance(amn, float):
            out.append(
                ColumnStats(abs(amn) if amn == 0 else amn, -abs(amx) if amx == 0 else amx, nc)
            )
    if tname == "TIMESTAMP(9)":  # decoded without exact_timestamps: microseconds, floored
        epoch = dt.datetime(1970, 1, 1)

        def to_dt(n: int) -> dt.datetime | None:
            try:
                return epoch + dt.timedelta(microseconds=n // 1000)
            except OverflowError:
                return None

        tmn, tmx = to_dt(mn), to_dt(mx)
        if tmn is not None and tmx is not None:
            out.append(ColumnStats(tmn, tmx, nc))
    return out


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_arrow_equals_rows_and_stats_never_prune_a_match(case: tuple[str, list[Any], Any]) -> None:
    tname, data, pred = case
    fields = [DataField(0, "c", parse_sql_type(tname))]
    arr = pa.array(data, type=to_arrow_type(fields[0].type))
    tab = pa.table({"c": arr, "_i": pa.array(range(len(data)), pa.int64())})
    bound = bind(pred, fields)
    got = filter_table(tab, pred, fields).column("_i").to_pylist()
    ref = [i for i, v in enumerate(data) if evaluate_row(bound, {"c": v})]
    assert got == ref, (str(bound), data)
    if not got:
        return
    for stats in _stats_variants(tname, arr, data):
        for kw in ({"fields": fields}, {}):
            p = pred if kw else bound
            assert might_match(p, {"c": stats}, len(data), **kw), (str(bound), stats, data, kw)


@settings(max_examples=examples(80))
@given(st.lists(st.sampled_from(SPECIAL_F) | st.floats(), max_size=8), st.sampled_from(SPECIAL_F))
def test_float_rows_match_double_compare_to(data: list[float], x: float) -> None:
    """Cross-check against an independent definition of Double.compareTo (bit patterns)."""
    import struct

    def key(v: float) -> int:
        if math.isnan(v):
            return 2**64  # all NaNs equal and greatest
        b = struct.unpack(">q", struct.pack(">d", v))[0]
        return b if b >= 0 else b ^ 0x7FFFFFFFFFFFFFFF  # total order of IEEE doubles

    fields = [DataField(0, "c", parse_sql_type("DOUBLE"))]
    tab = pa.table({"c": pa.array(data, pa.float64()), "_i": pa.array(range(len(data)))})
    checks = {
        Op.EQ: lambda a, b: a == b,
        Op.NE: lambda a, b: a != b,
        Op.LT: lambda a, b: a < b,
        Op.LE: lambda a, b: a <= b,
        Op.GT: lambda a, b: a > b,
        Op.GE: lambda a, b: a >= b,
    }
    for op, fn in checks.items():
        got = filter_table(tab, Leaf("c", op, (x,)), fields).column("_i").to_pylist()
        want = [i for i, v in enumerate(data) if fn(key(v), key(x))]
        assert got == want, (op, x, data)


def test_decimal_context_is_not_the_default() -> None:
    # the 28-digit default context must not leak into literal rounding
    with decimal.localcontext() as ctx:
        ctx.prec = 5
        fields = [DataField(0, "c", parse_sql_type("DECIMAL(38, 4)"))]
        b = bind(
            Leaf("c", Op.EQ, (decimal.Decimal("1234567890123456789012345678901234.56785"),)), fields
        )
        assert isinstance(b, Leaf)
        assert b.literals == (decimal.Decimal("1234567890123456789012345678901234.5679"),)
