"""The Avro container layer: header/blocks, codecs, the vectorised column decoder."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import math
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core.errors import CorruptMetadataError, SchemaError
from paimon_core.spec import _avro, _avro_columns, _avro_decode, _avro_schema, _bulk
from tests.profiles import examples

# One schema with every Avro type the column decoder handles.
SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "top",
    "namespace": "t",
    "fields": [
        {"name": "n", "type": "null"},
        {"name": "b", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "by", "type": "bytes"},
        {"name": "s", "type": "string"},
        {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]},
        {
            "name": "rec",
            "type": {
                "type": "record",
                "name": "inner",
                "fields": [
                    {"name": "x", "type": "long"},
                    {"name": "ys", "type": {"type": "array", "items": ["null", "long"]}},
                ],
            },
        },
        {"name": "rec2", "type": "inner"},
        {
            "name": "orec",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "opt",
                    "fields": [{"name": "a", "type": "string"}, {"name": "b", "type": "int"}],
                },
            ],
        },
        {"name": "e", "type": {"type": "enum", "name": "color", "symbols": ["R", "G", "B"]}},
        {"name": "fx", "type": {"type": "fixed", "name": "four", "size": 4}},
        {"name": "recs", "type": {"type": "array", "items": "opt"}},
        {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "string"}}},
        {"name": "u3", "type": ["null", "long", "string"]},
        {"name": "u_rev", "type": ["long", "null"]},
    ],
}

_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)
_text = st.text(max_size=12)
_opt = st.fixed_dictionaries({"a": _text, "b": _i32})

RECORD = st.fixed_dictionaries(
    {
        "n": st.none(),
        "b": st.booleans(),
        "i": _i32,
        "l": _i64,
        "f": st.floats(width=32, allow_nan=False),
        "d": st.floats(allow_nan=False),
        "by": st.binary(max_size=20),
        "s": _text,
        "ts": st.none() | _i64,
        "rec": st.fixed_dictionaries(
            {"x": _i64, "ys": st.lists(st.none() | _i64, max_size=5)}
        ),
        "rec2": st.fixed_dictionaries({"x": _i64, "ys": st.lists(_i64, max_size=2)}),
        "orec": st.none() | _opt,
        "e": st.sampled_from(["R", "G", "B"]),
        "fx": st.binary(min_size=4, max_size=4),
        "recs": st.lists(_opt, max_size=3),
        "m": st.dictionaries(_text, st.lists(_text, max_size=3), max_size=3),
        "u3": st.none() | _i64 | _text,
        "u_rev": st.none() | _i64,
    }
)


def _reference(data: bytes) -> Any:
    schema, rows = _avro.decode_records(data, "ref")
    node = _avro_columns.compile_schema(_avro_schema.strip_logical_types(schema))
    return len(rows), _avro_columns.rows_to_columns(node, rows)


def _same(a: Any, b: Any) -> bool:
    """Equality that treats -0.0/0.0 alike and compares floats exactly otherwise."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(type(a) is type(b) and a == b)


@settings(max_examples=examples(40), suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(RECORD, max_size=60), st.sampled_from([1, 200, 2000, 64000]))
def test_columns_match_fastavro(records: list[dict[str, Any]], sync_interval: int) -> None:
    data = _avro.encode_container(SCHEMA, records, codec="null", sync_interval=sync_interval)
    schema, n, cols = _avro_decode.decode_columns(data, "x")
    assert schema == SCHEMA  # the header keeps the schema exactly, logical types included
    ref_n, ref = _reference(data)
    assert n == ref_n == len(records)
    assert _same(cols, ref)
    assert cols["ts"] == [r["ts"] for r in records]  # timestamp-millis read as the stored long
    assert cols["rec"]["x"] == [r["rec"]["x"] for r in records]  # non-null record: columnar
    assert cols["orec"] == [r["orec"] for r in records]  # nullable record: plain values


