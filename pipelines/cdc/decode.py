"""Vectorised decoding of Debezium-style change events with pyarrow (the CDC job's fast path).

:func:`decode_events` turns the lines of one input file into change rows, with exactly the
semantics of the Spark SQL reference in :mod:`pipelines.cdc.events` (``parse_events`` ->
``classify_events`` -> ``to_changes(keep_rejected=True)``; a test checks that both agree):
same row kinds, value encodings, rejection reasons in the same order, position columns. It
runs inside one Spark task per file, so JSON is parsed by pyarrow's multi-threaded reader
instead of Spark's row-by-row ``from_json`` (about 7x faster here), and the rows leave Python
already typed and bucketed.

Parsing: the lines are read as one JSON-lines document with the table's string / numeric /
boolean / binary image columns declared (so that text is never re-interpreted, e.g. as a
timestamp); when that fails the document is split at the row the reader names (parsed as
one block: the exact line; each piece is checked by its row count, with bisection when a
row number is off), and a single line that still fails is parsed again with every type
inferred (then a value of the wrong type is a ``bad value for <col>``), and if that fails
too it is ``malformed JSON``. JSON ``null`` lines are tombstones. Lines holding a JSON
number that a double or int64 cannot hold exactly are first re-serialised with those numbers
as JSON strings of their text (:func:`pipelines.cdc.values.convert.exact_numbers`), so that
a 38-digit decimal or a long number going into a STRING column lands exactly. The events' own
``schema`` (Debezium JSON with schemas enabled) gives each column's logical type
(:func:`pipelines.cdc.values.convert.schema_types`), which decides how its value is read.

The job calls :func:`decode_file` with a file's bytes: when every line starts with ``{`` (no
blank line, no tombstone, no CR) and the bytes are UTF-8, the bytes themselves are the
document and no line is ever materialised (lines are split with numpy only when the
document fails to parse, for the bisection, and taken for the raw text of rejected events).
Per event nothing runs in Python: values are converted column by column (a non-key column
once, from the image that holds it; the before image of the other columns only when a key
changes), except text that needs Python's parsers (ISO timestamps, base64, floats as text,
integers of more than 18 characters) and nested values shown as JSON text (the conversions:
:mod:`pipelines.cdc.values.convert`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from paimon_core import DataField, RowKind, TableSchema
from paimon_core.integration import (
    BINARY_ROOTS,
    INTEGER_ROOTS,
    STRING_ROOTS,
    AtomicType,
    TypeRoot,
    bucket_ids,
    conform_column,
)
from pipelines.cdc.events import (
    ERROR_COLUMN,
    KIND_COLUMN,
    TOMBSTONE,
    TOMBSTONE_ENVELOPE,
    position_columns,
)
from pipelines.cdc.lines import (
    Lazy,
    is_utf8,
    lines_of,
    newlines,
    split_lines,
    take_lines,
)
from pipelines.cdc.settings import DEFAULT_SETTINGS, DecodeSettings
from pipelines.cdc.source_tables import OTHER_TABLE, route
from pipelines.cdc.values.convert import (
    LONG_NUMBER,
    exact_numbers,
)
from pipelines.cdc.values.nested import exact_leaves
from pipelines.cdc.values.shared_schema import SharedSchema, broadcast_types, strip_shared_schema
from pipelines.cdc.view import decode_view, envelope
from pipelines.spark_types import arrow_for_spark, spark_schema
from pipelines.writer import BUCKET_COLUMN as BUCKET

__all__ = ["EXTRA_COLUMNS", "EventFormat", "decode_events", "decode_file",
           "outcome_rows", "output_schema", "with_buckets"]

#: per-row columns besides the table's, the kind and the positions (see ``to_changes``)
EXTRA_COLUMNS = (ERROR_COLUMN, "_event", "_value", "_unknown", "_connector")
_READ_OPTIONS = {threads: pj.ReadOptions(block_size=8 << 20, use_threads=threads)
                 for threads in (False, True)}
_ERROR_ROW = re.compile(r" in row (\d+)$")
_INSERT = RowKind.INSERT.short_string
_UPDATE_AFTER = RowKind.UPDATE_AFTER.short_string
_DELETE = RowKind.DELETE.short_string
#: (not BOOLEAN: MySQL's TINYINT(1) / BOOLEAN arrive as 1 / 0, see values._to_boolean)
_JSON_TYPES = {TypeRoot.FLOAT: pa.float64(), TypeRoot.DOUBLE: pa.float64()}
#: outcomes whose event text is not kept (no quarantine, no sample), nor their connector
_TEXTLESS = pa.array([TOMBSTONE, OTHER_TABLE])


class EventFormat(Protocol):
    """A JSON change-event format other than Debezium's envelope (the formats of
    :mod:`pipelines.cdc.formats`): the types declared to the JSON reader and the change rows
    of a parsed chunk (columns as :func:`output_schema`, without buckets)."""

    def declared(self, schema: TableSchema) -> pa.Schema: ...

    def chunk_rows(self, t: pa.Table, rows: np.ndarray, lines: Callable[[], pa.Array],
                   target: pa.Schema, schema: TableSchema, file_index: int, first_line: int,
                   settings: DecodeSettings) -> list[pa.Table]: ...


def _nullable(fields: Sequence[DataField]) -> list[DataField]:
    return [DataField(f.id, f.name, f.type.with_nullable(True), f.description) for f in fields]


def output_schema(schema: TableSchema, position_fields: Sequence[str] | None) -> pa.Schema:
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
               pa.field("_connector", pa.string()), pa.field(BUCKET, pa.int32())]
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


def _read(doc: bytes | pa.Buffer, declared: pa.Schema | None, *,
          one_block: bool = False, threads: bool = False) -> pa.Table:
    """``one_block``: the document as one block, parsed by one thread, so that an error names
    the failing row of the document (the reader stops there: the cost is the rows before).
    ``threads``: blocks parsed by pyarrow's thread pool (worth it only on idle cores)."""
    opts = pj.ParseOptions(explicit_schema=declared, unexpected_field_behavior="infer")
    size = len(doc) + 1
    read = (pj.ReadOptions(block_size=size, use_threads=False) if one_block and size < 2**31
            else _READ_OPTIONS[threads])
    return pj.read_json(pa.BufferReader(doc), read_options=read, parse_options=opts)


