"""Merge engines of primary-key tables (``org.apache.paimon.mergetree.compact`` of Paimon
0.9): ``deduplicate`` (in :mod:`paimon_core.read.merge`), ``partial-update``,
``aggregation``, ``first-row``, with ``sequence.field`` and ``ignore-delete``.

* :func:`merge` runs the table's engine over the records of one bucket (vectorised; the
  dispatch of :func:`paimon_core.read.merge.merge_records`);
* :func:`validate` performs the option checks Java makes when it creates the merge function
  (unknown aggregate functions, sequence groups...), for readers and writers to call once;
* :func:`extra_read_columns` lists the columns a projected read must also fetch (the
  sequence fields of partial-update sequence groups, ``adjustProjection``);
* :mod:`paimon_core.read.engines.reference` holds row-at-a-time versions of every engine,
  shaped like Java's classes, that the property tests compare with.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from paimon_core.errors import SchemaError, UnsupportedError
from paimon_core.options import CoreOptions
from paimon_core.read.engines.aggregation import column_aggregators, merge_aggregation
from paimon_core.read.engines.aggregators import create_aggregator
from paimon_core.read.engines.base import Records, run_engine
from paimon_core.read.engines.deduplicate import merge_deduplicate_ignoring_deletes
from paimon_core.read.engines.first_row import merge_first_row
from paimon_core.read.engines.partial_update import check_partial_update, merge_partial_update
from paimon_core.read.engines.segments import last_in_group
from paimon_core.spec.option_enums import ChangelogProducer, MergeEngine
from paimon_core.spec.schema import TableSchema
from paimon_core.types import to_arrow_type

__all__ = ["extra_read_columns", "lookup_wrapped", "merge", "validate"]


def merge(
    table: pa.Table,
    key_columns: Sequence[str],
    sequence_columns: Sequence[str],
    kind_column: str,
    options: CoreOptions,
    *,
    primary_keys: Sequence[str] = (),
    sequence_ordered: bool = False,
    levels: np.ndarray | None = None,
) -> pa.Table:
    """One row per key (in key order): the result of the table's merge engine over
    ``table`` (see :func:`paimon_core.read.merge.merge_records` for the contract).

    Raises:
        UnsupportedError: an unknown engine, or records the engine refuses (retractions).
        SchemaError: invalid engine options.
    """
    engine = options.merge_engine
    lookup_levels = levels if levels is not None and lookup_wrapped(options) else None

    def run(fn: Callable[[Records], pa.Table]) -> pa.Table:
        return run_engine(
            table, key_columns, sequence_columns, kind_column, fn,
            primary_keys=primary_keys, sequence_ordered=sequence_ordered, levels=lookup_levels,
        )

    if engine is MergeEngine.DEDUPLICATE:
        return run(merge_deduplicate_ignoring_deletes if options.ignore_delete() else _last)
    if engine is MergeEngine.FIRST_ROW:
        ignore = options.ignore_delete()
        return run(lambda r: merge_first_row(r, ignore_delete=ignore))
    if engine is MergeEngine.PARTIAL_UPDATE:
        return run(lambda r: merge_partial_update(
            r, options, column_aggregators(r.table.schema, r.value_columns, options,
                                           with_default=False)))
    if engine is MergeEngine.AGGREGATE:
        return run(lambda r: merge_aggregation(
            r, column_aggregators(r.table.schema, r.value_columns, options)))
    raise UnsupportedError(f"merge-engine {engine!r} is not supported")


def lookup_wrapped(options: CoreOptions) -> bool:
    """Whether Java wraps the merge function in ``LookupMergeFunction``
    (``CoreOptions.needLookup``: ``changelog-producer=lookup``, deletion vectors or
    ``force-lookup``; never ``first-row``, and ``deduplicate`` gives the same result)."""
    if options.merge_engine not in (MergeEngine.PARTIAL_UPDATE, MergeEngine.AGGREGATE):
        return False
    return (
        options.changelog_producer is ChangelogProducer.LOOKUP
        or options.deletion_vectors_enabled
        or options.force_lookup
    )


def _last(records: Records) -> pa.Table:
    """Plain deduplicate: the newest record of every key."""
    return records.pick(
        last_in_group(records.gid, np.ones(len(records.gid), bool), records.groups))


def validate(schema: TableSchema, options: CoreOptions) -> None:
    """The checks Java makes when it creates the table's merge function
    (``PrimaryKeyTableUtils.createMergeFunctionFactory`` and the factories); ``options``:
    ``schema``'s, parsed (the table's context holds them).

    Raises:
        UnsupportedError: an unknown merge engine or an aggregate function not implemented.
        SchemaError: invalid engine options.
    """
    engine = options.merge_engine  # UnsupportedError: an unknown merge engine
    if not schema.primary_keys:
        return
    if engine is MergeEngine.FIRST_ROW and options.sequence_fields:
        raise SchemaError("Do not support use sequence field on FIRST_MERGE merge engine.")
    if engine not in (MergeEngine.AGGREGATE, MergeEngine.PARTIAL_UPDATE):
        return
    pks = set(schema.primary_keys)
    aggregated = set()
    for f in schema.fields:
        fn = options.field_aggregate_function(f.name)
        if fn is None and engine is MergeEngine.PARTIAL_UPDATE:
            continue
        aggregated.add(f.name)
        create_aggregator(f.name, to_arrow_type(f.type), options, primary_key=f.name in pks,
                          function=fn)
    if engine is MergeEngine.PARTIAL_UPDATE:
        check_partial_update(options, schema.field_names, aggregated)


def extra_read_columns(schema: TableSchema, columns: Sequence[str],
                       options: CoreOptions) -> list[str]:
    """Columns a read of ``columns`` must fetch too for the merge: the sequence fields of the
    partial-update sequence groups that ``columns`` touch (``adjustProjection``); ``options``:
    ``schema``'s, parsed."""
    if options.merge_engine is not MergeEngine.PARTIAL_UPDATE:
        return []
    want = set(columns)
    out: list[str] = []
    for seq, members in options.sequence_groups():
        if want & {*seq, *members}:
            out.extend(c for c in seq if c not in want and c not in out)
    return out
