"""One envelope view of a parsed chunk of Debezium-style change events -> typed outputs
(:func:`decode_view`): op and row kind, source positions, each column's value converted from
the image that holds it (:mod:`pipelines.cdc.values.convert`), the rejection reasons in the
reference's order (:mod:`pipelines.cdc.events`), and a key change's ``-D`` row. Used by
:mod:`pipelines.cdc.decode` (Debezium JSON), :mod:`pipelines.cdc.formats.avro` and
:mod:`pipelines.cdc.formats` (the other formats' rows as Debezium envelopes)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core import DataField, RowKind, TableSchema
from paimon_core.integration import BINARY_ROOTS, STRING_ROOTS, AtomicType, TypeRoot
from pipelines.cdc.events import (
    ARRIVAL,
    AUTO_SLOTS,
    CONNECTOR_POSITIONS,
    DEFAULT_POSITIONS,
    ERROR_COLUMN,
    KIND_COLUMN,
    MESSAGE,
    MONGODB_BITS,
    MYSQL_BITS,
    OPS,
    ROW_OPS,
    SEQUENCE_UNFIT,
    TRUNCATE,
    UNAVAILABLE,
    UNAVAILABLE_BASE64,
)
from pipelines.cdc.settings import DecodeSettings
from pipelines.cdc.values.convert import (
    CONNECT_DECIMAL,
    Fields,
    Logical,
    convert,
    digits,
    json_text,
    schema_types,
)
from pipelines.cdc.values.event_time import epoch_millis, missing_reason, op_ts_values

__all__ = ["decode_view", "envelope"]

_INSERT = RowKind.INSERT.short_string
_UPDATE_AFTER = RowKind.UPDATE_AFTER.short_string
_DELETE = RowKind.DELETE.short_string


def envelope(t: pa.Table, payload: bool) -> dict[str, pa.Array | None]:
    """The envelope's parts (``schema``: the events' own schema, beside the payload)."""
    names = ("op", "ts_ms", "before", "after", "source")
    sch = t.column("schema").combine_chunks() if "schema" in t.column_names else None
    if payload:
        p = t.column("payload").combine_chunks() if "payload" in t.column_names else None
        if p is None:
            return {**dict.fromkeys(names), "schema": None}
        kids = Fields(p, t.num_rows)
        return {**{k: kids(k) for k in names}, "schema": sch}
    return {**{k: (t.column(k).combine_chunks() if k in t.column_names else None)
               for k in names}, "schema": sch}


def _merge_images(f: DataField, raw_b: pa.Array, raw_a: pa.Array, keys: set[str],
                  sequence_column: str | None) -> bool:
    """Whether ``f``'s value can be converted once from the image that holds it (before for a
    delete, else after): an element-wise conversion of images of one JSON type, not a key (a
    key's before value is checked on updates too) nor the sequence column."""
    return (f.name not in keys and f.name != sequence_column and isinstance(f.type, AtomicType)
            and raw_b.type == raw_a.type)


def _slot_raws(src: Fields, conn: pa.Array, position_fields: Sequence[str] | None,
               n: int) -> list[pa.Array]:
    """The raw source position per slot (see ``events._slot_raws``): the given fields,
    or the fields of each event's connector (as parsed when the chunk holds one connector,
    else as JSON text)."""
    if position_fields is not None:
        return [src(p) for p in position_fields]
    names = [c for c in pc.unique(conn).to_pylist()]
    fields_of: dict[str | None, tuple[str, ...]] = {None: DEFAULT_POSITIONS}
    fields_of.update(CONNECTOR_POSITIONS)
    if len(names) == 1:
        fields = fields_of.get(names[0], ())
        return [src(fields[i]) if i < len(fields) else pa.nulls(n, pa.string())
                for i in range(AUTO_SLOTS)]
    null_s = pa.scalar(None, pa.string())
    out = []
    for i in range(AUTO_SLOTS):
        slot = pa.nulls(n, pa.string())
        for name in names:
            fields = fields_of.get(name, ())
            if i >= len(fields):
                continue
            mine = pc.is_null(conn) if name is None else pc.fill_null(pc.equal(conn, name),
                                                                       False)
            slot = pc.if_else(mine, json_text(src(fields[i])), slot)
        out.append(pc.if_else(pc.is_valid(slot), slot, null_s))
    return out


def _sequence_value(src: Fields, conn: pa.Array, first: pa.Array,
                    position_fields: Sequence[str] | None) -> pa.Array:
    """The BIGINT of the position for the table's sequence column (see
    ``events._sequence_value``): ``first`` (the first position as a number), for MySQL
    events file index, pos and row packed, for MongoDB the oplog second and ``ord``."""
    if position_fields is None:
        n = len(conn)
        null_s = pa.scalar(None, pa.string())
        null_l = pa.nulls(n, pa.int64())

        def num(raw: pa.Array) -> pa.Array:
            text = json_text(raw)
            return pc.if_else(digits(text), text, null_s).cast(pa.int64())

        def within(v: pa.Array, hi: int) -> pa.Array:
            return pc.and_(pc.greater_equal(v, 0), pc.less(v, hi))

        mysql = pc.fill_null(pc.is_in(conn, pa.array(["mysql", "mariadb"])), False)
        if pc.any(mysql).as_py():
            idx = _file_index(json_text(src("file")))
            pos = num(src("pos"))
            row = pc.fill_null(num(src("row")), 0)
            fb, pb, rb = MYSQL_BITS
            ok = pc.and_(pc.and_(within(idx, 2**fb), within(pos, 2**pb)), within(row, 2**rb))
            packed = pc.add(pc.add(pc.multiply(idx, 2**(pb + rb)), pc.multiply(pos, 2**rb)),
                            row)
            first = pc.if_else(mysql, pc.if_else(pc.fill_null(ok, False), packed, null_l),
                               first)
        mongo = pc.fill_null(pc.equal(conn, "mongodb"), False)
        if pc.any(mongo).as_py():
            ts, ordinal = num(src("ts_ms")), num(src("ord"))
            sb, ob = MONGODB_BITS
            ok = pc.and_(pc.and_(within(ts, 1000 * 2**sb),
                                 pc.equal(pc.subtract(ts, pc.multiply(pc.divide(ts, 1000),
                                                                      1000)), 0)),
                         within(ordinal, 2**ob))
            packed = pc.add(pc.multiply(pc.divide(ts, 1000), 2**ob), ordinal)
            first = pc.if_else(mongo, pc.if_else(pc.fill_null(ok, False), packed, null_l),
                               first)
    return first


def _file_index(text: pa.Array) -> pa.Array:
    """The binlog file index (``mysql-bin.000003`` -> 3; NULL when the name has none)."""
    m = pc.extract_regex(text, r"\.(?P<i>[0-9]{1,9})$")
    return pc.struct_field(m, "i").cast(pa.int64())


def _unavailable(raw: pa.Array, f: DataField) -> pa.Array | None:
    """Where ``raw`` is Debezium's unchanged-TOAST placeholder (text / base64 bytes)."""
    t = f.type
    if not isinstance(t, AtomicType) or not (t.root in STRING_ROOTS or t.root in BINARY_ROOTS):
        return None
    if not (pa.types.is_string(raw.type) or pa.types.is_large_string(raw.type)):
        return None
    mark = UNAVAILABLE if t.root in STRING_ROOTS else UNAVAILABLE_BASE64
    return pc.fill_null(pc.equal(raw, mark), False)


def decode_view(v: dict[str, pa.Array | None], n: int, schema: TableSchema,
                 target: pa.Schema, settings: DecodeSettings, *,
                 seq_value: pa.Array | None = None,
                 shared_types: dict[str, Logical] | None = None,
                 op_ts: pa.Array | None = None, op_ts_format: str = "debezium-json"
                 ) -> dict[str, pa.Array]:
    """Outputs of one envelope view of a parsed chunk (one row per event; the ``-D`` of a
    key-changing update in ``_old_key``). ``seq_value``: the sequence column's value per row
    when the view's format computes it (default: from the position fields).
    ``shared_types``: the logical types of the one schema every event of the file carries
    (else read from the view's ``schema``). ``op_ts``: each row's time of change in epoch
    milliseconds when the view's format reads it (default: Debezium's ``source.ts_ms``),
    for ``settings.op_ts_column``; ``op_ts_format``: the format named in its reason."""
    op_raw = v["op"]
    op = json_text(op_raw) if op_raw is not None else pa.nulls(n, pa.string())
    before, after = v["before"], v["after"]
    is_d, is_u = pc.fill_null(pc.equal(op, "d"), False), pc.fill_null(pc.equal(op, "u"), False)
    cru = pc.fill_null(pc.is_in(op, pa.array(["c", "r", "u"])), False)
    has_after = pc.is_valid(after) if after is not None else pa.array(np.zeros(n, bool))
    has_before = pc.is_valid(before) if before is not None else pa.array(np.zeros(n, bool))
    malformed = pa.array(np.zeros(n, bool))
    for img in (before, after, v["source"]):  # not an object: Spark's parse fails
        if img is not None and not pa.types.is_struct(img.type) and not pa.types.is_null(
                img.type):
            malformed = pc.or_(malformed, pc.is_valid(img))
    reasons: list[tuple[pa.Array, str]] = [
        (malformed, "malformed JSON"),
        (pc.invert(pc.fill_null(pc.is_in(op, pa.array(OPS)), False)), "unknown op"),
        (pc.and_(cru, pc.invert(has_after)), "missing after"),
        (pc.and_(is_d, pc.invert(has_before)), "missing before"),
    ]
    out, seq_value = _positions(v, n, settings.position_fields, reasons, seq_value)
    sequence_column = settings.sequence_column
    bef, aft = Fields(before, n), Fields(after, n)
    types = (shared_types if shared_types is not None
             else schema_types(v["schema"], n, schema.field_names))
    if settings.decimal_base64:
        types = _column_scales(schema, types, n)
    typed_before, deferred = _values(schema, target, settings, out, reasons, bef, aft, is_d,
                                     is_u, seq_value, types)
    op_ts_column = settings.op_ts_column
    if op_ts_column is not None:  # the event's time of change (:mod:`.values.event_time`)
        millis = op_ts if op_ts is not None else epoch_millis(Fields(v["source"], n)("ts_ms"), n)
        out[op_ts_column] = typed_before[op_ts_column] = op_ts_values(
            millis, target.field(op_ts_column).type)
        deferred = [f for f in deferred if f.name != op_ts_column]
    for f in schema.fields if settings.unavailable == "refuse" else ():
        toast = _unavailable(aft(f.name), f)  # (a delete keeps no values)
        if toast is not None:
            reasons.append((pc.and_(cru, toast), f"unchanged TOAST value for {f.name}"))
    for f in schema.fields:
        if f.name not in schema.primary_keys and not f.type.nullable and f.name != op_ts_column:
            absent = pc.is_null(pc.if_else(is_d, bef(f.name), aft(f.name)))
            reasons.append((pc.and_(cru, absent), f"null for NOT NULL column {f.name}"))
    if sequence_column is not None:
        row_op = pc.fill_null(pc.is_in(op, pa.array(ROW_OPS)), False)
        absent = pc.is_null(pc.if_else(is_d, bef(sequence_column), aft(sequence_column)))
        reasons.append((pc.and_(pc.and_(row_op, absent), pc.is_null(seq_value)),
                        f"{SEQUENCE_UNFIT} {sequence_column}"))
    if op_ts_column is not None:
        row_op = pc.fill_null(pc.is_in(op, pa.array(ROW_OPS)), False)
        reasons.append((pc.and_(row_op, pc.is_null(out[op_ts_column])),
                        missing_reason(op_ts_format, op_ts_column)))
    err = pa.nulls(n, pa.string())
    for cond, reason in reversed(reasons):
        err = pc.if_else(pc.fill_null(cond, False), reason, err)
    # a message / truncate carries no row: only its envelope is checked
    is_m = pc.fill_null(pc.equal(op, "m"), False)
    special = pc.if_else(malformed, "malformed JSON", pc.if_else(is_m, MESSAGE, TRUNCATE))
    err = pc.if_else(pc.fill_null(pc.is_in(op, pa.array(["t", "m"])), False), special, err)
    out[ERROR_COLUMN] = err
    out[KIND_COLUMN] = pc.if_else(is_d, _DELETE, pc.if_else(is_u, _UPDATE_AFTER, _INSERT))
    _key_change(schema, target, settings, out, typed_before, deferred, has_before, is_u, bef,
                types)
    out["_unknown"] = _unknown_names(aft, bef, set(schema.field_names), n)
    return out


def _column_scales(schema: TableSchema, types: dict[str, Logical], n: int
                   ) -> dict[str, Logical]:
    """``types`` with every DECIMAL column a Kafka Connect ``Decimal`` of the column's scale
    where the event's schema names no logical type (``decimal_base64``, see
    :class:`~pipelines.cdc.settings.DecodeSettings`)."""
    out = dict(types)
    for f in schema.fields:
        t = f.type
        if not isinstance(t, AtomicType) or t.root is not TypeRoot.DECIMAL:
            continue
        name = pa.array([CONNECT_DECIMAL] * n, pa.string())
        scale = pa.array([str(t.scale)] * n, pa.string())
        have = out.get(f.name)
        if have is not None:
            named = pc.is_valid(have.name)
            name = pc.if_else(named, have.name, name)
            scale = pc.if_else(named, have.scale, scale)
        out[f.name] = Logical(name, scale)
    return out


def _positions(v: dict[str, pa.Array | None], n: int, position_fields: Sequence[str] | None,
               reasons: list[tuple[pa.Array, str]], seq_value: pa.Array | None
               ) -> tuple[dict[str, pa.Array], pa.Array]:
    """The view's source position columns (``_connector``, ``_pos_*``) and its sequence
    value (``seq_value`` when the format computed it); the positions' rejection reasons are
    added to ``reasons``."""
    null_s = pa.scalar(None, pa.string())
    out: dict[str, pa.Array] = {}
    src = Fields(v["source"], n)
    conn = json_text(src("connector"))
    out["_connector"] = conn
    raws = _slot_raws(src, conn, position_fields, n)
    for i, raw in enumerate(raws):
        if pa.types.is_integer(raw.type):  # numbers: no text
            num = raw.cast(pa.int64())
            out[f"_pos_s{i}"] = pa.nulls(n, pa.string())
        else:
            text = json_text(raw)
            num = pc.if_else(digits(text), text, null_s).cast(pa.int64())
            out[f"_pos_s{i}"] = pc.if_else(pc.is_valid(num), null_s, text)  # non-numeric
        out[f"_pos_n{i}"] = num
    ts = v["ts_ms"]
    out["_pos_ts"] = (ts.cast(pa.int64()) if ts is not None and pa.types.is_integer(ts.type)
                      else pa.nulls(n, pa.int64()))
    if position_fields is None:
        known = pc.fill_null(pc.is_in(conn, pa.array(list(CONNECTOR_POSITIONS))), False)
        reasons.append((pc.and_(pc.is_valid(conn), pc.invert(known)),
                        "unknown source connector"))
        _arrival_order(out, pc.and_(pc.is_null(raws[0]), pc.or_(pc.is_null(conn), known)))
    else:
        for raw in raws:
            reasons.append((pc.is_null(raw), "missing source position"))
    if seq_value is None:
        seq_value = _sequence_value(src, conn, out["_pos_n0"], position_fields)
    return out, seq_value


def _arrival_order(out: dict[str, pa.Array], none: pa.Array) -> None:
    """Events whose ``source`` holds no position (the first field of their connector's
    positions, :data:`~pipelines.cdc.events.CONNECTOR_POSITIONS`) are ordered by arrival (file,
    line): their position columns and ``ts_ms`` NULL, their ``_connector``
    :data:`~pipelines.cdc.events.ARRIVAL` (a batch mixing them with positioned events is
    refused by the job: the two orders do not compare)."""
    if not pc.any(none).as_py():
        return
    for k in [k for k in out if k.startswith("_pos_")]:
        out[k] = pc.if_else(none, pa.scalar(None, out[k].type), out[k])
    out["_connector"] = pc.if_else(none, ARRIVAL, out["_connector"])


def _values(schema: TableSchema, target: pa.Schema, settings: DecodeSettings,
            out: dict[str, pa.Array], reasons: list[tuple[pa.Array, str]], bef: Fields,
            aft: Fields, is_d: pa.Array, is_u: pa.Array, seq_value: pa.Array,
            types: dict[str, Logical]) -> tuple[dict[str, pa.Array], list[DataField]]:
    """The typed value of every column into ``out`` (the before image's for a delete), with
    the rejection reasons of null keys and bad values; returns the typed before values and the
    columns whose before values are converted only for key-changing updates."""
    epoch_unit, sequence_column = settings.epoch_unit, settings.sequence_column
    keys = set(schema.primary_keys)
    null_keys = []
    bad_values = []
    typed_before: dict[str, pa.Array] = {}
    deferred: list[DataField] = []  # before values converted only for key-changing updates
    for f in schema.fields:
        tt = target.field(f.name).type
        raw_b, raw_a = bef(f.name), aft(f.name)
        if _merge_images(f, raw_b, raw_a, keys, sequence_column):
            raw_v = pc.if_else(is_d, raw_b, raw_a)
            value = convert(raw_v, f.type, tt, epoch_unit, types.get(f.name))
            raw = pc.is_valid(raw_v)
            deferred.append(f)
        else:
            b = convert(raw_b, f.type, tt, epoch_unit, types.get(f.name))
            a = convert(raw_a, f.type, tt, epoch_unit, types.get(f.name))
            value = pc.if_else(is_d, b, a)
            raw = pc.if_else(is_d, pc.is_valid(raw_b), pc.is_valid(raw_a))
            typed_before[f.name] = b
        bad = pc.and_(raw, pc.is_null(value))
        if f.name in keys:
            bad = pc.or_(bad, pc.and_(is_u, pc.and_(pc.is_valid(raw_b), pc.is_null(b))))
        if f.name in (schema.trimmed_primary_keys or schema.primary_keys):
            null_keys.append((pc.invert(raw), f"null key {f.name}"))
        bad_values.append((bad, f"bad value for {f.name}"))
        if sequence_column is not None and f.name == sequence_column:
            value = pc.if_else(pc.is_valid(value), value, seq_value.cast(tt))
            typed_before[f.name] = pc.if_else(pc.is_valid(b), b, seq_value.cast(tt))
        out[f.name] = value
    reasons += null_keys + bad_values
    return typed_before, deferred


def _key_change(schema: TableSchema, target: pa.Schema, settings: DecodeSettings,
                out: dict[str, pa.Array], typed_before: dict[str, pa.Array],
                deferred: Sequence[DataField], has_before: pa.Array, is_u: pa.Array,
                bef: Fields, types: dict[str, Logical]) -> None:
    """``_old_key`` (an update that changed the key: its ``-D`` row is emitted) and
    ``_typed_before`` (that row's values) into ``out``."""
    n = len(is_u)
    # a key change: a before image that holds the key, with another value (a partial before
    # without the key, as after an added column, is not one)
    changed = pa.array(np.zeros(n, bool))
    before_has_key = has_before
    for k in schema.primary_keys:
        a_k, b_k = out[k], typed_before[k]
        same = pc.or_(pc.and_(pc.is_null(a_k), pc.is_null(b_k)), pc.fill_null(pc.equal(a_k, b_k),
                                                                               False))
        changed = pc.or_(changed, pc.invert(same))
        before_has_key = pc.and_(before_has_key, pc.is_valid(bef(k)))
    out["_old_key"] = pc.and_(pc.and_(is_u, before_has_key), changed)
    any_old = bool(pc.any(out["_old_key"]).as_py())
    for f in deferred:
        tt = target.field(f.name).type
        typed_before[f.name] = (convert(bef(f.name), f.type, tt, settings.epoch_unit,
                                        types.get(f.name)) if any_old
                                else pa.nulls(n, tt))
    out["_typed_before"] = pa.StructArray.from_arrays(
        [typed_before[f.name] for f in schema.fields], schema.field_names)


def _unknown_names(aft: Fields, bef: Fields, known: set[str], n: int) -> pa.Array:
    """Per row: the image keys the table lacks (after's, then before's), newline-joined;
    NULL when none."""
    null_s = pa.scalar(None, pa.string())
    new_a = [k for k in aft.kids if k and k not in known]
    new_b = [k for k in bef.kids if k and k not in known]
    if not new_a and not new_b:
        return pa.nulls(n, pa.string())
    cols = []
    for k in new_a:
        cols.append(pc.if_else(pc.is_valid(aft(k)), k, null_s))
    for k in new_b:
        present = pc.is_valid(bef(k))
        if k in new_a:  # named once
            present = pc.and_(present, pc.is_null(aft(k)))
        cols.append(pc.if_else(present, k, null_s))
    joined = cols[0]
    for c in cols[1:]:  # (null_handling="skip" drops rows in pyarrow 26)
        joined = pc.coalesce(pc.binary_join_element_wise(joined, c, "\n"), joined, c)
    return joined
