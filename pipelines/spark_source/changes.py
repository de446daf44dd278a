"""Reads of a table's changes through the ``paimon`` data source: incremental between two
snapshots or timestamps (:class:`IncrementalReader`) and streaming, one offset per snapshot
(:class:`PaimonStreamReader`). The data source itself: :mod:`pipelines.spark_source.source`."""


from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from paimon_core import (
    CoreOptions,
    SchemaError,
    StreamTableScan,
    read_stream_plan,
)
from paimon_core.errors import SnapshotExpiredError
from paimon_core.integration import (
    StartupMode,
    StreamPlan,
    arrow_short_retract_mask,
    check_range,
    resolve_timestamp_range,
)
from pipelines.config import TableHandle, limit_task_threads
from pipelines.spark_source.options import (
    IncrementalRange,
    ReadOptions,
    lookup,
)
from pipelines.spark_source.reading import (
    KIND,
    _filter_texts,
    _requested_columns,
    pack_splits,
    read_handle,
)
from pipelines.spark_types import arrow_for_spark, conform_to_spark

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


__all__ = ["IncrementalReader", "PaimonStreamReader", "resolve_incremental"]


# ---------------------------------------------------------------------------- incremental


@dataclass
class IncrementalPartition(InputPartition):
    """The merged changes of snapshots ``(start, end]`` (``mode``: the scan mode)."""

    start: int
    end: int
    mode: str

    def __init__(self, start: int, end: int, mode: str) -> None:
        super().__init__(end)
        self.start, self.end, self.mode = start, end, mode


def resolve_incremental(table: Any, rng: IncrementalRange) -> tuple[int, int, str] | None:
    """``(start, end, mode)`` snapshot ids of an incremental read, checked against the table
    (typed errors on the driver: an expired start, a missing end or tag), or None when the
    range holds no snapshot. Tag names read the difference of the tags' states (Paimon 0.9's
    ``IncrementalTagStartingScanner``): scan mode ``diff``."""
    snapshots = table.snapshot_manager
    mode = rng.mode
    if rng.timestamps:
        ids = resolve_timestamp_range(snapshots, int(rng.start), int(rng.end))
        if ids is None:
            return None
        start, end = ids
    elif rng.tags:
        start, end = snapshots.tag(rng.start).id, snapshots.tag(rng.end).id
        mode = "diff"
    else:
        start, end = int(rng.start), int(rng.end)
    if not check_range(snapshots, start, end):
        return None
    return start, end, mode


