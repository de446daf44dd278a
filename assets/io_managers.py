"""IO managers that store Dagster assets as Paimon tables: pyarrow, pandas and polars frames.

Modelled on dagster-iceberg / dagster-deltalake (one IO manager per frame type over one shared
core; a frame type is a small :class:`Frame`: Arrow here, a Spark DataFrame in
:mod:`assets.io_managers_spark`), on the :class:`~assets.resources.PaimonCatalog` resource:

* **asset key -> table**: the key's last element is the table, the element before it the
  database (``["sales", "orders"]`` -> ``sales.orders``); a one-element key goes to the IO
  manager's ``database`` (default ``default``), or the ``database`` definition metadata.
* **first write creates the table** from the frame's schema, with the definition metadata
  ``primary_key`` (a column or a list), ``partition_by`` (default: the ``partition_expr``
  columns), ``bucket`` and ``table_options`` (Paimon options, e.g. ``merge-engine``).
* **Dagster partitions -> table partitions**: the definition metadata ``partition_expr`` names
  the table column of a partitioned asset (a dict ``{dimension: column}`` for multi
  partitions). A time window is stored as its partition key (a STRING column), its start date
  (DATE) or its start time (TIMESTAMP); a static key as the column's type. An output missing
  that column gets it; rows outside the run's partitions are refused. A partitioned output
  overwrites exactly its partitions (one static INSERT OVERWRITE per partition key); an input
  reads only its partitions.
* **write modes** (``write_mode`` config or definition metadata): ``overwrite`` (default: the
  run's partitions, or the whole table), ``append``, ``upsert`` (primary-key tables: rows
  replace the rows of their keys through the table's merge engine; a ``_row_kind`` column of
  ``+I``/``-U``/``+U``/``-D`` gives each row's kind, so ``-D`` deletes).
* **schema evolution** (``schema_update_mode``): ``update`` adds the frame's new columns as
  nullable columns (the catalog's ALTER TABLE, recorded in a new schema version) and fills the
  table's columns the frame lacks with nulls; ``error`` refuses both with a
  :class:`~paimon_core.SchemaError` naming the column.
* **untyped columns** (:func:`assets.frames.type_untyped`): an all-null or empty column (Arrow
  ``null``, a pandas object column of None, polars ``Null``) takes the table's column type; a
  new table or new column has none to take and is refused, named. An empty frame (even one
  without columns) overwrites its partitions to empty.
* **exact values only**: a value that does not fit its column (overflow, precision, time zone,
  unsupported Arrow types such as unsigned 64-bit integers) is refused with a
  :class:`~paimon_core.SchemaError` naming the column (``paimon_core``'s write-side checks).
* **inputs**: the ``columns`` input metadata selects columns.
* **metadata**: every output carries :func:`assets.metadata.table_state_metadata` (live row
  count, column schema, table name / URI, snapshot, files, sorted runs) plus the rows written;
  each commit's snapshot records the run id, asset key and partition key.

Example:
    >>> import dagster as dg                                            # doctest: +SKIP
    >>> defs = dg.Definitions(assets=[...], resources={"io_manager": PaimonPyArrowIOManager(
    ...     catalog=PaimonCatalog(warehouse="/data/wh"), database="sales")})
"""

import datetime
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import dagster as dg
import pyarrow as pa
from pydantic import Field

from assets.frames import ArrowFrame, Frame, type_untyped
from assets.metadata import commit_properties, table_state_metadata
from assets.resources import PaimonCatalog
from paimon_core import (
    DataType,
    FileStoreTable,
    FileSystemCatalog,
    Identifier,
    Predicate,
    Schema,
    SchemaError,
    TableNotExistError,
    UnsupportedError,
    parse_sql_type,
)
from paimon_core.integration import STRING_ROOTS, TypeRoot, and_, is_in, or_
from paimon_core.schema_change import AddColumn

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

__all__ = [
    "ROW_KIND_COLUMN",
    "ArrowFrame",
    "Frame",
    "PaimonIOManager",
    "PaimonPandasIOManager",
    "PaimonPolarsIOManager",
    "PaimonPyArrowIOManager",
    "PartitionSpec",
    "SchemaUpdateMode",
    "WriteMode",
    "typed_specs",
]

