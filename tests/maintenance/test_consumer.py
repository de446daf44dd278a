"""Consumers and expiry: positions hold snapshots back, ``consumer.expiration-time``."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from paimon_core.consumer import Consumer, ConsumerManager
from paimon_core.errors import CorruptMetadataError
from paimon_core.expire import ExpireConfig, ExpireSnapshots
from paimon_core.io.file_io import FileIO
from paimon_core.schema_change import SetOption
from paimon_core.table import FileStoreTable
from tests.maintenance.helpers import FAR_FUTURE, append_table, assert_clean, write


@pytest.fixture
def table(tmp_path: Path) -> FileStoreTable:
    t = append_table(str(tmp_path / "wh"))
    for i in range(8):
        write(t, [i], f"x{i}")
    return t


def _mgr(t: FileStoreTable) -> ConsumerManager:
    return ConsumerManager(t.file_io, t.path)


def test_the_slowest_consumer_holds_snapshots(table: FileStoreTable) -> None:
    m = _mgr(table)
    m.reset_consumer("fast", Consumer(7))
    m.reset_consumer("slow", Consumer(4))
    m.reset_consumer("done", Consumer(9))  # caught up: the next snapshot does not exist yet
    r = table.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE)
    assert r.expired_ids == (1, 2, 3)
    # every consumer still reads from its position on
    assert table.read_unmerged_changes(3, 8).num_rows == 5
    m.reset_consumer("slow", Consumer(7))
    assert table.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE).expired_ids == (
        4, 5, 6)
    m.delete_consumer("slow")
    m.delete_consumer("fast")
    assert table.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE).expired_ids == (7,)
    assert_clean(table)


def test_consumer_expiration_is_by_modification_time(table: FileStoreTable) -> None:
    """``ConsumerManager.expire(expireDateTime)``: a consumer whose file was modified before
    now - consumer.expiration-time is deleted, before the snapshot range is chosen."""
    m = _mgr(table)
    for cid in ("old", "edge", "new"):
        m.reset_consumer(cid, Consumer(2))
    now = time.time()
    os.utime(m.consumer_path("old"), (now - 3601, now - 3601))
    os.utime(m.consumer_path("edge"), (now - 3500, now - 3500))
    table.alter([SetOption("consumer.expiration-time", "1 h")])
    r = table.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE)
    assert r.expired_consumers == ("old",)
    assert r.expired_ids == (1,)  # "edge" and "new" still hold snapshot 2
    assert sorted(m.consumers()) == ["edge", "new"]
    # without the option consumers never expire
    cfg = ExpireConfig(retain_min=1)
    os.utime(m.consumer_path("new"), (now - 99_999, now - 99_999))
    r = ExpireSnapshots(table.file_io, table.path, table.schema, config=cfg,
                        older_than_millis=FAR_FUTURE).expire()
    assert r.expired_consumers == () and sorted(m.consumers()) == ["edge", "new"]


def test_half_written_consumer_file_is_read_again(table: FileStoreTable) -> None:
    _mgr(table).reset_consumer("c", Consumer(5))
    reads: list[str] = []

    class Flaky(FileIO):
        def read_bytes(self, path: str) -> bytes:
            if path.endswith("/consumer-c"):
                reads.append(path)
                if len(reads) <= 2:
                    return b""  # caught between truncate and write (Java overwrites in place)
            return super().read_bytes(path)

    r = ExpireSnapshots(Flaky(table.file_io.root), table.path, table.schema,
                        config=ExpireConfig(retain_min=1), older_than_millis=FAR_FUTURE).expire()
    assert r.expired_ids == (1, 2, 3, 4)
    assert len(reads) > 2


def test_corrupt_consumer_stops_expiry(table: FileStoreTable) -> None:
    _mgr(table).reset_consumer("c", Consumer(5))
    Path(_mgr(table).consumer_path("c")).write_text('{"nextSnapshot": "x"}')
    with pytest.raises(CorruptMetadataError, match="consumer-c"):
        table.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE)
    assert table.snapshot_manager.list_snapshot_ids() == list(range(1, 9))


def test_consumer_file_format(table: FileStoreTable) -> None:
    """The file Java's ``Consumer.fromJson`` reads."""
    _mgr(table).reset_consumer("etl-1", Consumer(6))
    path = Path(table.path) / "consumer" / "consumer-etl-1"
    assert path.read_text().replace(" ", "").replace("\n", "") == '{"nextSnapshot":6}'
