"""The writers of the ``paimon`` Spark data source: ``df.write`` / SQL ``INSERT`` and
``writeStream``.

Batch (``df.write.format("paimon")``, ``INSERT INTO`` / ``INSERT OVERWRITE``): each task writes
its rows with its own ``TableWrite``, which routes every row to its (partition, bucket) writer,
and returns the commit messages of every bucket it touched; the driver commits the messages of
the successful tasks once (append, or overwrite when the save mode is ``overwrite``). A missing
table is created from the DataFrame's schema with the ``primary-key`` / ``partition`` / ``bucket``
write options and every other Paimon table option given (:func:`create_options`); an existing
table is written through a copy with them (:func:`for_this_job`: they act on this write only,
and one fixed for the table's life that differs is refused by name).

Primary-key tables: two tasks writing the same bucket would number their records from the
same sequence number (which of two rows of one key wins would be undefined), so each bucket's
rows must reach one task, as paimon-spark's writer shuffles them by bucket. A Python data
source cannot repartition its input, so ``df.write.format("paimon").save(...)`` does it before
Spark sees the write: :func:`bucketed_input` (called by the ``DataFrameWriter`` patch of
:func:`pipelines.spark_source.sql.register_sql`) shuffles the rows of a fixed-bucket primary-key
table by
Paimon's bucket (:func:`pipelines.writer.bucketed`, the one home of that shuffle, which
:func:`pipelines.writer.write_dataframe` uses too). SQL ``INSERT INTO`` / ``INSERT OVERWRITE``
give a Python data source no such hook (Spark 4.3 asks it for no required distribution): the
commit refuses, with :class:`~paimon_core.UnsupportedError` and before anything lands,
messages of two tasks for one bucket of a primary-key table, and the message says how to give
each bucket one task. Dynamic bucket primary-key tables (``bucket=-1``, Paimon's default):
``save`` routes the rows to assigner channels (Spark partition ``i`` runs channel ``i``, as
:func:`pipelines.writer.write_dataframe` does) and tells the writer so
(:data:`WRITE_ASSIGNER_TASKS`); a SQL ``INSERT`` or a stream into one is refused.

Streaming (``writeStream.format("paimon")``): every micro-batch is one commit whose identifier
is Spark's batch id, by a commit user that stays the same across restarts (``commit.user``, else
derived from the query's ``checkpointLocation``): a batch Spark replays after a crash between
the commit and its checkpoint is found committed and not applied again (as Paimon's streaming
sink does with its checkpoint id).
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from paimon_core import (
    CommitMessage,
    CommitOptions,
    CoreOptions,
    Schema,
    SchemaError,
    TableNotExistError,
    UnsupportedError,
)
from paimon_core.commit.users import new_commit_user, stable_commit_user
from paimon_core.spec.option_enums import BucketMode
from pipelines.cdc.routing import Routing, routing
from pipelines.config import CatalogSettings, TableHandle, parse_pairs
from pipelines.session import known_partitions
from pipelines.spark_source.sink_schema import WriteSchema, write_schema
from pipelines.spark_source.tables import effective_options
from pipelines.spark_types import paimon_type
from pipelines.writer import (
    BUCKET_COLUMN,
    bucketed,
    commit_messages,
    write_batches,
    write_routing,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

__all__ = [
    "COMMIT_IDENTIFIER",
    "COMMIT_USER",
    "OVERWRITE_PARTITION",
    "ROW_KIND_COLUMN",
    "ROW_KIND_DEFAULT_COLUMN",
    "WRITE_ASSIGNER_TASKS",
    "PaimonStreamWriter",
    "PaimonWriter",
    "Target",
    "bucketed_input",
    "create_options",
    "shared_buckets",
    "stream_commit_user",
]

#: write option keys of the data source (one home; the read options are the source's)
COMMIT_USER = "commit.user"
COMMIT_IDENTIFIER = "commit.identifier"
OVERWRITE_PARTITION = "overwrite.partition"
ROW_KIND_COLUMN = "row-kind-column"
#: set by :func:`bucketed_input` for a dynamic bucket primary-key table: the number of
#: assigner channels the rows were routed to (Spark partition ``i`` = channel ``i``)
WRITE_ASSIGNER_TASKS = "write.assigner-tasks"
#: the input column read as each row's kind when ``row-kind-column`` is not given
ROW_KIND_DEFAULT_COLUMN = "_row_kind"
#: Spark's streaming option (passed to the sink): the default commit user derives from it
CHECKPOINT_LOCATION = "checkpointlocation"
#: Paimon's per-field table options (``fields.<name>.aggregate-function`` ...)
FIELDS_PREFIX = "fields."

@dataclass(frozen=True)
class Target:
    """The table a write goes to (the source resolves it from its options)."""

    settings: CatalogSettings
    identifier: str


def _first(options: Mapping[str, str], key: str) -> str | None:
    v = options.get(key)
    return str(v).strip() if v is not None and str(v).strip() else None


def _split_names(raw: str | None) -> list[str]:
    return [c.strip() for c in raw.split(",") if c.strip()] if raw else []


def table_options(options: Mapping[str, str]) -> dict[str, str]:
    """The Paimon table options among a read's or a write's options: the keys of
    :class:`~paimon_core.CoreOptions` and Paimon's per-field options ``fields.<name>.*``."""
    keys = CoreOptions.declared_keys()
    return {str(k): str(v) for k, v in options.items()
            if k in keys or str(k).startswith(FIELDS_PREFIX)}


