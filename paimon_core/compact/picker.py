"""Which sorted runs of a bucket to compact, and to which level (pure, no IO).

Mirrors Paimon 0.9's ``org.apache.paimon.mergetree.compact.UniversalCompaction``,
``ForceUpLevel0Compaction`` and ``CompactStrategy.pickFullCompaction``, plus the filter of
``MergeTreeCompactManager.triggerCompaction``. Runs are given as
:meth:`Levels.level_sorted_runs` lists them: level-0 files newest first, then levels 1.. .

Universal compaction, in this order (``pick``):

1. *size amplification*: with at least ``trigger`` runs, if the size of all runs but the
   last, times 100, exceeds ``max_size_amp`` times the size of the last run, compact
   everything to the max level;
2. *size ratio*: with at least ``trigger`` runs, take the first run and keep absorbing the
   next one while ``candidate * (100 + size_ratio) / 100 >= next``; more than one run taken
   means a compaction;
3. *run count*: with more than ``trigger`` runs, take the first ``runs - trigger + 1`` runs
   (then extend them by size ratio) and compact them.

Output level (``createUnit``): the max level when every run is taken, else the level of the
first run left out minus one; never level 0 — a level-0 output keeps absorbing runs up to
and including the first run of a level > 0, whose level becomes the output.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from paimon_core.compact.levels import LevelSortedRun
from paimon_core.spec.manifest import DataFileMeta

__all__ = [
    "CompactUnit",
    "ForceUpLevel0Compaction",
    "UniversalCompaction",
    "pick_full_compaction",
    "useful_unit",
]


@dataclass(frozen=True, slots=True)
class CompactUnit:
    """Files to compact together and the level of the result (``CompactUnit``)."""

    output_level: int
    files: tuple[DataFileMeta, ...]

    @classmethod
    def from_level_runs(cls, output_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit:
        return cls(output_level, tuple(f for r in runs for f in r.files))


class UniversalCompaction:
    """Universal compaction strategy (``UniversalCompaction``, RocksDB style).

    Args:
        max_size_amp: ``compaction.max-size-amplification-percent``.
        size_ratio: ``compaction.size-ratio``.
        num_run_compaction_trigger: ``num-sorted-run.compaction-trigger``.
    """

    def __init__(self, max_size_amp: int, size_ratio: int, num_run_compaction_trigger: int
                 ) -> None:
        self.max_size_amp = max_size_amp
        self.size_ratio = size_ratio
        self.trigger = num_run_compaction_trigger

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        max_level = num_levels - 1
        unit = self.pick_for_size_amp(max_level, runs)
        if unit is not None:
            return unit
        unit = self.pick_for_size_ratio(max_level, runs)
        if unit is not None:
            return unit
        if len(runs) > self.trigger:
            return self._pick_for_size_ratio(max_level, runs, len(runs) - self.trigger + 1)
        return None

    def pick_for_size_amp(self, max_level: int, runs: Sequence[LevelSortedRun]
                          ) -> CompactUnit | None:
        if len(runs) < self.trigger:
            return None
        candidate = sum(r.total_size for r in runs[:-1])
        earliest = runs[-1].total_size
        if candidate * 100 > self.max_size_amp * earliest:
            return CompactUnit.from_level_runs(max_level, runs)
        return None

    def pick_for_size_ratio(self, max_level: int, runs: Sequence[LevelSortedRun]
                            ) -> CompactUnit | None:
        if len(runs) < self.trigger:
            return None
        return self._pick_for_size_ratio(max_level, runs, 1)

    def _pick_for_size_ratio(
        self, max_level: int, runs: Sequence[LevelSortedRun], candidate_count: int,
        force_pick: bool = False,
    ) -> CompactUnit | None:
        candidate = sum(r.total_size for r in runs[:candidate_count])
        for nxt in runs[candidate_count:]:
            # Java: double arithmetic, same operation order
            if candidate * (100.0 + self.size_ratio) / 100.0 < nxt.total_size:
                break
            candidate += nxt.total_size
            candidate_count += 1
        if force_pick or candidate_count > 1:
            return self.create_unit(runs, max_level, candidate_count)
        return None

    def create_unit(self, runs: Sequence[LevelSortedRun], max_level: int, run_count: int
                    ) -> CompactUnit:
        if run_count == len(runs):
            output_level = max_level
        else:
            output_level = max(0, runs[run_count].level - 1)
        if output_level == 0:
            # never output level 0: absorb runs up to the first one of a level > 0
            for nxt in runs[run_count:]:
                run_count += 1
                if nxt.level != 0:
                    output_level = nxt.level
                    break
        if run_count == len(runs):
            output_level = max_level
        return CompactUnit.from_level_runs(output_level, runs[:run_count])

    def force_pick_l0(self, num_levels: int, runs: Sequence[LevelSortedRun]
                      ) -> CompactUnit | None:
        """All level-0 runs (extended by size ratio), whatever their number."""
        count = 0
        for r in runs:
            if r.level > 0:
                break
            count += 1
        if count == 0:
            return None
        return self._pick_for_size_ratio(num_levels - 1, runs, count, force_pick=True)


class ForceUpLevel0Compaction:
    """Universal compaction, and otherwise every level-0 file pushed up
    (``ForceUpLevel0Compaction``, used with ``changelog-producer=lookup``)."""

    def __init__(self, universal: UniversalCompaction) -> None:
        self.universal = universal

    def pick(self, num_levels: int, runs: Sequence[LevelSortedRun]) -> CompactUnit | None:
        unit = self.universal.pick(num_levels, runs)
        if unit is not None:
            return unit
        return self.universal.force_pick_l0(num_levels, runs)


def pick_full_compaction(num_levels: int, runs: Sequence[LevelSortedRun],
                         dv_files: Collection[str] = ()) -> CompactUnit | None:
    """Every file to the max level, unless there is nothing or only one run on the max level
    already (``CompactStrategy.pickFullCompaction``); then, as Paimon 1.x, the files of that
    run with a deletion vector (``dv_files``), to be rewritten without their deleted rows."""
    max_level = num_levels - 1
    if not runs:
        return None
    if len(runs) == 1 and runs[0].level == max_level:
        with_dv = tuple(f for f in runs[0].files if f.file_name in dv_files)
        return CompactUnit(max_level, with_dv) if with_dv else None
    return CompactUnit.from_level_runs(max_level, runs)


def useful_unit(unit: CompactUnit | None) -> CompactUnit | None:
    """Drop a picked unit that would change nothing: no files, or one file already at the
    output level (``MergeTreeCompactManager.triggerCompaction``)."""
    if unit is None or not unit.files:
        return None
    if len(unit.files) == 1 and unit.files[0].level == unit.output_level:
        return None
    return unit
