"""Our side of the metadata scale step (``bench/metadata_scale.py``): the table layout, its
build (one commit per fresh process) and the measured steps, each run in a fresh process by
the driver (``metadata_scale.py --child STEP``). Every step checks its result after the
measurement (``check``: [ok, message]).

The table ``db.meta``: primary key (``part``, ``id``), partitioned by ``part`` INT (``P``
partitions, 10,000 by default), ``bucket = 2``; columns ``v`` BIGINT (the commit that wrote
the row) and ``s`` STRING. ``N`` entries are written in :data:`COMMITS` commits of ``N / 10``
data files: commit ``k`` writes ``f = N / (10 P)`` files per partition, each holding one row
(``id = k f + j`` for the ``j``-th file), by ``f`` writers (one file per partition each) whose
messages go into one commit. So partition ``p`` holds ids ``0 .. N / P - 1``, one data file
each, ``v = id // f``.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from proctree import cpu_s, status_mb  # noqa: E402
from pypaimon_meta_side import measured, preload  # noqa: E402

TABLE = "db.meta"
COMMITS = 10
BUCKETS = 2
DAY_PARTS = 4  # partitions a "Dagster-style day" writes to
DAY_ROWS = 1_000  # rows per partition in the day's CDC commit (half updates, half new keys)
ONE_FILE_ID = 10**12  # the key of the 1-file commits (never a built key)


@dataclass(frozen=True)
class Layout:
    entries: int
    partitions: int

    @property
    def per_partition(self) -> int:
        """Data files (= rows = keys) per partition after the build."""
        return self.entries // self.partitions

    @property
    def files_per_commit(self) -> int:
        """Data files per partition in each build commit."""
        return self.per_partition // COMMITS

    def check(self) -> None:
        if self.entries % (self.partitions * COMMITS) or self.entries <= 0:
            raise SystemExit(f"entries ({self.entries:,}) must be a positive multiple of "
                             f"{COMMITS} x partitions ({self.partitions:,})")

    def one_part(self) -> int:
        """The partition of the one-partition plan and of the 1-file commit."""
        return self.partitions // 2

    def spot_parts(self) -> list[int]:
        """The 5 partitions of the Java spot check."""
        p = self.partitions
        return sorted({0, p // 4, p // 2, 3 * p // 4, p - 1})

    def day_parts(self) -> list[int]:
        p = self.partitions
        return sorted({i * p // DAY_PARTS + 1 for i in range(DAY_PARTS)} & set(range(p)))


def arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema([pa.field("part", pa.int32(), nullable=False),
                      pa.field("id", pa.int64(), nullable=False),
                      ("v", pa.int64()), ("s", pa.string())])


def rows(parts: Any, ids: Any, v: int, tag: str) -> Any:
    """Rows (part, id, v, s = tag) from numpy arrays of partitions and ids."""
    import pyarrow as pa

    n = len(parts)
    return pa.table({"part": pa.array(parts, pa.int32()), "id": pa.array(ids, pa.int64()),
                     "v": pa.array([v] * n, pa.int64()),
                     "s": pa.array([tag] * n, pa.string())}, schema=arrow_schema())


def catalog(wh: Path | str, options: dict[str, str] | None = None) -> Any:
    from paimon_core import FileSystemCatalog

    return FileSystemCatalog(str(wh), options)


def create_table(cat: Any) -> Any:
    from paimon_core import Schema

    return cat.create_table(TABLE, Schema.from_arrow(
        arrow_schema(), primary_keys=["part", "id"], partition_keys=["part"],
        options={"bucket": str(BUCKETS), "write-only": "true"}))


def write_messages(table: Any, user: str, batches: list[Any]) -> list[Any]:
    """One writer per batch (each writes a file per partition); all their messages."""
    msgs: list[Any] = []
    for batch in batches:
        with table.new_write(user) as w:
            w.write_arrow(batch)
            msgs += w.prepare_commit()
    return msgs


def build_commit(wh: Path, lay: Layout, k: int) -> dict[str, Any]:
    """Build commit ``k`` (0-based) in this fresh process: the write (CPU reported), then
    the measured commit."""
    import numpy as np

    cat = catalog(wh)
    table = create_table(cat) if k == 0 else cat.get_table(TABLE)
    parts = np.arange(lay.partitions, dtype=np.int32)
    f = lay.files_per_commit
    c0 = cpu_s()
    batches = [rows(parts, np.full(lay.partitions, k * f + j, np.int64), k, f"c{k}")
               for j in range(f)]
    msgs = write_messages(table, f"bench-build-{k}", batches)
    write_cpu = cpu_s() - c0
    del batches
    out, _ = measured(lambda: table.new_commit(f"bench-build-{k}").commit(msgs))
    files = sum(len(m.new_files) for m in msgs)
    snap = catalog(wh).get_table(TABLE).latest_snapshot()
    ok = files == lay.partitions * f and snap is not None and snap.id == k + 1
    return {**out, "write_cpu_s": write_cpu, "files": files,
            "check": [ok, f"{files:,} files committed as snapshot "
                          f"{None if snap is None else snap.id}"]}


def copy_table(src: Path, dst: Path) -> None:
    """A private copy of a built warehouse: data files hard-linked (never rewritten: new
    files get new names, expiry unlinks), everything else copied."""
    def link_or_copy(s: str, d: str) -> object:
        if "/part=" in s and "/bucket-" in s:
            os.link(s, d)
            return d
        return shutil.copy2(s, d)

    shutil.copytree(src, dst, copy_function=link_or_copy)


def plan_files(table: Any, part: int | None) -> tuple[int, int]:
    rb = table.new_read_builder()
    if part is not None:
        rb = rb.with_filter(f"part = {part}")
    splits = rb.new_scan().plan().splits
    return sum(len(s.files) for s in splits), sum(s.row_count for s in splits)


def step_plan(wh: Path, lay: Layout, one: bool) -> dict[str, Any]:
    preload("pyarrow.compute", "paimon_core.scan", "paimon_core.spec", "paimon_core.read",
            "paimon_core.manifest_io")
    part = lay.one_part() if one else None

    def run() -> tuple[int, int]:
        return plan_files(catalog(wh).get_table(TABLE), part)

    out, (files, nrows) = measured(run)
    want = lay.per_partition if one else lay.entries
    return {**out, "files": files, "rows": nrows,
            "check": [files == want == nrows, f"{files:,} files / {nrows:,} rows planned, "
                                              f"{want:,} expected"]}


def one_file_commit(table: Any, lay: Layout, key: int) -> tuple[dict[str, Any], list[Any]]:
    """Write one row (one data file) to the one-partition plan's partition and measure its
    commit."""
    import numpy as np

    c0 = cpu_s()
    msgs = write_messages(table, "bench-one", [rows(
        np.array([lay.one_part()], np.int32), np.array([key], np.int64), -1, "one")])
    write_cpu = cpu_s() - c0
    out, _ = measured(lambda: table.new_commit("bench-one").commit(msgs))
    return {**out, "write_cpu_s": write_cpu}, msgs


def step_commit1(wh: Path, lay: Layout) -> dict[str, Any]:
    table = catalog(wh).get_table(TABLE)
    out, msgs = one_file_commit(table, lay, ONE_FILE_ID)
    t2 = catalog(wh).get_table(TABLE)
    snap = t2.latest_snapshot()
    files, _ = plan_files(t2, lay.one_part())
    ok = (snap is not None and snap.id == COMMITS + 1 and files == lay.per_partition + 1
          and sum(len(m.new_files) for m in msgs) == 1)
    return {**out, "check": [ok, f"snapshot {None if snap is None else snap.id}, the "
                                 f"partition plans {files:,} files"]}


def step_expire(wh: Path, lay: Layout) -> dict[str, Any]:
    """A 1-file commit (not measured: 11 snapshots), then the measured expiry of the 10
    oldest (retain 1)."""
    one_file_commit(catalog(wh).get_table(TABLE), lay, ONE_FILE_ID)
    table = catalog(wh).get_table(TABLE)
    out, res = measured(lambda: table.expire_snapshots(retain_min=1, retain_max=1))
    files, _ = plan_files(catalog(wh).get_table(TABLE), None)
    ok = list(res.expired_ids) == list(range(1, COMMITS + 1)) and files == lay.entries + 1
    return {**out, "deleted_files": res.deleted_files,
            "check": [ok, f"expired {list(res.expired_ids)}, {res.deleted_files} files "
                          f"deleted, {files:,} files still planned"]}


def day_rows(lay: Layout) -> Any:
    """The day's CDC commit: per day partition, DAY_ROWS rows: the first half updates
    existing keys, the rest are new keys."""
    import numpy as np
    import pyarrow as pa

    half = min(DAY_ROWS // 2, lay.per_partition)
    ids = np.concatenate([np.arange(half), lay.per_partition + np.arange(DAY_ROWS - half)])
    return pa.concat_tables([rows(np.full(len(ids), p, np.int32), ids, 99, "day")
                             for p in lay.day_parts()])


def day(open_table: Callable[[], Any], lay: Layout) -> dict[str, Any]:
    """The Dagster-style day: the CDC commit, then one compaction commit per bucket of the
    touched partitions (``table.compact(partitions, buckets=[b])``, as the maintenance
    asset's per-bucket units); CPU of each commit in ``commits``. ``open_table`` opens the
    table afresh (a new catalog each time, as each asset run does)."""
    parts = [{"part": p} for p in lay.day_parts()]
    commits: list[dict[str, Any]] = []

    def timed(name: str, fn: Callable[[], Any]) -> Any:
        c0, t0 = cpu_s(), time.perf_counter()
        r = fn()
        commits.append({"step": name, "cpu_s": cpu_s() - c0,
                        "wall_s": time.perf_counter() - t0, "rss_mb": status_mb("VmRSS")})
        return r

    def run() -> list[Any]:
        table = open_table()
        msgs = timed("cdc write", lambda: write_messages(table, "bench-day", [day_rows(lay)]))
        timed("cdc commit", lambda: table.new_commit("bench-day").commit(msgs))
        snaps = []
        for b in range(BUCKETS):
            def compact(bucket: int = b) -> Any:
                return open_table().compact(parts, buckets=[bucket],
                                            commit_user="bench-day-compact")
            snaps.append(timed(f"compact bucket {b}", compact))
        return snaps

    out, snaps = measured(run)
    return {**out, "commits": commits, "compact_snapshots": snaps}


def step_day(wh: Path, lay: Layout) -> dict[str, Any]:
    out = day(lambda: catalog(wh).get_table(TABLE), lay)
    table = catalog(wh).get_table(TABLE)
    half = min(DAY_ROWS // 2, lay.per_partition)
    want = lay.per_partition + DAY_ROWS - half
    got = [table.to_arrow(filter=f"part = {p}") for p in lay.day_parts()]
    counts = [t.num_rows for t in got]
    updated = [int((t.column("v").to_numpy() == 99).sum()) for t in got]
    files = [plan_files(table, p)[0] for p in lay.day_parts()]
    ok = (counts == [want] * len(counts) and updated == [DAY_ROWS] * len(counts)
          and all(s is not None for s in out["compact_snapshots"])
          and all(f <= BUCKETS for f in files))
    return {**out, "check": [ok, f"rows per day partition {counts} (want {want}), day rows "
                                 f"{updated}, files after compaction {files}"]}


STEPS: dict[str, Callable[[Path, Layout], dict[str, Any]]] = {
    "plan_full": lambda wh, lay: step_plan(wh, lay, one=False),
    "plan_one": lambda wh, lay: step_plan(wh, lay, one=True),
    "commit1": step_commit1,
    "expire": step_expire,
    "day": step_day,
}
#: steps that change the table: each runs on a private copy
MUTATING = ("commit1", "expire", "day")