def create_options(options: Mapping[str, str]) -> tuple[list[str], list[str], dict[str, str]]:
    """(primary keys, partition keys, table options) of a table created by a write: the
    ``primary-key`` / ``partition`` options (comma-separated) and every Paimon table option
    (a key of :class:`~paimon_core.CoreOptions`) among the write options."""
    pks = _split_names(_first(options, CoreOptions.PRIMARY_KEY))
    parts = _split_names(_first(options, CoreOptions.PARTITION))
    keys = (CoreOptions.PRIMARY_KEY, CoreOptions.PARTITION)
    return pks, parts, {k: v for k, v in table_options(options).items() if k not in keys}


def for_this_job(handle: TableHandle, options: Mapping[str, str]) -> TableHandle:
    """``handle``'s table as one read or write sees it: every Paimon table option among the
    ``options`` (:func:`table_options`; ``primary-key`` / ``partition`` / ``bucket`` included)
    laid over the table's for this job only
    (:meth:`~paimon_core.FileStoreTable.copy`; nothing is stored). An option fixed for the
    table's life that differs raises :class:`~paimon_core.ImmutableOptionError`, a bad value
    :class:`SchemaError`, both naming the option."""
    overlay = table_options(options)
    if not overlay:
        return handle
    return TableHandle.of(handle.settings, handle.open().copy(overlay))


def _row_kind_column(options: Mapping[str, str], schema: StructType) -> str | None:
    given = _first(options, ROW_KIND_COLUMN)
    if given is not None:
        return given
    return ROW_KIND_DEFAULT_COLUMN if ROW_KIND_DEFAULT_COLUMN in schema.names else None


def _open_or_create(target: Target, options: Mapping[str, str], schema: StructType,
                    row_kind_column: str | None) -> TableHandle:
    """The table of a write, created from the DataFrame's ``schema`` when missing."""
    settings, ident = target.settings, target.identifier
    try:
        return TableHandle.load(settings, ident)
    except TableNotExistError:
        pass
    pks, parts, table_opts = create_options(options)
    cols = [f for f in schema.fields if f.name != row_kind_column]
    names = [f.name for f in cols]
    missing = [c for c in [*pks, *parts] if c not in names]
    if missing:
        raise SchemaError(f"cannot create {ident}: key column(s) {missing} are not in the "
                          f"DataFrame's columns {names}")
    columns = [(f.name, paimon_type(f.dataType, f.nullable and f.name not in pks))
               for f in cols]
    settings.catalog().create_table(
        ident, Schema.of(columns, partition_keys=parts, primary_keys=pks, options=table_opts),
        ignore_if_exists=True)
    return TableHandle.load(settings, ident)


def bucketed_input(df: DataFrame, options: Mapping[str, str], defaults: Mapping[str, str],
                   target: Callable[[Mapping[str, str]], Target]
                   ) -> tuple[DataFrame, dict[str, str]] | None:
    """``df`` shuffled for a primary-key table, and the write options to add, when the write
    ``options`` (``defaults`` = the session's ``spark.paimon.*``) go to one (created here
    from ``df``'s schema when missing, as the writer would); else None (written as it is).
    Fixed buckets (when ``df`` has more than one partition, or is a stream: each micro-batch
    may): each bucket's rows in one Spark partition. Dynamic bucket (``bucket=-1``): each
    assigner channel's rows in Spark partition = channel, and :data:`WRITE_ASSIGNER_TASKS`
    tells the writer the channels. ``target`` resolves the table from the options (the source's)."""
    opts = effective_options(options, None, defaults)
    if not (opts.get("table") or opts.get("path")) or not opts.get("warehouse"):
        return None  # the writer raises the typed error
    handle = for_this_job(
        _open_or_create(target(opts), opts, df.schema, _row_kind_column(opts, df.schema)), opts)
    schema = handle.schema
    if not schema.primary_keys:
        return None
    route = write_routing(df, handle)
    if route is not None:
        return (bucketed(df, handle).drop(BUCKET_COLUMN),
                {WRITE_ASSIGNER_TASKS: str(route.tasks)})
    if schema.bucket_mode is not BucketMode.HASH_FIXED or (
            not df.isStreaming and known_partitions(df) == 1):
        return None
    return bucketed(df, handle).drop(BUCKET_COLUMN), {}


