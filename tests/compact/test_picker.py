"""Universal compaction picker vs hand-computed cases of Java 0.9's ``UniversalCompaction``
(the same cases are replayed against the real Java class in
``tests/interop/test_compact_interop.py``)."""

from __future__ import annotations

import pytest

from paimon_core.compact.picker import (
    CompactUnit,
    ForceUpLevel0Compaction,
    UniversalCompaction,
    pick_full_compaction,
    useful_unit,
)
from tests.compact.helpers import fmeta, runs


def summary(unit: CompactUnit | None, all_runs: list) -> tuple[int, int] | None:
    """(output level, number of leading runs taken)."""
    if unit is None:
        return None
    files = [f for r in all_runs for f in r.files]
    n = len(unit.files)
    assert list(unit.files) == files[:n]  # always a prefix of the runs
    return unit.output_level, n


# (trigger, max_size_amp, size_ratio, runs as (level, size), expected (output, runs) | None)
CASES = [
    # size amplification: 4 * 100 > 200 * 1 -> everything to the max level
    (5, 200, 1, [(0, 1), (0, 1), (0, 1), (0, 1), (5, 1)], (5, 5)),
    # no size amplification (400 <= 2000); size ratio takes the 4 level-0 runs (1, 2, 3, 4 vs
    # next 10: 4 * 1.01 < 10) -> output = level of the next run (5) - 1
    (5, 200, 1, [(0, 1), (0, 1), (0, 1), (0, 1), (5, 10)], (4, 4)),
    # size ratio stops at once (1 * 1.01 < 2) and only 5 runs (not > trigger): nothing
    (5, 200, 1, [(0, 1), (0, 2), (0, 10), (0, 30), (5, 100)], None),
    # 7 runs > trigger 5: the first 7 - 5 + 1 = 3 runs (13 * 1.01 < 30 stops there); the next
    # run is on level 0 -> output 0 is not allowed: absorb up to the level-5 run -> all
    (5, 200, 1, [(0, 1), (0, 2), (0, 10), (0, 30), (0, 80), (0, 200), (5, 1000)], (5, 7)),
    # two level-0 runs, next run on level 2 -> output level 1
    (3, 200, 1, [(0, 1), (0, 1), (2, 5), (3, 50), (5, 500)], (1, 2)),
    # next run on level 1 -> output 0 -> absorb the level-1 run, output 1
    (3, 200, 1, [(0, 1), (0, 1), (1, 10), (5, 100)], (1, 3)),
    # fewer runs than the trigger: nothing at all
    (5, 200, 1, [(0, 100), (0, 100), (0, 100), (5, 1)], None),
    # size ratio boundary: 100 * 1.01 = 101.0 is not < 101 -> absorbed; then 201 * 1.01 =
    # 203.01 < 1000 stops -> 2 runs, output 5 - 1 = 4
    (3, 1000, 1, [(0, 100), (0, 101), (5, 1000)], (4, 2)),
    # ... and 102 is > 101.0 -> stop after the first run; 3 runs, not > 3: nothing
    (3, 1000, 1, [(0, 100), (0, 102), (5, 1000)], None),
    # size amplification boundary: 200 * 100 > 200 * 100 is false -> size ratio: 100 vs 100
    # absorbed, 200 * 1.01 >= 100 absorbed too -> all runs, output max level
    (3, 200, 1, [(0, 100), (0, 100), (5, 100)], (5, 3)),
    # size_ratio 0: an equal size is absorbed, a bigger one stops the size-ratio pick
    (3, 1000, 0, [(0, 10), (0, 10), (5, 1000)], (4, 2)),
    (3, 1000, 0, [(0, 10), (0, 11), (5, 1000)], None),
    # run count (4 > 3): the first 2 runs (31), then extended by size ratio (31 >= 11)
    (3, 1000, 0, [(0, 10), (0, 21), (0, 11), (5, 1000)], (4, 3)),
    # intermediate levels: level-0 run absorbs level 1 and 2 (sizes fit), stops before level 4
    (3, 1000, 1, [(0, 10), (1, 10), (2, 15), (4, 100), (5, 1000)], (3, 3)),
]


@pytest.mark.parametrize("trigger,amp,ratio,spec,expected", CASES)
def test_universal_compaction_cases(trigger: int, amp: int, ratio: int,
                                    spec: list[tuple[int, int]],
                                    expected: tuple[int, int] | None) -> None:
    rs = runs(*spec)
    unit = UniversalCompaction(amp, ratio, trigger).pick(6, rs)
    assert summary(unit, rs) == expected


def test_size_amp_and_size_ratio_directly() -> None:
    u = UniversalCompaction(200, 1, 3)
    rs = runs((0, 1), (0, 1), (5, 1))
    assert summary(u.pick_for_size_amp(5, rs), rs) is None  # 200 > 200 is false
    rs = runs((0, 2), (0, 1), (5, 1))
    assert summary(u.pick_for_size_amp(5, rs), rs) == (5, 3)
    assert u.pick_for_size_amp(5, runs((0, 9), (5, 1))) is None  # below the trigger
    assert u.pick_for_size_ratio(5, runs((0, 9), (5, 1))) is None


def test_create_unit_output_levels() -> None:
    """Java's UniversalCompactionTest.testOutputLevel: runs on levels 0, 0, 1, 3, 4."""
    u = UniversalCompaction(25, 1, 3)
    rs = runs((0, 1), (0, 1), (1, 1), (3, 1), (4, 1))
    assert u.create_unit(rs, 5, 1).output_level == 1
    assert u.create_unit(rs, 5, 2).output_level == 1
    assert u.create_unit(rs, 5, 3).output_level == 2
    assert u.create_unit(rs, 5, 4).output_level == 3
    assert u.create_unit(rs, 5, 5).output_level == 5
    assert len(u.create_unit(rs, 5, 1).files) == 3  # absorbed the level-1 run


def test_force_up_level0() -> None:
    """The lookup producer pushes every level-0 file up even below the trigger (as observed
    with Java 0.9: a lone first file goes to the max level, then the next one to level 4)."""
    s = ForceUpLevel0Compaction(UniversalCompaction(200, 1, 5))
    rs = runs((0, 10))
    assert summary(s.pick(6, rs), rs) == (5, 1)
    rs = runs((0, 10), (5, 100))
    assert summary(s.pick(6, rs), rs) == (4, 1)
    rs = runs((0, 10), (0, 10), (4, 15), (5, 100))  # 20 * 1.01 >= 15: level 4 absorbed
    assert summary(s.pick(6, rs), rs) == (4, 3)
    rs = runs((3, 10), (5, 100))
    assert s.pick(6, rs) is None  # no level-0 file


def test_full_compaction() -> None:
    assert pick_full_compaction(6, []) is None
    assert pick_full_compaction(6, runs((5, 10))) is None
    rs = runs((3, 10))
    assert summary(pick_full_compaction(6, rs), rs) == (5, 1)
    rs = runs((0, 1), (2, 1), (5, 10))
    assert summary(pick_full_compaction(6, rs), rs) == (5, 3)


def test_useful_unit_drops_no_ops() -> None:
    f = fmeta(level=5)
    assert useful_unit(CompactUnit(5, (f,))) is None
    assert useful_unit(CompactUnit(5, ())) is None
    assert useful_unit(None) is None
    g = fmeta(level=0)
    assert useful_unit(CompactUnit(5, (g,))) == CompactUnit(5, (g,))
