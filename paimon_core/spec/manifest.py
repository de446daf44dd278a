"""Manifest files: ``manifest/manifest-<uuid>-<n>`` (Avro), one ManifestEntry per row.

Mirrors ``org.apache.paimon.manifest.ManifestEntry`` / ``ManifestEntrySerializer`` and
``org.apache.paimon.io.DataFileMeta`` / ``DataFileMetaSerializer`` (spec §4.4, §4.5).

Reading matches fields by name, so both layouts decode:

* Java 0.9: ``_FILE`` has fields 0-15 (up to ``_FILE_SOURCE``);
* Java 1.x/2.x and pypaimon 2.1: fields 16-20 appended (``_VALUE_STATS_COLS``,
  ``_EXTERNAL_PATH``, ``_FIRST_ROW_ID``, ``_WRITE_COLS``, ``_WRITE_COLS_SEQUENCES``; the last one
  is read over and dropped).

Writing follows the "write for both" profile (§14.3): codec ``zstandard``, ``_VERSION`` 2,
DataFileMeta fields 0-19 with null-first unions and null defaults, Java's record names.
"""

from __future__ import annotations

import base64
import enum
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from paimon_core.errors import CorruptMetadataError
from paimon_core.spec._avro import AvroContainer, check_int32, encode_container
from paimon_core.spec._avro_columns import Malformed, Select
from paimon_core.spec._avro_decode import BlockFilter, decode_columns, decode_columns_batch
from paimon_core.spec._bulk import frozen_factory, gc_paused
from paimon_core.spec.stats import SimpleStats, simple_stats_avro_schema, stats_from_columns

__all__ = [
    "MANIFEST_ENTRY_AVRO_SCHEMA",
    "MANIFEST_VERSION",
    "DataFileMeta",
    "EntrySelect",
    "FileKind",
    "FileSource",
    "ManifestEntry",
    "decode_manifest",
    "decode_manifests",
    "encode_manifest",
]

#: Which rows of a manifest to build: a function of the ``_PARTITION``, ``_BUCKET`` and
#: ``_TOTAL_BUCKETS`` columns (one value per row) returning the ascending indices of the rows
#: to keep, or None for all of them. Only the kept rows' ``_FILE`` is decoded.
EntrySelect = Callable[[list[bytes], list[int], list[int]], "npt.NDArray[np.int64] | None"]

#: Whether a block of a manifest whose entries are ordered by partition may hold a wanted
#: row: ``(first partition, last partition, number of rows)`` of the block.
BlockRangeTest = Callable[[bytes, bytes, int], bool]

#: Header key of the block index our writer adds to manifests it wrote ordered by partition
#: values (``commit.manifest_writer.clustered``): per block, its first and last partition
#: (serialized BinaryRows), base64. Other readers ignore it (Avro keeps unknown metadata).
BLOCK_INDEX_KEY = "paimon.python.block-partition-ranges"

#: ``_VERSION`` of every ManifestEntry row (a permanent format identifier, 0.9 and HEAD).
MANIFEST_VERSION = 2


class FileKind(enum.IntEnum):
    """``org.apache.paimon.manifest.FileKind`` (``_KIND``)."""

    ADD = 0
    DELETE = 1


class FileSource(enum.IntEnum):
    """``org.apache.paimon.manifest.FileSource`` (``_FILE_SOURCE``)."""

    APPEND = 0
    COMPACT = 1


