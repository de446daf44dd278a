"""Avro object container files for Paimon's metadata (manifest lists, manifests, index manifests).

Paimon (Java and pypaimon) writes its metadata as Avro Object Container Files with codec
``zstandard`` by default (Java: ``org.apache.paimon.format.avro.AvroFileFormat``). fastavro only
supports that codec with the optional ``backports.zstd`` package, and decodes ~1 µs per value,
so this module parses the container itself:

* reading (:func:`decode_columns`): the header and every block are parsed and checked here,
  each block is decompressed with the codec named in the header (``null``, ``deflate``,
  ``zstandard``, ``snappy``, ``bzip2``, ``xz``; zstd and snappy through pyarrow), and the records
  are decoded column-wise by :mod:`paimon_core.spec._avro_columns` (numpy, many records in
  lock-step). Files with few large blocks go through :func:`fastavro.reader` instead, fed an
  uncompressed copy of the container. Logical types are stripped from the writer schema first,
  so ``timestamp-millis`` values come back as the stored ``long``.
* writing (:func:`encode_container`): fastavro encodes the records into an uncompressed
  container, whose blocks are then compressed and wrapped in a header carrying the schema JSON
  exactly as given.

Container layout (Avro 1.x spec): ``Obj\\x01``, metadata map ``{avro.schema, avro.codec}``,
16-byte sync marker, then blocks of ``long count, long size, bytes[size], sync``.

Every failure to decode raises :class:`CorruptMetadataError` naming the path; decompression is
bounded (:data:`_MAX_RATIO`, :data:`_MAX_BLOCK_BYTES`) so corrupt input cannot exhaust memory.
A file cut exactly after a block's sync marker is still a valid (shorter) container: Avro has no
record count, so callers that know the expected size must compare it (as Java does with
``_FILE_SIZE``).
"""

from __future__ import annotations

import bz2
import io
import json
import lzma
import os
import struct
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import fastavro
import pyarrow as pa

from paimon_core.errors import CorruptMetadataError, SchemaError
from paimon_core.spec._avro_schema import (
    SchemaProblem,
    check_writer_schema,
    strip_logical_types,
)

__all__ = [
    "CODECS",
    "AvroContainer",
    "check_int32",
    "decode_records",
    "encode_container",
    "parse_container",
]


MAGIC = b"Obj\x01"
SYNC_SIZE = 16
#: Codecs accepted on read and write.
CODECS = ("null", "deflate", "zstandard", "snappy", "bzip2", "xz")
#: A block may decompress to at most this many times its compressed size (+ 64 KiB). Paimon's
#: metadata rows all carry random UUID file names, so real ratios stay far below this.
_MAX_RATIO = 1024
#: Hard cap on one decompressed block (Java and fastavro flush blocks at 16-64 KB).
_MAX_BLOCK_BYTES = 256 * 1024 * 1024
#: Java's DataFileConstants.DEFAULT_SYNC_INTERVAL: flush a block once it holds this many bytes.
_SYNC_INTERVAL = 64000


@dataclass(frozen=True, slots=True)
class AvroContainer:
    """A parsed (still compressed) Avro object container file."""

    schema: Any
    codec: str
    sync: bytes
    blocks: tuple[tuple[int, bytes], ...]
    """(record count, block bytes as stored) per block."""
    schema_json: bytes = b""
    """The writer schema exactly as stored in the header (``avro.schema``)."""
    meta: tuple[tuple[str, bytes], ...] = ()
    """The header's metadata (``avro.schema`` and ``avro.codec`` included)."""


class _Corrupt(Exception):
    """Internal: a decoding problem, turned into CorruptMetadataError by the public functions."""