def test_lockstep_and_fallback_agree() -> None:
    records = [
        {**_example(), "l": i, "s": f"s{i}", "recs": [{"a": "x", "b": i}] * (i % 3)}
        for i in range(600)
    ]
    one_block = _avro.encode_container(SCHEMA, records, codec="null", sync_interval=10**9)
    many_blocks = _avro.encode_container(SCHEMA, records, codec="null", sync_interval=500)
    assert len(_avro.parse_container(one_block, "x").blocks) == 1  # -> fastavro fallback
    assert len(_avro.parse_container(many_blocks, "x").blocks) > 50  # -> lock-step
    a = _avro_decode.decode_columns(one_block, "x")
    b = _avro_decode.decode_columns(many_blocks, "x")
    assert a[1] == b[1] == 600
    assert _same(a[2], b[2])
    assert b[2]["l"] == list(range(600))


def _example() -> dict[str, Any]:
    return {
        "n": None,
        "b": True,
        "i": -5,
        "l": 2**40,
        "f": 1.5,
        "d": -2.25,
        "by": b"\x00\xff",
        "s": "héllo",
        "ts": 1700000000000,
        "rec": {"x": 1, "ys": [None, 2]},
        "rec2": {"x": 2, "ys": []},
        "orec": {"a": "q", "b": 3},
        "e": "G",
        "fx": b"abcd",
        "recs": [],
        "m": {"k": ["v"]},
        "u3": "str",
        "u_rev": None,
    }


@pytest.mark.parametrize("codec", _avro.CODECS)
def test_codecs_roundtrip(codec: str) -> None:
    records = [{**_example(), "l": i} for i in range(300)]
    data = _avro.encode_container(SCHEMA, records, codec=codec, sync_interval=2000)
    container = _avro.parse_container(data, "x")
    assert container.codec == codec
    assert len(container.blocks) > 1
    _, n, cols = _avro_decode.decode_columns(data, "x")
    assert n == 300
    assert cols["l"] == list(range(300))
    if codec in ("null", "deflate", "bzip2", "xz"):  # codecs the plain fastavro here can read
        rows = list(fastavro.reader(io.BytesIO(data)))
        assert [r["l"] for r in rows] == list(range(300))


def test_header_is_plain_avro() -> None:
    data = _avro.encode_container(SCHEMA, [_example()], codec="zstandard")
    reader = fastavro.reader(io.BytesIO(data))
    assert reader.codec == "zstandard"
    assert reader.metadata["avro.schema"] == json.dumps(SCHEMA, separators=(",", ":"))
    assert reader.metadata["avro.schema"].startswith('{"type":"record","name":"top","namespace"')
    # the zstandard blocks are standard zstd frames (magic 28 b5 2f fd)
    block = _avro.parse_container(data, "x").blocks[0][1]
    assert block[:4] == bytes.fromhex("28b52ffd")


def test_empty_file_has_header_only() -> None:
    data = _avro.encode_container(SCHEMA, [], codec="zstandard")
    assert _avro.parse_container(data, "x").blocks == ()
    _, n, cols = _avro_decode.decode_columns(data, "x")
    assert n == 0
    assert cols["l"] == []
    assert cols["rec"]["ys"] == []


def test_zstd_frames_without_content_size() -> None:
    """Java's ZstdOutputStream writes frames without a content size: streaming decode."""
    records = [{**_example(), "l": i} for i in range(50)]
    plain = _avro.parse_container(_avro.encode_container(SCHEMA, records, codec="null"), "x")
    blocks = []
    for count, block in plain.blocks:
        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, "zstd") as out:
            out.write(block)
        blocks.append((count, sink.getvalue().to_pybytes()))
    data = _avro._assemble(json.dumps(SCHEMA), "zstandard", plain.sync, blocks)
    assert _avro_decode.decode_columns(data, "x")[2]["l"] == list(range(50))


# ---- corrupt input ------------------------------------------------------------------------


def _small_file() -> bytes:
    records = [{**_example(), "l": i, "recs": [{"a": "z", "b": i}]} for i in range(40)]
    return _avro.encode_container(SCHEMA, records, codec="deflate", sync_interval=300)


