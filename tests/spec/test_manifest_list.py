"""Manifest lists: golden files, layouts, round trips, corrupt input."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_core.errors import CorruptMetadataError
from paimon_core.spec.manifest_list import (
    MANIFEST_FILE_META_AVRO_SCHEMA,
    ManifestFileMeta,
    decode_manifest_list,
    encode_manifest_list,
)
from paimon_core.spec.stats import EMPTY_ROW, SimpleStats, unknown_stats
from tests.profiles import examples

DATA = Path(__file__).parent / "data"
PT_X = bytes.fromhex("00000001" "0000000000000000" "7800000000000081")
PT_Y = bytes.fromhex("00000001" "0000000000000000" "7900000000000081")
PT_STATS = SimpleStats(PT_X, PT_Y, (0,))


def test_java09_manifest_list() -> None:
    metas = decode_manifest_list((DATA / "java09_manifest_list.avro").read_bytes(), "l")
    a, b = "manifest-da0a17cd-4005-46a2-935c-a275547e9946", "manifest-fa83c3c2-5355-4214-8ba1"
    assert metas == [
        ManifestFileMeta(f"{a}-0", 1882, 2, 0, PT_STATS, 0),
        ManifestFileMeta(f"{a}-1", 1882, 2, 2, PT_STATS, 0),
        ManifestFileMeta(f"{b}-4b553e06e9bb-0", 1931, 3, 0, PT_STATS, 0),
    ]


def test_java09_empty_manifest_list() -> None:
    """The base list of a first snapshot: a header-only Avro file."""
    assert decode_manifest_list((DATA / "java09_manifest_list_empty.avro").read_bytes(), "l") == []


def test_pypaimon21_manifest_list() -> None:
    """pypaimon 2.1 also writes _MIN/_MAX_BUCKET/_LEVEL, _TOTAL_BUCKETS and _EXTRA_FILES."""
    (meta,) = decode_manifest_list((DATA / "pypaimon21_manifest_list.avro").read_bytes(), "l")
    assert meta == ManifestFileMeta(
        "manifest-c76ac427-b3b2-4abb-8c64-eafedeafb090-0", 2360, 2, 0, PT_STATS, 0, 0, 0, 0, 0
    )


def test_encoded_schema() -> None:
    data = encode_manifest_list([ManifestFileMeta("m-0", 10, 1, 0, unknown_stats(1), 3)])
    reader = fastavro.reader(io.BytesIO(data))
    assert reader.codec == "zstandard"
    schema = json.loads(reader.metadata["avro.schema"])
    java09 = json.loads(
        fastavro.reader(io.BytesIO((DATA / "java09_manifest_list.avro").read_bytes())).metadata[
            "avro.schema"
        ]
    )
    assert schema["fields"][:7] == java09["fields"]  # the 0.9 fields, byte-for-byte
    assert schema["fields"][7:] == [
        {"name": n, "type": ["null", t], "default": None}
        for n, t in [
            ("_MIN_BUCKET", "int"), ("_MAX_BUCKET", "int"), ("_MIN_LEVEL", "int"),
            ("_MAX_LEVEL", "int"), ("_MIN_ROW_ID", "long"), ("_MAX_ROW_ID", "long"),
        ]
    ]  # fmt: skip
    assert schema == MANIFEST_FILE_META_AVRO_SCHEMA
    rows = list(fastavro.reader(io.BytesIO(encode_manifest_list(
        [ManifestFileMeta("m-0", 10, 1, 0, unknown_stats(1), 3, 0, 1)], codec="null"
    ))))  # fmt: skip
    assert rows[0]["_VERSION"] == 2
    assert (rows[0]["_MIN_BUCKET"], rows[0]["_MAX_BUCKET"], rows[0]["_MIN_LEVEL"]) == (0, 1, None)


def test_empty_roundtrip() -> None:
    data = encode_manifest_list([])
    assert decode_manifest_list(data, "l") == []
    assert list(fastavro.reader(io.BytesIO(encode_manifest_list([], codec="null")))) == []


_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)
_stats = st.builds(
    SimpleStats,
    st.binary(max_size=30),
    st.binary(max_size=30),
    st.none() | st.lists(st.none() | _i64, max_size=3).map(tuple),
)
_metas = st.builds(
    ManifestFileMeta,
    st.text(min_size=1, max_size=30), _i64, _i64, _i64, _stats, _i64,
    st.none() | _i32, st.none() | _i32, st.none() | _i32, st.none() | _i32,
    st.none() | _i64, st.none() | _i64,
)  # fmt: skip


@settings(max_examples=examples(60))
@given(st.lists(_metas, max_size=30))
def test_roundtrip(metas: list[ManifestFileMeta]) -> None:
    assert decode_manifest_list(encode_manifest_list(metas), "l") == metas


def _java09_schema() -> dict[str, Any]:
    raw = (DATA / "java09_manifest_list.avro").read_bytes()
    return json.loads(fastavro.reader(io.BytesIO(raw)).metadata["avro.schema"])  # type: ignore[no-any-return]


def _write(schema: dict[str, Any], rows: list[dict[str, Any]]) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(copy.deepcopy(schema)), rows)
    return buf.getvalue()


def _row(**kw: Any) -> dict[str, Any]:
    stats = {"_MIN_VALUES": EMPTY_ROW, "_MAX_VALUES": EMPTY_ROW, "_NULL_COUNTS": None}
    return {
        "_VERSION": 2, "_FILE_NAME": "m", "_FILE_SIZE": 1, "_NUM_ADDED_FILES": 1,
        "_NUM_DELETED_FILES": 0, "_PARTITION_STATS": stats, "_SCHEMA_ID": 0, **kw,
    }  # fmt: skip


def test_corrupt() -> None:
    path = "/wh/t/manifest/manifest-list-1"
    for data, match in [
        (b"", "empty"),
        (encode_manifest_list([ManifestFileMeta("m", 1, 1, 0, unknown_stats(0), 0)])[:-3], "sync"),
        (_write(_java09_schema(), [_row(_VERSION=1)]), "_VERSION 1"),
        (_write(_java09_schema(), [_row(), _row(_VERSION=7)]), "_VERSION 7"),
    ]:
        with pytest.raises(CorruptMetadataError, match=match) as info:
            decode_manifest_list(data, path)
        assert info.value.path == path
    schema = _java09_schema()
    del schema["fields"][2]
    with pytest.raises(CorruptMetadataError, match="_FILE_SIZE"):
        row = _row()
        del row["_FILE_SIZE"]
        decode_manifest_list(_write(schema, [row]), path)


def test_encode_rejects_out_of_range_ints() -> None:
    from paimon_core.errors import SchemaError

    with pytest.raises(SchemaError, match="min_bucket"):
        encode_manifest_list([ManifestFileMeta("m", 1, 1, 0, unknown_stats(0), 0, 2**31)])
