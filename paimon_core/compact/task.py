"""Running one compaction unit (``org.apache.paimon.mergetree.compact.MergeTreeCompactTask``).

The unit's files are cut into sections of overlapping key ranges (``IntervalPartition``).
Sections of several sorted runs must be merged; in a section that is a single run, files of
at least ``compaction_file_size`` are *upgraded* (moved to the output level without being
rewritten: a DELETE of the file at its old level and an ADD at the new one), and smaller ones
are rewritten together with their neighbours. A lone run of small files is upgraded too.
Files with retract rows are never upgraded to the max level (they are rewritten so the
retractions can be dropped). The rewriting itself is the :class:`Rewriter`'s job.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from paimon_core.compact.picker import CompactUnit
from paimon_core.read.merge import sections as interval_partition
from paimon_core.spec.index_manifest import IndexFileMeta
from paimon_core.spec.keys import KeyDecoder
from paimon_core.spec.manifest import DataFileMeta

__all__ = ["CompactResult", "Rewriter", "run_compact_task"]

Section = list[DataFileMeta]


@dataclass
class CompactResult:
    """Files a compaction removes, adds and its changelog files (``CompactResult``)."""

    before: list[DataFileMeta] = field(default_factory=list)
    after: list[DataFileMeta] = field(default_factory=list)
    changelog: list[DataFileMeta] = field(default_factory=list)
    #: the bucket's new deletion-vector index file and the ones it replaces
    index_added: list[IndexFileMeta] = field(default_factory=list)
    index_deleted: list[IndexFileMeta] = field(default_factory=list)

    def merge(self, other: CompactResult) -> None:
        self.before += other.before
        self.after += other.after
        self.changelog += other.changelog
        self.index_added += other.index_added
        self.index_deleted += other.index_deleted

    def is_empty(self) -> bool:
        return not (self.before or self.after or self.changelog or self.index_added
                    or self.index_deleted)


class Rewriter(Protocol):
    """Rewrites sections into files of the output level (``CompactRewriter``)."""

    def rewrite(self, output_level: int, drop_delete: bool, sections: Sequence[Section]
                ) -> CompactResult: ...

    def upgrade(self, output_level: int, file: DataFileMeta) -> CompactResult: ...


def run_compact_task(
    unit: CompactUnit,
    *,
    drop_delete: bool,
    max_level: int,
    compaction_file_size: int,
    rewriter: Rewriter,
    decode_key: KeyDecoder,
    dv_files: Collection[str] = (),
) -> CompactResult:
    """Compact ``unit`` (``MergeTreeCompactTask.doCompact``). A file already on the output
    level that has a deletion vector (``dv_files``) is rewritten without its deleted rows
    (Paimon 1.x), the others stay."""
    out_level = unit.output_level
    result = CompactResult()
    candidate: list[Section] = []

    def upgrade(f: DataFileMeta) -> None:
        if f.level == out_level:
            if f.file_name in dv_files:
                result.merge(rewriter.rewrite(out_level, drop_delete, [[f]]))
            return
        if out_level != max_level or f.delete_row_count == 0:
            result.merge(rewriter.upgrade(out_level, f))
        else:  # retractions must be dropped on the way to the max level
            result.merge(rewriter.rewrite(out_level, drop_delete, [[f]]))

    def flush() -> None:
        if not candidate:
            return
        if len(candidate) == 1 and len(candidate[0]) == 1:
            # one file alone (a lone small file): nothing to merge it with
            upgrade(candidate[0][0])
        else:
            result.merge(rewriter.rewrite(out_level, drop_delete, list(candidate)))
        candidate.clear()

    for section in interval_partition(unit.files, decode_key):
        if len(section) > 1:
            candidate.append(section)  # several sorted runs overlap: merge
            continue
        f = section[0]
        if f.file_size < compaction_file_size:
            candidate.append([f])
        else:
            flush()
            upgrade(f)
    flush()
    return result