def test_every_truncation_is_corrupt() -> None:
    """Except at block boundaries: Avro has no record count, a file cut right after a sync
    marker is a valid shorter file (Java bounds reads with the recorded _FILE_SIZE instead)."""
    data = _small_file()
    sync = _avro.parse_container(data, "x").sync
    boundaries = {cut for cut in range(len(data) + 1) if data[cut - 16 : cut] == sync}
    assert len(boundaries) == len(_avro.parse_container(data, "x").blocks) + 1
    for cut in range(len(data)):
        if cut in boundaries:
            _avro_decode.decode_columns(data[:cut], "/wh/t/manifest/m-1")
            continue
        with pytest.raises(CorruptMetadataError) as info:
            _avro_decode.decode_columns(data[:cut], "/wh/t/manifest/m-1")
        assert info.value.path == "/wh/t/manifest/m-1"


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"", "empty"),
        (b"Obj", "magic"),
        (b"PAR1" + bytes(40), "magic"),
        (b"Obj\x01\x02\x16avro.schema\x02{\x00" + bytes(16), "JSON"),
        (b"Obj\x01\x00" + bytes(16), "avro.schema"),
        (b"Obj\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "varint"),
        (b"Obj\x01\x7e", "metadata map"),
    ],
)
def test_bad_headers(data: bytes, reason: str) -> None:
    with pytest.raises(CorruptMetadataError, match=reason):
        _avro_decode.decode_columns(data, "p")


def _with_blocks(schema: Any, blocks: list[tuple[int, bytes]], codec: str = "null") -> bytes:
    return _avro._assemble(json.dumps(schema), codec, b"s" * 16, blocks)


def test_block_claims_too_many_records() -> None:
    schema = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}]}
    with pytest.raises(CorruptMetadataError, match="claims"):
        _avro_decode.decode_columns(_with_blocks(schema, [(10**9, b"\x02\x04")]), "p")
    with pytest.raises(CorruptMetadataError, match="left"):
        _avro_decode.decode_columns(_with_blocks(schema, [(1, b"\x02\x04")]), "p")
    with pytest.raises(CorruptMetadataError, match="end of"):
        _avro_decode.decode_columns(_with_blocks(schema, [(2, b"\x02\x80")]), "p")
    with pytest.raises(CorruptMetadataError, match="crosses"):
        _avro_decode.decode_columns(_with_blocks(schema, [(2, b"\x02\x80"), (1, b"\x04")]), "p")


def test_huge_lengths_and_counts() -> None:
    big = b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01"  # zig-zag 2**63 - 1
    s_schema = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "string"}]}
    a_schema = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "a", "type": {"type": "array", "items": "long"}}],
    }
    for schema in (s_schema, a_schema):
        with pytest.raises(CorruptMetadataError):
            _avro_decode.decode_columns(_with_blocks(schema, [(1, big + b"ab")]), "p")


def test_writer_schema_checks_hold_for_every_file_and_descriptor() -> None:
    """Decoding plans are cached per writer schema: a rejected schema is rejected again for
    every file that carries it, and one schema is matched against each descriptor on its own."""
    schema = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "a", "type": ["null", "long"]}, {"name": "s", "type": "string"}],
    }
    good = _with_blocks(schema, [(1, b"\x02\x04\x02x")])
    null_a = _with_blocks(schema, [(1, b"\x00\x02x")])
    wants_a: Any = ("record", {"a": ("long", True), "s": ("string", True)})
    wants_b: Any = ("record", {"b": ("long", True)})
    loose_a: Any = ("record", {"a": ("long", False)})
    for _ in range(2):
        assert _avro_decode.decode_columns(good, "p", wants_a)[2] == {"a": [2], "s": ["x"]}
        with pytest.raises(CorruptMetadataError, match="required value a is null"):
            _avro_decode.decode_columns(null_a, "q", wants_a)
        with pytest.raises(CorruptMetadataError, match="q2"):
            _avro_decode.decode_columns(good, "q2", wants_b)
        assert _avro_decode.decode_columns(null_a, "p", loose_a)[2]["a"] == [None]
    zero_size_items = {"type": "array", "items": "null"}
    bad = {"type": "record", "name": "r", "fields": [{"name": "a", "type": zero_size_items}]}
    for path in ("f1", "f2"):
        with pytest.raises(CorruptMetadataError, match=path):
            _avro_decode.decode_columns(_with_blocks(bad, [(1, b"\x00")]), path)


def test_zero_size_array_items_rejected() -> None:
    schema = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "a", "type": {"type": "array", "items": "null"}}],
    }
    with pytest.raises(CorruptMetadataError, match="zero-size"):
        _avro_decode.decode_columns(_with_blocks(schema, [(1, b"\xfe\xff\xff\xff\x0f\x00")]), "p")


