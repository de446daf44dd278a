"""Lineage both ways: Dagster run -> Paimon snapshot properties, and snapshot -> materialization
metadata.

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

from paimon_core import CommitKind, FileStoreTable, Snapshot

__all__ = [
    "RUN_ID_PROPERTY",
    "SnapshotStats",
    "TableStats",
    "accepts_properties",
    "commit_properties",
    "run_commit_user",
    "snapshot_metadata",
    "snapshot_stats",
    "snapshots_of_run",
    "table_stats",
]

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


def run_commit_user(run_id: str) -> str:
    """The commit user of a run whose commits use the batch identifier (compaction,
    overwrite): one per run, so a run never takes another's snapshot for its own, and the
    snapshot names the run."""
    return f"dagster:{run_id}"


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
    table: FileStoreTable, snapshot_ids: Sequence[int], **extra: Any
) -> dict[str, Any]:
    """Materialization metadata of the snapshots a run created (the last one first-class,
    the counts summed over all of them). With no snapshot (nothing to commit, or already
    committed), ``paimon/snapshot_id`` is the table's latest."""
    import dagster as dg

    md: dict[str, Any] = {"paimon/table": str(table.identifier)}
    if snapshot_ids:
        stats = [snapshot_stats(table, sid) for sid in snapshot_ids]
        last = stats[-1]
        md.update({
            "paimon/snapshot_id": dg.MetadataValue.int(last.snapshot_id),
            "paimon/commit_kind": last.commit_kind,
            "paimon/commit_identifier": dg.MetadataValue.int(last.commit_identifier),
            "paimon/rows_added": dg.MetadataValue.int(sum(s.rows_added for s in stats)),
            "paimon/rows_deleted": dg.MetadataValue.int(sum(s.rows_deleted for s in stats)),
            "paimon/files_added": dg.MetadataValue.int(sum(s.files_added for s in stats)),
            "paimon/files_deleted": dg.MetadataValue.int(sum(s.files_deleted for s in stats)),
            "paimon/bytes_added": dg.MetadataValue.int(sum(s.bytes_added for s in stats)),
            "paimon/bytes_deleted": dg.MetadataValue.int(sum(s.bytes_deleted for s in stats)),
        })
        if last.total_records is not None:
            md["paimon/total_records"] = dg.MetadataValue.int(last.total_records)
        if len(stats) > 1:
            md["paimon/snapshot_ids"] = dg.MetadataValue.json([s.snapshot_id for s in stats])
    else:
        latest = table.snapshot_manager.latest_snapshot_id()
        md["paimon/snapshot_id"] = dg.MetadataValue.int(latest if latest is not None else 0)
        md["paimon/commit_kind"] = "NONE"
        for k in ("rows_added", "rows_deleted", "files_added", "files_deleted", "bytes_added",
                  "bytes_deleted"):
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
    run id in the snapshot properties, or its per-run commit user."""
    user = run_commit_user(run_id)
    return [
        s for s in table.snapshot_manager.snapshots()
        if (s.properties or {}).get(RUN_ID_PROPERTY) == run_id or s.commit_user == user
    ]
