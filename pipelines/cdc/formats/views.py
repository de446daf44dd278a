"""The other JSON change-event formats (canal, Maxwell, GoldenGate, AWS DMS; semantics and
positions in :mod:`pipelines.cdc.formats`' docs): each format's declared Arrow types and the
:class:`View` of a parsed chunk: its events as the Debezium envelope's parts (op, before,
after, source positions) with a row -> event index, for :class:`pipelines.cdc.formats.
JsonFormat` to decode as Debezium's."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core import TableSchema
from paimon_core.integration import BINARY_ROOTS, INTEGER_ROOTS, STRING_ROOTS, AtomicType, TypeRoot
from pipelines.cdc.events import (
    MYSQL_BITS,
)
from pipelines.cdc.formats.ogg_compressed import Presence, merge_compressed
from pipelines.cdc.values.convert import Fields, json_text

__all__ = ["DDL", "View", "canal_declared", "canal_view", "dms_declared", "dms_view",
           "maxwell_declared", "maxwell_view", "ogg_declared", "ogg_view"]

#: the ``_error`` of a DDL or control event (canal ``isDdl``, Maxwell's schema changes and
#: bootstrap markers, DMS control records): skipped and counted, not an error
DDL = "ddl"
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
class View:
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


def canal_declared(schema: TableSchema) -> pa.Schema:
    img = pa.list_(_image_type(schema, text=True))
    return pa.schema([("type", pa.string()), ("isDdl", pa.bool_()), ("data", img),
                      ("old", img)])


_CANAL_OPS = {"INSERT": "c", "UPDATE": "u", "DELETE": "d", "ROW": "r", "TRUNCATE": "t"}
#: canal's schema-change types, DDL even where ``isDdl`` is false (a ``QUERY`` such as
#: CREATE DATABASE is printed with ``isDdl: false``)
_CANAL_DDL = ("CREATE", "ALTER", "ERASE", "QUERY", "RENAME", "CINDEX", "DINDEX")


def canal_view(t: pa.Table, schema: TableSchema, file_index: int, lines: np.ndarray) -> View:
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
    return View(op, before, after, _arrival(file_index, lines[event], row), None,
                 _top_fields(t, ("data", "old")).take(pa.array(event)), event, row, outcome)


def maxwell_declared(schema: TableSchema) -> pa.Schema:
    img = _image_type(schema, text=False)
    return pa.schema([("type", pa.string()), ("position", pa.string()), ("xoffset", pa.int64()),
                      ("data", img), ("old", img)])


#: ``binlog.000003:1234``: the file (its index), the pos
_MAXWELL_POSITION = r"^(?P<f>.*\.(?P<i>[0-9]{1,9})):(?P<p>[0-9]{1,18})$"
_MAXWELL_OPS = {"insert": "c", "bootstrap-insert": "r", "update": "u", "delete": "d"}
_MAXWELL_SKIPPED = ("database-create", "database-alter", "database-drop", "table-create",
                    "table-alter", "table-drop", "bootstrap-start", "bootstrap-complete")


def maxwell_view(t: pa.Table, schema: TableSchema, file_index: int, lines: np.ndarray) -> View:
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
    seq = _maxwell_sequence(pc.struct_field(m, "i").cast(pa.int64()), pos, xoff)
    outcome = pc.if_else(pa.array(skip), DDL, _NULL_S)
    bad = _not_struct(data, n) | _not_struct(old, n)
    outcome = pc.if_else(pa.array(bad & ~skip), "malformed JSON", outcome)
    return View(op, before, after, slots, seq, _top_fields(t, ("data", "old")), event, row,
                 outcome)


def _maxwell_sequence(idx: pa.Array, pos: pa.Array, xoff: pa.Array) -> pa.Array:
    """The sequence value of Maxwell rows: binlog file index, ``pos`` and ``xoffset`` packed as
    MySQL's (:data:`MYSQL_BITS`), the ``xoffset`` capped at the row field's largest value.

    Maxwell's ``position`` is the end of the binlog rows event a row comes from (Maxwell's
    ``BinlogConnectorEvent.jsonMaps``: every row of one event carries the event's next
    position) and ``xoffset`` the row's index in its transaction, so (file, pos, xoffset)
    orders the rows exactly; rows of different events differ in ``pos``, and ``xoffset``
    only orders the rows of one event. No 63-bit packing holds every (file, pos, xoffset)
    (an ``xoffset`` can be as large as ``pos``), so past row 2047 of a transaction the rows
    of one rows event share one value: Paimon's sequence field compares rows of one key,
    and one key appears twice in one rows event only in a key-changing multi-row UPDATE;
    such rows are ordered by (file, pos, xoffset) within a batch, and across batches by the
    batch order. A position whose file index or ``pos`` does not fit is NULL (refused)."""
    fb, pb, rb = MYSQL_BITS
    fits = pc.and_(pc.and_(pc.less(idx, 2**fb), pc.less(pos, 2**pb)), pc.greater_equal(xoff, 0))
    row = pc.min_element_wise(xoff, pa.scalar(2**rb - 1, pa.int64()))
    packed = pc.add(pc.add(pc.multiply(idx, 2**(pb + rb)), pc.multiply(pos, 2**rb)), row)
    return pc.if_else(pc.fill_null(fits, False), packed, pa.scalar(None, pa.int64()))


def ogg_declared(schema: TableSchema) -> pa.Schema:
    img = _image_type(schema, text=False)
    return pa.schema([("op_type", pa.string()), ("pos", pa.string()), ("op_ts", pa.string()),
                      ("before", img), ("after", img)])


_OGG_OPS = {"I": "c", "U": "u", "D": "d", "T": "t"}


def ogg_view(t: pa.Table, schema: TableSchema, file_index: int, lines: np.ndarray,
             presence: Presence | None = None) -> View:
    """GoldenGate's events; ``presence``: the columns each line's images hold, for the
    compressed updates (:mod:`pipelines.cdc.formats.ogg_compressed`)."""
    n = t.num_rows
    event, row = _single(t)
    op = _ops(_text(_col(t, "op_type"), n), _OGG_OPS)
    is_u, is_d = _np(pc.equal(op, "u")), _np(pc.equal(op, "d"))
    cru = _np(pc.is_in(op, pa.array(["c", "r", "u"])))
    b_raw, a_raw = _col(t, "before"), _col(t, "after")
    after = _image(a_raw, cru, schema, text=False)
    before = _image(b_raw, is_u | is_d, schema, text=False)
    compressed = pa.nulls(n, pa.string())
    if presence is not None and is_u.any():
        after, compressed = merge_compressed(after, before, presence, lines, is_u)
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
    outcome = pc.if_else(pc.is_valid(compressed), compressed, outcome)
    bad = _not_struct(b_raw, n) | _not_struct(a_raw, n)
    outcome = pc.if_else(pa.array(bad), "malformed JSON", outcome)
    return View(op, before, after, [num, zero, zero], num,
                 _top_fields(t, ("before", "after")), event, row, outcome)


def dms_declared(schema: TableSchema) -> pa.Schema:
    img = _image_type(schema, text=False, before_prefix="BI_")
    meta = pa.struct([("operation", pa.string()), ("record-type", pa.string()),
                      ("timestamp", pa.string())])
    return pa.schema([("data", img), ("metadata", meta)])


_DMS_OPS = {"load": "r", "insert": "c", "update": "u", "delete": "d"}


def dms_view(t: pa.Table, schema: TableSchema, file_index: int, lines: np.ndarray) -> View:
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
    return View(op, before, after, _arrival(file_index, lines, row), None,
                 _top_fields(t, ("data",), nested="metadata"), event, row, outcome)
