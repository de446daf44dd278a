"""Geometries of change events (Debezium's ``io.debezium.data.geometry`` types: OGC
Well-Known Binary in base64) as the GeoJSON text Paimon's CDC sync writes."""

from __future__ import annotations

import base64
import math
import struct

__all__ = ["GEOMETRY", "geojson"]

#: Debezium's geometry types (MySQL spatial, PostGIS; Point also carries ``x``, ``y``): a struct
#: ``{"wkb": base64 of the OGC Well-Known Binary, "srid": int or null}``; into a STRING
#: column as the GeoJSON text Paimon's Debezium / MySQL sync writes (:func:`geojson`)
GEOMETRY = ("io.debezium.data.geometry.Geometry", "io.debezium.data.geometry.Point",
            "io.debezium.data.geometry.Geography")


_WKB_TYPES = {1: "Point", 2: "LineString", 3: "Polygon", 4: "MultiPoint",
              5: "MultiLineString", 6: "MultiPolygon", 7: "GeometryCollection"}


def geojson(wkb_b64: str, srid: str | int | None) -> str:
    """A geometry (base64 of OGC Well-Known Binary, 2D; PostGIS' EWKB SRID flag allowed) as
    the GeoJSON text Paimon's MySQL / Debezium sync writes:
    ``{"coordinates":...,"type":"Point","srid":0}`` (a missing srid is 0; a collection:
    ``{"geometries":[{"type":...,"coordinates":...}],"type":"GeometryCollection","srid":0}``;
    whole numbers without a fraction). Raises ValueError on anything else (3D / measured
    geometries, trailing or missing bytes)."""
    raw = base64.b64decode(wkb_b64, validate=True)
    try:
        kind, body, end = _wkb(raw, 0)
    except (struct.error, IndexError) as e:
        raise ValueError(f"truncated WKB: {e}") from e
    if end != len(raw):
        raise ValueError("trailing bytes after the geometry")
    sid = int(srid) if srid is not None else 0
    return "{" + body + f',"type":"{kind}","srid":{sid}' + "}"


def _wkb(raw: bytes, at: int) -> tuple[str, str, int]:
    """(type name, ``"coordinates":...`` or ``"geometries":[...]``, end offset) of the WKB
    geometry at ``at``."""
    order = raw[at]
    if order not in (0, 1):
        raise ValueError(f"bad WKB byte order {order}")
    e = "<" if order == 1 else ">"
    (code,) = struct.unpack_from(e + "I", raw, at + 1)
    at += 5
    if code & 0x20000000:  # EWKB: an SRID follows
        at += 4
        code &= ~0x20000000
    if code not in _WKB_TYPES:
        raise ValueError(f"unsupported WKB geometry type {code} (2D only)")
    kind = _WKB_TYPES[code]

    def count() -> int:
        nonlocal at
        (k,) = struct.unpack_from(e + "I", raw, at)
        at += 4
        return int(k)

    def point() -> str:
        nonlocal at
        x, y = struct.unpack_from(e + "dd", raw, at)
        at += 16
        if math.isnan(x) or math.isnan(y) or math.isinf(x) or math.isinf(y):
            raise ValueError("empty or infinite point")
        return f"[{_coord(x)},{_coord(y)}]"

    def points() -> str:
        return "[" + ",".join(point() for _ in range(count())) + "]"

    if code == 1:
        return kind, f'"coordinates":{point()}', at
    if code == 2:
        return kind, f'"coordinates":{points()}', at
    if code == 3:
        return kind, '"coordinates":[' + ",".join(points() for _ in range(count())) + "]", at
    parts = []
    for _ in range(count()):
        sub_kind, sub_body, at = _wkb(raw, at)
        parts.append((sub_kind, sub_body))
    if code == 7:
        inner = ",".join("{" + f'"type":"{k}",' + b + "}" for k, b in parts)
        return kind, f'"geometries":[{inner}]', at
    want = {4: "Point", 5: "LineString", 6: "Polygon"}[code]
    if any(k != want for k, _ in parts):
        raise ValueError(f"a {kind} holds another type than {want}")
    coords = ",".join(b[len('"coordinates":'):] for _, b in parts)
    return kind, f'"coordinates":[{coords}]', at


def _coord(v: float) -> str:
    return str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)
