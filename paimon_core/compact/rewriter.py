"""Rewriting sections of a primary-key bucket into compacted files
(``MergeTreeCompactRewriter``, ``FullChangelogMergeTreeCompactRewriter``,
``LookupMergeTreeCompactRewriter`` / ``ChangelogMergeTreeRewriter`` of Paimon 0.9).

A section is read whole (every file with its system columns, mapped to the current schema),
merged per key through the table's merge engine (:func:`merge_records`), retractions dropped
when the output is the oldest data of the bucket (``drop_delete``), and written, sorted by
key, as files of about ``target-file-size`` at the output level (``_FILE_SOURCE`` COMPACT).
Every record keeps its sequence number, so file stats, min/max keys and sequence ranges are
those of the rows written.

Changelog (``changelog-producer``): ``full-compaction`` when the output is the max level,
``lookup`` when level-0 files take part (see :mod:`paimon_core.compact.changelog`); changelog
files are ``changelog-<uuid>-<n>.parquet`` at the output level, ``_FILE_SOURCE`` APPEND as
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

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from paimon_core.compact.changelog import (
    KeyedRecords,
    first_row_lookup,
    full_changelog,
    lookup_changelog,
)
from paimon_core.compact.levels import Levels
from paimon_core.compact.options import CompactOptions
from paimon_core.compact.task import CompactResult, Section
from paimon_core.datafile.writer import DataFileWriter, split_by_size
from paimon_core.options import CoreOptions
from paimon_core.read.data_file import DataFileReader
from paimon_core.read.merge import drop_retracts
from paimon_core.spec.keys import KeyDecoder
from paimon_core.spec.manifest import DataFileMeta, FileSource
from paimon_core.spec.option_enums import ChangelogProducer, MergeEngine
from paimon_core.spec.system_fields import VALUE_KIND

__all__ = ["BucketFiles", "MergeTreeRewriter", "upgrade_file"]


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

    def write(self, table: pa.Table, level: int, bytes_per_row: float, *,
              changelog: bool = False) -> list[DataFileMeta]:
        out = []
        parts = split_by_size(table, self.target_file_size, int(table.num_rows * bytes_per_row))
        if changelog and len(parts) > 1:
            parts = _keep_pairs(table, parts)
        for part in parts:
            meta = self.writer.write_kv_file(self.bucket_dir, part, changelog=changelog,
                                             constant=self.constant)
            out.append(replace(meta, level=level) if changelog else
                       replace(meta, level=level, file_source=FileSource.COMPACT))
        return out


def _keep_pairs(table: pa.Table, parts: Sequence[pa.Table]) -> list[pa.Table]:
    """Re-cut changelog slices so that no file ends with a ``-U`` (its ``+U`` follows in
    the same file: a reader of one file sees whole updates)."""
    kinds = np.asarray(table.column(VALUE_KIND).to_numpy(), dtype=np.int8)
    out, start, end = [], 0, 0
    for p in parts:
        end = min(end + p.num_rows, len(kinds))
        while 0 < end < len(kinds) and kinds[end - 1] == 1:
            end += 1
        if end > start:
            out.append(table.slice(start, end - start))
            start = end
    if start < len(kinds):
        out.append(table.slice(start))
    return out


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
    """

    def __init__(self, io: BucketFiles, options: CompactOptions, core: CoreOptions,
                 records: KeyedRecords, levels: Levels, decode_key: KeyDecoder) -> None:
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
        self._lookup_cache: dict[str, pa.Table] = {}

    # ---- CompactRewriter
    def rewrite(self, output_level: int, drop_delete: bool, sections: Sequence[Section]
                ) -> CompactResult:
        if self._changelog_on_rewrite(output_level, sections):
            return self._rewrite_with_changelog(output_level, drop_delete, sections, True)
        return self._rewrite_plain(output_level, drop_delete, sections)

    def upgrade(self, output_level: int, file: DataFileMeta) -> CompactResult:
        strategy = self._upgrade_strategy(output_level, file)
        changelog, rewrite = strategy.value
        if changelog:
            return self._rewrite_with_changelog(output_level, False, [[file]], rewrite)
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
            if output_level == self.max_level or (
                    self.core.merge_engine is MergeEngine.DEDUPLICATE
                    and not self.core.sequence_fields):
                # deduplicate keeps the newest record: upgrading keeps the merge result
                return _Upgrade.CHANGELOG_NO_REWRITE
            return _Upgrade.CHANGELOG_WITH_REWRITE
        return _Upgrade.NO_CHANGELOG

    # ---- reading
    def _read(self, files: Sequence[DataFileMeta]) -> tuple[pa.Table, np.ndarray]:
        parts, levels = [], []
        for f in files:
            t = self.io.read(f)
            if self._ignore_delete:
                t = drop_retracts(t, VALUE_KIND)
            parts.append(t)
            levels.append(np.full(t.num_rows, f.level, dtype=np.int32))
        table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        return table, np.concatenate(levels)

    def _lookup_records(self, output_level: int, files: Sequence[DataFileMeta]
                        ) -> tuple[pa.Table | None, np.ndarray | None]:
        """Records of the levels above ``output_level`` whose files may hold keys of
        ``files`` (``LookupLevels``)."""
        lo = min(self.decode_key(f.min_key) for f in files)
        hi = max(self.decode_key(f.max_key) for f in files)
        parts, levels = [], []
        for level, run in self.levels.files_above(output_level):
            for f in run:
                if self.decode_key(f.max_key) < lo or self.decode_key(f.min_key) > hi:
                    continue
                t = self._lookup_cache.get(f.file_name)
                if t is None:
                    t = self.io.read(f)
                    self._lookup_cache[f.file_name] = t
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
        outs = []
        files = [f for s in sections for f in s]
        for section in sections:
            table, levels = self._read(section)
            if len(section) > 1:  # one file holds every key once: nothing to merge
                table = self.records.merge(table, levels)
            outs.append(self._finish(table, drop_delete))
        after = self._write(outs, output_level, files)
        return CompactResult(list(files), after)

    def _rewrite_with_changelog(self, output_level: int, drop_delete: bool,
                                sections: Sequence[Section], rewrite_files: bool
                                ) -> CompactResult:
        outs, logs = [], []
        files = [f for s in sections for f in s]
        for section in sections:
            table, levels = self._read(section)
            if self.first_row:
                lookup, _ = self._lookup_records(output_level, section)
                merged, log = first_row_lookup(table, levels, lookup, self.records,
                                               produce_changelog=self.lookup_log)
            elif self.producer is ChangelogProducer.FULL_COMPACTION:
                merged, log = full_changelog(table, levels, self.max_level, self.records)
                merged = drop_retracts(merged, VALUE_KIND)  # the max level keeps no deletes
            else:
                lookup, lookup_levels = self._lookup_records(output_level, section)
                merged, log = lookup_changelog(table, levels, lookup, lookup_levels,
                                               self.records)
            outs.append(self._finish(merged, drop_delete))
            # else (first-row without the lookup producer): a lookup merge only
            if self.producer in (ChangelogProducer.LOOKUP, ChangelogProducer.FULL_COMPACTION):
                logs.append(log)
        changelog = self._write(logs, output_level, files, changelog=True)
        if rewrite_files:
            after = self._write(outs, output_level, files)
        else:
            after = [upgrade_file(f, output_level) for f in files]
        return CompactResult(list(files), after, changelog)

    def _write(self, tables: Sequence[pa.Table], level: int, inputs: Sequence[DataFileMeta],
               *, changelog: bool = False) -> list[DataFileMeta]:
        tables = [t for t in tables if t.num_rows]
        if not tables:
            return []
        table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        return self.io.write(table, level, _bytes_per_row(inputs), changelog=changelog)