def test_decompression_is_bounded() -> None:
    schema = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "bytes"}]}
    bomb = pa.Codec("zstd").compress(bytes(20_000_000), asbytes=True)
    assert len(bomb) < 5000
    with pytest.raises(CorruptMetadataError, match="expands beyond"):
        _avro_decode.decode_columns(_with_blocks(schema, [(1, bomb)], "zstandard"), "p")
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    dbomb = deflate.compress(bytes(20_000_000)) + deflate.flush()
    with pytest.raises(CorruptMetadataError, match="expands beyond"):
        _avro_decode.decode_columns(_with_blocks(schema, [(1, dbomb)], "deflate"), "p")


def test_bad_snappy_crc() -> None:
    schema = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}]}
    good = _avro._compress("snappy", b"\x02", None)
    assert _avro._decompress("snappy", good) == b"\x02"
    bad = good[:-4] + struct.pack(">I", 1)
    with pytest.raises(CorruptMetadataError, match="CRC"):
        _avro_decode.decode_columns(_with_blocks(schema, [(1, bad)], "snappy"), "p")


def _single_block_file() -> bytes:  # > 256 records in one block: the fastavro fallback
    records = [{**_example(), "l": i, "recs": [{"a": "z", "b": i}]} for i in range(300)]
    return _avro.encode_container(SCHEMA, records, codec="null", sync_interval=10**9)


_FILES = {"multi": _small_file(), "single": _single_block_file()}


@settings(max_examples=examples(300))
@given(st.data(), st.sampled_from(sorted(_FILES)))
def test_random_corruption_never_escapes(data: st.DataObject, which: str) -> None:
    original = bytearray(_FILES[which])
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(original) - 1))
        original[pos] = data.draw(st.integers(0, 255))
    with contextlib.suppress(CorruptMetadataError):
        _avro_decode.decode_columns(bytes(original), "p")


@settings(max_examples=examples(300))
@given(st.integers(0, 40), st.binary(max_size=200))
def test_garbage_blocks_never_escape(count: int, block: bytes) -> None:
    from paimon_core.spec.manifest import MANIFEST_ENTRY_AVRO_SCHEMA

    data = _with_blocks(MANIFEST_ENTRY_AVRO_SCHEMA, [(count, block)] * 3)
    with contextlib.suppress(CorruptMetadataError):
        _avro_decode.decode_columns(data, "p")


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(
        ["record", "array", "map", "union", "null", "long", "string", "bytes", "r", "fields"]
    ),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["type", "name", "fields", "items", "values", "size"]),
                      inner, max_size=4),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=examples(300))
@given(_json, st.binary(max_size=30))
def test_garbage_schemas_never_escape(schema: Any, block: bytes) -> None:
    from paimon_core.spec.manifest import _ENTRY_DESC

    data = _avro._assemble(json.dumps(schema), "null", b"s" * 16, [(2, block)])
    for expected in (None, _ENTRY_DESC):
        with contextlib.suppress(CorruptMetadataError):
            _avro_decode.decode_columns(data, "p", expected)
    with contextlib.suppress(CorruptMetadataError):
        _avro_schema.check_schema(schema, _ENTRY_DESC, "p")


def test_encode_errors_are_schema_errors() -> None:
    schema = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}]}
    with pytest.raises(SchemaError):
        _avro.encode_container(schema, [{"a": "not a number"}])
    with pytest.raises(SchemaError):
        _avro.encode_container(schema, [{"a": 1}], codec="lz4")


# ---- helpers ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Point:
    x: int
    y: str | None


def test_frozen_factory() -> None:
    build = _bulk.frozen_factory(_Point)
    points = build([1, 2], ["a", None])
    assert points == [_Point(1, "a"), _Point(2, None)]
    assert type(points[0]) is _Point
    assert hash(points[0]) == hash(_Point(1, "a"))
    with pytest.raises(AttributeError):
        points[0].x = 5  # type: ignore[misc]


def test_gc_paused_restores_state() -> None:
    assert gc.isenabled()
    with _bulk.gc_paused():
        assert not gc.isenabled()
        with _bulk.gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with _bulk.gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