def _error_row(e: Exception) -> int | None:
    m = _ERROR_ROW.search(str(e))
    return int(m.group(1)) if m else None


def _doc(lines: pa.Array) -> pa.Buffer:
    """``lines`` joined by newlines (one copy, no Python strings)."""
    if len(lines) == 0:
        return pa.py_buffer(b"")
    whole = pa.ListArray.from_arrays(pa.array([0, len(lines)], pa.int32()), lines)
    joined = pc.binary_join(whole, "\n")[0]
    return joined.as_buffer() if joined.is_valid else pa.py_buffer(b"")


def _parse(lines: pa.Array | Lazy, declared: pa.Schema, start: int,
           out: list[tuple[int, pa.Table]], bad: list[int],
           doc: bytes | pa.Buffer | None = None, count: int | None = None, *,
           hinted: bool = True, threads: bool = False) -> None:
    """Parse ``lines`` (``doc``: them joined and ``count`` their number, if at hand; lines
    built only when the document does not parse as a whole) into chunks ``(index of first
    line, table)``; indices of lines that are not JSON objects go to ``bad``. A document that
    fails is split at the rows the reader names (``hinted``; without ``threads`` the document
    is read as one block, so that its error already names the first failing row), else
    bisected."""
    n = count if count is not None else len(lines_of(lines))
    one_block = hinted and not threads  # as fast as blocks of 8 MB on one thread
    first: int | None = None
    try:
        t = _read(doc if doc is not None else _doc(lines_of(lines)), declared,
                  one_block=one_block, threads=threads)
        if t.num_rows == n:
            out.append((start, t))
            return
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        first = _error_row(e) if one_block else None
    lines = lines_of(lines)
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
    if hinted:
        _parse_hinted(lines, declared, start, out, bad, first)
        return
    mid = len(lines) // 2
    _parse(lines.slice(0, mid), declared, start, out, bad, hinted=False)
    _parse(lines.slice(mid), declared, start + mid, out, bad, hinted=False)


