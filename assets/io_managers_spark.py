"""The Spark DataFrame IO manager: :class:`PaimonSparkIOManager`.

The same asset key -> table mapping, partitions, write modes, schema evolution and metadata as
the Arrow IO managers (:mod:`assets.io_managers`); the DataFrame is written by Spark tasks
through :func:`pipelines.writer.write_dataframe` (rows bucketed by Paimon's hash, one commit
on the driver) and read through the ``paimon`` data source (:mod:`pipelines.spark_source.source`:
projection and the partition filter pushed into the scan). New tables and columns take the
Paimon type of each Spark type (:func:`pipelines.spark_types.paimon_type`).

Example:
    >>> io = PaimonSparkIOManager(catalog=PaimonCatalog(warehouse="/data/wh"),   # doctest: +SKIP
    ...                           spark=SparkResource(master="local[2]"))
"""

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import dagster as dg

from assets.io_managers import PaimonIOManager, typed_specs
from assets.resources import SparkResource
from paimon_core import CommitOptions, DataType, FileStoreTable, SchemaError
from pipelines.config import CatalogSettings

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql import types as T

__all__ = ["PaimonSparkIOManager", "SparkFrame"]


def _condition(spec: Mapping[str, Any]) -> "Column":
    from pyspark.sql import functions as F

    cond = None
    for c, v in spec.items():
        leaf = F.col(c) == F.lit(v)
        cond = leaf if cond is None else cond & leaf
    assert cond is not None
    return cond


def _any_of(specs: list[dict[str, Any]]) -> "Column":
    cond = _condition(specs[0])
    for s in specs[1:]:
        cond = cond | _condition(s)
    return cond


def _has_null_type(t: "T.DataType") -> bool:
    """Whether a Spark type is ``NullType`` (``F.lit(None)``, an all-None column) or holds
    one: no column type of its own."""
    from pyspark.sql import types as T

    if isinstance(t, T.NullType):
        return True
    if isinstance(t, T.ArrayType):
        return _has_null_type(t.elementType)
    if isinstance(t, T.MapType):
        return _has_null_type(t.keyType) or _has_null_type(t.valueType)
    if isinstance(t, T.StructType):
        return any(_has_null_type(f.dataType) for f in t.fields)
    return False


class SparkFrame:
    """A Spark DataFrame as a :class:`assets.frames.Frame`."""

    def __init__(self, df: "DataFrame", settings: CatalogSettings) -> None:
        self.df = df
        self.settings = settings

    @property
    def columns(self) -> list[str]:
        return list(self.df.columns)

    def fields(self) -> list[tuple[str, DataType]]:
        from pipelines.spark_types import paimon_type

        out = []
        for f in self.df.schema.fields:
            try:
                out.append((f.name, paimon_type(f.dataType, f.nullable)))
            except SchemaError as e:
                raise SchemaError(f"column {f.name!r} cannot be stored exactly: {e}") from e
        return out

    def with_constant(self, column: str, value: Any, t: DataType) -> "SparkFrame":
        from pyspark.sql import functions as F

        from pipelines.spark_types import spark_type

        return SparkFrame(self.df.withColumn(column, F.lit(value).cast(spark_type(t))),
                          self.settings)

    def untyped(self) -> list[str]:
        return [f.name for f in self.df.schema.fields if _has_null_type(f.dataType)]

    def cast(self, column: str, t: DataType) -> "SparkFrame":
        from pyspark.sql import functions as F

        from pipelines.spark_types import spark_type

        return SparkFrame(self.df.withColumn(column, F.col(column).cast(spark_type(t))),
                          self.settings)

    def is_empty(self) -> bool:
        return bool(self.df.isEmpty())

    def check_rows_in(self, specs: list[dict[str, Any]]) -> None:
        from pyspark.sql import functions as F

        outside = self.df.filter(~F.coalesce(_any_of(specs), F.lit(False))).limit(1).collect()
        if outside:
            row = {c: outside[0][c] for c in specs[0]}
            raise SchemaError(f"a row has partition {row}, outside the run's partitions {specs}")

    def write(self, table: FileStoreTable, specs: list[dict[str, Any]] | None,
              props: Mapping[str, str], kinds: str | None, *, overwrite: bool) -> int:
        from pipelines.writer import WriteSpec, write_dataframe

        options = CommitOptions(properties=props, dynamic_partition_overwrite=False)

        def commit_as() -> WriteSpec:  # a user of its own for every commit, as before
            return WriteSpec.new("spark", options=options)

        ident = str(table.identifier)
        if not overwrite:
            return write_dataframe(self.df, self.settings, ident, mode="append",
                                   row_kind_column=kinds, spec=commit_as()).rows
        if specs is None:
            return write_dataframe(self.df, self.settings, ident, mode="overwrite",
                                   row_kind_column=kinds, spec=commit_as()).rows
        rows = 0
        for spec in specs:
            part = self.df if len(specs) == 1 else self.df.filter(_condition(spec))
            rows += write_dataframe(part, self.settings, ident, mode="overwrite",
                                    overwrite_partition=spec, row_kind_column=kinds,
                                    spec=commit_as()).rows
        return rows


class PaimonSparkIOManager(PaimonIOManager):
    """Stores and loads ``pyspark.sql.DataFrame`` (see the module docstring).

    Attributes:
        spark: the run's Spark session (``SparkResource``).
    """

    spark: SparkResource

    def frame(self, obj: Any) -> SparkFrame:
        from pyspark.sql import DataFrame

        if not isinstance(obj, DataFrame):
            raise SchemaError(f"{type(self).__name__} stores Spark DataFrames, not "
                              f"{type(obj).__name__}")
        return SparkFrame(obj, self.catalog.settings())

    def load_input(self, context: dg.InputContext) -> "DataFrame":
        table, columns, specs = self.input_request(context)
        settings = self.catalog.settings()
        options = {"warehouse": settings.warehouse,
                   **{f"storage.{k}": v for k, v in settings.storage_options.items()}}
        df = self.spark.session().read.format("paimon").options(**options).load(
            str(table.identifier))
        if specs is not None:
            df = df.filter(_any_of(typed_specs(table, specs)))
        return df.select(*columns) if columns is not None else df
