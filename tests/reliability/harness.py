"""Reliability harness: tables, fault-injecting FileIO, invariant checker (fsck), models and a
multiprocessing race runner. See /work/shared/reliability.md (invariants I1-I8).

* :mod:`tests.reliability.faults` — :class:`FaultFileIO` with named crash points.
* :mod:`tests.reliability.s3proxy` — :class:`FaultProxy` in front of moto.
* here — :func:`fsck_findings` / :func:`assert_fsck_clean` (our own direct checks of I1-I5,
  plus ``paimon_core.fsck`` when it exists), :func:`orphan_files`, :class:`AppendModel`,
  :class:`PkModel`, :func:`run_processes`.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import queue
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import PaimonError
from paimon_core.identifier import Identifier
from paimon_core.io.file_io import FileIO, join
from paimon_core.options import CoreOptions
from paimon_core.schema_builder import Schema
from paimon_core.spec.binary_row import deserialize_binary_row
from paimon_core.spec.file_entries import live_files, merge_entries
from paimon_core.spec.manifest import FileKind, ManifestEntry
from paimon_core.spec.partition import partition_path
from paimon_core.spec.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from paimon_core.table import FileStoreTable
from tests.reliability.faults import Fault, FaultFileIO

APPEND_COLUMNS = [("pt", "STRING"), ("writer", "INT"), ("seq", "INT"), ("v", "BIGINT")]
PK_COLUMNS = [("k", "INT NOT NULL"), ("v", "STRING"), ("writer", "INT"), ("round", "INT")]


# ------------------------------------------------------------------------------ tables
def create_table(warehouse: str, options: Mapping[str, str] | None, kind: str,
                 name: str = "db.t", **table_options: str) -> FileStoreTable:
    cat = FileSystemCatalog(warehouse, options)
    if kind == "append":
        schema = Schema.of(APPEND_COLUMNS, partition_keys=["pt"], options=table_options)
    elif kind == "pk":
        opts = {"bucket": "2", **table_options}
        schema = Schema.of(PK_COLUMNS, primary_keys=["k"], options=opts)
    else:
        raise ValueError(kind)
    return cat.create_table(name, schema)


def open_table(warehouse: str, options: Mapping[str, str] | None = None, name: str = "db.t",
               faults: Sequence[Fault] = ()) -> FileStoreTable:
    """A fresh catalog and table handle (own FileIO; a FaultFileIO when faults are given)."""
    cat = FileSystemCatalog(warehouse, options)
    if faults:
        cat.file_io = FaultFileIO(cat.warehouse, options, faults)
    return cat.get_table(Identifier.parse(name))


def append_rows(pt: str | None, writer: int, seq: int, n: int = 3) -> pa.Table:
    return pa.table({
        "pt": pa.array([pt] * n, pa.string()),
        "writer": pa.array([writer] * n, pa.int32()),
        "seq": pa.array([seq] * n, pa.int32()),
        "v": pa.array([writer * 1_000_000 + seq * 1000 + i for i in range(n)], pa.int64()),
    })


def rows_of(t: pa.Table, columns: Sequence[str] | None = None) -> list[tuple[Any, ...]]:
    cols = list(columns) if columns is not None else t.column_names
    data = [t.column(c).to_pylist() for c in cols]
    return list(zip(*data)) if data else []


# ------------------------------------------------------------------------------ models
@dataclass
class AppendModel:
    """Row multiset of an append table."""

    rows: Counter[tuple[Any, ...]] = field(default_factory=Counter)

    def add(self, t: pa.Table) -> None:
        self.rows.update(rows_of(t, [c for c, _ in APPEND_COLUMNS]))

    def check(self, table: FileStoreTable) -> None:
        got = Counter(rows_of(table.to_arrow(), [c for c, _ in APPEND_COLUMNS]))
        missing = self.rows - got
        extra = got - self.rows
        assert not missing and not extra, (
            f"I1: {sum(missing.values())} acknowledged rows missing "
            f"(e.g. {list(missing)[:3]}), {sum(extra.values())} unexpected "
            f"(e.g. {list(extra)[:3]})"
        )


@dataclass
class PkModel:
    """key -> the rows that may win (deduplicate: the highest _SEQUENCE_NUMBER; rows tied on
    the highest sequence are all acceptable — their order is not defined by the format)."""

    best: dict[Any, tuple[int, set[tuple[Any, ...]]]] = field(default_factory=dict)

    def add(self, key: Any, seq: int, row: tuple[Any, ...]) -> None:
        cur = self.best.get(key)
        if cur is None or seq > cur[0]:
            self.best[key] = (seq, {row})
        elif seq == cur[0]:
            cur[1].add(row)

    def ties(self) -> int:
        return sum(1 for _, rows in self.best.values() if len(rows) > 1)

    def check(self, table: FileStoreTable, key: str = "k") -> None:
        t = table.to_arrow()
        cols = [c for c, _ in PK_COLUMNS]
        got = {r[cols.index(key)]: r for r in rows_of(t, cols)}
        assert len(got) == t.num_rows, "a key appears twice in a merged read"
        missing = set(self.best) - set(got)
        assert not missing, f"I1: acknowledged keys missing: {sorted(missing)[:10]}"
        extra = set(got) - set(self.best)
        assert not extra, f"unexpected keys: {sorted(extra)[:10]}"
        wrong = {k: (got[k], self.best[k]) for k in got if got[k] not in self.best[k][1]}
        assert not wrong, f"I1: wrong winners (got, (seq, allowed)): {list(wrong.items())[:5]}"


# ------------------------------------------------------------------------------ fsck
@dataclass
class Refs:
    """Everything the retained snapshots reference (table-relative paths)."""

    manifest_lists: set[str] = field(default_factory=set)
    manifests: set[str] = field(default_factory=set)
    data: set[str] = field(default_factory=set)
    index: set[str] = field(default_factory=set)

    def all(self) -> set[str]:
        return self.manifest_lists | self.manifests | self.data | self.index


def _bucket_rel(table: FileStoreTable, e: ManifestEntry, cache: dict[bytes, str]) -> str:
    pp = cache.get(e.partition)
    if pp is None:
        s = table.schema
        types = [s.field(k).type for k in s.partition_keys]
        values = deserialize_binary_row(e.partition, types, exact_timestamps=True)
        pp = partition_path(list(values), list(s.partition_keys), types,
                            CoreOptions(s.options).partition_default_name)
        cache[e.partition] = pp
    return f"{pp}/bucket-{e.bucket}" if pp else f"bucket-{e.bucket}"


def list_tree(file_io: FileIO, root: str) -> set[str]:
    """Every file under ``root``, relative to it (fresh listings)."""
    out: set[str] = set()
    stack = [root]
    while stack:
        d = stack.pop()
        for st in file_io.list_status(d):
            if st.is_dir:
                stack.append(st.path)
            else:
                out.add(st.path[len(root.rstrip("/")) + 1:])
    return out


def fsck_findings(table: FileStoreTable, *, check_rows: bool = True) -> tuple[list[str], Refs]:
    """Direct checks of I2-I5 over every retained snapshot (and I4 for the latest).

    Returns (findings, references). Checks: contiguous ids; LATEST resolves to the true latest;
    every referenced manifest list / manifest / data file exists; folding the delta manifests
    snapshot by snapshot never ADDs a live file twice nor DELETEs a file that is not live, and
    gives the same live set as base + delta; ``totalRecordCount`` = live rows per snapshot;
    (commitUser, commitIdentifier, kind) unique; one bucket count per partition; levels >= 1
    do not overlap; the latest snapshot reads and (append tables) yields totalRecordCount rows.
    """
    findings: list[str] = []
    refs = Refs()
    fio, sm, mio = table.file_io, table.snapshot_manager, table.manifest_io
    ids = sm.list_snapshot_ids()
    if not ids:
        return findings, refs
    if ids != list(range(ids[0], ids[-1] + 1)):
        gaps = sorted(set(range(ids[0], ids[-1] + 1)) - set(ids))
        findings.append(f"I3: snapshot ids not contiguous, missing {gaps[:10]}")
    if sm.latest_snapshot_id() != ids[-1]:
        findings.append(f"I5: latest_snapshot_id()={sm.latest_snapshot_id()} but {ids[-1]} exists")
    files = list_tree(fio, table.path)
    part_cache: dict[bytes, str] = {}
    live: dict[tuple[object, ...], ManifestEntry] | None = None
    commits: dict[tuple[str, int, str], int] = {}
    snaps: list[Snapshot] = []
    for sid in ids:
        snap = sm.snapshot(sid)
        snaps.append(snap)
        lists = [snap.base_manifest_list, snap.delta_manifest_list]
        if snap.changelog_manifest_list:
            lists.append(snap.changelog_manifest_list)
        for name in lists:
            refs.manifest_lists.add(f"manifest/{name}")
        if snap.index_manifest:
            refs.index.add(f"manifest/{snap.index_manifest}")
        missing_lists = [n for n in lists if f"manifest/{n}" not in files]
        if missing_lists:
            findings.append(f"I3: snapshot {sid} references missing manifest lists {missing_lists}")
            continue
        base = mio.manifest_list(snap.base_manifest_list)
        delta = mio.manifest_list(snap.delta_manifest_list)
        metas = base + delta
        if snap.changelog_manifest_list:
            metas = metas + mio.manifest_list(snap.changelog_manifest_list)
        for m in metas:
            refs.manifests.add(f"manifest/{m.file_name}")
        gone = [m.file_name for m in metas if f"manifest/{m.file_name}" not in files]
        if gone:
            findings.append(f"I3: snapshot {sid} references missing manifests {gone[:3]}")
            continue
        base_entries = [e for m in base for e in mio.manifest(m.file_name)]
        delta_entries = [e for m in delta for e in mio.manifest(m.file_name)]
        try:
            full = {e.identifier(): e for e in live_files(base_entries + delta_entries)}
        except PaimonError as e:
            findings.append(f"I3: snapshot {sid} does not fold: {e}")
            continue
        if live is None:  # first retained snapshot: start from its base
            try:
                live = {k: v for k, v in merge_entries(base_entries).items()
                        if v.kind is FileKind.ADD}
            except PaimonError as e:
                findings.append(f"I3: snapshot {sid} base does not fold: {e}")
                live = {}
        for e in delta_entries:
            ident = e.identifier()
            if e.kind is FileKind.ADD:
                if ident in live:
                    findings.append(f"I3: snapshot {sid} ADDs live file {e.file.file_name} again")
                live[ident] = e
            elif ident in live:
                del live[ident]
            else:
                findings.append(f"I3: snapshot {sid} DELETEs {e.file.file_name}, not live")
        if set(full) != set(live):
            findings.append(f"I3: snapshot {sid}: base+delta differs from folded deltas")
            live = dict(full)
        for e in full.values():
            refs.data.add(f"{_bucket_rel(table, e, part_cache)}/{e.file.file_name}")
            for x in e.file.extra_files:
                refs.data.add(f"{_bucket_rel(table, e, part_cache)}/{x}")
        rows = sum(e.file.row_count for e in full.values())
        if snap.total_record_count is not None and snap.total_record_count != rows:
            findings.append(f"I3: snapshot {sid} totalRecordCount={snap.total_record_count}, "
                            f"live files hold {rows} rows")
        key = (snap.commit_user, snap.commit_identifier, snap.commit_kind.value)
        if snap.commit_identifier != BATCH_COMMIT_IDENTIFIER:
            if key in commits:
                findings.append(f"I2: {key} in snapshots {commits[key]} and {sid}")
            commits[key] = sid
        _check_buckets_and_levels(table, sid, full.values(), findings)
    missing_data = sorted(p for p in refs.data if p not in files)
    if missing_data:
        findings.append(f"I3: {len(missing_data)} referenced data files missing: "
                        f"{missing_data[:3]}")
    if check_rows and not missing_data and snaps:
        try:
            n = table.to_arrow().num_rows
            if not table.is_primary_key_table and n != snaps[-1].total_record_count:
                findings.append(f"I4: read {n} rows, totalRecordCount "
                                f"{snaps[-1].total_record_count}")
        except PaimonError as e:
            findings.append(f"I4: latest snapshot does not read: {e!r}")
    return findings, refs


def _check_buckets_and_levels(table: FileStoreTable, sid: int, entries: Iterable[ManifestEntry],
                              findings: list[str]) -> None:
    counts: dict[bytes, set[int]] = {}
    levels: dict[tuple[bytes, int, int], list[ManifestEntry]] = {}
    for e in entries:
        if e.total_buckets > 0:
            counts.setdefault(e.partition, set()).add(e.total_buckets)
        if e.file.level >= 1:
            levels.setdefault((e.partition, e.bucket, e.file.level), []).append(e)
    for p, c in counts.items():
        if len(c) > 1:
            findings.append(f"I3: snapshot {sid}: partition {p!r} mixes bucket counts {c}")
    if levels and table.schema.primary_keys:
        s = table.schema
        types = [s.field(k).type.with_nullable(False) for k in s.trimmed_primary_keys]
        for (_, b, lv), es in levels.items():
            rng = sorted((tuple(deserialize_binary_row(e.file.min_key, types)),
                          tuple(deserialize_binary_row(e.file.max_key, types))) for e in es)
            for (_, hi), (lo, _) in itertools.pairwise(rng):
                if lo <= hi:
                    findings.append(f"I3: snapshot {sid}: bucket {b} level {lv} overlaps")


def orphan_files(table: FileStoreTable, refs: Refs | None = None) -> set[str]:
    """Files under the table that no retained snapshot references (table-relative), excluding
    schema/, snapshot/ and tag/ (use ``paimon_core.fsck.orphan_files`` when it exists)."""
    if refs is None:
        _, refs = fsck_findings(table, check_rows=False)
    files = list_tree(table.file_io, table.path)
    keep = refs.all()
    return {f for f in files
            if f not in keep and not f.startswith(("schema/", "snapshot/", "tag/"))}


def _real_fsck() -> Any:
    try:
        import paimon_core.fsck as real  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return real


def assert_fsck_clean(table: FileStoreTable, *, expect_snapshots: int | None = None) -> Refs:
    """``paimon_core.fsck.fsck`` (when it has landed) plus our direct checks.

    On object storage our own checks skip the full read (the real fsck reads the latest
    snapshot, and every scenario compares a full read with its model): each S3 request costs
    milliseconds of CPU on this machine.
    """
    real = _real_fsck()
    findings, refs = fsck_findings(table, check_rows=real is None or table.file_io.is_local)
    assert not findings, "fsck:\n" + "\n".join(findings[:20])
    if real is not None:
        report = real.fsck(table)
        assert report.ok, f"paimon_core.fsck: {[f.to_json() for f in report.errors][:10]}"
    if expect_snapshots is not None:
        ids = table.snapshot_manager.list_snapshot_ids()
        assert ids == list(range(1, expect_snapshots + 1)), (
            f"expected snapshots 1..{expect_snapshots}, got {len(ids)}: "
            f"{ids[:3]}..{ids[-3:]}")
    return refs


def remove_orphans(table: FileStoreTable) -> set[str]:
    """Delete the orphans (via paimon_core.fsck.orphan_files when available)."""
    real = _real_fsck()
    if real is not None and hasattr(real, "orphan_files"):
        paths = set(real.orphan_files(table, older_than_millis=int(time.time() * 1000) + 1))
    else:
        paths = {join(table.path, rel) for rel in orphan_files(table)}
    for p in paths:
        table.file_io.delete(p)
    return paths


# ------------------------------------------------------------------------------ processes
@dataclass
class ProcResult:
    index: int
    exitcode: int | None
    value: Any = None
    error: str | None = None


def _child_main(target: Callable[..., Any], index: int, args: tuple[Any, ...],
                barrier: Any, results: Any) -> None:
    try:
        value = target(index, barrier, *args)
        results.put((index, value, None))
    except BaseException as e:  # reported to the parent
        import traceback

        results.put((index, None, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))


def _pool_entry(target: Callable[..., Any], index: int, args: tuple[Any, ...],
                barrier: Any) -> tuple[Any, str | None]:
    try:
        return target(index, barrier, *args), None
    except BaseException as e:  # reported to the parent
        import traceback

        return None, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"


class WorkerPool:
    """Spawned worker processes reused across scenarios (spawning and importing pyarrow,
    botocore and paimon_core costs ~1 s of CPU per process). Every task still opens its own
    catalog, FileIO and table; barriers are Manager proxies."""

    def __init__(self, size: int) -> None:
        ctx = mp.get_context("spawn")
        self.size = size
        self.manager = ctx.Manager()
        self.pool = ctx.Pool(size)

    def run(self, target: Callable[..., Any], arg_list: Sequence[tuple[Any, ...]], *,
            timeout: float, barrier: bool = True) -> list[ProcResult]:
        n = len(arg_list)
        if n > self.size:
            raise ValueError(f"{n} tasks for a pool of {self.size} (the barrier would hang)")
        bar = self.manager.Barrier(n, timeout=timeout) if barrier else None
        pending = [self.pool.apply_async(_pool_entry, (target, i, tuple(a), bar))
                   for i, a in enumerate(arg_list)]
        deadline = time.monotonic() + timeout
        out = []
        for i, p in enumerate(pending):
            try:
                value, err = p.get(timeout=max(0.1, deadline - time.monotonic()))
            except mp.TimeoutError:
                value, err = None, "timed out"
            out.append(ProcResult(i, 0 if err is None else 1, value, err))
        return out

    def close(self) -> None:
        self.pool.terminate()
        self.pool.join()
        self.manager.shutdown()


_POOL: WorkerPool | None = None


def set_worker_pool(pool: WorkerPool | None) -> None:
    global _POOL
    _POOL = pool


def run_processes(target: Callable[..., Any], arg_list: Sequence[tuple[Any, ...]], *,
                  timeout: float = 180.0, barrier: bool = True) -> list[ProcResult]:
    """Run ``target(index, barrier, *args)`` in one spawned process per ``args`` (in the
    session's :class:`WorkerPool` when there is one); they meet at a shared barrier (``None``
    when ``barrier=False``). Returns per-process results."""
    if _POOL is not None:
        return _POOL.run(target, arg_list, timeout=timeout, barrier=barrier)
    return run_fresh_processes(target, arg_list, timeout=timeout, barrier=barrier)


def run_fresh_processes(target: Callable[..., Any], arg_list: Sequence[tuple[Any, ...]], *,
                        timeout: float = 180.0, barrier: bool = True) -> list[ProcResult]:
    """Like :func:`run_processes`, always in new spawned processes (for crashes)."""
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    bar = ctx.Barrier(len(arg_list)) if barrier else None
    procs = [ctx.Process(target=_child_main, args=(target, i, tuple(a), bar, results))
             for i, a in enumerate(arg_list)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + timeout
    got: dict[int, tuple[Any, str | None]] = {}
    while len(got) < len(procs) and time.monotonic() < deadline:
        try:
            i, value, err = results.get(timeout=0.5)
            got[i] = (value, err)
        except queue.Empty:
            if all(not p.is_alive() for p in procs):
                # drain what is left
                while True:
                    try:
                        i, value, err = results.get(timeout=0.5)
                        got[i] = (value, err)
                    except queue.Empty:
                        break
                break
    for p in procs:
        p.join(timeout=max(0.1, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join()
    out = []
    for i, p in enumerate(procs):
        value, err = got.get(i, (None, None))
        out.append(ProcResult(i, p.exitcode, value, err))
    return out


def run_child(target: Callable[..., Any], args: tuple[Any, ...], timeout: float = 60.0
              ) -> ProcResult:
    """One new spawned child (no barrier): it may ``os._exit``."""
    return run_fresh_processes(target, [args], timeout=timeout, barrier=False)[0]


def pid() -> int:
    return os.getpid()
