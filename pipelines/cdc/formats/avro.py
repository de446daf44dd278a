"""Debezium change events in Avro object container files (``--format debezium-avro``).

Kafka Connect's S3 sink (Confluent ``io.confluent.connect.s3.S3SinkConnector`` with
``format.class=io.confluent.connect.s3.format.avro.AvroFormat``) writes one Avro object
container file per flushed chunk of a topic partition, named
``<topic>+<kafkaPartition>+<startOffset>.avro``; each record is Debezium's ``Envelope``
(``before`` / ``after``: the table's ``Value`` record as a nullable union, ``source``,
``op``, ``ts_ms``, ``transaction``) and the file header holds the writer schema that
Confluent's ``AvroData`` made from the Connect schema: every column's Connect logical type is
kept as ``connect.name`` (``io.debezium.time.MicroTimestamp`` on a ``long``,
``org.apache.kafka.connect.data.Decimal`` on ``bytes`` with ``logicalType: decimal`` and
``scale``, ``io.debezium.data.VariableScaleDecimal`` on a ``{scale, value}`` record, ...).

:func:`decode_avro_file` reads such a file into the envelope view of
:mod:`pipelines.cdc.decode` and decodes it there, so that one conversion code path serves
Avro and Debezium JSON:

- the records are read by ``fastavro`` *without* its logical-type conversions (the header's
  schema is handed to it with the ``logicalType`` annotations removed, the data blocks
  untouched): a decimal stays its unscaled bytes, a timestamp its epoch number, nothing goes
  through a float or a ``datetime``;
- the values take the form Kafka Connect's ``JsonConverter`` gives them: ``bytes`` / ``fixed``
  as base64 text (vectorised), ``int`` / ``long`` as int64, ``float`` as the double of its
  shortest text (Jackson's printing of a Java ``float``), records as structs, enums as text;
- the Avro annotations become the ``schema`` part of a JSON envelope: per column its Connect
  logical name (``connect.name``, else the Avro ``logicalType``'s equivalent, see
  :data:`AVRO_LOGICAL_NAMES`) and a decimal's ``scale``, which
  :func:`pipelines.cdc.values.convert.schema_types` reads exactly as it reads Debezium JSON with
  schemas enabled.

Every record then goes through :func:`pipelines.cdc.decode._chunk_rows` (the JSON path's
decoder: operations, keys, positions, refusals); ``_pos_line`` is the record's 1-based
ordinal in the file, and the ``_value`` of a rejected record is the record as Debezium JSON
(without schema). A ``null`` record (a top-level ``["null", Envelope]`` union) is a
tombstone; the S3 sink itself never writes tombstones (``behavior.on.null.values``: ``fail``
by default, ``ignore`` skips them), so the Avro landing holds none in practice. A file that
is not an Avro container, uses a codec fastavro cannot read, has a top-level schema that is
not a record, or whose data is corrupt becomes one rejected event (reasons
:data:`NOT_AVRO`, :data:`UNSUPPORTED_CODEC`, :data:`NOT_ENVELOPE`, :data:`UNSUPPORTED_SCHEMA`,
:data:`CORRUPT_AVRO`; the quarantined ``event`` says what went wrong) at the record where
reading stopped (the records of the blocks before it are decoded); the job quarantines it
like a malformed JSON line, and the batch's error ratio decides.

The Spark SQL reference decoder (:mod:`pipelines.cdc.events`) reads JSON only: the Avro
path is checked against the JSON path instead (the same events as Avro and as Debezium
JSON with schemas decode to the same rows; ``tests/pipelines/test_cdc_avro.py``).
"""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import math
import re
from collections.abc import Mapping
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from fastavro.read import HEADER_SCHEMA

from paimon_core import TableSchema
from pipelines.cdc.decode import _chunk_rows, outcome_rows, output_schema, with_buckets
from pipelines.cdc.events import TOMBSTONE
from pipelines.cdc.lines import Lazy
from pipelines.cdc.settings import DEFAULT_SETTINGS, DecodeSettings
from pipelines.cdc.values.convert import CONNECT_DECIMAL

