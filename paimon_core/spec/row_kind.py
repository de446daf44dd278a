"""Row kinds (``org.apache.paimon.types.RowKind``) and their vectorised forms; pure, IO-free.

A row kind is stored as one byte: in the ``_VALUE_KIND`` column of primary-key data files and
in byte 0 of every ``BinaryRow``. Users see it as its short string (``+I``, ``-U``, ``+U``,
``-D``): in the ``_kind`` column of change reads, of CDC batches and of written input.

>>> RowKind.from_short_string("-D")
<RowKind.DELETE: 3>
>>> RowKind.UPDATE_BEFORE.short_string, RowKind.UPDATE_BEFORE.is_retract
('-U', True)
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import SchemaError

__all__ = [
    "RETRACT_KINDS",
    "RETRACT_SHORT_STRINGS",
    "SHORT_STRINGS",
    "RowKind",
    "add_mask",
    "arrow_retract_mask",
    "arrow_short_retract_mask",
    "retract_mask",
    "short_string_codes",
    "to_short_strings",
]


class RowKind(IntEnum):
    """``org.apache.paimon.types.RowKind``: the value is the on-disk byte."""

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    @property
    def short_string(self) -> str:
        """``+I`` / ``-U`` / ``+U`` / ``-D`` (``RowKind.shortString``)."""
        return SHORT_STRINGS[self.value]

    @property
    def is_add(self) -> bool:
        """``+I`` or ``+U``: the row (re)states a value (``RowKind.isAdd``)."""
        return self in (RowKind.INSERT, RowKind.UPDATE_AFTER)

    @property
    def is_retract(self) -> bool:
        """``-U`` or ``-D``: the row withdraws a value (``RowKind.isRetract``)."""
        return self in (RowKind.UPDATE_BEFORE, RowKind.DELETE)

    @classmethod
    def from_short_string(cls, text: str) -> RowKind:
        """The kind of ``+I`` / ``-U`` / ``+U`` / ``-D`` (``RowKind.fromShortString``).

        Raises:
            SchemaError: any other text.
        """
        try:
            return cls(SHORT_STRINGS.index(text))
        except ValueError as e:
            raise SchemaError(f"unknown row kind {text!r}; expected one of {list(SHORT_STRINGS)}"
                              ) from e

    @classmethod
    def from_byte_value(cls, value: int) -> RowKind:
        """The kind of an on-disk byte (``RowKind.fromByteValue``).

        Raises:
            SchemaError: a value outside 0..3.
        """
        if not 0 <= int(value) <= 3:
            raise SchemaError(f"invalid row kind {value}")
        return cls(int(value))


#: Short strings by byte value (index = :class:`RowKind` value).
SHORT_STRINGS: tuple[str, ...] = ("+I", "-U", "+U", "-D")
#: Byte values of the retracting kinds (``-U``, ``-D``).
RETRACT_KINDS: tuple[int, ...] = (RowKind.UPDATE_BEFORE.value, RowKind.DELETE.value)
#: Short strings of the retracting kinds.
RETRACT_SHORT_STRINGS: tuple[str, ...] = tuple(SHORT_STRINGS[k] for k in RETRACT_KINDS)

_SHORT = np.array(SHORT_STRINGS, dtype=object)


def retract_mask(kinds: np.ndarray) -> np.ndarray:
    """Per row: is the kind code ``-U`` or ``-D``."""
    out: np.ndarray = (kinds == RowKind.UPDATE_BEFORE) | (kinds == RowKind.DELETE)
    return out


def add_mask(kinds: np.ndarray) -> np.ndarray:
    """Per row: is the kind code ``+I`` or ``+U``."""
    out: np.ndarray = (kinds == RowKind.INSERT) | (kinds == RowKind.UPDATE_AFTER)
    return out


def arrow_retract_mask(kinds: pa.Array | pa.ChunkedArray) -> pa.ChunkedArray | pa.Array:
    """Per row of an integer kind column: is it ``-U`` or ``-D`` (Arrow booleans)."""
    return pc.is_in(kinds, pa.array(RETRACT_KINDS, kinds.type))


def arrow_short_retract_mask(kinds: pa.Array | pa.ChunkedArray) -> pa.ChunkedArray | pa.Array:
    """Per row of a short-string kind column: is it ``-U`` or ``-D`` (Arrow booleans)."""
    return pc.is_in(kinds, pa.array(RETRACT_SHORT_STRINGS, pa.string()))


def to_short_strings(codes: pa.Array | pa.ChunkedArray | np.ndarray) -> pa.Array:
    """Kind codes 0..3 -> their short strings (an Arrow string array)."""
    if isinstance(codes, pa.Array | pa.ChunkedArray):
        codes = codes.to_numpy()
    return pa.array(_SHORT[np.asarray(codes, dtype=np.int64)], type=pa.string())


def short_string_codes(texts: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Short strings -> kind codes (Arrow ``int32``, null where a text is not a short
    string; the caller decides how to report those)."""
    return pc.index_in(texts, value_set=pa.array(SHORT_STRINGS, pa.string()))
