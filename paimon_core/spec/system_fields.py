"""Reserved column names: the system fields of primary-key data files
(``org.apache.paimon.table.SpecialFields`` / ``KeyValue``) and the user-facing change-kind
column; pure, declared here once.

* ``_KEY_<k>``: the (trimmed) primary-key copies at the front of a primary-key data file;
* ``_SEQUENCE_NUMBER`` (BIGINT) and ``_VALUE_KIND`` (TINYINT, a :class:`RowKind` byte) after
  the key copies;
* ``_kind``: the short-string row kind (``+I``/``-U``/``+U``/``-D``) that change reads
  (streaming, incremental) put first, and that CDC batches carry into writes.
"""

from __future__ import annotations

__all__ = [
    "KEY_PREFIX",
    "KIND_COLUMN",
    "SEQUENCE_NUMBER",
    "SYSTEM_FIELD_NAMES",
    "VALUE_KIND",
    "is_system_field",
]

#: ``SpecialFields.KEY_FIELD_PREFIX``.
KEY_PREFIX = "_KEY_"
#: ``SpecialFields.SEQUENCE_NUMBER``.
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
#: ``SpecialFields.VALUE_KIND``.
VALUE_KIND = "_VALUE_KIND"
#: The system fields a table column may not be named (besides the ``_KEY_`` prefix).
SYSTEM_FIELD_NAMES: tuple[str, ...] = (SEQUENCE_NUMBER, VALUE_KIND)
#: The change-kind column of change reads and CDC batches (short strings).
KIND_COLUMN = "_kind"


def is_system_field(name: str) -> bool:
    """Whether ``name`` is reserved: a system field or ``_KEY_``-prefixed."""
    return name in SYSTEM_FIELD_NAMES or name.startswith(KEY_PREFIX)
