"""Column statistics stored in manifests (``_KEY_STATS``, ``_VALUE_STATS``, ``_PARTITION_STATS``).

Mirrors ``org.apache.paimon.stats.SimpleStats``. The min/max rows stay serialized (4-byte
big-endian arity + BinaryRow bytes, ``SerializationUtils.serializeBinaryRow``); decode them with
``paimon_core.spec.binary_row.deserialize_binary_row(data, types)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from paimon_core.spec._bulk import frozen_factory

__all__ = [
    "EMPTY_ROW",
    "EMPTY_STATS",
    "SIMPLE_STATS_AVRO_FIELDS",
    "SimpleStats",
    "all_null_row",
    "simple_stats_avro_schema",
    "stats_from_avro",
    "stats_from_columns",
    "unknown_stats",
]


@dataclass(frozen=True, slots=True)
class SimpleStats:
    """Min/max/null-count statistics of a set of columns (``org.apache.paimon.stats.SimpleStats``).

    Attributes:
        min_values: serialized BinaryRow of per-column minima, with its 4-byte big-endian arity
            prefix. A null slot means "unknown".
        max_values: same for the maxima.
        null_counts: per-column null counts (element None = unknown), or None when absent.
    """

    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...] | None

    def to_avro(self) -> dict[str, Any]:
        """The Avro record of this value (``_MIN_VALUES``, ``_MAX_VALUES``, ``_NULL_COUNTS``)."""
        return {
            "_MIN_VALUES": self.min_values,
            "_MAX_VALUES": self.max_values,
            "_NULL_COUNTS": None if self.null_counts is None else list(self.null_counts),
        }


def all_null_row(arity: int) -> bytes:
    """Serialized BinaryRow (with arity prefix) of ``arity`` fields that are all null.

    Layout (§5.1): 4-byte big-endian arity, header of ``W = ((n + 63 + 8) // 64) * 8`` bytes
    (byte 0 = RowKind +I = 0, bit ``i + 8`` set for null field ``i``), then ``n`` zeroed 8-byte
    slots. No variable-length part.

    Raises:
        ValueError: negative arity.
    """
    if arity < 0:
        raise ValueError(f"negative arity {arity}")
    width = ((arity + 63 + 8) // 64) * 8
    bits = 0
    for i in range(arity):
        bits |= 1 << (i + 8)
    header = bits.to_bytes(width, "little")
    return arity.to_bytes(4, "big") + header + bytes(8 * arity)


#: The arity-0 BinaryRow as stored in manifests: ``00000000`` + an 8-byte zero header.
EMPTY_ROW: bytes = all_null_row(0)

#: Stats of zero columns (key stats of append tables, dense mode with no stats columns).
EMPTY_STATS = SimpleStats(EMPTY_ROW, EMPTY_ROW, ())


def unknown_stats(arity: int) -> SimpleStats:
    """Full-arity stats that say nothing: all min/max null, every null count unknown.

    Readers never prune on such stats (§4.5: "If you do not want to compute stats ...").
    """
    row = all_null_row(arity)
    return SimpleStats(row, row, (None,) * arity)


def simple_stats_avro_schema(name: str) -> dict[str, Any]:
    """The SimpleStats Avro record schema under the record name ``name``."""
    return {
        "type": "record",
        "name": name,
        "fields": [dict(f) for f in SIMPLE_STATS_AVRO_FIELDS],
    }


#: Avro fields of the SimpleStats record, as Java writes them (``SimpleStats.SCHEMA``).
SIMPLE_STATS_AVRO_FIELDS: tuple[dict[str, Any], ...] = (
    {"name": "_MIN_VALUES", "type": "bytes"},
    {"name": "_MAX_VALUES", "type": "bytes"},
    {
        "name": "_NULL_COUNTS",
        "type": ["null", {"type": "array", "items": ["null", "long"]}],
        "default": None,
    },
)


def stats_from_avro(record: Any) -> SimpleStats:
    """Build :class:`SimpleStats` from one decoded Avro record (KeyError if malformed)."""
    nc = record.get("_NULL_COUNTS")
    return SimpleStats(
        record["_MIN_VALUES"], record["_MAX_VALUES"], None if nc is None else tuple(nc)
    )


def stats_from_columns(cols: dict[str, Any], n: int) -> list[SimpleStats]:
    """Build :class:`SimpleStats` from the decoded columns of ``n`` SimpleStats records."""
    nulls: list[Any] = cols.get("_NULL_COUNTS") or [None] * n
    return _build_stats(
        cols["_MIN_VALUES"],
        cols["_MAX_VALUES"],
        [None if nc is None else tuple(nc) for nc in nulls],
    )


_build_stats = frozen_factory(SimpleStats)
