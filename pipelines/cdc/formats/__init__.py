"""The change-event formats of the CDC job (``--format``): Debezium JSON (the default, with or
without the ``{"schema", "payload"}`` envelope), Debezium Avro container files
(:mod:`pipelines.cdc.formats.avro`) and the other JSON formats Paimon's Kafka CDC sync reads
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
  Paimon throws), ``before`` / ``after``. A compressed update (``after`` holds only the key
  and the changed columns) takes the columns it leaves out from ``before``; a column neither
  image holds is refused by name (:mod:`pipelines.cdc.formats.ogg_compressed`; Paimon takes
  ``after`` as the whole row: a left-out column becomes NULL).
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
  as (file, pos, ``xoffset``), exactly; the sequence column gets file index, pos and xoffset
  packed as MySQL's (:data:`pipelines.cdc.events.MYSQL_BITS`; refused when the file index or
  pos do not fit; past row 2047 of a transaction the rows of one binlog rows event share one
  value, see :func:`pipelines.cdc.formats.views._maxwell_sequence`: a key appears twice in
  one rows event only in a key-changing multi-row UPDATE, and those rows are ordered by
  (file, pos, xoffset) within a batch, by the batch order across batches). Without
  ``position`` (Maxwell's default): the arrival
  order; ``xid`` is no order (InnoDB assigns it when a transaction starts, not when it
  commits), and such an event is refused when the table has a sequence column.
* ``canal-json``, ``aws-dms-json``: nothing orderable (``es`` / ``ts`` / DMS timestamps are
  milliseconds, ``transaction-id`` no order): the arrival order, file, line and row within
  the event. A table with a sequence column is refused upfront (:func:`check_sequence`):
  nothing can fill it.

With ``--position-fields``, the named top-level fields of the event (for DMS also those of
``metadata``) order the events and the first fills the sequence column, as for Debezium.

The Spark SQL reference of these semantics is :mod:`pipelines.cdc.formats.reference` (a test
checks that both give the same rows), GoldenGate's compressed updates and the ``op_ts``
metadata column included.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core import (
    RowKind,
    SchemaError,
    TableSchema,
)
from pipelines.cdc.decode import decode_file
from pipelines.cdc.events import (
    AUTO_SLOTS,
    ERROR_COLUMN,
    KIND_COLUMN,
    MESSAGE,
    SEQUENCE_UNFIT,
    TOMBSTONE,
    TRUNCATE,
)
from pipelines.cdc.formats.avro import decode_avro_file
from pipelines.cdc.formats.ogg_compressed import Presence, ogg_presence
from pipelines.cdc.formats.views import (
    DDL,
    View,
    canal_declared,
    canal_view,
    dms_declared,
    dms_view,
    maxwell_declared,
    maxwell_view,
    ogg_declared,
    ogg_view,
)
from pipelines.cdc.ranges import RangeUnit
from pipelines.cdc.settings import DEFAULT_SETTINGS, DecodeSettings
from pipelines.cdc.source_tables import OTHER_TABLE, route
from pipelines.cdc.values.event_time import event_millis
from pipelines.cdc.view import decode_view
from pipelines.writer import BUCKET_COLUMN as BUCKET

__all__ = ["DEFAULT_FORMAT", "FORMATS", "SLOTS", "CdcFormat", "JsonFormat",
           "check_sequence", "sample_values"]

DEFAULT_FORMAT = "debezium-json"
#: the source fields of a format's own positions (see the module docs)
SLOTS = tuple(f"_p{i}" for i in range(AUTO_SLOTS))
_SKIPPED = (DDL, TRUNCATE, MESSAGE, TOMBSTONE, OTHER_TABLE)
_TEXTLESS = pa.array([TOMBSTONE, OTHER_TABLE])  # outcomes whose event text is not kept
_DELETE = RowKind.DELETE.short_string
_NULL_S = pa.scalar(None, pa.string())


# ---------------------------------------------------------------------------- the rows


_ViewFn = Callable[[pa.Table, TableSchema, int, np.ndarray], View]


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
    #: ``(data, columns, first_line) -> presence``: which columns each line's images hold,
    #: handed to ``view_fn`` as ``presence`` (GoldenGate's compressed updates)
    presence_fn: Callable[[bytes, Sequence[str], int], Presence | None] | None = None

    def declared(self, schema: TableSchema) -> pa.Schema:
        return self.declared_fn(schema)

    def decode(self, data: bytes, schema: TableSchema, *,
               settings: DecodeSettings = DEFAULT_SETTINGS, **kw: Any) -> pa.Table:
        """:func:`pipelines.cdc.decode.decode_file` of this format (no TOAST placeholder:
        ``settings.unavailable`` is ignored)."""
        settings = replace(settings, unavailable="store")
        check_sequence(self.name, settings.sequence_column, settings.position_fields)
        fmt = self
        if self.presence_fn is not None:
            filled = (settings.sequence_column, settings.op_ts_column,  # not from images
                      *settings.filled_columns)
            columns = [c for c in schema.field_names if c not in filled]
            presence = self.presence_fn(data, columns, kw.get("first_line", 1))
            if presence is not None:
                view: Callable[..., View] = self.view_fn  # (ogg_view takes presence)
                fmt = replace(self, view_fn=functools.partial(view, presence=presence))
        return decode_file(data, schema, fmt=fmt, settings=settings, **kw)

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
        op_ts = (event_millis(self.name, t).take(pa.array(v.event))
                 if settings.op_ts_column is not None else None)
        views = decode_view(env, m, schema, target,
                            replace(settings, position_fields=tuple(fields), unavailable="store",
                                    decimal_base64=False),
                            seq_value=seq, op_ts=op_ts, op_ts_format=self.name)
        err = pc.if_else(pc.is_valid(v.outcome), v.outcome, views[ERROR_COLUMN])
        if sequence_column is not None and self.sequence_hint:
            generic = f"{SEQUENCE_UNFIT} {sequence_column}"
            err = pc.if_else(pc.fill_null(pc.equal(err, generic), False),
                             f"{generic} ({self.sequence_hint})", err)
        err = _whole_events(route(err, t, self.name, settings.source_tables, v.event), v.event)
        other = pc.equal(pc.fill_null(err, ""), OTHER_TABLE)
        keep = pa.array((v.row == 0) | ~np.asarray(pc.is_valid(err).to_numpy(
            zero_copy_only=False), bool))
        valid = pc.is_null(err)
        cols: dict[str, pa.Array] = {f.name: views[f.name] for f in target if f.name in views}
        cols["_connector"] = pc.if_else(other, _NULL_S, cols["_connector"])
        cols[ERROR_COLUMN] = err
        cols["_pos_file"] = pa.array(np.full(m, file_index, np.int64))
        cols["_pos_line"] = pa.array(line_no[v.event])
        cols["_event"] = pa.array((2 * v.row).astype(np.int32))
        unknown = pc.if_else(valid, views["_unknown"], _NULL_S)
        cols["_unknown"] = unknown
        keep_text = pc.and_(pc.or_(pc.invert(valid), pc.is_valid(unknown)),
                            pc.invert(pc.is_in(pc.fill_null(err, ""), _TEXTLESS)))
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
    #: whether a file can be decoded in ranges of whole units (:mod:`pipelines.cdc.ranges`;
    #: ``decode`` then takes ``first_line``, the position of the range's first unit)
    splittable: bool = True
    #: what a range holds whole: lines, or the blocks of an Avro container file
    unit: RangeUnit = "line"


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
          fills_sequence: bool, sequence_hint: str = "",
          presence_fn: Callable[[bytes, Sequence[str], int], Presence | None] | None = None
          ) -> CdcFormat:
    f = JsonFormat(name, declared, view, fills_sequence, sequence_hint, presence_fn)
    return CdcFormat(name, f.decode, fills_sequence, False, _data_images)


#: every ``--format``, by name (a format of its own module adds one entry)
FORMATS: dict[str, CdcFormat] = {
    DEFAULT_FORMAT: CdcFormat(DEFAULT_FORMAT, decode_file, True, True, _debezium_images),
    "debezium-avro": CdcFormat("debezium-avro", decode_avro_file, True, True, _debezium_images,
                                unit="avro-block"),
    "canal-json": _json("canal-json", canal_declared, canal_view, False),
    "maxwell-json": _json("maxwell-json", maxwell_declared, maxwell_view, True,
                          "Maxwell's position: output_binlog_position, a binlog file index "
                          "below 2^20 and a pos below 2^32"),
    "ogg-json": _json("ogg-json", ogg_declared, ogg_view, True, "GoldenGate's pos",
                      ogg_presence),
    "aws-dms-json": _json("aws-dms-json", dms_declared, dms_view, False),
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