WriteMode = Literal["append", "overwrite", "upsert"]
SchemaUpdateMode = Literal["update", "error"]
_WRITE_MODES: tuple[str, ...] = ("append", "overwrite", "upsert")
_SCHEMA_MODES: tuple[str, ...] = ("update", "error")
#: the frame column giving each row's kind (``+I``/``-U``/``+U``/``-D``); never stored
ROW_KIND_COLUMN = "_row_kind"
DEFAULT_DATABASE = "default"

#: one Dagster partition of an output / input: table column -> value
PartitionSpec = dict[str, Any]


class PaimonIOManager(dg.ConfigurableIOManager):
    """The shared core: stores and loads Arrow tables; subclasses convert their frame type.

    Attributes:
        catalog: the warehouse (local or S3).
        database: the database of assets whose key has no prefix.
        write_mode: ``overwrite`` | ``append`` | ``upsert`` (per asset: ``write_mode``
            definition metadata).
        schema_update_mode: ``update`` | ``error`` (per asset: ``schema_update_mode``).
        row_kind_column: the frame column holding row kinds (not stored).
        count_rows: report ``dagster/row_count`` (a primary-key table's live rows need a
            merged read of its key columns).
    """

    catalog: PaimonCatalog
    database: str = Field(default=DEFAULT_DATABASE,
                          description="database of asset keys without a prefix")
    write_mode: WriteMode = "overwrite"
    schema_update_mode: SchemaUpdateMode = "update"
    row_kind_column: str = ROW_KIND_COLUMN
    count_rows: bool = True

    # ---- the frame type (subclasses)
    def to_arrow(self, obj: Any) -> pa.Table:
        if isinstance(obj, pa.RecordBatch):
            return pa.Table.from_batches([obj])
        if isinstance(obj, pa.Table):
            return obj
        raise SchemaError(f"{type(self).__name__} stores pyarrow Tables, not "
                          f"{type(obj).__name__}")

    def from_arrow(self, table: pa.Table, dagster_type: Any) -> Any:
        return table

    def frame(self, obj: Any) -> "Frame":
        """The output as a :class:`Frame` (the Spark IO manager keeps its DataFrame)."""
        return ArrowFrame(self.to_arrow(obj))

    # ---- Dagster's interface
    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        if obj is None:
            return
        meta = dict(context.definition_metadata or {})
        data = self.frame(obj)
        ident = self.identifier(context.asset_key, meta)
        mode = _choice(meta.get("write_mode", self.write_mode), _WRITE_MODES, "write_mode")
        schema_mode = _choice(meta.get("schema_update_mode", self.schema_update_mode),
                              _SCHEMA_MODES, "schema_update_mode")
        specs = self._partition_specs(context, meta) if context.has_asset_partitions else None
        catalog = self.catalog.load()
        table = _get(catalog, ident)
        data = type_untyped(data, table, ident, self.row_kind_column)
        typed = None
        if specs is not None:
            data = _with_partition_columns(data, specs, table)
            types = dict(data.fields()) if table is None else \
                {f.name: f.type for f in table.schema.fields}
            typed = [_typed_spec(types, s, ident) for s in specs]
            data.check_rows_in(typed)  # before anything is created or altered
        if table is None:
            table = self._create(catalog, ident, data, meta, specs)
        table = self._evolve(catalog, table, data, schema_mode)
        data = self._fill_missing(table, data, schema_mode)
        has_kinds = self.row_kind_column in data.columns
        if mode == "upsert" and not table.is_primary_key_table:
            raise SchemaError(f"write_mode 'upsert' needs a primary-key table; {ident} has none "
                              "(give primary_key in the asset's metadata when it is created)")
        if has_kinds and not table.is_primary_key_table:
            raise SchemaError(f"column {self.row_kind_column!r} (row kinds) needs a "
                              f"primary-key table; {ident} has none")
        if mode == "overwrite" and typed is not None:
            for spec in typed:
                _check_partition_keys(table, spec)
        props = commit_properties(context.run_id, context.asset_key.to_user_string(),
                                  _partition_label(context), **{"dagster.write-mode": mode})
        rows = data.write(table, typed, props, self.row_kind_column if has_kinds else None,
                          overwrite=mode == "overwrite")
        md = table_state_metadata(catalog.get_table(ident), count_rows=self.count_rows)
        md["paimon/rows_written"] = dg.MetadataValue.int(rows)
        md["paimon/write_mode"] = mode
        context.add_output_metadata(md)

    def load_input(self, context: dg.InputContext) -> Any:
        table, columns, specs = self.input_request(context)
        predicate = None if specs is None else _spec_predicate(table, specs)
        return self.from_arrow(table.to_arrow(columns=columns, filter=predicate),
                               context.dagster_type)

    def input_request(self, context: dg.InputContext) -> tuple[
            FileStoreTable, list[str] | None, list[PartitionSpec] | None]:
        """What an input reads: the upstream table (TableNotExistError when never written),
        the ``columns`` of the input metadata (checked), and its partitions."""
        meta = dict(context.definition_metadata or {})
        upstream = dict(context.upstream_output.definition_metadata or {}) \
            if context.upstream_output is not None else {}
        ident = self.identifier(context.asset_key, {**upstream, **meta})
        table = self.catalog.load().get_table(ident)
        columns = meta.get("columns")
        if columns is not None:
            if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
                raise SchemaError(f"input metadata 'columns' must be a list of column names, "
                                  f"not {columns!r}")
            unknown = [c for c in columns if c not in table.schema.field_names]
            if unknown:
                raise SchemaError(f"input metadata 'columns' names {unknown}, not columns of "
                                  f"{ident} ({table.schema.field_names})")
            columns = list(columns)
        specs = self._partition_specs(context, upstream) if context.has_asset_partitions \
            else None
        return table, columns, specs

    # ---- naming
    def identifier(self, key: dg.AssetKey, meta: Mapping[str, Any]) -> Identifier:
        """``db.table`` of an asset key (see the module docstring)."""
        path = key.path
        database = meta.get("database") or (path[-2] if len(path) > 1 else self.database)
        return Identifier.parse(f"{database}.{path[-1]}")

    # ---- partitions
    def _partition_specs(self, context: dg.OutputContext | dg.InputContext,
                         meta: Mapping[str, Any]) -> list[PartitionSpec]:
        """One ``{column: value}`` per Dagster partition of the run."""
        expr = meta.get("partition_expr")
        pdef = context.asset_partitions_def
        keys = list(context.asset_partition_keys)
        if expr is None:
            raise SchemaError(f"asset {context.asset_key.to_user_string()} is partitioned: give "
                              "the table column of its partitions as definition metadata "
                              "'partition_expr'")
        if isinstance(pdef, dg.MultiPartitionsDefinition):
            if not isinstance(expr, Mapping):
                raise SchemaError("a multi-partitioned asset's 'partition_expr' is a mapping "
                                  f"{{dimension: column}}, not {expr!r}")
            dims = {d.name: d.partitions_def for d in pdef.partitions_defs}
            if set(expr) != set(dims):
                raise SchemaError(f"'partition_expr' {dict(expr)} must name every dimension "
                                  f"{sorted(dims)}")
            specs: list[PartitionSpec] = []
            for key in keys:
                mk = key if isinstance(key, dg.MultiPartitionKey) else \
                    pdef.get_partition_key_from_str(key)
                specs.append({expr[d]: _raw_value(dims[d], k)
                              for d, k in mk.keys_by_dimension.items()})
            return specs
        if not isinstance(expr, str):
            raise SchemaError(f"'partition_expr' is a column name, not {expr!r}")
        return [{expr: _raw_value(pdef, k)} for k in keys]

    # ---- creation and evolution
    def _create(self, catalog: FileSystemCatalog, ident: Identifier, data: "Frame",
                meta: Mapping[str, Any], specs: list[PartitionSpec] | None) -> FileStoreTable:
        """The table of a first write, from the frame's schema and the definition metadata."""
        columns = [(n, t) for n, t in data.fields() if n != self.row_kind_column]
        pks = _names(meta.get("primary_key"), "primary_key")
        parts = _names(meta.get("partition_by"), "partition_by")
        if not parts and specs:
            parts = list(specs[0])
        options = {str(k): str(v) for k, v in dict(meta.get("table_options") or {}).items()}
        if meta.get("bucket") is not None:
            options["bucket"] = str(int(meta["bucket"]))
        if pks and "bucket" not in options:
            options["bucket"] = "1"  # a fixed bucket: what Paimon Java 0.9 readers handle best
        schema = Schema.of(columns, partition_keys=parts, primary_keys=pks, options=options)
        return catalog.create_table(ident, schema, ignore_if_exists=True)

    def _evolve(self, catalog: FileSystemCatalog, table: FileStoreTable, data: "Frame",
                mode: str) -> FileStoreTable:
        have = set(table.schema.field_names)
        new = [(n, t) for n, t in data.fields() if n not in have and n != self.row_kind_column]
        if not new:
            return table
        if mode == "error":
            raise SchemaError(f"column {new[0][0]!r} is not in table {table.identifier} "
                              f"(schema_update_mode 'error'; new columns: "
                              f"{[n for n, _ in new]})")
        catalog.alter_table(table.identifier,
                            [AddColumn(n, t.with_nullable(True)) for n, t in new])
        return catalog.get_table(table.identifier)

    def _fill_missing(self, table: FileStoreTable, data: "Frame", mode: str) -> "Frame":
        missing = [f for f in table.schema.fields if f.name not in data.columns]
        if missing and mode == "error":
            raise SchemaError(f"column {missing[0].name!r} of table {table.identifier} is not in "
                              "the output (schema_update_mode 'error')")
        # an empty frame (no rows) holds no null for a NOT NULL column it lacks
        empty = any(not f.type.nullable for f in missing) and data.is_empty()
        for f in missing:
            if not f.type.nullable and not empty:
                raise SchemaError(f"column {f.name!r} of table {table.identifier} is NOT NULL "
                                  "but not in the output")
            data = data.with_constant(f.name, None, f.type)
        return data


