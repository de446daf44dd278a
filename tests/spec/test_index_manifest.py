"""Index manifests: the Java 0.9 golden file, HEAD extras, round trips, corrupt input."""

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
from paimon_core.spec.index_manifest import (
    DELETION_VECTORS_INDEX,
    HASH_INDEX,
    INDEX_MANIFEST_AVRO_SCHEMA,
    DeletionVectorMeta,
    IndexManifestEntry,
    decode_index_manifest,
    encode_index_manifest,
)
from paimon_core.spec.manifest import FileKind
from tests.profiles import examples

DATA = Path(__file__).parent / "data"
PT_X = bytes.fromhex("00000001" "0000000000000000" "7800000000000081")


def _java09_schema() -> dict[str, Any]:
    raw = (DATA / "java09_index_manifest.avro").read_bytes()
    return json.loads(fastavro.reader(io.BytesIO(raw)).metadata["avro.schema"])  # type: ignore[no-any-return]


def test_java09_index_manifest() -> None:
    entries = decode_index_manifest((DATA / "java09_index_manifest.avro").read_bytes(), "i")
    assert entries == [
        IndexManifestEntry(
            FileKind.ADD,
            PT_X,
            0,
            DELETION_VECTORS_INDEX,
            "index-0e4396bb-efbf-4c59-9fb8-0285b7ea0888-0",
            31,
            1,
            (DeletionVectorMeta("data-12b08138-cc56-4db7-8755-82976b209c12-0.parquet", 1, 22),),
        )
    ]


def test_java09_schema_has_nullable_range_items() -> None:
    """Java 0.9 declares the range records nullable (RowType.of is nullable)."""
    ranges = _java09_schema()["fields"][8]
    assert ranges == {
        "name": "_DELETIONS_VECTORS_RANGES",
        "type": [
            "null",
            {
                "type": "array",
                "items": [
                    "null",
                    {
                        "type": "record",
                        "name": "record__DELETIONS_VECTORS_RANGES",
                        "fields": [
                            {"name": "f0", "type": "string"},
                            {"name": "f1", "type": "int"},
                            {"name": "f2", "type": "int"},
                        ],
                    },
                ],
            },
        ],
        "default": None,
    }


def test_encoded_schema_extends_java09() -> None:
    data = encode_index_manifest([])
    schema = json.loads(fastavro.reader(io.BytesIO(data)).metadata["avro.schema"])
    assert schema == INDEX_MANIFEST_AVRO_SCHEMA
    java = _java09_schema()
    assert schema["fields"][:8] == java["fields"][:8]
    ranges = schema["fields"][8]["type"][1]["items"][1]
    assert ranges["fields"][:3] == java["fields"][8]["type"][1]["items"][1]["fields"]
    cardinality = {"name": "_CARDINALITY", "type": ["null", "long"], "default": None}
    assert ranges["fields"][3] == cardinality
    external = {"name": "_EXTERNAL_PATH", "type": ["null", "string"], "default": None}
    assert schema["fields"][9] == external


def test_head_layout_with_global_index() -> None:
    schema = copy.deepcopy(INDEX_MANIFEST_AVRO_SCHEMA)
    schema["fields"].append(
        {
            "name": "_GLOBAL_INDEX",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "g",
                    "fields": [
                        {"name": "_ROW_RANGE_START", "type": "long"},
                        {
                            "name": "_EXTRA_FIELD_IDS",
                            "type": ["null", {"type": "array", "items": "int"}],
                        },
                    ],
                },
            ],
            "default": None,
        }
    )
    row = {
        "_VERSION": 1, "_KIND": 0, "_PARTITION": PT_X, "_BUCKET": 1, "_INDEX_TYPE": "HASH",
        "_FILE_NAME": "index-1", "_FILE_SIZE": 8, "_ROW_COUNT": 2,
        "_DELETIONS_VECTORS_RANGES": None, "_EXTERNAL_PATH": "s3://b/index-1",
        "_GLOBAL_INDEX": {"_ROW_RANGE_START": 5, "_EXTRA_FIELD_IDS": [1, 2]},
    }  # fmt: skip
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [row])
    (e,) = decode_index_manifest(buf.getvalue(), "i")
    assert e == IndexManifestEntry(
        FileKind.ADD, PT_X, 1, HASH_INDEX, "index-1", 8, 2, None, "s3://b/index-1"
    )


_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)
_ranges = st.none() | st.lists(
    st.builds(DeletionVectorMeta, st.text(max_size=10), _i32, _i32, st.none() | _i64),
    max_size=4,
).map(tuple)
_entries = st.builds(
    IndexManifestEntry,
    st.sampled_from(FileKind), st.binary(max_size=20), _i32,
    st.sampled_from([HASH_INDEX, DELETION_VECTORS_INDEX]), st.text(max_size=20), _i64, _i64,
    _ranges, st.none() | st.text(max_size=10),
)  # fmt: skip


@settings(max_examples=examples(60))
@given(st.lists(_entries, max_size=15))
def test_roundtrip(entries: list[IndexManifestEntry]) -> None:
    assert decode_index_manifest(encode_index_manifest(entries), "i") == entries


def test_corrupt() -> None:
    path = "/wh/t/manifest/index-manifest-1"
    schema = _java09_schema()
    good = {
        "_VERSION": 1, "_KIND": 0, "_PARTITION": PT_X, "_BUCKET": 0,
        "_INDEX_TYPE": "DELETION_VECTORS", "_FILE_NAME": "index-1", "_FILE_SIZE": 1,
        "_ROW_COUNT": 0, "_DELETIONS_VECTORS_RANGES": [],
    }  # fmt: skip
    cases = [
        ({**good, "_VERSION": 2}, "_VERSION 2"),
        ({**good, "_DELETIONS_VECTORS_RANGES": [None]}, r"_DELETIONS_VECTORS_RANGES\.\[\] is null"),
        ({**good, "_KIND": 5}, "invalid value"),
    ]
    for row, match in cases:
        buf = io.BytesIO()
        fastavro.writer(buf, fastavro.parse_schema(copy.deepcopy(schema)), [row])
        with pytest.raises(CorruptMetadataError, match=match) as info:
            decode_index_manifest(buf.getvalue(), path)
        assert info.value.path == path
    with pytest.raises(CorruptMetadataError, match="empty"):
        decode_index_manifest(b"", path)


def test_encode_rejects_out_of_range_ints() -> None:
    from paimon_core.errors import SchemaError

    big = IndexManifestEntry(
        FileKind.ADD, PT_X, 0, DELETION_VECTORS_INDEX, "i", 1, 1,
        (DeletionVectorMeta("d", 2**31, 1),),
    )  # fmt: skip
    with pytest.raises(SchemaError, match="offset"):
        encode_index_manifest([big])
