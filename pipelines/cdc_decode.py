"""Vectorised decoding of Debezium-style change events with pyarrow (the CDC job's fast path).

:func:`decode_events` turns the lines of one input file into change rows, with exactly the
semantics of the Spark SQL reference in :mod:`pipelines.cdc_events` (``parse_events`` ->
``classify_events`` -> ``to_changes(keep_rejected=True)``; a test checks that both agree):
same row kinds, value encodings, rejection reasons in the same order, position columns. It
runs inside one Spark task per file, so JSON is parsed by pyarrow's multi-threaded reader
instead of Spark's row-by-row ``from_json`` (about 7x faster here), and the rows leave Python
already typed and bucketed.

Parsing: the lines are read as one JSON-lines document with the table's string / numeric /
boolean / binary image columns declared (so that text is never re-interpreted, e.g. as a
timestamp); when that fails the lines are bisected, and a single line that still fails is
parsed again with every type inferred (then a value of the wrong type is a ``bad value for
<col>``), and if that fails too it is ``malformed JSON``. JSON ``null`` lines are tombstones.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import io
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from paimon_core.bucket import bucket_ids
from paimon_core.spec.schema import TableSchema
from paimon_core.types import (
    BINARY_ROOTS,
    INTEGER_ROOTS,
    STRING_ROOTS,
    AtomicType,
    DataField,
    DataType,
    TypeRoot,
)
from paimon_core.write.input import conform_column
from pipelines.cdc_events import ERROR_COLUMN, KIND_COLUMN, OPS, TOMBSTONE, position_columns
from pipelines.spark_types import arrow_for_spark, spark_schema
from pipelines.writer import BUCKET_COLUMN as BUCKET

__all__ = ["EXTRA_COLUMNS", "decode_events", "output_schema"]

#: per-row columns besides the table's, the kind and the positions (see ``to_changes``)
EXTRA_COLUMNS = (ERROR_COLUMN, "_event", "_value", "_unknown")
_INT_RANGE = {TypeRoot.TINYINT: 2**7, TypeRoot.SMALLINT: 2**15, TypeRoot.INT: 2**31,
              TypeRoot.BIGINT: 2**63}
_JSON_TYPES = {TypeRoot.BOOLEAN: pa.bool_(), TypeRoot.FLOAT: pa.float64(),
               TypeRoot.DOUBLE: pa.float64()}


def _nullable(fields: Sequence[DataField]) -> list[DataField]:
    return [DataField(f.id, f.name, f.type.with_nullable(True), f.description) for f in fields]


def output_schema(schema: TableSchema, position_fields: Sequence[str]) -> pa.Schema:
    """Arrow schema of :func:`decode_events`' result (Spark's Arrow types for the table's
    columns, then ``_kind``, the positions, the extras and ``_paimon_bucket``)."""
    table = arrow_for_spark(spark_schema(_nullable(schema.fields)))
    pos = position_columns(position_fields)
    fields = [*table, pa.field(KIND_COLUMN, pa.string())]
    for name in pos:
        kind = name[len("_pos_"):]
        t = pa.string() if kind.startswith("s") else pa.int64()
        fields.append(pa.field(name, t))
    fields += [pa.field(ERROR_COLUMN, pa.string()), pa.field("_event", pa.int32()),
               pa.field("_value", pa.string()), pa.field("_unknown", pa.string()),
               pa.field(BUCKET, pa.int32())]
    return pa.schema(fields)


# ---------------------------------------------------------------------------- parsing


def _declared(schema: TableSchema) -> pa.Schema:
    """Types declared to the JSON reader: image columns whose JSON form is unambiguous."""
    children = []
    for f in schema.fields:
        t = f.type
        if isinstance(t, AtomicType):
            if t.root in STRING_ROOTS or t.root in BINARY_ROOTS:
                children.append(pa.field(f.name, pa.string()))
            elif t.root in INTEGER_ROOTS:
                children.append(pa.field(f.name, pa.int64()))
            elif t.root in _JSON_TYPES:
                children.append(pa.field(f.name, _JSON_TYPES[t.root]))
    image = pa.struct(children)
    return pa.schema([("op", pa.string()), ("ts_ms", pa.int64()), ("before", image),
                      ("after", image)])


def _read(doc: bytes, declared: pa.Schema | None) -> pa.Table:
    opts = pj.ParseOptions(explicit_schema=declared, unexpected_field_behavior="infer")
    return pj.read_json(io.BytesIO(doc), parse_options=opts)


def _doc(lines: pa.Array) -> bytes:
    return "\n".join(lines.to_pylist()).encode("utf-8")


def _parse(lines: pa.Array, declared: pa.Schema, start: int,
           out: list[tuple[int, pa.Table]], bad: list[int], doc: bytes | None = None) -> None:
    """Parse ``lines`` (``doc``: them joined, if at hand) into chunks ``(index of first line,
    table)``; indices of lines that are not JSON objects go to ``bad``."""
    try:
        t = _read(doc if doc is not None else _doc(lines), declared)
        if t.num_rows == len(lines):
            out.append((start, t))
            return
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    if len(lines) == 1:
        try:
            t = _read(_doc(lines), None)
            if t.num_rows == 1:
                out.append((start, t))
                return
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
        bad.append(start)
        return
    mid = len(lines) // 2
    _parse(lines.slice(0, mid), declared, start, out, bad)
    _parse(lines.slice(mid), declared, start + mid, out, bad)


# ---------------------------------------------------------------------------- values


def _child(arr: pa.Array | None, name: str, n: int) -> pa.Array:
    if arr is None or not pa.types.is_struct(arr.type):
        return pa.nulls(n)
    t = arr.type
    if t.get_field_index(name) < 0:
        return pa.nulls(n)
    child = pc.struct_field(arr, name)
    return child if arr.null_count == 0 else pc.if_else(pc.is_null(arr), pa.nulls(n, child.type),
                                                       child)


def _text(arr: pa.Array) -> pa.Array:
    """JSON values as the text Spark's ``map<string, string>`` would hold."""
    t = arr.type
    if pa.types.is_string(t) or pa.types.is_null(t):
        return arr.cast(pa.string())
    if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t):
        return arr.cast(pa.string())
    if pa.types.is_timestamp(t):
        return pc.strftime(arr, "%Y-%m-%dT%H:%M:%S")
    return pa.array([None if v is None else json.dumps(v, separators=(",", ":"), default=str)
                     for v in arr.to_pylist()], pa.string())


