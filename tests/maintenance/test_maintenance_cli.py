"""``paimon expire`` / ``remove-orphans`` / ``consumer``."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from paimon_core.cli.main import main
from paimon_core.consumer import ConsumerManager
from paimon_core.table import FileStoreTable
from tests.maintenance.helpers import FAR_FUTURE, append_table, assert_clean, write


@pytest.fixture
def wh(tmp_path: Path) -> Path:
    return tmp_path / "wh"


@pytest.fixture
def table(wh: Path) -> FileStoreTable:
    t = append_table(str(wh))
    for i in range(6):
        write(t, [i], f"x{i}", overwrite=i % 2 == 1)
    return t


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[Any], str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, [json.loads(x) for x in out.splitlines()], err


def test_expire(capsys: pytest.CaptureFixture[str], wh: Path, table: FileStoreTable) -> None:
    base = ["--warehouse", str(wh), "--table", "db.ap"]
    rc, out, _ = run(capsys, "expire", *base)  # table defaults: min 10, nothing
    assert rc == 0 and out[0]["expired"] == 0 and out[0]["earliest"] == 1
    rc, out, _ = run(capsys, "expire", *base, "--retain-min", "2", "--older-than-ms",
                     str(FAR_FUTURE), "--max-deletes", "3")
    assert rc == 0 and len(out) == 1
    r = out[0]
    assert r["op"] == "expire" and r["expired"] == 3 and r["expired_ids"] == [1, 2, 3]
    assert r["earliest"] == 4 and r["deleted_files"] > 0 and r["bytes_freed"] > 0
    assert r["deleted_files"] == r["data_files"] + r["changelog_files"] + r["metadata_files"]
    rc, out, _ = run(capsys, "expire", *base, "--retain-max", "1", "--time-retained", "0 ms")
    assert rc == 0 and out[0]["expired_ids"] == [4, 5]
    assert table.snapshot_manager.list_snapshot_ids() == [6]
    assert_clean(table)


def test_expire_usage_errors(capsys: pytest.CaptureFixture[str], wh: Path,
                             table: FileStoreTable) -> None:
    base = ["--warehouse", str(wh), "--table", "db.ap"]
    rc, _, err = run(capsys, "expire", *base, "--older-than-ms", "1", "--time-retained", "1 h")
    assert rc == 2 and "not both" in err
    rc, _, err = run(capsys, "expire", *base, "--retain-min", "3", "--retain-max", "2")
    assert rc == 1 and "SchemaError" in err
    rc, _, err = run(capsys, "expire", *base, "--time-retained", "soon")
    assert rc == 1
    assert table.snapshot_manager.list_snapshot_ids() == list(range(1, 7))


def test_remove_orphans(capsys: pytest.CaptureFixture[str], wh: Path,
                        table: FileStoreTable) -> None:
    stray = Path(table.path) / "pt=a" / "bucket-0" / "data-stray.parquet"
    stray.write_bytes(b"12345")
    old = time.time() - 3 * 86400
    os.utime(stray, (old, old))
    base = ["--warehouse", str(wh), "--table", "db.ap"]
    rc, out, _ = run(capsys, "remove-orphans", *base, "--dry-run")
    assert rc == 0
    assert out == [{"path": str(stray)},
                   {"op": "remove-orphans", "files": 1, "bytes": 5, "dry_run": True,
                    "older_than_ms": out[1]["older_than_ms"]}]
    assert stray.exists()
    rc, out, _ = run(capsys, "remove-orphans", *base, "--older-than-ms", str(int(old * 1000)))
    assert rc == 0 and out[-1]["files"] == 0 and stray.exists()  # not older than the cutoff
    rc, out, _ = run(capsys, "remove-orphans", *base)
    assert rc == 0 and out[-1]["files"] == 1 and not out[-1]["dry_run"]
    assert not stray.exists()


def test_consumer(capsys: pytest.CaptureFixture[str], wh: Path, table: FileStoreTable) -> None:
    w, t = str(wh), "db.ap"
    assert run(capsys, "consumer", "list", "--warehouse", w, "--table", t)[:2] == (0, [])
    rc, out, _ = run(capsys, "consumer", "reset", "etl", "--next-snapshot", "3",
                     "--warehouse", w, "--table", t)
    assert rc == 0 and out == [{"op": "consumer-reset", "consumer": "etl", "next_snapshot": 3}]
    # --warehouse/--table before the action work too
    rc, out, _ = run(capsys, "consumer", "--warehouse", w, "--table", t, "reset", "b",
                     "--next-snapshot", "7")
    assert rc == 0
    rc, out, _ = run(capsys, "consumer", "--warehouse", w, "--table", t, "list")
    assert out == [{"consumer": "b", "next_snapshot": 7}, {"consumer": "etl", "next_snapshot": 3}]
    assert ConsumerManager(table.file_io, table.path).consumers() == {"b": 7, "etl": 3}
    # the consumer holds snapshot 3 against an expiry
    rc, out, _ = run(capsys, "expire", "--warehouse", w, "--table", t, "--retain-min", "1",
                     "--older-than-ms", str(FAR_FUTURE))
    assert out[0]["expired_ids"] == [1, 2]
    rc, out, err = run(capsys, "consumer", "reset", "x", "--next-snapshot", "1",
                       "--warehouse", w, "--table", t)
    assert rc == 1 and "SnapshotExpiredError" in err
    rc, out, err = run(capsys, "consumer", "reset", "x", "--next-snapshot", "9",
                       "--warehouse", w, "--table", t)
    assert rc == 1 and "SnapshotNotExistError" in err
    rc, out, err = run(capsys, "consumer", "reset", "x", "--next-snapshot", "0",
                       "--warehouse", w, "--table", t)
    assert rc == 2
    rc, out, _ = run(capsys, "consumer", "delete", "etl", "--warehouse", w, "--table", t)
    assert rc == 0 and out == [{"op": "consumer-delete", "consumer": "etl"}]
    rc, out, err = run(capsys, "consumer", "delete", "etl", "--warehouse", w, "--table", t)
    assert rc == 1 and "does not exist" in err
    rc, out, err = run(capsys, "consumer", "list", "--table", t)
    assert rc == 2 and "--warehouse" in err
    rc, out, err = run(capsys, "consumer", "reset", "../x", "--next-snapshot", "4",
                       "--warehouse", w, "--table", t)
    assert rc == 1 and "InvalidIdentifierError" in err
