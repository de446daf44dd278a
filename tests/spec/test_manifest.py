"""Manifest files: golden files from Java 0.9 and pypaimon 2.1, both layouts, round trips."""

from __future__ import annotations

import copy
import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_core.errors import CorruptMetadataError, SchemaError
from paimon_core.spec import _avro
from paimon_core.spec.manifest import (
    MANIFEST_ENTRY_AVRO_SCHEMA,
    DataFileMeta,
    FileKind,
    FileSource,
    ManifestEntry,
    decode_manifest,
    encode_manifest,
)
from paimon_core.spec.stats import EMPTY_ROW, EMPTY_STATS, SimpleStats, unknown_stats
from tests.profiles import examples

DATA = Path(__file__).parent / "data"
PT_X = bytes.fromhex("00000001" "0000000000000000" "7800000000000081")  # partition ('x')
PT_Y = bytes.fromhex("00000001" "0000000000000000" "7900000000000081")


def _key(k: int) -> bytes:
    return bytes.fromhex("00000001" "0000000000000000") + k.to_bytes(8, "little")


# ---- golden files ---------------------------------------------------------------------------


def test_java09_manifest() -> None:
    """Written by Java 0.9 (PK table, bucket=2, deletion vectors, a compaction): 16-field
    DataFileMeta layout, DELETE entries, levels, FileSource COMPACT."""
    entries = decode_manifest((DATA / "java09_manifest.avro").read_bytes(), "m")
    assert [(e.kind, e.partition, e.bucket, e.file.level) for e in entries] == [
        (FileKind.DELETE, PT_X, 0, 0),
        (FileKind.ADD, PT_X, 0, 4),
        (FileKind.DELETE, PT_Y, 0, 0),
        (FileKind.ADD, PT_Y, 0, 5),
        (FileKind.DELETE, PT_Y, 1, 5),
        (FileKind.DELETE, PT_Y, 1, 0),
        (FileKind.ADD, PT_Y, 1, 5),
    ]
    assert {e.total_buckets for e in entries} == {2}
    first = entries[0]
    vmin = bytes.fromhex(
        "00000003" "0000000000000000" "0100000000000000" "6132000000000082" "7800000000000081"
    )
    assert first.file == DataFileMeta(
        file_name="data-e532becd-c9aa-4a46-89d7-f351870d381b-0.parquet",
        file_size=1151,
        row_count=1,
        min_key=_key(1),
        max_key=_key(1),
        key_stats=SimpleStats(_key(1), _key(1), (0,)),
        value_stats=SimpleStats(vmin, vmin, (0, 0, 0)),
        min_sequence_number=2,
        max_sequence_number=2,
        schema_id=0,
        level=0,
        extra_files=(),
        creation_time=1795307445611,
        delete_row_count=0,
        embedded_index=None,
        file_source=FileSource.APPEND,
        value_stats_cols=None,
        external_path=None,
        first_row_id=None,
        write_cols=None,
    )
    assert entries[1].file == DataFileMeta(**{**_fields(first.file), "level": 4})
    assert entries[6].file.file_source is FileSource.COMPACT
    assert entries[2].file.value_stats.null_counts == (0, 1, 0)
    # a DELETE repeats its ADD's identity
    assert entries[0].identifier() != entries[1].identifier()  # different level
    assert entries[0].identifier() == (PT_X, 0, 0, first.file.file_name, (), None, None)


def _fields(f: DataFileMeta) -> dict[str, Any]:
    return {name: getattr(f, name) for name in DataFileMeta.__dataclass_fields__}


