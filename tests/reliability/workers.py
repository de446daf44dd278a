"""Process bodies for the race and crash scenarios (module level: spawn imports them).

Every worker opens its own catalog, FileIO and table handle.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from paimon_core.commit.table_commit import TableCommit
from paimon_core.errors import CommitConflictError, CommitStateUnknownError
from paimon_core.io.file_io import join
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