def _digits(text: pa.Array) -> pa.Array:
    return pc.match_substring_regex(text, r"^-?[0-9]+$")


def _py(fn: Any, values: list[Any], target: pa.DataType) -> pa.Array:
    out = []
    for v in values:
        try:
            out.append(None if v is None else fn(v))
        except (ValueError, TypeError, OverflowError, binascii.Error):
            out.append(None)
    return pa.array(out, target)


def _iso(v: str, ltz: bool) -> datetime.datetime:
    d = datetime.datetime.fromisoformat(v.strip().replace(" ", "T", 1))
    if ltz:
        return d if d.tzinfo else d.replace(tzinfo=datetime.UTC)
    return d.replace(tzinfo=None)


def convert(arr: pa.Array, t: DataType, target: pa.DataType, epoch_unit: str) -> pa.Array:
    """A parsed JSON value column as Paimon type ``t`` in Arrow type ``target`` (Spark's);
    NULL where the value does not fit exactly (see :func:`pipelines.cdc_events.typed_value`)."""
    n = len(arr)
    src = arr.type
    if pa.types.is_null(src):
        return pa.nulls(n, target)
    if not isinstance(t, AtomicType):
        try:
            return arr.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return pa.nulls(n, target)
    r = t.root
    if r in STRING_ROOTS:
        return _text(arr)
    if r in BINARY_ROOTS:
        if not pa.types.is_string(src):
            return pa.nulls(n, target)
        return _py(lambda v: base64.b64decode(v, validate=True), arr.to_pylist(), target)
    if r is TypeRoot.BOOLEAN:
        if pa.types.is_boolean(src):
            return arr
        low = pc.utf8_lower(_text(arr))
        return pc.if_else(pc.equal(low, "true"), True,
                          pc.if_else(pc.equal(low, "false"), False, pa.scalar(None, pa.bool_())))
    text = _text(arr)
    if r in INTEGER_ROOTS:
        lim = _INT_RANGE[r]
        if pa.types.is_integer(src):
            if r is TypeRoot.BIGINT:
                return arr.cast(target)
            ok = pc.and_(pc.greater_equal(arr, -lim), pc.less(arr, lim))
            return pc.if_else(ok, arr, pa.scalar(None, src)).cast(target)

        def parse(v: str) -> int:
            x = int(v)
            if not -lim <= x < lim:
                raise ValueError(v)
            return x

        num = pc.if_else(_digits(text), text, pa.scalar(None, pa.string()))
        return _py(parse, num.to_pylist(), target)
    if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        if pa.types.is_integer(src) or pa.types.is_floating(src):
            return arr.cast(target)
        return _py(float, text.to_pylist(), target)
    if r is TypeRoot.DECIMAL:
        scale = t.scale or 0
        if pa.types.is_floating(src):  # the shortest text that reads back as the double
            text = pa.array([None if v is None else repr(v) for v in arr.to_pylist()],
                            pa.string())
        exact = pc.match_substring_regex(text, rf"^[+-]?[0-9]+(\.[0-9]{{0,{scale}}}0*)?$")
        good = pc.if_else(exact, text, pa.scalar(None, pa.string()))
        try:
            return good.cast(target)
        except pa.ArrowInvalid:  # too many integer digits somewhere: value by value
            return _py(lambda v: __import__("decimal").Decimal(v), good.to_pylist(), target)
    if r is TypeRoot.DATE:
        if pa.types.is_integer(src):
            return arr.cast(pa.int32()).cast(target)
        if pa.types.is_timestamp(src):
            return arr.cast(target)
        days = pc.if_else(_digits(text), text, pa.scalar(None, pa.string()))
        as_days = days.cast(pa.int64()).cast(pa.int32()).cast(target)
        parsed = pc.strptime(text, "%Y-%m-%d", "s", error_is_null=True).cast(target)
        return pc.if_else(pc.is_valid(as_days), as_days, parsed)
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        ltz = r is TypeRoot.TIMESTAMP_LTZ
        naive = pa.timestamp(target.unit)
        if pa.types.is_integer(src):
            scaled = pc.multiply(arr, 1000) if epoch_unit == "ms" else arr
            out = scaled.cast(pa.int64()).cast(naive)
        elif pa.types.is_timestamp(src):
            out = arr.cast(pa.timestamp(src.unit)).cast(naive)
        else:
            digits = _digits(text)
            nums = pc.if_else(digits, text, pa.scalar(None, pa.string())).cast(pa.int64())
            epoch = (pc.multiply(nums, 1000) if epoch_unit == "ms" else nums).cast(naive)
            iso = _py(lambda v: _iso(v, ltz), pc.if_else(digits, pa.scalar(None, pa.string()),
                                                         text).to_pylist(),
                      pa.timestamp(target.unit, tz="UTC") if ltz else naive)
            out = pc.if_else(digits, epoch, iso.cast(naive))
        return out.cast(target) if not ltz else pc.assume_timezone(out, "UTC").cast(target)
    return pa.nulls(n, target)  # pragma: no cover - TIME / MULTISET are refused upfront


