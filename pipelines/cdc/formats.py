"""The change-event formats of the CDC job (``--format``): Debezium JSON (the default, with or
without the ``{"schema", "payload"}`` envelope), Debezium Avro container files
(:mod:`pipelines.cdc.avro`) and the other JSON formats Paimon's Kafka CDC sync reads
(``canal-json``, ``maxwell-json``, ``ogg-json``, ``aws-dms-json``), as their tools emit them
with default settings.

Each format turns a parsed Arrow chunk of its events into the envelope view the Debezium path
decodes (:func:`pipelines.cdc.decode.decode_view`: op ``c/u/d/r/t``, ``before``, ``after``,
source positions), so values, rejection reasons, key changes and row kinds are the Debezium
path's; a row -> event index lets one event hold several rows (canal). Vectorised: no
per-event Python except text only Python parses (canal's binary text).

Semantics, format by format (Paimon's ``*RecordParser`` of
``paimon-flink-cdc/.../action/cdc/format/``; where we differ it is said):

* ``canal-json`` (Alibaba Canal's flat message): ``type`` INSERT -> ``c``, UPDATE -> ``u``
  (``before`` = the row with ``old``'s values, ``old[i]`` holding row ``i``'s changed
  columns), DELETE -> ``d``, ROW -> ``r``; every element of ``data`` is one row of the event.
  ``isDdl`` events (and DDL types printed without it, e.g. ``QUERY``) are skipped and counted
  (``ddl``), except TRUNCATE, which empties the table at its position (Paimon skips it).
  Values are text, typed by the table's schema: BOOLEAN takes ``1`` / ``0`` (MySQL's
  ``tinyint(1)``), BINARY / BYTES the text's ISO-8859-1 bytes (canal's encoding of binary
  columns; Paimon keeps the text).
* ``maxwell-json``: ``type`` insert / update / delete, bootstrap-insert -> ``r``; ``before`` =
  ``data`` with ``old``'s values; DDL and bootstrap-start / -complete markers are skipped and
  counted (``ddl``; Paimon skips events without ``data`` silently). BOOLEAN takes 1 / 0.
* ``ogg-json`` (Oracle GoldenGate): ``op_type`` I / U / D, T (truncate: empties the table;
  Paimon throws), ``before`` / ``after``. An update's ``after`` is taken as the whole row, as
  Paimon does: GoldenGate's compressed updates (only changed columns) are not merged.
* ``aws-dms-json``: ``metadata.operation`` load -> ``r``, insert / update / delete;
  ``record-type`` other than ``data`` (control records: DDL) skipped and counted (``ddl``);
  an update's before image from the ``BI_``-prefixed columns of the
  ``add-before-image-columns`` mapping rule (``before`` = the row with them; without them the
  update is a plain upsert).

Source positions (when ``--position-fields`` is not given; three slots, as the Debezium
connectors', so that the job's order columns are the same):

* ``ogg-json``: ``pos`` (trail sequence number and RBA, digits) as a number; it also fills
  the table's sequence column. A ``pos`` that does not fit a BIGINT is refused.
* ``maxwell-json``: ``position`` (``binlog.000003:1234``, with ``output_binlog_position``)
  as (file, pos, ``xoffset``); the sequence column gets file index, pos and xoffset packed as
  MySQL's (:data:`pipelines.cdc.events.MYSQL_BITS`; refused when they do not fit, e.g. more
  than 2047 rows in one transaction). Without ``position`` (Maxwell's default): the arrival
  order; ``xid`` is no order (InnoDB assigns it when a transaction starts, not when it
  commits), and such an event is refused when the table has a sequence column.
* ``canal-json``, ``aws-dms-json``: nothing orderable (``es`` / ``ts`` / DMS timestamps are
  milliseconds, ``transaction-id`` no order): the arrival order, file, line and row within
  the event. A table with a sequence column is refused upfront (:func:`check_sequence`):
  nothing can fill it.

With ``--position-fields``, the named top-level fields of the event (for DMS also those of
``metadata``) order the events and the first fills the sequence column, as for Debezium.

The Spark SQL reference of these semantics is :mod:`pipelines.cdc.format_events` (a test
checks that both give the same rows).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core import (
    BINARY_ROOTS,
    INTEGER_ROOTS,
    STRING_ROOTS,
    AtomicType,
    RowKind,
    SchemaError,
    TableSchema,
    TypeRoot,
)
from pipelines.cdc.avro import decode_avro_file
from pipelines.cdc.decode import decode_file
from pipelines.cdc.events import (
    AUTO_SLOTS,
    ERROR_COLUMN,
    KIND_COLUMN,
    MESSAGE,
    MYSQL_BITS,
    TOMBSTONE,
    TRUNCATE,
)
from pipelines.cdc.settings import DEFAULT_SETTINGS, DecodeSettings
from pipelines.cdc.values import Fields, json_text
from pipelines.cdc.view import decode_view
from pipelines.writer import BUCKET_COLUMN as BUCKET

__all__ = ["DDL", "DEFAULT_FORMAT", "FORMATS", "SLOTS", "CdcFormat", "JsonFormat",
           "check_sequence", "sample_values"]

#: the ``_error`` of a DDL or control event (canal ``isDdl``, Maxwell's schema changes and
#: bootstrap markers, DMS control records): skipped and counted, not an error
DDL = "ddl"
DEFAULT_FORMAT = "debezium-json"
#: the source fields of a format's own positions (see the module docs)
SLOTS = tuple(f"_p{i}" for i in range(AUTO_SLOTS))
_SKIPPED = (DDL, TRUNCATE, MESSAGE, TOMBSTONE)
_DELETE = RowKind.DELETE.short_string
_NULL_S = pa.scalar(None, pa.string())


# ---------------------------------------------------------------------------- helpers


def _col(t: pa.Table, name: str) -> pa.Array | None:
    return t.column(name).combine_chunks() if name in t.column_names else None


def _text(arr: pa.Array | None, n: int) -> pa.Array:
    return json_text(arr) if arr is not None else pa.nulls(n, pa.string())


def _struct(arr: pa.Array | None) -> pa.Array | None:
    return arr if arr is not None and pa.types.is_struct(arr.type) else None


def _not_struct(arr: pa.Array | None, n: int) -> np.ndarray:
    """Where ``arr`` holds a value that is not an object (a malformed image)."""
    if arr is None or pa.types.is_struct(arr.type) or pa.types.is_null(arr.type):
        return np.zeros(n, bool)
    return np.asarray(pc.is_valid(arr).to_numpy(zero_copy_only=False), bool)


def _mask(valid: np.ndarray) -> pa.Array:
    return pa.array(~valid)


def _image(arr: pa.Array | None, valid: np.ndarray, schema: TableSchema, *, text: bool,
           drop_prefix: str | None = None) -> pa.Array | None:
    """The image ``arr`` (a struct per row) where ``valid``, NULL elsewhere, with the table's
    BOOLEAN columns taking ``1`` / ``0`` and (``text``: canal) BINARY columns the bytes of
    ISO-8859-1 text (as base64, what the decoder reads). Fields starting with ``drop_prefix``
    are left out."""
    s = _struct(arr)
    if s is None:
        return None
    kinds = {f.name: f.type.root for f in schema.fields if isinstance(f.type, AtomicType)}
    names, kids = [], []
    for f, kid in zip(s.type, s.flatten()):
        if drop_prefix is not None and f.name.startswith(drop_prefix):
            continue
        names.append(f.name)
        kids.append(_normalise(kid, kinds.get(f.name), text))
    if not names:
        return pa.nulls(len(s), pa.struct([]))
    return pa.StructArray.from_arrays(kids, names, mask=_mask(valid & np.asarray(
        pc.is_valid(s).to_numpy(zero_copy_only=False), bool)))


def _normalise(kid: pa.Array, root: TypeRoot | None, text: bool) -> pa.Array:
    if root is TypeRoot.BOOLEAN and not pa.types.is_boolean(kid.type) and not pa.types.is_null(
            kid.type):
        t = json_text(kid)
        return pc.if_else(pc.equal(t, "1"), "true", pc.if_else(pc.equal(t, "0"), "false", t))
    if text and root in BINARY_ROOTS and pa.types.is_string(kid.type):
        out = []
        for v in kid.to_pylist():  # Python's codec: canal's binary text (rare columns)
            try:
                out.append(None if v is None else base64.b64encode(v.encode("latin-1")).decode())
            except UnicodeEncodeError:
                out.append("!")  # not ISO-8859-1: not canal's binary text (a bad value)
        return pa.array(out, pa.string())
    return kid


def _overlay(base: pa.Array | None, over: pa.Array | None, valid: np.ndarray,
             prefix: str = "") -> pa.Array | None:
    """``base`` with the non-NULL values of ``over``'s fields (named ``prefix + name``) where
    ``valid``: the before image of an update from the row and the old values of the changed
    columns (canal / Maxwell ``old``, DMS ``BI_`` columns). A column whose old value was NULL
    keeps the new one: only the key of a before image is used (a key change), and a key is
    never NULL."""
    b = _struct(base)
    if b is None:
        return None
    o = Fields(_struct(over), len(b))
    names, kids = [], []
    for f, kid in zip(b.type, b.flatten()):
        old = o(prefix + f.name)
        if not pa.types.is_null(old.type):
            if old.type != kid.type:
                old, kid = json_text(old), json_text(kid)
            kid = pc.if_else(pc.is_valid(old), old, kid)
        names.append(f.name)
        kids.append(kid)
    if not names:
        return None
    return pa.StructArray.from_arrays(kids, names, mask=_mask(valid & np.asarray(
        pc.is_valid(b).to_numpy(zero_copy_only=False), bool)))


def _ops(raw: pa.Array, mapping: dict[str, str]) -> pa.Array:
    """The Debezium op of each format operation (NULL: unknown, an ``unknown op``)."""
    out = pa.nulls(len(raw), pa.string())
    for k, v in mapping.items():
        out = pc.if_else(pc.fill_null(pc.equal(raw, k), False), v, out)
    return out


def _np(arr: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), bool)


def _arrival(file_index: int, lines: np.ndarray, rows: np.ndarray) -> list[pa.Array]:
    """The arrival order as the three position slots: file, line, row within the event."""
    return [pa.array(np.full(len(lines), file_index, np.int64)), pa.array(lines),
            pa.array(rows.astype(np.int64))]


def _top_fields(t: pa.Table, skip: Sequence[str], nested: str | None = None) -> pa.Array:
    """The event's top-level fields (and those of ``nested``) as one struct per event: where
    ``--position-fields`` are looked up."""
    names = [c for c in t.column_names if c not in skip]
    cols = [t.column(c).combine_chunks() for c in names]
    inner = _struct(_col(t, nested)) if nested is not None else None
    if inner is not None:
        for f, kid in zip(inner.type, inner.flatten()):
            if f.name not in names:
                names.append(f.name)
                cols.append(kid)
    if not names:
        return pa.nulls(t.num_rows, pa.struct([]))
    return pa.StructArray.from_arrays(cols, names)


@dataclass(frozen=True)
class _View:
    """A format's rows of a parsed chunk as the Debezium envelope (one entry per row)."""

    op: pa.Array  # c/u/d/r/t, "m" for a skipped event, NULL: unknown
    before: pa.Array | None
    after: pa.Array | None
    slots: list[pa.Array]  # the format's own position, :data:`AUTO_SLOTS` values
    sequence: pa.Array | None  # the sequence column's value; None: nothing can fill it
    fields: pa.Array  # the event's top-level fields (for --position-fields)
    event: np.ndarray  # the parsed event of each row
    row: np.ndarray  # the row's index within its event
    outcome: pa.Array  # DDL / a format-level reason, else NULL


