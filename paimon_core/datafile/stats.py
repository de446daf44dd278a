"""Column statistics of a data file, vectorised: min / max / null count per column.

Mirrors ``org.apache.paimon.statistics.SimpleColStatsCollector`` and its modes
(``metadata.stats-mode``, per column ``fields.<col>.stats-mode``):

* ``none``: nothing (min, max and null count unknown);
* ``counts``: null counts only;
* ``truncate(N)`` (the default, ``truncate(16)``): strings' minimum cut to N code points,
  maximum cut to N code points with the last one incremented (``TruncateSimpleColStatsCollector
  .truncateMax``; when no code point can be incremented both min and max become unknown);
  other types as ``full``;
* ``full``: exact min and max.

Order is Java's: strings and binary compare as unsigned bytes, numbers numerically, floats with
``Double.compare`` (-0.0 < 0.0, NaN above +Infinity, so a column holding NaN has max NaN).
Nested columns (ARRAY/MAP/MULTISET/ROW) get unknown min/max and a real null count.

Stats are stored as :class:`~paimon_core.spec.stats.SimpleStats`: full arity (one slot per
column, as Paimon 0.9 requires), the min and max rows encoded as BinaryRows.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import SchemaError
from paimon_core.options import CoreOptions
from paimon_core.spec.binary_row import serialize_binary_row
from paimon_core.spec.stats import SimpleStats
from paimon_core.types import (
    STRING_ROOTS,
    AtomicType,
    DataType,
    TypeRoot,
)

__all__ = [
    "DEFAULT_STATS_MODE",
    "KEY_STATS_MODE",
    "ColumnStats",
    "StatsAccumulator",
    "StatsMode",
    "collect_stats",
    "column_stats",
    "column_stats_runs",
    "parse_stats_mode",
    "simple_stats",
    "stats_modes",
    "truncate_max",
    "truncate_min",
]

ModeKind = Literal["none", "counts", "truncate", "full"]
_TRUNCATE = re.compile(r"TRUNCATE\((\d+)\)")
_MAX_CODE_POINT = 0x10FFFF


@dataclass(frozen=True, slots=True)
class StatsMode:
    """One column's stats mode (``SimpleColStatsCollector.Factory``)."""

    kind: ModeKind
    length: int = 0

    def __str__(self) -> str:
        return f"truncate({self.length})" if self.kind == "truncate" else self.kind


DEFAULT_STATS_MODE = StatsMode("truncate", 16)
#: What Java (1.x+) uses for primary-key columns unless a per-field option says otherwise.
KEY_STATS_MODE = StatsMode("truncate", 128)


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """Stats of one column as Python values (see :mod:`paimon_core.spec.binary_row`)."""

    min: Any
    max: Any
    null_count: int | None


def parse_stats_mode(raw: str, key: str = CoreOptions.METADATA_STATS_MODE) -> StatsMode:
    """``none`` / ``counts`` / ``full`` / ``truncate(N)``, case-insensitive.

    Raises:
        SchemaError: any other value, or ``truncate(0)``.
    """
    upper = raw.strip().upper()
    if upper in ("NONE", "COUNTS", "FULL"):
        return StatsMode(upper.lower())  # type: ignore[arg-type]
    m = _TRUNCATE.fullmatch(upper)
    if m is not None:
        n = int(m.group(1))
        if n <= 0:
            raise SchemaError(f"option {key}={raw!r}: truncate length must be positive")
        return StatsMode("truncate", n)
    raise SchemaError(
        f"option {key}={raw!r} is not a stats mode (none, counts, truncate(N), full)"
    )


def stats_modes(
    options: Mapping[str, str], names: Sequence[str], key_names: Sequence[str] = ()
) -> list[StatsMode]:
    """The mode of each column (``StatsCollectorFactories.createStatsFactories``).

    ``fields.<name>.stats-mode`` wins; else columns in ``key_names`` (primary-key columns and
    their ``_KEY_`` copies) use ``truncate(128)`` as Java 1.x does; else ``metadata.stats-mode``.
    """
    default_raw = options.get(CoreOptions.METADATA_STATS_MODE)
    default = (
        parse_stats_mode(default_raw) if default_raw is not None else DEFAULT_STATS_MODE
    )
    keys = set(key_names)
    out = []
    for n in names:
        opt = f"fields.{n}.stats-mode"
        raw = options.get(opt)
        if raw is not None:
            out.append(parse_stats_mode(raw, opt))
        elif n in keys:
            out.append(KEY_STATS_MODE)
        else:
            out.append(default)
    return out