def test_pypaimon21_manifest() -> None:
    """Written by pypaimon 2.1 (append table, unaware bucket): 21-field layout, dense empty
    value stats (``_VALUE_STATS_COLS = []``), ``_WRITE_COLS_SEQUENCES`` read over."""
    entries = decode_manifest((DATA / "pypaimon21_manifest.avro").read_bytes(), "m")
    assert len(entries) == 2
    e = entries[0]
    assert (e.kind, e.partition, e.bucket, e.total_buckets) == (FileKind.ADD, PT_X, 0, -1)
    assert e.file.file_name == "data-3638beda-9570-4d92-91fa-7720dfab9f8a-0.parquet"
    assert (e.file.file_size, e.file.row_count, e.file.creation_time) == (944, 2, 1795307459217)
    assert e.file.min_key == e.file.max_key == EMPTY_ROW
    assert e.file.key_stats == e.file.value_stats == EMPTY_STATS
    assert e.file.value_stats_cols == ()
    assert e.file.file_source is FileSource.APPEND
    assert e.file.delete_row_count == 0
    assert entries[1].partition == PT_Y


# ---- both layouts, built here from the schemas in the Java sources ------------------------

# Java 0.9 DataFileMeta.SCHEMA / ManifestEntry.SCHEMA as AvroSchemaConverter renders them
# (identical to the header of tests/spec/data/java09_manifest.avro).
JAVA09_SCHEMA = json.loads(
    fastavro.reader(io.BytesIO((DATA / "java09_manifest.avro").read_bytes())).metadata[
        "avro.schema"
    ]
)


def test_java09_schema_fields() -> None:
    names = [f["name"] for f in JAVA09_SCHEMA["fields"][5]["type"]["fields"]]
    assert names == [
        "_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY", "_KEY_STATS",
        "_VALUE_STATS", "_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID", "_LEVEL",
        "_EXTRA_FILES", "_CREATION_TIME", "_DELETE_ROW_COUNT", "_EMBEDDED_FILE_INDEX",
        "_FILE_SOURCE",
    ]  # fmt: skip


def _record(**file: Any) -> dict[str, Any]:
    stats = {"_MIN_VALUES": EMPTY_ROW, "_MAX_VALUES": EMPTY_ROW, "_NULL_COUNTS": []}
    f = {
        "_FILE_NAME": "data-1.parquet",
        "_FILE_SIZE": 10,
        "_ROW_COUNT": 3,
        "_MIN_KEY": EMPTY_ROW,
        "_MAX_KEY": EMPTY_ROW,
        "_KEY_STATS": stats,
        "_VALUE_STATS": stats,
        "_MIN_SEQUENCE_NUMBER": 0,
        "_MAX_SEQUENCE_NUMBER": 2,
        "_SCHEMA_ID": 0,
        "_LEVEL": 0,
        "_EXTRA_FILES": ["data-1.parquet.index"],
        "_CREATION_TIME": 1700000000123,
        "_DELETE_ROW_COUNT": 1,
        "_EMBEDDED_FILE_INDEX": None,
        "_FILE_SOURCE": 1,
        **file,
    }
    return {
        "_VERSION": 2,
        "_KIND": 0,
        "_PARTITION": EMPTY_ROW,
        "_BUCKET": 3,
        "_TOTAL_BUCKETS": 4,
        "_FILE": f,
    }


def _write(schema: dict[str, Any], records: list[dict[str, Any]], codec: str = "null") -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(copy.deepcopy(schema)), records, codec=codec)
    return buf.getvalue()


def test_decode_java09_layout() -> None:
    (e,) = decode_manifest(_write(JAVA09_SCHEMA, [_record()]), "m")
    assert e == ManifestEntry(
        FileKind.ADD,
        EMPTY_ROW,
        3,
        4,
        DataFileMeta(
            "data-1.parquet", 10, 3, EMPTY_ROW, EMPTY_ROW, EMPTY_STATS, EMPTY_STATS, 0, 2, 0, 0,
            ("data-1.parquet.index",), 1700000000123, 1, None, FileSource.COMPACT,
            None, None, None, None,
        ),
    )  # fmt: skip