def _parse_hinted(lines: pa.Array, declared: pa.Schema, start: int,
                  out: list[tuple[int, pa.Table]], bad: list[int],
                  first: int | None = None) -> None:
    """:func:`_parse` of lines that fail as one document: parsed as one block, the reader
    names the first failing row ``k``; lines ``[0, k)`` are one chunk, line ``k`` is parsed
    alone and the rest goes on the same way (every piece is checked by its row count, so a
    wrong row number costs a bisection, never a wrong row). Linear: each failing parse stops
    at its error. ``first``: the first failing row, if a one-block read of all ``lines``
    named it already."""
    pos, n = 0, len(lines)
    while pos < n:
        rest = lines.slice(pos)
        k: int | None = None
        if pos == 0 and first is not None:
            k = first
        else:
            try:
                t = _read(_doc(rest), declared, one_block=True)
                if t.num_rows == len(rest):
                    out.append((start + pos, t))
                    return
            except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
                k = _error_row(e)
        if k is None or not 0 <= k < len(rest):
            _parse(rest, declared, start + pos, out, bad, hinted=False)
            return
        if k:
            _parse(rest.slice(0, k), declared, start + pos, out, bad, hinted=False)
        _parse(rest.slice(k, 1), declared, start + pos + k, out, bad, hinted=False)
        pos += k + 1


def decode_file(
    data: bytes,
    schema: TableSchema,
    *,
    file_index: int = 0,
    first_line: int = 1,
    settings: DecodeSettings = DEFAULT_SETTINGS,
    bucket: bool = True,
    threads: bool = False,
    fmt: EventFormat | None = None,
) -> pa.Table:
    """:func:`decode_events` of the lines of a file's bytes (:func:`split_lines`), or of a
    line-aligned range of them whose first line is line ``first_line`` of the file
    (:mod:`pipelines.cdc.ranges`: the rows are those of the whole file's decode). The usual
    file, every line a JSON object (first byte ``{``), UTF-8, no line ending in CR, is parsed
    as it is: no line is copied (the lines are built only for a file that does not parse as a
    whole; a CR inside a line is JSON whitespace, or makes the line malformed, either way).
    ``threads``: JSON parsed by pyarrow's thread pool (only worth it on idle cores: in Spark
    tasks that fill every core it costs CPU and gains nothing)."""
    take: Callable[[np.ndarray], pa.Array] | None = None
    doc: bytes | pa.Buffer | None = None
    shared: SharedSchema | None = None
    count = 0
    if data and len(data) < 2**31 - 1:
        buf = np.frombuffer(data, np.uint8)
        nl = newlines(buf)
        count = len(nl) + (0 if data.endswith(b"\n") else 1)
        starts = np.empty(count, np.int64)
        starts[0] = 0
        starts[1:] = nl[:count - 1] + 1
        # every line starts with "{" and none ends in CR (split_lines would drop that CR)
        if (bool(np.all(buf[starts] == ord("{"))) and not data.endswith(b"\r")
                and not bool(np.any(buf[nl[nl > 0] - 1] == 13))):
            # Debezium JSON with one schema in every line: read once (its text is valid UTF-8,
            # as the payloads then are: the file is, without scanning the schemas again)
            shared = strip_shared_schema(data, count, nl) if fmt is None else None
            if shared is not None and not is_utf8(shared.doc):
                shared = None
            if shared is not None or is_utf8(data):
                doc = data
                take = functools.partial(take_lines, data, starts)
    lazy = Lazy(lambda: split_lines(data), take)
    if shared is not None:  # the payloads' lines, for a document that does not parse whole
        payload_doc = shared.doc
        parse_lines: Lazy | None = Lazy(lambda: split_lines(payload_doc.to_pybytes()))
    else:
        parse_lines = None
    return _decode(lazy, shared.doc if shared is not None else doc, count, schema,
                   file_index=file_index, first_line=first_line, parse_lines=parse_lines,
                   settings=settings, bucket=bucket, threads=threads, fmt=fmt,
                   shared=shared.schema if shared is not None else None)


