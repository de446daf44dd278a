"""What a row-level change does to each row, as one Spark DataFrame: the *change plan*.

UPDATE, DELETE and MERGE are all planned the same way, as delta-spark and paimon-spark's
``MergeIntoPaimonTable`` do: the target snapshot (:mod:`pipelines.rowlevel.target`), joined
with the MERGE source when there is one, is projected into the table's columns holding each
row's new values plus ``_paimon_action``:

* ``keep``: a target row left as it is (needed by copy-on-write, which rewrites the whole
  file around a changed row);
* ``update`` / ``delete``: a target row changed by the first clause whose condition holds;
* ``insert``: a source row that matched no target row, inserted by the first
  not-matched clause whose condition holds;
* ``none``: a source row that matched nothing and that no clause inserts.

A condition that evaluates to NULL does not hold (SQL). Clauses are tried in the order given,
as in Delta. Checks that depend on the data run inside the same Spark job, with
``raise_error`` (so they cost no extra pass): an update may not change a primary key (or
partition key) of a primary-key table, and on a ``partial-update`` table it may not set a
value to NULL (the merge engine would silently keep the old value).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from paimon_core import CoreOptions, PaimonError, SchemaError, TableSchema
from paimon_core.integration import MergeEngine
from pipelines.rowlevel.target import FILE_COLUMN, ROW_COLUMN
from pipelines.spark_types import spark_type

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["ACTION_COLUMN", "Clause", "MergeMatchError", "Values", "check_single_match",
           "merge_plan", "target_plan"]

ACTION_COLUMN = "_paimon_action"
_SOURCE_MARK = "_paimon_source"
Values = Mapping[str, "str | Column"]
Kind = Literal["update", "delete", "insert"]


class MergeMatchError(PaimonError, ValueError):
    """A MERGE whose source has several rows matching one target row (which one would win is
    undefined; Delta and paimon-spark refuse it too)."""


@dataclass(frozen=True)
class Clause:
    """One WHEN clause: ``kind`` with an optional ``condition`` and, for ``update`` /
    ``insert``, the values (None: every column from the source column of the same name,
    ``whenMatchedUpdateAll`` / ``whenNotMatchedInsertAll``)."""

    kind: Kind
    condition: str | Column | None = None
    values: Values | None = None


def as_column(expr: str | Column) -> Column:
    """A SQL expression string or a Column, as delta-spark accepts both."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if isinstance(expr, Column):
        return expr
    if isinstance(expr, str):
        return F.expr(expr)
    raise SchemaError(f"expected a SQL expression string or a Column, got {expr!r}")


def _holds(condition: str | Column | None) -> Column:
    from pyspark.sql import functions as F

    if condition is None:
        return F.lit(True)
    return F.coalesce(as_column(condition), F.lit(False))


def _check_columns(values: Values, schema: TableSchema, what: str) -> None:
    unknown = [k for k in values if k not in schema.field_names]
    if unknown:
        raise SchemaError(f"{what}: {unknown} are not columns of the table "
                          f"(columns: {list(schema.field_names)})")


def _clause_values(clause: Clause, schema: TableSchema, target: DataFrame | None,
                   source: DataFrame | None, source_columns: Sequence[str]) -> dict[str, Column]:
    """The new value of every table column under ``clause`` (update: unassigned columns keep
    the target's value; insert: they are NULL, as in Delta)."""
    from pyspark.sql import functions as F

    if clause.values is None:  # ...All: every column from the source column of its name
        assert source is not None
        missing = [c for c in schema.field_names if c not in source_columns]
        if missing:
            raise SchemaError(f"when{'Matched' if clause.kind == 'update' else 'NotMatched'}"
                              f"{'Update' if clause.kind == 'update' else 'Insert'}All: the "
                              f"source lacks column(s) {missing} of the table")
        return {c: source[c] for c in schema.field_names}
    _check_columns(clause.values, schema, f"{clause.kind} values")
    out: dict[str, Column] = {}
    for c in schema.field_names:
        if c in clause.values:
            out[c] = as_column(clause.values[c])
        elif clause.kind == "update":
            assert target is not None
            out[c] = target[c]
        else:
            out[c] = F.lit(None)
    return out


def _project(branches: Sequence[tuple[Column, Kind, dict[str, Column] | None]],
             schema: TableSchema, target: DataFrame, has_target: Column,
             default: Column, frame: DataFrame, guard: bool) -> DataFrame:
    """``frame`` projected into the change plan: for each row the first branch ``(predicate,
    kind, values)`` that holds decides (values None: the target row's), else ``default`` is
    the action and the target's values are kept."""
    from pyspark.sql import functions as F

    action: Column | None = None
    for pred, kind, _ in branches:
        action = (F.when(pred, F.lit(kind)) if action is None
                  else action.when(pred, F.lit(kind)))
    action = default if action is None else action.otherwise(default)
    cols = []
    for f in schema.fields:
        value: Column | None = None
        for pred, _, values in branches:
            v = target[f.name] if values is None else values[f.name]
            value = F.when(pred, v) if value is None else value.when(pred, v)
        out = target[f.name] if value is None else value.otherwise(target[f.name])
        out = out.cast(spark_type(f.type))
        if guard:
            out = _guarded(out, f.name, schema, target[f.name], action)
        cols.append(out.alias(f.name))
    return frame.select(*cols, action.alias(ACTION_COLUMN),
                        F.when(has_target, target[FILE_COLUMN]).alias(FILE_COLUMN),
                        F.when(has_target, target[ROW_COLUMN]).alias(ROW_COLUMN))


