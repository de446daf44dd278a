"""CDC ingestion: change events -> a primary-key Paimon table, exactly once.

The events are Debezium's (``--format debezium-json``, the default, with or without the
``{"schema", "payload"}`` envelope; ``debezium-avro``, see below) or those of the other CDC
tools Paimon's Kafka sync reads (``canal-json``, ``maxwell-json``, ``ogg-json``,
``aws-dms-json``: :mod:`pipelines.cdc_formats` turns each into the Debezium envelope's rows;
their DDL / control events are counted as ``ddl`` and skipped). What follows is said of
Debezium's events; the formats' positions are in :mod:`pipelines.cdc_formats`.

Landing layout (local directory or S3 prefix, read through ``paimon_core``'s FileIO in the
Python workers)::

    <landing>/batch-000001/part-0.json ...   one directory per batch (or a file
    <landing>/batch-000002.jsonl              batch-<n>.json / .jsonl), any number of files

With ``--format debezium-avro`` the files are Avro container files of Debezium envelopes as
Kafka Connect's S3 sink writes them (``<landing>/batch-<n>/<topic>+<partition>+<offset>.avro``,
taken by partition, then start offset; or a file ``batch-<n>.avro``), decoded by
:mod:`pipelines.cdc_avro` into the same rows.

Each batch ``n`` is one commit with ``commit_identifier = n`` under a stable commit user
(default ``cdc-<db>.<table>``): batches already committed are skipped (a re-run of a batch, or
of the whole landing directory, applies every event exactly once). Per batch, one Spark job:

1. the files are decoded in line-aligned byte ranges of at most ``--max-partition-bytes``
   (default Spark's ``spark.sql.files.maxPartitionBytes``, 128 MB; :mod:`pipelines.cdc_ranges`:
   a line belongs to the range it starts in; the driver reads only a few KB at each boundary; a
   row's position within its file orders it exactly as its line number, which is computed only
   for the quarantined rows; Avro files are not split), each read with one ranged read and
   decoded apart, so a task holds one range, never a whole file (:mod:`pipelines.cdc_decode`:
   pyarrow's JSON reader, the event envelope, row kinds, exact typing, rejection reasons; the
   semantics of the Spark SQL reference :mod:`pipelines.cdc_events`;
   ``spark.default.parallelism`` tasks at most, each a contiguous run of ranges) and every row
   gets its bucket from paimon_core (rejected events ride along with NULL keys); the rows of
   each bucket leave the task as Arrow IPC blobs, one ``binary`` cell per (range, bucket), so
   that they cross the JVM and the shuffle as a few large values instead of row by row;
   ``repartitionById`` sends each bucket to one task;
2. each task counts its events per outcome, notes image keys the table lacks, writes its
   malformed events to ``<quarantine>/batch-<n>/part-<task>.jsonl`` (event, file, line,
   reason; for ``bad value for <col>`` the refused value's text in ``value``), keeps the
   last change of every key by source position and writes the rows;
3. on the driver: when the images carried new columns, the files are deleted, the columns
   added to a schema computed in memory (``ADD COLUMN``, type inferred from the JSON values)
   and the job runs again with it; ``_summary.json`` gets the counts per reason; above
   ``max_error_ratio`` the files are deleted and the batch fails (no schema written); otherwise
   the new schema is published and the batch committed (:mod:`pipelines.cdc_schema`: the
   columns land with the rows or not at all).

Across batches, events that arrive out of order are resolved by the table's
``sequence.field``: declare e.g. ``_seq BIGINT`` with ``'sequence.field' = '_seq'`` and the job
fills it with the source position as one BIGINT (the position fields come from the events'
``source.connector``: Postgres' ``lsn``, Oracle's ``scn``, MySQL's binlog index, pos and row
packed, MongoDB's oplog second and ``ord`` packed; ``--position-fields`` overrides: its first
field), so an older event arriving late never overrides a newer one (without it, the later
batch wins). An event whose position does not fit a BIGINT (SQL Server / Db2 LSNs) is refused
when the table has a sequence column. One batch holds the events of one connector.

Operations: ``c`` / ``r`` / ``u`` / ``d`` (a delete needs only the key), ``m`` (messages) and
tombstones are skipped and counted; a truncate (``t``) empties the table at its position: a
batch holding truncates is committed in steps, all with its identifier: the changes before the
first truncate (APPEND), the truncate (an OVERWRITE snapshot deleting every file), the changes
up to the next truncate (APPEND)... the changes after the last one; each snapshot records its
step (``commit.step = i/n``), so that a re-run after a crash between two of them commits only
the steps that did not land (:mod:`paimon_core.commit.steps`). Readers of the table's history
see the rows before the truncate (time travel), its empty table, then the rows after it;
streaming and incremental readers skip OVERWRITE snapshots (Paimon's semantics).
Debezium's unchanged-TOAST placeholder keeps the column's previous value
(``--unavailable-value store|refuse`` for the alternatives).

Run (:mod:`pipelines.jobs.cdc_ingest`)::

    python -m pipelines.jobs.cdc_ingest --warehouse W --table db.t --landing L [--schema s.json]
        [--batch N] [--quarantine Q] [--max-error-ratio 0.01] [--position-fields F,...]
        [--unavailable-value previous|store|refuse] [--max-partition-bytes 128MB]
        [--format debezium-json|debezium-avro|canal-json|maxwell-json|ogg-json|aws-dms-json]
"""

from __future__ import annotations

