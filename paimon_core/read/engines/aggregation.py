"""The ``aggregation`` merge engine, vectorised (``AggregateMergeFunction`` of Paimon 0.9).

Every value column is folded with its aggregator (``fields.<f>.aggregate-function``, else
``fields.default-aggregate-function``, else ``last_non_null_value``; primary-key columns keep
their value) over the records of a key in sequence order: ``+I``/``+U`` records aggregate,
``-U``/``-D`` records retract (``fields.<f>.ignore-retract`` skips them for that column). The
result is an ``+I`` record carrying the last record's sequence number. ``ignore-delete`` plays
no part here (Java's writer drops retractions on input, the merge function applies any it
reads). A key with a single record passes through unchanged (``ReducerMergeFunctionWrapper``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from paimon_core.options import CoreOptions
from paimon_core.read.engines.aggregators import (
    AGG,
    RETRACT,
    FieldAgg,
    aggregate,
    create_aggregator,
)
from paimon_core.read.engines.base import Records
from paimon_core.read.engines.segments import last_in_group

__all__ = ["column_aggregators", "merge_aggregation"]


def column_aggregators(
    schema: pa.Schema, columns: tuple[str, ...], options: CoreOptions, *, with_default: bool = True
) -> dict[str, tuple[FieldAgg, bool]]:
    """Aggregator and ignore-retract flag of every column of ``columns`` that has one
    (``with_default``: columns without a function get ``last_non_null_value``, as in the
    aggregation engine; without it, only columns with a function, as in partial-update)."""
    out = {}
    for c in columns:
        fn = options.field_aggregate_function(c)
        if fn is None and not with_default:
            continue
        out[c] = create_aggregator(c, schema.field(c).type, options, primary_key=False,
                                   function=fn)
    return out


def merge_aggregation(records: Records, aggregators: Mapping[str, tuple[FieldAgg, bool]]
                      ) -> pa.Table:
    """One ``+I`` record per key of ``records`` (keys with two or more records).

    Raises:
        UnsupportedError: a retraction reaches a function without retraction.
        SchemaError: a function applied to a type it does not support.
    """
    gid, groups = records.gid, records.groups
    ops = np.where(records.retract, RETRACT, AGG).astype(np.int8)
    values = {}
    for c in records.value_columns:
        agg, ignore = aggregators[c]
        values[c] = aggregate(agg, records.column(c), gid, ops, groups, ignore_retract=ignore)
    last = last_in_group(gid, np.ones(len(gid), dtype=bool), groups)
    return records.assemble(values, last, last, np.zeros(groups, dtype=np.int8))