def _guarded(new: Column, name: str, schema: TableSchema, old: Column,
             action: Column) -> Column:
    """``new``, failing the job for an update that a primary-key table cannot take: a
    changed key column, or (``partial-update``) a value set to NULL."""
    from pyspark.sql import functions as F

    keys = [*schema.primary_keys, *(k for k in schema.partition_keys
                                    if k not in schema.primary_keys)]
    update = action == F.lit("update")
    if name in keys:
        bad = update & ~new.eqNullSafe(old)
        what = (f"paimon_core.errors.SchemaError: an update may not change key column "
                f"{name!r} of a primary-key table (write a delete and an insert instead); "
                "old value ")
        msg = F.concat(F.lit(what), F.coalesce(old.cast("string"), F.lit("NULL")),
                       F.lit(", new value "), F.coalesce(new.cast("string"), F.lit("NULL")))
        return F.when(bad, F.raise_error(msg)).otherwise(new)
    if CoreOptions(schema.options).merge_engine is MergeEngine.PARTIAL_UPDATE:
        bad = update & new.isNull() & old.isNotNull()
        text = (f"paimon_core.errors.SchemaError: an update sets column {name!r} to NULL on "
                "a partial-update table, whose merge engine would keep the old value instead")
        return F.when(bad, F.raise_error(F.lit(text))).otherwise(new)
    return new


def target_plan(target: DataFrame, schema: TableSchema, kind: Literal["update", "delete"],
                condition: str | Column | None, values: Values | None) -> DataFrame:
    """The plan of ``update(condition, set)`` / ``delete(condition)``: every target row,
    ``update``/``delete`` where ``condition`` holds, ``keep`` elsewhere."""
    from pyspark.sql import functions as F

    clause = Clause(kind, condition, values)
    new = _clause_values(clause, schema, target, None, ()) if kind == "update" else None
    branch = (_holds(condition), kind, new)
    return _project([branch], schema, target, F.lit(True), F.lit("keep"), target,
                    guard=bool(schema.primary_keys))


def merge_plan(source: DataFrame, target: DataFrame, schema: TableSchema,
               condition: str | Column, matched: Sequence[Clause],
               not_matched: Sequence[Clause], *, copy_on_write: bool) -> DataFrame:
    """The plan of a MERGE (see the module docs). Primary-key tables need only the rows
    that match (and, with insert clauses, the source rows that match nothing); copy-on-write
    needs every target row, as unchanged rows of a touched file are rewritten."""
    from pyspark.sql import functions as F

    src = source.withColumn(_SOURCE_MARK, F.lit(True))
    if copy_on_write:
        how = "full_outer" if not_matched else "right_outer"
    else:
        how = "left_outer" if not_matched else "inner"
    joined = src.join(target, as_column(condition), how)
    has_source = src[_SOURCE_MARK].isNotNull()
    has_target = target[ROW_COLUMN].isNotNull()
    both = has_source & has_target
    only_source = has_source & ~has_target
    columns = list(source.columns)
    branches: list[tuple[Column, Kind, dict[str, Column] | None]] = []
    for c in matched:
        values = (_clause_values(c, schema, target, source, columns) if c.kind == "update"
                  else None)
        branches.append((both & _holds(c.condition), c.kind, values))
    for c in not_matched:
        branches.append((only_source & _holds(c.condition), "insert",
                         _clause_values(c, schema, target, source, columns)))
    default = F.when(has_target, F.lit("keep")).otherwise(F.lit("none"))
    return _project(branches, schema, target, has_target, default, joined,
                    guard=bool(schema.primary_keys))


def check_single_match(source: DataFrame, target: DataFrame, condition: str | Column,
                       schema: TableSchema, table: str) -> None:
    """Raise :class:`MergeMatchError` when a target row matches several source rows (one
    Spark job; only needed when the MERGE has matched clauses)."""
    from pyspark.sql import functions as F

    shown = list(schema.primary_keys) or list(schema.field_names)
    dup = (source.join(target, as_column(condition), "inner")
           .groupBy(target[ROW_COLUMN])
           .agg(F.count(F.lit(1)).alias("n"), *[F.first(target[c]).alias(c) for c in shown])
           .filter(F.col("n") > 1))
    rows = dup.limit(1).collect()
    if rows:
        total = dup.count()
        row = rows[0]
        example = {c: row[c] for c in shown}
        raise MergeMatchError(
            f"merge into {table}: {row['n']} source rows match the target row {example}"
            f"{f' (and {total - 1} more target rows)' if total > 1 else ''}; a target row "
            "may be updated or deleted by one source row only: deduplicate the source")
