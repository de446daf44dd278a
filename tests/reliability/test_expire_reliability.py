"""Expiry reliability (reliability.md rule 6, I3, I4, I8).

* Randomised (seeded) sequences of appends, PK upserts and deletes, overwrites, compactions,
  tags, consumers and expiries: after every expiry ``fsck`` is clean, every retained snapshot
  and tag reads exactly what it read when it was committed, every consumer's position is still
  readable, expired snapshots give a typed error; at the end orphan cleaning reclaims what is
  left without touching a live file.
* A failure at each single deletion of an expiry (in process: the Nth delete raises), and a
  kill (``os._exit`` in a child process): afterwards every snapshot but the oldest remaining one
  and every tag still reads as before, and a re-run completes to exactly the files a clean run
  leaves, with a clean ``fsck``.
* The same on S3 (moto).
"""

from __future__ import annotations

import errno
import os
import random
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.consumer import Consumer, ConsumerManager
from paimon_core.errors import SnapshotExpiredError, StorageError
from paimon_core.expire import ExpireConfig, ExpireSnapshots
from paimon_core.fsck import fsck, orphan_files
from paimon_core.io.file_io import FileIO
from paimon_core.orphans import remove_orphan_files
from paimon_core.table import FileStoreTable
from tests.maintenance.helpers import (
    FAR_FUTURE,
    append_table,
    compact_append,
    pk_table,
    rows,
    tree,
    upgrade_level,
    write,
)
from tests.reliability.harness import assert_fsck_clean, run_child

EXIT_CODE = 86


class Model:
    """What every snapshot read when it was committed; tags and consumers."""

    def __init__(self, t: FileStoreTable) -> None:
        self.t = t
        self.snapshots: dict[int, list[tuple[Any, ...]]] = {}
        self.tags: dict[str, int] = {}

    def committed(self, ids: list[int]) -> None:
        for sid in ids:
            self.snapshots[sid] = rows(self.t, snapshot_id=sid)

    def check(self, *, after_crash: bool = False) -> None:
        """Every snapshot reads as committed; ``after_crash`` (an expiry interrupted): those
        below the expiry fence it raised before deleting anything raise a typed expired
        error, every one from the fence on is intact."""
        t = self.t
        ids = t.snapshot_manager.list_snapshot_ids()
        assert ids == list(range(ids[0], ids[-1] + 1)), ids
        fence = t.snapshot_manager.earliest_snapshot_id() if after_crash else ids[0]
        assert fence is not None
        for sid in ids:
            if sid < fence:
                with pytest.raises(SnapshotExpiredError):
                    t.to_arrow(snapshot_id=sid)
            else:
                assert rows(t, snapshot_id=sid) == self.snapshots[sid], f"snapshot {sid}"
        for name, sid in self.tags.items():
            assert rows(t, tag=name) == self.snapshots[sid], f"tag {name}"
        consumers = ConsumerManager(t.file_io, t.path).consumers()
        for cid, nxt in consumers.items():
            assert nxt >= ids[0], f"consumer {cid} at {nxt} lost snapshots ({ids})"
            if nxt <= ids[-1]:
                assert rows(t, snapshot_id=nxt) == self.snapshots[nxt]
        if ids[0] > 1 and not after_crash:
            with pytest.raises(SnapshotExpiredError):
                t.to_arrow(snapshot_id=ids[0] - 1)


def _clean(t: FileStoreTable) -> None:
    report = fsck(t, deep=False)
    assert report.ok, [f.to_json() for f in report.errors]


