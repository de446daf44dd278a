"""Index manifests: ``manifest/index-manifest-<uuid>-<n>`` (Avro), one IndexManifestEntry per row.

Mirrors ``org.apache.paimon.manifest.IndexManifestEntry`` / ``IndexManifestEntrySerializer``,
``org.apache.paimon.index.IndexFileMeta`` and ``DeletionVectorMeta`` (§4.8). Rows carry
``_VERSION = 1``. Index types: ``HASH`` (dynamic bucket) and ``DELETION_VECTORS``.

Reading accepts the Java 0.9 field set and HEAD's optional extras (``_CARDINALITY`` inside the
ranges, ``_EXTERNAL_PATH``; ``_GLOBAL_INDEX`` is read over and dropped). Writing emits the 0.9
field set plus the nullable ``_CARDINALITY`` and ``_EXTERNAL_PATH`` (skipped by 0.9 readers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from paimon_core.errors import CorruptMetadataError
from paimon_core.spec._avro import check_int32, encode_container
from paimon_core.spec._avro_decode import decode_columns
from paimon_core.spec._bulk import gc_paused
from paimon_core.spec.manifest import FileKind

__all__ = [
    "DELETION_VECTORS_INDEX",
    "HASH_INDEX",
    "INDEX_MANIFEST_AVRO_SCHEMA",
    "INDEX_MANIFEST_VERSION",
    "DeletionVectorMeta",
    "IndexFileMeta",
    "IndexManifestEntry",
    "combine_index_entries",
    "decode_index_manifest",
    "encode_index_manifest",
]

#: ``_VERSION`` of every IndexManifestEntry row.
INDEX_MANIFEST_VERSION = 1
#: ``_INDEX_TYPE`` of deletion-vector index files
#: (``DeletionVectorsIndexFile.DELETION_VECTORS_INDEX``).
DELETION_VECTORS_INDEX = "DELETION_VECTORS"
#: ``_INDEX_TYPE`` of dynamic-bucket hash index files (``HashIndexFile.HASH_INDEX``).
HASH_INDEX = "HASH"


@dataclass(frozen=True, slots=True)
class DeletionVectorMeta:
    """Where one data file's deletion vector lives in a DV index file (``DeletionVectorMeta``).

    ``offset`` is the position of the vector's 4-byte length field in the index file;
    ``length`` is the length of the serialized vector (magic + bitmap) for the 32-bit format
    (for HEAD's 64-bit format: length field + magic + bitmap + CRC); ``cardinality`` is the
    number of deleted rows (None when written by Java 0.9).
    """

    data_file_name: str
    offset: int
    length: int
    cardinality: int | None = None


@dataclass(frozen=True, slots=True)
class IndexManifestEntry:
    """One index file of a bucket (``org.apache.paimon.manifest.IndexManifestEntry``)."""

    kind: FileKind
    partition: bytes
    bucket: int
    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorMeta, ...] | None
    external_path: str | None = None


@dataclass(frozen=True, slots=True)
class IndexFileMeta:
    """An index file a writer produced or replaced (``org.apache.paimon.index.IndexFileMeta``,
    as in a commit message's ``IndexIncrement``): HASH files, or DELETION_VECTORS files with
    the range of every data file's vector (``dv_ranges``)."""

    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorMeta, ...] | None = None

    def entry(self, kind: FileKind, partition: bytes, bucket: int) -> IndexManifestEntry:
        return IndexManifestEntry(kind, partition, bucket, self.index_type, self.file_name,
                                  self.file_size, self.row_count, self.dv_ranges)


def combine_index_entries(
    previous: Sequence[IndexManifestEntry], changes: Sequence[IndexManifestEntry]
) -> list[IndexManifestEntry]:
    """The index manifest after ``changes`` (``IndexManifestFileHandler.CommonBucketCombiner``):
    per (partition, bucket, index type) one HASH entry; DELETE changes remove the previous
    entry first, then ADD changes replace it. Other index types (deletion vectors, which
    unaware-bucket tables may hold several of per bucket) are matched by file name too. The
    result keeps the previous order, new ones last.

    Raises:
        CorruptMetadataError: a previous entry that is not an ADD.
    """
    out: dict[tuple[bytes, int, str, str | None], IndexManifestEntry] = {}
    for e in previous:
        if e.kind is not FileKind.ADD:
            raise CorruptMetadataError(e.file_name, "an index manifest holds a DELETE entry")
        out[_identifier(e)] = e
    for e in changes:
        if e.kind is FileKind.DELETE:
            out.pop(_identifier(e), None)
    for e in changes:
        if e.kind is FileKind.ADD:
            out[_identifier(e)] = e
    return list(out.values())


def _identifier(e: IndexManifestEntry) -> tuple[bytes, int, str, str | None]:
    return (e.partition, e.bucket, e.index_type,
            None if e.index_type == HASH_INDEX else e.file_name)


_DV_RECORD: dict[str, Any] = {
    "type": "record",
    "name": "record__DELETIONS_VECTORS_RANGES",
    "fields": [
        {"name": "f0", "type": "string"},
        {"name": "f1", "type": "int"},
        {"name": "f2", "type": "int"},
        {"name": "_CARDINALITY", "type": ["null", "long"], "default": None},
    ],
}

#: The writer schema of :func:`encode_index_manifest` (Java 0.9's, plus two nullable fields).
INDEX_MANIFEST_AVRO_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "record",
    "namespace": "org.apache.paimon.avro.generated",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {
            "name": "_DELETIONS_VECTORS_RANGES",
            "type": ["null", {"type": "array", "items": ["null", _DV_RECORD]}],
            "default": None,
        },
        {"name": "_EXTERNAL_PATH", "type": ["null", "string"], "default": None},
    ],
}