def _single(t: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    n = t.num_rows
    return np.arange(n, dtype=np.int64), np.zeros(n, np.int64)


# ---------------------------------------------------------------------------- the formats


def _image_type(schema: TableSchema, *, text: bool, before_prefix: str | None = None
                ) -> pa.DataType:
    """The image struct declared to the JSON reader: text for every column (canal), else the
    columns whose JSON form is unambiguous (strings, integers, floats; not BOOLEAN, which
    MySQL feeds send as 1 / 0)."""
    fields = []
    for f in schema.fields:
        t = f.type
        if not isinstance(t, AtomicType):
            continue
        if text or t.root in STRING_ROOTS or t.root in BINARY_ROOTS:
            at: pa.DataType | None = pa.string()
        elif t.root in INTEGER_ROOTS:
            at = pa.int64()
        elif t.root in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
            at = pa.float64()
        else:
            at = None
        if at is not None:
            fields.append(pa.field(f.name, at))
            if before_prefix is not None:
                fields.append(pa.field(before_prefix + f.name, at))
    return pa.struct(fields)


def _canal_declared(schema: TableSchema) -> pa.Schema:
    img = pa.list_(_image_type(schema, text=True))
    return pa.schema([("type", pa.string()), ("isDdl", pa.bool_()), ("data", img),
                      ("old", img)])


_CANAL_OPS = {"INSERT": "c", "UPDATE": "u", "DELETE": "d", "ROW": "r", "TRUNCATE": "t"}
#: canal's schema-change types, DDL even where ``isDdl`` is false (a ``QUERY`` such as
#: CREATE DATABASE is printed with ``isDdl: false``)
_CANAL_DDL = ("CREATE", "ALTER", "ERASE", "QUERY", "RENAME", "CINDEX", "DINDEX")


def _canal(t: pa.Table, schema: TableSchema, file_index: int, lines: np.ndarray) -> _View:
    n = t.num_rows
    data, old = _col(t, "data"), _col(t, "old")
    is_list = data is not None and pa.types.is_list(data.type) and pa.types.is_struct(
        data.type.value_type)
    lens = (np.asarray(pc.fill_null(pc.list_value_length(data), 0).to_numpy(
        zero_copy_only=False), np.int64) if is_list and data is not None else np.zeros(n, np.int64))
    k = np.maximum(lens, 1)
    event = np.repeat(np.arange(n, dtype=np.int64), k)
    row = np.arange(len(event), dtype=np.int64) - np.repeat(np.cumsum(k) - k, k)

    def rows_of(lst: pa.Array | None, counts: np.ndarray) -> pa.Array | None:
        if lst is None or not pa.types.is_list(lst.type) or not pa.types.is_struct(
                lst.type.value_type):
            return None
        flat = pc.list_flatten(lst)
        start = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        have = row < counts[event]
        idx = np.where(have, start[event] + row, 0)
        return flat.take(pa.array(idx, mask=~have))

    old_lens = (np.asarray(pc.fill_null(pc.list_value_length(old), 0).to_numpy(
        zero_copy_only=False), np.int64)
        if old is not None and pa.types.is_list(old.type) else np.zeros(n, np.int64))
    d_rows, o_rows = rows_of(data, lens), rows_of(old, old_lens)
    typ = _text(_col(t, "type"), n).take(pa.array(event))
    ddl_raw = _col(t, "isDdl")
    is_ddl = (_np(ddl_raw.take(pa.array(event))) if ddl_raw is not None
              and pa.types.is_boolean(ddl_raw.type) else np.zeros(len(event), bool))
    op = _ops(typ, _CANAL_OPS)
    is_t = _np(pc.equal(op, "t"))
    skip = (is_ddl | _np(pc.is_in(typ, pa.array(_CANAL_DDL)))) & ~is_t
    op = pc.if_else(pa.array(skip), "m", op)
    is_u, is_d = _np(pc.equal(op, "u")), _np(pc.equal(op, "d"))
    cru = _np(pc.is_in(op, pa.array(["c", "r", "u"])))
    after = _image(d_rows, cru, schema, text=True)
    before = _image(_overlay(d_rows, o_rows, is_u | is_d), is_u | is_d, schema, text=True)
    bad = (data is not None and not is_list and not pa.types.is_null(data.type))
    outcome = pc.if_else(pa.array(skip), DDL, _NULL_S)
    if bad:
        not_list = np.asarray(pc.is_valid(data).to_numpy(zero_copy_only=False), bool)[event]
        outcome = pc.if_else(pa.array(not_list & ~skip), "canal-json: data is not a list of rows",
                             outcome)
    return _View(op, before, after, _arrival(file_index, lines[event], row), None,
                 _top_fields(t, ("data", "old")).take(pa.array(event)), event, row, outcome)


def _maxwell_declared(schema: TableSchema) -> pa.Schema:
    img = _image_type(schema, text=False)
    return pa.schema([("type", pa.string()), ("position", pa.string()), ("xoffset", pa.int64()),
                      ("data", img), ("old", img)])


#: ``binlog.000003:1234``: the file (its index), the pos
_MAXWELL_POSITION = r"^(?P<f>.*\.(?P<i>[0-9]{1,9})):(?P<p>[0-9]{1,18})$"
_MAXWELL_OPS = {"insert": "c", "bootstrap-insert": "r", "update": "u", "delete": "d"}
_MAXWELL_SKIPPED = ("database-create", "database-alter", "database-drop", "table-create",
                    "table-alter", "table-drop", "bootstrap-start", "bootstrap-complete")


def _maxwell(t: pa.Table, schema: TableSchema, file_index: int, lines: np.ndarray) -> _View:
    n = t.num_rows
    event, row = _single(t)
    typ = _text(_col(t, "type"), n)
    skip = _np(pc.is_in(typ, pa.array(_MAXWELL_SKIPPED)))
    op = pc.if_else(pa.array(skip), "m", _ops(typ, _MAXWELL_OPS))
    is_u, is_d = _np(pc.equal(op, "u")), _np(pc.equal(op, "d"))
    cru = _np(pc.is_in(op, pa.array(["c", "r", "u"])))
    data, old = _col(t, "data"), _col(t, "old")
    after = _image(data, cru, schema, text=False)
    before = _image(_overlay(data, old, is_u | is_d), is_u | is_d, schema, text=False)
    m = pc.extract_regex(_text(_col(t, "position"), n), _MAXWELL_POSITION)
    has_pos = _np(pc.is_valid(m))
    xo_raw = _col(t, "xoffset")
    xoff = (pc.fill_null(xo_raw.cast(pa.int64()), 0) if xo_raw is not None
            and pa.types.is_integer(xo_raw.type) else pa.array(np.zeros(n, np.int64)))
    pos = pc.struct_field(m, "p").cast(pa.int64())
    hp = pa.array(has_pos)
    slots = [pc.if_else(hp, pc.struct_field(m, "f"), pa.array(np.full(n, file_index)).cast(
                 pa.string())),
             pc.if_else(hp, pos, pa.array(lines.astype(np.int64))),
             pc.if_else(hp, xoff, pa.array(np.zeros(n, np.int64)))]
    idx = pc.struct_field(m, "i").cast(pa.int64())
    fb, pb, rb = MYSQL_BITS
    fits = pc.and_(pc.and_(pc.less(idx, 2**fb), pc.less(pos, 2**pb)),
                   pc.and_(pc.greater_equal(xoff, 0), pc.less(xoff, 2**rb)))
    packed = pc.add(pc.add(pc.multiply(idx, 2**(pb + rb)), pc.multiply(pos, 2**rb)), xoff)
    seq = pc.if_else(pc.fill_null(fits, False), packed, pa.scalar(None, pa.int64()))
    outcome = pc.if_else(pa.array(skip), DDL, _NULL_S)
    bad = _not_struct(data, n) | _not_struct(old, n)
    outcome = pc.if_else(pa.array(bad & ~skip), "malformed JSON", outcome)
    return _View(op, before, after, slots, seq, _top_fields(t, ("data", "old")), event, row,
                 outcome)


def _ogg_declared(schema: TableSchema) -> pa.Schema:
    img = _image_type(schema, text=False)
    return pa.schema([("op_type", pa.string()), ("pos", pa.string()), ("before", img),
                      ("after", img)])


_OGG_OPS = {"I": "c", "U": "u", "D": "d", "T": "t"}


def _ogg(t: pa.Table, schema: TableSchema, file_index: int, lines: np.ndarray) -> _View:
    n = t.num_rows
    event, row = _single(t)
    op = _ops(_text(_col(t, "op_type"), n), _OGG_OPS)
    is_u, is_d = _np(pc.equal(op, "u")), _np(pc.equal(op, "d"))
    cru = _np(pc.is_in(op, pa.array(["c", "r", "u"])))
    b_raw, a_raw = _col(t, "before"), _col(t, "after")
    after = _image(a_raw, cru, schema, text=False)
    before = _image(b_raw, is_u | is_d, schema, text=False)
    pos_text = _text(_col(t, "pos"), n)
    digits = pc.utf8_ltrim(pos_text, "0")
    is_num = _np(pc.match_substring_regex(pos_text, r"^[0-9]+$"))
    short = _np(pc.less_equal(pc.utf8_length(digits), 18))
    fits = is_num & short
    num = pc.if_else(pa.array(fits), pc.if_else(pc.equal(digits, ""), "0", digits), _NULL_S
                     ).cast(pa.int64())
    zero = pa.array(np.zeros(n, np.int64))
    outcome = pc.if_else(pa.array(is_num & ~short),
                         "ogg-json: pos does not fit a BIGINT", _NULL_S)
    bad = _not_struct(b_raw, n) | _not_struct(a_raw, n)
    outcome = pc.if_else(pa.array(bad), "malformed JSON", outcome)
    return _View(op, before, after, [num, zero, zero], num,
                 _top_fields(t, ("before", "after")), event, row, outcome)


def _dms_declared(schema: TableSchema) -> pa.Schema:
    img = _image_type(schema, text=False, before_prefix="BI_")
    meta = pa.struct([("operation", pa.string()), ("record-type", pa.string())])
    return pa.schema([("data", img), ("metadata", meta)])


_DMS_OPS = {"load": "r", "insert": "c", "update": "u", "delete": "d"}


def _dms(t: pa.Table, schema: TableSchema, file_index: int, lines: np.ndarray) -> _View:
    n = t.num_rows
    event, row = _single(t)
    meta = Fields(_struct(_col(t, "metadata")), n)
    kind = _text(meta("record-type"), n)
    skip = _np(pc.and_(pc.is_valid(kind), pc.not_equal(kind, "data")))
    op = pc.if_else(pa.array(skip), "m", _ops(_text(meta("operation"), n), _DMS_OPS))
    is_u, is_d = _np(pc.equal(op, "u")), _np(pc.equal(op, "d"))
    cru = _np(pc.is_in(op, pa.array(["c", "r", "u"])))
    data = _col(t, "data")
    after = _image(data, cru, schema, text=False, drop_prefix="BI_")
    plain = _image(data, is_u | is_d, schema, text=False, drop_prefix="BI_")
    before = _overlay(plain, data, is_u | is_d, prefix="BI_")
    outcome = pc.if_else(pa.array(skip), DDL, _NULL_S)
    outcome = pc.if_else(pa.array(_not_struct(data, n) & ~skip), "malformed JSON", outcome)
    return _View(op, before, after, _arrival(file_index, lines, row), None,
                 _top_fields(t, ("data",), nested="metadata"), event, row, outcome)


# ---------------------------------------------------------------------------- the rows


_ViewFn = Callable[[pa.Table, TableSchema, int, np.ndarray], _View]


@dataclass(frozen=True)
class JsonFormat:
    """A JSON change-event format other than Debezium's envelope (see the module docs):
    :class:`pipelines.cdc.decode.EventFormat`."""

    name: str
    declared_fn: Callable[[TableSchema], pa.Schema]
    view_fn: _ViewFn
    #: whether the format's own position can fill a sequence column
    fills_sequence: bool
    #: what a sequence column needs of this format's events (said in the refusal's reason)
    sequence_hint: str = ""

    def declared(self, schema: TableSchema) -> pa.Schema:
        return self.declared_fn(schema)

    def decode(self, data: bytes, schema: TableSchema, *,
               settings: DecodeSettings = DEFAULT_SETTINGS, **kw: Any) -> pa.Table:
        """:func:`pipelines.cdc.decode.decode_file` of this format (no TOAST placeholder:
        ``settings.unavailable`` is ignored)."""
        settings = replace(settings, unavailable="store")
        check_sequence(self.name, settings.sequence_column, settings.position_fields)
        return decode_file(data, schema, fmt=self, settings=settings, **kw)

    def chunk_rows(self, t: pa.Table, rows: np.ndarray, lines: Callable[[], pa.Array],
                   target: pa.Schema, schema: TableSchema, file_index: int, first_line: int,
                   settings: DecodeSettings) -> list[pa.Table]:
        """The change rows of a parsed chunk (columns as
        :func:`pipelines.cdc.decode.output_schema`; ``rows``: the line index of each event).
        An event with a rejected row is rejected whole (one row, the first reason)."""
        line_no = rows.astype(np.int64) + first_line
        v = self.view_fn(t, schema, file_index, line_no)
        m = len(v.event)
        position_fields, sequence_column = settings.position_fields, settings.sequence_column
        if position_fields is None:
            source = pa.StructArray.from_arrays(v.slots, list(SLOTS))
            fields: Sequence[str] = SLOTS
            seq = v.sequence
            check_sequence(self.name, sequence_column if seq is None else None, None)
        else:
            source, fields, seq = v.fields, position_fields, None
        env: dict[str, pa.Array | None] = {"op": v.op, "ts_ms": None, "before": v.before,
                                           "after": v.after, "source": source, "schema": None}
        views = decode_view(env, m, schema, target,
                            replace(settings, position_fields=tuple(fields), unavailable="store"),
                            seq_value=seq)
        err = pc.if_else(pc.is_valid(v.outcome), v.outcome, views[ERROR_COLUMN])
        if sequence_column is not None and self.sequence_hint:
            generic = f"source position does not fit the sequence column {sequence_column}"
            err = pc.if_else(pc.fill_null(pc.equal(err, generic), False),
                             f"{generic} ({self.sequence_hint})", err)
        err = _whole_events(err, v.event)
        keep = pa.array((v.row == 0) | ~np.asarray(pc.is_valid(err).to_numpy(
            zero_copy_only=False), bool))
        valid = pc.is_null(err)
        cols: dict[str, pa.Array] = {f.name: views[f.name] for f in target if f.name in views}
        cols[ERROR_COLUMN] = err
        cols["_pos_file"] = pa.array(np.full(m, file_index, np.int64))
        cols["_pos_line"] = pa.array(line_no[v.event])
        cols["_event"] = pa.array((2 * v.row).astype(np.int32))
        unknown = pc.if_else(valid, views["_unknown"], _NULL_S)
        cols["_unknown"] = unknown
        keep_text = pc.and_(pc.or_(pc.invert(valid), pc.is_valid(unknown)),
                            pc.not_equal(pc.fill_null(err, ""), TOMBSTONE))
        if pc.any(keep_text).as_py():
            raw = lines().take(pa.array(rows[v.event]))
            cols["_value"] = pc.if_else(keep_text, raw, _NULL_S)
        else:
            cols["_value"] = pa.nulls(m, pa.string())
        for c in [*schema.field_names, KIND_COLUMN]:  # a rejected event carries no values
            cols[c] = pc.if_else(valid, cols[c], pa.scalar(None, cols[c].type))
        cols[BUCKET] = pa.nulls(m, pa.int32())
        main = pa.table({f.name: cols[f.name] for f in target}, schema=target)
        old = pc.and_(valid, views["_old_key"])
        out = [main.filter(keep)]
        if pc.any(old).as_py():  # the -D of a key change carries the before image
            extra = main.filter(old)
            tb = views["_typed_before"].filter(old)
            for f in schema.fields:
                extra = extra.set_column(extra.schema.get_field_index(f.name),
                                         target.field(f.name), pc.struct_field(tb, f.name))
            extra = extra.set_column(extra.schema.get_field_index(KIND_COLUMN), KIND_COLUMN,
                                     pa.array([_DELETE] * extra.num_rows, pa.string()))
            ev = extra.column("_event").to_numpy() + 1
            extra = extra.set_column(extra.schema.get_field_index("_event"), "_event",
                                     pa.array(ev.astype(np.int32)))
            out.append(extra)
        return out


def _whole_events(err: pa.Array, event: np.ndarray) -> pa.Array:
    """``err`` with every row of an event that has a rejected row carrying the event's first
    reason (an event lands whole or not at all)."""
    bad = np.asarray(pc.and_(pc.is_valid(err), pc.invert(pc.is_in(
        err, pa.array(_SKIPPED)))).to_numpy(zero_copy_only=False), bool)
    if not bad.any():
        return err
    at = np.flatnonzero(bad)
    events, first = np.unique(event[at], return_index=True)
    reason_row = np.full(int(event.max()) + 1, -1, np.int64)
    reason_row[events] = at[first]
    r = reason_row[event]
    has = r >= 0
    return pc.if_else(pa.array(has), err.take(pa.array(np.where(has, r, 0))), err)


# ---------------------------------------------------------------------------- the registry


#: ``decode(data, schema, *, file_index, [first_line,] settings, threads) -> rows``
#: (:func:`pipelines.cdc.decode.decode_file`'s signature, ``settings`` a
#: :class:`~pipelines.cdc.settings.DecodeSettings`; ``first_line`` for splittable formats)
Decode = Callable[..., pa.Table]


@dataclass(frozen=True)
class CdcFormat:
    """One ``--format`` of the CDC job: how a landed file becomes change rows."""

    name: str
    decode: Decode
    #: whether the format has an order a sequence column can be filled from
    fills_sequence: bool = True
    #: whether Debezium's unchanged-TOAST placeholder means "unchanged" in this format
    placeholder: bool = False
    #: the image field names of an event (dict) for sampling new columns' values
    images: Callable[[Any], list[Any]] | None = None
    #: whether a file is lines that can be decoded in line-aligned ranges
    #: (:mod:`pipelines.cdc.ranges`; ``decode`` then takes ``first_line``)
    splittable: bool = True


def _debezium_images(ev: Any) -> list[Any]:
    if isinstance(ev, dict) and isinstance(ev.get("payload"), dict) and "op" not in ev:
        ev = ev["payload"]
    return [ev.get("after"), ev.get("before")] if isinstance(ev, dict) else []


def _data_images(ev: Any) -> list[Any]:
    if not isinstance(ev, dict):
        return []
    data = ev.get("data") if "data" in ev else ev.get("after")
    rows = data if isinstance(data, list) else [data]
    return [{k: v for k, v in r.items() if not k.startswith("BI_")} if isinstance(r, dict)
            else r for r in rows]


def _json(name: str, declared: Callable[[TableSchema], pa.Schema], view: _ViewFn,
          fills_sequence: bool, sequence_hint: str = "") -> CdcFormat:
    f = JsonFormat(name, declared, view, fills_sequence, sequence_hint)
    return CdcFormat(name, f.decode, fills_sequence, False, _data_images)


#: every ``--format``, by name (a format of its own module adds one entry)
FORMATS: dict[str, CdcFormat] = {
    DEFAULT_FORMAT: CdcFormat(DEFAULT_FORMAT, decode_file, True, True, _debezium_images),
    "debezium-avro": CdcFormat("debezium-avro", decode_avro_file, True, True, _debezium_images,
                                splittable=False),
    "canal-json": _json("canal-json", _canal_declared, _canal, False),
    "maxwell-json": _json("maxwell-json", _maxwell_declared, _maxwell, True,
                          "Maxwell's position: output_binlog_position, at most 2047 rows of "
                          "a transaction"),
    "ogg-json": _json("ogg-json", _ogg_declared, _ogg, True, "GoldenGate's pos"),
    "aws-dms-json": _json("aws-dms-json", _dms_declared, _dms, False),
}


def check_sequence(fmt: str, sequence_column: str | None,
                   position_fields: Sequence[str] | None) -> None:
    """Refuse a sequence column the format cannot fill (see the module docs).

    Raises:
        SchemaError: ``fmt`` carries no orderable position and no ``position_fields`` name one.
    """
    f = FORMATS.get(fmt)
    if sequence_column is None or position_fields is not None or f is None or f.fills_sequence:
        return
    raise SchemaError(
        f"{fmt} events carry no orderable source position to fill the sequence column "
        f"{sequence_column} ('sequence.field'): drop the option (the later batch wins), or "
        "name an event field that orders them with --position-fields")


def sample_values(fmt: str, lines: Sequence[str], names: Sequence[str]) -> dict[str, list[Any]]:
    """JSON values of ``names`` in the images of sample event lines of format ``fmt`` (for
    the types of new columns)."""
    import json

    images = FORMATS[fmt].images or _debezium_images
    out: dict[str, list[Any]] = {n: [] for n in names}
    for line in lines:
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        for image in images(ev):
            if isinstance(image, dict):
                for n in names:
                    if n in image:
                        out[n].append(image[n])
    return out