def collect_stats(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    types: Sequence[DataType],
    modes: Sequence[StatsMode],
    *,
    constant: Collection[int] = (),
) -> SimpleStats:
    """The SimpleStats record of ``columns`` (one slot per column, in order).

    Args:
        columns: the columns.
        types: their Paimon types.
        modes: their stats modes.
        constant: indices of columns known to hold a single value (partition columns of a
            bucket): their stats come from the first row.

    Raises:
        SchemaError: the three sequences differ in length.
    """
    if not len(columns) == len(types) == len(modes):
        raise SchemaError(f"{len(columns)} columns, {len(types)} types, {len(modes)} modes")
    stats = [
        _constant_stats(c, t, m) if i in constant and len(c) else column_stats(c, t, m)
        for i, (c, t, m) in enumerate(zip(columns, types, modes))
    ]
    return simple_stats(stats, [t.with_nullable(True) for t in types])


class StatsAccumulator:
    """The stats :func:`collect_stats` gives for columns that arrive in pieces (a file written
    chunk by chunk): every piece's exact min / max (Java's order) and null count are folded
    in, and the mode's truncation is applied once at the end, so :meth:`result` equals
    :func:`collect_stats` over the concatenated pieces.

    Args:
        types: the columns' Paimon types.
        modes: their stats modes.
        constant: indices of columns holding a single value (see :func:`collect_stats`).
    """

    def __init__(self, types: Sequence[DataType], modes: Sequence[StatsMode], *,
                 constant: Collection[int] = ()) -> None:
        if len(types) != len(modes):
            raise SchemaError(f"{len(types)} types, {len(modes)} modes")
        self.types = list(types)
        self.modes = list(modes)
        self.constant = frozenset(constant)
        # exact (untruncated) stats per column: counts and min/max only where the mode has them
        self._exact = [m if m.kind in ("none", "counts") else _FULL for m in self.modes]
        self._stats: list[ColumnStats | None] = [None] * len(self.types)

    def add(self, columns: Sequence[pa.Array | pa.ChunkedArray]) -> None:
        """Fold in the next rows of every column."""
        if len(columns) != len(self.types):
            raise SchemaError(f"{len(columns)} columns for {len(self.types)} stats slots")
        if not columns or not len(columns[0]):
            return
        for i, (c, t, m) in enumerate(zip(columns, self.types, self._exact)):
            s = _constant_stats(c, t, m) if i in self.constant else column_stats(c, t, m)
            prev = self._stats[i]
            self._stats[i] = s if prev is None else _fold(prev, s, t)

    def result(self) -> SimpleStats:
        """The SimpleStats record of every row added so far."""
        out = []
        for s, t, m in zip(self._stats, self.types, self.modes):
            if s is None or m.kind in ("none", "counts") or s.min is None:
                out.append(s or ColumnStats(None, None, None if m.kind == "none" else 0))
            else:
                assert isinstance(t, AtomicType) and s.null_count is not None
                out.append(_bounded(s.min, s.max, s.null_count, t, m))
        return simple_stats(out, [t.with_nullable(True) for t in self.types])


_FULL = StatsMode("full")


def _fold(a: ColumnStats, b: ColumnStats, t: DataType) -> ColumnStats:
    """Stats of two pieces together (exact values; floats in ``Double.compare`` order, the
    first NaN kept)."""
    nulls = None if a.null_count is None or b.null_count is None else a.null_count + b.null_count
    if a.min is None:
        return ColumnStats(b.min, b.max, nulls)
    if b.min is None:
        return ColumnStats(a.min, a.max, nulls)
    floats = isinstance(t, AtomicType) and t.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE)
    key = _java_double_order if floats else _identity
    lo = b.min if key(b.min) < key(a.min) else a.min
    hi = b.max if key(b.max) > key(a.max) else a.max
    return ColumnStats(lo, hi, nulls)


def _identity(v: Any) -> Any:
    return v


def _java_double_order(v: float) -> tuple[int, float, int]:
    """Sort key of ``Double.compare``: -0.0 < 0.0 < ... < +Inf < NaN (NaNs equal)."""
    if v != v:
        return (1, 0.0, 0)
    return (0, v, 0 if np.signbit(v) else 1)


