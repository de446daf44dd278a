"""What every read of the ``paimon`` data source shares (the table a read reads through the
copy of its options, its columns, its output schema) and the batch reads: snapshots packed into
splits (:class:`PaimonBatchReader`) and system tables (``paimon_snapshots('db.t')``,
:class:`SystemTableReader`). The data source itself: :mod:`pipelines.spark_source.source`."""


from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceReader,
    InputPartition,
)

from paimon_core import (
    DataSplit,
    Predicate,
    RowKind,
    SchemaError,
    TableRead,
    TableSchema,
    parse_filters,
)
from paimon_core.integration import (
    KIND_COLUMN,
    and_,
    split_system_table,
)
from pipelines.config import CatalogSettings, TableHandle, limit_task_threads
from pipelines.spark_source.filters import to_predicate
from pipelines.spark_source.options import (
    ReadOptions,
)
from pipelines.spark_source.sink import for_this_job
from pipelines.spark_types import arrow_for_spark, conform_to_spark, spark_schema

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


#: the row-kind column a read may request (``+I``, ``-U``, ``+U``, ``-D``)
KIND = KIND_COLUMN

__all__ = ["KIND", "PaimonBatchReader", "SystemTableReader", "options_settings", "pack_splits",
           "read_handle", "table_identifier"]


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
    them (:func:`~pipelines.spark_source.sink.table_options`, less ``without``) laid over the
    table's for this read (:func:`~pipelines.spark_source.sink.for_this_job`: a merge option,
    ``fields.<f>.*``, a scan option ... acts on the read; one fixed for the table's life that
    differs is an ``ImmutableOptionError`` naming it)."""
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