import contextlib
import dataclasses
import decimal
import json
import logging
import pickle
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_core import (
    CommitMessage,
    CommitOptions,
    CommitStateUnknownError,
    CommitStep,
    CoreOptions,
    DataField,
    FileIO,
    FileStoreTable,
    PaimonError,
    RowKind,
    Schema,
    SchemaError,
    UnsupportedError,
    deduplicate,
    join,
)
from paimon_core.commit.users import stable_commit_user
from paimon_core.schema_pending import PendingSchemaRaceError
from pipelines.cdc_avro import avro_file_order
from pipelines.cdc_decode import output_schema, split_text
from pipelines.cdc_events import (
    ERROR_COLUMN,
    KIND_COLUMN,
    MESSAGE,
    TOMBSTONE,
    TRUNCATE,
    Unavailable,
    is_supported_type,
    position_columns,
)
from pipelines.cdc_formats import DDL, DEFAULT_FORMAT, FORMATS, check_sequence
from pipelines.cdc_ranges import (
    DEFAULT_MAX_BYTES,
    LineNumbers,
    LineRange,
    parse_size,
    plan_ranges,
)
from pipelines.cdc_routing import routing
from pipelines.cdc_schema import commit_batch, evolve, settle, withdraw
from pipelines.cdc_toast import fill_unavailable
from pipelines.cdc_values import bad_value
from pipelines.config import (
    CatalogSettings,
    TableHandle,
)
from pipelines.session import default_parallelism
from pipelines.spark_types import spark_schema
from pipelines.writer import BUCKET_COLUMN, commit_messages, write_batches

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "BatchReport",
    "CdcOptions",
    "ErrorRatioExceeded",
    "decode_files",
    "decoded_blobs",
    "ingest",
    "ingest_batch",
    "list_batches",
    "max_partition_bytes",
    "plan_file_ranges",
    "read_lines",
]

log = logging.getLogger(__name__)
_BATCH = re.compile(r"^batch-(\d+)(?:\.jsonl?|\.avro)?$")


class ErrorRatioExceeded(PaimonError):
    """More malformed events than the batch may have; nothing was committed."""

    def __init__(self, report: BatchReport, max_ratio: float) -> None:
        super().__init__(
            f"batch {report.batch}: {report.malformed} of {report.events - report.skipped_events} "
            f"events malformed ({report.error_ratio:.2%} > {max_ratio:.2%}); see "
            f"{report.quarantine}"
        )
        self.report = report


@dataclass(frozen=True)
class CdcOptions:
    """Knobs of :func:`ingest_batch` (see the module docs)."""

    #: ``None``: the position fields of the events' ``source.connector``
    position_fields: tuple[str, ...] | None = None
    sequence_column: str | None = None
    epoch_unit: str = "ms"
    max_error_ratio: float = 0.01
    commit_user: str | None = None
    quarantine: str | None = None
    evolve_schema: bool = True
    #: the TOAST placeholder: ``previous`` / ``store`` / ``refuse`` (see
    #: :data:`pipelines.cdc_events.Unavailable`)
    unavailable: Unavailable = "previous"
    #: the events' format: a name of :data:`pipelines.cdc_formats.FORMATS` (``debezium-avro``:
    #: Avro container files, as Kafka Connect's S3 sink writes them, :mod:`pipelines.cdc_avro`)
    format: str = DEFAULT_FORMAT
    #: largest line-aligned byte range of a file one decode task reads at a time
    #: (:mod:`pipelines.cdc_ranges`); ``None``: Spark's ``spark.sql.files.maxPartitionBytes``
    #: (128 MB by default)
    max_partition_bytes: int | None = None


@dataclass
class BatchReport:
    """What one batch did (printed as JSON by the job)."""

    batch: int
    events: int = 0
    valid: int = 0
    malformed: int = 0
    tombstones: int = 0
    messages: int = 0
    truncates: int = 0
    ddl: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    new_columns: dict[str, str] = field(default_factory=dict)
    rows_written: int = 0
    snapshot_ids: list[int] = field(default_factory=list)
    skipped: bool = False
    quarantine: str | None = None

    @property
    def skipped_events(self) -> int:
        """Tombstones, logical decoding messages, truncates and DDL / control events: events
        that are no row."""
        return self.tombstones + self.messages + self.truncates + self.ddl

    @property
    def error_ratio(self) -> float:
        n = self.events - self.skipped_events
        return self.malformed / n if n else 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    def tally(self, counts: Mapping[str, int]) -> None:
        """Take the batch's event counts per outcome (``""``: valid, else the reason)."""
        self.events = sum(counts.values())
        self.valid = counts.get("", 0)
        self.tombstones = counts.get(TOMBSTONE, 0)
        self.messages = counts.get(MESSAGE, 0)
        self.truncates = counts.get(TRUNCATE, 0)
        self.ddl = counts.get(DDL, 0)
        self.reasons = {k: v for k, v in sorted(counts.items())
                        if k not in ("", TOMBSTONE, MESSAGE, TRUNCATE, DDL)}
        self.malformed = sum(self.reasons.values())


# ---------------------------------------------------------------------------- input


def list_batches(file_io: FileIO, landing: str) -> list[tuple[int, list[str]]]:
    """``(batch id, files)`` of every ``batch-<n>`` directory or file under ``landing``,
    ordered by id (files within a directory sorted by name, Kafka Connect S3-sink names
    ``<topic>+<partition>+<startOffset>.<ext>`` by partition and start offset as numbers;
    names starting with ``_`` or ``.`` are ignored)."""
    out: list[tuple[int, list[str]]] = []
    for st in file_io.list_status(landing):
        name = st.path.rstrip("/").rsplit("/", 1)[-1]
        m = _BATCH.match(name)
        if m is None:
            continue
        if st.is_dir:
            files = sorted(
                (s.path for s in file_io.list_status(st.path)
                 if not s.is_dir and not s.path.rsplit("/", 1)[-1].startswith(("_", "."))),
                key=avro_file_order)
        elif "." in name:
            files = [st.path]
        else:
            continue
        out.append((int(m.group(1)), files))
    return sorted(out)


