"""Scan planning from manifests only: which files of a snapshot a read needs.

Mirrors ``org.apache.paimon.operation.AbstractFileStoreScan`` / ``KeyValueFileStoreScan`` /
``AppendOnlyFileStoreScan``: read the snapshot's manifest lists, skip manifests whose partition
range cannot match, read manifests (in parallel), drop entries by partition, bucket and stats,
fold ADD/DELETE into the live set, and group the live files into one :class:`DataSplit` per
(partition, bucket). No data file is opened here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from paimon_core.bucket import bucket_of, hash_binary_row
from paimon_core.layout import TableContext
from paimon_core.manifest_io import ManifestIO
from paimon_core.read.casts import is_widening
from paimon_core.scan.manifest_filter import (
    EntryFilter,
    read_entries,
    stats_to_columns,
)
from paimon_core.scan.predicate import (
    ColumnStats,
    Predicate,
    bucket_key_equalities,
    evaluate_row,
    might_match,
    partition_predicate,
    referenced_fields,
)
from paimon_core.scan.split import DataSplit, DeletionFile, Plan
from paimon_core.schema_manager import SchemaManager
from paimon_core.spec.binary_row import encode_binary_row
from paimon_core.spec.file_entries import live_files
from paimon_core.spec.manifest import DataFileMeta, FileKind, ManifestEntry
from paimon_core.spec.manifest_list import ManifestFileMeta
from paimon_core.spec.option_enums import MergeEngine
from paimon_core.spec.partition import decode_partition
from paimon_core.spec.schema import TableSchema
from paimon_core.spec.snapshot import Snapshot
from paimon_core.types import DataType

DELETION_VECTORS_INDEX = "DELETION_VECTORS"


@dataclass
class _Pruner:
    """Per-plan caches for partition decoding and pruning decisions."""

    schema: TableSchema
    schemas: SchemaManager
    predicate: Predicate | None
    part_types: list[DataType] = field(default_factory=list)
    part_pred: Predicate | None = None
    bucket_rows: list[bytes] | None = None
    _partition_cache: dict[bytes, tuple[Any, ...]] = field(default_factory=dict)
    _bucket_ok: dict[int, set[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        s = self.schema
        self.part_types = [s.field(k).type for k in s.partition_keys]
        if self.predicate is not None:
            self.part_pred = partition_predicate(self.predicate, list(s.partition_keys))
            bkeys = list(s.bucket_keys)
            if bkeys:
                combos = bucket_key_equalities(self.predicate, bkeys)
                if combos is not None:
                    types = [s.field(k).type for k in bkeys]
                    self.bucket_rows = [encode_binary_row(list(c), types) for c in combos]

    def partition_values(self, partition: bytes) -> tuple[Any, ...]:
        vals = self._partition_cache.get(partition)
        if vals is None:
            vals = decode_partition(partition, self.part_types)
            self._partition_cache[partition] = vals
        return vals

    def entry_filter(self) -> EntryFilter:
        """Manifests by partition stats, rows by partition and bucket (see manifest_filter)."""
        pred, keys, types = self.part_pred, self.schema.partition_keys, self.part_types
        if pred is None or not types:
            return EntryFilter(buckets_of=self.buckets if self.bucket_rows is not None else None)
        return EntryFilter.of_predicate(
            pred, keys, types, self.partition_ok,
            self.buckets if self.bucket_rows is not None else None,
        )

    def partition_ok(self, partition: bytes) -> bool:
        if self.part_pred is None:
            return True
        values = dict(zip(self.schema.partition_keys, self.partition_values(partition)))
        return evaluate_row(self.part_pred, values)

    def buckets(self, total_buckets: int) -> set[int] | None:
        """The buckets the bucket-key equalities of the predicate can hit (None: any)."""
        if self.bucket_rows is None or total_buckets <= 0:
            return None
        allowed = self._bucket_ok.get(total_buckets)
        if allowed is None:
            allowed = {bucket_of(hash_binary_row(r), total_buckets) for r in self.bucket_rows}
            self._bucket_ok[total_buckets] = allowed
        return allowed

    # ---- file stats, mapped to the current schema's column names by field id
    def value_stats(self, f: DataFileMeta) -> dict[str, ColumnStats]:
        file_schema = (
            self.schemas.schema(f.schema_id) if f.schema_id != self.schema.id else self.schema
        )
        fields = list(file_schema.fields)
        if f.value_stats_cols is not None:
            wanted = set(f.value_stats_cols)
            fields = [x for x in fields if x.name in wanted]
        raw = stats_to_columns(f.value_stats, [x.name for x in fields], [x.type for x in fields])
        return self._rename(raw, file_schema)

    def key_stats(self, f: DataFileMeta) -> dict[str, ColumnStats]:
        file_schema = (
            self.schemas.schema(f.schema_id) if f.schema_id != self.schema.id else self.schema
        )
        names = list(file_schema.trimmed_primary_keys)
        types = [file_schema.field(n).type for n in names]
        return self._rename(stats_to_columns(f.key_stats, names, types), file_schema)

    def _rename(
        self, raw: dict[str, ColumnStats], file_schema: TableSchema
    ) -> dict[str, ColumnStats]:
        if file_schema.id == self.schema.id:
            return raw
        by_id = {x.id: x.name for x in file_schema.fields}
        out = {}
        for cur in self.schema.fields:
            old = by_id.get(cur.id)
            # stats of a file written before a type change prune only when every old value
            # reads unchanged (a lossy cast may move a value into the filter's range)
            if old is not None and old in raw and is_widening(file_schema.field(old).type,
                                                              cur.type):
                out[cur.name] = raw[old]
        return out


class ScanPlanner:
    """Plans the live files of one snapshot under an optional predicate."""

    def __init__(
        self,
        context: TableContext,
        *,
        schemas: SchemaManager,
        manifests: ManifestIO,
        predicate: Predicate | None = None,
        max_workers: int = 8,
    ) -> None:
        self.context = context
        self.schema = context.schema
        self.schemas = schemas
        self.manifests = manifests
        self.table_path = context.table_path
        self.predicate = predicate
        self.options = context.options
        self.layout = context.layout
        self.max_workers = max_workers
        self.is_pk = context.is_primary_key_table
        # tables whose readers only see levels >= 1, where keys are unique (Java reads raw)
        self._read_raw_levels = self.is_pk and (
            self.options.deletion_vectors_enabled
            or self.options.merge_engine is MergeEngine.FIRST_ROW
        )

    # ---- manifest reading
    def data_manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        return self.manifests.data_manifests(snapshot)

    def read_entries(
        self, metas: Sequence[ManifestFileMeta], pruner: _Pruner | None = None
    ) -> list[ManifestEntry]:
        """Entries of the given manifests, in list order, pruned by partition and bucket
        (manifests by their partition stats, rows before their files are decoded)."""
        pr = pruner or self._pruner()
        return read_entries(self.manifests, metas, pr.entry_filter(), max_workers=self.max_workers)

    def _pruner(self) -> _Pruner:
        return _Pruner(self.schema, self.schemas, self.predicate)

    # ---- planning
    def plan(
        self, snapshot: Snapshot | None, *, level_filter: Callable[[int], bool] | None = None
    ) -> Plan:
        """All live files of ``snapshot`` that may hold rows matching the predicate.

        ``level_filter`` keeps only files whose LSM level it accepts (the first plan of a
        streaming read of ``lookup`` / ``full-compaction`` tables, ``withLevelFilter``)."""
        if snapshot is None:
            return Plan(None, ())
        pruner = self._pruner()
        entries = live_files(
            self.read_entries(self.data_manifests(snapshot), pruner),
            source=self.manifests.path(snapshot.base_manifest_list),
        )
        if self._read_raw_levels:
            entries = [e for e in entries if e.file.level > 0]
        if level_filter is not None:
            entries = [e for e in entries if level_filter(e.file.level)]
        entries = self._filter_by_stats(entries, pruner)
        dvs = self._deletion_files(snapshot)
        return Plan(snapshot.id, self._group(snapshot.id, entries, pruner, dvs, merge=self.is_pk))

    def plan_delta(self, snapshot: Snapshot, *, changelog: bool = False) -> Plan:
        """The files a snapshot ADDed in its delta (or changelog) list, unmerged."""
        pruner = self._pruner()
        name = snapshot.changelog_manifest_list if changelog else snapshot.delta_manifest_list
        if not name:
            return Plan(snapshot.id, ())
        size = (
            snapshot.changelog_manifest_list_size if changelog
            else snapshot.delta_manifest_list_size
        )
        entries = [
            e
            for e in self.read_entries(self.manifests.manifest_list(name, size), pruner)
            if e.kind is FileKind.ADD
        ]
        return Plan(snapshot.id, self._group(snapshot.id, entries, pruner, {}, merge=False))

    def plan_overwrite_changes(self, snapshot: Snapshot) -> tuple[Plan, Plan]:
        """The files an OVERWRITE snapshot deleted and added, from its delta list
        (``SnapshotReaderImpl.readChanges`` of Paimon 0.9): ``(before, after)``, unmerged,
        one split per (partition, bucket). A file both deleted and added (moved, not
        rewritten) is in neither, as Java's "deduplicate" step drops it from both sides."""
        pruner = self._pruner()
        name = snapshot.delta_manifest_list
        if not name:
            return Plan(snapshot.id, ()), Plan(snapshot.id, ())
        entries = self.read_entries(
            self.manifests.manifest_list(name, snapshot.delta_manifest_list_size), pruner
        )
        deleted = [e for e in entries if e.kind is FileKind.DELETE]
        added = [e for e in entries if e.kind is FileKind.ADD]
        both = {(e.partition, e.bucket, e.file.file_name) for e in deleted} & {
            (e.partition, e.bucket, e.file.file_name) for e in added
        }
        if both:
            deleted = [e for e in deleted if (e.partition, e.bucket, e.file.file_name) not in both]
            added = [e for e in added if (e.partition, e.bucket, e.file.file_name) not in both]
        return (
            Plan(snapshot.id, self._group(snapshot.id, deleted, pruner, {}, merge=False)),
            Plan(snapshot.id, self._group(snapshot.id, added, pruner, {}, merge=False)),
        )

    def _filter_by_stats(self, entries: list[ManifestEntry], pr: _Pruner) -> list[ManifestEntry]:
        pred = self.predicate
        if pred is None:
            return entries
        cols = referenced_fields(pred)
        if not self.is_pk:
            return [
                e for e in entries if might_match(pred, pr.value_stats(e.file), e.file.row_count)
            ]
        # primary-key tables: per file only on key columns (every version of a key shares the
        # key); value columns only per whole bucket, and only for deduplicate (the newest
        # version of each key lives in some file of the bucket).
        keys = set(self.schema.trimmed_primary_keys)
        if cols & keys:
            entries = [
                e for e in entries if might_match(pred, pr.key_stats(e.file), e.file.row_count)
            ]
        if self.options.merge_engine is not MergeEngine.DEDUPLICATE:
            return entries
        by_bucket: dict[tuple[bytes, int], list[ManifestEntry]] = defaultdict(list)
        for e in entries:
            by_bucket[(e.partition, e.bucket)].append(e)
        keep: list[ManifestEntry] = []
        for group in by_bucket.values():
            if any(might_match(pred, pr.value_stats(e.file), e.file.row_count) for e in group):
                keep.extend(group)
        return keep

    def _deletion_files(
        self, snapshot: Snapshot
    ) -> dict[tuple[bytes, int], dict[str, DeletionFile]]:
        out: dict[tuple[bytes, int], dict[str, DeletionFile]] = defaultdict(dict)
        if not snapshot.index_manifest:
            return out
        for ie in self.manifests.index_manifest(snapshot.index_manifest):
            if ie.index_type != DELETION_VECTORS_INDEX or ie.kind.name != "ADD" or not ie.dv_ranges:
                continue
            path = self.layout.index_file(ie.file_name)
            for r in ie.dv_ranges:
                out[(ie.partition, ie.bucket)][r.data_file_name] = DeletionFile(
                    path, r.offset, r.length
                )
        return out

    def _group(
        self,
        snapshot_id: int,
        entries: list[ManifestEntry],
        pr: _Pruner,
        dvs: dict[tuple[bytes, int], dict[str, DeletionFile]],
        *,
        merge: bool,
    ) -> tuple[DataSplit, ...]:
        groups: dict[tuple[bytes, int], list[ManifestEntry]] = defaultdict(list)
        for e in entries:
            groups[(e.partition, e.bucket)].append(e)
        splits = []
        for (part, bucket), group in groups.items():
            values = pr.partition_values(part)
            bucket_dir = self.layout.bucket_dir_of_values(values, bucket)
            files = sorted((e.file for e in group), key=_file_order)
            dv = dvs.get((part, bucket), {})
            split_dvs = tuple((f.file_name, dv[f.file_name]) for f in files if f.file_name in dv)
            raw = (not merge) or _raw_convertible(files, self._read_raw_levels)
            splits.append(
                DataSplit(
                    snapshot_id=snapshot_id,
                    partition=part,
                    partition_values=values,
                    bucket=bucket,
                    total_buckets=group[0].total_buckets,
                    bucket_path=bucket_dir,
                    files=tuple(files),
                    deletion_files=split_dvs,
                    raw_convertible=raw,
                )
            )
        splits.sort(key=lambda s: (s.partition, s.bucket))
        return tuple(splits)


def _file_order(f: DataFileMeta) -> tuple[int, int, str]:
    return (f.min_sequence_number, f.max_sequence_number, f.file_name)


def _raw_convertible(files: Sequence[DataFileMeta], unique_keys: bool) -> bool:
    """True when a PK split needs no merge (``MergeTreeSplitGenerator`` rules)."""
    if unique_keys:
        return True
    if len(files) == 1:
        return (files[0].delete_row_count or 0) == 0
    levels = {f.level for f in files}
    return (
        len(levels) == 1 and 0 not in levels and all((f.delete_row_count or 0) == 0 for f in files)
    )


StatsFn = Callable[[DataFileMeta], dict[str, ColumnStats]]
