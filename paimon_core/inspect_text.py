"""Java's text forms of the values in Paimon's system tables (``$files``, ``$schemas``,
``$tags``), for :mod:`paimon_core.inspect`.

Java prints Paimon's internal values with ``String.valueOf``: DATE as days since the epoch,
TIME as millis of the day, TIMESTAMP as ``LocalDateTime.toString``, DOUBLE / FLOAT as
``Double.toString`` / ``Float.toString``, DECIMAL plain; rows as ``Arrays.toString`` and
per-column maps as ``TreeMap.toString``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import numpy as np

from paimon_core.schema_manager import SchemaManager
from paimon_core.spec.binary_row import deserialize_binary_row
from paimon_core.spec.manifest import DataFileMeta
from paimon_core.spec.partition import decode_partition
from paimon_core.spec.schema import TableSchema
from paimon_core.spec.stats import SimpleStats
from paimon_core.types import DataField, DataType, TypeRoot

__all__ = [
    "PartitionFormatter", "StatsFormatter", "duration_text", "flat_json", "java_text",
    "local_date_time_millis",
]


def flat_json(obj: Any) -> str:
    """Jackson's compact form (``JsonSerdeUtil.toFlatJson``)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def local_date_time_millis(value: Any) -> int | None:
    """Epoch millis (as UTC) of a Jackson ``LocalDateTime`` array ``[y, m, d, H, M(, S(, ns))]``
    or ISO string."""
    if value is None:
        return None
    if isinstance(value, list):
        parts = [int(x) for x in value] + [0] * (7 - len(value))
        y, mo, d, h, mi, sec, ns = parts[:7]
        t = dt.datetime(y, mo, d, h, mi, sec, ns // 1000, tzinfo=dt.UTC)
    else:
        t = dt.datetime.fromisoformat(str(value)).replace(tzinfo=dt.UTC)
    return int(t.timestamp() * 1000)


def duration_text(value: Any) -> str | None:
    """Java's ``Duration.toString`` (``PT1H30M``) of Jackson's decimal seconds."""
    if value is None:
        return None
    total = Decimal(str(value))
    if total == 0:
        return "PT0S"
    sign = "-" if total < 0 else ""
    total = abs(total)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    out = "PT"
    if hours:
        out += f"{sign}{int(hours)}H"
    if minutes:
        out += f"{sign}{int(minutes)}M"
    if secs:
        text = format(secs.normalize(), "f")
        out += f"{sign}{text}S"
    return out


# -------------------------------------------------------------------- Java text forms
def java_text(value: Any, type_: DataType | None = None) -> str:
    """A Paimon internal value as Java's ``String.valueOf`` prints it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _java_double(value, type_ is not None and type_.root is TypeRoot.FLOAT)
    if isinstance(value, dt.datetime):
        return _local_date_time_text(value)
    if isinstance(value, dt.date):
        return str((value - dt.date(1970, 1, 1)).days)
    if isinstance(value, dt.time):
        return str((value.hour * 3600 + value.minute * 60 + value.second) * 1000
                   + value.microsecond // 1000)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, bytes | bytearray):
        return repr(bytes(value))  # Java prints an identity hash here: never comparable
    return str(value)


def _java_double(v: float, single: bool = False) -> str:
    """``Double.toString`` (``Float.toString`` when ``single``): the shortest digits, plain
    for ``1e-3 <= |v| < 1e7``, else ``d.dddE±n``."""
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    text = str(np.float32(v)) if single else repr(v)
    sign, digits, exp = Decimal(text).as_tuple()
    assert isinstance(exp, int)
    ds = "".join(map(str, digits)).lstrip("0") or "0"
    point = len("".join(map(str, digits))) + exp  # digits before the decimal point
    point -= len("".join(map(str, digits))) - len(ds)
    ds = ds.rstrip("0") or "0"
    neg = "-" if sign else ""
    a = abs(v)
    if a == 0 or 1e-3 <= a < 1e7:
        if point <= 0:
            return f"{neg}0.{'0' * -point}{ds}"
        if point >= len(ds):
            return f"{neg}{ds}{'0' * (point - len(ds))}.0"
        return f"{neg}{ds[:point]}.{ds[point:]}"
    return f"{neg}{ds[0]}.{ds[1:] or '0'}E{point - 1}"


def _local_date_time_text(t: dt.datetime) -> str:
    """``LocalDateTime.toString``: seconds and fraction only when non-zero."""
    year = f"{t.year:04d}" if t.year <= 9999 else f"+{t.year}"
    out = f"{year}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}"
    if t.second or t.microsecond:
        out += f":{t.second:02d}"
    if t.microsecond:
        frac = f"{t.microsecond:06d}"
        out += "." + (frac[:3] if frac.endswith("000") else frac)
    return out


class PartitionFormatter:
    """``Arrays.toString`` of a serialized partition's values."""

    def __init__(self, schema: TableSchema) -> None:
        self.types = [schema.field(k).type for k in schema.partition_keys]
        self._cache: dict[bytes, str] = {}

    def __call__(self, partition: bytes) -> str:
        hit = self._cache.get(partition)
        if hit is None:
            values = decode_partition(partition, self.types) if self.types else ()
            hit = "[" + ", ".join(java_text(v, t) for v, t in zip(values, self.types)) + "]"
            self._cache[partition] = hit
        return hit


class StatsFormatter:
    """Keys and value statistics of data files as the ``$files`` table prints them."""

    def __init__(self, schema: TableSchema, schemas: SchemaManager) -> None:
        self.schema = schema
        self.schemas = schemas
        self.current = list(schema.fields)
        self._schemas: dict[int, TableSchema] = {schema.id: schema}

    def _schema(self, schema_id: int) -> TableSchema:
        s = self._schemas.get(schema_id)
        if s is None:
            s = self.schemas.schema(schema_id)
            self._schemas[schema_id] = s
        return s

    def keys(self, f: DataFileMeta) -> tuple[str | None, str | None]:
        schema = self._schema(f.schema_id)
        names = schema.trimmed_primary_keys
        if not names:
            return None, None
        types = [schema.field(n).type for n in names]
        return (_row_text(f.min_key, types), _row_text(f.max_key, types))

    def values(self, f: DataFileMeta) -> tuple[str, str, str]:
        schema = self._schema(f.schema_id)
        if f.value_stats_cols is not None and not f.value_stats_cols:
            return "{}", "{}", "{}"  # no column has stats (Java's evolved stats have no field)
        cols = list(f.value_stats_cols) if f.value_stats_cols is not None else schema.field_names
        by_name = {fd.name: fd for fd in schema.fields}
        stat_fields = [by_name[c] for c in cols if c in by_name]
        decoded = _decode_stats(f.value_stats, stat_fields)
        by_id = {fd.id: i for i, fd in enumerate(stat_fields)}
        nulls: dict[str, str] = {}
        mins: dict[str, str] = {}
        maxs: dict[str, str] = {}
        for field in self.current:
            i = by_id.get(field.id)
            if i is None or decoded is None:
                in_file = field.id in {fd.id for fd in schema.fields}
                nulls[field.name] = "null" if in_file else str(f.row_count)
                mins[field.name] = maxs[field.name] = "null"
                continue
            lo, hi, nc = decoded[0][i], decoded[1][i], decoded[2][i]
            nulls[field.name] = "null" if nc is None else str(nc)
            mins[field.name] = java_text(lo, field.type)
            maxs[field.name] = java_text(hi, field.type)
        return _tree_map(nulls), _tree_map(mins), _tree_map(maxs)


def _decode_stats(
    stats: SimpleStats, fields: Sequence[DataField]
) -> tuple[list[Any], list[Any], list[int | None]] | None:
    types = [fd.type.with_nullable(True) for fd in fields]
    try:
        mins = deserialize_binary_row(stats.min_values, types)
        maxs = deserialize_binary_row(stats.max_values, types)
    except Exception:  # stats of another arity (an old writer): unknown
        return None
    counts = list(stats.null_counts or [])
    nulls: list[int | None] = [counts[i] if i < len(counts) else None for i in range(len(types))]
    return list(mins), list(maxs), nulls


def _row_text(data: bytes, types: Sequence[DataType]) -> str:
    values = deserialize_binary_row(data, types)
    return "[" + ", ".join(java_text(v, t) for v, t in zip(values, types)) + "]"


def _tree_map(values: dict[str, str]) -> str:
    """``TreeMap.toString``: keys in Java ``String`` order (UTF-16 code units)."""
    keys = sorted(values, key=lambda k: k.encode("utf-16-be"))
    return "{" + ", ".join(f"{k}={values[k]}" for k in keys) + "}"

