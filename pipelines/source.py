"""The ``paimon`` Spark data source (PySpark Python Data Source API, Spark >= 4.1).

Batch::

    spark.read.format("paimon").option("warehouse", "/data/wh").load("sales.orders")
    spark.read.format("paimon").options(warehouse=wh, table="sales.orders",
                                        **{"scan.snapshot-id": "3"}).load()

Streaming (offsets are snapshot ids; Spark's checkpoint makes every snapshot's changes reach
the sink once across restarts)::

    spark.readStream.format("paimon").options(warehouse=wh, table="db.t").load()

Writing (``append`` — also with no ``.mode()`` — or ``overwrite``; one commit on the driver;
a missing table is created; streaming: one commit per micro-batch): :mod:`pipelines.sink`::

    df.write.format("paimon").option("warehouse", wh).save("db.t")
    df.writeStream.format("paimon").option("checkpointLocation", ck).start("db.t")

SQL (:mod:`pipelines.sql`, :mod:`pipelines.sql_tables`): the warehouse defaults to the session's
``spark.paimon.warehouse``; ``CREATE TABLE t USING paimon OPTIONS (table 'db.t')`` then
``SELECT`` / ``INSERT INTO`` / ``INSERT OVERWRITE``; ``SELECT * FROM paimon_snapshots('db.t')``.

Options (case-insensitive; declared and validated in :mod:`pipelines.source_options`: an
unknown key is an ``UnknownOptionError`` naming the closest one):

==============================  ===============================================================
``warehouse``                   warehouse root (required)
``table`` / ``load(path)``      ``db.name``
``s3.*``, ``storage.<key>``     storage options for ``paimon_core``'s FileIO (``storage.`` is
                                stripped), e.g. ``s3.endpoint``; object storage is reached from
                                the Python workers (no ``s3a``)
``columns``                     projection (comma-separated); a user schema (``.schema(...)``)
                                with a subset of the columns projects as well
``filter``                      extra Paimon filter (``"amount > 10"``; repeat with ``;``)
``scan.snapshot-id``,           batch time travel (``snapshot-id``, ``tag``,
``scan.tag-name``,              ``timestamp-millis`` are accepted as short forms);
``scan.timestamp-millis``       streaming: start position with ``scan.mode``
``scan.mode``                   streaming startup: ``latest-full`` (default), ``latest``,
                                ``from-snapshot``, ``from-snapshot-full``, ``from-timestamp``
``consumer-id``                 streaming: record progress in ``consumer/consumer-<id>`` when
                                Spark commits a batch to the source (protects unread snapshots
                                from expiry; Spark does that when it plans the next batch, so
                                the consumer lags one batch behind the sink, never ahead)
``read.changelog``              ``true``: a ``_kind`` column (``+I``/``-U``/``+U``/``-D``) comes
                                first; otherwise a stream drops ``-U``/``-D`` rows
``split.target-size``           batch: pack splits into input partitions of about this many
                                bytes (default 128 mb; ``0`` = one split per partition)
``incremental-between``         batch: the net change per key of ``(start, end]`` (snapshot
(``-timestamp``, ``-scan-mode``) ids, tag names or epoch millis), without ``-U``/``-D`` rows
                                unless ``read.changelog``
``read.stream.max*PerTrigger``  streaming: ``Files`` / ``Bytes`` / ``Rows`` limits per
                                micro-batch (whole snapshots; one at least)
``commit.user``,                writes: commit user and identifier (exactly-once: an
``commit.identifier``           identifier already committed by the user is not applied again)
``overwrite.partition``         writes with ``mode("overwrite")``: ``k=v,...`` static partition
``dynamic-partition-overwrite`` writes with ``mode("overwrite")``: overrides the table option
                                (``true``: only the partitions written are replaced)
``row-kind-column``             writes: input column holding each row's kind (default
                                ``_row_kind`` when the input has it)
``primary-key``, ``partition``, writes to a missing table: its keys and bucket count; any
``bucket`` (and table options)  other Paimon table option given is set on the new table
``checkpointLocation``          ``writeStream``: the commit user derives from it (exactly-once
                                across restarts) unless ``commit.user`` is given
==============================  ===============================================================

System tables (``table.inspect``, Paimon's ``t$snapshots`` ...): ``load("db.t$files")``
reads one of ``snapshots``, ``schemas``, ``options``, ``files``, ``manifests``, ``partitions``,
``buckets``, ``tags``, ``consumers``, ``audit_log``, ``ro`` (``scan.snapshot-id`` /
``scan.tag-name`` time-travel those that allow it). They are computed on the driver from
metadata (``audit_log`` / ``ro`` read the data there too) and served as one input partition.

Filters Spark pushes are translated by :mod:`pipelines.filters` (partition / bucket / stats
pruning plus exact row filtering in the scan); the rest stays with Spark.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
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
    KIND_COLUMN,
    CoreOptions,
    DataSplit,
    Predicate,
    RowKind,
    SchemaError,
    SnapshotExpiredError,
    StartupMode,
    StreamPlan,
    StreamTableScan,
    TableRead,
    TableSchema,
    and_,
    arrow_short_retract_mask,
    check_range,
    parse_filters,
    read_stream_plan,
    resolve_timestamp_range,
    split_system_table,
)
from pipelines.config import CatalogSettings, TableHandle, limit_task_threads
from pipelines.filters import to_predicate
from pipelines.sink import PaimonStreamWriter, PaimonWriter, Target, for_this_job
from pipelines.source_options import (
    IncrementalRange,
    ReadOptions,
    check_options,
    lookup,
    refuse_batch_unsupported,
)
from pipelines.spark_types import arrow_for_spark, conform_to_spark, spark_schema
from pipelines.sql_tables import effective_options, with_identity

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = ["PaimonDataSource", "options_settings", "table_identifier", "write_target"]

FORMAT = "paimon"
KIND = KIND_COLUMN


# ---------------------------------------------------------------------------- options


def options_settings(options: Mapping[str, str]) -> CatalogSettings:
    """The warehouse and storage options named by data source options.

    Raises:
        SchemaError: no ``warehouse`` option.
    """
    warehouse = options.get("warehouse")
    if not warehouse:
        raise SchemaError("the paimon data source needs the option 'warehouse'")
    storage: dict[str, str] = {}
    for k, v in options.items():
        key = str(k)
        if key.startswith("storage."):
            storage[key[len("storage."):]] = str(v)
        elif key.startswith(("s3.", "fs.")):
            storage[key] = str(v)
    return CatalogSettings(str(warehouse), storage)


def table_identifier(options: Mapping[str, str]) -> str:
    ident = options.get("table") or options.get("path")
    if not ident:
        raise SchemaError("the paimon data source needs a table: option 'table' or load('db.t')")
    return str(ident)


def _first(options: Mapping[str, str], *keys: str) -> str | None:
    for k in keys:
        v = options.get(k)
        if v is not None and str(v).strip() != "":
            return str(v).strip()
    return None


def _filter_texts(options: Mapping[str, str]) -> list[str]:
    raw = _first(options, "filter")
    return [p.strip() for p in raw.split(";") if p.strip()] if raw else []


def _columns(options: Mapping[str, str], schema: TableSchema) -> list[str]:
    raw = _first(options, "columns")
    if raw is None:
        return schema.field_names
    cols = [c.strip() for c in raw.split(",") if c.strip()]
    for c in cols:
        schema.field(c)  # typed error for an unknown column
    return cols


def read_handle(options: Mapping[str, str], identifier: str | None = None, *,
                without: tuple[str, ...] = ()) -> TableHandle:
    """The table a read with these (effective) options reads: the Paimon table options among
    them (:func:`pipelines.sink.table_options`, less ``without``) laid over the table's for
    this read (:func:`pipelines.sink.for_this_job`: a merge option, ``fields.<f>.*``, a scan
    option ... acts on the read; one fixed for the table's life that differs is an
    ``ImmutableOptionError`` naming it)."""
    handle = TableHandle.load(options_settings(options), identifier or table_identifier(options))
    return for_this_job(handle, {k: v for k, v in options.items() if k not in without})


def _time_travel(options: Mapping[str, str]) -> dict[str, Any]:
    return ReadOptions.parse(options).time_travel()


def _output_schema(fields: Sequence[Any], with_kind: bool) -> StructType:
    from pyspark.sql.types import StringType, StructField, StructType

    s = spark_schema(fields)
    if with_kind:
        return StructType([StructField(KIND, StringType(), False), *s.fields])
    return s


def _requested_columns(schema: StructType) -> list[str]:
    return [f.name for f in schema.fields if f.name != KIND]


# ---------------------------------------------------------------------------- data source


class PaimonDataSource(DataSource):
    """``format("paimon")``: batch and streaming reads, batch and streaming writes (see the
    module docs). Options are :func:`pipelines.sql_tables.effective_options`: the session's
    ``spark.paimon.*`` defaults (:attr:`session_defaults`, bound by
    :func:`pipelines.sql.register_sql`), then the table a catalog table's schema names, then
    the options given."""

    #: ``spark.paimon.*`` session conf (prefix stripped), bound at registration
    session_defaults: ClassVar[Mapping[str, str]] = {}

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        # every path (read, stream, write) creates the source on the driver first: a typo
        # fails here, before any table is opened (pipelines.source_options)
        check_options(self.options)

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def _options(self, schema: StructType | None = None) -> dict[str, str]:
        return effective_options(self.options, schema, self.session_defaults)

    def _write_options(self) -> dict[str, str]:
        """What a write overlays (:func:`pipelines.sink.for_this_job`): not a catalog
        table's CREATE options (the table's own, maybe older than an ALTER)."""
        return effective_options(self.options, None, self.session_defaults)

    def schema(self) -> StructType:
        options = self._options()
        base, system = split_system_table(table_identifier(options))
        if system is not None:
            table = read_handle(options, base).open()
            snapshot_id, tag = _system_time_travel(table, options)
            return with_identity(
                spark_schema(table.inspect.fields(system, snapshot_id=snapshot_id, tag=tag)),
                options)
        table = read_handle(options, without=(CoreOptions.CONSUMER_ID,)).open()
        ro = ReadOptions.parse(options)
        if ro.incremental is not None:
            read_schema = table.schema
        else:
            read_schema = table.new_read_builder().with_time_travel(
                **ro.time_travel()).read_schema()
        cols = _columns(options, read_schema)
        return with_identity(
            _output_schema([read_schema.field(c) for c in cols], ro.read_changelog), options)

    def reader(self, schema: StructType) -> DataSourceReader:
        options = self._options(schema)
        refuse_batch_unsupported(options)
        if split_system_table(table_identifier(options))[1] is not None:
            return SystemTableReader(options, schema)
        if ReadOptions.parse(options).incremental is not None:
            return IncrementalReader(options, schema)
        return PaimonBatchReader(options, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return PaimonStreamReader(self._options(schema), schema)

    def writer(self, schema: StructType, overwrite: bool) -> PaimonWriter:
        options = self._options(schema)
        if not (options.get("table") or options.get("path")) and not self.options:
            raise SchemaError(
                "the paimon data source needs a table: option 'table' or save('db.t'). An "
                "INSERT into a 'USING paimon' table that did not go through spark.sql of a "
                "session with pipelines.sql.register_sql (parameterized, Spark Connect, the "
                "spark-sql shell) arrives without the table's OPTIONS when every column of its "
                "SELECT matches the table's by name and type: alias or cast one column "
                "(SELECT id AS id2, ...), or write with df.write.format('paimon').save('db.t'); "
                "a table created with a column list outside such a spark.sql names no Paimon "
                "table: CREATE it again through it")
        return PaimonWriter(write_target(options), options, schema, overwrite,
                            self._write_options())

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = self._options(schema)
        return PaimonStreamWriter(write_target(options), options, schema, overwrite,
                                  self._write_options())


def write_target(options: Mapping[str, str]) -> Target:
    """The table a write with these (effective) options goes to."""
    return Target(options_settings(options), table_identifier(options))


# ---------------------------------------------------------------------------- batch read


@dataclass
class SplitsPartition(InputPartition):
    """Splits of one snapshot read by one Spark task."""

    splits: tuple[DataSplit, ...]

    def __init__(self, splits: tuple[DataSplit, ...]) -> None:
        super().__init__(len(splits))
        self.splits = splits


@dataclass
class LatestPartition(InputPartition):
    """Task ``index`` of ``count`` reading the latest snapshot: the splits planned for
    ``snapshot_id`` when that is still the latest when the task runs, else its share of the
    newer snapshot's splits (every (partition, bucket) belongs to one task:
    :func:`_split_slot`), so each bucket is read whole from one snapshot."""

    index: int
    count: int
    snapshot_id: int | None
    splits: tuple[DataSplit, ...]

    def __init__(self, index: int, count: int, snapshot_id: int | None,
                 splits: tuple[DataSplit, ...]) -> None:
        super().__init__(index)
        self.index, self.count, self.snapshot_id, self.splits = index, count, snapshot_id, splits


def _split_slot(split: DataSplit, count: int) -> int:
    """The task of ``count`` that reads ``split``'s (partition, bucket), stable across
    snapshots and processes."""
    key = split.partition + split.bucket.to_bytes(4, "little", signed=True)
    return zlib.crc32(key) % count


def pack_splits(splits: Sequence[DataSplit], target_size: int) -> list[tuple[DataSplit, ...]]:
    """Group splits (in order) into chunks of at most ``target_size`` bytes of files (a larger
    split forms its own chunk); ``target_size <= 0``: one split per chunk."""
    if target_size <= 0:
        return [(s,) for s in splits]
    out: list[tuple[DataSplit, ...]] = []
    cur: list[DataSplit] = []
    size = 0
    for s in splits:
        ssize = sum(f.file_size for f in s.files)
        if cur and size + ssize > target_size:
            out.append(tuple(cur))
            cur, size = [], 0
        cur.append(s)
        size += ssize
    if cur:
        out.append(tuple(cur))
    return out


def _split_target(options: Mapping[str, str]) -> int:
    return ReadOptions.parse(options).split_target


class PaimonBatchReader(DataSourceReader):
    """Plans one snapshot (time travel resolved once, here) into input partitions."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.options = options
        self.handle = read_handle(options)
        table = self.handle.open()
        rb = table.new_read_builder().with_time_travel(**_time_travel(options))
        snapshot = rb.snapshot()
        self.snapshot_id = snapshot.id if snapshot is not None else None
        self.time_travel = rb.time_travel
        self.read_schema: TableSchema = rb.read_schema()
        self.columns = _requested_columns(schema)
        for c in self.columns:
            self.read_schema.field(c)
        self.with_kind = KIND in schema.names
        self.spark_schema = schema
        texts = _filter_texts(options)
        self.predicate: Predicate | None = (
            parse_filters(texts, list(self.read_schema.fields)) if texts else None
        )

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:
        pushed, rest = to_predicate(filters, list(self.read_schema.fields))
        if pushed is not None:
            self.predicate = pushed if self.predicate is None else and_(self.predicate, pushed)
        yield from rest

    def partitions(self) -> Sequence[InputPartition]:
        table = self.handle.open()
        if not self.time_travel:
            return self._latest_partitions(table)
        if self.snapshot_id is None:
            return [SplitsPartition(())]
        rb = table.new_read_builder().with_filter(self.predicate).with_time_travel(
            snapshot_id=self.snapshot_id)
        splits = rb.new_scan().plan().splits
        chunks = pack_splits(splits, _split_target(self.options))
        return [SplitsPartition(c) for c in chunks] or [SplitsPartition(())]

    def _latest_partitions(self, table: Any) -> list[InputPartition]:
        """Reads of the latest snapshot: Spark plans a relation once and replays its
        partitions for every query over a view or a reused DataFrame, so each task checks the
        latest snapshot when it runs and re-plans its share if a newer one landed (see
        :class:`LatestPartition`). The number of tasks is the split packing's."""
        splits = self._plan_latest(table) if self.snapshot_id is not None else ()
        count = max(1, len(pack_splits(splits, _split_target(self.options))))
        groups: list[list[DataSplit]] = [[] for _ in range(count)]
        for s in splits:
            groups[_split_slot(s, count)].append(s)
        return [LatestPartition(k, count, self.snapshot_id, tuple(g))
                for k, g in enumerate(groups)]

    def _plan_latest(self, table: Any, snapshot_id: int | None = None
                     ) -> tuple[DataSplit, ...]:
        """The splits of the snapshot resolved at construction (or ``snapshot_id``), with the
        latest schema."""
        snap = table.snapshot_manager.snapshot(snapshot_id or self.snapshot_id)
        return table.new_planner(self.read_schema, self.predicate).plan(snap).splits

    def _splits(self, table: Any, partition: InputPartition) -> tuple[DataSplit, ...]:
        if isinstance(partition, SplitsPartition):
            return partition.splits
        assert isinstance(partition, LatestPartition)
        latest = table.snapshot_manager.latest_snapshot_id()
        if latest is None or latest == partition.snapshot_id:
            return partition.splits
        return tuple(s for s in self._plan_latest(table, latest)
                     if _split_slot(s, partition.count) == partition.index)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        limit_task_threads()
        table = self.handle.open()
        splits = self._splits(table, partition)
        read = TableRead(table.file_io, self.read_schema, table.schema_manager, self.columns,
                         self.predicate)
        target = arrow_for_spark(self.spark_schema)
        for split in splits:
            data = read.read_split(split)
            if data.num_rows == 0:
                continue
            if self.with_kind:
                inserts = [RowKind.INSERT.short_string] * data.num_rows
                data = data.add_column(0, KIND, pa.array(inserts, pa.string()))
            yield from conform_to_spark(data, target).to_batches(max_chunksize=65536)


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


