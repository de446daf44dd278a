"""Process bodies for the race and crash scenarios (module level: spawn imports them).

Every worker opens its own catalog, FileIO and table handle.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from paimon_core.catalog import FileSystemCatalog
from paimon_core.commit.table_commit import TableCommit
from paimon_core.errors import CommitConflictError, CommitStateUnknownError, PaimonError
from paimon_core.expire import INT_MAX, ExpireConfig, ExpireSnapshots
from paimon_core.identifier import Identifier
from paimon_core.io.file_io import FileIO, join
from paimon_core.table import FileStoreTable
from tests.reliability.faults import Fault, FaultFileIO
from tests.reliability.harness import append_rows, open_table
from tests.reliability.minwrite import writer_for


class CountingCommit:
    """A TableCommit whose back-off sleeps are counted (= lost races)."""

    def __init__(self, table: FileStoreTable, user: str, max_retries: int | None = None) -> None:
        self.lost_races = 0

        def sleep(s: float) -> None:
            self.lost_races += 1
            time.sleep(s)

        self.commit = TableCommit(table.file_io, table.path, commit_user=user,
                                  schema_manager=table.schema_manager,
                                  snapshot_manager=table.snapshot_manager,
                                  manifest_io=table.manifest_io, max_retries=max_retries,
                                  sleep=sleep)


def commit_until_done(cc: CountingCommit, messages: Sequence[Any], identifier: int,
                      stats: dict[str, int]) -> list[int]:
    """Commit; on an exhausted retry budget retry the same identifier (exactly-once makes it
    safe); on an unknown state, resolve with filter_committed before retrying."""
    for _ in range(50):
        try:
            return cc.commit.commit(messages, identifier)
        except CommitConflictError as e:
            if "gave up after" not in str(e):
                raise
            stats["budget_exhausted"] += 1
        except CommitStateUnknownError:
            stats["state_unknown"] += 1
            if not cc.commit.filter_committed([identifier]):
                return []
    raise AssertionError("could not commit after 50 rounds")


def append_writer(index: int, barrier: Any, warehouse: str, options: Mapping[str, str] | None,
                  n_commits: int, rows: int) -> dict[str, Any]:
    table = open_table(warehouse, options)
    user = f"writer-{index}"
    cc = CountingCommit(table, user)
    stats = {"budget_exhausted": 0, "state_unknown": 0}
    ids: list[int] = []
    if barrier is not None:
        barrier.wait()
    t0 = time.monotonic()
    for k in range(n_commits):
        w = writer_for(table, user)
        w.write_arrow(append_rows(f"p{index}", index, k, rows))
        ids += commit_until_done(cc, w.prepare_commit(), k, stats)
    return {"snapshots": ids, "lost_races": cc.lost_races, **stats,
            "seconds": time.monotonic() - t0}


def pk_writer(index: int, barrier: Any, warehouse: str, options: Mapping[str, str] | None,
              rounds: int, keys: Sequence[int]) -> dict[str, Any]:
    """Each round: a fresh writer (restores the bucket's max sequence), upsert ``keys`` with
    this writer's value, commit. Returns (key, seq, row) of every acknowledged commit, read
    from the files the writer itself produced."""
    table = open_table(warehouse, options)
    user = f"pk-{index}"
    cc = CountingCommit(table, user)
    stats = {"budget_exhausted": 0, "state_unknown": 0}
    acked: list[tuple[int, int, tuple[Any, ...]]] = []
    if barrier is not None:
        barrier.wait()
    for r in range(rounds):
        w = writer_for(table, user)
        data = pa.table({
            "k": pa.array(list(keys), pa.int32()),
            "v": pa.array([f"w{index}r{r}k{k}" for k in keys], pa.string()),
            "writer": pa.array([index] * len(keys), pa.int32()),
            "round": pa.array([r] * len(keys), pa.int32()),
        })
        w.write_arrow(data)
        msgs = w.prepare_commit()
        if not commit_until_done(cc, msgs, r, stats):
            continue
        for m in msgs:
            for f in m.new_files:
                path = join(table.path, f"bucket-{m.bucket}", f.file_name)
                fs, inner = table.file_io.arrow_filesystem(path)
                with fs.open_input_file(inner) as fh:
                    t = pq.read_table(fh, columns=["_SEQUENCE_NUMBER", "k", "v", "writer",
                                                   "round"])
                for seq, k, v, wr, rd in zip(*(t.column(i).to_pylist() for i in range(5))):
                    acked.append((k, seq, (k, v, wr, rd)))
    return {"acked": acked, "lost_races": cc.lost_races, **stats}


def crash_writer(index: int, barrier: Any, warehouse: str, options: Mapping[str, str] | None,
                 point: str, user: str, identifier: int, seq: int) -> str:
    """Write and commit one batch with a fault FileIO that ``os._exit``s at ``point``."""
    table = open_table(warehouse, options, faults=[Fault(point, "exit")])
    w = writer_for(table, user)
    w.write_arrow(append_rows("p", 0, seq))
    msgs = w.prepare_commit()
    fio = table.file_io
    assert isinstance(fio, FaultFileIO)
    if point == "after_data_write":
        fio.reached(point)  # local data files are written natively, past FileIO
    table.new_commit(user).commit(msgs, identifier)
    return "completed without reaching the crash point"


def overwrite_writer(index: int, barrier: Any, warehouse: str,
                     options: Mapping[str, str] | None, rounds: int) -> dict[str, Any]:
    """Dynamic INSERT OVERWRITE of partition ``p0`` with this round's rows, ``rounds`` times."""
    table = open_table(warehouse, options)
    user = "overwriter"
    cc = CountingCommit(table, user)
    stats = {"budget_exhausted": 0, "state_unknown": 0}
    if barrier is not None:
        barrier.wait()
    for r in range(rounds):
        w = writer_for(table, user)
        w.write_arrow(append_rows("p0", 100 + index, r, 2))
        msgs = w.prepare_commit()
        while True:
            try:
                cc.commit.overwrite(msgs, commit_identifier=r)
                break
            except CommitConflictError as e:
                if "gave up after" not in str(e):
                    raise
                stats["budget_exhausted"] += 1
    return {"lost_races": cc.lost_races, **stats}


def mixed_appender(index: int, barrier: Any, warehouse: str,
                   options: Mapping[str, str] | None, rounds: int) -> dict[str, Any]:
    """Appends to p0 (overwritten concurrently) and p1 in one commit per round."""
    table = open_table(warehouse, options)
    user = f"appender-{index}"
    cc = CountingCommit(table, user)
    stats = {"budget_exhausted": 0, "state_unknown": 0}
    if barrier is not None:
        barrier.wait()
    for r in range(rounds):
        w = writer_for(table, user)
        w.write_arrow(pa.concat_tables([append_rows("p0", index, r, 2),
                                        append_rows("p1", index, r, 2)]))
        commit_until_done(cc, w.prepare_commit(), r, stats)
    return {"lost_races": cc.lost_races, **stats}


# ------------------------------------------------------------------ stale writers vs expiry
RETAIN_GAP = 4
_SNAPSHOT_FILE = re.compile(r"/snapshot/snapshot-(\d+)$")
_MANIFEST_LIST = re.compile(r"/manifest/manifest-list-[^/]+$")


def _signals(signal_dir: str, prefix: str) -> int:
    return len([n for n in os.listdir(signal_dir) if n.startswith(prefix)])


def _earliest_hint(table: FileStoreTable) -> int:
    try:
        text = table.file_io.read_text(join(table.snapshot_manager.snapshot_dir, "EARLIEST"))
    except PaimonError:
        return 0
    return int(text) if text.isdigit() else 0


class StallingFileIO(FileIO):
    """The FileIO of a writer that stalls (a GC pause, a lost connection, a slow task) between
    planning a commit and publishing it, until snapshot expiry has removed the id it is about
    to publish. ``where``: ``after_plan`` (after its first manifest list: the committer's own
    fence check comes later) or ``in_publish`` (inside the snapshot create, after that check:
    the create lands in the emptied slot). Armed once per commit. While it stalls, the file
    ``<signal_dir>/stall-<index>`` exists (the steady writers commit only then)."""

    def __init__(self, root: str, options: Mapping[str, str] | None, where: str,
                 timeout: float, signal: str) -> None:
        super().__init__(root, options)
        self.where, self.timeout, self.signal = where, timeout, signal
        self.armed = False
        self.stalls = self.timeouts = 0

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("StallingFileIO is per process: build it in the child")

    def _stall_until_expired(self, table_path: str, sid: int) -> None:
        """Until the fence passed ``sid`` and ``snapshot-<sid>`` is gone (or the timeout)."""
        hint = join(table_path, "snapshot", "EARLIEST")
        deadline = time.monotonic() + self.timeout
        open(self.signal, "w").close()
        try:
            while time.monotonic() < deadline:
                try:
                    text = self.read_text(hint)
                except PaimonError:
                    text = ""
                if (text.isdigit() and int(text) > sid
                        and not self.exists(join(table_path, "snapshot", f"snapshot-{sid}"))):
                    self.stalls += 1
                    return
                time.sleep(0.01)
            self.timeouts += 1
        finally:
            os.unlink(self.signal)

    def write_bytes(self, path: str, data: bytes) -> None:
        super().write_bytes(path, data)
        if self.armed and self.where == "after_plan" and _MANIFEST_LIST.search(path):
            self.armed = False
            table_path = path.rsplit("/manifest/", 1)[0]
            ids = [int(n.split("-")[1]) for n in self.list_names(join(table_path, "snapshot"))
                   if _SNAPSHOT_FILE.search("/snapshot/" + n)]
            # the id this commit will publish is at most the highest existing one + 1
            self._stall_until_expired(table_path, max(ids, default=0) + 1)

    def try_create(self, path: str, data: bytes) -> bool:
        m = _SNAPSHOT_FILE.search(path)
        if self.armed and self.where == "in_publish" and m:
            self.armed = False
            self._stall_until_expired(path.rsplit("/snapshot/", 1)[0], int(m.group(1)))
        return super().try_create(path, data)


class _CountWarnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.withdrawn = self.refused = 0

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        self.withdrawn += "withdrawing" in msg
        self.refused += "was expired while this commit was prepared" in msg


def stale_writer(index: int, barrier: Any, warehouse: str, options: Mapping[str, str] | None,
                 rounds: int, where: str, signal_dir: str) -> dict[str, Any]:
    """``rounds`` append commits (partition ``s<index>``), each stalled as
    :class:`StallingFileIO` says; returns the acknowledged snapshot ids and what happened."""
    cat = FileSystemCatalog(warehouse, options)
    fio = StallingFileIO(cat.warehouse, options, where, timeout=120.0,
                         signal=os.path.join(signal_dir, f"stall-{index}"))
    cat.file_io = fio
    table = cat.get_table(Identifier.parse("db.t"))
    counter = _CountWarnings()
    # the committer's package: table_commit and publish (the fence check, the withdrawal)
    logging.getLogger("paimon_core.commit").addHandler(counter)
    logging.getLogger("paimon_core.commit").setLevel(logging.INFO)
    user = f"stale-{index}"
    cc = CountingCommit(table, user)
    stats = {"budget_exhausted": 0, "state_unknown": 0}
    acked: list[int] = []
    if barrier is not None:
        barrier.wait()
    try:
        for k in range(rounds):
            w = writer_for(table, user)
            w.write_arrow(append_rows(f"s{index}", index, k))
            msgs = w.prepare_commit()
            fio.armed = True
            acked += commit_until_done(cc, msgs, k, stats)
    finally:
        open(os.path.join(signal_dir, f"done-{index}"), "w").close()
    return {"snapshots": acked, "stalls": fio.stalls, "timeouts": fio.timeouts,
            "withdrawn": counter.withdrawn, "refused": counter.refused, **stats}


def steady_writer(index: int, barrier: Any, warehouse: str, options: Mapping[str, str] | None,
                  n_stale: int, signal_dir: str, max_commits: int) -> dict[str, Any]:
    """Append commits (partition ``w<index>``, identifier = round) while a stale writer
    stalls, until every stale writer is done; returns how many landed."""
    table = open_table(warehouse, options)
    user = f"steady-{index}"
    cc = CountingCommit(table, user)
    stats = {"budget_exhausted": 0, "state_unknown": 0}
    if barrier is not None:
        barrier.wait()
    k = 0
    sm = table.snapshot_manager
    while k < max_commits and _signals(signal_dir, "done-") < n_stale:
        # only while a writer stalls, and no further ahead of the expirer than a few
        # snapshots: the stalled writers wait for expiry to reach the id they planned
        if not _signals(signal_dir, "stall-") or (
                (sm.latest_snapshot_id() or 0) - _earliest_hint(table) > 2 * RETAIN_GAP):
            time.sleep(0.005)
            continue
        w = writer_for(table, user)
        w.write_arrow(append_rows(f"w{index}", 100 + index, k))
        commit_until_done(cc, w.prepare_commit(), k, stats)
        k += 1
    return {"commits": k, **stats}


def expirer(index: int, barrier: Any, warehouse: str, options: Mapping[str, str] | None,
            retain: int, n_stale: int, signal_dir: str) -> dict[str, Any]:
    """Expires down to ``retain`` snapshots (whatever their age), again and again, until
    every stale writer is done."""
    table = open_table(warehouse, options)
    cfg = ExpireConfig(retain_min=retain, retain_max=retain, time_retained_millis=0,
                       max_deletes=INT_MAX)
    if barrier is not None:
        barrier.wait()
    expired = 0
    while _signals(signal_dir, "done-") < n_stale:
        r = ExpireSnapshots(table.file_io, table.path, table.schema, config=cfg).expire()
        expired += len(r.expired_ids)
        time.sleep(0.005)
    return {"expired": expired}
