"""Deletion-vector index files and the RoaringBitmap portable format."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_core.errors import CorruptMetadataError, SchemaError
from paimon_core.spec.deletion_vector import (
    BITMAP64_MAGIC,
    BITMAP_MAGIC,
    decode_deletion_vectors,
    deserialize_roaring32,
    encode_deletion_vectors,
    serialize_roaring32,
)
from paimon_core.spec.index_manifest import DeletionVectorMeta
from tests.profiles import examples
from tests.spec.roaring_cases import roaring_cases

DATA = Path(__file__).parent / "data"


def test_magic_numbers_match_java() -> None:
    assert BITMAP_MAGIC == 1581511376  # BitmapDeletionVector.MAGIC_NUMBER
    assert BITMAP64_MAGIC == 1681511377  # Bitmap64DeletionVector.MAGIC_NUMBER


def test_java09_dv_file() -> None:
    """A DV index file written by Java 0.9 (lookup compaction deleting row 0)."""
    data = (DATA / "java09_dv_index.bin").read_bytes()
    assert data.hex() == (
        "01" "00000016" "5e43f2d0" "3a300000" "01000000" "00000000" "10000000" "0000" "e33060d3"
    )
    name = "data-12b08138-cc56-4db7-8755-82976b209c12-0.parquet"
    out = decode_deletion_vectors(data, [DeletionVectorMeta(name, 1, 22, None)], "dv")
    assert list(out) == [name]
    assert out[name].dtype == np.int64
    assert out[name].tolist() == [0]


def test_encode_matches_java_bytes() -> None:
    data, metas = encode_deletion_vectors({"f": np.array([0])})
    assert data == (DATA / "java09_dv_index.bin").read_bytes()
    assert metas == [DeletionVectorMeta("f", 1, 22, 1)]


@pytest.mark.parametrize("name", sorted(roaring_cases()))
def test_pyroaring_serializations(name: str) -> None:
    """Bitmaps serialized by CRoaring (pyroaring), incl. run containers and the 64-bit form."""
    values, _ = roaring_cases()[name]
    raw = np.load(DATA / "roaring_pyroaring.npz")[name].tobytes()
    if name == "b64":
        vector = struct.pack("<i", BITMAP64_MAGIC) + raw
        length = len(vector) + 8
    else:
        got, end = deserialize_roaring32(raw)
        assert end == len(raw)
        np.testing.assert_array_equal(got, values)
        vector = struct.pack(">i", BITMAP_MAGIC) + raw
        length = len(vector)
    if values.size and values[-1] > 2**31 - 1 and name != "b64":
        return
    file = b"\x01" + struct.pack(">i", len(vector)) + vector + struct.pack(">I", zlib.crc32(vector))
    meta = DeletionVectorMeta("d", 1, length, len(values))
    out = decode_deletion_vectors(file, [meta], "dv")
    np.testing.assert_array_equal(out["d"], values)


def test_run_cookie_layout_by_hand() -> None:
    # cookie 12347 | (1-1)<<16, run flags 0b1, header (key 0, card-1 = 9), one run 10..19
    raw = struct.pack("<I", 12347) + b"\x01" + struct.pack("<HH", 0, 9)
    raw += struct.pack("<HHH", 1, 10, 9)
    got, end = deserialize_roaring32(raw)
    assert got.tolist() == list(range(10, 20))
    assert end == len(raw)


@settings(max_examples=examples(60))
@given(
    st.lists(
        st.one_of(
            st.integers(0, 70000),
            st.integers(0, 2**31 - 1),
            st.integers(131072, 131072 + 65535),
        ),
        max_size=300,
    ),
    st.booleans(),
)
def test_roundtrip(values: list[int], dense: bool) -> None:
    if dense:  # force a bitmap container (> 4096 values in one key)
        values = values + list(range(200000, 205000))
    expected = np.unique(np.array(values, dtype=np.int64))
    raw = serialize_roaring32(values)
    got, end = deserialize_roaring32(raw)
    assert end == len(raw)
    np.testing.assert_array_equal(got, expected)
    data, metas = encode_deletion_vectors({"a": values, "b": [3, 1, 2]})
    out = decode_deletion_vectors(data, metas, "dv")
    np.testing.assert_array_equal(out["a"], expected)
    assert out["b"].tolist() == [1, 2, 3]
    assert metas[0].cardinality == len(expected)
    assert metas[1].offset == metas[0].offset + metas[0].length + 8


def test_encoded_layout() -> None:
    data, metas = encode_deletion_vectors({"x": [5, 70000], "y": []})
    assert data[0] == 1
    m = metas[0]
    assert struct.unpack(">i", data[m.offset : m.offset + 4])[0] == m.length
    vector = data[m.offset + 4 : m.offset + 4 + m.length]
    assert struct.unpack(">i", vector[:4])[0] == BITMAP_MAGIC
    crc = struct.unpack(">I", data[m.offset + 4 + m.length : m.offset + 8 + m.length])[0]
    assert crc == zlib.crc32(vector)
    # cookie 12346, 2 containers (keys 0 and 1), offsets after the 8 + 2*4 + 2*4 byte header
    assert vector[4:].hex() == (
        "3a300000" "02000000" "00000000" "01000000" "18000000" "1a000000" "0500" "7011"
    )
    assert metas[1] == DeletionVectorMeta("y", m.offset + m.length + 8, 12, 0)
    assert len(data) == metas[1].offset + 4 + 12 + 4


def test_encode_rejects_out_of_range() -> None:
    with pytest.raises(SchemaError):
        encode_deletion_vectors({"x": [2**31]})
    with pytest.raises(SchemaError):
        encode_deletion_vectors({"x": [-1]})


def _one_file() -> tuple[bytes, list[DeletionVectorMeta]]:
    return encode_deletion_vectors({"x": [1, 2, 3, 100000]})


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d, m: (b"", m), "empty"),
        (lambda d, m: (b"\x02" + d[1:], m), "version"),
        (lambda d, m: (d[:-1], m), "truncated"),
        (lambda d, m: (d[:-1] + bytes([d[-1] ^ 1]), m), "CRC"),
        (lambda d, m: (d[:5] + b"\x00" + d[6:], m), "magic"),
        (lambda d, m: (d, [DeletionVectorMeta("x", 1, m[0].length + 1, None)]), "size"),
        (lambda d, m: (d, [DeletionVectorMeta("x", 1, m[0].length, 99)]), "cardinality"),
        (lambda d, m: (d, [DeletionVectorMeta("x", 1000, m[0].length, None)]), "truncated"),
    ],
)
def test_corrupt(mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    data, metas = mutate(*_one_file())
    with pytest.raises(CorruptMetadataError, match=message) as info:
        decode_deletion_vectors(data, metas, "/t/index/index-1")
    assert info.value.path == "/t/index/index-1"


def test_corrupt_bitmap_with_valid_crc() -> None:
    # 2 containers (keys 0 and 1, one value each), offsets present, but no container data
    header = struct.pack("<HHHH", 0, 0, 1, 0) + struct.pack("<II", 24, 26)
    bad = struct.pack(">i", BITMAP_MAGIC) + struct.pack("<II", 12346, 2) + header
    file = b"\x01" + struct.pack(">i", len(bad)) + bad + struct.pack(">I", zlib.crc32(bad))
    with pytest.raises(CorruptMetadataError, match="truncated"):
        decode_deletion_vectors(file, [DeletionVectorMeta("x", 1, len(bad), None)], "p")


@settings(max_examples=examples(200))
@given(st.binary(max_size=64))
def test_garbage_bitmap_never_crashes(raw: bytes) -> None:
    vector = struct.pack(">i", BITMAP_MAGIC) + raw
    file = b"\x01" + struct.pack(">i", len(vector)) + vector + struct.pack(">I", zlib.crc32(vector))
    try:
        out = decode_deletion_vectors(file, [DeletionVectorMeta("x", 1, len(vector), None)], "p")
    except CorruptMetadataError:
        return
    assert np.all(np.diff(out["x"]) > 0)


_VALID = {name: np.load(DATA / "roaring_pyroaring.npz")[name].tobytes() for name in roaring_cases()}


@settings(max_examples=examples(300))
@given(st.sampled_from(sorted(n for n in _VALID if n != "b64")), st.data())
def test_mutated_bitmaps_never_crash(name: str, data: st.DataObject) -> None:
    """Valid CRoaring serializations with a few bytes changed (CRC recomputed)."""
    raw = bytearray(_VALID[name])
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    vector = struct.pack(">i", BITMAP_MAGIC) + bytes(raw)
    file = b"\x01" + struct.pack(">i", len(vector)) + vector + struct.pack(">I", zlib.crc32(vector))
    try:
        out = decode_deletion_vectors(file, [DeletionVectorMeta("x", 1, len(vector), None)], "p")
    except CorruptMetadataError:
        return
    assert np.all(np.diff(out["x"]) > 0)
    assert out["x"].size == 0 or (out["x"][0] >= 0 and out["x"][-1] <= 2**31 - 1)
