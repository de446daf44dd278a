"""Explicit compaction is a full compaction by default, as Paimon's batch compaction is
(``CALL sys.compact``, the Flink / Spark compact actions); the universal picker's choice is
behind ``strategy="minor"`` / ``paimon compact --strategy minor``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from paimon_core.compact.manager import live_bucket_files
from paimon_core.errors import SchemaError
from paimon_core.fsck import fsck
from paimon_core.spec.binary_row import serialize_binary_row
from paimon_core.spec.snapshot import CommitKind
from paimon_core.table import FileStoreTable
from tests.compact.helpers import pk_table, read_sorted, rows

PAIMON = Path(sys.executable).with_name("paimon")
NO_PARTITION = serialize_binary_row([], [])


def three_runs(wh: str) -> FileStoreTable:
    """Two partitions x 2 buckets, 3 level-0 runs in each bucket: below
    ``num-sorted-run.compaction-trigger`` (5), so the picker leaves every bucket alone."""
    table = pk_table(wh, partitioned=True, **{"write-only": "true"})
    for k in range(3):
        w = table.new_write("w")
        w.write_arrow(rows([1, 2, 3, 4, 5, 6], [f"v{k}"] * 6, pt=["a", "b"] * 3))
        table.new_commit("w").commit(w.prepare_commit(), k)
        w.close()
    return table


def levels(table: FileStoreTable) -> dict[tuple[bytes, int], list[int]]:
    return {k: sorted(f.level for f in files) for k, (_, files)
            in live_bucket_files(table.manifest_io, table.latest_snapshot()).items()}


def paimon(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PAIMON), *argv], capture_output=True, text=True, timeout=120,
                          check=False)


def test_cli_compact_is_full_by_default(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    table = three_runs(wh)
    before = read_sorted(table)
    runs_before = levels(table)
    assert len(runs_before) == 3 and all(v == [0, 0, 0] for v in runs_before.values())
    base = ["compact", "--warehouse", wh, "--table", "db.t"]

    p = paimon(*base, "--strategy", "minor")  # the picker: nothing to do
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"op": "compact", "snapshot": None, "strategy": "minor"}
    assert levels(table) == runs_before

    p = paimon(*base)  # no flag: full
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"op": "compact", "snapshot": 4, "strategy": "full"}
    assert table.snapshot_manager.snapshot(4).commit_kind is CommitKind.COMPACT
    assert levels(table) == {k: [5] for k in runs_before}  # one sorted run per bucket
    assert read_sorted(table) == before
    assert fsck(table).ok

    p = paimon(*base, "--full")  # the explicit spelling still works; nothing left to do
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["snapshot"] is None

    p = paimon(*base, "--strategy", "major")
    assert p.returncode == 2 and "full" in p.stderr and "minor" in p.stderr


def test_table_compact_is_full_by_default(tmp_path: Path) -> None:
    table = three_runs(str(tmp_path / "wh"))
    assert table.compact(strategy="minor") is None  # 3 runs < trigger 5
    assert table.compact() == 4
    assert all(v == [5] for v in levels(table).values())
    assert table.compact() is None  # one run on the max level everywhere: nothing to do
    with pytest.raises(SchemaError, match="minor"):
        table.compact(strategy="major")  # type: ignore[arg-type]


def test_minor_strategy_is_the_pickers_choice(tmp_path: Path) -> None:
    """``minor`` compacts what the universal picker asks for, and only that: a bucket with
    more runs than the trigger is compacted, the others are left alone."""
    table = pk_table(str(tmp_path / "wh"), bucket="2", **{"write-only": "true"})
    for k in range(6):  # id 0 is in bucket 1, id 1 in bucket 0: 6 runs in bucket 1, 1 in 0
        w = table.new_write("w")
        ids = [0] if k else [0, 1]
        w.write_arrow(rows(ids, [f"v{k}"] * len(ids)))
        table.new_commit("w").commit(w.prepare_commit(), k)
        w.close()
    busy, idle = (NO_PARTITION, 1), (NO_PARTITION, 0)
    assert levels(table) == {busy: [0] * 6, idle: [0]}
    assert table.compact(strategy="minor") == 7
    assert levels(table) == {busy: [5], idle: [0]}  # the picker's unit only
    assert table.compact() == 8
    assert levels(table) == {busy: [5], idle: [5]}