# ---------------------------------------------------------------------------- decoding


def _view(t: pa.Table, payload: bool) -> dict[str, pa.Array | None]:
    names = ("op", "ts_ms", "before", "after", "source")
    if payload:
        p = t.column("payload").combine_chunks() if "payload" in t.column_names else None
        n = t.num_rows
        return {k: (_child(p, k, n) if p is not None else None) for k in names}
    return {k: (t.column(k).combine_chunks() if k in t.column_names else None) for k in names}


def _decode_view(v: dict[str, pa.Array | None], n: int, schema: TableSchema,
                 target: pa.Schema, position_fields: Sequence[str], epoch_unit: str,
                 sequence_column: str | None) -> dict[str, pa.Array]:
    """Outputs of one envelope view of a parsed chunk (one row per event; the ``-D`` of a
    key-changing update in ``_old_key``)."""
    null_s = pa.scalar(None, pa.string())
    op_raw = v["op"]
    op = _text(op_raw) if op_raw is not None else pa.nulls(n, pa.string())
    before, after = v["before"], v["after"]
    is_d, is_u = pc.fill_null(pc.equal(op, "d"), False), pc.fill_null(pc.equal(op, "u"), False)
    has_after = pc.is_valid(after) if after is not None else pa.array(np.zeros(n, bool))
    has_before = pc.is_valid(before) if before is not None else pa.array(np.zeros(n, bool))
    malformed = pa.array(np.zeros(n, bool))
    for img in (before, after, v["source"]):  # not an object: Spark's parse fails
        if img is not None and not pa.types.is_struct(img.type) and not pa.types.is_null(
                img.type):
            malformed = pc.or_(malformed, pc.is_valid(img))
    out: dict[str, pa.Array] = {}
    reasons: list[tuple[pa.Array, str]] = [
        (malformed, "malformed JSON"),
        (pc.invert(pc.fill_null(pc.is_in(op, pa.array(OPS)), False)), "unknown op"),
        (pc.and_(pc.fill_null(pc.is_in(op, pa.array(["c", "r", "u"])), False),
                 pc.invert(has_after)), "missing after"),
        (pc.and_(is_d, pc.invert(has_before)), "missing before"),
    ]
    src = v["source"]
    for i, p in enumerate(position_fields):
        raw = _child(src, p, n)
        text = _text(raw)
        num = (raw.cast(pa.int64()) if pa.types.is_integer(raw.type)
               else pc.if_else(_digits(text), text, null_s).cast(pa.int64()))
        out[f"_pos_n{i}"] = num
        out[f"_pos_s{i}"] = pc.if_else(pc.is_valid(num), null_s, text)  # text: non-numeric
        reasons.append((pc.is_null(raw), "missing source position"))
    ts = v["ts_ms"]
    out["_pos_ts"] = (ts.cast(pa.int64()) if ts is not None and pa.types.is_integer(ts.type)
                      else pa.nulls(n, pa.int64()))
    keys = set(schema.primary_keys)
    null_keys = []
    bad_values = []
    typed_before: dict[str, pa.Array] = {}
    for f in schema.fields:
        tt = target.field(f.name).type
        b = convert(_child(before, f.name, n), f.type, tt, epoch_unit)
        a = convert(_child(after, f.name, n), f.type, tt, epoch_unit)
        raw_b, raw_a = _child(before, f.name, n), _child(after, f.name, n)
        value = pc.if_else(is_d, b, a)
        raw = pc.if_else(is_d, pc.is_valid(raw_b), pc.is_valid(raw_a))
        bad = pc.and_(raw, pc.is_null(value))
        typed_before[f.name] = b
        if f.name in keys:
            bad = pc.or_(bad, pc.and_(is_u, pc.and_(pc.is_valid(raw_b), pc.is_null(b))))
        if f.name in (schema.trimmed_primary_keys or schema.primary_keys):
            null_keys.append((pc.invert(raw), f"null key {f.name}"))
        bad_values.append((bad, f"bad value for {f.name}"))
        if sequence_column is not None and f.name == sequence_column:
            value = pc.if_else(pc.is_valid(value), value, out["_pos_n0"].cast(tt))
            typed_before[f.name] = pc.if_else(pc.is_valid(b), b, out["_pos_n0"].cast(tt))
        out[f.name] = value
    reasons += null_keys + bad_values
    for f in schema.fields:
        if f.name not in keys and not f.type.nullable:
            absent = pc.is_null(pc.if_else(is_d, _child(before, f.name, n),
                                           _child(after, f.name, n)))
            cru = pc.fill_null(pc.is_in(op, pa.array(["c", "r", "u"])), False)
            reasons.append((pc.and_(cru, absent), f"null for NOT NULL column {f.name}"))
    err = pa.nulls(n, pa.string())
    for cond, reason in reversed(reasons):
        err = pc.if_else(pc.fill_null(cond, False), reason, err)
    out[ERROR_COLUMN] = err
    out[KIND_COLUMN] = pc.if_else(is_d, "-D", pc.if_else(is_u, "+U", "+I"))
    changed = pa.array(np.zeros(n, bool))
    for k in schema.primary_keys:
        a_k, b_k = out[k], typed_before[k]
        same = pc.or_(pc.and_(pc.is_null(a_k), pc.is_null(b_k)), pc.fill_null(pc.equal(a_k, b_k),
                                                                               False))
        changed = pc.or_(changed, pc.invert(same))
    out["_old_key"] = pc.and_(pc.and_(is_u, has_before), changed)
    out["_typed_before"] = pa.StructArray.from_arrays(
        [typed_before[f.name] for f in schema.fields], schema.field_names)
    known = set(schema.field_names)
    unknown = [pa.nulls(n, pa.string())]
    for img in (after, before):
        if img is not None and pa.types.is_struct(img.type):
            for fld in img.type:
                if fld.name not in known:
                    present = pc.is_valid(_child(img, fld.name, n))
                    unknown.append(pc.if_else(present, fld.name, null_s))
    joined = pa.array(["\n".join(dict.fromkeys(x for x in row if x)) or None
                       for row in zip(*[u.to_pylist() for u in unknown])], pa.string()) \
        if len(unknown) > 1 else unknown[0]
    out["_unknown"] = joined
    return out