def _read_long(data: bytes, pos: int) -> tuple[int, int]:
    """Decode one zig-zag varint ``long`` at ``pos``; returns (value, next position)."""
    result = 0
    shift = 0
    n = len(data)
    while True:
        if pos >= n:
            raise _Corrupt("unexpected end of file inside a varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise _Corrupt("varint longer than 10 bytes")
    return (result >> 1) ^ -(result & 1), pos


def _write_long(value: int) -> bytes:
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_sized(data: bytes, pos: int, what: str) -> tuple[bytes, int]:
    size, pos = _read_long(data, pos)
    if size < 0 or pos + size > len(data):
        raise _Corrupt(f"{what} of {size} bytes does not fit in the file")
    return data[pos : pos + size], pos + size


def _parse(data: bytes) -> AvroContainer:
    if len(data) == 0:
        raise _Corrupt("empty file")
    if data[:4] != MAGIC:
        raise _Corrupt("not an Avro object container file (bad magic)")
    pos = 4
    meta: dict[str, bytes] = {}
    while True:
        count, pos = _read_long(data, pos)
        if count == 0:
            break
        if count < 0:
            count = -count
            _, pos = _read_long(data, pos)  # byte size of the map block, not needed
        if count > len(data) - pos:
            raise _Corrupt("metadata map entry count larger than the file")
        for _ in range(count):
            key, pos = _read_sized(data, pos, "metadata key")
            value, pos = _read_sized(data, pos, "metadata value")
            meta[key.decode("utf-8", "replace")] = value
    if pos + SYNC_SIZE > len(data):
        raise _Corrupt("truncated header (sync marker)")
    sync = data[pos : pos + SYNC_SIZE]
    pos += SYNC_SIZE
    if "avro.schema" not in meta:
        raise _Corrupt("header has no avro.schema")
    try:
        schema = json.loads(meta["avro.schema"])
    except (ValueError, RecursionError) as e:
        raise _Corrupt(f"writer schema is not valid JSON: {e}") from e
    codec = meta.get("avro.codec", b"null").decode("utf-8", "replace")
    if codec not in CODECS:
        raise _Corrupt(f"unsupported Avro codec {codec!r}")
    blocks: list[tuple[int, bytes]] = []
    n = len(data)
    while pos < n:
        count, pos = _read_long(data, pos)
        if count < 0:
            raise _Corrupt(f"negative record count {count} in block {len(blocks)}")
        block, pos = _read_sized(data, pos, f"block {len(blocks)}")
        if data[pos : pos + SYNC_SIZE] != sync:
            raise _Corrupt(f"sync marker mismatch after block {len(blocks)} (truncated?)")
        pos += SYNC_SIZE
        blocks.append((count, block))
    return AvroContainer(schema, codec, sync, tuple(blocks), meta["avro.schema"],
                         tuple(meta.items()))


def parse_container(data: bytes, path: str) -> AvroContainer:
    """Parse and check the container structure of an Avro file (blocks stay compressed).

    Raises:
        CorruptMetadataError: empty, truncated or otherwise malformed container.
    """
    try:
        return _parse(data)
    except _Corrupt as e:
        raise CorruptMetadataError(path, str(e)) from e


def _block_limit(compressed_size: int) -> int:
    return min(_MAX_BLOCK_BYTES, _MAX_RATIO * compressed_size + 65536)


def _decompress(codec: str, block: bytes) -> bytes:
    limit = _block_limit(len(block))
    out: bytes
    try:
        if codec == "null":
            return block
        if codec == "deflate":
            d = zlib.decompressobj(-15)
            out = d.decompress(block, limit + 1)
            if d.unconsumed_tail:
                raise _Corrupt("deflate block expands beyond the size limit")
        elif codec == "zstandard":
            stream = pa.input_stream(pa.py_buffer(block), compression="zstd")
            out = stream.read(limit + 1)
        elif codec == "snappy":
            if len(block) < 4:
                raise _Corrupt("snappy block shorter than its CRC")
            payload, crc = block[:-4], struct.unpack(">I", block[-4:])[0]
            size, shift, i = 0, 0, 0
            while True:  # snappy preamble: uncompressed length as an unsigned LEB128
                if i >= len(payload) or shift > 28:
                    raise _Corrupt("bad snappy length preamble")
                b = payload[i]
                size |= (b & 0x7F) << shift
                i += 1
                shift += 7
                if not b & 0x80:
                    break
            if size > limit:
                raise _Corrupt("snappy block expands beyond the size limit")
            out = pa.Codec("snappy").decompress(payload, decompressed_size=size, asbytes=True)
            if zlib.crc32(out) != crc:
                raise _Corrupt("snappy block CRC mismatch")
        elif codec == "bzip2":
            out = bz2.BZ2Decompressor().decompress(block, limit + 1)
        else:  # xz
            out = lzma.LZMADecompressor().decompress(block, limit + 1)
    except _Corrupt:
        raise
    except (pa.ArrowException, OSError, ValueError, EOFError, zlib.error, lzma.LZMAError) as e:
        raise _Corrupt(f"cannot decompress {codec} block: {e}") from e
    if len(out) > limit:
        raise _Corrupt(f"{codec} block expands beyond {limit} bytes")
    return out


def _map_entries(meta: dict[str, bytes]) -> bytes:
    if not meta:
        return b"\x00"
    out = bytearray(_write_long(len(meta)))
    for k, v in meta.items():
        kb = k.encode("utf-8")
        out += _write_long(len(kb)) + kb + _write_long(len(v)) + v
    out += b"\x00"
    return bytes(out)


def _assemble(
    schema_json: str,
    codec: str,
    sync: bytes,
    blocks: Iterable[tuple[int, bytes]],
    extra: dict[str, bytes] | None = None,
) -> bytes:
    out = io.BytesIO()
    out.write(MAGIC)
    meta = {"avro.schema": schema_json.encode("utf-8"), "avro.codec": codec.encode(),
            **(extra or {})}
    out.write(_map_entries(meta))
    out.write(sync)
    for count, block in blocks:
        out.write(_write_long(count))
        out.write(_write_long(len(block)))
        out.write(block)
        out.write(sync)
    return out.getvalue()


def _plain_blocks(container: AvroContainer) -> list[tuple[int, bytes]]:
    blocks = []
    for i, (count, raw) in enumerate(container.blocks):
        block = _decompress(container.codec, raw)
        if count > len(block):
            raise _Corrupt(f"block {i} claims {count} records in {len(block)} bytes")
        blocks.append((count, block))
    return blocks


def _fastavro_records(stripped: Any, sync: bytes, blocks: list[tuple[int, bytes]]) -> list[Any]:
    plain = _assemble(json.dumps(stripped), "null", sync, blocks)
    records: list[Any] = list(fastavro.reader(io.BytesIO(plain)))
    for r in records:
        if not isinstance(r, dict):
            raise _Corrupt("top-level Avro value is not a record")
    return records


def decode_records(data: bytes, path: str) -> tuple[Any, list[Any]]:
    """Decode an Avro container file with fastavro into (writer schema, list of record dicts).

    Logical types are not applied (``timestamp-millis`` = int). This is the reference decoder
    (and the fallback of :func:`decode_columns`).

    Raises:
        CorruptMetadataError: any structural or decoding problem.
    """
    try:
        container = _parse(data)
        stripped = strip_logical_types(container.schema)
        check_writer_schema(stripped)
        blocks = _plain_blocks(container)
        return container.schema, _fastavro_records(stripped, container.sync, blocks)
    except (_Corrupt, SchemaProblem) as e:
        raise CorruptMetadataError(path, str(e)) from e
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception as e:  # fastavro raises many kinds (EOFError, ValueError, IndexError, ...)
        reason = f"cannot decode Avro records: {type(e).__name__}: {e}"
        raise CorruptMetadataError(path, reason) from e


def _compress(codec: str, block: bytes, level: int | None) -> bytes:
    if codec == "null":
        return block
    if codec == "deflate":
        c = zlib.compressobj(level if level is not None else 6, zlib.DEFLATED, -15)
        return c.compress(block) + c.flush()
    if codec == "zstandard":
        zstd = pa.Codec("zstd", compression_level=level if level is not None else 1)
        return bytes(zstd.compress(block, asbytes=True))
    if codec == "snappy":
        snappy = bytes(pa.Codec("snappy").compress(block, asbytes=True))
        return snappy + struct.pack(">I", zlib.crc32(block))
    if codec == "bzip2":
        return bz2.compress(block)
    return lzma.compress(block)


def encode_container(
    schema: dict[str, Any],
    records: Iterable[dict[str, Any]],
    *,
    codec: str = "zstandard",
    level: int | None = None,
    sync: bytes | None = None,
    sync_interval: int = _SYNC_INTERVAL,
    block_meta: Callable[[list[int]], dict[str, bytes]] | None = None,
) -> bytes:
    """Encode ``records`` as an Avro container file whose header carries ``schema`` verbatim.

    Args:
        schema: the writer schema (JSON-able dict); stored compactly, in the given key order.
        records: dicts keyed by field name; ``timestamp-millis`` fields take ints.
        codec: one of :data:`CODECS` (Paimon default: ``zstandard``).
        level: compression level (zstd default 1, as Java's ``file.compression.zstd-level``).
        sync: 16-byte sync marker (random if omitted).
        sync_interval: end a block once it holds this many bytes (Java: 64000).
        block_meta: header metadata to add, given the record count of every block (readers
            ignore keys they do not know).

    Raises:
        SchemaError: a record does not fit the schema, or an unknown codec.
    """
    if codec not in CODECS:
        raise SchemaError(f"unsupported Avro codec {codec!r}; expected one of {CODECS}")
    if sync is None:
        sync = os.urandom(SYNC_SIZE)
    buf = io.BytesIO()
    try:
        parsed = fastavro.parse_schema(strip_logical_types(schema))
        fastavro.writer(
            buf,
            parsed,
            records,
            codec="null",
            sync_interval=sync_interval,
            sync_marker=sync,
        )
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception as e:
        raise SchemaError(f"cannot encode Avro records: {type(e).__name__}: {e}") from e
    container = _parse(buf.getvalue())
    blocks = [(count, _compress(codec, block, level)) for count, block in container.blocks]
    schema_json = json.dumps(schema, separators=(",", ":"))
    extra = block_meta([c for c, _ in blocks]) if block_meta is not None else {}
    return _assemble(schema_json, codec, sync, blocks, extra)


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def check_int32(values: Iterable[Any], what: str, *, nullable: bool = False) -> None:
    """Raise SchemaError unless every value is an int in the Avro ``int`` range (or None if
    ``nullable``). fastavro would silently write out-of-range or non-int values there.
    """
    for v in values:
        if v is None and nullable:
            continue
        if type(v) is not int or not _INT32_MIN <= v <= _INT32_MAX:
            raise SchemaError(f"{what} must be a 32-bit int, got {v!r}")