__all__ = ["AVRO_LOGICAL_NAMES", "AVRO_MAGIC", "CORRUPT_AVRO", "NOT_AVRO", "NOT_ENVELOPE",
           "UNSUPPORTED_CODEC", "UNSUPPORTED_SCHEMA", "Stop", "avro_file_order", "decode_avro_file",
           "read_envelopes"]

#: the first bytes of an Avro object container file
AVRO_MAGIC = b"Obj\x01"
#: the reason of a file that is not an Avro object container (or cannot be read as one)
NOT_AVRO = "not an Avro object container file"
#: the reason of a data block that cannot be read (truncated, corrupt, unknown codec)
CORRUPT_AVRO = "corrupt Avro data"
#: the reason of a file whose records are not Debezium envelopes (no record at the top)
NOT_ENVELOPE = "not a Debezium change event file"
#: the reason of a writer schema this reader cannot map (a union of several non-null types)
UNSUPPORTED_SCHEMA = "unsupported Avro schema"
#: the reason of a file compressed by a codec fastavro cannot read here (its library missing)
UNSUPPORTED_CODEC = "unsupported Avro codec"
#: the modules (any one of them) fastavro needs for each codec besides the standard library
#: (fastavro 1.13's block readers; cramjam and backports.zstd are dependencies of ours)
_CODEC_MODULES = {"null": (), "deflate": (), "bzip2": (), "xz": (),
                  "snappy": ("cramjam", "snappy"), "zstandard": ("backports.zstd",),
                  "lz4": ("lz4",)}
#: the Connect logical name of a bare Avro ``logicalType`` (a field without ``connect.name``,
#: as written by other Avro producers); ``connect.name`` wins where both are given
AVRO_LOGICAL_NAMES = {
    "decimal": CONNECT_DECIMAL,
    "date": "org.apache.kafka.connect.data.Date",
    "time-millis": "org.apache.kafka.connect.data.Time",
    "time-micros": "io.debezium.time.MicroTime",
    "timestamp-millis": "org.apache.kafka.connect.data.Timestamp",
    "timestamp-micros": "io.debezium.time.MicroTimestamp",
    "timestamp-nanos": "io.debezium.time.NanoTimestamp",
    "local-timestamp-millis": "org.apache.kafka.connect.data.Timestamp",
    "local-timestamp-micros": "io.debezium.time.MicroTimestamp",
    "local-timestamp-nanos": "io.debezium.time.NanoTimestamp",
    "uuid": "io.debezium.data.Uuid",
}
_ENVELOPE = ("op", "ts_ms", "before", "after", "source")
#: the type of a union of several primitive types, read as text (:func:`_union_text`)
_TEXT_UNION = "union-of-primitives"
#: records turned into Arrow at a time
_CHUNK = 1 << 16
_PRIMITIVES = {"null": pa.null(), "boolean": pa.bool_(), "int": pa.int64(),
               "long": pa.int64(), "float": pa.float64(), "double": pa.float64(),
               "bytes": pa.binary(), "string": pa.string()}
_B64 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
                     np.uint8)
#: ``<topic>+<kafkaPartition>+<startOffset>.<ext>`` (the S3 sink's committed file names)
_S3_SINK_NAME = re.compile(r"^(?P<topic>.+)\+(?P<partition>\d+)\+(?P<offset>\d+)\.[^.+]+$")


