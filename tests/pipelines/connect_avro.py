"""Debezium JSON-with-schema events -> Avro container files, as Kafka Connect's Avro converter
and the S3 sink write them (for the tests of :mod:`pipelines.cdc.formats.avro`).

The schema follows Confluent's ``AvroData.fromConnectSchema`` (confluentinc/schema-registry
``avro-data/src/main/java/io/confluent/connect/avro/AvroData.java``, commit
794611bd86d1ce0422581269e2b13a2ab010c7fb): a Connect struct becomes a record named by its
Connect name (namespace = the part before the last dot) and seen again by full name; an
optional schema becomes ``["null", T]`` (``[T, "null"]`` when it has a default) with field
default ``null``; ``int8`` / ``int16`` an ``int`` with ``connect.type``; every non-union
schema carries ``connect.version``, ``connect.parameters``, ``connect.default`` and
``connect.name``; Connect ``Decimal`` adds ``logicalType: decimal`` with ``precision`` (the
``connect.decimal.precision`` parameter, default 64) and ``scale`` when ``0 <= scale <=
precision``, Connect ``Date`` / ``Time`` / ``Timestamp`` add ``date`` / ``time-millis`` /
``timestamp-millis``. Values: JSON ``bytes`` (base64) become bytes, the rest is unchanged.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

import fastavro

_PRIMITIVE = {"int8": "int", "int16": "int", "int32": "int", "int64": "long",  # JsonConverter names
              "float": "float", "double": "double", "boolean": "boolean",
              "string": "string", "bytes": "bytes"}
_LOGICAL = {"org.apache.kafka.connect.data.Date": "date",
            "org.apache.kafka.connect.data.Time": "time-millis",
            "org.apache.kafka.connect.data.Timestamp": "timestamp-millis"}
DECIMAL = "org.apache.kafka.connect.data.Decimal"


def avro_schema(connect: dict[str, Any], seen: set[str] | None = None) -> Any:
    """The Avro schema of a Connect schema (JSON form, as in Debezium JSON's ``schema``)."""
    seen = set() if seen is None else seen
    base = _base(connect, seen)
    if connect.get("optional"):
        return [base, "null"] if connect.get("default") is not None else ["null", base]
    return base


def _base(c: dict[str, Any], seen: set[str]) -> Any:
    name = c.get("name")
    t = c["type"]
    if t == "struct":
        if name is None:  # AvroData's default name (numbered from the second on)
            k = sum(1 for x in seen if x.startswith("io.confluent.connect.avro.ConnectDefault"))
            full = "io.confluent.connect.avro.ConnectDefault" + (str(k + 1) if k else "")
        else:
            full = name
        if full in seen:
            return full
        seen.add(full)
        ns, _, short = full.rpartition(".")
        out: dict[str, Any] = {"type": "record", "name": short}
        if ns:
            out["namespace"] = ns
        out["fields"] = [_field(f, seen) for f in c["fields"]]
    elif t == "array":
        out = {"type": "array", "items": avro_schema(c["items"], seen)}
    elif t == "map":
        out = {"type": "map", "values": avro_schema(c["values"], seen)}
    else:
        out = {"type": _PRIMITIVE[t]}
        if t in ("int8", "int16"):
            out["connect.type"] = t
    if "version" in c:
        out["connect.version"] = c["version"]
    if c.get("parameters"):
        out["connect.parameters"] = dict(c["parameters"])
    if c.get("default") is not None:
        out["connect.default"] = c["default"]
    if name:
        out["connect.name"] = name
    if name == DECIMAL:
        params = c.get("parameters") or {}
        precision = int(params.get("connect.decimal.precision", 64))
        scale = int(params.get("scale", 0))
        if 0 <= scale <= precision:
            out.update({"logicalType": "decimal", "precision": precision, "scale": scale})
        elif "connect.decimal.precision" in params:
            out["logicalType"] = "decimal"
    elif name in _LOGICAL:
        out["logicalType"] = _LOGICAL[name]
    if t != "struct" and len(out) == 1:
        return out["type"]
    return out


def _field(c: dict[str, Any], seen: set[str]) -> dict[str, Any]:
    f: dict[str, Any] = {"name": c["field"], "type": avro_schema(c, seen)}
    if c.get("default") is not None:
        f["default"] = c["default"]
    elif c.get("optional"):
        f["default"] = None
    return f


#: what Debezium puts in a non-optional column it has no value for (a key-only ``before``):
#: the schema default, else the type's fallback (``JdbcValueConverters.convertValue``)
FALLBACK = {"int8": 0, "int16": 0, "int32": 0, "int64": 0, "float": 0.0, "double": 0.0,
            "boolean": False, "string": "", "bytes": ""}


def avro_value(connect: dict[str, Any], value: Any) -> Any:
    """A JSON payload value in the form fastavro writes for :func:`avro_schema`; a struct's
    absent non-optional field takes Debezium's fallback (:data:`FALLBACK`)."""
    if value is None:
        return None
    t = connect["type"]
    if t == "struct":
        out = {}
        for f in connect["fields"]:
            v = value.get(f["field"])
            if f["field"] not in value and not f.get("optional"):
                v = f.get("default", FALLBACK.get(f["type"]))
            out[f["field"]] = avro_value(f, v)
        return out
    if t == "bytes":
        return base64.b64decode(value)
    if t == "array":
        return [avro_value(connect["items"], v) for v in value]
    return value


def container(schema: Any, records: Sequence[Any], codec: str = "null") -> bytes:
    """An Avro object container file of ``records`` under writer schema ``schema`` (the
    schema JSON kept as given in the header, Connect's annotations included)."""
    buf = io.BytesIO()
    # fastavro would turn decimal bytes into Decimal on write: its logical writers expect
    # Decimal values, so the records hold Decimals where the schema says decimal
    fastavro.writer(buf, fastavro.parse_schema(schema), list(records), codec=codec)
    return buf.getvalue()


def envelope_file(events: Sequence[dict[str, Any]], codec: str = "null") -> bytes:
    """Debezium JSON-with-schema events (``{"schema", "payload"}``, one Connect schema for
    all) as one Avro container file of envelopes."""
    connect = events[0]["schema"]
    schema = avro_schema(connect)
    records = [_decimals(schema, avro_value(connect, e["payload"])) for e in events]
    return container(schema, records, codec)


def _decimals(schema: Any, value: Any, names: dict[str, Any] | None = None) -> Any:
    """``value`` with the unscaled bytes of decimal-typed fields as ``decimal.Decimal`` (what
    fastavro's writer takes for ``logicalType: decimal``; it writes the same bytes back when
    the byte count is minimal, which Connect's ``Decimal.fromLogical`` makes it)."""
    import decimal

    names = {} if names is None else names
    if value is None:
        return None
    if isinstance(schema, list):
        branch = next(b for b in schema if b != "null")
        return _decimals(branch, value, names)
    if isinstance(schema, str):
        return _decimals(names[schema], value, names) if schema in names else value
    if schema.get("type") == "record":
        full = (f"{schema['namespace']}.{schema['name']}" if schema.get("namespace")
                else schema["name"])
        names[full] = schema
        return {f["name"]: _decimals(f["type"], value.get(f["name"]), names)
                for f in schema["fields"]}
    if schema.get("logicalType") == "decimal" and "scale" in schema:
        unscaled = int.from_bytes(value, "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-int(schema["scale"]))
    return value