_DV_DESC = (
    "record",
    {
        "f0": ("string", True),
        "f1": ("int", True),
        "f2": ("int", True),
        "_CARDINALITY": ("long", False),
    },
)
_ENTRY_DESC = (
    "record",
    {
        "_VERSION": ("int", True),
        "_KIND": ("int", True),
        "_PARTITION": ("bytes", True),
        "_BUCKET": ("int", True),
        "_INDEX_TYPE": ("string", True),
        "_FILE_NAME": ("string", True),
        "_FILE_SIZE": ("long", True),
        "_ROW_COUNT": ("long", True),
        "_DELETIONS_VECTORS_RANGES": (("array", _DV_DESC, False), False),
        "_EXTERNAL_PATH": ("string", False),
    },
)

_KINDS: dict[int, FileKind] = {k.value: k for k in FileKind}


def _ranges(value: list[dict[str, Any]] | None) -> tuple[DeletionVectorMeta, ...] | None:
    if value is None:
        return None
    return tuple(
        DeletionVectorMeta(d["f0"], d["f1"], d["f2"], d.get("_CARDINALITY")) for d in value
    )


def _decode_index_manifest(data: bytes, path: str) -> list[IndexManifestEntry]:
    """Decoding part of :func:`decode_index_manifest` (run with the collector paused)."""
    _, n, cols = decode_columns(data, path, _ENTRY_DESC)
    bad = set(cols["_VERSION"]) - {INDEX_MANIFEST_VERSION}
    if bad:
        raise CorruptMetadataError(
            path, f"unsupported _VERSION {min(bad)} (expected {INDEX_MANIFEST_VERSION})"
        )
    none = [None] * n
    try:
        return [
            IndexManifestEntry(
                _KINDS[kind], partition, bucket, index_type, name, size, rows, _ranges(ranges), ext
            )
            for kind, partition, bucket, index_type, name, size, rows, ranges, ext in zip(
                cols["_KIND"],
                cols["_PARTITION"],
                cols["_BUCKET"],
                cols["_INDEX_TYPE"],
                cols["_FILE_NAME"],
                cols["_FILE_SIZE"],
                cols["_ROW_COUNT"],
                cols.get("_DELETIONS_VECTORS_RANGES", none),
                cols.get("_EXTERNAL_PATH", none),
            )
        ]
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptMetadataError(path, f"invalid value ({type(e).__name__}: {e})") from e


def decode_index_manifest(data: bytes, path: str) -> list[IndexManifestEntry]:
    """Decode an index manifest (``IndexManifestFile.read``).

    Raises:
        CorruptMetadataError: empty/truncated/malformed file, a missing required field, an
            unknown ``_KIND`` or ``_VERSION`` other than 1.
    """
    with gc_paused():
        return _decode_index_manifest(data, path)


def encode_index_manifest(
    entries: Sequence[IndexManifestEntry], *, codec: str = "zstandard", level: int | None = None
) -> bytes:
    """Encode an index manifest readable by Java 0.9, Java 1.x+ and pypaimon 2.1.

    Raises:
        SchemaError: a value does not fit its Avro type (e.g. a DV offset beyond int32).
    """
    check_int32((e.bucket for e in entries), "bucket")
    ranges = [d for e in entries for d in e.dv_ranges or ()]
    check_int32((d.offset for d in ranges), "deletion vector offset")
    check_int32((d.length for d in ranges), "deletion vector length")
    with gc_paused():
        records = [
            {
                "_VERSION": INDEX_MANIFEST_VERSION,
                "_KIND": int(e.kind),
                "_PARTITION": e.partition,
                "_BUCKET": e.bucket,
                "_INDEX_TYPE": e.index_type,
                "_FILE_NAME": e.file_name,
                "_FILE_SIZE": e.file_size,
                "_ROW_COUNT": e.row_count,
                "_DELETIONS_VECTORS_RANGES": None
                if e.dv_ranges is None
                else [
                    {
                        "f0": d.data_file_name,
                        "f1": d.offset,
                        "f2": d.length,
                        "_CARDINALITY": d.cardinality,
                    }
                    for d in e.dv_ranges
                ],
                "_EXTERNAL_PATH": e.external_path,
            }
            for e in entries
        ]
        return encode_container(INDEX_MANIFEST_AVRO_SCHEMA, records, codec=codec, level=level)