class _AvroFileError(Exception):
    """Reading stopped (internal: becomes a rejected event of the file)."""

    def __init__(self, reason: str, record: int, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.record = record  # 0-based index of the record where reading stopped
        self.detail = detail


#: why reading a file stopped: (reason, 0-based record index, detail for the quarantine)
Stop = tuple[str, int, str]


def avro_file_order(path: str) -> tuple[str, str, int, int]:
    """Sort key of a landing file: S3-sink names (``<topic>+<partition>+<startOffset>.avro``)
    by topic, then partition and start offset as numbers; any other name by itself (after the
    names of its directory's S3-sink files of a smaller topic, as plain text)."""
    head, _, name = path.rstrip("/").rpartition("/")
    m = _S3_SINK_NAME.match(name)
    if m is None:
        return head, name, -1, -1
    return head, m.group("topic"), int(m.group("partition")), int(m.group("offset"))


# ---------------------------------------------------------------------------- schema


class _Names:
    """The named types of one writer schema (records, enums, fixed), by full name, and the
    record fields whose type is a union of several primitive types (:data:`_TEXT_UNION`): the
    path of record field names from the envelope's field, and the union's branches."""

    def __init__(self) -> None:
        self.types: dict[str, Mapping[str, Any]] = {}
        self.unions: list[tuple[tuple[str, ...], tuple[str, ...]]] = []

    def resolve(self, s: Any, namespace: str | None) -> Any:
        if isinstance(s, str) and s not in _PRIMITIVES:
            full = s if "." in s or namespace is None else f"{namespace}.{s}"
            found = self.types.get(full, self.types.get(s))
            if found is None:
                raise ValueError(f"unknown named type {s!r}")
            return found
        return s

    def define(self, s: Mapping[str, Any], namespace: str | None) -> str | None:
        name = str(s.get("name", ""))
        ns = s.get("namespace", namespace)
        full = name if "." in name or not ns else f"{ns}.{name}"
        self.types.setdefault(full, s)
        return full.rpartition(".")[0] or None


def _strip_logical(s: Any) -> Any:
    """The schema JSON without ``logicalType`` annotations (fastavro then reads the raw
    primitives: unscaled decimal bytes, epoch numbers)."""
    if isinstance(s, dict):
        return {k: _strip_logical(v) for k, v in s.items() if k != "logicalType"}
    if isinstance(s, list):
        return [_strip_logical(x) for x in s]
    return s


def _nullable(s: Any, names: _Names, namespace: str | None, where: str) -> Any:
    """The non-null branch of a union with ``null`` (Connect's optional), else ``s``; a union
    of several primitive (or enum / fixed) types is ``{"type": _TEXT_UNION, "branches"}``.

    Raises:
        ValueError: a union with a record, array or map among several types (named by
            ``where``).
    """
    if isinstance(s, list):
        rest = [b for b in s if b != "null"]
        if len(rest) > 1:
            return _text_union(rest, names, namespace, where)
        if not rest:
            raise ValueError(f"{where}: union {json.dumps(s)} holds no type")
        s = rest[0]
    return names.resolve(s, namespace)


def _text_union(branches: list[Any], names: _Names, namespace: str | None,
                where: str) -> dict[str, Any]:
    kinds = []
    for b in branches:
        r = names.resolve(b, namespace)
        kind = r if isinstance(r, str) else r.get("type")
        if kind in ("enum", "fixed"):
            names.define(r, namespace)
            kind = "string" if kind == "enum" else "bytes"
        if kind not in _PRIMITIVES or kind == "null":
            raise ValueError(f"{where}: union {json.dumps(branches)[:200]} mixes {kind} with "
                             "other types (only unions of primitive types are read)")
        kinds.append(str(kind))
    return {"type": _TEXT_UNION, "branches": tuple(kinds)}


def _arrow_type(s: Any, names: _Names, namespace: str | None, where: str) -> pa.DataType:
    """The Arrow type fastavro's values of Avro schema ``s`` are read into (before the
    bytes -> base64 and float -> shortest-text steps)."""
    s = _nullable(s, names, namespace, where)
    if isinstance(s, str):
        return _PRIMITIVES[s]
    t = s.get("type")
    if t == _TEXT_UNION:
        path = tuple(where.split("."))
        if any("[" in p or "{" in p for p in path):
            raise ValueError(f"{where}: a union of several types inside an array or a map "
                             "is not read")
        names.unions.append((path, s["branches"]))
        return pa.string()
    if t in ("record", "error"):
        ns = names.define(s, namespace)
        return pa.struct([pa.field(f["name"], _arrow_type(f["type"], names, ns,
                                                          f"{where}.{f['name']}"))
                          for f in s.get("fields", [])])
    if t == "enum":
        names.define(s, namespace)
        return pa.string()
    if t == "fixed":
        names.define(s, namespace)
        return pa.binary()
    if t == "array":
        return pa.list_(_arrow_type(s["items"], names, namespace, f"{where}[]"))
    if t == "map":
        return pa.map_(pa.string(), _arrow_type(s["values"], names, namespace, f"{where}{{}}"))
    if isinstance(t, (dict, list)) or t in _PRIMITIVES:
        return _arrow_type(t, names, namespace, where)
    raise ValueError(f"{where}: unsupported Avro type {json.dumps(s)}")


def _connect_field(name: str, s: Any, names: _Names, namespace: str | None) -> dict[str, Any]:
    """One column of the envelope's JSON ``schema`` (``field``, ``name``, ``parameters``)
    from its Avro field type: ``connect.name`` or the ``logicalType``'s Connect name; the
    scale of a decimal from ``connect.parameters`` or the Avro ``scale``."""
    s = _nullable(s, names, namespace, name)
    logical: str | None = None
    scale: str | None = None
    if isinstance(s, dict):
        inner = s.get("type")
        cname = s.get("connect.name")
        ltype = s.get("logicalType")
        if cname is None and isinstance(inner, dict):  # {"type": {"type": "long", ...}}
            cname, ltype = inner.get("connect.name"), inner.get("logicalType", ltype)
        logical = str(cname) if cname is not None else AVRO_LOGICAL_NAMES.get(str(ltype))
        params = s.get("connect.parameters")
        if isinstance(params, dict) and "scale" in params:
            scale = str(params["scale"])
        elif "scale" in s and ltype == "decimal":
            scale = str(s["scale"])
        elif logical == CONNECT_DECIMAL:
            scale = "0"  # Avro's default scale
    return {"field": name, "name": logical, "parameters": {"scale": scale}}


def _envelope_schema(record: Mapping[str, Any], names: _Names,
                     namespace: str | None) -> dict[str, Any]:
    """The envelope's schema as Debezium JSON prints it (only what
    :func:`pipelines.cdc.values.convert.schema_types` reads): the columns of ``after`` (else
    ``before``) with their logical names."""
    images = {f["name"]: f["type"] for f in record.get("fields", [])}
    image = images.get("after", images.get("before"))
    columns: list[dict[str, Any]] = []
    if image is not None:
        value = _nullable(image, names, namespace, "after")
        if isinstance(value, dict) and value.get("type") in ("record", "error"):
            ns = names.define(value, namespace)
            columns = [_connect_field(f["name"], f["type"], names, ns)
                       for f in value.get("fields", [])]
    return {"fields": [{"field": "after", "fields": columns}]}


# ---------------------------------------------------------------------------- values


def _base64(arr: pa.Array) -> pa.Array:
    """Binary values as base64 text (RFC 4648, padded), vectorised with numpy."""
    arr = pa.concat_arrays([arr.cast(pa.binary())])  # offset 0, int32 offsets
    n = len(arr)
    validity, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, np.int32, n + 1).astype(np.int64)
    raw = (np.frombuffer(data_buf, np.uint8, offsets[-1]) if data_buf is not None
           else np.zeros(0, np.uint8))
    lengths = np.diff(offsets)
    groups = (lengths + 2) // 3
    pstart = np.zeros(n + 1, np.int64)
    np.cumsum(groups * 3, out=pstart[1:])
    padded = np.zeros(pstart[-1], np.uint8)
    dest = np.arange(offsets[-1], dtype=np.int64) + np.repeat(pstart[:-1] - offsets[:-1],
                                                              lengths)
    padded[dest] = raw
    tri = padded.reshape(-1, 3).astype(np.uint32)
    v = (tri[:, 0] << 16) | (tri[:, 1] << 8) | tri[:, 2]
    sextets = np.stack([(v >> 18) & 63, (v >> 12) & 63, (v >> 6) & 63, v & 63], axis=1)
    chars = _B64[sextets.ravel()]
    out_offsets = (pstart // 3 * 4).astype(np.int64)
    ends = out_offsets[1:]
    rem = lengths % 3
    chars[ends[rem == 1] - 2] = ord("=")
    chars[ends[rem != 0] - 1] = ord("=")
    if out_offsets[-1] >= 2**31:
        raise ValueError("the file's bytes values take more than 2 GiB as base64")
    return pa.Array.from_buffers(pa.string(), n, [
        validity, pa.py_buffer(out_offsets.astype(np.int32)), pa.py_buffer(chars)],
        null_count=arr.null_count)


def _shortest_float(arr: pa.Array) -> pa.Array:
    """Avro ``float`` values (float32, read as doubles) as the double of their shortest
    text (``1.1f`` -> ``1.1``), as Jackson prints a Java ``float`` in Connect's JSON."""
    vals = arr.to_numpy(zero_copy_only=False)  # NULL -> NaN (masked again below)
    finite = np.isfinite(vals)
    short = vals.copy()
    short[finite] = vals[finite].astype(np.float32).astype(str).astype(np.float64)
    mask = np.asarray(pc.is_null(arr).to_numpy(zero_copy_only=False), bool)
    return pa.array(short, pa.float64(), mask=mask if arr.null_count else None)


def _jsonish(arr: pa.Array, s: Any, names: _Names, namespace: str | None) -> pa.Array:
    """Values read by fastavro (Arrow type :func:`_arrow_type`) in Connect JSON's form."""
    s = _nullable(s, names, namespace, "")
    if isinstance(s, dict) and s.get("type") == _TEXT_UNION:
        return arr  # already text (:func:`_union_text`)
    if isinstance(s, dict) and s.get("type") not in ("record", "error", "enum", "fixed",
                                                     "array", "map"):
        s = s.get("type")
        return _jsonish(arr, s, names, namespace)
    if s in ("bytes",) or (isinstance(s, dict) and s.get("type") == "fixed"):
        return _base64(arr)
    if s == "float":
        return _shortest_float(arr)
    if isinstance(s, dict) and s.get("type") in ("record", "error"):
        fields = s.get("fields", [])
        if not fields:
            return arr
        ns = s.get("namespace", namespace) if "." not in str(s.get("name", "")) else \
            str(s["name"]).rpartition(".")[0]
        kids = [_jsonish(k, f["type"], names, ns or namespace)
                for k, f in zip(arr.flatten(), fields)]
        mask = pc.is_null(arr) if arr.null_count else None
        return pa.StructArray.from_arrays(kids, [f["name"] for f in fields], mask=mask)
    return arr


def _union_text(v: Any, branches: tuple[str, ...]) -> Any:
    """A value of a union of several primitive types as text, the table's type decodes it as
    it decodes a JSON value (``5`` -> ``"5"`` for a BIGINT or a STRING column; a string
    stays itself; bytes as base64; a ``float`` branch's value as its shortest text)."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if "double" not in branches and math.isfinite(v):
            return str(np.float32(v))
        return repr(v)
    if isinstance(v, bytes):
        return base64.b64encode(v).decode("ascii")
    raise TypeError(f"not a primitive value: {type(v).__name__}")


def _unions_as_text(records: list[Any], unions: list[tuple[tuple[str, ...], tuple[str, ...]]]
                    ) -> None:
    """The values of union-typed fields of ``records`` (at ``unions``' paths) made text, in
    place (Python: fastavro's records are Python objects already)."""
    for rec in records:
        for path, branches in unions:
            d = rec
            for p in path[:-1]:
                d = d.get(p) if isinstance(d, dict) else None
            if isinstance(d, dict) and path[-1] in d:
                d[path[-1]] = _union_text(d[path[-1]], branches)


# ---------------------------------------------------------------------------- reading


def _codec_readable(codec: str) -> bool:
    needs = _CODEC_MODULES.get(codec)
    if needs is None:
        return False
    return not needs or any(importlib.util.find_spec(m) is not None for m in needs)


def _unlogical(data: bytes) -> tuple[bytes, dict[str, Any]]:
    """The file with the header's schema stripped of ``logicalType`` (data blocks and sync
    marker unchanged), and the original writer schema."""
    if not data.startswith(AVRO_MAGIC):
        raise _AvroFileError(NOT_AVRO, 0, f"the file starts with {data[:4]!r}, not {AVRO_MAGIC!r}")
    fo = io.BytesIO(data)
    try:
        header = fastavro.schemaless_reader(fo, HEADER_SCHEMA)
        assert isinstance(header, dict)
        meta = dict(header["meta"])
        schema = json.loads(meta["avro.schema"])
    except Exception as e:  # any failure of a foreign header is the file's
        raise _AvroFileError(NOT_AVRO, 0, f"bad header: {type(e).__name__}: {e}") from e
    codec = bytes(meta.get("avro.codec", b"null")).decode("utf-8", "replace")
    if not _codec_readable(codec):
        needs = " or ".join(_CODEC_MODULES.get(codec, ())) or "a codec Avro does not define"
        raise _AvroFileError(UNSUPPORTED_CODEC, 0, f"the blocks are compressed by {codec!r}, "
                             f"which needs {needs}")
    end = fo.tell()
    meta["avro.schema"] = json.dumps(_strip_logical(schema)).encode("utf-8")
    out = io.BytesIO()
    fastavro.schemaless_writer(out, HEADER_SCHEMA, {**header, "meta": meta})
    return out.getvalue() + data[end:], schema


def read_envelopes(data: bytes) -> tuple[pa.Table, np.ndarray, np.ndarray, Stop | None]:
    """The records of one container file as the envelope view's table (``op``, ``ts_ms``,
    ``before``, ``after``, ``source``, ``schema``: one row per non-null record, values in
    Connect JSON's form), the record index of each row, the record indices of ``null``
    records (tombstones), and why reading stopped early (:data:`Stop`), if it did."""
    stop: Stop | None = None
    empty = (pa.table({}), np.zeros(0, np.int64), np.zeros(0, np.int64))
    try:
        raw, schema = _unlogical(data)
        names = _Names()
        top = _nullable(schema, names, None, "<file>")
        if not isinstance(top, dict) or top.get("type") not in ("record", "error"):
            raise _AvroFileError(NOT_ENVELOPE, 0, f"the records are {json.dumps(top)[:200]}, "
                                 "not Envelope records")
        ns = names.define(top, None)
        fields = [f for f in top.get("fields", []) if f["name"] in _ENVELOPE]
        struct = pa.struct([pa.field(f["name"], _arrow_type(f["type"], names, ns, f["name"]))
                            for f in fields])
        connect_schema = _envelope_schema(top, names, ns)
        try:
            reader = fastavro.reader(io.BytesIO(raw))
        except Exception as e:  # not a container fastavro reads (e.g. an unknown codec)
            raise _AvroFileError(NOT_AVRO, 0, f"{type(e).__name__}: {e}") from e
    except _AvroFileError as e:
        return (*empty, (e.reason, e.record, e.detail))
    except (ValueError, KeyError, TypeError) as e:
        return (*empty, (UNSUPPORTED_SCHEMA, 0, f"{type(e).__name__}: {e}"))
    # records become Arrow every _CHUNK records: the Python objects of a large file are never
    # all alive at once
    chunks: list[pa.Array] = []
    pending: list[Any] = []
    rows: list[int] = []
    tombs: list[int] = []
    count = 0
    try:
        try:
            for rec in reader:
                if rec is None:
                    tombs.append(count)
                else:
                    pending.append(rec)
                    rows.append(count)
                count += 1
                if len(pending) >= _CHUNK:
                    _unions_as_text(pending, names.unions)
                    chunks.append(pa.array(pending, struct))
                    pending = []
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            raise
        except Exception as e:  # corrupt block / codec: keep what was read
            stop = (CORRUPT_AVRO, count, f"reading stopped at record {count + 1} (the records "
                    f"of its block and after are lost): {type(e).__name__}: {e}")
        _unions_as_text(pending, names.unions)
        chunks.append(pa.array(pending, struct))
        arr = pa.concat_arrays(chunks)
        cols = {f["name"]: _jsonish(kid, f["type"], names, ns)
                for f, kid in zip(fields, arr.flatten())}
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, KeyError) as e:
        return (*empty, (UNSUPPORTED_SCHEMA, 0, f"{type(e).__name__}: {e}"))
    cols["schema"] = pa.array([connect_schema]).take(pa.array(np.zeros(len(arr), np.int64)))
    return (pa.table(cols), np.array(rows, np.int64), np.array(tombs, np.int64), stop)


def _record_lines(t: pa.Table, rows: np.ndarray, total: int) -> pa.Array:
    """Each record of the file as a Debezium JSON line (without schema; ``null`` for a
    tombstone): the ``_value`` of rejected records and the samples of new columns."""
    out = ["null"] * total
    names = [c for c in t.column_names if c != "schema"]
    for i, rec in zip(rows.tolist(), t.select(names).to_pylist()):
        out[i] = json.dumps(rec, ensure_ascii=False, separators=(",", ":"), default=str)
    return pa.array(out, pa.string())


def decode_avro_file(
    data: bytes,
    schema: TableSchema,
    *,
    file_index: int = 0,
    first_line: int = 1,
    settings: DecodeSettings = DEFAULT_SETTINGS,
    bucket: bool = True,
    threads: bool = False,
) -> pa.Table:
    """The change rows of one Avro container file of Debezium envelopes (see the module
    docs), as :func:`pipelines.cdc.decode.decode_file` returns them for a JSON file (same
    columns, :func:`pipelines.cdc.decode.output_schema`); ``_pos_line`` is the record's
    1-based ordinal, plus ``first_line - 1`` (``data`` is then the header and one range of
    blocks of a larger file, :mod:`pipelines.cdc.avro_blocks`, and ``first_line`` the
    range's first record position). ``threads`` is accepted for the same signature
    (fastavro reads on one thread)."""
    del threads
    target = output_schema(schema, settings.position_fields)
    t, rows, tomb, stop = read_envelopes(data)
    total = int(max([*rows.tolist(), *tomb.tolist(), -1])) + 1
    lazy = Lazy(lambda: _record_lines(t, rows, max(total, 1)))
    parts: list[pa.Table] = []
    if t.num_rows:
        parts.extend(_chunk_rows(t, rows, lazy, target, schema, file_index, first_line,
                                 settings))
    special: list[tuple[int, str, str | None]] = [(int(j), TOMBSTONE, None) for j in tomb]
    if stop is not None:  # the quarantine's "event" holds what went wrong
        at = f"record {stop[1] + 1} "  # (in a later range: counted from the range's first)
        detail = stop[2] if first_line == 1 else stop[2].replace(
            at, f"{at}of this range of blocks ", 1)
        special.append((stop[1], stop[0], detail))
    if special:
        parts.append(outcome_rows(target, [r for _, r, _ in special],
                                  pa.array([v for _, _, v in special], pa.string()),
                                  file_index, [first_line + j for j, _, _ in special]))
    out = pa.concat_tables(parts) if parts else target.empty_table()
    return with_buckets(out, schema) if bucket else out
