"""Where everything of one table lives: directories, partition and bucket paths, file names.

Mirrors Java's ``org.apache.paimon.utils.FileStorePathFactory`` (pypaimon
``utils/file_store_path_factory.py``; pyiceberg's ``LocationProvider`` plays the same part):
one object owns every path of a table, so no module spells ``bucket-N`` or ``dt=.../``
itself. It also owns the partition decoding and matching that go with those paths.

Layout of a table directory (Paimon 0.9)::

    <table>/snapshot/snapshot-<id>, EARLIEST, LATEST
    <table>/schema/schema-<id>
    <table>/manifest/manifest-..., manifest-list-..., index-manifest-...
    <table>/index/<index file>
    <table>/statistics/<statistics file>
    <table>/tag/tag-<name>
    <table>/consumer/consumer-<id>
    <table>/changelog/changelog-<id>          (decoupled changelog lifecycle)
    <table>/branch/branch-<name>/...
    <table>/[k1=v1/k2=v2/]bucket-<N>/data-<uuid>-<n>.<format>, changelog-<uuid>-<n>.<format>

Pure: builds strings, never touches storage. :class:`TableContext` is one schema of a table
resolved once (options, layout, bucket mode), which the table hands to its collaborators.

Example:
    >>> layout = TableLayout.of("/wh/db.db/t", schema)                   # doctest: +SKIP
    >>> layout.bucket_dir(partition_bytes, 3)                            # doctest: +SKIP
    '/wh/db.db/t/dt=2024-01-01/bucket-3'
"""

from __future__ import annotations

import itertools
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from paimon_core.errors import SchemaError
from paimon_core.io.file_io import join
from paimon_core.options import CoreOptions
from paimon_core.scan.predicate_literal import literal_from_text
from paimon_core.scan.predicate_model import (
    Predicate,
    and_,
    equal,
    evaluate_row,
    is_null,
    or_,
)
from paimon_core.spec.option_enums import BucketMode
from paimon_core.spec.partition import DEFAULT_PARTITION_NAME, decode_partition, partition_path
from paimon_core.spec.schema import TableSchema
from paimon_core.types import DataField, DataType

__all__ = [
    "BRANCH_DIR",
    "BUCKET_DIR_PREFIX",
    "CHANGELOG_DIR",
    "CHANGELOG_FILE_PREFIX",
    "CHANGELOG_PREFIX",
    "CONSUMER_DIR",
    "DATA_FILE_PREFIX",
    "INDEX_DIR",
    "INDEX_FILE_PREFIX",
    "MANIFEST_DIR",
    "POSTPONE_BUCKET",
    "SCHEMA_DIR",
    "SNAPSHOT_DIR",
    "STATISTICS_DIR",
    "TAG_DIR",
    "DataFilePathFactory",
    "TableContext",
    "TableLayout",
    "bucket_dir_name",
]

BUCKET_DIR_PREFIX = "bucket-"
#: the bucket number of ``bucket = -2`` tables' postponed files (``bucket-postpone/``)
POSTPONE_BUCKET = -2

SNAPSHOT_DIR = "snapshot"
SCHEMA_DIR = "schema"
MANIFEST_DIR = "manifest"
INDEX_DIR = "index"
INDEX_FILE_PREFIX = "index-"
STATISTICS_DIR = "statistics"
TAG_DIR = "tag"
CONSUMER_DIR = "consumer"
CHANGELOG_DIR = "changelog"
BRANCH_DIR = "branch"
#: long-lived changelogs ``changelog/changelog-<id>`` (``ChangelogManager.CHANGELOG_PREFIX``)
CHANGELOG_PREFIX = "changelog-"
#: data and changelog file names (defaults of ``data-file.prefix`` / ``changelog-file.prefix``)
DATA_FILE_PREFIX = "data-"
CHANGELOG_FILE_PREFIX = "changelog-"


def bucket_dir_name(bucket: int) -> str:
    """``bucket-<N>``, or ``bucket-postpone`` for the postponed bucket ``-2``
    (``FileStorePathFactory.bucketPath``)."""
    return f"{BUCKET_DIR_PREFIX}postpone" if bucket == POSTPONE_BUCKET else (
        f"{BUCKET_DIR_PREFIX}{bucket}")


