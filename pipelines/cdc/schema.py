"""A CDC batch's new columns: in the same commit as its rows, or not at all.

The batch's first pass notes the JSON fields the table lacks; :func:`evolve` types them from
sample events and computes the next schema in memory only (nothing written): the second pass
writes the data files with it, the batch's refusals (error ratio, malformed events without a
quarantine, mixed connectors) are decided on its counts, and only then :func:`commit_batch`
publishes the schema (:func:`paimon_core.schema_pending.publish_pending`: a marker, then
``schema-<N>``) immediately before the snapshot. A commit that fails for sure withdraws the
schema (superseded by one without the columns, never deleted: see
:mod:`paimon_core.schema_pending`); a crash between the schema and the snapshot is settled by
the next run (:func:`settle`): the same batch again adopts the schema and lands with it once,
anything else withdraws it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from paimon_core import CommitStateUnknownError, PaimonError
from paimon_core.schema_change import AddColumn, apply_changes
from paimon_core.schema_pending import (
    PendingSchema,
    clear_pending,
    publish_pending,
    resolve_pending,
    withdraw_pending,
)
from pipelines.cdc.formats import sample_values
from pipelines.config import CatalogSettings, TableHandle

__all__ = ["commit_batch", "evolve", "infer_column_type", "settle",
           "withdraw"]

log = logging.getLogger(__name__)


def settle(settings: CatalogSettings, handle: TableHandle, user: str,
           batch: int) -> tuple[TableHandle, PendingSchema | None]:
    """Settle the pending schemas crashed runs left (:func:`resolve_pending`) before ``user``
    writes ``batch``: returns the handle on the table's latest schema (reloaded when a
    schema was withdrawn) and the adopted marker (this batch's own schema, published by a run
    that crashed before its snapshot), if any."""
    table = handle.open()
    adopted = resolve_pending(table, user, batch)
    latest = table.schema_manager.latest()
    if latest is not None and latest.id != handle.schema.id:
        handle = TableHandle.load(settings, handle.identifier)
    if adopted is not None:
        log.info("table %s: batch %s adopts its schema %s published by a run that did not "
                 "commit", handle.identifier, batch, adopted.schema_id)
    return handle, adopted


def evolve(handle: TableHandle, samples: Mapping[str, list[str]],
           fmt: str) -> tuple[TableHandle, dict[str, str]]:
    """A handle pinned to the table's schema with the new columns of ``samples`` added
    (typed from the JSON values of those sample events of format ``fmt``), computed in memory:
    nothing is written until :func:`commit_batch`."""
    names = sorted(samples)
    lines = [x for k in names for x in samples[k]]
    values = sample_values(fmt, lines, names)
    added = {n: infer_column_type(values[n]) for n in names}
    has_snapshots = handle.open().latest_snapshot() is not None
    schema = apply_changes(handle.schema, [AddColumn(n, t) for n, t in added.items()],
                           has_snapshots=has_snapshots)
    log.info("table %s: batch adds columns %s (schema %s, published with its snapshot)",
             handle.identifier, added, schema.id)
    return dataclasses.replace(handle, schema=schema), added


def withdraw(handle: TableHandle, marker: PendingSchema | None) -> None:
    """The batch is refused: its adopted schema (``marker``) goes too (best effort: a marker
    left behind is settled by the next run)."""
    if marker is not None:
        try:
            withdraw_pending(handle.open(), marker)
        except PaimonError as e:
            log.warning("table %s: could not withdraw schema %s: %s", handle.identifier,
                        marker.schema_id, e)


def commit_batch(handle: TableHandle, user: str, batch: int, added: Sequence[str],
                 adopted: PendingSchema | None, commit: Callable[[], list[int]]) -> list[int]:
    """Run ``commit`` (the batch's snapshot(s)) with the batch's schema: the pending schema of
    ``handle`` published first when the batch added columns (``added``), the adopted one
    otherwise. On success the marker goes; a commit that failed for sure (nothing of the
    batch landed) withdraws the schema; an unknown outcome keeps it for the next run."""
    table = handle.open()
    marker = (publish_pending(table, handle.schema, user, batch, added) if added
              else adopted)
    try:
        ids = commit()
    except CommitStateUnknownError:
        raise
    except BaseException:
        if marker is not None:
            with contextlib.suppress(PaimonError):  # else the next run settles it
                c = table.new_commit(user)
                if not c.landed(batch) and not c.unfinished_steps(batch):
                    withdraw(handle, marker)
        raise
    if marker is not None:
        clear_pending(table, marker)
    return ids


def infer_column_type(values: Sequence[Any]) -> str:
    """A Paimon SQL type for the JSON values seen for a new column: ``BIGINT`` (integers),
    ``DOUBLE`` (numbers with a fraction), ``BOOLEAN``, else ``STRING`` (text, nested JSON)."""
    seen = {type(v) for v in values if v is not None}
    if not seen:
        return "STRING"
    if seen == {bool}:
        return "BOOLEAN"
    if seen <= {int}:
        return "BIGINT"
    if seen <= {int, float}:
        return "DOUBLE"
    return "STRING"
