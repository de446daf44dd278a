"""Manifest lists: ``manifest/manifest-list-<uuid>-<n>`` (Avro), one ManifestFileMeta per row.

Mirrors ``org.apache.paimon.manifest.ManifestFileMeta`` / ``ManifestFileMetaSerializer`` (§4.3).
Reading is by field name: the six Java 0.9 fields are required, the 1.1+ ones
(``_MIN/_MAX_BUCKET``, ``_MIN/_MAX_LEVEL``, ``_MIN/_MAX_ROW_ID``) optional, pypaimon's extras
(``_TOTAL_BUCKETS``, ``_EXTRA_FILES``) are ignored. Writing emits the six 0.9 fields plus the
optional ones as null-first unions with null defaults, with Java's record names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from paimon_core.errors import CorruptMetadataError
from paimon_core.spec._avro import check_int32, encode_container
from paimon_core.spec._avro_decode import decode_columns
from paimon_core.spec._bulk import frozen_factory, gc_paused
from paimon_core.spec.stats import SimpleStats, simple_stats_avro_schema, stats_from_columns

__all__ = [
    "MANIFEST_FILE_META_AVRO_SCHEMA",
    "MANIFEST_LIST_VERSION",
    "ManifestFileMeta",
    "decode_manifest_list",
    "encode_manifest_list",
]

#: ``_VERSION`` of every ManifestFileMeta row (permanent format identifier).
MANIFEST_LIST_VERSION = 2


@dataclass(frozen=True, slots=True)
class ManifestFileMeta:
    """One manifest file of a manifest list (``org.apache.paimon.manifest.ManifestFileMeta``).

    ``partition_stats`` describe the ``_PARTITION`` rows of all entries of the manifest; the
    bucket/level/row-id ranges are None when unknown (always for files written by Java 0.9).
    """

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None


def _opt(name: str, avro_type: str) -> dict[str, Any]:
    return {"name": name, "type": ["null", avro_type], "default": None}


#: The writer schema of :func:`encode_manifest_list`.
MANIFEST_FILE_META_AVRO_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "record",
    "namespace": "org.apache.paimon.avro.generated",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": simple_stats_avro_schema("record__PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        _opt("_MIN_BUCKET", "int"),
        _opt("_MAX_BUCKET", "int"),
        _opt("_MIN_LEVEL", "int"),
        _opt("_MAX_LEVEL", "int"),
        _opt("_MIN_ROW_ID", "long"),
        _opt("_MAX_ROW_ID", "long"),
    ],
}

_STATS_DESC = (
    "record",
    {
        "_MIN_VALUES": ("bytes", True),
        "_MAX_VALUES": ("bytes", True),
        "_NULL_COUNTS": (("array", "long", True), False),
    },
)
_META_DESC = (
    "record",
    {
        "_VERSION": ("int", True),
        "_FILE_NAME": ("string", True),
        "_FILE_SIZE": ("long", True),
        "_NUM_ADDED_FILES": ("long", True),
        "_NUM_DELETED_FILES": ("long", True),
        "_PARTITION_STATS": (_STATS_DESC, True),
        "_SCHEMA_ID": ("long", True),
        "_MIN_BUCKET": ("int", False),
        "_MAX_BUCKET": ("int", False),
        "_MIN_LEVEL": ("int", False),
        "_MAX_LEVEL": ("int", False),
        "_MIN_ROW_ID": ("long", False),
        "_MAX_ROW_ID": ("long", False),
    },
)


_build_metas = frozen_factory(ManifestFileMeta)


def _decode_manifest_list(data: bytes, path: str) -> list[ManifestFileMeta]:
    """Decoding part of :func:`decode_manifest_list` (run with the collector paused)."""
    _, n, cols = decode_columns(data, path, _META_DESC)
    bad = set(cols["_VERSION"]) - {MANIFEST_LIST_VERSION}
    if bad:
        raise CorruptMetadataError(
            path, f"unsupported _VERSION {min(bad)} (expected {MANIFEST_LIST_VERSION})"
        )
    none = [None] * n
    return _build_metas(
        cols["_FILE_NAME"],
        cols["_FILE_SIZE"],
        cols["_NUM_ADDED_FILES"],
        cols["_NUM_DELETED_FILES"],
        stats_from_columns(cols["_PARTITION_STATS"], n),
        cols["_SCHEMA_ID"],
        *(
            cols.get(name, none)
            for name in (
                "_MIN_BUCKET",
                "_MAX_BUCKET",
                "_MIN_LEVEL",
                "_MAX_LEVEL",
                "_MIN_ROW_ID",
                "_MAX_ROW_ID",
            )
        ),
    )


def decode_manifest_list(data: bytes, path: str) -> list[ManifestFileMeta]:
    """Decode a manifest list (``ManifestList.read``); an empty list (zero rows) is valid.

    Raises:
        CorruptMetadataError: empty/truncated/malformed file, missing required field, or
            ``_VERSION`` other than 2.
    """
    with gc_paused():
        return _decode_manifest_list(data, path)


def encode_manifest_list(
    metas: Sequence[ManifestFileMeta], *, codec: str = "zstandard", level: int | None = None
) -> bytes:
    """Encode a manifest list readable by Java 0.9, Java 1.x+ and pypaimon 2.1.

    Args:
        metas: the rows, in order (may be empty: a base list of a first snapshot).
        codec: Avro codec (default ``zstandard``).
        level: compression level.

    Raises:
        SchemaError: a value does not fit its Avro type.
    """
    for name in ("min_bucket", "max_bucket", "min_level", "max_level"):
        check_int32((getattr(m, name) for m in metas), name, nullable=True)
    with gc_paused():
        records = [
            {
                "_VERSION": MANIFEST_LIST_VERSION,
                "_FILE_NAME": m.file_name,
                "_FILE_SIZE": m.file_size,
                "_NUM_ADDED_FILES": m.num_added_files,
                "_NUM_DELETED_FILES": m.num_deleted_files,
                "_PARTITION_STATS": m.partition_stats.to_avro(),
                "_SCHEMA_ID": m.schema_id,
                "_MIN_BUCKET": m.min_bucket,
                "_MAX_BUCKET": m.max_bucket,
                "_MIN_LEVEL": m.min_level,
                "_MAX_LEVEL": m.max_level,
                "_MIN_ROW_ID": m.min_row_id,
                "_MAX_ROW_ID": m.max_row_id,
            }
            for m in metas
        ]
        return encode_container(MANIFEST_FILE_META_AVRO_SCHEMA, records, codec=codec, level=level)
