"""Apache Paimon, in pure Python: the public API.

Everything an application, a Spark job or a Dagster asset needs is importable from here
(as ``deltalake/__init__.py`` does for delta-rs); the submodules are the implementation and
may move. ``import paimon_core`` loads only the error types: every other name is imported on
first use, and a process that only reads never loads the write, compaction, expiry or
inspection code, fsspec (local tables) or pandas before its first scan (never pyspark or
dagster); ``tests/test_startup_cost.py`` guards this.

Example:
    >>> import tempfile
    >>> import pyarrow as pa
    >>> from paimon_core import FileSystemCatalog, Schema
    >>> catalog = FileSystemCatalog(tempfile.mkdtemp())
    >>> data = pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]})
    >>> table = catalog.create_table("db.t", Schema.from_arrow(data.schema))
    >>> builder = table.new_batch_write_builder()      # one commit user for both phases
    >>> with builder.new_write() as write:
    ...     write.write_arrow(data)
    ...     messages = write.prepare_commit()
    >>> builder.new_commit().commit(messages)
    [1]
    >>> table.to_arrow().num_rows
    2

The names, by concept:

* **catalog and table**: :class:`FileSystemCatalog`, :class:`Identifier`,
  :class:`FileStoreTable`, :class:`Snapshot`, :class:`CommitKind`, :class:`CoreOptions`,
  :class:`FileIO` (storage by URL scheme) and :func:`join` (path joining).
* **reading**: :class:`ReadBuilder` -> :class:`TableScan` -> :class:`Plan` of
  :class:`DataSplit` -> :class:`TableRead`; streaming: :class:`StreamTableScan`,
  :class:`StreamPlan`, :func:`read_stream_plan`, :data:`KIND_COLUMN`; consumers:
  :class:`Consumer`, :class:`ConsumerManager`.
* **writing**: :class:`BatchWriteBuilder` (one commit user for both phases) ->
  :class:`TableWrite` -> :class:`CommitMessage` -> :class:`BatchTableCommit` /
  :class:`TableCommit`; per-commit settings: :class:`CommitOptions`;
  :data:`BATCH_COMMIT_IDENTIFIER`.
* **schema**: :class:`Schema` (builder), :class:`TableSchema`, :data:`SchemaChange` and its
  changes (:class:`AddColumn`, :class:`DropColumn`, ...).
* **types**: :class:`DataField`, :data:`DataType` (:class:`AtomicType`, :class:`ArrayType`,
  :class:`MapType`, :class:`MultisetType`, :class:`RowType`), :class:`TypeRoot` and its groups,
  :func:`parse_sql_type`, :func:`to_arrow_schema`, :func:`from_arrow_type`.
* **predicates**: :data:`Predicate` (:class:`Leaf` with an :class:`Op`, :class:`And`,
  :class:`Or`), builders (:func:`equal`, :func:`and_`, ...), :func:`parse_filter` /
  :func:`parse_filters`, :func:`bind` (normalise literals to the column types).
* **metadata**: ``table.inspect`` (:class:`InspectTable`): Paimon's system tables
  (``snapshots``, ``files``, ``buckets`` ...) as Arrow tables; :func:`split_system_table`
  (``"t$files"``), :func:`sorted_runs`.
* **kinds and enums**: :class:`RowKind` (``+I``/``-U``/``+U``/``-D``) with
  :func:`arrow_short_retract_mask`, :class:`MergeEngine`, :class:`ChangelogProducer`,
  :class:`StartupMode`; option keys are the constants of :class:`CoreOptions`.
* **layout**: :class:`TableLayout`, every path of a table (partition and bucket directories,
  file names) and its partition matcher / decoder.
* **maintenance**: compaction (:class:`BucketCompactor`, :func:`compact_table`; the one retry
  loop :func:`compact_with_retries` with a pluggable :class:`CompactExecutor`, planned by
  :func:`plan_compaction` = :func:`list_buckets` + :func:`pick_buckets`, ...),
  expiry (:class:`ExpireSnapshots`, :class:`ExpireConfig`), orphans
  (:func:`remove_orphan_files`), the invariant checker's :class:`FsckReport` (run it with
  :func:`paimon_core.fsck.fsck`: the public submodule ``paimon_core.fsck`` keeps its name, so
  ``import paimon_core.fsck`` still gives the module).
* **engine helpers** (for Spark / Dagster integrations): :func:`bucket_ids` (Paimon's bucket
  of every row), :func:`channel_ids` and :class:`AssignerChannel` (distributed writes of
  dynamic bucket tables), :func:`conform_column`, :func:`deduplicate`, :func:`decode_partition`,
  :func:`live_files`, :func:`parse_memory_size`, :class:`ScanPlanner` (plans one
  snapshot), manifest rows (:class:`ManifestEntry`, :class:`DataFileMeta`, :class:`FileKind`),
  :data:`BulkDelete` (a batched deleter for expiry).
* **errors**: :class:`PaimonError` is the root of every error raised; its leaves are listed
  below.
"""