class DataFilePathFactory:
    """Unique file names for one writer (``DataFilePathFactory``): one random uuid, one
    thread-safe counter shared by data and changelog files."""

    def __init__(self, file_format: str = "parquet") -> None:
        self.uuid = str(uuid.uuid4())
        self.file_format = file_format
        self._counter = itertools.count()
        self._lock = threading.Lock()

    def _next(self) -> int:
        with self._lock:
            return next(self._counter)

    def new_data_file_name(self) -> str:
        return f"{DATA_FILE_PREFIX}{self.uuid}-{self._next()}.{self.file_format}"

    def new_changelog_file_name(self) -> str:
        return f"{CHANGELOG_FILE_PREFIX}{self.uuid}-{self._next()}.{self.file_format}"

    def new_index_file_name(self) -> str:
        """A hash index file in ``<table>/index/`` (``indexFileFactory``: ``index-<uuid>-<n>``)."""
        return f"{INDEX_FILE_PREFIX}{self.uuid}-{self._next()}"


@dataclass(frozen=True)
class TableLayout:
    """Every path of one table (``FileStorePathFactory``), plus partition decoding.

    Args:
        table_path: the table directory.
        partition_keys: the partition columns, in order.
        partition_types: their types.
        default_partition_name: ``partition.default-name`` (null / blank values).
        fields: the table's fields (partition matchers evaluate predicates over them).
        file_format: ``file.format`` (the extension of new data files).
    """

    table_path: str
    partition_keys: tuple[str, ...] = ()
    partition_types: tuple[DataType, ...] = ()
    default_partition_name: str = DEFAULT_PARTITION_NAME
    fields: tuple[DataField, ...] = field(default=(), compare=False)
    file_format: str = "parquet"

    @classmethod
    def of(cls, table_path: str, schema: TableSchema,
           options: CoreOptions | None = None) -> TableLayout:
        """The layout of the table at ``table_path`` with ``schema`` (``options``: its
        parsed options, when the caller has them)."""
        keys = tuple(schema.partition_keys)
        options = CoreOptions(schema.options) if options is None else options
        return cls(
            table_path=table_path,
            partition_keys=keys,
            partition_types=tuple(schema.field(k).type for k in keys),
            default_partition_name=options.partition_default_name,
            fields=tuple(schema.fields),
            file_format=schema.file_format,
        )

    # ---- metadata directories
    @property
    def snapshot_dir(self) -> str:
        return join(self.table_path, SNAPSHOT_DIR)

    @property
    def schema_dir(self) -> str:
        return join(self.table_path, SCHEMA_DIR)

    @property
    def manifest_dir(self) -> str:
        return join(self.table_path, MANIFEST_DIR)

    @property
    def index_dir(self) -> str:
        return join(self.table_path, INDEX_DIR)

    @property
    def statistics_dir(self) -> str:
        return join(self.table_path, STATISTICS_DIR)

    @property
    def tag_dir(self) -> str:
        return join(self.table_path, TAG_DIR)

    @property
    def consumer_dir(self) -> str:
        return join(self.table_path, CONSUMER_DIR)

    @property
    def changelog_dir(self) -> str:
        return join(self.table_path, CHANGELOG_DIR)

    @property
    def branch_dir(self) -> str:
        return join(self.table_path, BRANCH_DIR)

    def index_file(self, name: str) -> str:
        """An index file (deletion vectors, hash index) by its name in an index manifest."""
        return join(self.index_dir, name)

    def changelog_file(self, snapshot_id: int) -> str:
        """The long-lived changelog of a snapshot (decoupled changelog lifecycle)."""
        return join(self.changelog_dir, f"{CHANGELOG_PREFIX}{snapshot_id}")

    # ---- partitions
    def decode_partition(self, partition: bytes) -> tuple[Any, ...]:
        """The values of a serialized partition (see
        :func:`paimon_core.spec.partition.decode_partition`)."""
        return decode_partition(partition, self.partition_types)

    def partition_path_of_values(self, values: Sequence[Any]) -> str:
        """``dt=2024-01-01/hr=3`` of partition values (``""`` when unpartitioned).

        Raises:
            SchemaError: a value does not fit its type.
            UnsupportedError: BINARY or nested partition columns.
        """
        return partition_path(list(values), list(self.partition_keys),
                              list(self.partition_types), self.default_partition_name)

    def partition_path(self, partition: bytes) -> str:
        """``dt=2024-01-01/hr=3`` of a serialized partition (``""`` when unpartitioned)."""
        return self.partition_path_of_values(self.decode_partition(partition))

    def partition_matcher(self, specs: Sequence[Mapping[str, Any]] | None
                          ) -> Callable[[bytes], bool]:
        """Matcher of serialized partitions against partition specs (any of them; a spec
        may be partial; a None value or the default partition name matches NULL; text values
        are parsed by the column's type). None matches everything.

        Raises:
            SchemaError: a spec names a column that is not a partition key.
        """
        if specs is None:
            return lambda _p: True
        keys = list(self.partition_keys)
        preds = self._spec_predicates(specs)
        fields = list(self.fields)
        cache: dict[bytes, bool] = {}

        def match(p: bytes) -> bool:
            hit = cache.get(p)
            if hit is None:
                row = dict(zip(keys, self.decode_partition(p)))
                hit = any(all(evaluate_row(pr, row, fields=fields) for pr in one)
                          for one in preds)
                cache[p] = hit
            return hit

        return match

    def partition_predicate(self, specs: Sequence[Mapping[str, Any]] | None
                            ) -> Predicate | None:
        """The predicate on the partition fields that :meth:`partition_matcher` evaluates
        (any spec; all fields of one): for pruning manifests by their partition stats.
        None: no pruning (no specs, an empty list, or a spec naming no field)."""
        if specs is None:
            return None
        preds = self._spec_predicates(specs)
        if not preds or any(not one for one in preds):
            return None
        return or_(*[and_(*one) for one in preds])

    def _spec_predicates(self, specs: Sequence[Mapping[str, Any]]) -> list[list[Predicate]]:
        keys = list(self.partition_keys)
        types = dict(zip(keys, self.partition_types))
        preds: list[list[Predicate]] = []
        for spec in specs:
            one: list[Predicate] = []
            for k, raw in spec.items():
                if k not in types:
                    raise SchemaError(f"{k!r} is not a partition key of {keys}")
                if raw is None or raw == self.default_partition_name:
                    one.append(is_null(k))
                else:
                    one.append(equal(k, literal_from_text(raw, types[k], k)
                                     if isinstance(raw, str) else raw))
            preds.append(one)
        return preds

    # ---- buckets and data files
    def bucket_dir_of_values(self, values: Sequence[Any], bucket: int) -> str:
        """The bucket directory of a partition given by its values."""
        ppath = self.partition_path_of_values(values)
        name = bucket_dir_name(bucket)
        return join(self.table_path, ppath, name) if ppath else join(self.table_path, name)

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        """``<table>/[k=v/...]bucket-<N>`` of a serialized partition."""
        return self.bucket_dir_of_values(self.decode_partition(partition), bucket)

    def new_file_names(self) -> DataFilePathFactory:
        """Names for the new data and changelog files of one writer."""
        return DataFilePathFactory(self.file_format)

    def data_file(self, partition: bytes, bucket: int, file_name: str) -> str:
        """The path of a data (or changelog) file stored in its bucket directory."""
        return join(self.bucket_dir(partition, bucket), file_name)