def decode_events(lines: Sequence[str] | pa.Array, schema: TableSchema, *, file_index: int = 0,
                  first_line: int = 1, settings: DecodeSettings = DEFAULT_SETTINGS) -> pa.Table:
    """The change rows of one file's lines of Debezium events (see the module docs; ``lines``
    as strings or a string array), bucketed; columns as :func:`output_schema`.
    ``_pos_file`` is ``file_index`` (the file's ordinal in the batch), ``_pos_line`` the
    1-based line number (``first_line`` for the first of ``lines``). ``_value`` holds the
    raw line of rejected events and of valid events whose images carry columns the table
    lacks (samples for type inference)."""
    arr = lines if isinstance(lines, pa.Array) else pa.array(lines, pa.string())
    return _decode(Lazy(lambda: arr), None, 0, schema, file_index=file_index,
                   first_line=first_line, settings=settings, bucket=True, threads=False)


def _parse_all(lazy: Lazy, doc: bytes | pa.Buffer | None, count: int, schema: TableSchema,
               threads: bool, *, exact: bool, fmt: EventFormat | None = None,
               parse_lines: Lazy | None = None
               ) -> tuple[list[tuple[int, pa.Table]], list[int], np.ndarray, np.ndarray]:
    """The parsed chunks, the indices of malformed event lines, the line index of each event
    and of each tombstone. ``doc``: the whole file when every line is an event. ``exact``:
    long numbers first made JSON strings (:func:`_exact`)."""
    chunks: list[tuple[int, pa.Table]] = []
    bad: list[int] = []
    declared = fmt.declared(schema) if fmt is not None else _declared(schema)
    if doc is not None:  # the usual case: one document, no copies
        events = np.arange(count, dtype=np.int64)
        tomb = np.zeros(0, np.int64)
        _parse(parse_lines if parse_lines is not None else lazy, declared, 0, chunks, bad, doc,
               count, threads=threads)
        return chunks, bad, events, tomb
    arr = _exact(lazy()) if exact else lazy()  # ``lazy``: the lines as read, for ``_value``
    trimmed = pc.utf8_trim_whitespace(arr)
    tomb_mask = pc.equal(trimmed, "null")
    if fmt is None:  # Debezium's envelope printing of a tombstone (not the other formats')
        tomb_mask = pc.or_(tomb_mask, pc.match_substring_regex(trimmed, TOMBSTONE_ENVELOPE))
    event_mask = pc.and_(pc.not_equal(trimmed, ""), pc.invert(tomb_mask))
    events = np.flatnonzero(event_mask.to_numpy(zero_copy_only=False))
    tomb = np.flatnonzero(tomb_mask.to_numpy(zero_copy_only=False))
    if len(events) == len(arr):
        _parse(arr, declared, 0, chunks, bad, threads=threads)
    elif len(events):
        _parse(arr.take(pa.array(events)), declared, 0, chunks, bad, threads=threads)
    return chunks, bad, events, tomb


def _inexact_columns(chunks: list[tuple[int, pa.Table]], schema: TableSchema) -> bool:
    """Whether a DECIMAL or STRING column's image values were read as doubles (JSON
    numbers) and the text may hold one a double does not hold exactly (then the file is
    parsed again with :func:`_exact`; only then is the text scanned)."""
    names = {f.name for f in schema.fields if isinstance(f.type, AtomicType)
             and (f.type.root is TypeRoot.DECIMAL or f.type.root in STRING_ROOTS)}
    names |= {"BI_" + n for n in names}  # AWS DMS before images
    nested = {f.name for f in schema.fields
              if not isinstance(f.type, AtomicType) and exact_leaves(f.type)}
    found = False
    for _, t in chunks:
        images = [t.schema.field(c).type for c in ("before", "after") if c in t.column_names]
        for c in ("data", "old"):  # the other formats' images (canal: lists of them)
            if c in t.column_names:
                img = t.schema.field(c).type
                images.append(img.value_type if pa.types.is_list(img) else img)
        if "payload" in t.column_names and pa.types.is_struct(t.schema.field("payload").type):
            pt = t.schema.field("payload").type
            images += [pt.field(c).type for c in ("before", "after")
                       if pt.get_field_index(c) >= 0]
        for img in images:
            if pa.types.is_struct(img) and any(
                    (f.name in names and pa.types.is_floating(f.type))
                    or (f.name in nested and _holds_floats(f.type)) for f in img):
                found = True
    return found


