"""Batch INSERT OVERWRITE: load Parquet / CSV / JSON files (or another Paimon table) and
replace static or dynamic partitions of a table in one OVERWRITE commit.

Paimon's INSERT OVERWRITE semantics (``TableCommit.overwrite``):

* ``--partition k=v[,k2=v2]``: a static spec (a prefix of the partition keys is allowed):
  partition columns missing from the input are filled from it, and input rows of another
  partition fail the commit. With ``dynamic-partition-overwrite`` (the table option, true by
  default) only the partitions of the spec that receive rows are replaced; with it false (or
  ``--static``) every partition the spec matches is, even by nothing.
* no ``--partition``: dynamic overwrite of exactly the partitions present in the input; with
  the option false, or ``--whole-table``, the whole table is replaced.

Local inputs are read by Spark's own readers; object-storage inputs (``s3://``) by pyarrow
through paimon_core's FileIO in the Python workers (no ``s3a`` needed). CSV and JSON are
read with the table's schema (CSV with a header line). Columns are matched by name; nullable
table columns missing from the input are NULL; values are cast to the column types with
Spark's ANSI cast (a value that does not fit fails the job) and checked again by the writer.

Run (:mod:`pipelines.jobs.batch_overwrite`)::

    python -m pipelines.jobs.batch_overwrite --warehouse W --table db.t --input PATH
        --format parquet|csv|json [--partition dt=2024-01-01 [--static]] [--whole-table]
    python -m pipelines.jobs.batch_overwrite --warehouse W --table db.t --source-table db.src
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from paimon_core import DataField, SchemaError, TableSchema
from paimon_core.integration import FileIO
from pipelines.config import (
    CatalogSettings,
    TableHandle,
)
from pipelines.session import default_parallelism
from pipelines.spark_types import arrow_for_spark, spark_schema, spark_type
from pipelines.writer import WriteResult, WriteSpec, write_dataframe

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["FORMATS", "conform_to_table", "load_files", "overwrite"]

log = logging.getLogger(__name__)
FORMATS = ("parquet", "csv", "json")


def _is_remote(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def _input_files(file_io: FileIO, path: str) -> list[str]:
    if file_io.is_dir(path):
        return sorted(s.path for s in file_io.list_status(path)
                      if not s.is_dir and not s.path.rsplit("/", 1)[-1].startswith(("_", ".")))
    return [path]


def _read_remote(data: bytes, fmt: str, target: pa.Schema) -> pa.Table:
    if fmt == "parquet":
        import pyarrow.parquet as pq

        t = pq.read_table(io.BytesIO(data))
    elif fmt == "csv":
        import pyarrow.csv as pcsv

        t = pcsv.read_csv(io.BytesIO(data), convert_options=pcsv.ConvertOptions(
            column_types={f.name: f.type for f in target}))
    else:
        import pyarrow.json as pjson

        t = pjson.read_json(io.BytesIO(data), parse_options=pjson.ParseOptions(
            explicit_schema=target, unexpected_field_behavior="infer"))
    cols = [f.name for f in target if f.name in t.column_names]
    extra = [c for c in t.column_names if c not in cols]
    return t.select([*cols, *extra])


def load_files(spark: SparkSession, path: str, fmt: str, schema: TableSchema,
               settings: CatalogSettings) -> DataFrame:
    """Parquet / CSV / JSON files (a file or a directory) as a DataFrame: CSV and JSON with the
    table's schema, Parquet with its own. Object storage is read in the Python workers."""
    if fmt not in FORMATS:
        raise SchemaError(f"unknown input format {fmt!r} (expected one of {FORMATS})")
    if not _is_remote(path):
        reader = spark.read
        if fmt == "csv":
            return reader.schema(spark_schema(_nullable(schema.fields))).option(
                "header", True).csv(path)
        if fmt == "json":
            return reader.schema(spark_schema(_nullable(schema.fields))).json(path)
        return reader.parquet(path)
    from pyspark.sql import functions as F

    fio = FileIO(path, dict(settings.storage_options))
    files = _input_files(fio, path)
    if not files:
        raise SchemaError(f"no input files under {path}")
    target = arrow_for_spark(spark_schema(_nullable(schema.fields)))
    if fmt == "parquet":
        import pyarrow.parquet as pq

        with fio.open_input(files[0]) as fh:
            first = pq.read_schema(fh)
        from pyspark.sql.pandas.types import from_arrow_schema

        out_schema = from_arrow_schema(first)
        target = first
    else:
        out_schema = spark_schema(_nullable(schema.fields))

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            for p in b.column("path").to_pylist():
                t = _read_remote(fio.read_bytes(p), fmt, target)
                cols = [t.column(f.name).cast(f.type) if f.name in t.column_names
                        else pa.nulls(t.num_rows, f.type) for f in target]
                yield from pa.Table.from_arrays(cols, schema=target).to_batches()

    df = spark.createDataFrame([(i, p) for i, p in enumerate(files)], "idx int, path string")
    n = max(1, min(len(files), default_parallelism(spark) * 2))
    return df.repartitionById(n, F.col("idx")).select("path").mapInArrow(read, out_schema)