def read_lines(spark: SparkSession, file_io: FileIO, files: Sequence[str]) -> DataFrame:
    """``(file, line, value)`` of every line of ``files`` (1-based line numbers), each file
    read by one task through ``file_io`` (local or object storage): the input of the Spark
    SQL reference decoder (:func:`pipelines.cdc_events.parse_events`)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    out_schema = StructType([StructField("file", StringType(), False),
                             StructField("line", LongType(), False),
                             StructField("value", StringType(), True)])
    arrow_schema = pa.schema([pa.field("file", pa.string(), False),
                              pa.field("line", pa.int64(), False),
                              pa.field("value", pa.string())])

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            for path in b.column("file").to_pylist():
                lines = split_text(file_io.read_bytes(path))
                if lines and lines[-1] == "":
                    lines.pop()
                n = len(lines)
                yield pa.RecordBatch.from_arrays(
                    [pa.array([path] * n, pa.string()),
                     pa.array(range(1, n + 1), pa.int64()), pa.array(lines, pa.string())],
                    schema=arrow_schema)

    idx = spark.createDataFrame([(i, f) for i, f in enumerate(files)], "idx int, file string")
    n = max(1, min(len(files), default_parallelism(spark) * 4))
    return idx.repartitionById(n, F.col("idx")).select("file").mapInArrow(read, out_schema)


#: rows per Arrow IPC blob of decoded rows (a blob is one cell of the shuffle)
_BLOB_ROWS = 1 << 17
_BLOB_SCHEMA = "bucket int, data binary"


def _ipc(table: pa.Table) -> bytes:
    """``table`` as one Arrow IPC stream, LZ4-compressed (a third of the bytes for the JVM to
    copy and shuffle, for little CPU). The write options are made here, not held at module
    level: they cannot be pickled, and a task function pickled by value takes the module-level
    objects it reaches along."""
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression="lz4")
    with pa.ipc.new_stream(sink, table.schema, options=options) as w:
        w.write_table(table)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def _tables(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.Table]:
    """The decoded row tables of the blobs in ``batches`` (see :func:`decoded_blobs`)."""
    for b in batches:
        data = b.column(b.schema.get_field_index("data"))
        for i in range(len(data)):
            with pa.ipc.open_stream(data[i].as_buffer()) as r:
                yield r.read_all()


def max_partition_bytes(spark: SparkSession, opts: CdcOptions) -> int:
    """The largest byte range a decode task reads at a time: ``opts.max_partition_bytes``,
    else Spark's ``spark.sql.files.maxPartitionBytes`` (128 MB by default).

    Raises:
        SchemaError: the value is not a positive byte size.
    """
    if opts.max_partition_bytes is not None:
        if opts.max_partition_bytes <= 0:
            raise SchemaError("max_partition_bytes must be positive, not "
                              f"{opts.max_partition_bytes}")
        return opts.max_partition_bytes
    raw = spark.conf.get("spark.sql.files.maxPartitionBytes", None)
    if not raw:
        return DEFAULT_MAX_BYTES
    try:
        return parse_size(raw)
    except ValueError as e:
        raise SchemaError(f"spark.sql.files.maxPartitionBytes: {e}") from e


def plan_file_ranges(spark: SparkSession, file_io: FileIO, files: Sequence[str],
                     opts: CdcOptions) -> list[LineRange]:
    """The line-aligned byte ranges the batch's ``files`` are decoded in
    (:func:`pipelines.cdc_ranges.plan_ranges`: files above :func:`max_partition_bytes` are
    read once on the driver to find the line starts; Avro files are not split)."""
    return plan_ranges(file_io, files, max_partition_bytes(spark, opts),
                       splittable=FORMATS[opts.format].splittable)


def decoded_blobs(spark: SparkSession, file_io: FileIO, files: Sequence[str],
                  handle: TableHandle, opts: CdcOptions,
                  ranges: Sequence[LineRange] | None = None) -> DataFrame:
    """The change rows of every event in ``files`` (:func:`pipelines.cdc_decode.decode_file`:
    typed table columns, ``_kind``, positions, outcome columns and each row's bucket) as
    ``(bucket, data)``: one Arrow IPC stream of rows of one bucket per cell, so that the rows
    cross the JVM and the shuffle as a few large values instead of row by row. The files are
    decoded in line-aligned byte ranges (``ranges``, default :func:`plan_file_ranges`), each
    read with one ranged read through ``file_io`` (local or object storage) and decoded apart,
    so a task holds one range at a time; a task decodes a contiguous run of ranges. The rows'
    ``_pos_line`` are line positions (:mod:`pipelines.cdc_ranges`: the line numbers in a
    file's first range; :class:`~pipelines.cdc_ranges.LineNumbers` gives any line number)."""
    import numpy as np

    schema = handle.schema
    seq = _sequence_column(handle, opts)
    route = routing(schema, default_parallelism(spark))
    buckets = route.tasks
    units = list(ranges) if ranges is not None else plan_file_ranges(spark, file_io, files,
                                                                      opts)
    fmt = FORMATS[opts.format]
    decode_fn = fmt.decode
    splittable = fmt.splittable

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            for u in b.column(0).to_pylist():
                r = units[u]
                data = (file_io.read_range(r.path, r.start, r.length)
                        if splittable else file_io.read_bytes(r.path))
                extra = {"first_line": r.first_position} if splittable else {}
                out = decode_fn(data, schema, file_index=r.file_index,
                                position_fields=opts.position_fields,
                                epoch_unit=opts.epoch_unit, sequence_column=seq,
                                unavailable=opts.unavailable, threads=threads, **extra)
                del data
                ids = route.task_ids(out, schema, BUCKET_COLUMN)
                order = np.argsort(ids, kind="stable")
                counts = np.bincount(ids, minlength=max(buckets, 1))
                out = out.take(pa.array(order))
                at = 0
                for bucket, n in enumerate(counts.tolist()):
                    for lo in range(at, at + n, _BLOB_ROWS):
                        part = out.slice(lo, min(_BLOB_ROWS, at + n - lo))
                        yield pa.RecordBatch.from_pydict(
                            {"bucket": pa.array([bucket], pa.int32()),
                             "data": pa.array([_ipc(part)], pa.binary())})
                    at += n

    n = max(1, min(len(units), default_parallelism(spark)))
    threads = len(units) < default_parallelism(spark)  # else the tasks fill it
    return spark.range(0, len(units), 1, n).mapInArrow(decode, _BLOB_SCHEMA)


def decode_files(spark: SparkSession, file_io: FileIO, files: Sequence[str],
                 handle: TableHandle, opts: CdcOptions) -> DataFrame:
    """The change rows of every event in ``files`` (:func:`pipelines.cdc_decode.decode_file`:
    typed table columns, ``_kind``, positions, outcome columns and each row's bucket) as a
    DataFrame of rows (:func:`decoded_blobs` expanded; the job itself ships the blobs)."""
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    schema = handle.schema
    fields = list(spark_schema([DataField(f.id, f.name, f.type.with_nullable(True))
                                for f in schema.fields]).fields)
    for f in list(output_schema(schema, opts.position_fields))[len(fields):]:
        st = (LongType() if pa.types.is_int64(f.type) else IntegerType()
              if pa.types.is_int32(f.type) else StringType())
        fields.append(StructField(f.name, st, True))

    def expand(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for t in _tables(batches):
            yield from t.to_batches(max_chunksize=65536)

    return decoded_blobs(spark, file_io, files, handle, opts).mapInArrow(expand,
                                                                         StructType(fields))


# ---------------------------------------------------------------------------- one batch


def _sequence_column(handle: TableHandle, opts: CdcOptions) -> str | None:
    if opts.sequence_column is not None:
        handle.schema.field(opts.sequence_column)
        return opts.sequence_column
    raw = handle.schema.options.get(CoreOptions.SEQUENCE_FIELD)
    if raw and "," not in raw and raw.strip() in handle.schema.field_names:
        return raw.strip()
    return None


@dataclass
class _Pass:
    """What one pass over a batch produced (nothing committed yet)."""

    messages: list[CommitMessage]
    rows: int
    counts: dict[str, int]
    unknown: dict[str, list[str]]  # new column -> sample event lines
    connectors: set[str]  # the events' source.connector values
    truncates: list[tuple[object, ...]]  # the positions of truncate events
    #: with truncates: the messages of the changes before the first truncate, between the
    #: first and the second... after the last (the steps of the commit)
    segments: list[list[CommitMessage]] = field(default_factory=list)


def _write_pass(
    handle: TableHandle, user: str, blobs: DataFrame, opts: CdcOptions, file_io: FileIO,
    quarantine: str | None, batch: int, files: Sequence[str], start_snapshot: int | None,
    ranges: Sequence[LineRange], truncates: Sequence[Sequence[object]] | None = None,
) -> _Pass:
    """The write half of the batch's Spark job: the decoded rows (:func:`decoded_blobs`;
    rejected events ride along with NULL keys) go to their bucket's task
    (``repartitionById``); each task counts its
    events per outcome, collects sample lines of events whose images carry columns the table
    lacks, writes its rejected events to ``quarantine/part-<task>.jsonl`` (deterministic
    names: a retried task or a re-run of the batch overwrites instead of duplicating; their
    line numbers from the rows' line positions and the batch's ``ranges``), keeps
    the last change of every key by source position and writes the valid rows. Returns the
    messages to commit (or abort).

    ``truncates`` (the positions of the batch's truncate events, in order): the rows are
    split at them into segments written apart (each a step of the commit: see
    :func:`_steps`), without compaction (``write-only``: a step is one snapshot); a TOAST
    placeholder after a truncate takes its previous value from its own segment only (the
    table was emptied)."""
    import numpy as np
    import pyarrow.compute as pc
    from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

    pos = position_columns(opts.position_fields)
    route = routing(handle.schema, default_parallelism(blobs.sparkSession))
    routed = blobs.repartitionById(route.tasks, "bucket")
    cuts = [list(t) for t in truncates] if truncates is not None else None
    seg_handle = handle if cuts is None else dataclasses.replace(
        handle, schema=dataclasses.replace(handle.schema, options={
            **handle.schema.options, CoreOptions.WRITE_ONLY: "true"}))

    def read_previous(columns: Sequence[str]) -> pa.Table:
        """The table's rows of this task's bucket as the batch started."""
        from pyspark import TaskContext

        table = handle.open()
        if start_snapshot is None:
            return pa.schema([pa.field(c, pa.string()) for c in columns]).empty_table()
        tc = TaskContext.get()
        # a dynamic bucket task's keys may be in any bucket
        bucket = tc.partitionId() if tc is not None and not route.dynamic else None
        rb = (table.new_read_builder().with_projection(columns)
              .with_time_travel(snapshot_id=start_snapshot))
        splits = [s for s in rb.new_scan().plan().splits if bucket is None or s.bucket == bucket]
        return rb.new_read().to_arrow(splits)

    def nothing_previous(columns: Sequence[str]) -> pa.Table:
        """After a truncate the table holds nothing."""
        return pa.schema([pa.field(c, pa.string()) for c in columns]).empty_table()

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        counts: dict[str, int] = {}
        unknown: dict[str, list[str]] = {}
        rejected: list[str] = []
        connectors: set[str] = set()
        truncates: list[list[object]] = []

        def valid() -> Iterator[pa.RecordBatch]:
            for b in (x for t in _tables(batches) for x in t.to_batches()):
                err = b.column(ERROR_COLUMN)
                first = pc.equal(b.column("_event"), 0)
                vc = pc.value_counts(pc.fill_null(pc.filter(err, first), ""))
                for v, n in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()):
                    counts[v] = counts.get(v, 0) + n
                new = pc.is_valid(b.column("_unknown"))
                if pc.any(new).as_py():
                    sub = b.filter(new)
                    for names, line in zip(sub.column("_unknown").to_pylist(),
                                           sub.column("_value").to_pylist()):
                        for k in names.split("\n"):
                            samples = unknown.setdefault(k, [])
                            if len(samples) < 100:
                                samples.append(line)
                conn = pc.unique(b.column("_connector")).to_pylist()
                connectors.update(c for c in conn if c is not None)
                trunc = pc.fill_null(pc.equal(err, TRUNCATE), False)
                if pc.any(trunc).as_py():
                    truncates.extend(list(r.values()) for r in
                                     b.filter(trunc).select(list(pos)).to_pylist())
                bad = pc.and_(pc.is_valid(err), pc.invert(pc.is_in(
                    err, pa.array([TOMBSTONE, MESSAGE, TRUNCATE, DDL]))))
                for r in b.filter(bad).select([pos[-2], pos[-1], ERROR_COLUMN, "_value"]) \
                        .to_pylist():
                    rejected.append(json.dumps(
                        {"batch": batch, "file": files[r[pos[-2]]],
                         "line": line_of(r[pos[-2]], r[pos[-1]]),
                         "reason": r[ERROR_COLUMN],
                         "value": bad_value(r["_value"], r[ERROR_COLUMN]),
                         "event": r["_value"]}, ensure_ascii=False))
                yield b.filter(pc.is_null(err))

        line_of = LineNumbers(file_io, ranges)
        tc = TaskContext.get()
        channel = route.channel(tc.partitionId() if tc is not None else 0)

        def write(data: pa.Table | None, previous: Callable[[Sequence[str]], pa.Table],
                  emptied: bool) -> tuple[list[CommitMessage], int]:
            """``emptied``: the rows follow a truncate (a dynamic bucket table's buckets are
            then assigned from scratch)."""
            if (data is not None and opts.unavailable == "previous"
                    and FORMATS[opts.format].placeholder):
                data, refused = fill_unavailable(data, handle.schema, pos, previous)
                if refused:
                    data = _refuse(data, refused, counts, rejected, batch, files, pos,
                                   line_of)
            last = (_key_only_deletes(
                _last_changes(data, handle.schema.primary_keys, pos),
                handle.schema.fields, handle.schema.primary_keys).combine_chunks().to_batches()
                if data is not None and data.num_rows else [])
            return write_batches(seg_handle, user, last, row_kind_column=KIND_COLUMN,
                                 overwrite=emptied, assigner_channel=channel)

        held = [b for b in valid() if b.num_rows]
        data = pa.Table.from_batches(held) if held else None
        if cuts is None:
            msgs, rows = write(data, read_previous, False)
            parts = [msgs]
        else:
            data = data.combine_chunks() if data is not None else None
            seg = np.zeros(data.num_rows if data is not None else 0, np.int64)
            if data is not None:
                for cut in cuts:
                    seg += np.asarray(_after(data, pos, cut).to_numpy(zero_copy_only=False),
                                      np.int64)
            parts, rows = [], 0
            for s in range(len(cuts) + 1):
                part = data.filter(pa.array(seg == s)) if data is not None else None
                m, n = write(part, read_previous if s == 0 else nothing_previous, s > 0)
                parts.append(m)
                rows += n
        if rejected and quarantine is not None:
            tc = TaskContext.get()
            pid = tc.partitionId() if tc is not None else 0
            file_io.write_bytes(join(quarantine, f"part-{pid:05d}.jsonl"),
                                ("\n".join(rejected) + "\n").encode("utf-8"))
        yield pa.RecordBatch.from_pydict(
            {"payload": [pickle.dumps(parts)], "rows": [rows], "counts": [json.dumps(counts)],
             "unknown": [json.dumps(unknown)],
             "notes": [json.dumps({"connectors": sorted(connectors), "truncates": truncates})]},
            schema=pa.schema([pa.field("payload", pa.binary()), pa.field("rows", pa.int64()),
                              pa.field("counts", pa.string()), pa.field("unknown", pa.string()),
                              pa.field("notes", pa.string())]))

    out = StructType([StructField("payload", BinaryType()), StructField("rows", LongType()),
                      StructField("counts", StringType()), StructField("unknown", StringType()),
                      StructField("notes", StringType())])
    result = _Pass([], 0, {}, {}, set(), [],
                   [[] for _ in range(len(cuts) + 1)] if cuts is not None else [])
    for r in routed.mapInArrow(task, out).collect():
        parts = pickle.loads(r["payload"])
        for msgs in parts:
            result.messages.extend(msgs)
        if cuts is not None:
            for s, msgs in enumerate(parts):
                result.segments[s].extend(msgs)
        result.rows += int(r["rows"])
        for k, v in json.loads(r["counts"]).items():
            result.counts[k] = result.counts.get(k, 0) + int(v)
        for k, lines in json.loads(r["unknown"]).items():
            result.unknown.setdefault(k, []).extend(lines)
        notes = json.loads(r["notes"])
        result.connectors.update(notes["connectors"])
        result.truncates.extend(tuple(p) for p in notes["truncates"])
    return result


def _position_key(p: Sequence[object]) -> tuple[tuple[int, object], ...]:
    """A position (the values of the position columns) as a sort key: NULL first."""
    return tuple((0, 0) if v is None else (1, v) for v in p)


def _after(b: pa.Table, pos: Sequence[str], p: Sequence[object]) -> pa.Array:
    """Rows of ``b`` (one chunk) whose position (the ``pos`` columns, NULL first) is after
    ``p``."""
    import pyarrow.compute as pc

    later = pa.array([False] * b.num_rows, pa.bool_())  # typed: a batch may be empty
    for name, v in reversed(list(zip(pos, p))):
        col = b.column(name)
        if v is None:
            greater, equal = pc.is_valid(col), pc.is_null(col)
        else:
            greater = pc.fill_null(pc.greater(col, pa.scalar(v, col.type)), False)
            equal = pc.fill_null(pc.equal(col, pa.scalar(v, col.type)), False)
        later = pc.or_(greater, pc.and_(equal, later))
    return later


def _steps(segments: Sequence[Sequence[CommitMessage]]) -> list[CommitStep]:
    """The steps of a batch holding truncates: the changes before the first truncate (an
    APPEND, when there are any), the truncate (an OVERWRITE emptying the table), the changes
    up to the next truncate... the changes after the last one."""
    steps: list[CommitStep] = []
    for s, msgs in enumerate(segments):
        if any(m.new_files for m in msgs):
            steps.append(CommitStep("append", [m for m in msgs if m.new_files]))
        if s < len(segments) - 1:
            steps.append(CommitStep("truncate"))
    return steps


def _commit_steps(handle: TableHandle, user: str, steps: Sequence[CommitStep], batch: int,
                  options: CommitOptions) -> list[int]:
    """Commit the steps of a batch holding truncates, once (see
    :meth:`paimon_core.TableCommit.commit_steps`): a re-run after a crash between two of its
    snapshots deletes the files it wrote again for the steps that landed and commits the
    rest. A failed commit deletes the files of the steps that did not land; a commit whose
    state is unknown keeps every file."""
    commit = handle.open().new_commit(user, options=options)
    done = len(commit.unfinished_steps(batch))
    if done:
        log.info("batch %s: %s of its %s snapshots landed before; committing the rest",
                 batch, done, len(steps))
        commit.abort([m for st in steps[:done] for m in st.messages])
    try:
        return commit.commit_steps(steps, batch)
    except CommitStateUnknownError:
        raise  # the snapshot may have landed: keep every file
    except BaseException:
        with contextlib.suppress(PaimonError):  # best effort: orphans are reclaimable
            done = (len(steps) if commit.landed(batch)
                    else len(commit.unfinished_steps(batch)))
            commit.abort([m for st in steps[done:] for m in st.messages])
        raise


def _refuse(data: pa.Table, refused: Mapping[int, str], counts: dict[str, int],
            rejected: list[str], batch: int, files: Sequence[str],
            pos: Sequence[str], line_of: Callable[[int, int], int]) -> pa.Table:
    """``data`` without the rows ``refused`` (index -> reason): each is counted under its
    reason instead of as valid, and quarantined by its file and line (``line_of(file, line
    position)``; the event's text is not kept for valid rows)."""
    import numpy as np

    keep = np.ones(data.num_rows, bool)
    for i, reason in sorted(refused.items()):
        keep[i] = False
        r = data.slice(i, 1).select([pos[-2], pos[-1], "_event"]).to_pylist()[0]
        if r["_event"] == 0:
            counts[""] = counts.get("", 0) - 1
            counts[reason] = counts.get(reason, 0) + 1
        rejected.append(json.dumps({"batch": batch, "file": files[r[pos[-2]]],
                                    "line": line_of(r[pos[-2]], r[pos[-1]]), "reason": reason,
                                    "event": None}))
    return data.filter(pa.array(keep))


def _last_changes(data: pa.Table, keys: Sequence[str], order: Sequence[str]) -> pa.Table:
    """The last row of every key by the ``order`` columns (later rows win ties), the rows of
    :func:`paimon_core.read.merge.deduplicate`, with a numpy fast path (one stable
    ``lexsort``) when the key columns are integers or strings and the order columns integers,
    without NULLs (an order column that is entirely NULL orders nothing and is skipped); the
    fast path groups string keys by dictionary code, so its rows are not in key order (the
    table writer sorts them)."""
    import numpy as np
    import pyarrow.compute as pc

    n = data.num_rows
    if n <= 1:
        return data
    sort_cols: list[np.ndarray] = []  # most significant first
    for name in keys:
        col = data.column(name).combine_chunks()
        if col.null_count:
            return deduplicate(data, list(keys), list(order))
        if pa.types.is_integer(col.type):
            sort_cols.append(col.to_numpy())
        elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            sort_cols.append(pc.dictionary_encode(col).indices.to_numpy())  # equality only
        else:
            return deduplicate(data, list(keys), list(order))
    for name in order:
        col = data.column(name).combine_chunks()
        if col.null_count == n:
            continue
        if col.null_count or not pa.types.is_integer(col.type):
            return deduplicate(data, list(keys), list(order))
        sort_cols.append(col.to_numpy())
    idx = np.lexsort(sort_cols[::-1])
    last = np.zeros(n, bool)
    last[-1] = True
    for col in sort_cols[:len(keys)]:
        s = col[idx]
        last[:-1] |= s[1:] != s[:-1]
    return data.take(pa.array(idx[last]))


def _zero(t: pa.DataType) -> pa.Scalar:
    """A placeholder value of Arrow type ``t`` (zero, empty), for the value columns of a
    ``-D`` row whose event carried only the key."""
    if pa.types.is_struct(t):
        return pa.scalar({f.name: _zero(f.type).as_py() for f in t}, t)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        return pa.scalar([], t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    if pa.types.is_date32(t):
        return pa.scalar(0, pa.int32()).cast(t)
    if pa.types.is_decimal(t):
        return pa.scalar(decimal.Decimal(0), t)
    return pa.scalar(0, pa.int64()).cast(t)


def _key_only_deletes(data: pa.Table, fields: Sequence[DataField],
                      keys: Sequence[str]) -> pa.Table:
    """``-D`` rows need only their key (a Postgres delete under REPLICA IDENTITY DEFAULT
    carries nothing else): their NULLs in NOT NULL value columns are filled with a placeholder
    (:func:`_zero`) so that the file keeps the column's NOT NULL; no other row changes."""
    import pyarrow.compute as pc

    if not data.num_rows:
        return data
    is_d = None
    for f in fields:
        if f.name in keys or f.type.nullable:
            continue
        col = data.column(f.name).combine_chunks()
        if not col.null_count:
            continue
        if is_d is None:
            kind = data.column(KIND_COLUMN)
            is_d = pc.fill_null(pc.equal(kind, RowKind.DELETE.short_string), False)
        fill = pc.and_(is_d, pc.is_null(col))
        filled = pc.if_else(fill, _zero(col.type), col)
        data = data.set_column(data.schema.get_field_index(f.name), data.field(f.name), filled)
    return data


def _check_malformed(report: BatchReport, fio: FileIO, quarantine: str | None,
                     max_ratio: float) -> None:
    """Refuse a batch with malformed events but no ``quarantine`` location, or with more
    than ``max_ratio`` of them (the quarantine's ``_summary.json`` written first)."""
    if not report.malformed:
        return
    if quarantine is None:
        raise SchemaError(f"batch {report.batch} has {report.malformed} malformed events and "
                          "no quarantine location was given")
    report.quarantine = quarantine
    fio.write_bytes(join(quarantine, "_summary.json"), report.to_json().encode("utf-8"))
    if report.error_ratio > max_ratio:
        raise ErrorRatioExceeded(report, max_ratio)


def _cdc_table(settings: CatalogSettings, identifier: str, table: FileStoreTable | None,
               opts: CdcOptions) -> TableHandle:
    """The handle on the table ``identifier`` (``table`` when the caller opened it), checked:
    a known format, a primary key, columns change events can carry."""
    if opts.format not in FORMATS:
        raise SchemaError(f"unknown CDC format {opts.format!r}; one of "
                          f"{', '.join(sorted(FORMATS))}")
    handle = (TableHandle.of(settings, table) if table is not None
              else TableHandle.load(settings, identifier))
    if not handle.schema.primary_keys:
        raise SchemaError(f"CDC needs a primary-key table; {identifier} has no primary key")
    for f in handle.schema.fields:
        if not is_supported_type(f.type):
            raise UnsupportedError(f"column {f.name} of type {f.type.sql()} cannot be decoded "
                                   "from change events")
    return handle


#: attempts of a batch whose new schema id another writer took meanwhile
_SCHEMA_RACE_ATTEMPTS = 3


def ingest_batch(
    spark: SparkSession,
    settings: CatalogSettings,
    identifier: str,
    batch: int,
    files: Sequence[str],
    options: CdcOptions | None = None,
    *,
    landing_io: FileIO | None = None,
    quarantine_root: str | None = None,
    properties: Mapping[str, str] | None = None,
    table: FileStoreTable | None = None,
    checked: bool = False,
) -> BatchReport:
    """Ingest one batch (see the module docs); returns its report. ``properties`` are added to
    the snapshot's properties (e.g. the orchestrator's run id). ``table``: the table
    ``identifier`` as the caller opened it (from ``settings``' catalog; default: opened here);
    ``checked``: the caller already asked whether the commit user committed ``batch`` (it did
    not), so the question is not asked again. New columns land with the batch's snapshot or
    not at all (:mod:`pipelines.cdc_schema`); when another writer changes the schema while
    the batch is written with its new columns, the batch is written again (a few times).

    Raises:
        ErrorRatioExceeded: too many malformed events (quarantine written, nothing committed).
        SchemaError / UnsupportedError: a table the events cannot be written to.
    """
    for attempt in range(1, _SCHEMA_RACE_ATTEMPTS + 1):
        try:
            return _ingest_batch(spark, settings, identifier, batch, files, options,
                                 landing_io=landing_io, quarantine_root=quarantine_root,
                                 properties=properties, table=table, checked=checked)
        except PendingSchemaRaceError as e:
            if attempt == _SCHEMA_RACE_ATTEMPTS:
                raise
            log.warning("%s; writing batch %s again (attempt %s)", e, batch, attempt + 1)
            table = None  # the latest schema, loaded again
    raise AssertionError("unreachable")  # pragma: no cover


def _ingest_batch(
    spark: SparkSession,
    settings: CatalogSettings,
    identifier: str,
    batch: int,
    files: Sequence[str],
    options: CdcOptions | None = None,
    *,
    landing_io: FileIO | None = None,
    quarantine_root: str | None = None,
    properties: Mapping[str, str] | None = None,
    table: FileStoreTable | None = None,
    checked: bool = False,
) -> BatchReport:
    """One attempt of :func:`ingest_batch`."""
    opts = options or CdcOptions()
    # the table is opened once: every driver step below uses handle.open() (the same object)
    handle = _cdc_table(settings, identifier, table, opts)
    user = opts.commit_user or stable_commit_user("cdc", identifier)
    report = BatchReport(batch)
    # "already committed?" is asked once; commit_messages is told (checked=True)
    if not checked and not handle.open().new_commit(user).filter_committed([batch]):
        report.skipped = True
        return report
    # a schema a crashed run of this batch published is adopted, any other left over withdrawn
    handle, adopted = settle(settings, handle, user, batch)
    if adopted is not None:  # the columns this batch adds (published by its crashed run)
        report.new_columns = {n: handle.schema.field(n).type.sql() for n in adopted.added
                              if n in handle.schema.field_names}
    routing(handle.schema, 1)  # a bucket mode the job can write (else an error naming it)
    check_sequence(opts.format, _sequence_column(handle, opts), opts.position_fields)
    fio = landing_io or settings.file_io()
    q_root = quarantine_root or opts.quarantine
    base = join(q_root, f"batch-{batch:06d}") if q_root is not None else None

    # what a TOAST placeholder's previous value is: the table as the batch starts (a re-run
    # after a crash between the snapshots of a batch holding truncates: before the first)
    unfinished = handle.open().new_commit(user).unfinished_steps(batch)
    start = handle.open().latest_snapshot()
    start_snapshot = (unfinished[0].id - 1 if unfinished
                      else start.id if start is not None else None) or None

    ranges = plan_file_ranges(spark, fio, files, opts)  # once, for every pass below

    def run(h: TableHandle, truncates: Sequence[Sequence[object]] | None = None) -> _Pass:
        if base is not None and fio.exists(base):
            fio.delete_dir(base)  # a re-run of a batch that was not committed
        return _write_pass(h, user, decoded_blobs(spark, fio, files, h, opts, ranges), opts,
                           fio, base, batch, files, start_snapshot, ranges, truncates)

    def abort(messages: Sequence[CommitMessage], refused: bool = True) -> None:
        if messages:
            handle.open().new_commit(user).abort(messages)
        if refused:  # nothing of the batch lands: its schema neither
            withdraw(handle, adopted)

    res = run(handle)
    added: dict[str, str] = {}  # the columns this run adds (published with the snapshot)
    if res.unknown and opts.evolve_schema:
        # written with the old schema: write again with the new one (in memory until the
        # commit: every refusal below is decided before it is published)
        abort(res.messages, refused=False)
        handle, added = evolve(handle, res.unknown, opts.format)
        report.new_columns = added
        res = run(handle)
    if len(res.connectors) > 1 and opts.position_fields is None:
        abort(res.messages)
        raise SchemaError(f"batch {batch} mixes the events of connectors "
                          f"{', '.join(sorted(res.connectors))}: their source positions do not "
                          "order each other; land each connector's events apart (or give "
                          "--position-fields)")
    truncates = sorted(set(res.truncates), key=_position_key)
    if truncates:
        # the table is emptied at each truncate's position: the rows are written again, split
        # at the truncates, and committed in steps (_steps)
        abort(res.messages, refused=False)
        res = run(handle, truncates)
    report.tally(res.counts)
    try:
        _check_malformed(report, fio, base, opts.max_error_ratio)
    except PaimonError:
        abort(res.messages)
        raise
    commit_options = CommitOptions(properties={
        **(properties or {}), "cdc.batch": str(batch), "cdc.events": str(report.events),
        "cdc.malformed": str(report.malformed)})
    segments, messages = res.segments, res.messages
    try:
        report.snapshot_ids = commit_batch(
            handle, user, batch, list(added), adopted,
            (lambda: _commit_steps(handle, user, _steps(segments), batch, commit_options))
            if truncates else
            (lambda: commit_messages(handle, user, messages, commit_identifier=batch,
                                     checked=True, options=commit_options)))
    except PendingSchemaRaceError:
        abort(res.messages, refused=False)  # written with a schema id another writer took
        raise
    report.rows_written = res.rows
    report.skipped = not report.snapshot_ids and bool(res.messages)
    return report


def ingest(
    spark: SparkSession,
    settings: CatalogSettings,
    identifier: str,
    landing: str,
    options: CdcOptions | None = None,
    *,
    schema: Schema | None = None,
    batches: Sequence[int] | None = None,
    properties: Mapping[str, str] | None = None,
) -> list[BatchReport]:
    """Ingest every not-yet-committed batch under ``landing`` in order (or only ``batches``);
    the table is created from ``schema`` when missing. Stops at the first failing batch."""
    opts = options or CdcOptions()
    catalog = settings.catalog()
    table = None
    if schema is not None:
        existed = catalog.table_exists(identifier)
        table = catalog.create_table(identifier, schema, ignore_if_exists=True)
        if not existed:
            log.info("created table %s at %s", identifier, table.path)
    fio = FileIO(landing, dict(settings.storage_options))
    q_root = opts.quarantine or join(landing, "_quarantine")
    reports = []
    for bid, files in list_batches(fio, landing):
        if batches is not None and bid not in batches:
            continue
        if table is None:  # opened once, for the first batch
            table = catalog.get_table(identifier)
        reports.append(ingest_batch(spark, settings, identifier, bid, files, opts,
                                    landing_io=fio, quarantine_root=q_root,
                                    properties=properties, table=table))
    return reports