def _holds_floats(t: pa.DataType) -> bool:
    """Whether a parsed nested value's type holds doubles somewhere."""
    if pa.types.is_floating(t):
        return True
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _holds_floats(t.value_type)
    if pa.types.is_struct(t):
        return any(_holds_floats(f.type) for f in t)
    return False


def _decode(lazy: Lazy, doc: bytes | pa.Buffer | None, count: int, schema: TableSchema, *,
            file_index: int, first_line: int, settings: DecodeSettings, bucket: bool,
            threads: bool, fmt: EventFormat | None = None, shared: pa.Array | None = None,
            parse_lines: Lazy | None = None) -> pa.Table:
    """``doc`` (with its ``count`` lines): the whole file when every line is an event (or
    their payloads when every line carries the one schema ``shared``:
    :mod:`pipelines.cdc.values.shared_schema`)."""
    target = output_schema(schema, settings.position_fields)
    chunks, bad, events, tomb = _parse_all(lazy, doc, count, schema, threads, exact=False,
                                           fmt=fmt, parse_lines=parse_lines)
    if _inexact_columns(chunks, schema) and pc.any(  # numbers read as doubles: again, exactly
            pc.match_substring_regex(lazy(), LONG_NUMBER)).as_py():
        chunks, bad, events, tomb = _parse_all(lazy, None, 0, schema, threads, exact=True,
                                               fmt=fmt)
    parts: list[pa.Table] = []
    for start, t in chunks:
        rows = events[start:start + t.num_rows]
        if fmt is not None:
            parts.extend(fmt.chunk_rows(t, rows, lazy, target, schema, file_index, first_line,
                                        settings))
            continue
        parts.extend(_chunk_rows(t, rows, lazy, target, schema, file_index, first_line,
                                 settings, shared))
    special = [(int(events[j]), "malformed JSON") for j in bad] + [(int(j), TOMBSTONE)
                                                                  for j in tomb]
    if special:
        text = lazy.take(np.array([j for j, _ in special], np.int64))
        is_tomb = pa.array([r == TOMBSTONE for _, r in special])
        parts.append(outcome_rows(target, [r for _, r in special],
                                  pc.if_else(is_tomb, pa.scalar(None, pa.string()), text),
                                  file_index, [first_line + j for j, _ in special]))
    out = pa.concat_tables(parts) if parts else target.empty_table()
    return with_buckets(out, schema) if bucket else out


def outcome_rows(target: pa.Schema, reasons: Sequence[str], values: pa.Array,
                 file_index: int, lines: Sequence[int]) -> pa.Table:
    """Rows (of ``target``) of events that are no change: no values, ``reasons`` as their
    ``_error``, ``values`` (the event text, or NULL) as their ``_value``, at ``lines`` of
    file ``file_index``."""
    n = len(reasons)
    cols: dict[str, pa.Array] = {f.name: pa.nulls(n, f.type) for f in target}
    cols[ERROR_COLUMN] = pa.array(reasons, pa.string())
    cols["_event"] = pa.array(np.zeros(n, np.int32))
    cols["_value"] = values
    cols["_pos_file"] = pa.array(np.full(n, file_index, np.int64))
    cols["_pos_line"] = pa.array(lines, pa.int64())
    return pa.table(cols, schema=target)


def with_buckets(out: pa.Table, schema: TableSchema) -> pa.Table:
    """``out`` with each row's fixed bucket (from its bucket key) in the bucket column;
    unchanged for a dynamic bucket table (its rows are routed by key hash instead)."""
    if schema.num_buckets <= 0 or not out.num_rows:
        return out
    keys = list(schema.bucket_keys)
    types = [schema.field(k).type.with_nullable(True) for k in keys]
    cols = [conform_column(out.column(k), t, k) for k, t in zip(keys, types)]
    b = pa.array(bucket_ids(cols, types, schema.num_buckets), pa.int32())
    return out.set_column(out.schema.get_field_index(BUCKET), BUCKET, b)