import importlib
from typing import TYPE_CHECKING, Any

from paimon_core.errors import (
    CommitConflictError,
    CommitStateUnknownError,
    ConfigError,
    CorruptMetadataError,
    DatabaseAlreadyExistError,
    DatabaseNotEmptyError,
    DatabaseNotExistError,
    FileNotFoundInTableError,
    FilterError,
    ImmutableOptionError,
    InvalidIdentifierError,
    NotAWarehouseError,
    NotFoundError,
    PaimonError,
    SchemaError,
    SnapshotExpiredError,
    SnapshotNotExistError,
    StorageError,
    TableAlreadyExistError,
    TableNotExistError,
    TagNotExistError,
    UnsupportedError,
    WarehouseNotExistError,
)

# Every other name is imported on first use (PEP 562): ``import paimon_core`` stays cheap for a
# process that only reads (a CLI call, a Spark task, a Dagster step) and never loads the write,
# compaction, expiry or inspection code, nor fsspec. Type checkers see the imports below.
if TYPE_CHECKING:
    from paimon_core.bucket import bucket_ids
    from paimon_core.catalog import FileSystemCatalog
    from paimon_core.commit.options import CommitOptions
    from paimon_core.commit.steps import CommitStep
    from paimon_core.commit.table_commit import TableCommit
    from paimon_core.commit_message import CommitMessage
    from paimon_core.compact import (
        BucketCompactor,
        CompactExecutor,
        CompactOptions,
        CompactSource,
        LocalExecutor,
        compact_bucket,
        compact_table,
        compact_with_retries,
        live_bucket_files,
    )
    from paimon_core.compact.manager import (
        DEFAULT_MAX_ATTEMPTS,
        BucketWork,
        list_buckets,
        new_compactor,
        pick_buckets,
        plan_compaction,
    )
    from paimon_core.compact.options import DEFAULT_COMPACT_STRATEGY, CompactStrategy, is_full
    from paimon_core.consumer import Consumer, ConsumerManager
    from paimon_core.expire import BulkDelete, ExpireSnapshots
    from paimon_core.expire_config import ExpireConfig, ExpireResult
    from paimon_core.fsck import FsckReport
    from paimon_core.identifier import Identifier
    from paimon_core.inspect import InspectTable, sorted_runs, split_system_table
    from paimon_core.io.file_io import FileIO, join
    from paimon_core.layout import TableLayout
    from paimon_core.manifest_io import snapshot_listings
    from paimon_core.options import CoreOptions, parse_memory_size
    from paimon_core.orphans import OrphanResult, remove_orphan_files
    from paimon_core.read.merge import deduplicate
    from paimon_core.read.stream import read_stream_plan
    from paimon_core.read.table_read import TableRead
    from paimon_core.rollback import RollbackResult
    from paimon_core.scan.incremental import check_range, resolve_timestamp_range
    from paimon_core.scan.planner import ScanPlanner
    from paimon_core.scan.predicate import (
        And,
        Leaf,
        Op,
        Or,
        Predicate,
        and_,
        bind,
        equal,
        greater_or_equal,
        greater_than,
        is_in,
        is_not_in,
        is_not_null,
        is_null,
        less_or_equal,
        less_than,
        not_equal,
        or_,
        parse_filter,
        parse_filters,
        starts_with,
    )
    from paimon_core.scan.predicate_literal import text_timestamp_nanos
    from paimon_core.scan.split import DataSplit, Plan
    from paimon_core.scan.streaming import StreamPlan, StreamTableScan
    from paimon_core.schema_builder import Schema
    from paimon_core.schema_change import (
        AddColumn,
        DropColumn,
        Move,
        MoveType,
        RemoveOption,
        RenameColumn,
        SchemaChange,
        SetOption,
        UpdateColumnComment,
        UpdateColumnNullability,
        UpdateColumnPosition,
        UpdateColumnType,
        UpdateComment,
    )
    from paimon_core.spec.file_entries import live_files
    from paimon_core.spec.manifest import DataFileMeta, FileKind, ManifestEntry
    from paimon_core.spec.option_enums import ChangelogProducer, MergeEngine, StartupMode
    from paimon_core.spec.partition import decode_partition
    from paimon_core.spec.row_kind import RowKind, arrow_short_retract_mask
    from paimon_core.spec.schema import TableSchema
    from paimon_core.spec.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot
    from paimon_core.spec.system_fields import KIND_COLUMN
    from paimon_core.table import FileStoreTable, ReadBuilder, TableScan
    from paimon_core.threads import limit_threads, pool_threads
    from paimon_core.types import (
        BINARY_ROOTS,
        INT_RANGES,
        INTEGER_ROOTS,
        STRING_ROOTS,
        ArrayType,
        AtomicType,
        DataField,
        DataType,
        MapType,
        MultisetType,
        RowType,
        TypeRoot,
        from_arrow_type,
        parse_sql_type,
        to_arrow_schema,
        to_arrow_type,
    )
    from paimon_core.write.builder import BatchTableCommit, BatchWriteBuilder
    from paimon_core.write.dynamic_bucket import AssignerChannel, channel_ids
    from paimon_core.write.input import conform_column
    from paimon_core.write.table_write import TableWrite