def _random_sequence(t: FileStoreTable, seed: int, steps: int, *, pk: bool) -> Model:
    rnd = random.Random(seed)
    model = Model(t)
    consumers = ConsumerManager(t.file_io, t.path)
    expiries = 0
    for step in range(steps):
        op = rnd.choices(["write", "delete", "overwrite", "compact", "tag", "untag",
                          "consumer", "unconsume", "expire"],
                         [8, 2 if pk else 0, 2, 2, 2, 1, 2, 1, 4])[0]
        pt = rnd.choice("ab")
        latest = t.snapshot_manager.latest_snapshot_id()
        earliest = t.snapshot_manager.earliest_snapshot_id()
        if op == "write":
            lo = rnd.randrange(0, 30)
            model.committed(write(t, range(lo, lo + rnd.randrange(1, 6)), f"w{step}", pt))
        elif op == "delete":
            lo = rnd.randrange(0, 30)
            model.committed(write(t, range(lo, lo + 3), f"d{step}", pt, delete=True))
        elif op == "overwrite":
            model.committed(write(t, range(rnd.randrange(0, 5)), f"o{step}", pt,
                                  overwrite=True))
        elif op == "compact":
            model.committed(upgrade_level(t) if pk else compact_append(t, pt))
        elif op == "tag" and latest is not None and earliest is not None:
            sid = rnd.randint(earliest, latest)
            name = f"tag{step}"
            t.create_tag(name, sid)
            model.tags[name] = sid
        elif op == "untag" and model.tags:
            name = rnd.choice(sorted(model.tags))
            t.delete_tag(name)
            del model.tags[name]
        elif op == "consumer" and latest is not None and earliest is not None:
            consumers.reset_consumer(f"c{rnd.randrange(3)}",
                                     Consumer(rnd.randint(earliest, latest + 1)))
        elif op == "unconsume":
            for cid in list(consumers.consumers())[:1]:
                consumers.delete_consumer(cid)
        elif op == "expire" and latest is not None:
            expiries += 1
            retain_min = rnd.randint(1, 3)
            retain_max = rnd.choice([None, retain_min, retain_min + 2])
            t.expire_snapshots(retain_min=retain_min, retain_max=retain_max,
                               max_deletes=rnd.randint(1, 6), older_than_millis=FAR_FUTURE)
            _clean(t)
            model.check()
    assert expiries >= 3
    return model


@pytest.mark.parametrize(("kind", "seed"), [("append", 1), ("append", 2), ("pk", 3), ("pk", 4)])
def test_random_sequences(tmp_path: Path, kind: str, seed: int) -> None:
    wh = str(tmp_path / "wh")
    # writers compact when their sorted runs call for it (real COMPACT snapshots)
    opts = {"manifest.merge-min-count": "3", "write-only": "false",
            "num-sorted-run.compaction-trigger": "3"}
    if kind == "pk":
        t = pk_table(wh, **{"changelog-producer": "input", **opts})
    else:
        t = append_table(wh, **opts)
    model = _random_sequence(t, seed, 36, pk=kind == "pk")
    # expire everything that may go, reclaim what is left; nothing live is touched
    ConsumerManager(t.file_io, t.path).delete_consumer("c0")
    t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE, max_deletes=1000)
    remove_orphan_files(t, FAR_FUTURE)
    assert orphan_files(t, FAR_FUTURE) == []
    model.check()
    assert_fsck_clean(t)
    report = fsck(t, deep=True)
    assert report.ok, [f.to_json() for f in report.errors]


# ---------------------------------------------------------------------------------------------
# a failure / a kill at every deletion


class FailingDeletes(FileIO):
    """Raises (like a lost connection) at the ``fail_at``-th delete; counts deletes."""

    def __init__(self, root: str, options: Any = None, fail_at: int | None = None,
                 exit_at: int | None = None) -> None:
        super().__init__(root, options)
        self.fail_at = fail_at
        self.exit_at = exit_at
        self.deletes = 0

    def delete(self, path: str) -> bool:
        self.deletes += 1
        if self.deletes == self.exit_at:
            os._exit(EXIT_CODE)
        if self.deletes == self.fail_at:
            raise StorageError(path, str(OSError(errno.ECONNRESET, "injected")))
        return super().delete(path)

    def delete_files(self, paths: Sequence[str]) -> list[bool]:
        """A batch (S3): the files before the failing one go, then the failure."""
        for i, path in enumerate(paths):
            self.deletes += 1
            if self.deletes in (self.exit_at, self.fail_at):
                super().delete_files(paths[:i])
                if self.deletes == self.exit_at:
                    os._exit(EXIT_CODE)
                raise StorageError(path, str(OSError(errno.ECONNRESET, "injected")))
        return super().delete_files(paths)


CONFIG = ExpireConfig(retain_min=1, max_deletes=100)


def _build_base(wh: str) -> tuple[FileStoreTable, Model]:
    t = pk_table(wh, **{"changelog-producer": "input", "manifest.merge-min-count": "2"})
    m = Model(t)
    m.committed(write(t, range(0, 8), "v1"))
    m.committed(write(t, range(4, 12), "v2", "b"))
    t.create_tag("keep", 2)
    m.tags["keep"] = 2
    m.committed(upgrade_level(t))
    m.committed(write(t, range(0, 4), "v3", overwrite=True))
    m.committed(write(t, range(0, 6), "v4", "b", delete=True))
    m.committed(write(t, range(2, 9), "v5", "b", overwrite=True))
    m.committed(write(t, range(20, 24), "v6"))
    ConsumerManager(t.file_io, t.path).reset_consumer("c", Consumer(6))
    return t, m


