"""Rewriting sections of a primary-key bucket into compacted files
(``MergeTreeCompactRewriter``, ``FullChangelogMergeTreeCompactRewriter``,
``LookupMergeTreeCompactRewriter`` / ``ChangelogMergeTreeRewriter`` of Paimon 0.9).

Compaction streams: the sections of a unit are taken in key order, each merged per key
through the table's merge engine (:func:`merge_records`) in chunks of ascending keys
(``MergeTreeRewriter._merged_chunks``: the bounded-memory merge of
:func:`~paimon_core.read.merge_stream.merge_section_batches`, chunks of whole keys cut across
the section's sorted runs; a section of one file needs no merge), retractions dropped when the
output is the oldest data of the bucket (``drop_delete``), and every chunk goes straight into a
rolling writer (:class:`~paimon_core.datafile.writer.RollingKvWriter`) that cuts files of
about ``target-file-size`` at the output level (``_FILE_SOURCE`` COMPACT). Nothing holds more
than a section's merge, a chunk and a row group. Every record keeps its sequence number, so
file stats, min/max keys and sequence ranges are those of the rows written. A failure leaves
the files written so far unreferenced (no commit happens); the writer's ``written_paths`` list
them and the caller deletes them (``BucketCompactor.compact``, as Java's ``abort``).

Changelog (``changelog-producer``): ``full-compaction`` when the output is the max level,
``lookup`` when level-0 files take part (see :mod:`paimon_core.compact.changelog`), produced
chunk by chunk (a chunk holds every record of its keys; lookups read only the files above whose
key range meets the chunk's, kept while later chunks may need them); changelog files, rolled
the same way, are ``changelog-<uuid>-<n>.parquet`` at the output level, ``_FILE_SOURCE`` APPEND as
Java 0.9 writes them. Every table that needs a lookup (``CompactOptions.lookup``: the lookup
producer, first-row, ``force-lookup``) compacts level 0 that way
(``LookupMergeTreeCompactRewriter``), writing changelog files only with the lookup producer:
records are merged with the key's record on the levels above the output (first-row: keys
already above are dropped). Upgrading a file (no rewrite) may still need its changelog
(``UpgradeStrategy``): full-compaction when upgrading to the max level, lookup for level-0
files (rewritten too when the output is below the max level, unless the merge engine is
``deduplicate`` without ``sequence.field``).
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.compact.changelog import (
    KeyedRecords,
    first_row_lookup,
    full_changelog,
    lookup_changelog,
)
from paimon_core.compact.deletion_vectors import BucketDeletionVectors
from paimon_core.compact.levels import Levels
from paimon_core.compact.options import CompactOptions
from paimon_core.compact.task import CompactResult, Section
from paimon_core.datafile.writer import DataFileWriter, RollingKvWriter
from paimon_core.options import CoreOptions
from paimon_core.read.data_file import DataFileReader, FileRead, kept_rows
from paimon_core.read.merge import drop_retracts
from paimon_core.read.merge_stream import merge_section_batches, section_chunks
from paimon_core.spec.keys import KeyDecoder
from paimon_core.spec.manifest import DataFileMeta, FileSource
from paimon_core.spec.option_enums import ChangelogProducer, MergeEngine
from paimon_core.spec.row_kind import retract_mask
from paimon_core.spec.system_fields import VALUE_KIND

__all__ = ["BucketFiles", "MergeTreeRewriter", "upgrade_file"]

# lookup records of a deletion-vector table: which file (index into the chunk's lookup file
# names) and which row of it
_DV_FILE = "__dv_file"
_DV_POS = "__dv_pos"


@dataclass(frozen=True)
class BucketFiles:
    """Reading and writing the files of one (partition, bucket)."""

    bucket_dir: str
    reader: DataFileReader
    writer: DataFileWriter
    constant: tuple[int, ...]  # positions of the partition columns (one value per bucket)
    target_file_size: int

    def read(self, f: DataFileMeta, *, system: bool = True) -> pa.Table:
        return self.reader.read(self.bucket_dir, f, self.reader.schema.field_names,
                                system=system)

    def rolling(self, level: int, bytes_per_row: float, *, changelog: bool = False
                ) -> RollingKvWriter:
        """A rolling writer of compacted files (``_FILE_SOURCE`` COMPACT) or changelog files
        (APPEND, as Java 0.9 writes them) at ``level``."""
        return RollingKvWriter(
            self.writer, self.bucket_dir, target_file_size=self.target_file_size,
            bytes_per_row=bytes_per_row, level=level, changelog=changelog,
            file_source=None if changelog else FileSource.COMPACT, constant=self.constant)


def upgrade_file(f: DataFileMeta, level: int) -> DataFileMeta:
    """The same file at a higher level (``DataFileMeta.upgrade``)."""
    if level <= f.level:
        raise ValueError(f"cannot upgrade {f.file_name} from level {f.level} to {level}")
    return replace(f, level=level)


class _Upgrade(enum.Enum):
    """``ChangelogMergeTreeRewriter.UpgradeStrategy``."""

    NO_CHANGELOG = (False, False)
    CHANGELOG_NO_REWRITE = (True, False)
    CHANGELOG_WITH_REWRITE = (True, True)


def _bytes_per_row(files: Sequence[DataFileMeta]) -> float:
    rows = sum(f.row_count for f in files)
    return sum(f.file_size for f in files) / rows if rows else 0.0


class MergeTreeRewriter:
    """Rewriter of one compaction unit of a primary-key bucket.

    Args:
        io: the bucket's reader and writer.
        options: compaction options (changelog producer, row deduplication).
        core: the table options (merge engine, ``ignore-delete``).
        records: key / sequence / value columns of the table.
        levels: the bucket's levels (the lookup producer looks keys up above the output).
        decode_key: decodes file min/max keys (lookup file pruning).
        dvs: the bucket's deletion vectors (``deletion-vectors.enabled``): files are read
            without their deleted rows, and a record looked up above the output level that a
            level-0 record supersedes is added to its file's vector.
    """

    def __init__(self, io: BucketFiles, options: CompactOptions, core: CoreOptions,
                 records: KeyedRecords, levels: Levels, decode_key: KeyDecoder,
                 dvs: BucketDeletionVectors | None = None) -> None:
        self.io = io
        self.options = options
        self.core = core
        self.records = records
        self.levels = levels
        self.decode_key = decode_key
        self.producer = options.changelog_producer
        self.first_row = core.merge_engine is MergeEngine.FIRST_ROW
        self.lookup = options.lookup
        self.lookup_log = self.producer is ChangelogProducer.LOOKUP  # changelog files too
        self.max_level = levels.max_level
        self._ignore_delete = core.ignore_delete()
        self._lookup_cache: dict[str, tuple[DataFileMeta, pa.Table]] = {}
        self.dvs = dvs
        self._lookup_names: list[str] = []  # files of the lookup's _DV_FILE indices

    # ---- CompactRewriter
    def rewrite(self, output_level: int, drop_delete: bool, sections: Sequence[Section]
                ) -> CompactResult:
        if self._changelog_on_rewrite(output_level, sections):
            return self._rewrite_with_changelog(output_level, drop_delete, sections, True)
        return self._rewrite_plain(output_level, drop_delete, sections)

    def upgrade(self, output_level: int, file: DataFileMeta) -> CompactResult:
        strategy = self._upgrade_strategy(output_level, file)
        changelog, rewrite = strategy.value
        if changelog:  # deletion vectors: retractions go (ChangelogMergeTreeRewriter's
            # forceDropDelete), the older records they retract are marked deleted
            return self._rewrite_with_changelog(output_level, self.dvs is not None, [[file]],
                                                rewrite)
        return CompactResult([file], [upgrade_file(file, output_level)])

    # ---- decisions (per changelog producer)
    def _changelog_on_rewrite(self, output_level: int, sections: Sequence[Section]) -> bool:
        if self.producer is ChangelogProducer.FULL_COMPACTION and not self.first_row:
            return output_level == self.max_level
        if self.lookup:
            return output_level != 0 and any(f.level == 0 for s in sections for f in s)
        return False

    def _upgrade_strategy(self, output_level: int, f: DataFileMeta) -> _Upgrade:
        if self.producer is ChangelogProducer.FULL_COMPACTION and not self.first_row:
            return (_Upgrade.CHANGELOG_NO_REWRITE if output_level == self.max_level
                    else _Upgrade.NO_CHANGELOG)
        if self.lookup:
            if f.level != 0:
                return _Upgrade.NO_CHANGELOG
            if self.dvs is not None and (f.delete_row_count is None or f.delete_row_count > 0):
                # retractions cannot stay on a level >= 1 of a deletion-vector table
                return _Upgrade.CHANGELOG_WITH_REWRITE
            if output_level == self.max_level or (
                    self.core.merge_engine is MergeEngine.DEDUPLICATE
                    and not self.core.sequence_fields):
                # deduplicate keeps the newest record: upgrading keeps the merge result
                return _Upgrade.CHANGELOG_NO_REWRITE
            return _Upgrade.CHANGELOG_WITH_REWRITE
        return _Upgrade.NO_CHANGELOG

    # ---- reading
    def _record_chunks(self, section: Section) -> Iterator[tuple[pa.Table, np.ndarray]]:
        """The records of a section in chunks of ascending, disjoint key ranges (every
        record of a key in one chunk), each with the level of every record: the section's
        sorted runs share ``paimon-core.merge.buffer-rows`` rows
        (:func:`~paimon_core.read.merge_stream.section_chunks`), so a chunk holds a bounded
        number of records whatever the section's size."""
        reads = [FileRead(self.io.bucket_dir, f, tuple(self.io.reader.schema.field_names),
                          system=True, deleted_rows=self._deleted(f)) for f in section]
        for chunk in section_chunks(self.io.reader, reads, self.records.key_columns,
                                    self.decode_key, buffer_rows=self.core.merge_buffer_rows):
            t, levels = chunk.records, chunk.levels
            if self._ignore_delete:
                live = ~retract_mask(np.asarray(t.column(VALUE_KIND).to_numpy()))
                if not live.all():
                    t, levels = t.filter(pa.array(live)), levels[live]
            if t.num_rows:
                yield t, levels

    def _merged_chunks(self, section: Section) -> Iterator[pa.Table]:
        """The section merged through the merge engine: one record per key, sorted by key,
        in chunks of ascending keys (retractions kept), in memory bounded by
        ``paimon-core.merge.buffer-rows`` (shared by the section's sorted runs)
        (:func:`~paimon_core.read.merge_stream.merge_section_batches`)."""
        yield from merge_section_batches(
            self.io.reader, self.io.bucket_dir, section, options=self.core,
            decode_key=self.decode_key, columns=self.io.reader.schema.field_names,
            key_columns=list(self.records.key_columns),
            sequence_columns=list(self.records.sequence_columns),
            primary_keys=self.records.primary_keys, ignore_delete=self._ignore_delete,
            deleted_rows=None if self.dvs is None else self.dvs.deleted_rows())

    def _deleted(self, f: DataFileMeta) -> np.ndarray | None:
        return None if self.dvs is None else self.dvs.of(f.file_name)

    def _read_lookup(self, f: DataFileMeta) -> pa.Table:
        """A file of the levels above, for lookups; with deletion vectors without its deleted
        rows, each row with its position in the file (:data:`_DV_POS`)."""
        t = self.io.read(f)
        if self.dvs is None:
            return t
        pos = np.arange(t.num_rows, dtype=np.int64)
        t = t.append_column(_DV_POS, pa.array(pos))
        deleted = self.dvs.of(f.file_name)
        if deleted is not None and len(deleted):
            t = t.filter(pa.array(kept_rows(deleted, t.num_rows)))
        return t

    def _lookup_records(self, output_level: int, chunk: pa.Table
                        ) -> tuple[pa.Table | None, np.ndarray | None]:
        """Records of the levels above ``output_level`` whose keys fall in ``chunk``'s key
        range (``LookupLevels``). Chunks come in ascending key order, so a file read for
        an earlier chunk stays cached only while later chunks may still need it."""
        w = self.io.writer
        bounds = _key_bounds(chunk, self.records.key_columns)  # records of many files: unsorted
        lo = self.decode_key(w.key_bytes(bounds, 0))
        hi = self.decode_key(w.key_bytes(bounds, 1))
        for name in [n for n, (f, _) in self._lookup_cache.items()
                     if self.decode_key(f.max_key) < lo]:
            del self._lookup_cache[name]
        parts, levels = [], []
        self._lookup_names = []
        for level, run in self.levels.files_above(output_level):
            for f in run:
                if self.decode_key(f.max_key) < lo or self.decode_key(f.min_key) > hi:
                    continue
                cached = self._lookup_cache.get(f.file_name)
                if cached is None:
                    cached = (f, self._read_lookup(f))
                    self._lookup_cache[f.file_name] = cached
                t = cached[1]
                if self.decode_key(f.min_key) < lo or self.decode_key(f.max_key) > hi:
                    t = t.filter(_key_range_mask(t, self.records.key_columns, bounds))
                if t.num_rows:
                    if self.dvs is not None:
                        t = t.append_column(_DV_FILE, pa.array(
                            np.full(t.num_rows, len(self._lookup_names), dtype=np.int32)))
                        self._lookup_names.append(f.file_name)
                    parts.append(t)
                    levels.append(np.full(t.num_rows, level, dtype=np.int32))
        if not parts:
            return None, None
        return pa.concat_tables(parts), np.concatenate(levels)

    # ---- rewriting
    def _finish(self, merged: pa.Table, drop_delete: bool) -> pa.Table:
        if drop_delete:
            merged = drop_retracts(merged, VALUE_KIND)
        return merged.select(self.records.output_columns)

    def _rewrite_plain(self, output_level: int, drop_delete: bool, sections: Sequence[Section]
                       ) -> CompactResult:
        files = [f for s in sections for f in s]
        with self.io.rolling(output_level, _bytes_per_row(files)) as out:
            for section in sections:
                for merged in self._merged_chunks(section):
                    chunk = self._finish(merged, drop_delete)
                    del merged
                    out.write(chunk)
            after = out.close()
        return CompactResult(list(files), after)

    def _rewrite_with_changelog(self, output_level: int, drop_delete: bool,
                                sections: Sequence[Section], rewrite_files: bool
                                ) -> CompactResult:
        files = [f for s in sections for f in s]
        bpr = _bytes_per_row(files)
        # first-row without the lookup producer: a lookup merge, no changelog files
        with_log = self.producer in (ChangelogProducer.LOOKUP, ChangelogProducer.FULL_COMPACTION)
        with contextlib.ExitStack() as stack:
            data = stack.enter_context(self.io.rolling(output_level, bpr)) if rewrite_files \
                else None
            logs = stack.enter_context(self.io.rolling(output_level, bpr, changelog=True)) \
                if with_log else None
            for section in sections:
                for table, levels in self._record_chunks(section):
                    merged, log = self._changelog_chunk(output_level, table, levels)
                    del table, levels  # not kept alive while the chunk is written
                    if data is not None:
                        data.write(self._finish(merged, drop_delete))
                    if logs is not None:
                        logs.write(log)
            changelog = logs.close() if logs is not None else []
            after = (data.close() if data is not None
                     else [upgrade_file(f, output_level) for f in files])
        return CompactResult(list(files), after, changelog)

    def _changelog_chunk(self, output_level: int, table: pa.Table, levels: np.ndarray
                         ) -> tuple[pa.Table, pa.Table]:
        """(merged records, changelog) of one key-aligned chunk of records."""
        if self.first_row:
            lookup, _ = self._lookup_records(output_level, table)
            return first_row_lookup(table, levels, lookup, self.records,
                                    produce_changelog=self.lookup_log)
        if self.producer is ChangelogProducer.FULL_COMPACTION:
            merged, log = full_changelog(table, levels, self.max_level, self.records)
            return drop_retracts(merged, VALUE_KIND), log  # the max level keeps no deletes
        lookup, lookup_levels = self._lookup_records(output_level, table)
        if self.dvs is not None and lookup is not None:
            lookup = self._supersede(table, lookup)
        return lookup_changelog(table, levels, lookup, lookup_levels, self.records)

    def _supersede(self, chunk: pa.Table, lookup: pa.Table) -> pa.Table:
        """Add the positions of the looked-up records whose key the chunk holds to their
        files' deletion vectors (``LookupChangelogMergeFunctionWrapper``: the merged record
        written on the output level replaces them); ``lookup`` without the position columns."""
        assert self.dvs is not None
        keys = list(self.records.key_columns)
        hit = lookup.select([*keys, _DV_FILE, _DV_POS]).join(
            chunk.select(keys).group_by(keys).aggregate([]), keys, join_type="left semi")
        if hit.num_rows:
            files = hit.column(_DV_FILE).to_numpy()
            pos = hit.column(_DV_POS).to_numpy()
            for i in np.unique(files):
                self.dvs.notify(self._lookup_names[int(i)], pos[files == i])
        self._lookup_names.clear()
        return lookup.drop_columns([_DV_FILE, _DV_POS])


def _key_bounds(chunk: pa.Table, key_columns: Sequence[str]) -> pa.Table:
    """The rows of ``chunk`` holding its smallest and its largest key (in that order)."""
    order = pc.sort_indices(chunk, sort_keys=[(c, "ascending") for c in key_columns])
    return chunk.take(pa.array([order[0].as_py(), order[-1].as_py()], pa.int64()))


def _key_range_mask(table: pa.Table, key_columns: Sequence[str], bounds: pa.Table) -> pa.Array:
    """Rows of ``table`` whose key lies between the keys of ``bounds``' two rows
    (lexicographic over the key columns)."""

    def cmp(i: int, row: int, strict: str, eq: str) -> pa.Array:
        col, ref = table.column(key_columns[i]), bounds.column(key_columns[i])[row]
        if i == len(key_columns) - 1:
            return pc.call_function(eq, [col, ref])
        return pc.or_(pc.call_function(strict, [col, ref]),
                      pc.and_(pc.equal(col, ref), cmp(i + 1, row, strict, eq)))

    mask = pc.and_(cmp(0, 0, "greater", "greater_equal"), cmp(0, 1, "less", "less_equal"))
    return mask.combine_chunks() if isinstance(mask, pa.ChunkedArray) else mask
