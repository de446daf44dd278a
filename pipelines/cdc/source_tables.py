"""Which source table each change event belongs to, and which tables a job takes.

Every format's events name their table (Paimon's ``*RecordParser.getDatabaseName`` /
``getTableName``):

* ``debezium-json`` / ``debezium-avro``: ``source.db`` and ``source.table`` (inside
  ``payload`` with the schema envelope);
* ``canal-json``, ``maxwell-json``: ``database`` and ``table``;
* ``ogg-json``: ``table`` as ``SCHEMA.TABLE`` (split at the first dot, as Paimon's
  ``OggRecordParser``);
* ``aws-dms-json``: ``metadata.schema-name`` and ``metadata.table-name``.

:func:`event_tables` reads them from a parsed Arrow chunk of events (column by column, no
per-event Python); :func:`names_declared` is the JSON reader's schema that parses only them
(the database job's routing pass). An event that names no table (e.g. Debezium events
written by hand without ``source``) cannot be routed: single-table mode takes it (its
landing is the table's), the database job refuses it by reason.

:class:`TableFilter` decides which (database, table) names a job takes: single-table mode's
``--source-table`` (default: the target's table name, any database, case-insensitive) and the
database job's ``--including-tables`` / ``--excluding-tables`` (Python regexes, full match
against the table name or against ``database.table``, see :class:`TableFilter`). Names are
matched once per distinct name (a chunk holds a handful), then broadcast with numpy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import ConfigError
from pipelines.cdc.values.convert import Fields

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["OTHER_TABLE", "TableFilter", "event_tables", "names_declared", "route",
           "taken_column"]

#: the outcome of an event of another table than the job's (counted, skipped: never
#: written, never quarantined)
OTHER_TABLE = "other table"

_S = pa.string()
_SOURCE = pa.struct([("db", _S), ("table", _S)])
#: the fields naming the table, per format, as the JSON reader's declared schema
_DECLARED: dict[str, pa.Schema] = {
    "debezium-json": pa.schema([("source", _SOURCE),
                                ("payload", pa.struct([("source", _SOURCE)]))]),
    "canal-json": pa.schema([("database", _S), ("table", _S)]),
    "maxwell-json": pa.schema([("database", _S), ("table", _S)]),
    "ogg-json": pa.schema([("table", _S)]),
    "aws-dms-json": pa.schema([("metadata", pa.struct([("schema-name", _S),
                                                       ("table-name", _S)]))]),
}


def names_declared(fmt: str) -> pa.Schema:
    """The JSON reader's schema of the fields naming an event's table in format ``fmt``
    (read with ``unexpected_field_behavior="ignore"``: nothing else is parsed)."""
    try:
        return _DECLARED[fmt]
    except KeyError:
        raise ConfigError("format", f"{fmt!r}: events of this format cannot be routed by "
                                    f"table; one of {', '.join(sorted(_DECLARED))}") from None


def _text(arr: pa.Array | None, n: int) -> pa.Array:
    """A name per event; an empty name is none (Debezium's Postgres messages name table
    ``""``)."""
    if arr is None or not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return pa.nulls(n, _S)
    text = arr.cast(_S)
    return pc.if_else(pc.equal(text, ""), pa.scalar(None, _S), text)


def _column(t: pa.Table, name: str) -> pa.Array | None:
    return t.column(name).combine_chunks() if name in t.column_names else None


def event_tables(t: pa.Table, fmt: str) -> tuple[pa.Array, pa.Array]:
    """``(database, table)`` of every event of the parsed chunk ``t`` (string arrays, NULL
    where the event does not name it)."""
    n = t.num_rows
    if fmt in ("debezium-json", "debezium-avro"):
        src = Fields(_column(t, "source"), n)
        db, table = _text(src.kids.get("db"), n), _text(src.kids.get("table"), n)
        payload = _column(t, "payload")
        if payload is not None:
            inner = Fields(Fields(payload, n).kids.get("source"), n)
            db = pc.coalesce(db, _text(inner.kids.get("db"), n))
            table = pc.coalesce(table, _text(inner.kids.get("table"), n))
        return db, table
    if fmt in ("canal-json", "maxwell-json"):
        return _text(_column(t, "database"), n), _text(_column(t, "table"), n)
    if fmt == "ogg-json":
        full = _text(_column(t, "table"), n)
        m = pc.extract_regex(full, r"^(?P<db>[^.]*)\.(?P<table>.*)$")
        two = pc.is_valid(m)
        db = pc.if_else(two, pc.struct_field(m, "db"), pa.scalar(None, _S))
        table = pc.if_else(two, pc.struct_field(m, "table"), full)
        return _text(db, n), _text(table, n)
    if fmt == "aws-dms-json":
        meta = Fields(_column(t, "metadata"), n)
        return (_text(meta.kids.get("schema-name"), n), _text(meta.kids.get("table-name"), n))
    names_declared(fmt)  # raises, naming the format
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True)
class TableFilter:
    """Which source tables a job takes: a table is taken when an including pattern matches
    and no excluding one does. A pattern matches a table when it fully matches its name or
    ``database.table`` (``orders``, ``order_.*`` and ``mydb\\.orders`` all match table
    ``orders`` of database ``mydb``)."""

    including: str = ".*"
    excluding: str | None = None
    ignore_case: bool = False

    def __post_init__(self) -> None:
        for name, pattern in (("including-tables", self.including),
                              ("excluding-tables", self.excluding)):
            if pattern is None:
                continue
            try:
                re.compile(pattern)
            except re.error as e:
                raise ConfigError(name, f"{pattern!r} is not a regular expression: {e}") from e

    @classmethod
    def of_table(cls, name: str) -> TableFilter:
        """Single-table mode's default: the target table's name, in any database, ignoring
        case (Paimon's catalog stores names in lower case)."""
        return cls(re.escape(name), ignore_case=True)

    def _matches(self, pattern: str, db: str | None, table: str) -> bool:
        flags = re.IGNORECASE if self.ignore_case else 0
        if re.fullmatch(pattern, table, flags) is not None:
            return True
        return db is not None and re.fullmatch(pattern, f"{db}.{table}", flags) is not None

    def takes(self, db: str | None, table: str) -> bool:
        """Whether the table ``db.table`` (``db`` None: unknown) is taken."""
        if not self._matches(self.including, db, table):
            return False
        return self.excluding is None or not self._matches(self.excluding, db, table)

    def mask(self, db: pa.Array, table: pa.Array) -> np.ndarray:
        """Per event: whether its table is taken (an event naming no table: True, see the
        module docs). Each distinct name is matched once."""
        n = len(table)
        named = np.asarray(pc.is_valid(table).to_numpy(zero_copy_only=False), bool)
        if not named.any():
            return np.ones(n, bool)
        keys = pc.binary_join_element_wise(pc.fill_null(db.cast(_S), _NO_DB),
                                           pc.fill_null(table.cast(_S), ""), _SEP)
        enc = pc.dictionary_encode(keys)
        taken = np.array([self.takes(*_split_key(k)) for k in enc.dictionary.to_pylist()],
                         bool)
        idx = np.asarray(enc.indices.to_numpy(zero_copy_only=False), np.int64)
        return np.where(named, taken[idx], True)


_NO_DB, _SEP = "\x00", "\x01"


def _split_key(key: str) -> tuple[str | None, str]:
    db, table = key.split(_SEP, 1)
    return (None if db == _NO_DB else db), table


def route(err: pa.Array, t: pa.Table, fmt: str, tables: TableFilter | None,
          event: np.ndarray | None = None) -> pa.Array:
    """``err`` (one outcome per row) with :data:`OTHER_TABLE` for the rows of the events of
    ``t`` (a parsed chunk of format ``fmt``) whose table ``tables`` does not take, whatever
    else their outcome (an event of another table is never written, quarantined or sampled;
    a truncate of another table empties nothing). ``event``: each row's event index when an
    event holds several rows (canal); ``tables`` None: every event is taken."""
    if tables is None or not t.num_rows:
        return err
    taken = tables.mask(*event_tables(t, fmt))
    if event is not None:
        taken = taken[event]
    if bool(taken.all()):
        return err
    # an event that is no JSON object where one is due names no table it can be trusted for
    other = pc.and_(pa.array(~taken), pc.not_equal(pc.fill_null(err, ""), "malformed JSON"))
    return pc.if_else(other, OTHER_TABLE, err)


def taken_column(tables: TableFilter | None, db: Column, table: Column) -> Column:
    """The Spark SQL reference of :meth:`TableFilter.mask`: whether the event whose names are
    ``db`` / ``table`` is taken (Java's regex dialect: the patterns this filter is given --
    names, ``.``, ``.*``, alternations, classes -- mean the same in both)."""
    from pyspark.sql import functions as F

    if tables is None:
        return F.lit(True)
    flags = "(?i)" if tables.ignore_case else ""

    def matches(pattern: str) -> Column:
        rx = f"{flags}^(?:{pattern})$"
        return (table.rlike(rx)
                | (F.coalesce(db, F.lit("")) != "") & F.concat_ws(".", db, table).rlike(rx))

    taken = matches(tables.including)
    if tables.excluding is not None:
        taken = taken & ~matches(tables.excluding)
    return F.coalesce(table, F.lit("")).eqNullSafe("") | taken
