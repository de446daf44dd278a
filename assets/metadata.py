"""Lineage both ways: Dagster run -> Paimon snapshot properties, and snapshot -> materialization
metadata; and the metadata that describes the TABLE (:func:`table_state_metadata`).

Every commit a run makes carries :func:`commit_properties` in its snapshot (``dagster.run-id``,
``dagster.asset-key``, ``dagster.partition-key``), so ``paimon snapshots --verbose`` names the
run that wrote each snapshot; every materialization returns :func:`snapshot_metadata` (snapshot
id, commit kind, rows added / deleted, files and bytes), so the run names its snapshot.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from paimon_core import CommitKind, FileStoreTable, PaimonError, Snapshot, TableSchema
from paimon_core.commit.users import LEGACY_RUN_USER, run_commit_user

__all__ = [
    "ASSET_PROPERTY",
    "COLUMN_SCHEMA",
    "COMMIT_KIND",
    "REPORTED_BY",
    "ROW_COUNT",
    "RUN_ID_PROPERTY",
    "SNAPSHOT_ID",
    "TABLE",
    "TABLE_NAME",
    "SnapshotStats",
    "TableStats",
    "accepts_properties",
    "commit_properties",
    "run_commit_user",
    "snapshot_metadata",
    "snapshot_stats",
    "snapshots_of_run",
    "table_state_event",
    "table_state_metadata",
    "table_stats",
]

# ---- the metadata keys every producer uses (their one home)
#: ``db.table`` (text; also asset definition metadata)
TABLE = "paimon/table"
#: the snapshot a materialization names / the table's latest: TEXT, an identifier is no
#: quantity (Dagster plots int and float metadata as series)
SNAPSHOT_ID = "paimon/snapshot_id"
#: APPEND / COMPACT / OVERWRITE of the run's last snapshot; NONE: the run committed nothing
COMMIT_KIND = "paimon/commit_kind"
#: on a table-state event (:func:`table_state_event`): what made the commit it reports (a
#: maintenance run, or the state sensor seeing another engine's commit)
REPORTED_BY = "paimon/reported_by"
#: Dagster's well-known keys, shown on the asset page
TABLE_NAME = "dagster/table_name"
ROW_COUNT = "dagster/row_count"
COLUMN_SCHEMA = "dagster/column_schema"
URI = "dagster/uri"


def id_text(snapshot_id: int | None) -> Any:
    """A snapshot id (or ``None``: no snapshot) as metadata: text, never a plotted number."""
    import dagster as dg

    return dg.MetadataValue.text("none" if snapshot_id is None else str(snapshot_id))

RUN_ID_PROPERTY = "dagster.run-id"
ASSET_PROPERTY = "dagster.asset-key"
PARTITION_PROPERTY = "dagster.partition-key"


def commit_properties(
    run_id: str, asset_key: str, partition_key: str | None = None, **extra: str
) -> dict[str, str]:
    """The snapshot properties of a commit made by a Dagster run."""
    props = {RUN_ID_PROPERTY: run_id, ASSET_PROPERTY: asset_key}
    if partition_key is not None:
        props[PARTITION_PROPERTY] = partition_key
    props.update({k: str(v) for k, v in extra.items()})
    return props


def context_properties(context: Any, **extra: str) -> dict[str, str]:
    """:func:`commit_properties` of an asset execution context (run id, asset, partition)."""
    partition: str | None = None
    if context.has_partition_key_range:
        rng = context.partition_key_range
        partition = rng.start if rng.start == rng.end else f"{rng.start}...{rng.end}"
    elif context.has_partition_key:
        partition = context.partition_key
    return commit_properties(
        context.run.run_id, context.asset_key.to_user_string(), partition, **extra
    )


@dataclass(frozen=True)
class SnapshotStats:
    """What one snapshot changed (from its delta manifest list).

    ``rows_added`` counts ``+I``/``+U`` records of the added files; ``rows_deleted`` their
    ``-U``/``-D`` records, plus, for OVERWRITE snapshots, the rows of the files removed. For
    COMPACT snapshots both are 0 (rows are rewritten, not changed).
    """

    snapshot_id: int
    commit_kind: str
    commit_user: str
    commit_identifier: int
    rows_added: int
    rows_deleted: int
    files_added: int
    files_deleted: int
    bytes_added: int
    bytes_deleted: int
    total_records: int | None
    properties: Mapping[str, str]


def _sum(table: pa.Table, column: str) -> int:
    return int(pc.sum(table.column(column)).as_py() or 0)


def snapshot_stats(table: FileStoreTable, snapshot_id: int) -> SnapshotStats:
    """Counts of one snapshot (``table.inspect.delta_files``: its delta manifests only)."""
    snap = table.snapshot_manager.snapshot(snapshot_id)
    delta = table.inspect.delta_files(snapshot_id)
    adds = delta.filter(pc.equal(delta.column("kind"), "ADD"))
    dels = delta.filter(pc.equal(delta.column("kind"), "DELETE"))
    kind = snap.commit_kind
    if kind is CommitKind.COMPACT:
        rows_added = rows_deleted = 0
    else:
        retract = _sum(adds, "delete_row_count")
        rows_added = _sum(adds, "record_count") - retract
        rows_deleted = retract
        if kind is CommitKind.OVERWRITE:
            rows_deleted += _sum(dels, "record_count") - _sum(dels, "delete_row_count")
    return SnapshotStats(
        snapshot_id=snap.id,
        commit_kind=kind.value,
        commit_user=snap.commit_user,
        commit_identifier=snap.commit_identifier,
        rows_added=rows_added,
        rows_deleted=rows_deleted,
        files_added=adds.num_rows,
        files_deleted=dels.num_rows,
        bytes_added=_sum(adds, "file_size_in_bytes"),
        bytes_deleted=_sum(dels, "file_size_in_bytes"),
        total_records=snap.total_record_count,
        properties=dict(snap.properties or {}),
    )


@dataclass(frozen=True)
class TableStats:
    """The live state of a table at a snapshot: files, bytes, records."""

    snapshot_id: int | None
    files: int
    bytes: int
    records: int
    small_files: int


def table_stats(
    table: FileStoreTable, *, small_file_bytes: int, snapshot: Snapshot | None = None
) -> TableStats:
    """Live files of the latest (or given) snapshot (``table.inspect.files``: metadata
    only)."""
    snap = snapshot if snapshot is not None else table.latest_snapshot()
    if snap is None:
        return TableStats(None, 0, 0, 0, 0)
    files = table.inspect.files(snapshot_id=snap.id)
    sizes = files.column("file_size_in_bytes")
    return TableStats(
        snapshot_id=snap.id,
        files=files.num_rows,
        bytes=_sum(files, "file_size_in_bytes"),
        records=_sum(files, "record_count"),
        small_files=int(pc.sum(pc.less(sizes, small_file_bytes)).as_py() or 0),
    )


def snapshot_metadata(
    table: FileStoreTable, snapshot_ids: Sequence[int], *, table_state: bool = True,
    count_rows: bool = True, **extra: Any
) -> dict[str, Any]:
    """Materialization metadata of a run that committed ``snapshot_ids`` (maybe none):

    * what the run did: :data:`SNAPSHOT_ID` (text) and :data:`COMMIT_KIND` of its last
      snapshot, ``paimon/commit_identifier``, and the deltas summed over its snapshots
      (``paimon/rows_added``, ``rows_deleted``, ``files_*``, ``bytes_*``; truly 0 for a run
      that committed nothing, whose commit kind is ``NONE`` and whose snapshot id is the
      table's latest);
    * what the table is now: :func:`table_state_metadata` (row count, column schema, live
      files and bytes, sorted runs...), so a no-op run reports the same table, never a drop
      to zero. ``table_state=False`` for an asset that maintains the table rather than
      being it (compaction): the run reports that state on the table's own asset
      (:func:`assets.observations.report_table_state`).
    """
    import dagster as dg

    md: dict[str, Any] = {TABLE: str(table.identifier)}
    if table_state:
        md.update(table_state_metadata(table, count_rows=count_rows))
    else:
        latest = table.snapshot_manager.latest_snapshot_id()
        md[SNAPSHOT_ID] = id_text(latest)
    deltas = ("rows_added", "rows_deleted", "files_added", "files_deleted", "bytes_added",
              "bytes_deleted")
    if snapshot_ids:
        stats = [snapshot_stats(table, sid) for sid in snapshot_ids]
        last = stats[-1]
        md.update({
            SNAPSHOT_ID: id_text(last.snapshot_id),
            COMMIT_KIND: last.commit_kind,
            "paimon/commit_identifier": dg.MetadataValue.text(str(last.commit_identifier)),
        })
        for k in deltas:
            md[f"paimon/{k}"] = dg.MetadataValue.int(sum(getattr(s, k) for s in stats))
        if last.total_records is not None:
            md["paimon/total_records"] = dg.MetadataValue.int(last.total_records)
        if len(stats) > 1:
            md["paimon/snapshot_ids"] = dg.MetadataValue.json([s.snapshot_id for s in stats])
    else:
        md[COMMIT_KIND] = "NONE"
        for k in deltas:
            md[f"paimon/{k}"] = dg.MetadataValue.int(0)
    md.update(extra)
    return md


def accepts_properties(fn: Callable[..., Any]) -> bool:
    """Whether a Spark job entry point takes ``properties=`` (snapshot properties of its
    commit). The jobs of ``pipelines/`` that do not (yet) cannot record the run id."""
    try:
        return "properties" in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return False


def snapshots_of_run(table: FileStoreTable, run_id: str) -> list[Snapshot]:
    """The retained snapshots a run committed (lineage from a run back to the table): its
    run id in the snapshot properties, or its per-run commit user (``dagster-run-<run id>``;
    ``dagster:<run id>`` for runs before issue 29)."""
    users = {run_commit_user(run_id), LEGACY_RUN_USER.format(run_id=run_id)}
    return [
        s for s in table.snapshot_manager.snapshots()
        if (s.properties or {}).get(RUN_ID_PROPERTY) == run_id or s.commit_user in users
    ]


# ------------------------------------------------------------------------------ table state
def live_row_count(table: FileStoreTable, snapshot: Snapshot) -> int:
    """The rows a reader of ``snapshot`` sees. An append table's live files hold exactly its
    rows (metadata only); a primary-key table's files hold every version of a key until
    compaction folds them, so its rows are counted by a merged read of the key columns only
    (vectorised; the cost of reading the keys)."""
    if not table.is_primary_key_table:
        files = table.inspect.files(snapshot_id=snapshot.id)
        return _sum(files, "record_count")
    keys = list(table.schema.primary_keys)
    return int(table.to_arrow(columns=keys, snapshot_id=snapshot.id).num_rows)


def table_state_metadata(table: FileStoreTable, *, count_rows: bool = True) -> dict[str, Any]:
    """Metadata describing the table as it is now (whoever wrote it), for a materialization or
    an ``AssetObservation``:

    * ``dagster/table_name`` (``db.table``), ``dagster/uri`` (the table's path) and
      ``dagster/column_schema`` (a ``TableSchema`` of the latest schema: name, Paimon SQL
      type, nullability, primary-key and partition columns marked);
    * ``dagster/row_count``: live rows (:func:`live_row_count`; omitted with
      ``count_rows=False``) -- the same after a run that changed nothing, never a drop to 0;
    * :data:`SNAPSHOT_ID`: the latest snapshot id as TEXT (an identifier: Dagster plots int
      and float metadata as series, an id is no quantity), ``paimon/schema_id`` likewise;
    * ``paimon/live_files``, ``paimon/live_bytes``, ``paimon/buckets``: the live data;
    * ``paimon/max_sorted_runs`` / ``paimon/sorted_runs``: sorted runs of the worst bucket /
      of all buckets (the compaction debt: each above 1 is work for the next compaction);
    * ``paimon/snapshots_retained``, ``paimon/earliest_snapshot`` (text) and
      ``paimon/earliest_snapshot_time``: what expiry left (the trace of the last expiry).

    An empty table (no snapshot) has no row count, no snapshot and no file counts: nothing is
    reported as 0 that is merely unknown. A row count that cannot be read (a data file gone)
    is reported as ``paimon/row_count_error`` instead: the table's ``fsck_clean`` check names
    the damage (and, blocking, stops what is downstream).
    """
    import dagster as dg

    # the latest schema, not the handle's (a run may have evolved it since it opened the table)
    schema = table.schema_manager.latest() or table.schema
    md: dict[str, Any] = {
        TABLE_NAME: str(table.identifier),
        URI: dg.MetadataValue.path(table.path),
        COLUMN_SCHEMA: column_schema(schema),
        "paimon/schema_id": dg.MetadataValue.text(str(schema.id)),
    }
    snap = table.latest_snapshot()
    if snap is None:
        md[SNAPSHOT_ID] = id_text(None)
        return md
    buckets = table.inspect.buckets(snapshot_id=snap.id)
    runs = buckets.column("sorted_runs")
    md.update({
        SNAPSHOT_ID: id_text(snap.id),
        COMMIT_KIND: snap.commit_kind.value,
        "paimon/snapshot_time": dg.MetadataValue.timestamp(snap.time_millis / 1000.0),
        "paimon/live_files": dg.MetadataValue.int(_sum(buckets, "file_count")),
        "paimon/live_bytes": dg.MetadataValue.int(_sum(buckets, "file_size_in_bytes")),
        "paimon/buckets": dg.MetadataValue.int(buckets.num_rows),
        "paimon/max_sorted_runs": dg.MetadataValue.int(
            int(pc.max(runs).as_py() or 0) if buckets.num_rows else 0),
        "paimon/sorted_runs": dg.MetadataValue.int(_sum(buckets, "sorted_runs")),
    })
    sm = table.snapshot_manager
    earliest = sm.earliest_snapshot()
    if earliest is not None:
        md["paimon/earliest_snapshot"] = id_text(earliest.id)
        md["paimon/earliest_snapshot_time"] = dg.MetadataValue.timestamp(
            earliest.time_millis / 1000.0)
        md["paimon/snapshots_retained"] = dg.MetadataValue.int(snap.id - earliest.id + 1)
    if count_rows:
        try:
            md[ROW_COUNT] = dg.MetadataValue.int(live_row_count(table, snap))
        except PaimonError as e:
            # a damaged table (a data file gone): its state is still reported, the commit the
            # run made still stands, and the table's blocking fsck_clean check fails the run
            md["paimon/row_count_error"] = dg.MetadataValue.text(f"{type(e).__name__}: {e}")
    return md


def table_state_event(table: FileStoreTable, asset_key: Any, reported_by: str, *,
                      count_rows: bool = True, description: str | None = None) -> Any:
    """A materialization of the TABLE's asset (``asset_key``) carrying
    :func:`table_state_metadata` and :data:`REPORTED_BY`: how a commit that the table's own
    asset did not make (a compaction or expiry run, another engine) reaches its asset page.

    A materialization, not an ``AssetObservation``: the asset Overview of dagster-webserver
    1.13 (``AssetNodeOverview``) shows the metadata, row count and columns of the latest
    MATERIALIZATION (``materialization || observation``: an observation only while the asset
    was never materialized), so after one run of the table's asset an observation would
    reach the Events tab only and the Overview would keep the superseded snapshot. No
    partition: the event describes the whole table, not one partition's data.
    """
    import dagster as dg

    md = table_state_metadata(table, count_rows=count_rows)
    md[REPORTED_BY] = reported_by
    return dg.AssetMaterialization(
        asset_key=asset_key, metadata=md,
        description=description or f"{table.identifier} after a commit of {reported_by}")


def column_schema(schema: TableSchema) -> Any:
    """A table schema's columns as a ``dagster.TableSchema`` (``dagster/column_schema``)."""
    import dagster as dg

    pks, parts = set(schema.primary_keys), set(schema.partition_keys)
    columns = []
    for f in schema.fields:
        notes = [n for n, on in (("primary key", f.name in pks),
                                 ("partition", f.name in parts)) if on]
        desc = "; ".join([*notes, *([f.description] if f.description else [])]) or None
        columns.append(dg.TableColumn(
            name=f.name, type=f.type.sql(), description=desc,
            constraints=dg.TableColumnConstraints(nullable=f.type.nullable,
                                                  unique=f.name in pks and len(pks) == 1),
        ))
    return dg.TableSchema(columns=columns)