class IncrementalReader(DataSourceReader):
    """``incremental-between`` / ``incremental-between-timestamp``: the net change per key of
    a snapshot range, through ``FileStoreTable.read_merged_changes`` (one input partition).
    Without ``read.changelog`` only ``+I``/``+U`` rows are returned (a batch SQL read of
    paimon-spark drops ``-U``/``-D``); with it, the ``_kind`` column keeps them."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.options = options
        self.handle = read_handle(options)
        ro = ReadOptions.parse(options)
        assert ro.incremental is not None
        self.range = resolve_incremental(self.handle.open(), ro.incremental)
        self.columns = _requested_columns(schema)
        for c in self.columns:
            self.handle.schema.field(c)
        self.with_kind = KIND in schema.names
        self.spark_schema = schema
        self.filters = _filter_texts(options) or None

    def partitions(self) -> Sequence[InputPartition]:
        if self.range is None:
            return [IncrementalPartition(0, 0, "auto")]  # nothing in the range
        return [IncrementalPartition(*self.range)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, IncrementalPartition)
        if partition.start >= partition.end:
            return
        limit_task_threads()
        table = self.handle.open()
        data = table.read_merged_changes(partition.start, partition.end, mode=partition.mode,
                                         columns=self.columns, filter=self.filters)
        if not self.with_kind:
            data = data.filter(pc.invert(arrow_short_retract_mask(data.column(KIND))))
            data = data.drop_columns([KIND])
        if data.num_rows == 0:
            return
        yield from conform_to_spark(data, arrow_for_spark(self.spark_schema)).to_batches(
            max_chunksize=65536)


# ---------------------------------------------------------------------------- streaming read


@dataclass
class PlanPartition(InputPartition):
    """Part of one :class:`StreamPlan` (a snapshot's full state or its changes)."""

    plan: StreamPlan

    def __init__(self, plan: StreamPlan) -> None:
        super().__init__(plan.snapshot_id)
        self.plan = plan


def _offset(next_snapshot: int, full: bool = False) -> dict[str, Any]:
    return {"next": int(next_snapshot), "full": bool(full)}


class PaimonStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over snapshots: the offset ``{"next": n, "full": f}`` says that every
    snapshot before ``n`` has been delivered; with ``full`` the batch starting there begins
    with the full state of snapshot ``n`` (startup ``latest-full`` / ``from-snapshot-full``).
    A batch ``(start, end]`` is planned from the snapshots alone, so a batch replayed after a
    restart yields the same rows; the skip rules are :class:`StreamTableScan`'s.

    Read limits (``read.stream.maxFilesPerTrigger`` / ``maxBytesPerTrigger`` /
    ``maxRowsPerTrigger``) end a micro-batch before the snapshot that would exceed one of them
    (every batch holds one snapshot's plan at least, so a reader far behind advances in bounded
    steps); the end offset Spark records is the one replayed after a restart."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        # nothing here may raise: pyspark 4.3's stream runner turns an error of the reader's
        # constructor into an UnboundLocalError; the options are checked by the first call
        # (initialOffset / latestOffset, on the driver)
        self.options = options
        self.columns = _requested_columns(schema)
        self.with_kind = KIND in schema.names
        self.spark_schema = schema
        self.filters = _filter_texts(options) or None
        self.available_now: int | None = None

    @cached_property
    def read_options(self) -> ReadOptions:
        ro = ReadOptions.parse(self.options)
        if ro.incremental is not None:
            raise SchemaError("incremental-between is a batch read: use spark.read, not "
                              "spark.readStream (a stream starts with scan.mode)")
        return ro

    @cached_property
    def handle(self) -> TableHandle:
        # consumer-id is the scan's argument where it applies (:meth:`_scan`), not the table's
        handle = read_handle(self.options, without=(CoreOptions.CONSUMER_ID,))
        for c in self.columns:
            handle.schema.field(c)
        return handle

    @property
    def split_target(self) -> int:
        return self.read_options.split_target

    @property
    def consumer_id(self) -> str | None:
        return self.read_options.consumer_id

    def _scan_options(self, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
        keys = (CoreOptions.SCAN_MODE, CoreOptions.SCAN_SNAPSHOT_ID, CoreOptions.SCAN_TAG_NAME,
                CoreOptions.SCAN_TIMESTAMP_MILLIS, CoreOptions.SCAN_TIMESTAMP,
                CoreOptions.CONSUMER_IGNORE_PROGRESS, CoreOptions.CHANGELOG_PRODUCER,
                CoreOptions.STREAMING_READ_OVERWRITE)
        out = {k: v for k in keys if (v := lookup(self.options, k)) is not None}
        out.update(overrides or {})
        return out

    def _scan(self, *, consumer: bool = False, overrides: Mapping[str, str] | None = None
              ) -> StreamTableScan:
        table = self.handle.open()
        return table.new_stream_scan(self.consumer_id if consumer else None,
                                     columns=self.columns, filter=self.filters,
                                     options=self._scan_options(overrides))

    def initialOffset(self) -> dict[str, Any]:
        scan = self._scan(consumer=True)  # startup options checked here, on the driver
        plan = scan.plan()
        if plan is None:
            nxt = scan.checkpoint()
            return _offset(nxt if nxt is not None else 1)
        return _offset(plan.snapshot_id, full=plan.source == "full")

    def getDefaultReadLimit(self) -> ReadLimit:
        ro = self.read_options
        if ro.max_files is not None:
            return ReadMaxFiles(ro.max_files)
        if ro.max_bytes is not None:
            return ReadMaxBytes(ro.max_bytes)
        if ro.max_rows is not None:
            return ReadMaxRows(ro.max_rows)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """``Trigger.AvailableNow``: read up to the latest snapshot of now, in batches bounded
        by the read limits."""
        self.available_now = self.handle.open().snapshot_manager.latest_snapshot_id() or 0

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit | None = None
                     ) -> dict[str, Any]:
        latest = self.handle.open().snapshot_manager.latest_snapshot_id()
        if self.available_now is not None and latest is not None:
            latest = min(latest, self.available_now)
        if latest is None:
            return start
        if start.get("full") or latest + 1 > int(start["next"]):
            end = _offset(max(latest + 1, int(start["next"]) + (1 if start.get("full") else 0)))
        else:
            return start
        if limit is None or isinstance(limit, ReadAllAvailable) or not self.read_options.limited:
            return end
        return self._limited_end(start, end)

    def _limited_end(self, start: dict[str, Any], end: dict[str, Any]) -> dict[str, Any]:
        """The end of the first plans of ``(start, end]`` within every read limit (one plan at
        least)."""
        ro = self.read_options
        files = size = rows = 0
        last: StreamPlan | None = None
        for plan in self._plans(start, end):
            parts = (*plan.before, *plan.splits)
            files += sum(len(s.files) for s in parts)
            size += sum(f.file_size for s in parts for f in s.files)
            rows += plan.row_count
            over = ((ro.max_files is not None and files > ro.max_files)
                    or (ro.max_bytes is not None and size > ro.max_bytes)
                    or (ro.max_rows is not None and rows > ro.max_rows))
            if over and last is not None:
                break
            last = plan
            if over:
                break
        if last is None:
            return end
        return _offset(last.snapshot_id + 1)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        out: list[InputPartition] = []
        for plan in self._plans(start, end):
            for chunk in pack_splits(plan.before, self.split_target):  # overwrite: deleted
                out.append(PlanPartition(replace(plan, splits=(), before=chunk)))
            for chunk in pack_splits(plan.splits, self.split_target):
                out.append(PlanPartition(replace(plan, splits=chunk, before=())))
        return out

    def _plans(self, start: dict[str, Any], end: dict[str, Any]) -> Iterator[StreamPlan]:
        """The plans of the batch ``(start, end]``, in snapshot order."""
        first, stop = int(start["next"]), int(end["next"])
        if start.get("full"):
            table = self.handle.open()
            earliest = table.snapshot_manager.earliest_snapshot_id()
            if earliest is not None and first < earliest:
                table.snapshot_manager.snapshot(first)  # raises SnapshotExpiredError
            scan = self._scan(overrides={CoreOptions.SCAN_MODE: StartupMode.FROM_SNAPSHOT_FULL,
                                         CoreOptions.SCAN_SNAPSHOT_ID: str(first)})
            full = scan.plan()
            if full is None or full.snapshot_id != first:
                raise SnapshotExpiredError(f"snapshot {first} to start from is gone")
            yield full
        else:
            scan = self._scan()
            scan.restore(first)
        while (scan.checkpoint() or first) < stop:
            plan = scan.plan()
            if plan is None or plan.snapshot_id >= stop:
                break
            yield plan

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, PlanPartition)
        table = self.handle.open()
        data = read_stream_plan(table, partition.plan, columns=self.columns,
                                filter=self.filters)
        if not self.with_kind:
            if partition.plan.source != "full":
                data = data.filter(pc.invert(arrow_short_retract_mask(data.column(KIND))))
            data = data.drop_columns([KIND])
        if data.num_rows == 0:
            return
        target = arrow_for_spark(self.spark_schema)
        yield from conform_to_spark(data, target).to_batches(max_chunksize=65536)

    def commit(self, end: dict[str, Any]) -> None:
        if self.consumer_id is not None:
            self._scan(consumer=True).notify_checkpoint_complete(int(end["next"]))