def test_decode_head_layout_with_extras() -> None:
    schema = copy.deepcopy(MANIFEST_ENTRY_AVRO_SCHEMA)
    schema["fields"][5]["type"]["fields"].append(
        {"name": "_WRITE_COLS_SEQUENCES", "type": ["null", {"type": "array", "items": "long"}]}
    )
    schema["fields"].append({"name": "_SOMETHING_NEW", "type": ["null", "string"]})
    rec = _record(
        _VALUE_STATS_COLS=["a"],
        _EXTERNAL_PATH="s3://b/x",
        _FIRST_ROW_ID=7,
        _WRITE_COLS=["a", "b"],
        _WRITE_COLS_SEQUENCES=[1, 2],
    )
    rec["_SOMETHING_NEW"] = "ignored"
    (e,) = decode_manifest(_write(schema, [rec]), "m")
    assert e.file.value_stats_cols == ("a",)
    assert e.file.external_path == "s3://b/x"
    assert e.file.first_row_id == 7
    assert e.file.write_cols == ("a", "b")


def test_reordered_fields_and_pypaimon_names() -> None:
    """Matching is by name: another field order and other record names decode the same."""
    schema = copy.deepcopy(JAVA09_SCHEMA)
    schema["fields"].reverse()
    schema["name"] = "ManifestEntry"
    schema["fields"][0]["type"]["name"] = "DataFileMeta"
    assert schema["fields"][0]["name"] == "_FILE"
    assert decode_manifest(_write(schema, [_record()]), "m") == decode_manifest(
        _write(JAVA09_SCHEMA, [_record()]), "m"
    )


# ---- the encoder --------------------------------------------------------------------------


def _entry(i: int = 0, **file: Any) -> ManifestEntry:
    f = DataFileMeta(
        file_name=f"data-{i}.parquet",
        file_size=100 + i,
        row_count=5,
        min_key=_key(1),
        max_key=_key(9),
        key_stats=SimpleStats(_key(1), _key(9), (0,)),
        value_stats=unknown_stats(3),
        min_sequence_number=1,
        max_sequence_number=5,
        schema_id=0,
        level=i % 3,
        extra_files=(),
        creation_time=1700000000000 + i,
        delete_row_count=0,
        embedded_index=None,
        file_source=FileSource.APPEND,
        value_stats_cols=None,
        external_path=None,
        first_row_id=None,
        write_cols=None,
    )
    return ManifestEntry(FileKind.ADD, PT_X, i % 2, 2, DataFileMeta(**{**_fields(f), **file}))


def test_encoded_schema_profile() -> None:
    """§14.3: _VERSION 2, DataFileMeta fields 0-19, null-first unions with null defaults,
    Java's record names (unique), codec zstandard."""
    data = encode_manifest([_entry(0), _entry(1)])
    reader = fastavro.reader(io.BytesIO(data))
    assert reader.codec == "zstandard"
    schema = json.loads(reader.metadata["avro.schema"])
    assert schema == MANIFEST_ENTRY_AVRO_SCHEMA
    assert (schema["name"], schema["namespace"]) == ("record", "org.apache.paimon.avro.generated")
    top = [(f["name"], f["type"]) for f in schema["fields"][:5]]
    assert top == [
        ("_VERSION", "int"), ("_KIND", "int"), ("_PARTITION", "bytes"), ("_BUCKET", "int"),
        ("_TOTAL_BUCKETS", "int"),
    ]  # fmt: skip
    file = schema["fields"][5]["type"]
    assert file["name"] == "record__FILE"
    fields = file["fields"]
    assert [f["name"] for f in fields[:16]] == [
        f["name"] for f in JAVA09_SCHEMA["fields"][5]["type"]["fields"]
    ]
    assert [f["name"] for f in fields[16:]] == [
        "_VALUE_STATS_COLS", "_EXTERNAL_PATH", "_FIRST_ROW_ID", "_WRITE_COLS",
    ]  # fmt: skip
    # the 0.9 fields are typed exactly as Java 0.9 writes them
    java_fields = JAVA09_SCHEMA["fields"][5]["type"]["fields"]
    assert fields[:5] == java_fields[:5]
    assert fields[7:16] == java_fields[7:16]
    for f in fields[12:]:
        assert f["type"][0] == "null" and f["default"] is None, f
    assert fields[5]["type"]["name"] == "record__FILE__KEY_STATS"
    assert fields[6]["type"]["name"] == "record__FILE__VALUE_STATS"
    assert fields[5]["type"]["fields"] == JAVA09_SCHEMA["fields"][5]["type"]["fields"][5][
        "type"
    ]["fields"]
    names = _record_names(schema)
    assert len(names) == len(set(names)) == 4


