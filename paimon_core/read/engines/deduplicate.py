"""``deduplicate`` with ``ignore-delete`` on records that hold retractions
(``DeduplicateMergeFunction`` of Paimon 0.9; the plain engine is
:func:`paimon_core.read.merge.deduplicate`).

Retractions are skipped: the newest ``+I``/``+U`` record of a key wins; a key made only of
retractions yields its last record (a retraction: "deleted"; Java returns nothing for it).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from paimon_core.read.engines.base import Records
from paimon_core.read.engines.segments import last_in_group

__all__ = ["merge_deduplicate_ignoring_deletes"]


def merge_deduplicate_ignoring_deletes(records: Records) -> pa.Table:
    """One record per key of ``records`` (keys with two or more records)."""
    live = last_in_group(records.gid, ~records.retract, records.groups)
    last = last_in_group(records.gid, np.ones(len(records.kinds), bool), records.groups)
    return records.pick(np.where(live >= 0, live, last))
