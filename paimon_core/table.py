"""A Paimon table on storage: schema, snapshots, and the read and write API.

Example:
    >>> import tempfile
    >>> import pyarrow as pa
    >>> from paimon_core import FileSystemCatalog, Schema
    >>> catalog = FileSystemCatalog(tempfile.mkdtemp())
    >>> data = pa.table({"id": pa.array([1, 2], pa.int64()), "amount": [5.0, 20.0],
    ...                  "dt": ["2024-01-02", "2024-01-02"]})
    >>> table = catalog.create_table("db.orders", Schema.from_arrow(data.schema,
    ...                              primary_keys=["dt", "id"], partition_keys=["dt"],
    ...                              options={"bucket": "1"}))
    >>> builder = table.new_batch_write_builder("orders-ingest")
    >>> with builder.new_write() as write:
    ...     write.write_arrow(data)
    ...     messages = write.prepare_commit()
    >>> builder.new_commit().commit(messages)
    [1]
    >>> table.to_arrow(columns=["id", "amount"], filter="amount > 10").to_pylist()
    [{'id': 2, 'amount': 20.0}]
    >>> rb = table.new_read_builder().with_filter("dt = '2024-01-02'")
    >>> plan = rb.new_scan().plan()
    >>> rb.new_read().to_arrow(plan.splits).num_rows
    2
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from paimon_core.errors import SchemaError, SnapshotNotExistError
from paimon_core.identifier import Identifier
from paimon_core.io.file_io import FileIO
from paimon_core.layout import TableContext, TableLayout
from paimon_core.manifest_io import ManifestCache, ManifestIO
from paimon_core.option_validation import checked_overlay, overlaid
from paimon_core.options import CoreOptions
from paimon_core.read.builder import FilterArg, to_predicate
from paimon_core.read.builder import ReadBuilder as ReadBuilder
from paimon_core.read.builder import TableScan as TableScan
from paimon_core.read.incremental import IncrementalRead
from paimon_core.read.incremental_diff import DIFF_MODE, read_incremental_diff
from paimon_core.read.table_read import TableRead
from paimon_core.scan.incremental import (
    plan_incremental,
    resolve_scan_mode,
    resolve_timestamp_range,
)
from paimon_core.scan.planner import ScanPlanner
from paimon_core.scan.predicate import Predicate
from paimon_core.scan.predicate_model import is_null
from paimon_core.scan.split import DataSplit
from paimon_core.scan.streaming import StreamSource, StreamTableScan
from paimon_core.schema_manager import SchemaManager
from paimon_core.snapshot_manager import SnapshotManager
from paimon_core.spec.option_enums import BucketMode, ChangelogProducer
from paimon_core.spec.schema import TableSchema
from paimon_core.spec.snapshot import CommitKind, Snapshot

if TYPE_CHECKING:
    from paimon_core.commit.options import CommitOptions
    from paimon_core.commit.table_commit import TableCommit
    from paimon_core.compact.options import CompactStrategy
    from paimon_core.expire_config import ExpireResult
    from paimon_core.inspect import InspectTable
    from paimon_core.rollback import RollbackResult
    from paimon_core.schema_change import SchemaChange
    from paimon_core.tags import TagManager
    from paimon_core.write.builder import BatchWriteBuilder
    from paimon_core.write.dynamic_bucket import AssignerChannel
    from paimon_core.write.table_write import TableWrite

# Writing, compaction, expiry, tags, schema changes and the system tables are imported where
# they are used, so a process that only reads never loads them (fresh-process start-up: a CLI
# call, a Spark task, a Dagster step).


class FileStoreTable:
    """One table: ``<warehouse>/<db>.db/<name>/``."""

    def __init__(
        self,
        file_io: FileIO,
        path: str,
        identifier: Identifier,
        schema: TableSchema,
        manifest_cache: ManifestCache | None = None,
        dynamic_options: Mapping[str, str] | None = None,
    ) -> None:
        self.file_io = file_io
        self.path = path
        self.identifier = identifier
        #: this handle's options over the stored ones (:meth:`copy`; checked there)
        self.dynamic_options: dict[str, str] = dict(dynamic_options or {})
        self.schema = overlaid(schema, self.dynamic_options)
        self.schema_manager = SchemaManager(file_io, path)
        if not self.dynamic_options:  # the manager keeps stored schemas only
            self.schema_manager.remember(schema)
        self.snapshot_manager = SnapshotManager(file_io, path)
        self.manifest_io = ManifestIO(file_io, path, manifest_cache)
        self._context: TableContext | None = None

    def __reduce__(self) -> tuple[type[FileStoreTable], tuple[
            FileIO, str, Identifier, TableSchema, None, dict[str, str]]]:
        # picklable for Spark / process pools (the managers hold locks and caches)
        return (FileStoreTable, (self.file_io, self.path, self.identifier, self.schema, None,
                                 self.dynamic_options))

    def copy(self, dynamic_options: Mapping[str, str]) -> FileStoreTable:
        """This table with ``dynamic_options`` over its options, for one job (Java's
        ``FileStoreTable.copy(Map)``): its writes, compaction, commits, expiry and scans use
        them; nothing is written to storage. An option fixed for the table's life given another
        value (``bucket``, ``primary-key``, ``merge-engine``, ...; see
        :data:`~paimon_core.option_validation.IMMUTABLE_OPTIONS`) raises
        :class:`~paimon_core.errors.ImmutableOptionError`, a bad value :class:`SchemaError`;
        both name the option."""
        changed = checked_overlay(self.schema, dynamic_options)
        return FileStoreTable(self.file_io, self.path, self.identifier, self.schema,
                              self.manifest_io.cache, {**self.dynamic_options, **changed})

    @classmethod
    def load(
        cls,
        file_io: FileIO,
        path: str,
        identifier: Identifier,
        manifest_cache: ManifestCache | None = None,
    ) -> FileStoreTable | None:
        """The table at ``path`` with its latest schema (None when it has none);
        ``manifest_cache``: the catalog's, shared by its tables."""
        schema = SchemaManager(file_io, path).latest()
        if schema is None:
            return None
        return cls(file_io, path, identifier, schema, manifest_cache)

    @property
    def context(self) -> TableContext:
        """This schema resolved once, for the table's writers, compaction, scans, commits."""
        ctx = self._context
        if ctx is None or ctx.schema is not self.schema:
            ctx = self._context = TableContext.of(self.path, self.schema)
        return ctx

    def latest_context(self) -> TableContext:
        """The table's latest stored schema (this handle's options laid over) resolved: this
        table's :attr:`context` while that schema is still this table's, else a new one (an
        ALTER by another handle). For operations on the table as it is now (expiry)."""
        latest = self.schema_manager.latest()
        return self.context_of(self.schema if latest is None
                               else overlaid(latest, self.dynamic_options))

    def context_of(self, schema: TableSchema) -> TableContext:
        """``schema`` resolved: this table's :attr:`context` when it is this table's schema."""
        same = schema is self.schema or schema == self.schema
        return self.context if same else TableContext.of(self.path, schema)

    @property
    def options(self) -> CoreOptions:
        return self.context.options

    @property
    def layout(self) -> TableLayout:
        return self.context.layout

    @property
    def bucket_mode(self) -> BucketMode:
        """Java's ``FileStoreTable.bucketMode()``."""
        return self.context.bucket_mode

    @property
    def num_buckets(self) -> int:
        """The ``bucket`` option (-1 dynamic/unaware, -2 postpone)."""
        return self.context.num_buckets

    @property
    def inspect(self) -> InspectTable:
        """Metadata as Arrow tables, Paimon's system tables (``table.inspect.files()``); see
        :mod:`paimon_core.inspect`."""
        from paimon_core.inspect import InspectTable

        return InspectTable(self)

    @property
    def is_primary_key_table(self) -> bool:
        return bool(self.schema.primary_keys)

    # ---- snapshots
    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest_snapshot()

    def resolve_snapshot(
        self,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp_millis: int | None = None,
    ) -> Snapshot | None:
        """Time travel: a snapshot id, a tag, or the latest snapshot at or before a time
        (``scan.snapshot-id`` / ``scan.tag-name`` / ``scan.timestamp-millis``)."""
        given = [x is not None for x in (snapshot_id, tag, timestamp_millis)]
        if sum(given) > 1:
            raise ValueError("give at most one of snapshot_id, tag, timestamp_millis")
        if snapshot_id is not None:
            return self.snapshot_manager.retained_snapshot(snapshot_id)
        if tag is not None:
            return self.snapshot_manager.tag(tag)
        if timestamp_millis is not None:
            snap = self.snapshot_manager.earlier_or_equal_time_millis(timestamp_millis)
            if snap is None:
                raise SnapshotNotExistError(f"no snapshot at or before time {timestamp_millis}")
            return snap
        return self.latest_snapshot()

    def schema_for(self, snapshot: Snapshot | None, time_travel: bool) -> TableSchema:
        """The schema to read a snapshot with: the snapshot's own when travelling in time
        (as Java's ``tryTimeTravel``), else the latest."""
        if time_travel and snapshot is not None and snapshot.schema_id != self.schema.id:
            return overlaid(self.schema_manager.schema(snapshot.schema_id), self.dynamic_options)
        return self.schema

    # ---- writing
    def new_batch_write_builder(
        self, commit_user: str | None = None, *, options: CommitOptions | None = None
    ) -> BatchWriteBuilder:
        """A :class:`~paimon_core.write.builder.BatchWriteBuilder`: the writer and the
        committer of one batch write for ``commit_user`` (default: ``batch-<uuid>``, made
        once) with ``options`` (as pypaimon's ``new_batch_write_builder``).
        """
        from paimon_core.commit.options import CommitOptions
        from paimon_core.commit.users import new_commit_user
        from paimon_core.write.builder import BatchWriteBuilder

        return BatchWriteBuilder(self, commit_user or new_commit_user("batch"),
                                 options or CommitOptions())

    def new_write(self, commit_user: str, *, overwrite: bool = False,
                  assigner_channel: AssignerChannel | None = None) -> TableWrite:
        """The writer (phase one) for ``commit_user`` (Java's ``newWrite(commitUser)``); see
        :class:`TableWrite` (``overwrite``: rows for an INSERT OVERWRITE;
        ``assigner_channel``: one task of a distributed dynamic bucket write). Use
        :meth:`new_batch_write_builder` to have one user made for both phases."""
        from paimon_core.write.table_write import TableWrite

        return TableWrite(self.file_io, self.context, commit_user=commit_user,
                          snapshot_manager=self.snapshot_manager,
                          planner=self.new_planner(self.schema, None), overwrite=overwrite,
                          assigner_channel=assigner_channel)

    def new_commit(
        self,
        commit_user: str,
        *,
        options: CommitOptions | None = None,
        max_retries: int | None = None,
    ) -> TableCommit:
        """The committer (phase two) for ``commit_user``, committing with ``options``
        (``max_retries`` overrides ``options.max_retries``); see :class:`TableCommit`."""
        from paimon_core.commit.table_commit import TableCommit

        return TableCommit(
            self.file_io, self.path, commit_user=commit_user, schema_manager=self.schema_manager,
            snapshot_manager=self.snapshot_manager, manifest_io=self.manifest_io,
            options=options, max_retries=max_retries, dynamic_options=self.dynamic_options,
            context=self.context)

    def compact(
        self,
        partitions: Sequence[Mapping[str, Any]] | None = None,
        buckets: Sequence[int] | None = None,
        *,
        strategy: CompactStrategy | None = None,
        commit_user: str | None = None,
        max_attempts: int | None = None,
    ) -> int | None:
        """Compact the given partitions (specs like ``{"dt": "2024-01-01"}``, default all)
        and buckets (default all) into one COMPACT snapshot, re-planning on conflicts; see
        :func:`paimon_core.compact.manager.compact_table`. A full compaction (one sorted run
        per bucket on the max level) unless ``strategy="minor"``: then what the universal
        picker asks for (``None``: :data:`paimon_core.compact.options.DEFAULT_COMPACT_STRATEGY`).
        ``max_attempts`` defaults to
        :data:`paimon_core.compact.manager.DEFAULT_MAX_ATTEMPTS`. Returns the snapshot id, or
        None when nothing needed compaction."""
        from paimon_core.compact.manager import DEFAULT_MAX_ATTEMPTS, compact_table
        from paimon_core.compact.options import DEFAULT_COMPACT_STRATEGY

        return compact_table(self, partitions=partitions, buckets=buckets,
                             strategy=DEFAULT_COMPACT_STRATEGY if strategy is None else strategy,
                             commit_user=commit_user,
                             max_attempts=DEFAULT_MAX_ATTEMPTS if max_attempts is None
                             else max_attempts)

    # ---- schema evolution and tags
    def alter(self, changes: Sequence[SchemaChange]) -> TableSchema:
        """ALTER TABLE: apply ``changes`` and publish the next schema atomically (see
        :mod:`paimon_core.schema_change`). This table object then uses the new schema."""
        from paimon_core.schema_change import commit_changes, null_candidates

        latest = self.schema_manager.latest()
        candidates = null_candidates(latest, changes) if latest is not None else []
        null_free = [c for c in candidates if self._null_free(c)]
        self.schema = overlaid(
            commit_changes(self.file_io, self.path, changes, null_free=null_free),
            self.dynamic_options)
        return self.schema

    def _null_free(self, column: str) -> bool:
        """Whether the latest snapshot holds no null in ``column`` (files whose stats count
        no null are pruned, the rest read)."""
        if self.latest_snapshot() is None:
            return True
        rows: int = self.to_arrow(columns=[column], filter=is_null(column)).num_rows
        return rows == 0

    def tag_manager(self) -> TagManager:
        from paimon_core.tags import TagManager

        return TagManager(self.file_io, self.path)

    def create_tag(
        self,
        name: str,
        snapshot_id: int | None = None,
        *,
        time_retained: datetime.timedelta | None = None,
    ) -> Snapshot:
        """Tag a snapshot (default: the latest); see :class:`TagManager`."""
        return self.tag_manager().create(name, snapshot_id, time_retained=time_retained)

    def delete_tag(self, name: str) -> None:
        self.tag_manager().delete(name)

    def list_tags(self) -> list[tuple[str, int]]:
        """``(name, snapshot id)`` of every tag."""
        return self.tag_manager().list()

    def rollback_to(self, target: int | str) -> RollbackResult:
        """Roll back to a snapshot id (``int``) or a tag (``str``), as Java's
        ``Table.rollbackTo``: the snapshots and tags after it go, then the files only they
        referenced. See :mod:`paimon_core.rollback`.

        Raises:
            SnapshotExpiredError / SnapshotNotExistError / TagNotExistError: no such target.
            SchemaError: ``target`` is neither an ``int`` nor a ``str``.
        """
        from paimon_core.rollback import rollback_to

        if isinstance(target, bool) or not isinstance(target, (int, str)):
            raise SchemaError(f"rollback_to takes a snapshot id or a tag name, not {target!r}")
        if isinstance(target, int):
            return rollback_to(self, snapshot_id=target)
        return rollback_to(self, tag=target)

    # ---- maintenance
    def expire_snapshots(
        self,
        *,
        retain_min: int | None = None,
        retain_max: int | None = None,
        older_than_millis: int | None = None,
        max_deletes: int | None = None,
    ) -> ExpireResult:
        """Expire old snapshots (and, with ``consumer.expiration-time``, stale consumers) by the
        table's ``snapshot.*`` options or the explicit values given; ``older_than_millis`` is an
        epoch-millis cutoff replacing ``now - snapshot.time-retained``. See
        :mod:`paimon_core.expire`."""
        from paimon_core.expire import ExpireConfig, ExpireSnapshots

        ctx = self.latest_context()
        config = ExpireConfig.from_options(ctx.options).with_overrides(
            retain_min=retain_min, retain_max=retain_max, max_deletes=max_deletes
        )
        return ExpireSnapshots(
            self.file_io, self.path, ctx, config=config, older_than_millis=older_than_millis
        ).expire()

    # ---- reading
    def new_read_builder(self) -> ReadBuilder:
        return ReadBuilder(self)

    def to_arrow(
        self,
        *,
        columns: Sequence[str] | None = None,
        filter: FilterArg = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp_millis: int | None = None,
    ) -> pa.Table:
        """Read the table (or a past version of it) into one Arrow table."""
        rb = self.new_read_builder().with_projection(columns).with_filter(filter)
        rb = rb.with_time_travel(snapshot_id=snapshot_id, tag=tag,
                                 timestamp_millis=timestamp_millis)
        return rb.new_read().to_arrow(rb.new_scan().plan().splits)

    # ---- change reads: unmerged (what each snapshot wrote) and merged (net change per key)
    def read_unmerged_changes(
        self,
        from_snapshot: int,
        to_snapshot: int,
        *,
        columns: Sequence[str] | None = None,
        filter: FilterArg = None,
    ) -> pa.Table:
        """Every change of snapshots ``(from_snapshot, to_snapshot]``, snapshot by snapshot and
        NOT merged per key, as a streaming reader (:meth:`new_stream_scan`) sees them, with a
        ``_kind`` column first: the delta files of APPEND snapshots (no changelog producer),
        or the changelog files (``changelog-producer`` set). A key written twice appears
        twice. For the net change per key use :meth:`read_merged_changes`."""
        producer = self.options.changelog_producer
        predicate = to_predicate(filter, self.schema)
        planner = self.new_planner(self.schema, predicate)
        read = TableRead(self.file_io, self.context, self.schema_manager, columns, predicate)
        parts = []
        for sid in range(from_snapshot + 1, to_snapshot + 1):
            snap = self.snapshot_manager.snapshot(sid)
            if producer in (ChangelogProducer.NONE, ChangelogProducer.INPUT) and (
                    snap.commit_kind is not CommitKind.APPEND):
                continue  # compaction output is no change; a changelog producer writes one
            plan = planner.plan_delta(snap, changelog=producer is not ChangelogProducer.NONE)
            parts.append(read.read_changes(plan.splits))
        if not parts:
            return read.read_changes([])
        return pa.concat_tables(parts)

    def read_merged_changes(
        self,
        start: int,
        end: int,
        *,
        mode: str = "auto",
        columns: Sequence[str] | None = None,
        filter: FilterArg = None,
    ) -> pa.Table:
        """The net change per key of snapshots ``(start, end]`` (MERGED per key), with a
        ``_kind`` column first: Paimon's ``incremental-between = 'start,end'`` (0.9) as read
        from ``t$audit_log``; retractions are kept, e.g. insert-then-delete yields one ``-D``.
        For every change of every snapshot unmerged use :meth:`read_unmerged_changes`. ``mode``:
        ``auto`` / ``delta`` / ``changelog`` (``incremental-between-scan-mode``; these pass
        over OVERWRITE snapshots, as Java does) or ``diff`` (the states at ``start`` and
        ``end`` compared per key: a truncate in the range shows as ``-D`` rows, see
        :mod:`paimon_core.read.incremental_diff`). Keep only ``+I``/``+U`` rows for what a
        plain Java table read returns. See :mod:`paimon_core.scan.incremental`."""
        predicate = to_predicate(filter, self.schema)
        if mode.strip().lower() == DIFF_MODE:
            read = TableRead(self.file_io, self.context, self.schema_manager, None, predicate)
            return read_incremental_diff(
                self.snapshot_manager, self.new_planner(self.schema, predicate), read, start,
                end, columns,
            )
        incremental, splits = self._incremental_read(start, end, mode, columns, predicate)
        return incremental.to_arrow(splits)

    def iter_merged_changes(
        self,
        start: int,
        end: int,
        *,
        mode: str = "auto",
        columns: Sequence[str] | None = None,
        filter: FilterArg = None,
        batch_size: int = 65536,
    ) -> Iterator[pa.RecordBatch]:
        """:meth:`read_merged_changes` as a stream of batches of at most ``batch_size`` rows,
        in memory bounded by ``paimon-core.merge.buffer-rows`` per section (delta and
        changelog modes), whatever the range's size. The ``diff`` mode compares two whole
        states: it is computed whole, then sliced."""
        predicate = to_predicate(filter, self.schema)
        if mode.strip().lower() == DIFF_MODE:
            t = self.read_merged_changes(start, end, mode=mode, columns=columns, filter=filter)
            yield from t.to_batches(max_chunksize=batch_size)
            return
        read, splits = self._incremental_read(start, end, mode, columns, predicate)
        yield from read.to_batches(splits, batch_size=batch_size)

    def _incremental_read(
        self, start: int, end: int, mode: str, columns: Sequence[str] | None,
        predicate: Predicate | None,
    ) -> tuple[IncrementalRead, list[DataSplit]]:
        scan_mode = resolve_scan_mode(mode, self.options)
        plan = plan_incremental(
            self.snapshot_manager, self.new_planner(self.schema, predicate), start, end, scan_mode
        )
        read = TableRead(self.file_io, self.context, self.schema_manager, columns, predicate)
        return IncrementalRead(read, scan_mode), list(plan.splits)

    def read_merged_changes_between_timestamps(
        self,
        start_millis: int,
        end_millis: int,
        *,
        mode: str = "auto",
        columns: Sequence[str] | None = None,
        filter: FilterArg = None,
    ) -> pa.Table:
        """:meth:`read_merged_changes` over the snapshots committed in ``(start_millis,
        end_millis]`` (Paimon's ``incremental-between-timestamp``)."""
        rng = resolve_timestamp_range(self.snapshot_manager, start_millis, end_millis)
        if rng is None:
            read = TableRead(self.file_io, self.context, self.schema_manager, columns, None)
            return IncrementalRead(read, "delta").to_arrow([])
        return self.read_merged_changes(
            rng[0], rng[1], mode=mode, columns=columns, filter=filter
        )

    def new_stream_scan(
        self,
        consumer_id: str | None = None,
        *,
        columns: Sequence[str] | None = None,
        filter: FilterArg = None,
        options: Mapping[str, str] | None = None,
    ) -> StreamTableScan:
        """A streaming scan (``DataTableStreamScan``): a starting plan by ``scan.mode``, then
        the unmerged changes snapshot by snapshot. ``consumer_id``: ``consumer-id`` (progress
        kept under ``consumer/``); ``options``: dynamic table options, Paimon's keys only
        (``{"scan.mode": "from-snapshot", "scan.snapshot-id": "5"}``). See
        :class:`paimon_core.scan.streaming.StreamTableScan`."""
        predicate = to_predicate(filter, self.schema)
        source = StreamSource(
            file_io=self.file_io, context=self.context, name=str(self.identifier),
            snapshots=self.snapshot_manager, planner=self.new_planner(self.schema, predicate),
            new_read=functools.partial(
                TableRead, self.file_io, self.context, self.schema_manager, columns, predicate),
        )
        return StreamTableScan(source, consumer_id=consumer_id, options=options)

    def new_planner(self, schema: TableSchema, predicate: Predicate | None) -> ScanPlanner:
        """The scan planner of ``schema`` (a past one for time travel) under ``predicate``."""
        return ScanPlanner(self.context_of(schema), schemas=self.schema_manager,
                           manifests=self.manifest_io, predicate=predicate)