# ------------------------------------------------------------------------------ frame types
class PaimonPyArrowIOManager(PaimonIOManager):
    """Stores ``pyarrow.Table`` / ``RecordBatch`` outputs; loads ``pyarrow.Table``."""


class PaimonPandasIOManager(PaimonIOManager):
    """Stores and loads ``pandas.DataFrame`` (its index is not stored)."""

    def to_arrow(self, obj: Any) -> pa.Table:
        import pandas as pd

        if not isinstance(obj, pd.DataFrame):
            raise SchemaError(f"{type(self).__name__} stores pandas DataFrames, not "
                              f"{type(obj).__name__}")
        return _convert(obj, lambda c: pa.Array.from_pandas(obj[c]),
                        lambda: pa.Table.from_pandas(obj, preserve_index=False))

    def from_arrow(self, table: pa.Table, dagster_type: Any) -> "pd.DataFrame":
        return table.to_pandas()


class PaimonPolarsIOManager(PaimonIOManager):
    """Stores ``polars.DataFrame`` / ``LazyFrame`` (collected); loads a ``DataFrame``, or a
    ``LazyFrame`` when the input is annotated so."""

    def to_arrow(self, obj: Any) -> pa.Table:
        import polars as pl

        if isinstance(obj, pl.LazyFrame):
            obj = obj.collect()
        if not isinstance(obj, pl.DataFrame):
            raise SchemaError(f"{type(self).__name__} stores polars DataFrames, not "
                              f"{type(obj).__name__}")
        frame = obj
        return _convert(frame, lambda c: frame.get_column(c).to_arrow(),
                        lambda: frame.to_arrow())

    def from_arrow(self, table: pa.Table, dagster_type: Any) -> "pl.DataFrame | pl.LazyFrame":
        import polars as pl

        df = pl.from_arrow(table)
        assert isinstance(df, pl.DataFrame)
        if dagster_type is not None and getattr(dagster_type, "typing_type", None) is \
                pl.LazyFrame:
            return df.lazy()
        return df