@dataclass(frozen=True)
class TableContext:
    """One schema of one table, resolved once: what a table's writers, compaction, scans and
    commits read instead of re-parsing the schema's option map (Java's ``FileStoreTable`` /
    ``AbstractFileStore`` hold the same: ``CoreOptions``, ``FileStorePathFactory``,
    ``bucketMode()``). A table makes one per schema (:attr:`FileStoreTable.context`); an ALTER
    makes a new one.

    Attributes:
        schema: the schema (a table copy's options laid over).
        options: its parsed options.
        layout: the table's paths.
        num_buckets: the ``bucket`` option (-1 dynamic/unaware, -2 postpone, else a count).
        bucket_mode: what ``num_buckets`` means for this table.
    """

    schema: TableSchema
    options: CoreOptions
    layout: TableLayout
    num_buckets: int
    bucket_mode: BucketMode

    @classmethod
    def of(cls, table_path: str, schema: TableSchema) -> TableContext:
        """The context of the table at ``table_path`` with ``schema``.

        Raises:
            SchemaError: a ``bucket`` option this table cannot have (naming it).
        """
        options = CoreOptions(schema.options)
        num_buckets = schema.num_buckets
        return cls(schema=schema, options=options,
                   layout=TableLayout.of(table_path, schema, options), num_buckets=num_buckets,
                   bucket_mode=schema.bucket_mode)

    @property
    def table_path(self) -> str:
        return self.layout.table_path

    @property
    def is_primary_key_table(self) -> bool:
        return bool(self.schema.primary_keys)