@dataclass
class PaimonCommitMessage(WriterCommitMessage):
    """What one write task hands to the driver: its pickled ``CommitMessage`` list."""

    payload: bytes
    rows: int
    task: int = 0


def _unpickle(messages: Sequence[WriterCommitMessage | None]) -> list[CommitMessage]:
    out: list[CommitMessage] = []
    for m in messages:
        if isinstance(m, PaimonCommitMessage):
            out.extend(pickle.loads(m.payload))
    return out


def shared_buckets(messages: Sequence[WriterCommitMessage | None]
                   ) -> list[tuple[bytes, int]]:
    """The (partition, bucket) pairs that more than one task wrote new files into."""
    owner: dict[tuple[bytes, int], int] = {}
    shared: list[tuple[bytes, int]] = []
    for i, m in enumerate(messages):
        if not isinstance(m, PaimonCommitMessage):
            continue
        for cm in pickle.loads(m.payload):
            if not cm.new_files:
                continue
            key = (cm.partition, cm.bucket)
            if owner.setdefault(key, i) != i and key not in shared:
                shared.append(key)
    return shared


def _task_id() -> int:
    from pyspark import TaskContext

    tc = TaskContext.get()
    return tc.partitionId() if tc is not None else 0


class _Writes:
    """What the batch and the streaming writer share: the table (created if missing; the
    Paimon table options of ``table_options``, default ``options``, overlaid for this write:
    :func:`for_this_job`), the commit user, the row kind column, and one task's write."""

    def __init__(self, target: Target, options: Mapping[str, str], schema: StructType,
                 overwrite: bool, commit_user: str,
                 table_options: Mapping[str, str] | None = None) -> None:
        self.overwrite = overwrite
        self.row_kind_column = _row_kind_column(options, schema)
        handle = _open_or_create(target, options, schema, self.row_kind_column)
        rk = self.row_kind_column
        #: the schema the rows go into: every input column written or refused here
        self.columns: WriteSchema = write_schema(handle, schema, options,
                                                 ignore=[rk] if rk else [])
        # the schema is evolved (and published) as stored; the overlay is this write's only
        self.handle = for_this_job(self.columns.handle,
                                     options if table_options is None else table_options)
        self.commit_user = commit_user
        self.route: Routing | None = None
        if self.handle.schema.bucket_mode in (BucketMode.HASH_DYNAMIC,
                                              BucketMode.CROSS_PARTITION):
            tasks = _int(options, WRITE_ASSIGNER_TASKS)
            if tasks is None:
                raise UnsupportedError(
                    f"this write cannot go to {self.handle.identifier}, a dynamic bucket "
                    "primary-key table (bucket=-1): its rows were not routed to assigner "
                    "tasks (a parameterized SQL INSERT, Spark Connect, or a session without "
                    "pipelines.spark_source.sql.register_sql); "
                    "df.write.format('paimon').save(...), "
                    "writeStream, spark.sql's INSERT and pipelines.writer.write_dataframe "
                    "route them, or give the table a fixed 'bucket' count")
            self.route = routing(self.handle.schema, tasks)
            if self.route.tasks != tasks:
                raise SchemaError(f"option {WRITE_ASSIGNER_TASKS}={tasks} does not match the "
                                  f"table's {self.route.tasks} assigner channels")

    def write_task(self, iterator: Iterator[pa.RecordBatch]) -> PaimonCommitMessage:
        channel = None if self.route is None else self.route.channel(_task_id())
        messages, rows = write_batches(self.handle, self.commit_user,
                                       self.columns.fill(iterator),
                                       row_kind_column=self.row_kind_column,
                                       assigner_channel=channel)
        return PaimonCommitMessage(pickle.dumps(messages), rows, _task_id())

    def check_buckets(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        """Refuse (deleting the files) two tasks' files in one bucket of a primary-key table."""
        if not self.handle.schema.primary_keys:
            return
        shared = shared_buckets(messages)
        if shared:
            self.abort_all(messages)
            buckets = ", ".join(f"bucket {b}" for _, b in shared[:5])
            raise UnsupportedError(
                f"{len(shared)} bucket(s) of primary-key table {self.handle.identifier} "
                f"({buckets}) got rows from more than one Spark task: their records would "
                "share sequence numbers. df.write.format('paimon').save(...), writeStream "
                "and spark.sql's INSERT (literal text, classic session) shuffle by bucket "
                "themselves; this write came without (a parameterized INSERT, Spark Connect, "
                "or a session without pipelines.spark_source.sql.register_sql): write from a "
                "DataFrame, "
                "or from a single partition (SELECT /*+ COALESCE(1) */ ...)")

    def commit(self, messages: Sequence[WriterCommitMessage | None], *,
               commit_identifier: int | None,
               overwrite_partition: dict[str, str] | None = None,
               options: CommitOptions | None = None) -> None:
        """Commit the tasks' files once: after the bucket check and, when the write evolved
        the schema, after publishing it (a conflict there deletes the files)."""
        self.check_buckets(messages)
        try:
            self.columns.publish()
        except BaseException:
            self.abort_all(messages)
            raise
        commit_messages(self.handle, self.commit_user, _unpickle(messages),
                        commit_identifier=commit_identifier, overwrite=self.overwrite,
                        overwrite_partition=overwrite_partition, options=options)

    def abort_all(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        msgs = _unpickle(messages)
        if msgs:
            self.handle.open().new_commit(self.commit_user).abort(msgs)


class PaimonWriter(DataSourceArrowWriter):
    """``df.write.format("paimon")`` and SQL ``INSERT``: see the module docs;
    ``table_options``: the options whose Paimon table options apply to this write (default
    ``options``; the source leaves out a catalog table's CREATE options)."""

    def __init__(self, target: Target, options: Mapping[str, str], schema: StructType,
                 overwrite: bool, table_options: Mapping[str, str] | None = None) -> None:
        self.writes = _Writes(target, options, schema, overwrite,
                              _first(options, COMMIT_USER) or new_commit_user("spark"),
                              table_options)
        self.commit_identifier = _int(options, COMMIT_IDENTIFIER)
        raw = _first(options, OVERWRITE_PARTITION)
        self.overwrite_partition: dict[str, str] | None = None
        if raw is not None:
            self.overwrite_partition = parse_pairs(raw.replace(",", ";"), what="partition")
        dyn = _first(options, CoreOptions.DYNAMIC_PARTITION_OVERWRITE)
        self.dynamic: bool | None = None if dyn is None else dyn.lower() == "true"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonCommitMessage:
        return self.writes.write_task(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self.writes.commit(messages, commit_identifier=self.commit_identifier,
                           overwrite_partition=self.overwrite_partition,
                           options=CommitOptions(dynamic_partition_overwrite=self.dynamic))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self.writes.abort_all(messages)


def _int(options: Mapping[str, str], key: str) -> int | None:
    raw = _first(options, key)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError as e:
        raise SchemaError(f"option {key}={raw!r} is not an integer") from e


def stream_commit_user(target: Target, options: Mapping[str, str]) -> str:
    """The commit user of a streaming query: ``commit.user``, else one derived from the
    table and the query's checkpoint location (stable across restarts of the query)."""
    given = _first(options, COMMIT_USER)
    if given is not None:
        return given
    checkpoint = _first(options, CHECKPOINT_LOCATION)
    if checkpoint is None:
        raise SchemaError(
            "writeStream.format('paimon') needs a stable commit user for exactly-once: set "
            "option 'checkpointLocation' (or 'commit.user')")
    digest = hashlib.sha256(f"{target.identifier}\0{checkpoint}".encode()).hexdigest()[:16]
    return stable_commit_user("spark-stream", digest)


class PaimonStreamWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("paimon")``: one commit per micro-batch, identifier = batch id
    (``table_options``: as :class:`PaimonWriter`'s)."""

    def __init__(self, target: Target, options: Mapping[str, str], schema: StructType,
                 overwrite: bool, table_options: Mapping[str, str] | None = None) -> None:
        self.writes = _Writes(target, options, schema, overwrite,
                              stream_commit_user(target, options), table_options)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonCommitMessage:
        return self.writes.write_task(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # an identifier the user already committed (a replayed batch) is not applied again
        self.writes.commit(messages, commit_identifier=int(batchId))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self.writes.abort_all(messages)
