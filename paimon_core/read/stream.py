"""Reading streaming plans (:class:`~paimon_core.scan.streaming.StreamPlan`) anywhere.

Plans are frozen, picklable and self-contained: a worker reads one with
:func:`read_stream_plan` and its own handle on the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import pyarrow as pa

from paimon_core.io.file_io import FileIO
from paimon_core.read.table_read import TableRead
from paimon_core.scan.predicate import Predicate, bind, parse_filters
from paimon_core.scan.streaming import StreamPlan, read_plan
from paimon_core.schema_manager import SchemaManager
from paimon_core.spec.schema import TableSchema

__all__ = ["read_stream_plan"]


class ReadSource(Protocol):
    """What reading needs of a table (a ``FileStoreTable`` has it)."""

    @property
    def file_io(self) -> FileIO: ...

    @property
    def schema(self) -> TableSchema: ...

    @property
    def schema_manager(self) -> SchemaManager: ...


def read_stream_plan(
    table: ReadSource,
    plan: StreamPlan,
    *,
    columns: Sequence[str] | None = None,
    filter: str | Sequence[str] | Predicate | None = None,
) -> pa.Table:
    """Reads a plan (possibly made elsewhere) into Arrow with a ``_kind`` column first:
    ``+I`` for every row of a full plan, the stored row kinds of delta / changelog files."""
    predicate = _predicate(table.schema, filter)
    read = TableRead(table.file_io, table.schema, table.schema_manager, columns, predicate)
    return read_plan(read, plan)


def _predicate(
    schema: TableSchema, filter: str | Sequence[str] | Predicate | None
) -> Predicate | None:
    if filter is None:
        return None
    fields = list(schema.fields)
    if isinstance(filter, str):
        return parse_filters([filter], fields)
    if isinstance(filter, Predicate):
        return bind(filter, fields)
    return parse_filters(list(filter), fields)
