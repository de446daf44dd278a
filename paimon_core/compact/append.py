"""Small-file compaction of append tables (Paimon 0.9 ``BucketedAppendCompactManager`` for
fixed-bucket tables, ``UnawareAppendTableCompactionCoordinator`` for ``bucket=-1``).

Bucketed (files ordered by ``_MIN_SEQUENCE_NUMBER``):

* normal (``pickCompactBefore``): slide a window over the files; compact the window as soon
  as it holds ``compaction.min.file-num`` files whose sizes add up to ``target-file-size``, or
  ``compaction.max.file-num`` files; a window that reaches the target size with too few files
  drops its oldest file;
* full (``FullCompactTask``): drop the leading files of at least the target size; compact
  the rest if they are at least 3 and small ones outnumber big ones.

Unaware (per partition, files smaller than 70 % of the target): sort by size, fill bins
until a bin reaches the target size with ``min.file-num`` files, or holds ``max.file-num``
(50) files; full: all such files in one bin (at least two).

A rewrite concatenates the files in sequence order and writes files of about the target size
whose rows take sequence numbers from the first input's ``_MIN_SEQUENCE_NUMBER`` on
(``_FILE_SOURCE`` COMPACT, level 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pyarrow as pa

from paimon_core.compact.options import CompactOptions
from paimon_core.compact.rewriter import BucketFiles
from paimon_core.compact.task import CompactResult
from paimon_core.datafile.writer import split_by_size
from paimon_core.spec.manifest import DataFileMeta, FileSource

__all__ = [
    "FULL_COMPACT_MIN_FILE",
    "pack_unaware",
    "pick_bucketed",
    "pick_bucketed_full",
    "plan_append",
    "rewrite_append",
]

FULL_COMPACT_MIN_FILE = 3


def _by_sequence(files: Sequence[DataFileMeta]) -> list[DataFileMeta]:
    return sorted(files, key=lambda f: (f.min_sequence_number, f.file_name))


def pick_bucketed(files: Sequence[DataFileMeta], *, min_file_num: int, max_file_num: int,
                  target_file_size: int) -> list[DataFileMeta] | None:
    """``BucketedAppendCompactManager.pickCompactBefore``."""
    window: list[DataFileMeta] = []
    total = 0
    for f in _by_sequence(files):
        window.append(f)
        total += f.file_size
        if (total >= target_file_size and len(window) >= min_file_num) or (
                len(window) >= max_file_num):
            return window
        if total >= target_file_size:
            total -= window.pop(0).file_size
    return None


def pick_bucketed_full(files: Sequence[DataFileMeta], *, target_file_size: int
                       ) -> list[DataFileMeta] | None:
    """``triggerFullCompaction`` + ``FullCompactTask`` (no deletion vectors)."""
    todo = _by_sequence(files)
    if len(todo) < FULL_COMPACT_MIN_FILE:
        return None
    while todo and todo[0].file_size >= target_file_size:
        todo.pop(0)
    big = sum(1 for f in todo if f.file_size >= target_file_size)
    small = len(todo) - big
    if small > big and len(todo) >= FULL_COMPACT_MIN_FILE:
        return todo
    return None


def pack_unaware(files: Sequence[DataFileMeta], *, target_file_size: int,
                 compaction_file_size: int, min_file_num: int, max_file_num: int,
                 full: bool = False) -> list[list[DataFileMeta]]:
    """Bins of one partition (``PartitionCompactCoordinator.pack``); ``full``: every small
    file in one bin (what the coordinator does for files left alone for a while)."""
    small = sorted((f for f in files if f.file_size < compaction_file_size),
                   key=lambda f: (f.file_size, f.file_name))
    if full:
        return [small] if len(small) > 1 else []
    bins: list[list[DataFileMeta]] = []
    current: list[DataFileMeta] = []
    total = 0
    for f in small:
        current.append(f)
        total += f.file_size
        if (total >= target_file_size and len(current) >= min_file_num) or (
                len(current) >= max_file_num):
            bins.append(current)
            current, total = [], 0
    return bins


def plan_append(files: Sequence[DataFileMeta], options: CompactOptions, *, full: bool
                ) -> list[list[DataFileMeta]]:
    """Groups of files to rewrite (each into new files) for one bucket / partition."""
    if options.num_buckets == -1:
        return pack_unaware(
            files, target_file_size=options.target_file_size,
            compaction_file_size=options.compaction_file_size,
            min_file_num=options.min_file_num, max_file_num=options.max_file_num, full=full)
    if full:
        picked = pick_bucketed_full(files, target_file_size=options.target_file_size)
    else:
        picked = pick_bucketed(files, min_file_num=options.min_file_num,
                               max_file_num=options.max_file_num,
                               target_file_size=options.target_file_size)
    return [picked] if picked else []


def rewrite_append(io: BucketFiles, files: Sequence[DataFileMeta]) -> CompactResult:
    """Rewrite one group into files of about the target size (``compactRewrite``)."""
    ordered = _by_sequence(files)
    parts = [io.read(f, system=False) for f in ordered]
    table = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    rows = table.num_rows
    disk = sum(f.file_size for f in ordered)
    seq = ordered[0].min_sequence_number
    after = []
    for part in split_by_size(table, io.target_file_size, disk if rows else 0):
        meta = io.writer.write_append_file(io.bucket_dir, part, seq, constant=io.constant)
        seq += part.num_rows
        after.append(replace(meta, file_source=FileSource.COMPACT))
    return CompactResult(list(ordered), after)
