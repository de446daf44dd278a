"""``python -m pipelines.jobs.compact --full`` as a command on a multi-bucket table: the same rows,
files and levels as the in-process ``table.compact()`` of a copy, one COMPACT snapshot, and
the live files listed once per round on the driver (the plan and the commit's check), never
in the tasks (they compact the files the driver planned)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core import CommitKind, FileStoreTable, FileSystemCatalog
from paimon_core.fsck import fsck
from paimon_core.integration import list_buckets, snapshot_listings
from pipelines.session import source_root
from tests.tables import pk_table, sorted_rows, write_rows

pytestmark = pytest.mark.spark

PARTITIONS = ("a", "b")
BUCKETS = 4


def _table(wh: Path) -> FileStoreTable:
    """2 partitions x 4 buckets, 3 overlapping commits (3 level-0 runs per bucket)."""
    t = pk_table(wh, bucket=str(BUCKETS))
    for c in range(3):
        ids = list(range(c * 40, c * 40 + 200))
        rows = pa.table({"pt": [PARTITIONS[i % 2] for i in ids], "id": ids,
                         "v": [f"v{i}-{c}" for i in ids]})
        write_rows(t, rows, c + 1)
    return t


def _layout(t: FileStoreTable) -> dict[tuple[bytes, int], list[tuple[int, int]]]:
    """(partition, bucket) -> sorted (level, row count) of its live files."""
    _, groups = list_buckets(t)
    return {k: sorted((f.level, f.row_count) for f in files)
            for k, (_, files) in groups.items()}


def test_compact_command_full_lists_once(tmp_path: Path) -> None:
    wh, ref_wh = tmp_path / "wh", tmp_path / "ref"
    t = _table(wh)
    before = _layout(t)
    assert len(before) == len(PARTITIONS) * BUCKETS
    assert all(len(files) == 3 for files in before.values())
    shutil.copytree(wh, ref_wh)

    # the reference: the in-process full compaction of a copy (and the counter counts:
    # its plan and its commit's conflict check are one listing each)
    ref = FileSystemCatalog(str(ref_wh)).get_table("db.pk")
    listed = snapshot_listings()
    assert ref.compact() is not None
    assert snapshot_listings() - listed == 2

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [source_root(), *filter(None, [os.environ.get("PYTHONPATH")])])}
    p = subprocess.run(
        [sys.executable, "-m", "pipelines.jobs.compact", "--warehouse", str(wh), "--table",
         "db.pk", "--full", "--master", "local[2]"],
        env=env, capture_output=True, text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    report = json.loads(p.stdout.strip().splitlines()[-1])

    t = FileSystemCatalog(str(wh)).get_table("db.pk")
    latest = t.snapshot_manager.latest_snapshot()
    assert latest is not None and latest.commit_kind is CommitKind.COMPACT
    assert report["snapshot_id"] == latest.id == 4 and report["attempts"] == 1
    assert sorted(report["buckets"]) == sorted(
        [[f"pt={p}", b] for p in PARTITIONS for b in range(BUCKETS)])
    tasks = [tuple(x) for x in report["tasks"]]
    assert len(set(tasks)) == len(tasks)  # one task per bucket
    assert report["files_before"] == sum(len(f) for f in before.values())
    after = _layout(t)
    assert after == _layout(ref)
    assert report["files_after"] == sum(len(f) for f in after.values())
    assert sorted_rows(t, "pt", "id", "v") == sorted_rows(ref, "pt", "id", "v")
    # the plan and the commit's check on the driver; nothing listed again per bucket
    assert (report["listings"], report["task_listings"]) == (2, 0)
    assert fsck(t).ok