def decode_events(
    lines: Sequence[str],
    schema: TableSchema,
    *,
    file_index: int = 0,
    first_line: int = 1,
    position_fields: Sequence[str] = ("lsn",),
    epoch_unit: str = "ms",
    sequence_column: str | None = None,
    bucket: bool = True,
) -> pa.Table:
    """The change rows of one file's lines (see the module docs); columns as
    :func:`output_schema`. ``_pos_file`` is ``file_index`` (the file's ordinal in the batch),
    ``_pos_line`` the 1-based line number (``first_line`` for the first of ``lines``).
    ``_value`` holds the raw line of rejected events and of valid events whose images carry
    columns the table lacks (samples for type inference)."""
    target = output_schema(schema, position_fields)
    arr = pa.array(lines, pa.string())
    trimmed = pc.utf8_trim_whitespace(arr)
    tomb_mask = pc.equal(trimmed, "null")
    event_mask = pc.and_(pc.not_equal(trimmed, ""), pc.invert(tomb_mask))
    events = np.flatnonzero(event_mask.to_numpy(zero_copy_only=False))
    chunks: list[tuple[int, pa.Table]] = []
    bad: list[int] = []
    if len(events) == len(lines):  # the usual case: one document, no copies
        _parse(arr, _declared(schema), 0, chunks, bad, "\n".join(lines).encode("utf-8"))
    elif len(events):
        _parse(arr.take(pa.array(events)), _declared(schema), 0, chunks, bad)
    parts: list[pa.Table] = []
    for start, t in chunks:
        rows = events[start:start + t.num_rows]
        parts.extend(_chunk_rows(t, rows, arr, target, schema, file_index, first_line,
                                 position_fields, epoch_unit, sequence_column))
    tomb = np.flatnonzero(tomb_mask.to_numpy(zero_copy_only=False))
    special = [(int(events[j]), "malformed JSON") for j in bad] + [(int(j), TOMBSTONE)
                                                                  for j in tomb]
    if special:
        cols: dict[str, pa.Array] = {f.name: pa.nulls(len(special), f.type) for f in target}
        cols[ERROR_COLUMN] = pa.array([r for _, r in special], pa.string())
        cols["_event"] = pa.array([0] * len(special), pa.int32())
        cols["_value"] = pa.array([lines[j] if r != TOMBSTONE else None for j, r in special],
                                  pa.string())
        cols["_pos_file"] = pa.array([file_index] * len(special), pa.int64())
        cols["_pos_line"] = pa.array([first_line + j for j, _ in special], pa.int64())
        parts.append(pa.table(cols, schema=target))
    out = pa.concat_tables(parts) if parts else target.empty_table()
    if bucket and schema.num_buckets > 0 and out.num_rows:
        keys = list(schema.bucket_keys)
        types = [schema.field(k).type.with_nullable(True) for k in keys]
        cols_ = [conform_column(out.column(k), t, k) for k, t in zip(keys, types)]
        b = pa.array(bucket_ids(cols_, types, schema.num_buckets), pa.int32())
        out = out.set_column(out.schema.get_field_index(BUCKET), BUCKET, b)
    return out


