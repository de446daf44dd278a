"""Streaming reads: a starting plan, then the changes of every new snapshot, with consumers.

Mirrors Paimon 0.9's ``org.apache.paimon.table.source.DataTableStreamScan``:

* **startup** (``AbstractDataTableScan.createStartingScanner(isStreaming=true)``): a stored
  consumer (``consumer-id``, unless ``consumer.ignore-progress``) resumes at its
  ``nextSnapshot`` (as in Java, at the earliest snapshot if that one has been expired in the
  meantime); otherwise ``scan.mode``:

  ===================  ========================================================================
  ``latest-full``      full state of the latest snapshot, then its successors (the default)
  ``latest``           only snapshots committed after the scan started
  ``from-snapshot``    follow from ``scan.snapshot-id`` (inclusive; at least the earliest)
  ``from-snapshot-full``  full state at ``scan.snapshot-id``, then its successors
  ``from-timestamp``   follow from the first snapshot with ``timeMillis >= scan.timestamp-millis``
  ``compacted-full``   full state of the latest COMPACT snapshot (full-compaction producer:
                       the latest *full* compaction, ``full-compaction.delta-commits``)
  ===================  ========================================================================

  ``default`` resolves to ``from-timestamp`` (``scan.timestamp-millis`` / ``scan.timestamp``),
  ``from-snapshot`` (``scan.snapshot-id``) or ``latest-full`` (spec §11). Full plans of
  ``lookup`` (and deletion-vector / first-row) tables read levels > 0 only, of
  ``full-compaction`` tables the last level only, as Java does;
* **follow-up**, snapshot by snapshot (``DeltaFollowUpScanner`` /
  ``InputChangelogFollowUpScanner`` / ``CompactionChangelogFollowUpScanner``):
  ``changelog-producer=none`` reads the *delta* files of APPEND snapshots, ``input`` the
  *changelog* files of APPEND snapshots, ``full-compaction`` / ``lookup`` the changelog files of
  COMPACT snapshots; every other snapshot (OVERWRITE, and COMPACT resp. APPEND) is skipped;
* ``streaming-read-overwrite=true`` (primary-key tables, changelog producer ``none`` or
  ``input``): an OVERWRITE snapshot is not skipped but read as its changes
  (``DataTableStreamScan.nextPlan`` -> ``FollowUpScanner.getOverwriteChangesPlan`` ->
  ``SnapshotReaderImpl.readChanges``; read by ``IncrementalChangelogReadProvider``): every
  record of every file the overwrite DELETEd, unmerged, as ``-D`` (``ReverseReader``), then the
  records of the files it ADDed as stored (source ``overwrite``). Like Java this is per stored
  record: a key with two versions in the deleted files yields two ``-D``. Java 0.9 fails the
  read (``IllegalStateException``) when a deleted file holds ``-U`` / ``-D`` records; we skip
  those records (they retracted rows the reader was already told about). Java refuses the
  option with the ``full-compaction`` / ``lookup`` producers ("it will read duplicated
  changes") and on tables without primary key; so do we, and with deletion vectors (the
  deleted files' deletion vectors are not applied here);
* a snapshot that has been expired before the reader got to it raises
  :class:`~paimon_core.errors.SnapshotExpiredError` (``NextSnapshotFetcher``), unless the
  decoupled changelog (``changelog/changelog-<id>``) still has it;
* :meth:`StreamTableScan.checkpoint` / :meth:`~StreamTableScan.restore` /
  :meth:`~StreamTableScan.notify_checkpoint_complete` as in Java: the last one writes
  ``consumer/consumer-<id>`` = ``{"nextSnapshot": n}``, which also protects unread snapshots
  from expiry.

Plans (:class:`StreamPlan`) are frozen, picklable and self-contained: ship one to a worker
and read it there with :func:`paimon_core.read.stream.read_stream_plan`.

Not supported: ``from-file-creation-time``, ``scan.tag-name`` / ``scan.watermark`` (Java 0.9
refuses them in streaming mode too), bounded watermarks and
``streaming-read.snapshot.delay``.

Example:
    >>> scan = table.new_stream_scan(                                # doctest: +SKIP
    ...     "etl", options={"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    >>> while (plan := scan.plan()) is not None:                          # doctest: +SKIP
    ...     handle(scan.read(plan))                                       # _kind first
    ...     scan.notify_checkpoint_complete(scan.checkpoint())            # persist progress
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.consumer import Consumer, ConsumerManager
from paimon_core.errors import (
    SchemaError,
    SnapshotExpiredError,
    SnapshotNotExistError,
    UnsupportedError,
)
from paimon_core.io.file_io import FileIO
from paimon_core.layout import CHANGELOG_PREFIX, TableContext
from paimon_core.options import CoreOptions
from paimon_core.scan.planner import ScanPlanner
from paimon_core.scan.split import DataSplit
from paimon_core.snapshot_manager import SnapshotManager
from paimon_core.spec.option_enums import ChangelogProducer, MergeEngine, StartupMode
from paimon_core.spec.row_kind import RowKind, arrow_short_retract_mask
from paimon_core.spec.schema import TableSchema
from paimon_core.spec.snapshot import CommitKind, Snapshot, decode_snapshot
from paimon_core.spec.system_fields import KIND_COLUMN

__all__ = [
    "KIND_COLUMN",
    "PlanReader",
    "StreamPlan",
    "StreamSource",
    "StreamTableScan",
    "read_plan",
]

FIRST_SNAPSHOT_ID = 1
Source = Literal["full", "delta", "changelog", "overwrite"]

_MODES = (
    "default", "full", "latest-full", "latest", "from-snapshot", "from-snapshot-full",
    "from-timestamp", "compacted-full", "from-file-creation-time", "incremental",
)


@dataclass(frozen=True, slots=True)
class StreamPlan:
    """What one :meth:`StreamTableScan.plan` call produced.

    Attributes:
        snapshot_id: the snapshot read.
        next_snapshot: the scan's checkpoint after this plan (next snapshot to read).
        source: ``full`` (a snapshot's merged state, read as ``+I`` rows), ``delta`` (the
            snapshot's new data files, unmerged), ``changelog`` (its changelog files) or
            ``overwrite`` (an OVERWRITE snapshot under ``streaming-read-overwrite``: the
            records of ``before`` as ``-D``, then those of ``splits`` as stored).
        commit_kind: the snapshot's commit kind (``APPEND``, ``COMPACT``, ...).
        splits: the files to read, one split per (partition, bucket).
        before: ``overwrite`` plans only: the files the snapshot deleted.
    """

    snapshot_id: int
    next_snapshot: int
    source: Source
    commit_kind: str
    splits: tuple[DataSplit, ...]
    before: tuple[DataSplit, ...] = ()

    @property
    def row_count(self) -> int:
        return sum(s.row_count for s in (*self.before, *self.splits))


class PlanReader(Protocol):
    """What reading a plan needs (``paimon_core.read.table_read.TableRead`` is one)."""

    @property
    def output_schema(self) -> pa.Schema: ...

    def to_arrow(self, splits: Sequence[DataSplit]) -> pa.Table: ...

    def read_changes(self, splits: Sequence[DataSplit], kind_column: str = ...) -> pa.Table: ...


@dataclass(frozen=True)
class StreamSource:
    """The pieces of a table a streaming scan needs (``FileStoreTable.new_stream_scan``
    builds it).

    Attributes:
        file_io: storage.
        context: the table's resolved schema (:attr:`FileStoreTable.context`): its options
            and paths, parsed once.
        name: the table's name, for messages.
        snapshots: the table's snapshots.
        planner: plans with the scan's predicate.
        new_read: makes the reader of the scan's columns and predicate (called once, lazily).
    """

    file_io: FileIO
    context: TableContext
    name: str
    snapshots: SnapshotManager
    planner: ScanPlanner
    new_read: Callable[[], PlanReader]

    @property
    def schema(self) -> TableSchema:
        return self.context.schema

    @property
    def table_path(self) -> str:
        return self.context.table_path


def read_plan(read: PlanReader, plan: StreamPlan) -> pa.Table:
    """Rows of ``plan`` with a ``_kind`` column first: ``+I`` for every row of a full plan,
    the stored row kinds of delta / changelog files; for an overwrite plan the ``+I`` / ``+U``
    records of the deleted files as ``-D`` (their ``-U`` / ``-D`` records dropped), then the
    added files' records as stored."""
    schema = pa.schema([pa.field(KIND_COLUMN, pa.string()), *read.output_schema])
    if plan.source == "overwrite":
        gone = read.read_changes(plan.before, KIND_COLUMN).cast(schema)
        gone = gone.filter(pc.invert(arrow_short_retract_mask(gone.column(KIND_COLUMN))))
        deletes = pa.array([RowKind.DELETE.short_string] * gone.num_rows, type=pa.string())
        gone = gone.set_column(0, schema.field(0), deletes)
        added = read.read_changes(plan.splits, KIND_COLUMN).cast(schema)
        return pa.concat_tables([gone, added])
    if plan.source != "full":
        return read.read_changes(plan.splits, KIND_COLUMN).cast(schema)
    data = read.to_arrow(plan.splits)
    kinds = pa.array([RowKind.INSERT.short_string] * data.num_rows, type=pa.string())
    return data.add_column(0, pa.field(KIND_COLUMN, pa.string()), kinds).cast(schema)


def _above_level_zero(level: int) -> bool:
    return level > 0


def _option_text(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class StreamTableScan:
    """Plans a streaming read of one table (``DataTableStreamScan``); see the module docs.

    Args:
        source: the table's pieces, with the planner and reader of the scan's projection and
            filter (which also prunes partitions and buckets when planning).
        consumer_id: persist progress under ``consumer/consumer-<id>`` (option ``consumer-id``
            works too); a stored consumer overrides the startup position.
        options: dynamic options overriding the table's (``scan.mode``, ``scan.snapshot-id``,
            ``scan.timestamp-millis``, ``consumer.ignore-progress``, ``changelog-producer``...).
        **kwargs: shortcuts for options: ``scan_mode``, ``snapshot_id``, ``timestamp_millis``,
            ``scan_timestamp``, ``consumer_ignore_progress``.

    Raises:
        SchemaError: unknown keyword or invalid option value.
        UnsupportedError: a startup mode that streaming reads do not support.
    """

    def __init__(
        self,
        source: StreamSource,
        *,
        consumer_id: str | None = None,
        options: Mapping[str, str] | None = None,
    ) -> None:
        given = {k: _option_text(v) for k, v in (options or {}).items()}
        if consumer_id is not None:
            given[CoreOptions.CONSUMER_ID] = consumer_id
        self.source = source
        self.layout = source.context.layout
        table = source.context.options  # parsed again only with options given over it
        self.options = CoreOptions({**table.raw, **given}) if given else table
        self.consumer_id = self.options.consumer_id
        self.snapshots = source.snapshots
        self.consumers = ConsumerManager(source.file_io, source.table_path)
        self.producer = self.options.changelog_producer
        self.read_overwrite = self.options.streaming_read_overwrite
        if self.read_overwrite:
            self._check_read_overwrite()
        self.mode = self._startup_mode()
        self._read: PlanReader | None = None
        self._next: int | None = None
        # ContinuousLatestStartingScanner remembers the latest snapshot at creation time
        self._latest_at_start = self.snapshots.latest_snapshot_id()

    # ------------------------------------------------------------------ public API
    def plan(self) -> StreamPlan | None:
        """The next plan, or None when the next snapshot does not exist yet (call again
        later). The first call runs the startup; a startup without a full phase goes straight
        on to the first new snapshot. Snapshots the follow-up skips (e.g. COMPACT without a
        compaction changelog producer) are passed over in the same call.

        Raises:
            SnapshotExpiredError: the next snapshot to read has been expired.
        """
        if self._next is None:
            started = self._start()
            if started is None:
                return None
            if isinstance(started, StreamPlan):
                return started
            self._next = started
        return self._follow()

    def read(self, plan: StreamPlan) -> pa.Table:
        """Rows of ``plan`` with a ``_kind`` column (``+I``/``-U``/``+U``/``-D``) first."""
        return read_plan(self._table_read(), plan)

    def empty_table(self) -> pa.Table:
        """An empty table with the schema of :meth:`read`'s results."""
        schema = self._table_read().output_schema
        return pa.schema([pa.field(KIND_COLUMN, pa.string()), *schema]).empty_table()

    def _table_read(self) -> PlanReader:
        if self._read is None:
            self._read = self.source.new_read()
        return self._read

    def next_batch(self) -> pa.Table | None:
        """:meth:`plan` + :meth:`read`; None when there is no new snapshot yet."""
        plan = self.plan()
        return None if plan is None else self.read(plan)

    def checkpoint(self) -> int | None:
        """The next snapshot id this scan will read (None before the first plan, unless
        restored): store it with your output, pass it to :meth:`restore` after a restart."""
        return self._next

    def restore(self, next_snapshot: int | None) -> None:
        """Continue from ``next_snapshot`` (a :meth:`checkpoint` value) without a startup
        phase; None = start afresh."""
        self._next = next_snapshot

    def notify_checkpoint_complete(self, next_snapshot: int | None) -> None:
        """The output up to ``next_snapshot`` (exclusive) is durable: record it in the
        consumer file when the scan has a consumer id (otherwise nothing happens)."""
        if next_snapshot is None or self.consumer_id is None:
            return
        self.consumers.reset_consumer(self.consumer_id, Consumer(next_snapshot))

    def _check_read_overwrite(self) -> None:
        """Where Java 0.9 refuses ``streaming-read-overwrite=true`` (``SchemaValidation``),
        and deletion vectors (not applied to the deleted files here)."""
        key = CoreOptions.STREAMING_READ_OVERWRITE
        if not self.source.schema.primary_keys:
            raise UnsupportedError(
                f"{key}=true on {self.source.name}: reading the changes of an overwrite needs "
                "a primary key (as in Paimon 0.9)"
            )
        if self.producer in (ChangelogProducer.FULL_COMPACTION, ChangelogProducer.LOOKUP):
            raise UnsupportedError(
                f"{key}=true cannot be used with changelog-producer={self.producer.value} on "
                f"{self.source.name}: it would read duplicated changes (as in Paimon 0.9)"
            )
        if self.options.deletion_vectors_enabled:
            raise UnsupportedError(
                f"{key}=true is not supported with deletion-vectors.enabled on "
                f"{self.source.name}"
            )

    # ------------------------------------------------------------------ startup
    def _startup_mode(self) -> StartupMode:
        o = self.options
        mode = o.scan_mode
        if mode is StartupMode.DEFAULT:
            if o.get(o.SCAN_TIMESTAMP_MILLIS) is not None or o.get(o.SCAN_TIMESTAMP) is not None:
                mode = StartupMode.FROM_TIMESTAMP
            elif any(
                o.get(k) is not None
                for k in (o.SCAN_SNAPSHOT_ID, o.SCAN_TAG_NAME, o.SCAN_WATERMARK, o.SCAN_VERSION)
            ):
                mode = StartupMode.FROM_SNAPSHOT
            elif o.get(o.SCAN_FILE_CREATION_TIME_MILLIS) is not None:
                mode = StartupMode.FROM_FILE_CREATION_TIME
            elif (
                o.get(o.INCREMENTAL_BETWEEN) is not None
                or o.get(o.INCREMENTAL_BETWEEN_TIMESTAMP) is not None
            ):
                mode = StartupMode.INCREMENTAL
            else:
                mode = StartupMode.LATEST_FULL
        elif mode is StartupMode.FULL:
            mode = StartupMode.LATEST_FULL
        if mode is StartupMode.INCREMENTAL:
            raise UnsupportedError(
                "incremental-between is a batch read (FileStoreTable.read_merged_changes); "
                "it cannot start a streaming read"
            )
        if mode is StartupMode.FROM_FILE_CREATION_TIME:
            raise UnsupportedError("scan.mode=from-file-creation-time is not supported")
        if mode is StartupMode.FROM_SNAPSHOT and o.get(o.SCAN_SNAPSHOT_ID) is None:
            raise UnsupportedError(
                "streaming reads start from a snapshot id: scan.tag-name / scan.watermark / "
                "scan.version cannot start a streaming read (as in Paimon 0.9)"
            )
        if mode in (StartupMode.FROM_SNAPSHOT, StartupMode.FROM_SNAPSHOT_FULL):
            self._snapshot_option()
        if mode is StartupMode.FROM_TIMESTAMP:
            self._timestamp_option()
        return mode

    def _snapshot_option(self) -> int:
        sid = self.options.scan_snapshot_id
        if sid is None:
            raise SchemaError("scan.mode=from-snapshot(-full) needs scan.snapshot-id")
        return sid

    def _timestamp_option(self) -> int:
        millis = self.options.scan_timestamp_millis
        if millis is None:
            raise SchemaError("scan.mode=from-timestamp needs scan.timestamp-millis")
        return millis

    def _start(self) -> StreamPlan | int | None:
        """A full plan, the first snapshot id to follow, or None (no snapshot yet)."""
        if self.consumer_id is not None and not self.options.consumer_ignore_progress:
            consumer = self.consumers.consumer(self.consumer_id)
            if consumer is not None:
                earliest = self._earliest_id()
                return None if earliest is None else max(consumer.next_snapshot, earliest)
        mode = self.mode
        if mode is StartupMode.LATEST:
            latest = self.snapshots.latest_snapshot_id()
            if latest is None:
                return None
            return FIRST_SNAPSHOT_ID if self._latest_at_start is None else latest + 1
        if mode is StartupMode.FROM_SNAPSHOT:
            earliest = self._earliest_id()
            return None if earliest is None else max(self._snapshot_option(), earliest)
        if mode is StartupMode.FROM_TIMESTAMP:
            return self._from_timestamp(self._timestamp_option())
        if mode is StartupMode.LATEST_FULL:
            snap = self.snapshots.latest_snapshot()
        elif mode is StartupMode.FROM_SNAPSHOT_FULL:
            earliest = self.snapshots.earliest_snapshot_id()
            if earliest is None:
                return None
            snap = self.snapshots.snapshot(max(self._snapshot_option(), earliest))
        else:  # compacted-full
            snap = self._compacted()
        if snap is None:
            return None
        return self._full_plan(snap)

    def _from_timestamp(self, millis: int) -> int | None:
        """``earlierThanTimeMills(millis) + 1``: the first snapshot at or after ``millis``."""
        earliest = self._earliest_id()
        latest = self.snapshots.latest_snapshot_id()
        if earliest is None or latest is None:
            return None
        if self._snapshot_or_changelog(earliest).time_millis >= millis:
            return earliest
        lo, hi = earliest, latest
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._snapshot_or_changelog(mid).time_millis < millis:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    def _compacted(self) -> Snapshot | None:
        o = self.options
        delta = o.full_compaction_delta_commits
        full = self.producer is ChangelogProducer.FULL_COMPACTION or delta is not None
        delta_commits = 1 if delta is None else delta
        latest = self.snapshots.latest_snapshot_id()
        earliest = self.snapshots.earliest_snapshot_id()
        if latest is None or earliest is None:
            return None
        for sid in range(latest, earliest - 1, -1):
            if not self.snapshots.snapshot_exists(sid):
                continue
            snap = self.snapshots.snapshot(sid)
            if snap.commit_kind is not CommitKind.COMPACT:
                continue
            ident = snap.commit_identifier
            if not full or ident % delta_commits == 0 or ident == 2**63 - 1:
                return snap
        return self.snapshots.snapshot(latest)

    def _full_plan(self, snap: Snapshot) -> StreamPlan:
        o = self.options
        is_pk = bool(self.source.schema.primary_keys)
        dv = o.deletion_vectors_enabled
        lookup = self.producer is ChangelogProducer.LOOKUP
        need_lookup = is_pk and (
            lookup or dv or o.merge_engine is MergeEngine.FIRST_ROW or o.force_lookup
        )
        level_filter: Callable[[int], bool] | None = None
        if need_lookup:
            level_filter = _above_level_zero
        elif is_pk and self.producer is ChangelogProducer.FULL_COMPACTION:
            top = o.num_levels - 1
            level_filter = top.__eq__
        plan = self.source.planner.plan(snap, level_filter=level_filter)
        # deletion vectors without a lookup changelog: level-0 files of this snapshot come
        # with the follow-up of the same snapshot (Java: nextSnapshotId = current)
        nxt = snap.id if (need_lookup and dv and not lookup) else snap.id + 1
        self._next = nxt
        return StreamPlan(snap.id, nxt, "full", snap.commit_kind.value, plan.splits)

    # ------------------------------------------------------------------ follow-up
    def _should_scan(self, snap: Snapshot) -> bool:
        if self.producer in (ChangelogProducer.NONE, ChangelogProducer.INPUT):
            return snap.commit_kind is CommitKind.APPEND
        return snap.commit_kind is CommitKind.COMPACT

    def _follow(self) -> StreamPlan | None:
        planner = self.source.planner
        while True:
            assert self._next is not None
            snap = self._fetch(self._next)
            if snap is None:
                return None
            self._next = snap.id + 1
            if snap.commit_kind is CommitKind.OVERWRITE and self.read_overwrite:
                before, after = planner.plan_overwrite_changes(snap)
                return StreamPlan(
                    snap.id, self._next, "overwrite", snap.commit_kind.value, after.splits,
                    before.splits,
                )
            if not self._should_scan(snap):
                continue  # Java: OVERWRITE, and COMPACT / APPEND by changelog producer
            changelog = self.producer is not ChangelogProducer.NONE
            plan = planner.plan_delta(snap, changelog=changelog)
            source: Source = "changelog" if changelog else "delta"
            return StreamPlan(snap.id, self._next, source, snap.commit_kind.value, plan.splits)

    def _fetch(self, snapshot_id: int) -> Snapshot | None:
        """``NextSnapshotFetcher.getNextSnapshot``."""
        sm = self.snapshots
        if sm.snapshot_exists(snapshot_id):
            try:
                return sm.snapshot(snapshot_id)
            except SnapshotExpiredError as e:  # expired between the check and the read
                raise self._expired(snapshot_id) from e
        earliest = sm.earliest_snapshot_id()
        if earliest is None or earliest <= snapshot_id:
            return None  # not committed yet
        changelog = self._changelog(snapshot_id)
        if changelog is not None:
            return changelog
        raise self._expired(snapshot_id)

    def _expired(self, snapshot_id: int) -> SnapshotExpiredError:
        earliest = self.snapshots.earliest_snapshot_id()
        retained = self.options.snapshot_num_retained_min
        time_raw = self.options.get(CoreOptions.SNAPSHOT_TIME_RETAINED)
        retained_time = (
            f"{self.options.snapshot_time_retained_millis} ms" if time_raw else "1 h (default)"
        )
        hint = (
            f"and notify progress of consumer {self.consumer_id!r} in time (it only protects "
            "snapshots from the one it names on; see also 'consumer.expiration-time')"
            if self.consumer_id
            else "or read with a consumer-id (consumer/consumer-<id> keeps unread snapshots "
            "from expiring)"
        )
        return SnapshotExpiredError(
            f"snapshot {snapshot_id} of {self.source.name} has expired before this "
            f"streaming read got to it (earliest is {earliest}). Keep snapshots longer: "
            f"raise 'snapshot.num-retained.min' (now {retained}) and/or "
            f"'snapshot.time-retained' (now {retained_time}), {hint}"
        )

    # ------------------------------------------------------------------ decoupled changelog
    def _changelog_path(self, snapshot_id: int) -> str:
        return self.layout.changelog_file(snapshot_id)

    def _changelog(self, snapshot_id: int) -> Snapshot | None:
        """A long-lived changelog (``changelog/changelog-<id>``) kept after its snapshot
        expired (decoupled changelog lifecycle)."""
        path = self._changelog_path(snapshot_id)
        fio = self.source.file_io
        if not fio.exists(path):
            return None
        return decode_snapshot(fio.read_bytes(path), path, expected_id=snapshot_id)

    def _earliest_changelog_id(self) -> int | None:
        ids = []
        for name in self.source.file_io.list_names(self.layout.changelog_dir):
            prefix = CHANGELOG_PREFIX
            rest = name[len(prefix):] if name.startswith(prefix) else ""
            if rest.isdigit():
                ids.append(int(rest))
        return min(ids) if ids else None

    def _earliest_id(self) -> int | None:
        """Earliest snapshot, or the earliest long-lived changelog when that is older."""
        earliest = self.snapshots.earliest_snapshot_id()
        changelog = self._earliest_changelog_id()
        if changelog is not None and (earliest is None or changelog < earliest):
            return changelog
        return earliest

    def _snapshot_or_changelog(self, snapshot_id: int) -> Snapshot:
        if self.snapshots.snapshot_exists(snapshot_id):
            return self.snapshots.snapshot(snapshot_id)
        changelog = self._changelog(snapshot_id)
        if changelog is None:
            raise SnapshotNotExistError(f"snapshot {snapshot_id} does not exist")
        return changelog