_LAZY: dict[str, str] = {
    "bucket_ids": "paimon_core.bucket",
    "FileSystemCatalog": "paimon_core.catalog",
    "CommitOptions": "paimon_core.commit.options",
    "CommitStep": "paimon_core.commit.steps",
    "TableCommit": "paimon_core.commit.table_commit",
    "CommitMessage": "paimon_core.commit_message",
    "BucketCompactor": "paimon_core.compact",
    "CompactExecutor": "paimon_core.compact",
    "CompactOptions": "paimon_core.compact",
    "CompactSource": "paimon_core.compact",
    "LocalExecutor": "paimon_core.compact",
    "compact_bucket": "paimon_core.compact",
    "compact_table": "paimon_core.compact",
    "compact_with_retries": "paimon_core.compact",
    "live_bucket_files": "paimon_core.compact",
    "DEFAULT_MAX_ATTEMPTS": "paimon_core.compact.manager",
    "BucketWork": "paimon_core.compact.manager",
    "list_buckets": "paimon_core.compact.manager",
    "new_compactor": "paimon_core.compact.manager",
    "pick_buckets": "paimon_core.compact.manager",
    "plan_compaction": "paimon_core.compact.manager",
    "CompactStrategy": "paimon_core.compact.options",
    "DEFAULT_COMPACT_STRATEGY": "paimon_core.compact.options",
    "is_full": "paimon_core.compact.options",
    "Consumer": "paimon_core.consumer",
    "ConsumerManager": "paimon_core.consumer",
    "BulkDelete": "paimon_core.expire",
    "ExpireSnapshots": "paimon_core.expire",
    "ExpireConfig": "paimon_core.expire_config",
    "ExpireResult": "paimon_core.expire_config",
    "FsckReport": "paimon_core.fsck",
    "snapshot_listings": "paimon_core.manifest_io",
    "RollbackResult": "paimon_core.rollback",
    "limit_threads": "paimon_core.threads",
    "pool_threads": "paimon_core.threads",
    "Identifier": "paimon_core.identifier",
    "InspectTable": "paimon_core.inspect",
    "sorted_runs": "paimon_core.inspect",
    "split_system_table": "paimon_core.inspect",
    "FileIO": "paimon_core.io.file_io",
    "join": "paimon_core.io.file_io",
    "TableLayout": "paimon_core.layout",
    "CoreOptions": "paimon_core.options",
    "parse_memory_size": "paimon_core.options",
    "OrphanResult": "paimon_core.orphans",
    "remove_orphan_files": "paimon_core.orphans",
    "deduplicate": "paimon_core.read.merge",
    "read_stream_plan": "paimon_core.read.stream",
    "TableRead": "paimon_core.read.table_read",
    "check_range": "paimon_core.scan.incremental",
    "resolve_timestamp_range": "paimon_core.scan.incremental",
    "ScanPlanner": "paimon_core.scan.planner",
    "text_timestamp_nanos": "paimon_core.scan.predicate_literal",
    "And": "paimon_core.scan.predicate",
    "Leaf": "paimon_core.scan.predicate",
    "Op": "paimon_core.scan.predicate",
    "Or": "paimon_core.scan.predicate",
    "Predicate": "paimon_core.scan.predicate",
    "and_": "paimon_core.scan.predicate",
    "bind": "paimon_core.scan.predicate",
    "equal": "paimon_core.scan.predicate",
    "greater_or_equal": "paimon_core.scan.predicate",
    "greater_than": "paimon_core.scan.predicate",
    "is_in": "paimon_core.scan.predicate",
    "is_not_in": "paimon_core.scan.predicate",
    "is_not_null": "paimon_core.scan.predicate",
    "is_null": "paimon_core.scan.predicate",
    "less_or_equal": "paimon_core.scan.predicate",
    "less_than": "paimon_core.scan.predicate",
    "not_equal": "paimon_core.scan.predicate",
    "or_": "paimon_core.scan.predicate",
    "parse_filter": "paimon_core.scan.predicate",
    "parse_filters": "paimon_core.scan.predicate",
    "starts_with": "paimon_core.scan.predicate",
    "DataSplit": "paimon_core.scan.split",
    "Plan": "paimon_core.scan.split",
    "StreamPlan": "paimon_core.scan.streaming",
    "StreamTableScan": "paimon_core.scan.streaming",
    "Schema": "paimon_core.schema_builder",
    "AddColumn": "paimon_core.schema_change",
    "DropColumn": "paimon_core.schema_change",
    "Move": "paimon_core.schema_change",
    "MoveType": "paimon_core.schema_change",
    "RemoveOption": "paimon_core.schema_change",
    "RenameColumn": "paimon_core.schema_change",
    "SchemaChange": "paimon_core.schema_change",
    "SetOption": "paimon_core.schema_change",
    "UpdateColumnComment": "paimon_core.schema_change",
    "UpdateColumnNullability": "paimon_core.schema_change",
    "UpdateColumnPosition": "paimon_core.schema_change",
    "UpdateColumnType": "paimon_core.schema_change",
    "UpdateComment": "paimon_core.schema_change",
    "live_files": "paimon_core.spec.file_entries",
    "DataFileMeta": "paimon_core.spec.manifest",
    "FileKind": "paimon_core.spec.manifest",
    "ManifestEntry": "paimon_core.spec.manifest",
    "ChangelogProducer": "paimon_core.spec.option_enums",
    "MergeEngine": "paimon_core.spec.option_enums",
    "StartupMode": "paimon_core.spec.option_enums",
    "decode_partition": "paimon_core.spec.partition",
    "RowKind": "paimon_core.spec.row_kind",
    "arrow_short_retract_mask": "paimon_core.spec.row_kind",
    "TableSchema": "paimon_core.spec.schema",
    "BATCH_COMMIT_IDENTIFIER": "paimon_core.spec.snapshot",
    "CommitKind": "paimon_core.spec.snapshot",
    "Snapshot": "paimon_core.spec.snapshot",
    "KIND_COLUMN": "paimon_core.spec.system_fields",
    "FileStoreTable": "paimon_core.table",
    "ReadBuilder": "paimon_core.table",
    "TableScan": "paimon_core.table",
    "BINARY_ROOTS": "paimon_core.types",
    "INT_RANGES": "paimon_core.types",
    "INTEGER_ROOTS": "paimon_core.types",
    "STRING_ROOTS": "paimon_core.types",
    "ArrayType": "paimon_core.types",
    "AtomicType": "paimon_core.types",
    "DataField": "paimon_core.types",
    "DataType": "paimon_core.types",
    "MapType": "paimon_core.types",
    "MultisetType": "paimon_core.types",
    "RowType": "paimon_core.types",
    "TypeRoot": "paimon_core.types",
    "from_arrow_type": "paimon_core.types",
    "parse_sql_type": "paimon_core.types",
    "to_arrow_schema": "paimon_core.types",
    "to_arrow_type": "paimon_core.types",
    "BatchTableCommit": "paimon_core.write.builder",
    "BatchWriteBuilder": "paimon_core.write.builder",
    "AssignerChannel": "paimon_core.write.dynamic_bucket",
    "channel_ids": "paimon_core.write.dynamic_bucket",
    "conform_column": "paimon_core.write.input",
    "TableWrite": "paimon_core.write.table_write",
}