def column_stats(col: pa.Array | pa.ChunkedArray, t: DataType, mode: StatsMode) -> ColumnStats:
    """Min, max (Python values, None = unknown) and null count of one column under ``mode``."""
    if mode.kind == "none":
        return ColumnStats(None, None, None)
    nulls = col.null_count
    if mode.kind == "counts" or not isinstance(t, AtomicType) or nulls == len(col):
        return ColumnStats(None, None, nulls)
    lo, hi = _min_max(col, t)
    return _bounded(lo, hi, nulls, t, mode)


def _bounded(lo: Any, hi: Any, nulls: int, t: AtomicType, mode: StatsMode) -> ColumnStats:
    """The stats of an exact (min, max) under ``mode`` (strings truncated)."""
    if mode.kind == "truncate" and t.root in STRING_ROOTS:
        assert isinstance(lo, str) and isinstance(hi, str)
        tmax = truncate_max(hi, mode.length)
        if tmax is None:
            return ColumnStats(None, None, nulls)
        return ColumnStats(truncate_min(lo, mode.length), tmax, nulls)
    return ColumnStats(lo, hi, nulls)


def simple_stats(stats: Sequence[ColumnStats], nullable: Sequence[DataType]) -> SimpleStats:
    """The SimpleStats record of the columns' stats (``nullable``: the columns' types made
    nullable, as the min / max rows hold nulls)."""
    return SimpleStats(serialize_binary_row([s.min for s in stats], nullable),
                       serialize_binary_row([s.max for s in stats], nullable),
                       tuple(s.null_count for s in stats))


def column_stats_runs(
    columns: Sequence[pa.Array | pa.ChunkedArray],
    types: Sequence[DataType],
    modes: Sequence[StatsMode],
    starts: np.ndarray,
) -> list[list[ColumnStats]]:
    """:func:`column_stats` of every column in every run of rows ``[starts[i], starts[i + 1])``
    (the last run to the end; runs are not empty), per run: one hash aggregation of all
    columns instead of a min / max call per column and run, which is what dominates for the
    many small files of a commit."""
    if not len(columns) == len(types) == len(modes):
        raise SchemaError(f"{len(columns)} columns, {len(types)} types, {len(modes)} modes")
    n = len(columns[0]) if columns else 0
    bounds = np.append(np.asarray(starts, dtype=np.int64), n)
    lengths = np.diff(bounds)
    runs = len(lengths)
    if runs == 0 or int(lengths.min()) <= 0:
        raise SchemaError("stats runs must be non-empty")
    data: dict[str, pa.Array | pa.ChunkedArray] = {
        "__run": pa.array(np.repeat(np.arange(runs, dtype=np.int32), lengths))
    }
    aggs: list[tuple[Any, ...]] = []
    for i, (c, t, m) in enumerate(zip(columns, types, modes)):
        if m.kind == "none" or not isinstance(t, AtomicType):
            continue
        name = f"c{i}"
        data[name] = _comparable(c, t)
        aggs.append((name, "count", pc.CountOptions("only_null")))
        if m.kind != "counts" and t.root not in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
            aggs.append((name, "min_max"))
    agg = pa.table(data).group_by("__run", use_threads=False).aggregate(aggs) if aggs else None
    at = (np.asarray(agg.column("__run").to_numpy(), dtype=np.int64) if agg is not None
          else np.zeros(0, np.int64))
    row_of = np.empty(runs, dtype=np.int64)
    row_of[at] = np.arange(len(at))
    per_run: list[list[ColumnStats]] = [[] for _ in range(runs)]
    for i, (c, t, m) in enumerate(zip(columns, types, modes)):
        if m.kind == "none":
            for r in range(runs):
                per_run[r].append(ColumnStats(None, None, None))
            continue
        if not isinstance(t, AtomicType):  # nested: null counts only
            for r in range(runs):
                per_run[r].append(ColumnStats(None, None,
                                              c.slice(bounds[r], lengths[r]).null_count))
            continue
        assert agg is not None
        nulls = agg.column(f"c{i}_count").to_numpy()[row_of].tolist()
        exact = m.kind != "counts" and t.root not in (TypeRoot.FLOAT, TypeRoot.DOUBLE)
        if exact:
            mm = agg.column(f"c{i}_min_max")
            los = _from_comparable(pc.struct_field(mm, "min").take(row_of), t, c.type)
            his = _from_comparable(pc.struct_field(mm, "max").take(row_of), t, c.type)
        for r in range(runs):
            k = int(nulls[r])
            if m.kind == "counts" or k == lengths[r]:
                per_run[r].append(ColumnStats(None, None, k))
            elif exact:
                per_run[r].append(_bounded(los[r], his[r], k, t, m))
            else:  # floats: Java's order (NaN, -0.0) per run
                lo, hi = _float_min_max(c.slice(bounds[r], lengths[r]))
                per_run[r].append(ColumnStats(lo, hi, k))
    return per_run


