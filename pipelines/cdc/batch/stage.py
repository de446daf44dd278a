"""The decode stage of a CDC batch's Spark job: the landing files, in line-aligned byte ranges
(:mod:`pipelines.cdc.ranges`), decoded in parallel (:mod:`pipelines.cdc.decode`) into rows
that leave each task as Arrow IPC blobs per bucket (``(bucket, data)`` cells), for the write
stage (:mod:`pipelines.cdc.batch.passes`) to read back."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_core import CoreOptions, DataField, SchemaError
from paimon_core.integration import FileIO
from pipelines.cdc.decode import output_schema
from pipelines.cdc.formats import FORMATS
from pipelines.cdc.lines import split_text
from pipelines.cdc.ranges import (
    DEFAULT_MAX_BYTES,
    LineRange,
    parse_size,
    plan_ranges,
    range_bytes,
)
from pipelines.cdc.routing import routing
from pipelines.cdc.values.event_time import check_op_ts_column
from pipelines.config import TableHandle
from pipelines.session import default_parallelism
from pipelines.spark_types import spark_schema
from pipelines.writer import BUCKET_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from pipelines.cdc.ingest import CdcOptions

__all__ = ["blob_decoder", "blob_tables", "decode_files", "decoded_blobs", "ipc_blob",
           "local_blobs", "max_partition_bytes", "plan_file_ranges", "read_lines",
           "sequence_column", "with_constants"]


def read_lines(spark: SparkSession, file_io: FileIO, files: Sequence[str]) -> DataFrame:
    """``(file, line, value)`` of every line of ``files`` (1-based line numbers), each file
    read by one task through ``file_io`` (local or object storage): the input of the Spark
    SQL reference decoder (:func:`pipelines.cdc.events.parse_events`)."""
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


def ipc_blob(table: pa.Table) -> bytes:
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


def blob_tables(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.Table]:
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
    (:func:`pipelines.cdc.ranges.plan_ranges`: files above :func:`max_partition_bytes` are
    read near each boundary on the driver to find the line starts, or the Avro block starts)."""
    fmt = FORMATS[opts.format]
    return plan_ranges(file_io, files, max_partition_bytes(spark, opts),
                       splittable=fmt.splittable, unit=fmt.unit)


Decoder = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def blob_decoder(file_io: FileIO, handle: TableHandle, opts: CdcOptions,
                 units: Sequence[LineRange], parallelism: int, threads: bool) -> Decoder:
    """The decode function of :func:`decoded_blobs`: over batches of unit indices (column 0),
    each unit of ``units`` decoded into ``(bucket, data)`` blob rows (``parallelism``: the
    write stage's, which decides the routing; ``threads``: pyarrow's reader may use threads)."""
    import numpy as np

    schema = handle.schema
    settings = opts.decode_settings(sequence_column(handle, opts), handle.identifier)
    route = routing(schema, parallelism)
    buckets = route.tasks
    fmt = FORMATS[opts.format]
    decode_fn = fmt.decode
    constants = opts.constant_columns
    for name, _ in constants:
        schema.field(name)  # a column of the table (else SchemaError naming it)
    if opts.op_ts_column is not None:
        check_op_ts_column(schema, opts.op_ts_column)
    splittable = fmt.splittable
    units = list(units)

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            for u in b.column(0).to_pylist():
                r = units[u]
                data = range_bytes(file_io, r) if splittable else file_io.read_bytes(r.path)
                extra = {"first_line": r.first_position} if splittable else {}
                out = with_constants(decode_fn(data, schema, file_index=r.file_index,
                                               settings=settings, threads=threads, **extra),
                                     constants)
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
                             "data": pa.array([ipc_blob(part)], pa.binary())})
                    at += n

    return decode


def decoded_blobs(spark: SparkSession, file_io: FileIO, files: Sequence[str],
                  handle: TableHandle, opts: CdcOptions,
                  ranges: Sequence[LineRange] | None = None) -> DataFrame:
    """The change rows of every event in ``files`` (:func:`pipelines.cdc.decode.decode_file`:
    typed table columns, ``_kind``, positions, outcome columns and each row's bucket) as
    ``(bucket, data)``: one Arrow IPC stream of rows of one bucket per cell, so that the rows
    cross the JVM and the shuffle as a few large values instead of row by row. The files are
    decoded in line-aligned byte ranges (``ranges``, default :func:`plan_file_ranges`), each
    read with one ranged read through ``file_io`` (local or object storage) and decoded apart,
    so a task holds one range at a time; a task decodes a contiguous run of ranges. The rows'
    ``_pos_line`` are line positions (:mod:`pipelines.cdc.ranges`: the line numbers in a
    file's first range; :class:`~pipelines.cdc.ranges.LineNumbers` gives any line number)."""
    units = list(ranges) if ranges is not None else plan_file_ranges(spark, file_io, files,
                                                                      opts)
    parallelism = default_parallelism(spark)
    n = max(1, min(len(units), parallelism))
    threads = len(units) < parallelism  # else the tasks fill it
    decode = blob_decoder(file_io, handle, opts, units, parallelism, threads)
    return spark.range(0, len(units), 1, n).mapInArrow(decode, _BLOB_SCHEMA)


def local_blobs(file_io: FileIO, handle: TableHandle, opts: CdcOptions,
                units: Sequence[LineRange], parallelism: int) -> list[pa.RecordBatch]:
    """:func:`decoded_blobs` run in this process, without a Spark job (a batch too small for
    a job's fixed cost to pay off: :func:`pipelines.cdc.batch.passes.write_pass_local`)."""
    decode = blob_decoder(file_io, handle, opts, units, parallelism, True)
    return list(decode(iter([pa.record_batch({"id": pa.array(range(len(units)),
                                                             pa.int64())})])))


def with_constants(out: pa.Table, constants: Sequence[tuple[str, str]]) -> pa.Table:
    """``out`` (decoded rows) with the ``constants`` columns set to their value on every
    row (:attr:`pipelines.cdc.ingest.CdcOptions.constant_columns`)."""
    for name, value in constants:
        i = out.schema.get_field_index(name)
        out = out.set_column(i, out.schema.field(i),
                             pa.repeat(pa.scalar(value, out.schema.field(i).type), out.num_rows))
    return out


def decode_files(spark: SparkSession, file_io: FileIO, files: Sequence[str],
                 handle: TableHandle, opts: CdcOptions) -> DataFrame:
    """The change rows of every event in ``files`` (:func:`pipelines.cdc.decode.decode_file`:
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
        for t in blob_tables(batches):
            yield from t.to_batches(max_chunksize=65536)

    return decoded_blobs(spark, file_io, files, handle, opts).mapInArrow(expand,
                                                                         StructType(fields))


def sequence_column(handle: TableHandle, opts: CdcOptions) -> str | None:
    """The table column the events' source position fills: ``opts.sequence_column`` (checked
    to be a column), else the table's single-column ``sequence.field``, else None."""
    if opts.sequence_column is not None:
        handle.schema.field(opts.sequence_column)
        return opts.sequence_column
    raw = handle.schema.options.get(CoreOptions.SEQUENCE_FIELD)
    if raw and "," not in raw and raw.strip() in handle.schema.field_names:
        return raw.strip()
    return None