def __getattr__(name: str) -> Any:
    """Import a public name (or a submodule, e.g. ``paimon_core.fsck``) on first access."""
    module = _LAZY.get(name)
    if module is None:
        try:
            value: Any = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    else:
        value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "BATCH_COMMIT_IDENTIFIER",
    "BINARY_ROOTS",
    "DEFAULT_COMPACT_STRATEGY",
    "DEFAULT_MAX_ATTEMPTS",
    "INTEGER_ROOTS",
    "INT_RANGES",
    "KIND_COLUMN",
    "STRING_ROOTS",
    "AddColumn",
    "And",
    "ArrayType",
    "AssignerChannel",
    "AtomicType",
    "BatchTableCommit",
    "BatchWriteBuilder",
    "BucketCompactor",
    "BucketWork",
    "BulkDelete",
    "ChangelogProducer",
    "CommitConflictError",
    "CommitKind",
    "CommitMessage",
    "CommitOptions",
    "CommitStateUnknownError",
    "CommitStep",
    "CompactExecutor",
    "CompactOptions",
    "CompactSource",
    "CompactStrategy",
    "ConfigError",
    "Consumer",
    "ConsumerManager",
    "CoreOptions",
    "CorruptMetadataError",
    "DataField",
    "DataFileMeta",
    "DataSplit",
    "DataType",
    "DatabaseAlreadyExistError",
    "DatabaseNotEmptyError",
    "DatabaseNotExistError",
    "DropColumn",
    "ExpireConfig",
    "ExpireResult",
    "ExpireSnapshots",
    "FileIO",
    "FileKind",
    "FileNotFoundInTableError",
    "FileStoreTable",
    "FileSystemCatalog",
    "FilterError",
    "FsckReport",
    "Identifier",
    "ImmutableOptionError",
    "InspectTable",
    "InvalidIdentifierError",
    "Leaf",
    "LocalExecutor",
    "ManifestEntry",
    "MapType",
    "MergeEngine",
    "Move",
    "MoveType",
    "MultisetType",
    "NotAWarehouseError",
    "NotFoundError",
    "Op",
    "Or",
    "OrphanResult",
    "PaimonError",
    "Plan",
    "Predicate",
    "ReadBuilder",
    "RemoveOption",
    "RenameColumn",
    "RollbackResult",
    "RowKind",
    "RowType",
    "ScanPlanner",
    "Schema",
    "SchemaChange",
    "SchemaError",
    "SetOption",
    "Snapshot",
    "SnapshotExpiredError",
    "SnapshotNotExistError",
    "StartupMode",
    "StorageError",
    "StreamPlan",
    "StreamTableScan",
    "TableAlreadyExistError",
    "TableCommit",
    "TableLayout",
    "TableNotExistError",
    "TableRead",
    "TableScan",
    "TableSchema",
    "TableWrite",
    "TagNotExistError",
    "TypeRoot",
    "UnsupportedError",
    "UpdateColumnComment",
    "UpdateColumnNullability",
    "UpdateColumnPosition",
    "UpdateColumnType",
    "UpdateComment",
    "WarehouseNotExistError",
    "and_",
    "arrow_short_retract_mask",
    "bind",
    "bucket_ids",
    "channel_ids",
    "check_range",
    "compact_bucket",
    "compact_table",
    "compact_with_retries",
    "conform_column",
    "decode_partition",
    "deduplicate",
    "equal",
    "from_arrow_type",
    "greater_or_equal",
    "greater_than",
    "is_full",
    "is_in",
    "is_not_in",
    "is_not_null",
    "is_null",
    "join",
    "less_or_equal",
    "less_than",
    "limit_threads",
    "list_buckets",
    "live_bucket_files",
    "live_files",
    "new_compactor",
    "not_equal",
    "or_",
    "parse_filter",
    "parse_filters",
    "parse_memory_size",
    "parse_sql_type",
    "pick_buckets",
    "plan_compaction",
    "pool_threads",
    "read_stream_plan",
    "remove_orphan_files",
    "resolve_timestamp_range",
    "snapshot_listings",
    "sorted_runs",
    "split_system_table",
    "starts_with",
    "text_timestamp_nanos",
    "to_arrow_schema",
    "to_arrow_type",
]
