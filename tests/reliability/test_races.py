"""Concurrent writers (reliability.md, "Concurrent writers")."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from paimon_core.errors import CommitConflictError
from paimon_core.io.file_io import join
from paimon_core.schema_manager import SchemaManager
from paimon_core.spec.schema import encode_schema
from tests.commit.helpers import data_file, message
from tests.reliability.harness import (
    AppendModel,
    PkModel,
    append_rows,
    assert_fsck_clean,
    create_table,
    open_table,
    run_processes,
)
from tests.reliability.minwrite import writer_for
from tests.reliability.workers import append_writer, pk_writer

N_PROCS, N_COMMITS, ROWS = 16, 20, 3
RACE_REPORT: dict[str, Any] = {}


def _race_appends(warehouse: str, options: dict[str, str] | None, label: str) -> None:
    create_table(warehouse, options, "append")
    t0 = time.monotonic()
    res = run_processes(append_writer, [(warehouse, options, N_COMMITS, ROWS)] * N_PROCS,
                        timeout=600)
    elapsed = time.monotonic() - t0
    errors = [r.error for r in res if r.error or r.exitcode != 0]
    assert not errors, errors[:2]
    table = open_table(warehouse, options)
    total = N_PROCS * N_COMMITS
    refs = assert_fsck_clean(table, expect_snapshots=total)
    model = AppendModel()
    for i in range(N_PROCS):
        for k in range(N_COMMITS):
            model.add(append_rows(f"p{i}", i, k, ROWS))
    model.check(table)
    # every acknowledged snapshot id is distinct and accounted for
    acked = sorted(s for r in res for s in r.value["snapshots"])
    assert acked == list(range(1, total + 1))
    users = {table.snapshot_manager.snapshot(s).commit_user for s in (1, total)}
    assert users <= {f"writer-{i}" for i in range(N_PROCS)}
    assert len(refs.data) == total
    RACE_REPORT[label] = {
        "seconds": round(elapsed, 1),
        "lost_races": sum(r.value["lost_races"] for r in res),
        "budget_exhausted_retries": sum(r.value["budget_exhausted"] for r in res),
        "state_unknown": sum(r.value["state_unknown"] for r in res),
    }
    print(f"\n{label}: {RACE_REPORT[label]}")


def test_16_processes_x_20_appends_local(tmp_path: Path) -> None:
    _race_appends(str(tmp_path / "wh"), None, "local")


@pytest.mark.s3
def test_16_processes_x_20_appends_s3(s3_bucket: tuple[str, dict[str, str]]) -> None:
    root, opts = s3_bucket
    _race_appends(root, opts, "s3")
