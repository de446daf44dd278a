"""Metadata questions answered as Arrow tables: ``table.inspect.<name>()``.

Paimon's system tables (``db.t$snapshots``, ``db.t$files`` ...) for Python, in the shape of
pyiceberg's ``Table.inspect``. Every method returns a ``pa.Table`` with the column names, order,
types and nullability of Paimon 0.9's system table of the same name
(``org.apache.paimon.table.system.*Table``). This project's own: ``buckets`` (0.9 has no
``$buckets`` system table; later Paimon versions have one with the same first six columns; we
add ``sorted_runs`` and ``max_level``) and ``delta_files`` (the file changes of one snapshot).
Time travel (``snapshot_id`` / ``tag``) goes further than Java 0.9, whose ``$files`` and
``$partitions`` ignore ``scan.snapshot-id``. ``files`` / ``partitions`` / ``buckets`` take
partition and bucket filters (Java pushes those down in ``$files``).
Everything is planned from metadata (snapshots, schemas, manifests, tags, consumers); only
``audit_log`` and ``ro`` read data files.

Where the values follow Java's text forms:

* ``files.partition`` / ``partitions.partition`` are ``Arrays.toString`` of the partition values
  (``[2024-01-01, 3]``), ``files.min_key`` / ``max_key`` that of the trimmed primary key (None
  for tables without one), and ``null_value_counts`` / ``min_value_stats`` /
  ``max_value_stats`` the ``TreeMap.toString`` of per-column values (``{a=1, b=x}``) over the
  table's current columns (a column a file's schema does not have: null bounds, and as null
  count the file's row count, as ``SimpleStatsEvolution``). Values are printed as Java prints
  Paimon's internal values: DATE as days since the epoch, TIMESTAMP as ``LocalDateTime``.
* Times (``commit_time``, ``update_time``, ``creation_time`` ...) are ``timestamp[ms]`` without a
  zone holding the stored epoch millis, i.e. UTC. Java shows a snapshot's or schema's millis in
  the JVM's zone; both agree when that zone is UTC. File creation times are stored as local
  wall-clock times by the writer and are shown as stored by both.

Example:
    >>> table.inspect.snapshots().to_pylist()[0]["commit_kind"]        # doctest: +SKIP
    'APPEND'
    >>> table.inspect.files(snapshot_id=3).column("level")             # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from paimon_core.compact.manager import live_bucket_files
from paimon_core.compact.options import CompactOptions
from paimon_core.consumer import ConsumerManager
from paimon_core.errors import FileNotFoundInTableError
from paimon_core.inspect_text import (
    PartitionFormatter,
    StatsFormatter,
    duration_text,
    flat_json,
    local_date_time_millis,
)
from paimon_core.read.incremental import IncrementalRead
from paimon_core.read.table_read import TableRead
from paimon_core.scan.planner import ScanPlanner
from paimon_core.scan.streaming import KIND_COLUMN
from paimon_core.spec.manifest import DataFileMeta
from paimon_core.spec.schema import TableSchema
from paimon_core.spec.snapshot import Snapshot, decode_snapshot
from paimon_core.tags import TagManager
from paimon_core.types import DataField, DataType, parse_sql_type

if TYPE_CHECKING:
    from paimon_core.table import FileStoreTable

__all__ = [
    "ROWKIND_COLUMN", "SYSTEM_TABLES", "InspectTable", "SystemTableName", "sorted_runs",
    "split_system_table",
]

SystemTableName = Literal[
    "snapshots", "schemas", "options", "files", "manifests", "partitions", "buckets", "tags",
    "consumers", "audit_log", "ro", "table_indexes",
]
SYSTEM_TABLES: tuple[str, ...] = (
    "snapshots", "schemas", "options", "files", "manifests", "partitions", "buckets", "tags",
    "consumers", "audit_log", "ro", "table_indexes",
)
SYSTEM_TABLE_SPLITTER = "$"
ROWKIND_COLUMN = "rowkind"

_MS = pa.timestamp("ms")


def _f(name: str, type_: pa.DataType, nullable: bool = True) -> pa.Field:
    return pa.field(name, type_, nullable=nullable)


SNAPSHOTS_SCHEMA = pa.schema([
    _f("snapshot_id", pa.int64(), False),
    _f("schema_id", pa.int64(), False),
    _f("commit_user", pa.string(), False),
    _f("commit_identifier", pa.int64(), False),
    _f("commit_kind", pa.string(), False),
    _f("commit_time", _MS, False),
    _f("base_manifest_list", pa.string(), False),
    _f("delta_manifest_list", pa.string(), False),
    _f("changelog_manifest_list", pa.string()),
    _f("total_record_count", pa.int64()),
    _f("delta_record_count", pa.int64()),
    _f("changelog_record_count", pa.int64()),
    _f("watermark", pa.int64()),
])
SCHEMAS_SCHEMA = pa.schema([
    _f("schema_id", pa.int64(), False),
    _f("fields", pa.string(), False),
    _f("partition_keys", pa.string(), False),
    _f("primary_keys", pa.string(), False),
    _f("options", pa.string(), False),
    _f("comment", pa.string()),
    _f("update_time", _MS, False),
])
OPTIONS_SCHEMA = pa.schema([_f("key", pa.string(), False), _f("value", pa.string(), False)])
FILES_SCHEMA = pa.schema([
    _f("partition", pa.string()),
    _f("bucket", pa.int32(), False),
    _f("file_path", pa.string(), False),
    _f("file_format", pa.string(), False),
    _f("schema_id", pa.int64(), False),
    _f("level", pa.int32(), False),
    _f("record_count", pa.int64(), False),
    _f("file_size_in_bytes", pa.int64(), False),
    _f("min_key", pa.string()),
    _f("max_key", pa.string()),
    _f("null_value_counts", pa.string(), False),
    _f("min_value_stats", pa.string(), False),
    _f("max_value_stats", pa.string(), False),
    _f("min_sequence_number", pa.int64()),
    _f("max_sequence_number", pa.int64()),
    _f("creation_time", _MS),
])
MANIFESTS_SCHEMA = pa.schema([
    _f("file_name", pa.string(), False),
    _f("file_size", pa.int64(), False),
    _f("num_added_files", pa.int64(), False),
    _f("num_deleted_files", pa.int64(), False),
    _f("schema_id", pa.int64(), False),
])
PARTITIONS_SCHEMA = pa.schema([
    _f("partition", pa.string()),
    _f("record_count", pa.int64(), False),
    _f("file_size_in_bytes", pa.int64(), False),
    _f("file_count", pa.int64(), False),
    _f("last_update_time", _MS),
])
BUCKETS_SCHEMA = pa.schema([
    _f("partition", pa.string()),
    _f("bucket", pa.int32(), False),
    _f("record_count", pa.int64(), False),
    _f("file_size_in_bytes", pa.int64(), False),
    _f("file_count", pa.int64(), False),
    _f("last_update_time", _MS),
    # this project's: LSM sorted runs (level-0 files + non-empty levels; every file of an
    # append table), the compaction debt of the bucket, and the highest level holding a file
    _f("sorted_runs", pa.int64(), False),
    _f("max_level", pa.int32(), False),
])
# this project's (no Java system table): the file changes one snapshot committed
DELTA_FILES_SCHEMA = pa.schema([
    _f("kind", pa.string(), False),
    _f("partition", pa.string()),
    _f("bucket", pa.int32(), False),
    _f("file_path", pa.string(), False),
    _f("level", pa.int32(), False),
    _f("record_count", pa.int64(), False),
    _f("delete_row_count", pa.int64()),
    _f("file_size_in_bytes", pa.int64(), False),
])
TAGS_SCHEMA = pa.schema([
    _f("tag_name", pa.string(), False),
    _f("snapshot_id", pa.int64(), False),
    _f("schema_id", pa.int64(), False),
    _f("commit_time", _MS, False),
    _f("record_count", pa.int64()),
    _f("create_time", _MS),
    _f("time_retained", pa.string()),
])
# Paimon 1.x's $table_indexes (0.9 has none), its first seven columns; dv_ranges: f0 data file,
# f1 offset, f2 length, _CARDINALITY deleted rows (null when Java 0.9 wrote the vector)
DV_RANGE_TYPE = pa.struct([_f("f0", pa.string(), False), _f("f1", pa.int32(), False),
                           _f("f2", pa.int32(), False), _f("_CARDINALITY", pa.int64())])
TABLE_INDEXES_SCHEMA = pa.schema([
    _f("partition", pa.string()),
    _f("bucket", pa.int32(), False),
    _f("index_type", pa.string(), False),
    _f("file_name", pa.string(), False),
    _f("file_size", pa.int64(), False),
    _f("row_count", pa.int64(), False),
    _f("dv_ranges", pa.list_(DV_RANGE_TYPE)),
])
CONSUMERS_SCHEMA = pa.schema([
    _f("consumer_id", pa.string(), False), _f("next_snapshot_id", pa.int64(), False)
])


def split_system_table(name: str) -> tuple[str, str | None]:
    """``"t$files"`` -> ``("t", "files")``; ``"t"`` -> ``("t", None)``.

    Raises:
        ValueError: an unknown system table name.
    """
    base, sep, system = name.partition(SYSTEM_TABLE_SPLITTER)
    if not sep:
        return name, None
    system = system.lower()
    if system not in SYSTEM_TABLES:
        raise ValueError(
            f"unknown system table {system!r} (known: {', '.join(SYSTEM_TABLES)})"
        )
    return base, system


def sorted_runs(levels: Sequence[int], primary_key: bool) -> int:
    """Sorted runs of one bucket whose live files sit on ``levels`` (one entry a file; Java's
    ``Levels.numberOfSortedRuns``): every level-0 file plus every non-empty higher level of a
    primary-key table; every file of an append table. What the next compaction folds."""
    if not primary_key:
        return len(levels)
    return sum(1 for lv in levels if lv == 0) + len({lv for lv in levels if lv > 0})


class InspectTable:
    """The system tables of one table (``table.inspect``); see the module docstring.

    Methods taking ``snapshot_id`` / ``tag`` answer for that snapshot (time travel, Java's
    ``scan.snapshot-id`` / ``scan.tag-name`` on the system table); default: the latest.
    """

    def __init__(self, table: FileStoreTable) -> None:
        self.table = table

    # ---------------------------------------------------------------- by name
    def system_table(
        self, name: str, *, snapshot_id: int | None = None, tag: str | None = None
    ) -> pa.Table:
        """The system table ``name`` (one of :data:`SYSTEM_TABLES`), time-travelled where the
        table supports it."""
        if name not in SYSTEM_TABLES:
            raise ValueError(f"unknown system table {name!r} (known: {', '.join(SYSTEM_TABLES)})")
        method: Callable[..., pa.Table] = getattr(self, name)
        if name in _TIME_TRAVEL:
            return method(snapshot_id=snapshot_id, tag=tag)
        if snapshot_id is not None or tag is not None:
            raise ValueError(f"system table {name!r} has no time travel")
        return method()

    def fields(
        self, name: str, *, snapshot_id: int | None = None, tag: str | None = None
    ) -> list[DataField]:
        """The Paimon columns of system table ``name`` (what a Spark schema or the CLI's
        canonical JSON is made from): the metadata tables' ``BIGINT`` / ``INT`` / ``STRING``
        / ``TIMESTAMP(3)`` columns, or the data columns of ``audit_log`` / ``ro`` (with
        ``rowkind STRING`` first for ``audit_log``) at the given snapshot."""
        if name in ("audit_log", "ro"):
            snap = self._snapshot(snapshot_id, tag)
            data = list(self._read_schema(snap, snapshot_id, tag).fields)
            if name == "ro":
                return data
            return [DataField(-1, ROWKIND_COLUMN, parse_sql_type("STRING")), *data]
        schema = _SCHEMAS.get(name)
        if schema is None:
            raise ValueError(f"unknown system table {name!r} (known: {', '.join(SYSTEM_TABLES)})")
        return [DataField(i, f.name, _paimon_type(f)) for i, f in enumerate(schema)]

    # ---------------------------------------------------------------- metadata tables
    def snapshots(self) -> pa.Table:
        """Every snapshot still on storage, by id (``$snapshots``)."""
        rows = [_snapshot_row(s) for s in self.table.snapshot_manager.snapshots()]
        return pa.Table.from_pylist(rows, schema=SNAPSHOTS_SCHEMA)

    def schemas(self) -> pa.Table:
        """Every schema version (``$schemas``); ``fields`` / keys / ``options`` as JSON."""
        sm = self.table.schema_manager
        rows = []
        for sid in sm.list_schema_ids():
            s = sm.schema(sid)
            rows.append({
                "schema_id": s.id,
                "fields": flat_json([f.to_json() for f in s.fields]),
                "partition_keys": flat_json(list(s.partition_keys)),
                "primary_keys": flat_json(list(s.primary_keys)),
                "options": flat_json(dict(s.options)),
                "comment": s.comment,
                "update_time": s.time_millis,
            })
        return pa.Table.from_pylist(rows, schema=SCHEMAS_SCHEMA)

    def options(self) -> pa.Table:
        """The options of the latest schema (``$options``)."""
        schema = self.table.schema_manager.latest() or self.table.schema
        rows = [{"key": k, "value": v} for k, v in schema.options.items()]
        return pa.Table.from_pylist(rows, schema=OPTIONS_SCHEMA)

    def tags(self) -> pa.Table:
        """Every tag, by name (``$tags``): the tagged snapshot, and the tag's creation time and
        retention when it was created with one."""
        tm = TagManager(self.table.file_io, self.table.path)
        rows = []
        for name, _ in sorted(tm.list()):
            path = tm.tag_path(name)
            try:
                raw = self.table.file_io.read_bytes(path)
            except FileNotFoundInTableError:
                continue  # deleted while listing
            snap = decode_snapshot(raw, path)
            extra = json.loads(raw.decode("utf-8"))  # tagCreateTime / tagTimeRetained
            rows.append({
                "tag_name": name,
                "snapshot_id": snap.id,
                "schema_id": snap.schema_id,
                "commit_time": snap.time_millis,
                "record_count": snap.total_record_count,
                "create_time": local_date_time_millis(extra.get("tagCreateTime")),
                "time_retained": duration_text(extra.get("tagTimeRetained")),
            })
        return pa.Table.from_pylist(rows, schema=TAGS_SCHEMA)

    def consumers(self) -> pa.Table:
        """Every consumer and the next snapshot it will read (``$consumers``)."""
        cm = ConsumerManager(self.table.file_io, self.table.path)
        rows = [
            {"consumer_id": cid, "next_snapshot_id": nxt}
            for cid, nxt in sorted(cm.consumers().items())
        ]
        return pa.Table.from_pylist(rows, schema=CONSUMERS_SCHEMA)

    def manifests(self, *, snapshot_id: int | None = None, tag: str | None = None) -> pa.Table:
        """The manifests of a snapshot: its base list, its delta list, then its changelog list
        (``$manifests``, ``Snapshot.allManifests``)."""
        snap = self._snapshot(snapshot_id, tag)
        mio = self.table.manifest_io
        metas = mio.data_manifests(snap)
        if snap is not None and snap.changelog_manifest_list:
            metas += mio.manifest_list(snap.changelog_manifest_list,
                                       snap.changelog_manifest_list_size)
        rows = [
            {
                "file_name": m.file_name,
                "file_size": m.file_size,
                "num_added_files": m.num_added_files,
                "num_deleted_files": m.num_deleted_files,
                "schema_id": m.schema_id,
            }
            for m in metas
        ]
        return pa.Table.from_pylist(rows, schema=MANIFESTS_SCHEMA)

    def table_indexes(self, *, snapshot_id: int | None = None, tag: str | None = None
                      ) -> pa.Table:
        """The index files of a snapshot, as its index manifest lists them, with the range
        and size of every deletion vector (Paimon 1.x's ``$table_indexes``)."""
        snap = self._snapshot(snapshot_id, tag)
        if snap is None or not snap.index_manifest:
            return TABLE_INDEXES_SCHEMA.empty_table()
        part = PartitionFormatter(self.table.schema)
        rows = [{"partition": part(e.partition), "bucket": e.bucket,
                 "index_type": e.index_type, "file_name": e.file_name,
                 "file_size": e.file_size, "row_count": e.row_count,
                 "dv_ranges": None if e.dv_ranges is None else [
                     {"f0": d.data_file_name, "f1": d.offset, "f2": d.length,
                      "_CARDINALITY": d.cardinality} for d in e.dv_ranges]}
                for e in self.table.manifest_io.index_manifest(snap.index_manifest)]
        return pa.Table.from_pylist(rows, schema=TABLE_INDEXES_SCHEMA)

    # ---------------------------------------------------------------- live files
    def files(
        self,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        partition: Mapping[str, Any] | None = None,
        bucket: int | None = None,
    ) -> pa.Table:
        """Every live data file of a snapshot, all levels, by (partition, bucket)
        (``$files``); ``partition`` (a spec such as ``{"dt": "2024-01-01"}``, may be partial)
        and ``bucket`` keep only those files (Java pushes such filters down the same way)."""
        snap = self._snapshot(snapshot_id, tag)
        stats = StatsFormatter(self.table.schema, self.table.schema_manager)
        part = PartitionFormatter(self.table.schema)
        rows = []
        for (pbytes, b), (_, files) in self._groups(snap, partition, bucket):
            ptext = part(pbytes)
            for f in files:
                min_key, max_key = stats.keys(f)
                nulls, mins, maxs = stats.values(f)
                rows.append({
                    "partition": ptext,
                    "bucket": b,
                    "file_path": f.file_name,
                    "file_format": f.file_name.rsplit(".", 1)[-1],
                    "schema_id": f.schema_id,
                    "level": f.level,
                    "record_count": f.row_count,
                    "file_size_in_bytes": f.file_size,
                    "min_key": min_key,
                    "max_key": max_key,
                    "null_value_counts": nulls,
                    "min_value_stats": mins,
                    "max_value_stats": maxs,
                    "min_sequence_number": f.min_sequence_number,
                    "max_sequence_number": f.max_sequence_number,
                    "creation_time": f.creation_time,
                })
        return pa.Table.from_pylist(rows, schema=FILES_SCHEMA)

    def partitions(
        self,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        partition: Mapping[str, Any] | None = None,
    ) -> pa.Table:
        """Records, bytes and files per partition, and the newest file's creation time
        (``$partitions``); ``partition``: only the partitions matching that spec."""
        snap = self._snapshot(snapshot_id, tag)
        part = PartitionFormatter(self.table.schema)
        acc: dict[bytes, list[int]] = {}
        times: dict[bytes, int | None] = {}
        for (pbytes, _), (_, files) in self._groups(snap, partition, None):
            a = acc.setdefault(pbytes, [0, 0, 0])
            for f in files:
                a[0] += f.row_count
                a[1] += f.file_size
                a[2] += 1
                times[pbytes] = _max_opt(times.get(pbytes), f.creation_time)
        rows = [
            {
                "partition": part(p),
                "record_count": a[0],
                "file_size_in_bytes": a[1],
                "file_count": a[2],
                "last_update_time": times.get(p),
            }
            for p, a in acc.items()
        ]
        return pa.Table.from_pylist(rows, schema=PARTITIONS_SCHEMA)

    def buckets(
        self,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        partition: Mapping[str, Any] | None = None,
        bucket: int | None = None,
    ) -> pa.Table:
        """Records, bytes, files and sorted runs per (partition, bucket) (``$buckets``; see
        :data:`BUCKETS_SCHEMA`). Sorted runs above ``num-sorted-run.compaction-trigger`` are
        what the next compaction of a primary-key table will fold. ``partition`` /
        ``bucket``: only those buckets."""
        snap = self._snapshot(snapshot_id, tag)
        part = PartitionFormatter(self.table.schema)
        is_pk = bool(self.table.schema.primary_keys)
        rows = []
        for (pbytes, b), (_, files) in self._groups(snap, partition, bucket):
            last: int | None = None
            for f in files:
                last = _max_opt(last, f.creation_time)
            rows.append({
                "partition": part(pbytes),
                "bucket": b,
                "record_count": sum(f.row_count for f in files),
                "file_size_in_bytes": sum(f.file_size for f in files),
                "file_count": len(files),
                "last_update_time": last,
                "sorted_runs": sorted_runs([f.level for f in files], is_pk),
                "max_level": max((f.level for f in files), default=0),
            })
        return pa.Table.from_pylist(rows, schema=BUCKETS_SCHEMA)

    def delta_files(self, snapshot_id: int) -> pa.Table:
        """The file changes snapshot ``snapshot_id`` committed, from its delta manifest list
        (this project's; Java has no such system table): ``kind`` ``ADD`` / ``DELETE``, where
        the file is, its level, records (``delete_row_count``: its retract records, when the
        writer recorded them) and bytes. A compaction deletes its inputs and adds its outputs;
        a file only moved to another level is deleted and added under the same name."""
        snap = self.table.snapshot_manager.snapshot(snapshot_id)
        mio = self.table.manifest_io
        part = PartitionFormatter(self.table.schema)
        rows = []
        for meta in mio.manifest_list(snap.delta_manifest_list, snap.delta_manifest_list_size):
            for e in mio.manifest(meta.file_name, meta.file_size):
                f = e.file
                rows.append({
                    "kind": e.kind.name,
                    "partition": part(e.partition),
                    "bucket": e.bucket,
                    "file_path": f.file_name,
                    "level": f.level,
                    "record_count": f.row_count,
                    "delete_row_count": f.delete_row_count,
                    "file_size_in_bytes": f.file_size,
                })
        return pa.Table.from_pylist(rows, schema=DELTA_FILES_SCHEMA)

    # ---------------------------------------------------------------- data tables
    def audit_log(self, *, snapshot_id: int | None = None, tag: str | None = None) -> pa.Table:
        """The table's rows with their row kind first (``$audit_log``): a primary-key table's
        rows merged per key, a key whose last record retracts it kept as ``-D`` /
        ``-U``."""
        snap = self._snapshot(snapshot_id, tag)
        schema = self._read_schema(snap, snapshot_id, tag)
        read = TableRead(self.table.file_io, schema, self.table.schema_manager)
        plan = self._planner(schema).plan(snap)
        out = IncrementalRead(read, "delta").to_arrow(plan.splits)
        return out.rename_columns([ROWKIND_COLUMN if c == KIND_COLUMN else c
                                   for c in out.column_names])

    def ro(self, *, snapshot_id: int | None = None, tag: str | None = None) -> pa.Table:
        """Read-optimized rows (``$ro``): of a primary-key table only the files on the top
        level (``num-levels - 1``, what a full compaction writes), so no merging; of an
        append table everything."""
        snap = self._snapshot(snapshot_id, tag)
        schema = self._read_schema(snap, snapshot_id, tag)
        read = TableRead(self.table.file_io, schema, self.table.schema_manager)
        planner = self._planner(schema)
        if schema.primary_keys:
            top = CompactOptions.from_schema(schema).max_level
            plan = planner.plan(snap, level_filter=lambda level: level == top)
        else:
            plan = planner.plan(snap)
        return read.to_arrow(plan.splits)

    # ---------------------------------------------------------------- helpers
    def _snapshot(self, snapshot_id: int | None, tag: str | None) -> Snapshot | None:
        return self.table.resolve_snapshot(snapshot_id=snapshot_id, tag=tag)

    def _read_schema(
        self, snap: Snapshot | None, snapshot_id: int | None, tag: str | None
    ) -> TableSchema:
        return self.table.schema_for(snap, snapshot_id is not None or tag is not None)

    def _groups(
        self, snap: Snapshot | None, partition: Mapping[str, Any] | None, bucket: int | None
    ) -> list[tuple[tuple[bytes, int], tuple[int, list[DataFileMeta]]]]:
        """Live files of ``snap`` per (partition, bucket), in that order, filtered."""
        accept: Callable[[bytes, int], bool] | None = None
        if partition is not None or bucket is not None:
            match = self.table.layout.partition_matcher(
                [partition] if partition else None)

            def accept(p: bytes, b: int) -> bool:
                return (bucket is None or b == bucket) and match(p)

        groups = live_bucket_files(self.table.manifest_io, snap, accept)
        return sorted(groups.items(), key=lambda kv: kv[0])

    def _planner(self, schema: TableSchema) -> ScanPlanner:
        return self.table.new_planner(schema, None)


_SCHEMAS = {
    "snapshots": SNAPSHOTS_SCHEMA, "schemas": SCHEMAS_SCHEMA, "options": OPTIONS_SCHEMA,
    "files": FILES_SCHEMA, "manifests": MANIFESTS_SCHEMA, "partitions": PARTITIONS_SCHEMA,
    "buckets": BUCKETS_SCHEMA, "tags": TAGS_SCHEMA, "consumers": CONSUMERS_SCHEMA,
    "table_indexes": TABLE_INDEXES_SCHEMA,
}
_PAIMON_TYPES = {pa.int64(): "BIGINT", pa.int32(): "INT", pa.string(): "STRING", _MS:
                 "TIMESTAMP(3)", pa.list_(DV_RANGE_TYPE): "ARRAY<ROW<f0 STRING NOT NULL, "
                 "f1 INT NOT NULL, f2 INT NOT NULL, _CARDINALITY BIGINT>>"}


def _paimon_type(field: pa.Field) -> DataType:
    sql = _PAIMON_TYPES[field.type]
    return parse_sql_type(sql if field.nullable else f"{sql} NOT NULL")


_TIME_TRAVEL = frozenset({"manifests", "files", "partitions", "buckets", "audit_log", "ro",
                          "table_indexes"})


# -------------------------------------------------------------------- row helpers
def _snapshot_row(s: Snapshot) -> dict[str, Any]:
    return {
        "snapshot_id": s.id,
        "schema_id": s.schema_id,
        "commit_user": s.commit_user,
        "commit_identifier": s.commit_identifier,
        "commit_kind": s.commit_kind.value,
        "commit_time": s.time_millis,
        "base_manifest_list": s.base_manifest_list,
        "delta_manifest_list": s.delta_manifest_list,
        "changelog_manifest_list": s.changelog_manifest_list,
        "total_record_count": s.total_record_count,
        "delta_record_count": s.delta_record_count,
        "changelog_record_count": s.changelog_record_count,
        "watermark": s.watermark,
    }


def _max_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)
