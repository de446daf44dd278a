"""An IO manager's output as it is written (:class:`Frame`): an Arrow table here
(:class:`ArrowFrame`, for pyarrow, pandas and polars outputs), a Spark DataFrame in
:mod:`assets.io_managers_spark`; and the columns that carry no type of their own
(:func:`type_untyped`: an all-null or empty column takes the table's type)."""

from collections.abc import Mapping
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from paimon_core import (
    CommitOptions,
    DataType,
    FileStoreTable,
    Identifier,
    SchemaError,
    parse_sql_type,
)
from paimon_core.commit.users import new_commit_user
from paimon_core.integration import from_arrow_type, to_arrow_type

__all__ = ["ArrowFrame", "Frame", "has_null_type", "type_untyped"]


class Frame(Protocol):
    """What the IO manager needs of an output: its columns and Paimon types, constant
    columns, the partition check and the write itself."""

    @property
    def columns(self) -> list[str]: ...

    def fields(self) -> list[tuple[str, DataType]]:
        """``(name, Paimon type)`` of every column (SchemaError naming a column without
        one)."""
        ...

    def with_constant(self, column: str, value: Any, t: DataType) -> "Frame": ...

    def untyped(self) -> list[str]:
        """The columns whose type says nothing (Arrow ``null``, Spark ``NullType``, polars
        ``Null``, also inside a list / map / struct): all-null or empty columns."""
        ...

    def cast(self, column: str, t: DataType) -> "Frame":
        """The frame with ``column`` cast to the Paimon type ``t``."""
        ...

    def is_empty(self) -> bool:
        """Whether the frame has no rows."""
        ...

    def check_rows_in(self, specs: list[dict[str, Any]]) -> None:
        """SchemaError when a row lies outside every spec (``{column: value}``)."""
        ...

    def write(self, table: FileStoreTable, specs: list[dict[str, Any]] | None,
              props: Mapping[str, str], kinds: str | None, *, overwrite: bool) -> int:
        """Writes and commits; returns the rows written. ``overwrite``: each spec exactly
        (even by nothing), or the whole table without specs."""
        ...


class ArrowFrame:
    """An Arrow table as a :class:`Frame` (pyarrow, pandas and polars outputs)."""

    def __init__(self, data: pa.Table) -> None:
        self.data = data

    @property
    def columns(self) -> list[str]:
        return list(self.data.column_names)

    def fields(self) -> list[tuple[str, DataType]]:
        out = []
        for f in self.data.schema:
            try:
                out.append((f.name, from_arrow_type(f.type, f.nullable)))
            except SchemaError as e:
                raise SchemaError(f"column {f.name!r} cannot be stored exactly: {e}") from e
        return out

    def with_constant(self, column: str, value: Any, t: DataType) -> "ArrowFrame":
        arrow_type = to_arrow_type(t)
        if value is None:
            return ArrowFrame(self.data.append_column(
                column, pa.nulls(self.data.num_rows, arrow_type)))
        return ArrowFrame(self.data.append_column(
            column, pa.array([value] * self.data.num_rows, arrow_type)))

    def untyped(self) -> list[str]:
        return [f.name for f in self.data.schema if has_null_type(f.type)]

    def cast(self, column: str, t: DataType) -> "ArrowFrame":
        i = self.data.schema.get_field_index(column)
        arrow_type = to_arrow_type(t)
        return ArrowFrame(self.data.set_column(
            i, pa.field(column, arrow_type), pc.cast(self.data.column(i), arrow_type)))

    def is_empty(self) -> bool:
        return int(self.data.num_rows) == 0

    def _mask(self, spec: dict[str, Any]) -> Any:
        masks = []
        for c, v in spec.items():
            col = self.data.column(c)
            try:
                masks.append(pc.fill_null(pc.equal(col, pa.scalar(v, col.type)), False))
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
                raise SchemaError(f"partition column {c!r} ({col.type}) cannot hold the "
                                  f"partition value {v!r}") from e
        out = masks[0]
        for m in masks[1:]:
            out = pc.and_(out, m)
        return out

    def check_rows_in(self, specs: list[dict[str, Any]]) -> None:
        if not self.data.num_rows:
            return
        inside = self._mask(specs[0])
        for s in specs[1:]:
            inside = pc.or_(inside, self._mask(s))
        if not pc.all(inside).as_py():
            i = int(pc.index(inside, False).as_py())
            row = {c: self.data.column(c)[i].as_py() for c in specs[0]}
            raise SchemaError(f"row {i} has partition {row}, outside the run's partitions "
                              f"{specs}")

    def write(self, table: FileStoreTable, specs: list[dict[str, Any]] | None,
              props: Mapping[str, str], kinds: str | None, *, overwrite: bool) -> int:
        if not overwrite:
            _commit(table, self.data, props, kinds, overwrite=None)
        elif specs is None:
            _commit(table, self.data, props, kinds, overwrite={})
        else:
            for spec in specs:
                part = self.data if len(specs) == 1 else self.data.filter(self._mask(spec))
                _commit(table, part, props, kinds, overwrite=spec)
        return int(self.data.num_rows)



def _commit(table: FileStoreTable, data: pa.Table, props: Mapping[str, str],
            kinds: str | None, *, overwrite: Mapping[str, Any] | None) -> list[int]:
    """One write and one commit (an OVERWRITE of the static spec ``overwrite`` when given)."""
    user = new_commit_user("dagster-io")
    with table.new_write(user, overwrite=overwrite is not None) as write:
        if data.num_rows:
            write.write_arrow(data, row_kind_column=kinds)
        messages = write.prepare_commit()
    commit = table.new_commit(user, options=CommitOptions(properties=props))
    if overwrite is None:
        return commit.commit(messages)
    return commit.overwrite(messages, overwrite, dynamic=False)


def has_null_type(t: pa.DataType) -> bool:
    """Whether an Arrow type is ``null`` or holds one (a list of nulls, a struct field of
    nulls): the type of values that were all missing, not a column type."""
    if bool(pa.types.is_null(t)):
        return True
    return any(has_null_type(t.field(i).type) for i in range(t.num_fields))


def type_untyped(data: Frame, table: FileStoreTable | None, ident: Identifier,
                 row_kind_column: str) -> Frame:
    """``data`` with each untyped column (:meth:`Frame.untyped`: all null, or no rows) cast
    to its column's type in ``table``: nulls are values of any type. A column the table lacks
    (or any, when the table does not exist yet) has no type to take: refused, named."""
    for name in data.untyped():
        if name == row_kind_column:
            data = data.cast(name, parse_sql_type("STRING"))
        elif table is not None and name in table.schema.field_names:
            data = data.cast(name, table.schema.field(name).type)
        else:
            where = (f"table {ident} does not exist yet" if table is None
                     else f"table {ident} has no column {name!r}")
            raise SchemaError(
                f"column {name!r} has no type (all its values are null, or there are none) "
                f"and {where} to take one from: give the column a type (cast it, or a "
                "typed empty frame)")
    return data