# ------------------------------------------------------------------------------ helpers
def _convert(frame: Any, column: Any, whole: Any) -> pa.Table:
    """``whole()``, an Arrow conversion error translated to a SchemaError naming the first
    column that fails on its own."""
    try:
        out: pa.Table = whole()
        return out
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError,
            ValueError) as e:
        for name in frame.columns:
            try:
                column(name)
            except Exception as ce:
                raise SchemaError(f"column {name!r} cannot be stored exactly: {ce}") from e
        raise SchemaError(f"the frame cannot be converted to Arrow: {e}") from e


def _choice(value: Any, allowed: Sequence[str], what: str) -> str:
    if value not in allowed:
        raise SchemaError(f"{what} {value!r} is not one of {list(allowed)}")
    return str(value)


def _names(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        return list(value)
    raise SchemaError(f"definition metadata {what!r} is a column or a list of columns, "
                      f"not {value!r}")


class _Key:
    """A Dagster partition key and, for a time window, its start (naive UTC or the
    definition's time zone, wall-clock)."""

    __slots__ = ("key", "start")

    def __init__(self, key: str, start: datetime.datetime | None) -> None:
        self.key = key
        self.start = start

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return self.key


def _raw_value(pdef: dg.PartitionsDefinition | None, key: str) -> _Key:
    if isinstance(pdef, dg.TimeWindowPartitionsDefinition):
        start = pdef.time_window_for_partition_key(key).start
        return _Key(key, start.replace(tzinfo=None))
    return _Key(key, None)


def _typed(value: _Key, column: str, t: Any) -> Any:
    """The stored value of a partition key in a column of Paimon type ``t``."""
    root = t.root if hasattr(t, "root") else None
    try:
        if root is TypeRoot.DATE:
            return value.start.date() if value.start is not None else \
                datetime.date.fromisoformat(value.key)
        if root in (TypeRoot.TIMESTAMP,):
            return value.start if value.start is not None else \
                datetime.datetime.fromisoformat(value.key)
        if root in (TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT):
            return int(value.key)
        if root in STRING_ROOTS:
            return value.key
    except ValueError as e:
        raise SchemaError(f"partition key {value.key!r} is not a value of column {column!r} "
                          f"({t.sql()})") from e
    raise SchemaError(f"column {column!r} ({t.sql()}) cannot hold partition keys: use STRING, "
                      "DATE, TIMESTAMP or an integer type")


def _get(catalog: FileSystemCatalog, ident: Identifier) -> FileStoreTable | None:
    try:
        return catalog.get_table(ident)
    except TableNotExistError:
        return None


def _with_partition_columns(data: Frame, specs: list[PartitionSpec],
                            table: FileStoreTable | None) -> Frame:
    """Adds a missing partition column holding the run's only partition key (of the table's
    column type; STRING for a table still to be created)."""
    for col in specs[0]:
        if col in data.columns:
            continue
        values = {s[col] for s in specs}
        if len(values) != 1:
            raise SchemaError(f"the output lacks partition column {col!r}, which a run of "
                              f"several partitions ({sorted(map(str, values))}) needs")
        value = next(iter(values))
        if table is not None and col in table.schema.field_names:
            t = table.schema.field(col).type
            data = data.with_constant(col, _typed(value, col, t), t)
        else:
            data = data.with_constant(col, value.key, parse_sql_type("STRING"))
    return data


def _typed_spec(types: Mapping[str, DataType], spec: PartitionSpec,
                ident: Identifier) -> dict[str, Any]:
    """A Dagster partition as values of the columns' types."""
    out = {}
    for col, v in spec.items():
        if col not in types:
            raise SchemaError(f"'partition_expr' column {col!r} is not in {ident}")
        out[col] = _typed(v, col, types[col])
    return out


def _check_partition_keys(table: FileStoreTable, spec: Mapping[str, Any]) -> None:
    parts = table.schema.partition_keys
    for col in spec:
        if col not in parts:
            raise UnsupportedError(
                f"'partition_expr' column {col!r} is not a partition key of {table.identifier} "
                f"(partition keys: {list(parts)}): a partitioned output can only overwrite "
                "table partitions")


def _partition_label(context: dg.OutputContext) -> str | None:
    if not context.has_asset_partitions:
        return None
    keys = list(context.asset_partition_keys)
    return str(keys[0]) if len(keys) == 1 else f"{keys[0]}...{keys[-1]}"


def typed_specs(table: FileStoreTable, specs: list[PartitionSpec]) -> list[dict[str, Any]]:
    """Dagster partitions as ``{column: value}`` of the table's column types."""
    types = {f.name: f.type for f in table.schema.fields}
    return [_typed_spec(types, s, table.identifier) for s in specs]


def _spec_predicate(table: FileStoreTable, specs: list[PartitionSpec]) -> Predicate:
    """The filter of an input's partitions."""
    ors = []
    for spec in typed_specs(table, specs):
        leaves = [is_in(c, [v]) for c, v in spec.items()]
        ors.append(and_(*leaves) if len(leaves) > 1 else leaves[0])
    return or_(*ors) if len(ors) > 1 else ors[0]
