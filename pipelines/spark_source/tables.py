"""Tables by name in Spark SQL: which table and warehouse a ``paimon`` source call is about.

What Spark 4.3 passes a Python data source (measured, see ``tests/pipelines/test_spark_sql.py``):

* ``CREATE TABLE t USING paimon OPTIONS (...)`` *without* a column list asks the source for its
  schema once, with the table's OPTIONS (plus ``provider``, ``owner`` and an ``option.``-prefixed
  copy of each), and stores the schema it returns in the session catalog;
* every later ``SELECT`` / ``INSERT`` on ``t`` hands ``reader(schema)`` / ``writer(schema, ...)``
  an *empty* option map, but the stored schema, field metadata included;
* a ``CREATE TABLE`` *with* a column list never calls the source: nothing names the Paimon table.

So :meth:`~pipelines.spark_source.source.PaimonDataSource.schema` stamps the table's OPTIONS (the
table,
the warehouse, scan options ...) into every field's metadata (:func:`with_identity`), and
reads and writes take them back from the schema when the options name no table
(:func:`effective_options`). An ``INSERT ... SELECT`` whose every column matches the table's
by name and type reaches the writer with none of it (Spark hands it the query's columns as
they are): the writer then refuses with a message saying so (alias or cast one column, or
write with ``df.write.format("paimon").save("db.t")``). The Python
workers that run the source do not see the session conf, so the ``spark.paimon.*`` defaults
(``spark.paimon.warehouse``, storage options) are bound into the registered source class by
:func:`pipelines.spark_source.sql.register_sql`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = ["CREATE_TABLE_EXTRAS", "CREATE_TABLE_MARK", "OPTIONS_META", "SESSION_PREFIX",
           "WAREHOUSE_CONF",
           "effective_options", "table_identity", "with_identity"]

#: session conf prefix of the source's defaults (``spark.paimon.warehouse``, ``spark.paimon.s3.*``)
SESSION_PREFIX = "spark.paimon."
#: the session conf naming the default warehouse
WAREHOUSE_CONF = SESSION_PREFIX + "warehouse"
#: the field metadata key carrying a catalog table's OPTIONS (JSON), its identity among them
OPTIONS_META = "paimon.options"
#: the option Spark adds when a ``CREATE TABLE ... USING paimon`` asks for the schema
CREATE_TABLE_MARK = "provider"
#: options Spark adds to a ``CREATE TABLE``'s own (``option.<key>`` copies each key too)
CREATE_TABLE_EXTRAS = ("provider", "owner")


def table_identity(schema: StructType | None) -> dict[str, str]:
    """The OPTIONS a catalog table's stored schema carries (:func:`with_identity`); empty
    when it carries none."""
    for f in schema.fields if schema is not None else ():
        raw = (f.metadata or {}).get(OPTIONS_META)
        if raw:
            return {str(k): str(v) for k, v in json.loads(raw).items()}
    return {}


def effective_options(options: Mapping[str, str], schema: StructType | None,
                      defaults: Mapping[str, str]) -> dict[str, str]:
    """The options of one source call: ``defaults`` (session), then the OPTIONS a catalog
    table's ``schema`` carries (only where the options name no table), then ``options``.
    Keys are lower case (Spark's options are case-insensitive)."""
    given = {str(k).lower(): str(v) for k, v in options.items()}
    out = {str(k).lower(): str(v) for k, v in defaults.items()}
    if not (given.get("table") or given.get("path")):
        out.update(table_identity(schema))
    out.update(given)
    return out


def with_identity(schema: StructType, options: Mapping[str, str]) -> StructType:
    """``schema`` with ``options`` (less Spark's additions) in every field's metadata (what a
    later ``SELECT`` / ``INSERT`` on a catalog table gets back) when the call is a
    ``CREATE TABLE`` (Spark adds the ``provider`` option); other schemas are left alone.

    Every field, because an ``INSERT ... SELECT`` hands the writer the query's columns: Spark
    puts the table's field metadata only on those it renames or casts (a column that matches
    the table's by name and type keeps the query's own, empty, metadata)."""
    from pyspark.sql.types import StructField, StructType

    table = options.get("table") or options.get("path")
    if not schema.fields or not table or CREATE_TABLE_MARK not in options:
        return schema
    kept = {k: str(v) for k, v in options.items()
            if k not in CREATE_TABLE_EXTRAS and not k.startswith("option.")}
    stamp = json.dumps(kept, sort_keys=True)
    return StructType([StructField(f.name, f.dataType, f.nullable,
                                   {**(f.metadata or {}), OPTIONS_META: stamp})
                       for f in schema.fields])
