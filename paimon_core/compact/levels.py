"""The LSM levels of one bucket (``org.apache.paimon.mergetree.Levels``, ``SortedRun``,
``LevelSortedRun``), built from the bucket's live files; pure metadata, no IO.

* Level 0 holds one sorted run per file, newest first: by ``_MAX_SEQUENCE_NUMBER``
  descending, then ``_MIN_SEQUENCE_NUMBER`` ascending, creation time, file name (Java's
  ``TreeSet`` order, which also keeps files with equal sequence numbers apart).
* Every level >= 1 is one sorted run: its files sorted by min key, key ranges disjoint (a
  level whose files overlap is corrupt metadata).
* The number of levels is ``num-levels`` or, when a restored file sits higher, its level + 1.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from paimon_core.errors import CorruptMetadataError
from paimon_core.spec.keys import KeyDecoder
from paimon_core.spec.manifest import DataFileMeta

__all__ = ["LevelSortedRun", "Levels", "level0_order"]


@dataclass(frozen=True, slots=True)
class LevelSortedRun:
    """One sorted run and the level it lives on (``LevelSortedRun``)."""

    level: int
    files: tuple[DataFileMeta, ...]

    @property
    def total_size(self) -> int:
        return sum(f.file_size for f in self.files)


def level0_order(f: DataFileMeta) -> tuple[int, int, int, str]:
    """Sort key of level-0 files, newest first (``Levels`` level-0 comparator)."""
    return (-f.max_sequence_number, f.min_sequence_number, f.creation_time or 0, f.file_name)


class Levels:
    """Levels of one bucket.

    Args:
        files: the bucket's live files.
        num_levels: the configured number of levels (``num-levels``).
        decode_key: decodes ``_MIN_KEY``/``_MAX_KEY`` into comparable tuples.

    Raises:
        CorruptMetadataError: files of one level >= 1 overlap in key range.
    """

    def __init__(
        self, files: Iterable[DataFileMeta], num_levels: int, decode_key: KeyDecoder
    ) -> None:
        files = list(files)
        top = max((f.level for f in files), default=-1)
        self.num_levels = max(num_levels, top + 1)
        if self.num_levels < 2:
            raise CorruptMetadataError("<levels>", "the number of levels must be at least 2")
        self.decode_key = decode_key
        self.level0: list[DataFileMeta] = sorted(
            (f for f in files if f.level == 0), key=level0_order)
        self.levels: list[list[DataFileMeta]] = [[] for _ in range(1, self.num_levels)]
        by_level: dict[int, list[DataFileMeta]] = {}
        for f in files:
            if f.level > 0:
                by_level.setdefault(f.level, []).append(f)
        for level, fs in by_level.items():
            self.levels[level - 1] = self._sorted_run(level, fs)

    def _sorted_run(self, level: int, files: Sequence[DataFileMeta]) -> list[DataFileMeta]:
        keyed = sorted(((self.decode_key(f.min_key), self.decode_key(f.max_key), f.file_name, f)
                        for f in files), key=lambda t: (t[0], t[2]))
        for (_, hi, _, a), (lo, _, _, b) in itertools.pairwise(keyed):
            if not hi < lo:
                raise CorruptMetadataError(
                    a.file_name, f"files {a.file_name} and {b.file_name} of level {level} "
                    "overlap in key range")
        return [t[3] for t in keyed]

    @property
    def max_level(self) -> int:
        return self.num_levels - 1

    def run_of_level(self, level: int) -> tuple[DataFileMeta, ...]:
        if level == 0:
            raise ValueError("level 0 has one run per file")
        return tuple(self.levels[level - 1])

    def number_of_sorted_runs(self) -> int:
        return len(self.level0) + sum(1 for run in self.levels if run)

    def non_empty_highest_level(self) -> int:
        """The highest level holding a file; 0 for only level-0 files, -1 for none."""
        for i in range(len(self.levels) - 1, -1, -1):
            if self.levels[i]:
                return i + 1
        return 0 if self.level0 else -1

    def level_sorted_runs(self) -> list[LevelSortedRun]:
        """Level-0 files (newest first), then every non-empty level (``levelSortedRuns``)."""
        runs = [LevelSortedRun(0, (f,)) for f in self.level0]
        runs += [LevelSortedRun(i + 1, tuple(run)) for i, run in enumerate(self.levels) if run]
        return runs

    def all_files(self) -> list[DataFileMeta]:
        return [*self.level0, *(f for run in self.levels for f in run)]

    def files_above(self, level: int) -> list[tuple[int, tuple[DataFileMeta, ...]]]:
        """``(level, files)`` of every non-empty level above ``level``, lowest first."""
        return [(i + 1, tuple(run)) for i, run in enumerate(self.levels)
                if i + 1 > level and run]