@dataclass(frozen=True, slots=True)
class DataFileMeta:
    """Metadata of one data file (``org.apache.paimon.io.DataFileMeta``, Avro record ``_FILE``).

    ``min_key``/``max_key`` are serialized BinaryRows with their 4-byte arity prefix;
    ``creation_time`` is the stored ``timestamp-millis`` long (writer-local wall clock encoded as
    UTC millis); the fields from ``delete_row_count`` on are None when absent from the file.
    """

    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...]
    creation_time: int | None
    delete_row_count: int | None
    embedded_index: bytes | None
    file_source: FileSource | None
    value_stats_cols: tuple[str, ...] | None
    external_path: str | None
    first_row_id: int | None
    write_cols: tuple[str, ...] | None


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One row of a manifest file (``org.apache.paimon.manifest.ManifestEntry``)."""

    kind: FileKind
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    def identifier(
        self,
    ) -> tuple[bytes, int, int, str, tuple[str, ...], bytes | None, str | None]:
        """Identity of the file for ADD/DELETE folding (``FileEntry.Identifier``, HEAD form).

        Returns:
            ``(partition, bucket, level, file_name, extra_files, embedded_index, external_path)``.
        """
        f = self.file
        return (
            self.partition,
            self.bucket,
            f.level,
            f.file_name,
            f.extra_files,
            f.embedded_index,
            f.external_path,
        )


# ------------------------------------------------------------------------------------------
# Avro schema written (Java naming: AvroSchemaConverter names nested records <parent>_<field>).
# ------------------------------------------------------------------------------------------

_NS = "org.apache.paimon.avro.generated"


def _opt(name: str, avro_type: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", avro_type], "default": None}


_STRING_ARRAY = {"type": "array", "items": "string"}

_DATA_FILE_META_FIELDS: list[dict[str, Any]] = [
    {"name": "_FILE_NAME", "type": "string"},
    {"name": "_FILE_SIZE", "type": "long"},
    {"name": "_ROW_COUNT", "type": "long"},
    {"name": "_MIN_KEY", "type": "bytes"},
    {"name": "_MAX_KEY", "type": "bytes"},
    {"name": "_KEY_STATS", "type": simple_stats_avro_schema("record__FILE__KEY_STATS")},
    {"name": "_VALUE_STATS", "type": simple_stats_avro_schema("record__FILE__VALUE_STATS")},
    {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
    {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
    {"name": "_SCHEMA_ID", "type": "long"},
    {"name": "_LEVEL", "type": "int"},
    {"name": "_EXTRA_FILES", "type": dict(_STRING_ARRAY)},
    _opt("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
    _opt("_DELETE_ROW_COUNT", "long"),
    _opt("_EMBEDDED_FILE_INDEX", "bytes"),
    _opt("_FILE_SOURCE", "int"),
    _opt("_VALUE_STATS_COLS", dict(_STRING_ARRAY)),
    _opt("_EXTERNAL_PATH", "string"),
    _opt("_FIRST_ROW_ID", "long"),
    _opt("_WRITE_COLS", dict(_STRING_ARRAY)),
]

#: The writer schema of :func:`encode_manifest` (readable by Java 0.9, Java 1.x+, pypaimon).
MANIFEST_ENTRY_AVRO_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "record",
    "namespace": _NS,
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {
            "name": "_FILE",
            "type": {"type": "record", "name": "record__FILE", "fields": _DATA_FILE_META_FIELDS},
        },
    ],
}

# Reader-side expectations (see paimon_core.spec._avro.check_schema).
_STATS_DESC = (
    "record",
    {
        "_MIN_VALUES": ("bytes", True),
        "_MAX_VALUES": ("bytes", True),
        "_NULL_COUNTS": (("array", "long", True), False),
    },
)
_STRINGS = ("array", "string", False)
_FILE_DESC = (
    "record",
    {
        "_FILE_NAME": ("string", True),
        "_FILE_SIZE": ("long", True),
        "_ROW_COUNT": ("long", True),
        "_MIN_KEY": ("bytes", True),
        "_MAX_KEY": ("bytes", True),
        "_KEY_STATS": (_STATS_DESC, True),
        "_VALUE_STATS": (_STATS_DESC, True),
        "_MIN_SEQUENCE_NUMBER": ("long", True),
        "_MAX_SEQUENCE_NUMBER": ("long", True),
        "_SCHEMA_ID": ("long", True),
        "_LEVEL": ("int", True),
        "_EXTRA_FILES": (_STRINGS, True),
        "_CREATION_TIME": ("long", False),
        "_DELETE_ROW_COUNT": ("long", False),
        "_EMBEDDED_FILE_INDEX": ("bytes", False),
        "_FILE_SOURCE": ("int", False),
        "_VALUE_STATS_COLS": (_STRINGS, False),
        "_EXTERNAL_PATH": ("string", False),
        "_FIRST_ROW_ID": ("long", False),
        "_WRITE_COLS": (_STRINGS, False),
    },
)
_ENTRY_DESC = (
    "record",
    {
        "_VERSION": ("int", True),
        "_KIND": ("int", True),
        "_PARTITION": ("bytes", True),
        "_BUCKET": ("int", True),
        "_TOTAL_BUCKETS": ("int", True),
        "_FILE": (_FILE_DESC, True),
    },
)

_KINDS: dict[int, FileKind] = {k.value: k for k in FileKind}
_SOURCES: dict[int | None, FileSource | None] = {s.value: s for s in FileSource}
_SOURCES[None] = None

_build_files = frozen_factory(DataFileMeta)
_build_entries = frozen_factory(ManifestEntry)


def _optional(cols: dict[str, Any], name: str, n: int) -> list[Any]:
    col = cols.get(name)
    return [None] * n if col is None else col


def _tuples(values: list[list[str] | None]) -> list[tuple[str, ...] | None]:
    return [None if v is None else tuple(v) for v in values]


def data_files_from_columns(f: dict[str, Any], n: int) -> list[DataFileMeta]:
    """Build DataFileMetas from the decoded columns of ``_FILE`` records (no schema checks)."""
    return _build_files(
        f["_FILE_NAME"],
        f["_FILE_SIZE"],
        f["_ROW_COUNT"],
        f["_MIN_KEY"],
        f["_MAX_KEY"],
        stats_from_columns(f["_KEY_STATS"], n),
        stats_from_columns(f["_VALUE_STATS"], n),
        f["_MIN_SEQUENCE_NUMBER"],
        f["_MAX_SEQUENCE_NUMBER"],
        f["_SCHEMA_ID"],
        f["_LEVEL"],
        [tuple(v) for v in f["_EXTRA_FILES"]],
        _optional(f, "_CREATION_TIME", n),
        _optional(f, "_DELETE_ROW_COUNT", n),
        _optional(f, "_EMBEDDED_FILE_INDEX", n),
        [_SOURCES[v] for v in _optional(f, "_FILE_SOURCE", n)],
        _tuples(_optional(f, "_VALUE_STATS_COLS", n)),
        _optional(f, "_EXTERNAL_PATH", n),
        _optional(f, "_FIRST_ROW_ID", n),
        _tuples(_optional(f, "_WRITE_COLS", n)),
    )


def data_file_to_avro(f: DataFileMeta) -> dict[str, Any]:
    """The ``_FILE`` Avro record of a :class:`DataFileMeta` (fields 0-19)."""
    return {
        "_FILE_NAME": f.file_name,
        "_FILE_SIZE": f.file_size,
        "_ROW_COUNT": f.row_count,
        "_MIN_KEY": f.min_key,
        "_MAX_KEY": f.max_key,
        "_KEY_STATS": f.key_stats.to_avro(),
        "_VALUE_STATS": f.value_stats.to_avro(),
        "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
        "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
        "_SCHEMA_ID": f.schema_id,
        "_LEVEL": f.level,
        "_EXTRA_FILES": list(f.extra_files),
        "_CREATION_TIME": f.creation_time,
        "_DELETE_ROW_COUNT": f.delete_row_count,
        "_EMBEDDED_FILE_INDEX": f.embedded_index,
        "_FILE_SOURCE": None if f.file_source is None else int(f.file_source),
        "_VALUE_STATS_COLS": None if f.value_stats_cols is None else list(f.value_stats_cols),
        "_EXTERNAL_PATH": f.external_path,
        "_FIRST_ROW_ID": f.first_row_id,
        "_WRITE_COLS": None if f.write_cols is None else list(f.write_cols),
    }


_SELECT_FIELDS = ("_VERSION", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS")


def _row_select(select: EntrySelect | None) -> Select | None:
    """``select`` as the decoder's row selection (every row's ``_VERSION`` checked first)."""
    if select is None:
        return None
    pick = select

    def rows(cols: dict[str, Any]) -> npt.NDArray[np.int64] | None:
        bad = sorted(set(cols["_VERSION"]) - {MANIFEST_VERSION})
        if bad:  # raised as CorruptMetadataError naming the file
            raise Malformed(f"unsupported _VERSION {bad[0]} (expected {MANIFEST_VERSION})")
        return pick(cols["_PARTITION"], cols["_BUCKET"], cols["_TOTAL_BUCKETS"])

    return (_SELECT_FIELDS, rows)


def _entries(n: int, cols: dict[str, Any], path: str) -> list[ManifestEntry]:
    """Build the entries of decoded columns (run with the collector paused)."""
    _check_versions(cols["_VERSION"], path)
    try:
        kinds = [_KINDS[k] for k in cols["_KIND"]]
        files = data_files_from_columns(cols["_FILE"], n)
    except (KeyError, TypeError, ValueError) as e:
        reason = f"invalid value ({type(e).__name__}: {e})"
        raise CorruptMetadataError(path, reason) from e
    return _build_entries(kinds, cols["_PARTITION"], cols["_BUCKET"], cols["_TOTAL_BUCKETS"], files)


def _check_versions(versions: list[int], path: str) -> None:
    bad = sorted(set(versions) - {MANIFEST_VERSION})
    if bad:
        raise CorruptMetadataError(
            path, f"unsupported _VERSION {bad[0]} (expected {MANIFEST_VERSION})"
        )


def decode_manifests(
    files: Sequence[tuple[bytes, str]],
    select: EntrySelect | None = None,
    blocks: BlockRangeTest | None = None,
) -> Iterator[list[ManifestEntry]]:
    """:func:`decode_manifest` of each ``(data, path)`` in turn, the manifests decoded
    together (one lock-step pass for many files, see ``_avro_decode.decode_columns_batch``)."""
    decoded = decode_columns_batch(files, _ENTRY_DESC, _row_select(select), _blocks_kept(blocks))
    for _, path in files:
        with gc_paused():
            n, cols = next(decoded)
            entries = _entries(n, cols, path)
        yield entries


def decode_manifest(
    data: bytes,
    path: str,
    select: EntrySelect | None = None,
    blocks: BlockRangeTest | None = None,
) -> list[ManifestEntry]:
    """Decode a manifest file (``ManifestFile.read`` / ``ManifestEntrySerializer.fromRow``).

    Args:
        data: the whole file.
        path: its path, for error messages.
        select: build only the rows it keeps (Java's entry row filter, applied to the
            partition and bucket before the rest of the row is read).
        blocks: in a manifest with a :data:`BLOCK_INDEX_KEY` index, only the blocks whose
            partition range it accepts are decompressed and decoded.

    Returns:
        The entries in file order (the kept ones).

    Raises:
        CorruptMetadataError: empty, truncated or malformed file, a missing required field,
            an unknown ``_KIND``/``_FILE_SOURCE``, or ``_VERSION`` other than 2.
    """
    with gc_paused():
        _, n, cols = decode_columns(data, path, _ENTRY_DESC, _row_select(select),
                                    _blocks_kept(blocks))
        return _entries(n, cols, path)


def encode_manifest(
    entries: Sequence[ManifestEntry],
    *,
    codec: str = "zstandard",
    level: int | None = None,
    ordered: bool = False,
) -> bytes:
    """Encode a manifest file readable by Java 0.9, Java 1.x+ and pypaimon 2.1 (§14.3).

    Args:
        entries: the rows, written in order.
        codec: Avro codec (``manifest.compression``: zstd -> ``zstandard``).
        level: compression level (default: 1 for zstd, as ``file.compression.zstd-level``).
        ordered: the entries are ordered by partition values (first field first, nulls
            first): the header gets the :data:`BLOCK_INDEX_KEY` block index.

    Returns:
        The Avro container bytes.

    Raises:
        SchemaError: a value does not fit its Avro type.
    """
    check_int32((e.bucket for e in entries), "bucket")
    check_int32((e.total_buckets for e in entries), "total_buckets")
    check_int32((e.file.level for e in entries), "level")
    with gc_paused():
        records = [
            {
                "_VERSION": MANIFEST_VERSION,
                "_KIND": int(e.kind),
                "_PARTITION": e.partition,
                "_BUCKET": e.bucket,
                "_TOTAL_BUCKETS": e.total_buckets,
                "_FILE": data_file_to_avro(e.file),
            }
            for e in entries
        ]
        index = _block_index(entries) if ordered else None
        return encode_container(MANIFEST_ENTRY_AVRO_SCHEMA, records, codec=codec, level=level,
                                block_meta=index)


def _block_index(entries: Sequence[ManifestEntry]) -> Callable[[list[int]], dict[str, bytes]]:
    def index(counts: list[int]) -> dict[str, bytes]:
        ranges = []
        start = 0
        for count in counts:
            ranges.append((entries[start].partition, entries[start + count - 1].partition))
            start += count
        return encode_block_index(ranges)

    return index


def encode_block_index(ranges: Sequence[tuple[bytes, bytes]]) -> dict[str, bytes]:
    """The header entry of a block index: each block's first and last partition (the
    entries of each block ordered by partition values)."""
    out = bytearray(b"\x01")  # format version
    for pair in ranges:
        for p in pair:
            out += len(p).to_bytes(4, "little") + p
    # base64: fastavro (pypaimon) decodes every header value as UTF-8 text
    return {BLOCK_INDEX_KEY: base64.b64encode(bytes(out))}


def read_block_index(container: AvroContainer) -> list[tuple[bytes, bytes]] | None:
    """The block index of a container, None when absent or not one range per block."""
    text = dict(container.meta).get(BLOCK_INDEX_KEY)
    if text is None:
        return None
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        return None
    if raw[:1] != b"\x01":
        return None
    ranges: list[tuple[bytes, bytes]] = []
    pos, n = 1, len(raw)
    while pos < n:
        pair = []
        for _ in range(2):
            size = int.from_bytes(raw[pos:pos + 4], "little")
            pair.append(raw[pos + 4:pos + 4 + size])
            pos += 4 + size
        if pos > n:
            return None
        ranges.append((pair[0], pair[1]))
    return ranges if len(ranges) == len(container.blocks) else None


def _blocks_kept(test: BlockRangeTest | None) -> BlockFilter | None:
    if test is None:
        return None

    def kept(container: AvroContainer) -> list[int] | None:
        ranges = read_block_index(container)
        if ranges is None:
            return None
        return [i for i, ((lo, hi), (count, _)) in enumerate(zip(ranges, container.blocks))
                if test(lo, hi, count)]

    return kept
