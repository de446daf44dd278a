"""``paimon inspect NAME``: system tables as JSON lines, in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.tables import two_commit_pk_table

REPO = Path(__file__).resolve().parents[2]


def _paimon(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "paimon_core.cli.main", *args],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("inspect-cli")
    t = two_commit_pk_table(wh)
    t.create_tag("first", 1)
    return wh


def _lines(wh: Path, *args: str) -> list[dict[str, Any]]:
    proc = _paimon("inspect", "--warehouse", str(wh), "--table", "db.t", *args)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_snapshots_and_files(warehouse: Path) -> None:
    snaps = _lines(warehouse, "snapshots")
    assert [s["snapshot_id"] for s in snaps] == [1, 2]
    assert list(snaps[0])[:3] == ["snapshot_id", "schema_id", "commit_user"]
    assert snaps[0]["commit_kind"] == "APPEND"
    files = _lines(warehouse, "files")
    assert [(f["partition"], f["level"], f["min_key"]) for f in files] == [
        ("[a]", 0, "[1]"), ("[a]", 0, "[1]"), ("[b]", 0, "[2]")]
    at1 = _lines(warehouse, "files", "--snapshot", "1")
    assert len(at1) == 2
    assert _lines(warehouse, "files", "--tag", "first") == at1


def test_buckets_and_audit_log(warehouse: Path) -> None:
    buckets = _lines(warehouse, "buckets")
    assert [(b["partition"], b["sorted_runs"]) for b in buckets] == [("[a]", 2), ("[b]", 1)]
    assert _lines(warehouse, "audit_log") == [
        {"rowkind": "+I", "dt": "a", "id": 1, "v": "x2"},
        {"rowkind": "+I", "dt": "b", "id": 2, "v": "y"},
    ]
    assert _lines(warehouse, "tags")[0]["tag_name"] == "first"


def test_usage_errors(warehouse: Path) -> None:
    proc = _paimon("inspect", "--warehouse", str(warehouse), "--table", "db.t", "snapshots",
                   "--snapshot", "1")
    assert proc.returncode == 2 and "no time travel" in proc.stderr
    proc = _paimon("inspect", "--warehouse", str(warehouse), "--table", "db.t", "nope")
    assert proc.returncode == 2