def _envelope_tombstones(t: pa.Table, rows: np.ndarray, lines: Lazy,
                         err: pa.Array) -> pa.Array:
    """``err`` with the tombstones printed with the envelope (``{"schema": null, "payload":
    null}``) found among the parsed lines: only lines without ``op``, ``payload``, images and
    source are candidates, and only their text is matched (the whole-file path has no lines
    to look at before parsing)."""
    if "payload" not in t.column_names:
        return err
    cand = pc.is_null(t.column("payload").combine_chunks())
    for name in ("op", "before", "after", "source"):
        if name in t.column_names:
            cand = pc.and_(cand, pc.is_null(t.column(name).combine_chunks()))
    if not pc.any(cand).as_py():
        return err
    at = np.flatnonzero(np.asarray(cand.to_numpy(zero_copy_only=False), bool))
    text = pc.utf8_trim_whitespace(lines.take(rows[at]))
    hit = np.asarray(pc.match_substring_regex(text, TOMBSTONE_ENVELOPE)
                     .to_numpy(zero_copy_only=False), bool)
    if not hit.any():
        return err
    mask = np.zeros(len(err), bool)
    mask[at[hit]] = True
    return pc.if_else(pa.array(mask), TOMBSTONE, err)


def _exact(lines: pa.Array) -> pa.Array:
    """``lines`` with the numbers a double / int64 cannot hold as JSON strings of their
    text (:func:`pipelines.cdc.values.convert.exact_numbers`, only on the lines that hold one)."""
    long = pc.fill_null(pc.match_substring_regex(lines, LONG_NUMBER), False)
    if not pc.any(long).as_py():
        return lines
    fixed = [exact_numbers(x) for x in pc.filter(lines, long).to_pylist()]
    return pc.replace_with_mask(lines, long, pa.array(fixed, pa.string()))


def _chunk_rows(t: pa.Table, rows: np.ndarray, lines: Lazy, target: pa.Schema,
                schema: TableSchema, file_index: int, first_line: int,
                settings: DecodeSettings, shared: pa.Array | None = None) -> list[pa.Table]:
    n = t.num_rows
    types = broadcast_types(shared, n, schema.field_names) if shared is not None else None
    top = decode_view(envelope(t, False), n, schema, target, settings, shared_types=types)
    views = top
    if "payload" in t.column_names:
        pay = decode_view(envelope(t, True), n, schema, target, settings, shared_types=types)
        op = t.column("op").combine_chunks() if "op" in t.column_names else pa.nulls(n)
        use = pc.and_(pc.is_valid(t.column("payload").combine_chunks()), pc.is_null(op))
        views = {k: pc.if_else(use, pay[k], top[k]) for k in top}
    err = _envelope_tombstones(t, rows, lines, views[ERROR_COLUMN])
    err = route(err, t, "debezium-json", settings.source_tables)  # (Avro's rows too)
    views[ERROR_COLUMN] = err
    views["_connector"] = pc.if_else(pc.is_in(pc.fill_null(err, ""), _TEXTLESS),
                                     pa.scalar(None, pa.string()), views["_connector"])
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
    keep_text = pc.and_(pc.or_(pc.invert(valid), pc.is_valid(unknown)),
                        pc.invert(pc.is_in(pc.fill_null(err, ""), _TEXTLESS)))
    if pc.any(keep_text).as_py():  # the text of those rows only
        keep = np.asarray(keep_text.to_numpy(zero_copy_only=False), bool)
        raw = lines.take(rows[keep])
        cols["_value"] = raw.take(pa.array(np.cumsum(keep) - 1, mask=~keep))
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
                             pa.array([_DELETE] * extra.num_rows, pa.string()))
    extra = extra.set_column(extra.schema.get_field_index("_event"), "_event",
                             pa.array(np.ones(extra.num_rows, np.int32)))
    return [main, extra]