def _nullable(fields: Sequence[DataField]) -> list[DataField]:
    return [DataField(f.id, f.name, f.type.with_nullable(True), f.description) for f in fields]


def conform_to_table(df: DataFrame, schema: TableSchema,
                     static_partition: Mapping[str, Any] | None = None) -> DataFrame:
    """Select the table's columns from ``df`` by name, cast to the column types; partition
    columns missing from ``df`` are taken from ``static_partition``, other missing nullable
    columns are NULL.

    Raises:
        SchemaError: ``df`` lacks a NOT NULL column, or has columns the table does not have.
    """
    from pyspark.sql import functions as F

    extra = [c for c in df.columns if c not in schema.field_names]
    if extra:
        raise SchemaError(f"input has column(s) {extra} that the table does not have")
    cols = []
    for f in schema.fields:
        st = spark_type(f.type)
        if f.name in df.columns:
            c = F.col(f.name)
            cols.append((c if df.schema[f.name].dataType == st else c.cast(st)).alias(f.name))
        elif static_partition is not None and f.name in static_partition:
            cols.append(F.lit(static_partition[f.name]).cast(st).alias(f.name))
        elif f.type.nullable:
            cols.append(F.lit(None).cast(st).alias(f.name))
        else:
            raise SchemaError(f"input lacks NOT NULL column {f.name!r}")
    return df.select(*cols)


def overwrite(
    spark: SparkSession,
    settings: CatalogSettings,
    identifier: str,
    source: DataFrame,
    *,
    partition: Mapping[str, Any] | None = None,
    whole_table: bool = False,
    static: bool = False,
    write: WriteSpec | None = None,
) -> WriteResult:
    """INSERT OVERWRITE ``source`` into ``identifier`` (see the module docs: ``partition`` a
    static spec, ``whole_table`` / ``static`` force a static overwrite); one OVERWRITE commit
    as ``write`` says (default: a fresh ``spark-<uuid>`` user, a batch commit; its options'
    properties go into the snapshot, with ``job = batch_overwrite``)."""
    handle = TableHandle.load(settings, identifier)
    if partition is not None and whole_table:
        raise SchemaError("give either a static partition or whole_table, not both")
    df = conform_to_table(source, handle.schema, partition)
    spec: Mapping[str, Any] | None = dict(partition) if partition is not None else (
        {} if whole_table else None)
    write = write or WriteSpec.new("spark")
    options = write.options.with_properties({"job": "batch_overwrite", **write.options.properties})
    if whole_table or static:
        options = replace(options, dynamic_partition_overwrite=False)
    return write_dataframe(df, settings, identifier, mode="overwrite", overwrite_partition=spec,
                           spec=replace(write, options=options), handle=handle)