def _chunk_rows(t: pa.Table, rows: np.ndarray, lines: pa.Array, target: pa.Schema,
                schema: TableSchema, file_index: int, first_line: int,
                position_fields: Sequence[str], epoch_unit: str,
                sequence_column: str | None) -> list[pa.Table]:
    n = t.num_rows
    top = _decode_view(_view(t, False), n, schema, target, position_fields, epoch_unit,
                       sequence_column)
    views = top
    if "payload" in t.column_names:
        pay = _decode_view(_view(t, True), n, schema, target, position_fields, epoch_unit,
                           sequence_column)
        op = t.column("op").combine_chunks() if "op" in t.column_names else pa.nulls(n)
        use = pc.and_(pc.is_valid(t.column("payload").combine_chunks()), pc.is_null(op))
        views = {k: pc.if_else(use, pay[k], top[k]) for k in top}
    err = views[ERROR_COLUMN]
    valid = pc.is_null(err)
    cols: dict[str, pa.Array] = {}
    for f in target:
        if f.name in views:
            cols[f.name] = views[f.name]
    cols["_pos_file"] = pa.array(np.full(n, file_index, np.int64))
    cols["_pos_line"] = pa.array(rows.astype(np.int64) + first_line)
    cols["_event"] = pa.array(np.zeros(n, np.int32))
    unknown = pc.if_else(valid, views["_unknown"], pa.scalar(None, pa.string()))
    cols["_unknown"] = unknown
    keep_text = pc.or_(pc.invert(valid), pc.is_valid(unknown))
    if pc.any(keep_text).as_py():
        raw = lines.take(pa.array(rows))
        cols["_value"] = pc.if_else(keep_text, raw, pa.scalar(None, pa.string()))
    else:
        cols["_value"] = pa.nulls(n, pa.string())
    for c in [*schema.field_names, KIND_COLUMN]:  # a rejected event carries no values
        cols[c] = pc.if_else(valid, cols[c], pa.scalar(None, cols[c].type))
    cols[BUCKET] = pa.nulls(n, pa.int32())
    main = pa.table({f.name: cols[f.name] for f in target}, schema=target)
    old = pc.and_(valid, views["_old_key"])
    if not pc.any(old).as_py():
        return [main]
    extra = main.filter(old)
    tb = views["_typed_before"].filter(old)  # the -D row carries the before image
    for f in schema.fields:
        extra = extra.set_column(extra.schema.get_field_index(f.name), target.field(f.name),
                                 pc.struct_field(tb, f.name))
    extra = extra.set_column(extra.schema.get_field_index(KIND_COLUMN), KIND_COLUMN,
                             pa.array(["-D"] * extra.num_rows, pa.string()))
    extra = extra.set_column(extra.schema.get_field_index("_event"), "_event",
                             pa.array(np.ones(extra.num_rows, np.int32)))
    return [main, extra]