def _comparable(col: pa.Array | pa.ChunkedArray, t: AtomicType) -> pa.Array | pa.ChunkedArray:
    """Temporal columns as the integers :func:`_min_max` reports (same order)."""
    if t.root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        return pc.cast(col, pa.int64())
    if t.root is TypeRoot.DATE or t.root is TypeRoot.TIME:
        return pc.cast(col, pa.int32())
    return col


def _from_comparable(values: pa.Array | pa.ChunkedArray, t: AtomicType,
                     source: pa.DataType) -> list[Any]:
    """Python values of :func:`_comparable` results, as :func:`_min_max` returns them."""
    out: list[Any] = values.to_pylist()
    if t.root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        scale = _NANOS[source.unit]
        return [None if v is None else v * scale for v in out]
    return out


def _constant_stats(col: pa.Array | pa.ChunkedArray, t: DataType, mode: StatsMode) -> ColumnStats:
    one = column_stats(col.slice(0, 1), t, mode)
    if one.null_count is None:
        return one
    return ColumnStats(one.min, one.max, len(col) if one.null_count else 0)


def truncate_min(s: str, length: int) -> str:
    """The first ``length`` code points (a lower bound of ``s``)."""
    return s[:length]


def truncate_max(s: str, length: int) -> str | None:
    """An upper bound of ``s`` of at most ``length`` code points, or None when none exists
    (``TruncateSimpleColStatsCollector.truncateMax``)."""
    if len(s) <= length:
        return s
    for i in range(length - 1, -1, -1):
        nxt = ord(s[i]) + 1
        if nxt <= _MAX_CODE_POINT:
            return s[:i] + chr(nxt)
    return None


# ---------------------------------------------------------------------------------------------
# vectorised min / max


def _min_max(col: pa.Array | pa.ChunkedArray, t: AtomicType) -> tuple[Any, Any]:
    r = t.root
    if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        return _float_min_max(col)
    mm = pc.min_max(col)
    lo, hi = mm["min"], mm["max"]
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        return _epoch_nanos(lo), _epoch_nanos(hi)
    if r is TypeRoot.DATE or r is TypeRoot.TIME:
        return lo.cast(pa.int32()).as_py(), hi.cast(pa.int32()).as_py()
    return lo.as_py(), hi.as_py()


_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def _epoch_nanos(s: pa.Scalar) -> int:
    unit = s.type.unit
    return int(s.value) * _NANOS[unit]


def _float_min_max(col: pa.Array | pa.ChunkedArray) -> tuple[float, float]:
    """Java ``Double.compare`` order: -0.0 < 0.0 < ... < +Inf < NaN (all NaNs equal; the
    first NaN met is kept, as a streaming collector would)."""
    if col.null_count:
        col = pc.drop_null(col)
    if isinstance(col, pa.ChunkedArray):
        v = np.concatenate([c.to_numpy(zero_copy_only=False) for c in col.chunks]) if (
            col.num_chunks != 1
        ) else col.chunk(0).to_numpy(zero_copy_only=False)
    else:
        v = col.to_numpy(zero_copy_only=False)
    nan = np.isnan(v)
    has_nan = bool(nan.any())
    if has_nan and bool(nan.all()):
        x = v[0].item()
        return x, x
    finite = v[~nan] if has_nan else v
    lo = finite.min()
    hi = v[int(np.argmax(nan))] if has_nan else finite.max()
    if lo == 0 and not np.signbit(lo) and bool(np.signbit(finite[finite == 0]).any()):
        lo = np.copysign(0.0, -1.0)
    if not has_nan and hi == 0 and np.signbit(hi):
        zeros = finite[finite == 0]
        if not bool(np.signbit(zeros).all()):
            hi = np.float64(0.0)
    return float(lo), float(hi)