def _open(wh: Path, fio: FileIO | None = None, options: Any = None) -> FileStoreTable:
    t = FileSystemCatalog(str(wh), options).get_table("db.pk")
    if fio is not None:
        t.file_io = fio
    return t


def _expire(t: FileStoreTable) -> Any:
    return ExpireSnapshots(t.file_io, t.path, t.schema, config=CONFIG,
                           older_than_millis=FAR_FUTURE).expire()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Model, dict[str, int], int,
                                                          tuple[int, ...]]:
    root = tmp_path_factory.mktemp("expire-base")
    _, model = _build_base(str(root / "base"))
    shutil.copytree(root / "base", root / "ref")
    ref = _open(root / "ref")
    counting = FailingDeletes(ref.file_io.root)
    ref.file_io = counting
    result = _expire(ref)
    assert result.expired_ids == (1, 2, 3, 4, 5)
    ref_tree = tree(ref.file_io, ref.path)
    return root / "base", model, ref_tree, counting.deletes, result.expired_ids


def _after_crash(wh: Path, model: Model, ref_tree: dict[str, int], expired: tuple[int, ...]
                 ) -> None:
    t = _open(wh)
    model.t = t
    # everything from the fence on is intact, tags and consumers too
    model.check(after_crash=True)
    again = _expire(t)
    assert set(again.expired_ids) <= set(expired)
    model.check()
    assert tree(t.file_io, t.path) == ref_tree
    _clean(t)


def test_failure_at_every_delete(tmp_path: Path, base: Any) -> None:
    src, model, ref_tree, total, expired = base
    assert total >= 20
    for n in range(1, total + 1):
        wh = tmp_path / f"n{n}"
        shutil.copytree(src, wh)
        t = _open(wh)
        t.file_io = FailingDeletes(t.file_io.root, fail_at=n)
        with pytest.raises(StorageError, match="injected"):
            _expire(t)
        _after_crash(wh, model, ref_tree, expired)
        shutil.rmtree(wh)


def _killed_expiry(index: int, barrier: Any, warehouse: str, exit_at: int) -> str:
    t = _open(Path(warehouse))
    t.file_io = FailingDeletes(t.file_io.root, exit_at=exit_at)
    _expire(t)
    return "completed without being killed"


def test_kill_during_expiry(tmp_path: Path, base: Any) -> None:
    src, model, ref_tree, total, expired = base
    for n in (total // 3, total - 1):
        wh = tmp_path / f"k{n}"
        shutil.copytree(src, wh)
        res = run_child(_killed_expiry, (str(wh), n), timeout=120)
        assert res.exitcode == EXIT_CODE, res.error
        _after_crash(wh, model, ref_tree, expired)


# ---------------------------------------------------------------------------------------------
# S3


@pytest.mark.s3
def test_s3_sequence_and_failed_expiry(s3_root: tuple[str, dict[str, str]]) -> None:
    root, opts = s3_root
    t = append_table(root, storage=opts, **{"manifest.merge-min-count": "2"})
    model = Model(t)
    for i in range(4):
        model.committed(write(t, range(i, i + 3), f"w{i}", "ab"[i % 2], overwrite=i == 2))
        if i == 0:
            t.create_tag("t1", 1)
            model.tags["t1"] = 1
    model.committed(compact_append(t, "a"))
    ConsumerManager(t.file_io, t.path).reset_consumer("c", Consumer(2))
    r = t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE)
    assert r.expired_ids == (1,)
    ConsumerManager(t.file_io, t.path).delete_consumer("c")
    # a failure in the middle of the next expiry, then a re-run
    failing = FailingDeletes(t.file_io.root, opts, fail_at=4)
    with pytest.raises(StorageError, match="injected"):
        ExpireSnapshots(failing, t.path, t.schema, config=CONFIG,
                        older_than_millis=FAR_FUTURE, delete_threads=1).expire()
    model.check(after_crash=True)
    r = t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE)
    assert r.expired_ids and t.snapshot_manager.list_snapshot_ids() == [5]
    cutoff = int(time.time() * 1000) + 120_000
    remove_orphan_files(t, cutoff)
    assert orphan_files(t, cutoff) == []
    model.check()
    _clean(t)
