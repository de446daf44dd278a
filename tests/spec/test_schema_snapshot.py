from __future__ import annotations

import json

import pytest

from paimon_core.errors import CorruptMetadataError
from paimon_core.spec.schema import decode_schema, encode_schema
from paimon_core.spec.snapshot import CommitKind, decode_snapshot

PYPAIMON_SCHEMA = {
    "version": 3,
    "id": 0,
    "fields": [
        {"id": 0, "name": "dt", "type": "STRING NOT NULL"},
        {"id": 1, "name": "id", "type": "INT NOT NULL"},
        {"id": 2, "name": "name", "type": "STRING"},
        {"id": 3, "name": "ts", "type": "TIMESTAMP(6)"},
    ],
    "highestFieldId": 3,
    "partitionKeys": ["dt"],
    "primaryKeys": ["dt", "id"],
    "options": {"bucket": "2"},
    "timeMillis": 1795300329442,
    "comment": None,
}


def test_schema_round_trip_and_derived_views() -> None:
    s = decode_schema(json.dumps(PYPAIMON_SCHEMA).encode(), "schema-0")
    assert s.trimmed_primary_keys == ("id",)
    assert s.bucket_keys == ("id",)
    assert s.num_buckets == 2
    assert s.file_format == "parquet"
    out = json.loads(encode_schema(s))
    assert "comment" not in out  # Java 0.9 would read a JSON null as the text "null"
    assert out["fields"] == PYPAIMON_SCHEMA["fields"]
    assert out["highestFieldId"] == 3 and out["version"] == 3


def test_old_schema_versions_defaults() -> None:
    v1 = dict(PYPAIMON_SCHEMA, version=1, options={})
    s = decode_schema(json.dumps(v1).encode(), "p")
    assert s.num_buckets == 1 and s.file_format == "orc"
    v2 = dict(PYPAIMON_SCHEMA, version=2, options={})
    s = decode_schema(json.dumps(v2).encode(), "p")
    assert s.num_buckets == -1 and s.file_format == "orc"


def test_unknown_schema_keys_tolerated() -> None:
    d = dict(PYPAIMON_SCHEMA, somethingNew={"x": 1})
    d["fields"] = [dict(f, defaultValue="1") for f in d["fields"]]  # type: ignore[union-attr]
    assert decode_schema(json.dumps(d).encode(), "p").id == 0


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{",
        b"[]",
        b"\xff\xfe",
        b'{"id": 0}',
        b'{"id": "x", "fields": []}',
        b'{"id": 0, "fields": [{"id": 0, "name": "a", "type": "NOPE"}]}',
    ],
)
def test_corrupt_schema(data: bytes) -> None:
    with pytest.raises(CorruptMetadataError) as ei:
        decode_schema(data, "/t/schema/schema-0")
    assert ei.value.path == "/t/schema/schema-0"


SNAP = {
    "version": 3,
    "id": 4,
    "schemaId": 0,
    "baseManifestList": "manifest-list-a-0",
    "deltaManifestList": "manifest-list-a-1",
    "changelogManifestList": None,
    "commitUser": "u",
    "commitIdentifier": 9223372036854775807,
    "commitKind": "APPEND",
    "timeMillis": 1,
    "logOffsets": {},
    "totalRecordCount": 5,
    "deltaRecordCount": 5,
    "changelogRecordCount": 0,
}


def test_snapshot_every_version_fields() -> None:
    d = dict(
        SNAP,
        watermark=-9223372036854775808,
        baseManifestListSize=10,
        properties={"run": "x"},
        nextRowId=3,
        uuid="u-u",
        operation="WRITE",
        writerVersion="python-2.1.0",
        future={"a": [1]},
    )
    s = decode_snapshot(json.dumps(d).encode(), "snapshot-4", expected_id=4)
    assert s.commit_kind is CommitKind.APPEND and s.properties == {"run": "x"}
    again = decode_snapshot(s.to_json_bytes(), "x", 4)
    assert again == s
    assert json.loads(s.to_json_bytes())["changelogManifestList"] is None


def test_snapshot_id_must_match_file_name() -> None:
    with pytest.raises(CorruptMetadataError, match="differs"):
        decode_snapshot(json.dumps(SNAP).encode(), "snapshot-5", expected_id=5)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"null",
        b"{}",
        b"garbage",
        json.dumps(dict(SNAP, commitKind="MERGE")).encode(),
        json.dumps({k: v for k, v in SNAP.items() if k != "commitUser"}).encode(),
    ],
)
def test_corrupt_snapshot(data: bytes) -> None:
    with pytest.raises(CorruptMetadataError) as ei:
        decode_snapshot(data, "/t/snapshot/snapshot-4", 4)
    assert ei.value.path == "/t/snapshot/snapshot-4"
