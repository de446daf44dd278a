"""Decoding serialized primary keys (``_MIN_KEY`` / ``_MAX_KEY`` of data files).

A data file's min/max keys are BinaryRows over the table's trimmed primary key
(``TableSchema.trimmedPrimaryKeys``). Levels, sections, conflict checks, fsck and split
planning all compare them as tuples, decoded here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paimon_core.spec.binary_row import deserialize_binary_row
from paimon_core.spec.schema import TableSchema

__all__ = ["KeyDecoder", "key_decoder"]

#: serialized trimmed primary key -> tuple that compares like Java's key comparator
KeyDecoder = Callable[[bytes], tuple[Any, ...]]


def key_decoder(schema: TableSchema, *, exact_timestamps: bool = False,
                cached: bool = False) -> KeyDecoder:
    """The decoder of ``schema``'s serialized trimmed primary keys.

    Args:
        schema: the schema the keys were written with.
        exact_timestamps: timestamps as exact ``int`` epoch nanoseconds (conflict checks and
            fsck compare nanosecond keys exactly) instead of ``datetime``.
        cached: remember decoded keys (levels and sections decode every file's keys several
            times); the cache lives as long as the decoder.
    """
    types = [schema.field(k).type for k in schema.trimmed_primary_keys]

    def decode(b: bytes) -> tuple[Any, ...]:
        return tuple(deserialize_binary_row(b, types, exact_timestamps=exact_timestamps))

    if not cached:
        return decode
    cache: dict[bytes, tuple[Any, ...]] = {}

    def decode_cached(b: bytes) -> tuple[Any, ...]:
        k = cache.get(b)
        if k is None:
            k = decode(b)
            cache[b] = k
        return k

    return decode_cached