# ---------------------------------------------------------------------------- system tables


def _system_time_travel(table: Any, options: Mapping[str, str]) -> tuple[int | None, str | None]:
    """(snapshot id, tag) of a system table read; a timestamp resolves to its snapshot."""
    tt = _time_travel(options)
    if tt["timestamp_millis"] is not None:
        snap = table.resolve_snapshot(timestamp_millis=tt["timestamp_millis"])
        return (snap.id if snap is not None else None), None
    return tt["snapshot_id"], tt["tag"]


@dataclass
class SystemTablePartition(InputPartition):
    """A whole system table, computed on the driver (Arrow IPC bytes)."""

    data: bytes

    def __init__(self, data: bytes) -> None:
        super().__init__(0)
        self.data = data


class SystemTableReader(DataSourceReader):
    """``load("db.t$<name>")``: ``table.inspect.<name>()`` in one input partition."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        base, system = split_system_table(table_identifier(options))
        assert system is not None
        table = read_handle(options, base).open()
        snapshot_id, tag = _system_time_travel(table, options)
        data = table.inspect.system_table(system, snapshot_id=snapshot_id, tag=tag)
        data = conform_to_spark(data.select(schema.names), arrow_for_spark(schema))
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, data.schema) as w:
            w.write_table(data)
        self.data = sink.getvalue().to_pybytes()

    def partitions(self) -> Sequence[InputPartition]:
        return [SystemTablePartition(self.data)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, SystemTablePartition)
        yield from pa.ipc.open_stream(partition.data).read_all().to_batches(max_chunksize=65536)


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