def _record_names(s: Any) -> list[str]:
    if isinstance(s, dict):
        own = [s["name"]] if s.get("type") == "record" else []
        return own + [n for v in s.values() for n in _record_names(v)]
    if isinstance(s, list):
        return [n for v in s for n in _record_names(v)]
    return []


def test_encoded_rows_read_by_plain_fastavro() -> None:
    entries = [_entry(0), _entry(1, value_stats_cols=("a",), extra_files=("x.index",))]
    rows = list(fastavro.reader(io.BytesIO(encode_manifest(entries, codec="null"))))
    assert [r["_VERSION"] for r in rows] == [2, 2]
    assert rows[0]["_FILE"]["_VALUE_STATS_COLS"] is None
    assert rows[1]["_FILE"]["_VALUE_STATS_COLS"] == ["a"]
    assert rows[1]["_FILE"]["_EXTRA_FILES"] == ["x.index"]
    assert rows[0]["_FILE"]["_VALUE_STATS"]["_NULL_COUNTS"] == [None, None, None]
    assert rows[0]["_FILE"]["_CREATION_TIME"].timestamp() == 1700000000.0  # timestamp-millis


def test_java_file_reencodes_identically() -> None:
    entries = decode_manifest((DATA / "java09_manifest.avro").read_bytes(), "m")
    assert decode_manifest(encode_manifest(entries), "m") == entries


def test_empty_manifest() -> None:
    assert decode_manifest(encode_manifest([]), "m") == []


def test_encode_rejects_bad_values() -> None:
    with pytest.raises(SchemaError):
        encode_manifest([_entry(0, file_size=None)])


_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)
_opt_i64 = st.none() | _i64
_names = st.text(min_size=1, max_size=20)
_rows = st.binary(max_size=40)
_stats = st.builds(
    SimpleStats, _rows, _rows, st.none() | st.lists(_opt_i64, max_size=4).map(tuple)
)
_files = st.builds(
    DataFileMeta,
    _names, _i64, _i64, _rows, _rows, _stats, _stats, _i64, _i64, _i64, _i32,
    st.lists(_names, max_size=3).map(tuple),
    _opt_i64, _opt_i64, st.none() | st.binary(max_size=10), st.none() | st.sampled_from(FileSource),
    st.none() | st.lists(_names, max_size=3).map(tuple), st.none() | _names, _opt_i64,
    st.none() | st.lists(_names, max_size=3).map(tuple),
)  # fmt: skip
_entries = st.builds(ManifestEntry, st.sampled_from(FileKind), _rows, _i32, _i32, _files)


@settings(max_examples=examples(60))
@given(st.lists(_entries, max_size=20))
def test_roundtrip(entries: list[ManifestEntry]) -> None:
    assert decode_manifest(encode_manifest(entries), "m") == entries


def test_roundtrip_many_blocks() -> None:
    entries = [_entry(i) for i in range(3000)]
    data = encode_manifest(entries)
    assert len(_avro.parse_container(data, "m").blocks) > 5
    assert decode_manifest(data, "m") == entries


def test_identifier() -> None:
    e = _entry(3, extra_files=("a",), embedded_index=b"\x01", external_path="s3://x/y")
    assert e.identifier() == (PT_X, 1, 0, "data-3.parquet", ("a",), b"\x01", "s3://x/y")
    assert hash(e.identifier()) == hash(_entry(3, extra_files=("a",), embedded_index=b"\x01",
                                                external_path="s3://x/y").identifier())


# ---- corrupt input ------------------------------------------------------------------------


