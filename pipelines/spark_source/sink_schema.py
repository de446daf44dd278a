"""The columns of a write through the ``paimon`` data source against the table's schema.

Every column a ``df.write`` / ``writeStream`` / SQL ``INSERT`` hands the source is written or
refused, never dropped (paimon-spark's behaviour, ``SchemaHelper.mergeSchema``):

* by default, a column the table lacks is refused with one line naming the column(s) and the
  table, and so is a table column the rows lack;
* with the write option ``write.merge-schema`` = ``true`` (paimon-spark's name; ``mergeSchema``,
  Spark's and Delta's, is accepted too; or the session conf ``spark.paimon.write.merge-schema``)
  the columns the table lacks are added (``ALTER TABLE ADD COLUMN``, nullable, at the end, in
  the rows' order) and table columns the rows lack are written as NULL (a NOT NULL column then
  fails the write, naming it); an existing column whose Spark type is a numeric widening of the
  table's (``INT`` -> ``BIGINT``, ``FLOAT`` -> ``DOUBLE``, ``DECIMAL(p, s)`` ->
  ``DECIMAL(q > p, s)``) is widened (not a partition or primary-key column: those keep their
  type, and each value is checked). Other differences keep the table's type: the writer
  converts each value exactly or refuses it (as without the option). paimon-spark's
  ``write.merge-schema.explicit-cast`` (lossy retyping, ``BIGINT`` -> ``INT``, ``STRING`` ->
  ``DATE``) is refused when it would be needed: paimon_core changes types by widening only
  (:mod:`paimon_core.schema_change`).

When the schema changes: paimon-spark commits the new schema first and writes afterwards (a
failed write leaves the new columns behind). Here the new schema is computed on the driver
(:func:`paimon_core.schema_change.apply_changes`), the tasks write their files with it, and the
driver publishes it (:func:`~paimon_core.schema_change.publish_schema`) only after every task
succeeded, right before the data commit: a failing task leaves the table's schema as it was.
(Should that final data commit itself fail, the schema published just before it stays, as
with paimon-spark.)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from paimon_core import SchemaChange, SchemaError, TableSchema, UnsupportedError
from paimon_core.integration import AtomicType, TypeRoot, to_arrow_type
from paimon_core.schema_change import (
    AddColumn,
    UpdateColumnType,
    apply_changes,
    check_type_change,
    publish_schema,
)
from pipelines.config import TableHandle
from pipelines.spark_types import paimon_type, spark_type

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = ["EXPLICIT_CAST", "MERGE_SCHEMA", "MERGE_SCHEMA_ALIAS", "WriteSchema",
           "write_schema"]

#: write options (declared in :mod:`pipelines.spark_source.options`)
MERGE_SCHEMA = "write.merge-schema"
MERGE_SCHEMA_ALIAS = "mergeSchema"
EXPLICIT_CAST = "write.merge-schema.explicit-cast"

_NUMERIC = frozenset({TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT,
                      TypeRoot.FLOAT, TypeRoot.DOUBLE, TypeRoot.DECIMAL})


def _flag(options: Mapping[str, str], key: str) -> bool:
    """A boolean write option (keys are case-insensitive: Spark lower-cases them)."""
    lowered = {str(k).lower(): str(v).strip().lower() for k, v in options.items()}
    return lowered.get(key.lower()) == "true"


@dataclass(frozen=True)
class WriteSchema:
    """The schema one write's rows go into.

    Attributes:
        handle: the table with the schema the tasks write with (the evolved one, not yet
            published, when :attr:`evolved`).
        evolved: the schema was changed for this write: :meth:`publish` before the commit.
        missing: table columns the rows lack, written as NULL (``write.merge-schema``).
    """

    handle: TableHandle
    evolved: bool = False
    missing: tuple[str, ...] = ()

    def publish(self) -> None:
        """Publish the evolved schema (no-op otherwise; idempotent: a stream's later
        micro-batches find it published)."""
        if self.evolved:
            h = self.handle
            publish_schema(h.settings.catalog().file_io, h.path, h.schema)

    def fill(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """``batches`` with a NULL column for each of :attr:`missing`."""
        if not self.missing:
            yield from batches
            return
        types = {n: to_arrow_type(self.handle.schema.field(n).type) for n in self.missing}
        for b in batches:
            cols = [*b.columns, *(pa.nulls(b.num_rows, types[n]) for n in self.missing)]
            yield pa.RecordBatch.from_arrays(cols, names=[*b.schema.names, *self.missing])


def _widening(name: str, table_type: AtomicType, given: AtomicType) -> bool:
    if table_type.root not in _NUMERIC or given.root not in _NUMERIC:
        return False
    try:
        check_type_change(name, table_type, given)
    except SchemaError:
        return False
    return True


def _type_changes(schema: TableSchema, rows: StructType, explicit_cast: bool,
                  identifier: str) -> list[SchemaChange]:
    keys = {*schema.primary_keys, *schema.partition_keys}
    changes: list[SchemaChange] = []
    for f in rows.fields:
        if f.name not in schema.field_names:
            continue
        current = schema.field(f.name).type
        if spark_type(current) == f.dataType:
            continue  # Spark cannot say more (a STRING into VARCHAR(n): values are checked)
        given = paimon_type(f.dataType)
        if (f.name not in keys and isinstance(current, AtomicType)
                and isinstance(given, AtomicType) and _widening(f.name, current, given)):
            changes.append(UpdateColumnType(f.name, given, keep_nullability=True))
        elif explicit_cast:
            raise UnsupportedError(
                f"option {EXPLICIT_CAST}=true: column {f.name!r} of {identifier} would change "
                f"from {current.sql()} to {given.sql()}; paimon_core changes column types by "
                "widening only (and never a key's): drop the option, and the values are "
                "written into the column's type when each fits exactly")
    return changes


def write_schema(handle: TableHandle, rows: StructType, options: Mapping[str, str],
                 ignore: Sequence[str] = ()) -> WriteSchema:
    """The schema the ``rows`` of a write into ``handle``'s table are written with (see the
    module docs); ``ignore``: input columns that are not data (the row kind column).

    Raises:
        SchemaError: a column the table lacks, or a table column the rows lack, without
            ``write.merge-schema``; a change the table does not allow.
        UnsupportedError: ``write.merge-schema.explicit-cast`` asked for a lossy retyping.
    """
    schema, ident = handle.schema, handle.identifier
    given = [f for f in rows.fields if f.name not in ignore]
    names = [f.name for f in given]
    extra = [n for n in names if n not in schema.field_names]
    missing = tuple(n for n in schema.field_names if n not in names)
    merge = _flag(options, MERGE_SCHEMA) or _flag(options, MERGE_SCHEMA_ALIAS)
    if not merge:
        if extra:
            raise SchemaError(
                f"column(s) {extra} of the written rows are not in table {ident} (columns "
                f"{list(schema.field_names)}): drop them, or write with option "
                f"{MERGE_SCHEMA}=true to add them to the table")
        if missing:
            raise SchemaError(
                f"the written rows lack column(s) {list(missing)} of table {ident}: add them, "
                f"or write with option {MERGE_SCHEMA}=true to write NULL into them")
        return WriteSchema(handle)
    changes: list[SchemaChange] = [
        AddColumn(f.name, paimon_type(f.dataType, True)) for f in given if f.name in extra]
    changes += _type_changes(schema, rows, _flag(options, EXPLICIT_CAST), ident)
    if not changes:
        return WriteSchema(handle, missing=missing)
    evolved = apply_changes(schema, changes,
                            has_snapshots=handle.open().latest_snapshot() is not None)
    return WriteSchema(TableHandle(handle.settings, ident, handle.path, evolved),
                       evolved=True, missing=missing)
