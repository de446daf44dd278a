"""Debezium JSON with schemas enabled (Kafka Connect's ``JsonConverter``,
``schemas.enable=true``, its default) writes every event as ``{"schema": <the envelope
schema>, "payload": <the event>}``: the same schema text, typically 1-2 KB, repeated in every
line, several times the size of the event itself. Parsing it for every event is most of the
decoder's time. When every line of a file starts with the same ``{"schema":<S>,"payload":``
and ends with ``}``, :func:`strip_shared_schema` returns the payloads alone (one per line, the
line numbers unchanged) and ``S`` parsed once; the decoder reads the payloads as schema-less
events and gives every row the logical types of ``S``
(:func:`broadcast_types`). Any other file (schemas that differ between lines, tombstones,
other key orders) is decoded line by line as before, so the result is the same either way.
Vectorised: the prefix check, the slicing and the join run in pyarrow's kernels."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from pipelines.cdc.values.convert import Logical, schema_types

__all__ = ["SharedSchema", "broadcast_types", "strip_shared_schema"]

_HEAD = b'{"schema":'
_PAYLOAD = b',"payload":'


@dataclass(frozen=True)
class SharedSchema:
    """The payloads of a file whose lines all carry one schema, and that schema."""

    doc: pa.Buffer  # the payloads, one per line, joined by newlines
    schema: pa.Array  # the envelope schema, parsed once: one row


def _prefix(first: bytes) -> bytes | None:
    """``{"schema":<S>,"payload":`` of the first line, where ``S`` is one JSON object (the
    first ``,"payload":`` after a complete object: one inside a string or a nested object
    leaves an incomplete JSON text before it)."""
    if not first.startswith(_HEAD):
        return None
    at = first.find(_PAYLOAD, len(_HEAD))
    while at >= 0:
        try:
            if isinstance(json.loads(first[len(_HEAD):at]), dict):
                return first[:at + len(_PAYLOAD)]
        except ValueError:
            pass
        at = first.find(_PAYLOAD, at + 1)
    return None


def strip_shared_schema(data: bytes, count: int, nl: np.ndarray | None = None
                        ) -> SharedSchema | None:
    """The payloads of ``data`` (``count`` lines, each a JSON object, no CR; ``nl``: the
    offsets of its newlines, if at hand) when every line is ``{"schema":<S>,"payload":
    <event>}`` with one ``S``; None otherwise."""
    end = data.find(b"\n")
    prefix = _prefix(data[:end if end >= 0 else len(data)])
    if prefix is None or count < 2:
        return None
    buf = np.frombuffer(data, np.uint8)
    if nl is None:
        nl = np.flatnonzero(buf == 10)
    if not data.endswith(b"\n"):
        data += b"\n"
        buf = np.frombuffer(data, np.uint8)
        nl = np.append(nl, len(data) - 1)
    if len(nl) != count or not bool(np.all(buf[nl - 1] == ord("}"))):
        return None
    offsets = np.empty(count + 1, np.int32)
    offsets[0] = 0
    offsets[1:] = nl + 1
    lines = pa.Array.from_buffers(pa.binary(), count,
                                  [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    if not pc.all(pc.starts_with(lines, pattern=prefix.decode("utf-8"))).as_py():
        return None
    payloads = pc.binary_slice(lines, len(prefix), -2)  # without the prefix and "}\n"
    whole = pa.ListArray.from_arrays(pa.array([0, count], pa.int32()), payloads)
    doc = pc.binary_join(whole, b"\n")[0].as_buffer()
    schema = pj.read_json(pa.BufferReader(prefix[:-len(_PAYLOAD)] + b"}")).column("schema")
    return SharedSchema(doc, schema.combine_chunks())


def broadcast_types(shared: pa.Array, n: int, names: Sequence[str]) -> dict[str, Logical]:
    """:func:`pipelines.cdc.values.convert.schema_types` of ``n`` events that all carry the one
    schema ``shared``."""
    zeros = pa.array(np.zeros(n, np.int64))
    return {c: Logical(t.name.take(zeros), t.scale.take(zeros))
            for c, t in schema_types(shared, 1, names).items()}