PATH = "/wh/db.db/t/manifest/manifest-abc-0"


def _corrupt(data: bytes, match: str) -> None:
    with pytest.raises(CorruptMetadataError, match=match) as info:
        decode_manifest(data, PATH)
    assert info.value.path == PATH


def test_empty_truncated_garbage() -> None:
    good = encode_manifest([_entry(i) for i in range(5)])
    _corrupt(b"", "empty")
    _corrupt(good[:-20], "does not fit")
    _corrupt(good[:-5], "sync marker")
    _corrupt(good[: len(good) // 2], "corrupt")
    _corrupt(b"\x00" * 100, "magic")
    _corrupt((DATA / "java09_dv_index.bin").read_bytes(), "magic")


def test_wrong_version() -> None:
    _corrupt(_write(JAVA09_SCHEMA, [_record(), {**_record(), "_VERSION": 1}]), "_VERSION 1")
    _corrupt(_write(JAVA09_SCHEMA, [{**_record(), "_VERSION": 3}]), "_VERSION 3")


def test_unknown_codes() -> None:
    _corrupt(_write(JAVA09_SCHEMA, [{**_record(), "_KIND": 2}]), "invalid value")
    _corrupt(_write(JAVA09_SCHEMA, [_record(_FILE_SOURCE=9)]), "invalid value")


def test_schema_mismatch() -> None:
    schema = copy.deepcopy(JAVA09_SCHEMA)
    del schema["fields"][5]["type"]["fields"][0]
    rec = _record()
    del rec["_FILE"]["_FILE_NAME"]
    _corrupt(_write(schema, [rec]), "lacks required field _FILE._FILE_NAME")
    schema = copy.deepcopy(JAVA09_SCHEMA)
    schema["fields"][5]["type"]["fields"][1]["type"] = "string"
    _corrupt(_write(schema, [_record(_FILE_SIZE="10")]), "_FILE._FILE_SIZE has type")
    _corrupt(_write({"type": "record", "name": "r", "fields": []}, [{}]), "lacks required")


def test_required_field_written_nullable() -> None:
    schema = copy.deepcopy(JAVA09_SCHEMA)
    schema["fields"][5]["type"]["fields"][2]["type"] = ["null", "long"]
    assert decode_manifest(_write(schema, [_record()]), "m")[0].file.row_count == 3
    _corrupt(_write(schema, [_record(_ROW_COUNT=None)]), "_FILE._ROW_COUNT is null")
    schema = copy.deepcopy(JAVA09_SCHEMA)
    schema["fields"][5]["type"]["fields"][11]["type"]["items"] = ["null", "string"]
    _corrupt(_write(schema, [_record(_EXTRA_FILES=[None])]), r"_EXTRA_FILES\.\[\] is null")


def test_encode_rejects_values_avro_int_cannot_hold() -> None:
    """fastavro would write these silently; Java would then read garbage."""
    for bad in (2**31, -(2**31) - 1, True, 1.0):
        with pytest.raises(SchemaError, match="32-bit"):
            encode_manifest([dataclasses.replace(_entry(0), bucket=bad)])
    with pytest.raises(SchemaError, match="level"):
        encode_manifest([_entry(0, level=2**40)])
    with pytest.raises(SchemaError):
        encode_manifest([_entry(0, file_size=2**64)])


@pytest.mark.parametrize("n", [3, 600])  # lock-step path and fastavro path
def test_top_level_nullable_record(n: int) -> None:
    """A writer may wrap the row schema in ["null", record] (pypaimon handles that for Rust)."""
    schema = ["null", JAVA09_SCHEMA]
    records = [_record(_FILE_NAME=f"f{i}") for i in range(n)]
    entries = decode_manifest(_write(schema, records), "m")  # type: ignore[arg-type]
    assert [e.file.file_name for e in entries] == [f"f{i}" for i in range(n)]
    _corrupt(_write(schema, [_record(), None]), "not a record|null top-level")  # type: ignore[arg-type, list-item]
