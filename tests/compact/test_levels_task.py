"""Levels of a bucket and the compaction task's upgrade / rewrite decisions (metadata only,
with a recording rewriter)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from paimon_core.compact.levels import Levels
from paimon_core.compact.picker import CompactUnit
from paimon_core.compact.task import CompactResult, run_compact_task
from paimon_core.errors import CorruptMetadataError
from paimon_core.spec.manifest import DataFileMeta
from tests.compact.helpers import decode_int_key, fmeta


def test_levels_order_and_runs() -> None:
    a = fmeta(seq=(0, 5), name="a")
    b = fmeta(seq=(6, 9), name="b")
    c = fmeta(seq=(6, 9), name="c", keys=(20, 30))  # same max sequence: both kept
    d = fmeta(level=2, keys=(11, 20), name="d")
    e = fmeta(level=2, keys=(0, 10), name="e")
    f = fmeta(level=5, keys=(0, 100), name="f")
    lv = Levels([a, b, c, d, e, f], 6, decode_int_key)
    assert [x.file_name for x in lv.level0] == ["b", "c", "a"]  # newest first
    rs = lv.level_sorted_runs()
    assert [(r.level, [x.file_name for x in r.files]) for r in rs] == [
        (0, ["b"]), (0, ["c"]), (0, ["a"]), (2, ["e", "d"]), (5, ["f"])]
    assert lv.number_of_sorted_runs() == 5
    assert lv.non_empty_highest_level() == 5
    assert [lvl for lvl, _ in lv.files_above(2)] == [5]
    assert Levels([a], 6, decode_int_key).non_empty_highest_level() == 0
    assert Levels([], 6, decode_int_key).non_empty_highest_level() == -1
    # a restored file above num-levels raises the number of levels
    assert Levels([fmeta(level=7)], 6, decode_int_key).num_levels == 8


def test_overlapping_level_is_corrupt() -> None:
    with pytest.raises(CorruptMetadataError, match="overlap"):
        Levels([fmeta(level=1, keys=(0, 10)), fmeta(level=1, keys=(10, 20))], 6,
               decode_int_key)


class Recorder:
    """Rewriter that records calls and returns placeholder outputs."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, list[list[str]]]] = []

    def rewrite(self, output_level: int, drop_delete: bool,
                sections: Sequence[Sequence[DataFileMeta]]) -> CompactResult:
        names = [[f.file_name for f in s] for s in sections]
        self.calls.append(("rewrite", output_level, names))
        files = [f for s in sections for f in s]
        return CompactResult(files, [replace(files[0], file_name="out-" + files[0].file_name,
                                             level=output_level)])

    def upgrade(self, output_level: int, file: DataFileMeta) -> CompactResult:
        self.calls.append(("upgrade", output_level, [[file.file_name]]))
        return CompactResult([file], [replace(file, level=output_level)])


def run(unit_files: list[DataFileMeta], out: int, min_size: int = 50) -> list[tuple[str, int,
                                                                                     list[list[str]]]]:
    rec = Recorder()
    run_compact_task(CompactUnit(out, tuple(unit_files)), drop_delete=True, max_level=5,
                     compaction_file_size=min_size, rewriter=rec, decode_key=decode_int_key)
    return rec.calls


def test_task_merges_overlapping_and_upgrades_big_files() -> None:
    s1 = fmeta(10, keys=(0, 10), name="s1")
    s2 = fmeta(10, keys=(5, 15), name="s2")  # overlaps s1: one section of two runs
    big = fmeta(100, keys=(20, 30), name="big")  # alone and big: upgraded
    small = fmeta(10, keys=(40, 50), name="small")  # alone and small: candidate
    small2 = fmeta(10, keys=(60, 70), name="small2")
    calls = run([s1, s2, big, small, small2], 4)
    assert calls == [
        ("rewrite", 4, [["s1", "s2"]]),
        ("upgrade", 4, [["big"]]),
        ("rewrite", 4, [["small"], ["small2"]]),  # neighbouring small files merged
    ]


def test_task_lone_small_file_is_upgraded() -> None:
    assert run([fmeta(10, name="x")], 5) == [("upgrade", 5, [["x"]])]
    # a file already on the output level stays as it is
    assert run([fmeta(10, level=3, name="y")], 3) == []


def test_task_never_upgrades_deletes_to_max_level() -> None:
    d = fmeta(100, deletes=2, name="d")
    assert run([d], 5) == [("rewrite", 5, [["d"]])]
    assert run([fmeta(100, deletes=None, name="n")], 5) == [("rewrite", 5, [["n"]])]
    assert run([fmeta(100, deletes=2, name="d2")], 4) == [("upgrade", 4, [["d2"]])]
