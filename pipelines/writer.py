"""Writing a DataFrame into a Paimon table: bucketed tasks, one commit on the driver.

:func:`write_dataframe` is Paimon's two-phase commit spread over Spark:

1. the driver opens the table once and pins its schema (:class:`~pipelines.config.TableHandle`,
   whose table every driver step reuses); it asks once whether the :class:`WriteSpec`'s
   identifier was already committed by its user, and then nothing is written (exactly-once
   re-runs);
2. an Arrow UDF computes every row's bucket with ``paimon_core.bucket`` (Paimon's bucket hash
   is not Spark's ``hash()``), and ``repartitionById`` sends each bucket to exactly one task,
   so one ``TableWrite`` owns a (partition, bucket) and its sequence numbers; dynamic bucket
   primary-key tables (``bucket=-1``) are routed by assigner channel instead
   (:mod:`pipelines.cdc.routing`: each task runs one of Paimon's bucket assigners over its
   slice of the key hashes, loading the table's hash index);
3. each task writes its rows with its own ``TableWrite`` and returns its ``CommitMessage``s;
4. the driver commits the messages of the successful tasks in one snapshot (``commit`` or
   ``overwrite``), and deletes the files of a failed commit.

Task safety: data file names carry a fresh uuid per ``TableWrite`` (so per task attempt); a
retried or speculative attempt never overwrites another's files, and only the messages of the
attempt Spark accepted reach the commit. A failing task deletes what it wrote; files of a
killed attempt are orphans that ``remove_orphan_files`` reclaims.
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from paimon_core import (
    CommitMessage,
    CommitOptions,
    CommitStateUnknownError,
    PaimonError,
    SchemaError,
)
from paimon_core.commit.users import WriteSpec
from paimon_core.integration import (
    BATCH_COMMIT_IDENTIFIER,
    AssignerChannel,
    AtomicType,
    TypeRoot,
    bucket_ids,
    conform_column,
    deduplicate,
)
from paimon_core.spec.option_enums import BucketMode
from pipelines.cdc.routing import Routing, routing
from pipelines.config import CatalogSettings, TableHandle
from pipelines.session import default_parallelism

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "BUCKET_COLUMN",
    "WriteResult",
    "WriteSpec",
    "align_timestamps",
    "bucket_udf",
    "bucketed",
    "commit_messages",
    "run_write_tasks",
    "with_bucket_column",
    "write_batches",
    "write_dataframe",
]

BUCKET_COLUMN = "_paimon_bucket"
#: fault injection (tests): called in the task after each batch with
#: (partition id, attempt number, batches written so far)
FaultHook = Callable[[int, int, int], None]


@dataclass(frozen=True)
class WriteResult:
    """The outcome of :func:`write_dataframe`.

    Attributes:
        table: ``db.name``.
        snapshot_ids: snapshots created (or found already committed) by the commit.
        rows: rows handed to the table writers (after ``dedup_order`` deduplication).
        files: data and changelog files committed.
        commit_user: the commit user.
        commit_identifier: the identifier committed (None = batch identifier).
        skipped: the identifier had already been committed: nothing was written.
    """

    table: str
    snapshot_ids: tuple[int, ...]
    rows: int
    files: int
    commit_user: str
    commit_identifier: int | None
    skipped: bool = False


# ---------------------------------------------------------------------------- bucketing


def bucket_udf(handle: TableHandle, *, lenient: bool = False) -> Any:
    """An Arrow UDF ``(bucket key columns...) -> int``: Paimon's bucket of each row, computed
    with ``paimon_core.bucket`` (only the key columns travel to Python). ``lenient``: NULL keys
    are hashed too instead of raising (for rows that are routed but not written, such as
    rejected CDC events)."""
    from pyspark.sql.pandas.functions import arrow_udf
    from pyspark.sql.types import IntegerType

    schema = handle.schema
    keys = list(schema.bucket_keys)
    types = [schema.field(k).type for k in keys]
    if lenient:
        types = [t.with_nullable(True) for t in types]
    n = schema.num_buckets

    def bucket(*cols: pa.Array) -> pa.Array:
        conformed = [conform_column(c, t, k) for c, t, k in zip(cols, types, keys)]
        return pa.array(bucket_ids(conformed, types, n), pa.int32())

    make: Any = arrow_udf  # the stubs demand functionType, which Spark 4.1 deprecates
    return make(bucket, IntegerType())  # type hints Arrays -> Array: a scalar Arrow UDF


def with_bucket_column(df: DataFrame, handle: TableHandle) -> DataFrame:
    """``df`` plus an ``int`` column ``_paimon_bucket``: each row's Paimon bucket (fixed-bucket
    tables only), computed with ``paimon_core.bucket`` in an Arrow UDF.

    Raises:
        SchemaError: the table has no fixed bucket count, or ``df`` lacks a bucket key column.
    """
    n = handle.schema.num_buckets
    if n <= 0:
        raise SchemaError(f"table {handle.identifier} has bucket={n}: no fixed buckets")
    keys = list(handle.schema.bucket_keys)
    missing = [k for k in keys if k not in df.columns]
    if missing:
        raise SchemaError(f"the DataFrame lacks bucket key column(s) {missing}")
    return df.withColumn(BUCKET_COLUMN, bucket_udf(handle)(*keys))


def bucketed(df: DataFrame, handle: TableHandle) -> DataFrame:
    """Rows of each bucket in exactly one Spark partition (partition id = bucket id) for
    fixed-bucket tables; for dynamic bucket primary-key tables, the rows of each assigner
    channel (partition id = channel, see :func:`write_routing`); unaware-bucket append
    tables are returned unchanged."""
    route = write_routing(df, handle)
    if route is not None:
        return with_channel_column(df, handle, route).repartitionById(route.tasks,
                                                                      BUCKET_COLUMN)
    if handle.schema.bucket_mode is not BucketMode.HASH_FIXED:
        return df
    return with_bucket_column(df, handle).repartitionById(handle.schema.num_buckets,
                                                          BUCKET_COLUMN)


def write_routing(df: DataFrame, handle: TableHandle) -> Routing | None:
    """The assigner channels of a dynamic bucket primary-key table's write tasks (None for
    other tables): ``dynamic-bucket.assigner-parallelism``, else the Spark parallelism."""
    if handle.schema.bucket_mode not in (BucketMode.HASH_DYNAMIC, BucketMode.CROSS_PARTITION):
        return None
    return routing(handle.schema, default_parallelism(df.sparkSession))


def with_channel_column(df: DataFrame, handle: TableHandle, route: Routing) -> DataFrame:
    """``df`` plus ``_paimon_bucket`` = each row's assigner channel (dynamic bucket tables),
    computed with ``paimon_core.channel_ids`` in an Arrow UDF."""
    from pyspark.sql.pandas.functions import arrow_udf
    from pyspark.sql.types import IntegerType

    schema = handle.schema
    names = route.key_columns(schema)
    missing = [c for c in names if c not in df.columns]
    if missing:
        raise SchemaError(f"the DataFrame lacks key column(s) {missing}")

    def channel(*cols: pa.Array) -> pa.Array:
        table = pa.table(dict(zip(names, cols)))
        return pa.array(route.task_ids(table, schema, BUCKET_COLUMN), pa.int32())

    make: Any = arrow_udf
    return df.withColumn(BUCKET_COLUMN, make(channel, IntegerType())(*names))


# ---------------------------------------------------------------------------- tasks


def write_batches(
    handle: TableHandle,
    commit_user: str,
    batches: Iterable[pa.RecordBatch],
    *,
    row_kind_column: str | None = None,
    dedup_order: Sequence[str] | None = None,
    fault_hook: FaultHook | None = None,
    overwrite: bool = False,
    assigner_channel: AssignerChannel | None = None,
) -> tuple[list[CommitMessage], int]:
    """Write batches with one ``TableWrite`` (runs inside a Spark task) and return its commit
    messages and the number of rows written (after deduplication). Columns that are not table
    columns (nor the row kind column) are ignored. With ``dedup_order`` (primary-key tables)
    the task first keeps, per primary key, only the row with the largest ``dedup_order``
    values (later rows win ties): every row of a key is in this task when the input is
    :func:`bucketed`. On any error the files written so far are deleted. ``overwrite``: the
    rows are for an INSERT OVERWRITE; ``assigner_channel``: this task's channel of a dynamic
    bucket table (see :class:`paimon_core.TableWrite`). The buckets of a fixed-bucket table's
    rows in a ``_paimon_bucket`` column (:func:`bucketed`, the CDC decode) are passed down
    to the writer, not hashed again.
    """
    table = handle.open()
    fixed = table.bucket_mode is BucketMode.HASH_FIXED

    def buckets(data: pa.Table | pa.RecordBatch) -> pa.Array | pa.ChunkedArray | None:
        return data.column(BUCKET_COLUMN) if fixed and BUCKET_COLUMN in data.schema.names \
            else None

    names = list(handle.schema.field_names)
    if row_kind_column is not None:
        names.append(row_kind_column)
    rows = 0
    part, attempt = _task_ids()
    with table.new_write(commit_user, overwrite=overwrite,
                         assigner_channel=assigner_channel) as w:
        try:
            if dedup_order:
                held: list[pa.RecordBatch] = []
                for i, batch in enumerate(batches, 1):
                    _check_columns(batch, [*names, *dedup_order], handle)
                    if batch.num_rows:
                        held.append(batch)
                    if fault_hook is not None:
                        fault_hook(part, attempt, i)
                if held:
                    data = pa.Table.from_batches(held)
                    data = deduplicate(data, list(handle.schema.primary_keys), list(dedup_order))
                    w.write_arrow(data.select(names), row_kind_column=row_kind_column,
                                  buckets=buckets(data))
                    rows = data.num_rows
            else:
                for i, batch in enumerate(batches, 1):
                    if batch.num_rows:
                        _check_columns(batch, names, handle)
                        w.write_arrow(batch.select(names), row_kind_column=row_kind_column,
                                      buckets=buckets(batch))
                        rows += batch.num_rows
                    if fault_hook is not None:
                        fault_hook(part, attempt, i)
            messages = w.prepare_commit()
        except BaseException:
            w.abort()
            raise
    return messages, rows


def _check_columns(batch: pa.RecordBatch, names: Sequence[str], handle: TableHandle) -> None:
    missing = [c for c in names if c not in batch.schema.names]
    if missing:
        raise SchemaError(f"input lacks column(s) {missing} of {handle.identifier}")


def _task_ids() -> tuple[int, int]:
    try:
        from pyspark import TaskContext
    except ImportError:  # pragma: no cover
        return 0, 0
    tc = TaskContext.get()
    return (tc.partitionId(), tc.attemptNumber()) if tc is not None else (0, 0)


def commit_messages(
    handle: TableHandle,
    commit_user: str,
    messages: Sequence[CommitMessage],
    *,
    commit_identifier: int | None = None,
    overwrite: bool = False,
    overwrite_partition: Mapping[str, Any] | None = None,
    options: CommitOptions | None = None,
    checked: bool = False,
) -> list[int]:
    """Commit task messages once, on the driver: one APPEND snapshot, or an OVERWRITE
    (``overwrite_partition`` a static spec, None / ``{}`` = the whole table;
    ``options.dynamic_partition_overwrite`` overrides the table's
    ``dynamic-partition-overwrite``: see
    :meth:`paimon_core.commit.table_commit.TableCommit.overwrite`). ``options``: snapshot
    properties and the other settings of the commit.

    A commit that fails (conflict, invalid message...) deletes the messages' files; a commit
    whose state is unknown keeps them. An identifier already committed by ``commit_user``
    applies nothing (the messages' files are deleted) and returns ``[]``; ``checked``: the
    caller asked that already, before writing (the commit itself still never applies an
    identifier twice: it then returns the snapshots found).
    """
    commit = handle.open().new_commit(commit_user, options=options)
    ident = BATCH_COMMIT_IDENTIFIER if commit_identifier is None else commit_identifier
    if commit_identifier is not None and not checked and not commit.filter_committed([ident]):
        commit.abort(messages)
        return []
    try:
        if overwrite:
            return commit.overwrite(messages, overwrite_partition, ident)
        return commit.commit(messages, ident)
    except CommitStateUnknownError:
        raise  # the snapshot may have landed: keep every file
    except BaseException:
        with contextlib.suppress(PaimonError):  # best effort: orphans are reclaimable
            commit.abort(messages)
        raise


# ---------------------------------------------------------------------------- DataFrame API


def align_timestamps(df: DataFrame, handle: TableHandle) -> DataFrame:
    """Cast Spark ``TIMESTAMP`` columns bound for ``TIMESTAMP`` (without time zone) table
    columns to ``TIMESTAMP_NTZ`` (the wall clock in the session time zone, as Spark's own
    INSERT does) and ``TIMESTAMP_NTZ`` columns bound for ``TIMESTAMP WITH LOCAL TIME ZONE`` to
    ``TIMESTAMP``. Every other value is checked by the writer exactly (nothing is rounded)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    cols = []
    changed = False
    for f in df.schema.fields:
        c = F.col(f.name)
        target = (handle.schema.field(f.name).type if f.name in handle.schema.field_names
                  else None)
        if isinstance(target, AtomicType):
            if target.root is TypeRoot.TIMESTAMP and isinstance(f.dataType, T.TimestampType):
                c, changed = c.cast(T.TimestampNTZType()), True
            elif (target.root is TypeRoot.TIMESTAMP_LTZ
                  and isinstance(f.dataType, T.TimestampNTZType)):
                c, changed = c.cast(T.TimestampType()), True
        cols.append(c.alias(f.name))
    return df.select(*cols) if changed else df



def write_dataframe(
    df: DataFrame,
    settings: CatalogSettings,
    identifier: str,
    *,
    mode: Literal["append", "overwrite"] = "append",
    overwrite_partition: Mapping[str, Any] | None = None,
    spec: WriteSpec | None = None,
    row_kind_column: str | None = None,
    dedup_order: Sequence[str] | None = None,
    fault_hook: FaultHook | None = None,
    handle: TableHandle | None = None,
    extra_messages: Sequence[CommitMessage] = (),
) -> WriteResult:
    """Write ``df`` into table ``identifier`` with one commit (see the module docs).

    Args:
        df: rows with (at least) every table column; other columns are ignored.
        settings: the warehouse.
        identifier: ``db.name`` (must exist).
        mode: ``append``, or ``overwrite`` (INSERT OVERWRITE).
        overwrite_partition: ``overwrite`` only: a static partition spec (None or ``{}`` =
            the whole table). With ``dynamic-partition-overwrite`` (Paimon's default) only the
            partitions present in ``df`` are replaced, within the spec.
        spec: what the write commits as, made by the caller: the pipeline's stable commit
            user, a monotonically increasing batch id (a re-run of a committed id writes
            nothing: exactly-once) and the commit's options (snapshot properties; for
            ``overwrite``, ``dynamic_partition_overwrite`` overrides the table's
            ``dynamic-partition-overwrite``: ``False`` = replace everything the spec matches,
            even by nothing). Default: a fresh ``spark-<uuid>`` user, a batch commit.
        row_kind_column: input column with each row's kind (``+I``/``-U``/``+U``/``-D``).
        dedup_order: primary-key tables: keep only the last row of every key by these
            columns (e.g. a source position), in the write tasks (no extra shuffle). Without
            it, two rows of one key in ``df`` are merged by the table (``sequence.field``,
            else the arrival order within the task, which Spark does not define).
        fault_hook: fault injection for tests (see ``FaultHook``).
        handle: the table ``identifier`` as the caller opened it (default: opened here).
        extra_messages: messages committed in the same snapshot as the rows (a
            copy-on-write's deleted files: :mod:`pipelines.rowlevel`).

    Returns:
        A :class:`WriteResult`.

    Raises:
        SchemaError: ``df`` lacks a table column; input that does not fit the schema.
        CommitConflictError / CommitStateUnknownError: from the commit.
    """
    if mode not in ("append", "overwrite"):
        raise ValueError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    if handle is None:
        handle = TableHandle.load(settings, identifier)  # the table, opened once for the job
    spec = spec or WriteSpec.new("spark")
    user, commit_identifier = spec.user, spec.identifier
    if commit_identifier is not None:  # asked once; commit_messages is told (checked=True)
        done = not handle.open().new_commit(user).filter_committed([commit_identifier])
        if done:
            return WriteResult(handle.identifier, (), 0, 0, user, commit_identifier, skipped=True)
    missing = [c for c in handle.schema.field_names if c not in df.columns]
    if row_kind_column is not None and row_kind_column not in df.columns:
        missing.append(row_kind_column)
    if missing:
        raise SchemaError(f"the DataFrame lacks column(s) {missing} of {handle.identifier}")
    keep = list(handle.schema.field_names)
    if row_kind_column is not None:
        keep.append(row_kind_column)
    if dedup_order and not handle.schema.primary_keys:
        raise SchemaError("dedup_order needs a primary-key table")
    keep += [c for c in (dedup_order or ()) if c not in keep]
    missing = [c for c in keep if c not in df.columns]
    if missing:
        raise SchemaError(f"the DataFrame lacks column(s) {missing}")
    prepared = bucketed(align_timestamps(df.select(*keep), handle), handle)
    messages, rows = run_write_tasks(prepared, handle, user, row_kind_column=row_kind_column,
                                     dedup_order=dedup_order, fault_hook=fault_hook,
                                     route=write_routing(df, handle),
                                     overwrite=mode == "overwrite")
    messages = [*messages, *extra_messages]
    ids = commit_messages(handle, user, messages, commit_identifier=commit_identifier,
                          overwrite=mode == "overwrite", overwrite_partition=overwrite_partition,
                          options=spec.options, checked=True)
    files = sum(len(m.new_files) + len(m.changelog_files) for m in messages)
    return WriteResult(handle.identifier, tuple(ids), rows, files, user, commit_identifier)


def run_write_tasks(
    df: DataFrame,
    handle: TableHandle,
    commit_user: str,
    *,
    row_kind_column: str | None = None,
    dedup_order: Sequence[str] | None = None,
    fault_hook: FaultHook | None = None,
    route: Routing | None = None,
    overwrite: bool = False,
) -> tuple[list[CommitMessage], int]:
    """Phase one on the executors: one ``TableWrite`` per Spark partition of ``df``; returns
    the commit messages of the successful task attempts and the row count. ``route``: the
    assigner channels of a dynamic bucket table (task ``i`` runs channel ``i``);
    ``overwrite``: rows of an INSERT OVERWRITE."""
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    out_schema = StructType([StructField("payload", BinaryType(), False),
                             StructField("rows", LongType(), False)])

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        channel = None if route is None else route.channel(_task_ids()[0])
        msgs, n = write_batches(handle, commit_user, batches, row_kind_column=row_kind_column,
                                dedup_order=dedup_order, fault_hook=fault_hook,
                                overwrite=overwrite, assigner_channel=channel)
        yield pa.RecordBatch.from_pydict(
            {"payload": [pickle.dumps(msgs)], "rows": [n]},
            schema=pa.schema([pa.field("payload", pa.binary(), False),
                              pa.field("rows", pa.int64(), False)]),
        )

    messages: list[CommitMessage] = []
    rows = 0
    for r in df.mapInArrow(task, out_schema).collect():
        messages.extend(pickle.loads(r["payload"]))
        rows += int(r["rows"])
    return messages, rows
