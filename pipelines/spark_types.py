"""Paimon types <-> Spark SQL types, and the Arrow batches Spark accepts from Python.

Paimon -> Spark (reads)::

    BOOLEAN/TINYINT/SMALLINT/INT/BIGINT/FLOAT/DOUBLE -> the same Spark type
    DECIMAL(p, s)        -> DecimalType(p, s)
    CHAR/VARCHAR/STRING  -> StringType          BINARY/VARBINARY/BYTES -> BinaryType
    DATE                 -> DateType            TIME(p)                -> TimeType(min(p, 6))
    TIMESTAMP(p)         -> TimestampNTZType    TIMESTAMP(p) WITH LOCAL TIME ZONE -> TimestampType
    ARRAY<T> / MAP<K, V> / ROW<...> -> ArrayType / MapType / StructType
    MULTISET<T>          -> MapType(T, IntegerType)

Spark keeps microseconds: TIMESTAMP(7..9) values are truncated to microseconds on the way
into Spark (documented loss; Paimon itself keeps them). Spark -> Paimon (new columns, CDC schema
evolution) is the inverse, with StringType -> STRING and BinaryType -> BYTES.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from paimon_core import DataField, DataType, RowType, SchemaError, parse_sql_type
from paimon_core.integration import (
    BINARY_ROOTS,
    STRING_ROOTS,
    ArrayType,
    AtomicType,
    MapType,
    MultisetType,
    TypeRoot,
)

if TYPE_CHECKING:
    from pyspark.sql import types as T

__all__ = ["arrow_for_spark", "conform_to_spark", "paimon_type", "spark_schema", "spark_type"]


def spark_type(t: DataType) -> T.DataType:
    """The Spark type of a Paimon type (see the module table)."""
    from pyspark.sql import types as T

    if isinstance(t, ArrayType):
        return T.ArrayType(spark_type(t.element), t.element.nullable)
    if isinstance(t, MultisetType):
        return T.MapType(spark_type(t.element), T.IntegerType(), False)
    if isinstance(t, MapType):
        return T.MapType(spark_type(t.key), spark_type(t.value), t.value.nullable)
    if isinstance(t, RowType):
        return T.StructType([T.StructField(f.name, spark_type(f.type), f.type.nullable)
                             for f in t.fields])
    r = t.root
    simple: dict[TypeRoot, T.DataType] = {
        TypeRoot.BOOLEAN: T.BooleanType(), TypeRoot.TINYINT: T.ByteType(),
        TypeRoot.SMALLINT: T.ShortType(), TypeRoot.INT: T.IntegerType(),
        TypeRoot.BIGINT: T.LongType(), TypeRoot.FLOAT: T.FloatType(),
        TypeRoot.DOUBLE: T.DoubleType(), TypeRoot.DATE: T.DateType(),
        TypeRoot.TIMESTAMP: T.TimestampNTZType(), TypeRoot.TIMESTAMP_LTZ: T.TimestampType(),
    }
    if r in simple:
        return simple[r]
    if r is TypeRoot.DECIMAL:
        assert t.precision is not None and t.scale is not None
        return T.DecimalType(t.precision, t.scale)
    if r in STRING_ROOTS:
        return T.StringType()
    if r in BINARY_ROOTS:
        return T.BinaryType()
    if r is TypeRoot.TIME:
        return T.TimeType(min(t.precision if t.precision is not None else 0, 6))
    raise SchemaError(f"no Spark type for {t.sql()}")  # pragma: no cover


def spark_schema(fields: Sequence[DataField]) -> T.StructType:
    """The Spark schema of Paimon columns (nullability kept)."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(f.name, spark_type(f.type), f.type.nullable)
                         for f in fields])


def paimon_type(t: T.DataType, nullable: bool = True) -> DataType:
    """The Paimon type for a Spark type (used to add columns from a DataFrame's schema).

    Raises:
        SchemaError: a Spark type Paimon has no counterpart for (intervals, variant, ...).
    """
    from pyspark.sql import types as T

    if isinstance(t, T.ArrayType):
        return ArrayType(paimon_type(t.elementType, t.containsNull), nullable)
    if isinstance(t, T.MapType):
        return MapType(paimon_type(t.keyType, False), paimon_type(t.valueType,
                                                                    t.valueContainsNull),
                       nullable)
    if isinstance(t, T.StructType):
        return RowType(tuple(DataField(i, f.name, paimon_type(f.dataType, f.nullable))
                             for i, f in enumerate(t.fields)), nullable)
    names: list[tuple[type[T.DataType], str]] = [
        (T.BooleanType, "BOOLEAN"), (T.ByteType, "TINYINT"), (T.ShortType, "SMALLINT"),
        (T.IntegerType, "INT"), (T.LongType, "BIGINT"), (T.FloatType, "FLOAT"),
        (T.DoubleType, "DOUBLE"), (T.StringType, "STRING"), (T.BinaryType, "BYTES"),
        (T.DateType, "DATE"), (T.TimestampNTZType, "TIMESTAMP(6)"),
        (T.TimestampType, "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ]
    for cls, sql in names:
        if isinstance(t, cls):
            return parse_sql_type(sql if nullable else sql + " NOT NULL")
    if isinstance(t, T.DecimalType):
        return AtomicType(TypeRoot.DECIMAL, nullable, precision=t.precision, scale=t.scale)
    raise SchemaError(f"Spark type {t.simpleString()} has no Paimon counterpart")


def arrow_for_spark(schema: T.StructType, timezone: str = "UTC") -> pa.Schema:
    """The Arrow schema Spark expects from a Python data source for ``schema``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone=timezone)


def conform_to_spark(table: pa.Table, target: pa.Schema) -> pa.Table:
    """Cast a Paimon read result to the Arrow types Spark expects (microsecond timestamps,
    ``time64[ns]``), column by column; nanosecond timestamps are truncated to microseconds."""
    if table.schema.equals(target, check_metadata=False):
        return table
    cols = []
    for f in target:
        col = table.column(f.name)
        if not col.type.equals(f.type):
            col = _cast(col, f.type)
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=target)


def _cast(col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    if pa.types.is_timestamp(target) and pa.types.is_timestamp(col.type):
        src = col.type
        if src.unit == "ns":  # truncate toward minus infinity like Spark's microsecond clock
            col = pc.floor_temporal(col, unit="microsecond") if len(col) else col
        return col.cast(pa.timestamp(target.unit, tz=target.tz), safe=False)
    return col.cast(target, safe=False)
