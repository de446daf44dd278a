"""The ``first-row`` merge engine, vectorised (``FirstRowMergeFunction`` of Paimon 0.9).

Keeps, for every key, the oldest record (its own kind and sequence number). A retraction
among the records of a key is an error unless ``ignore-delete`` (fallback key
``first-row.ignore-delete``) is set; then retractions are skipped, and a key made only of
retractions yields its last record (a retraction: "deleted"; Java returns nothing for it).
A key with a single record passes through unchanged, even a retraction
(``ReducerMergeFunctionWrapper``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from paimon_core.errors import UnsupportedError
from paimon_core.read.engines.base import Records
from paimon_core.read.engines.segments import first_in_group, last_in_group

__all__ = ["merge_first_row"]


def merge_first_row(records: Records, *, ignore_delete: bool) -> pa.Table:
    """One record per key of ``records`` (keys with two or more records).

    Raises:
        UnsupportedError: a -U/-D record without ``ignore-delete``.
    """
    retract = records.retract
    if retract.any() and not ignore_delete:
        raise UnsupportedError(
            "By default, First row merge engine can not accept DELETE/UPDATE_BEFORE records. "
            "You can config 'first-row.ignore-delete' (or 'ignore-delete') to ignore the "
            "DELETE/UPDATE_BEFORE records."
        )
    everything = np.ones(len(retract), dtype=bool)
    first = first_in_group(records.gid, ~retract, records.groups)
    last = last_in_group(records.gid, everything, records.groups)
    return records.pick(np.where(first >= 0, first, last))
