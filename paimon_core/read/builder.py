"""Reading a table through a builder (pypaimon's ``ReadBuilder`` / ``TableScan``): a
projection, a filter and a time travel chosen once, then a scan (planning) and a read
(execution) with the same options. :meth:`FileStoreTable.new_read_builder` makes one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from paimon_core.errors import SchemaError
from paimon_core.read.table_read import TableRead
from paimon_core.scan.predicate import Predicate, bind, parse_filters
from paimon_core.scan.split import Plan
from paimon_core.spec.schema import TableSchema
from paimon_core.spec.snapshot import Snapshot

if TYPE_CHECKING:
    from paimon_core.table import FileStoreTable

__all__ = ["FilterArg", "ReadBuilder", "TableScan", "to_predicate"]

FilterArg = str | Sequence[str] | Predicate | None


def to_predicate(filter: FilterArg, schema: TableSchema) -> Predicate | None:
    """``filter`` (SQL text, several ANDed, or a predicate) bound to ``schema``'s fields."""
    if filter is None:
        return None
    if isinstance(filter, str):
        return parse_filters([filter], list(schema.fields))
    if isinstance(filter, Sequence):
        return parse_filters(list(filter), list(schema.fields))
    return bind(filter, list(schema.fields))


@dataclass(frozen=True)
class ReadBuilder:
    """Builds a scan (planning) and a read (execution) with the same options."""

    table: FileStoreTable
    columns: tuple[str, ...] | None = None
    filter: FilterArg = None
    snapshot_id: int | None = None
    tag: str | None = None
    timestamp_millis: int | None = None
    _resolved: list[Snapshot | None] = field(default_factory=list, compare=False)

    def with_projection(self, columns: Sequence[str] | None) -> ReadBuilder:
        return replace(self, columns=tuple(columns) if columns is not None else None, _resolved=[])

    def with_filter(self, filter: FilterArg) -> ReadBuilder:
        return replace(self, filter=filter, _resolved=[])

    def with_time_travel(
        self,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp_millis: int | None = None,
    ) -> ReadBuilder:
        return replace(
            self, snapshot_id=snapshot_id, tag=tag, timestamp_millis=timestamp_millis, _resolved=[]
        )

    def travel(self) -> tuple[int | None, str | None, int | None]:
        """(snapshot id, tag, millis): as given, else the table's ``scan.*`` options (a
        :meth:`FileStoreTable.copy`'s, as Java's ``copy`` time-travels)."""
        given = (self.snapshot_id, self.tag, self.timestamp_millis)
        if any(x is not None for x in given):
            return given
        o = self.table.options
        keys = [k for k in (o.SCAN_SNAPSHOT_ID, o.SCAN_TAG_NAME, o.SCAN_TIMESTAMP,
                            o.SCAN_TIMESTAMP_MILLIS) if k in o.raw]
        if len(keys) > 1:
            raise SchemaError(f"give at most one time-travel option, not {' and '.join(keys)}")
        return o.scan_snapshot_id, o.get(o.SCAN_TAG_NAME), o.scan_timestamp_millis

    @property
    def time_travel(self) -> bool:
        return any(x is not None for x in self.travel())

    def snapshot(self) -> Snapshot | None:
        if not self._resolved:
            sid, tag, millis = self.travel()
            self._resolved.append(self.table.resolve_snapshot(
                snapshot_id=sid, tag=tag, timestamp_millis=millis))
        return self._resolved[0]

    def read_schema(self) -> TableSchema:
        return self.table.schema_for(self.snapshot(), self.time_travel)

    def predicate(self) -> Predicate | None:
        return to_predicate(self.filter, self.read_schema())

    def new_scan(self) -> TableScan:
        return TableScan(self)

    def new_read(self) -> TableRead:
        t = self.table
        return TableRead(t.file_io, t.context_of(self.read_schema()), t.schema_manager,
                         self.columns, self.predicate())


@dataclass(frozen=True)
class TableScan:
    builder: ReadBuilder

    def plan(self) -> Plan:
        b = self.builder
        planner = b.table.new_planner(b.read_schema(), b.predicate())
        return planner.plan(b.snapshot())
