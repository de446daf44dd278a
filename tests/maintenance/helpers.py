"""Table builders and observers shared by the maintenance tests (expiry, orphans, consumers)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa

from paimon_core.commit_message import CommitMessage
from paimon_core.fsck import fsck
from paimon_core.io.file_io import FileIO, join
from paimon_core.spec.file_entries import live_files
from paimon_core.spec.manifest import FileKind
from paimon_core.table import FileStoreTable
from tests.tables import append_table as append_table  # re-exported for the suites
from tests.tables import pk_table as pk_table  # re-exported for the suites
from tests.tables import sorted_rows

FAR_FUTURE = 2**62  # an older_than cutoff every snapshot is older than


def write(t: FileStoreTable, ids: Sequence[int], tag: str, pt: str = "a", *,
          overwrite: bool = False, user: str = "u", delete: bool = False) -> list[int]:
    """One commit of rows ``(pt, id, tag)``; returns the snapshot ids created."""
    data = pa.table({"pt": [pt] * len(ids), "id": pa.array(list(ids), pa.int32()),
                     "v": [tag] * len(ids)})
    w = t.new_write(user)
    if delete:
        w.delete_arrow(data)
    else:
        w.write_arrow(data)
    msgs = w.prepare_commit()
    w.close()
    c = t.new_commit(user)
    if not overwrite:
        return c.commit(msgs)
    # an overwrite takes new files only (a compacting writer's results are dropped: orphans)
    return c.overwrite([CommitMessage(m.partition, m.bucket, m.total_buckets,
                                      new_files=m.new_files, table_path=m.table_path,
                                      schema_id=m.schema_id) for m in msgs if m.new_files])


def compact_append(t: FileStoreTable, pt: str, user: str = "u") -> list[int]:
    """A real COMPACT commit on an append table: every live file of partition ``pt`` is
    rewritten into one new file (same rows)."""
    plan = t.new_read_builder().with_filter(f"pt = '{pt}'").new_scan().plan()
    splits = [s for s in plan.splits if s.files]
    if not splits:
        return []
    rows = t.to_arrow(filter=f"pt = '{pt}'")
    w = t.new_write(user)
    w.write_arrow(rows)
    new = w.prepare_commit()
    w.close()
    assert len(new) == 1 and len(splits) == 1
    s, m = splits[0], new[0]
    msg = CommitMessage(s.partition, s.bucket, s.total_buckets, compact_before=s.files,
                        compact_after=m.new_files, table_path=m.table_path,
                        schema_id=m.schema_id)
    return t.new_commit(user).commit([msg])


def upgrade_level(t: FileStoreTable, user: str = "u") -> list[int]:
    """A COMPACT commit that moves one level-0 file of a PK table to the top level (Java's
    level upgrade: DELETE at level 0 + ADD of the same file at level 5)."""
    latest = t.latest_snapshot()
    entries = [e for e in _live(t, latest.id if latest else None) if e.file.level == 0]
    if not entries:
        return []
    by_bucket: dict[tuple[bytes, int], list[Any]] = {}
    for e in entries:
        by_bucket.setdefault((e.partition, e.bucket), []).append(e)
    # a bucket without files above level 0 (so level 5 cannot overlap)
    levels = {(e.partition, e.bucket) for e in _live(t, latest.id if latest else None)
              if e.file.level > 0}
    for key, es in sorted(by_bucket.items(), key=lambda kv: kv[0]):
        if key in levels:
            continue
        e = es[0]
        msg = CommitMessage(e.partition, e.bucket, e.total_buckets, compact_before=(e.file,),
                            compact_after=(replace(e.file, level=5),), table_path=t.path,
                            schema_id=e.file.schema_id)
        return t.new_commit(user).commit([msg])
    return []


def _live(t: FileStoreTable, sid: int | None) -> list[Any]:
    snap = t.snapshot_manager.snapshot(sid) if sid is not None else None
    entries = [e for m in t.manifest_io.data_manifests(snap)
               for e in t.manifest_io.manifest(m.file_name)]
    return live_files(entries)


def rows(t: FileStoreTable, **travel: Any) -> list[tuple[Any, ...]]:
    return sorted_rows(t, "pt", "id", "v", **travel)


def state(t: FileStoreTable) -> dict[str, list[tuple[Any, ...]]]:
    """Rows of every retained snapshot and every tag."""
    out = {f"s{sid}": rows(t, snapshot_id=sid) for sid in t.snapshot_manager.list_snapshot_ids()}
    for name, _ in t.list_tags():
        out[f"tag:{name}"] = rows(t, tag=name)
    return out


def tree(file_io: FileIO, root: str) -> dict[str, int]:
    """Every file under ``root`` (relative path -> size), fresh listings."""
    out: dict[str, int] = {}
    stack = [root]
    while stack:
        d = stack.pop()
        for st in file_io.list_status(d):
            if st.is_dir:
                stack.append(st.path)
            else:
                out[st.path[len(root.rstrip("/")) + 1:]] = st.size
    return out


def assert_clean(t: FileStoreTable, *, deep: bool = True) -> None:
    report = fsck(t, deep=deep)
    assert report.ok, [f.to_json() for f in report.errors]


def set_snapshot_times(t: FileStoreTable, times: Mapping[int, int]) -> None:
    """Rewrite ``timeMillis`` of snapshot files (test-only: the clock of old commits)."""
    for sid, millis in times.items():
        path = t.snapshot_manager.snapshot_path(sid)
        obj = json.loads(t.file_io.read_bytes(path))
        obj["timeMillis"] = millis
        t.file_io.write_bytes(path, json.dumps(obj).encode())


def set_statistics(t: FileStoreTable, names: Mapping[int, str]) -> None:
    """Give snapshots a ``statistics`` file (written under ``statistics/``)."""
    for sid, name in names.items():
        path = t.snapshot_manager.snapshot_path(sid)
        obj = json.loads(t.file_io.read_bytes(path))
        obj["statistics"] = name
        t.file_io.write_bytes(path, json.dumps(obj).encode())
        t.file_io.write_bytes(join(t.path, "statistics", name), b"{}")


def referenced_data_files(t: FileStoreTable, sid: int) -> set[str]:
    """File names of the live data files of a snapshot."""
    return {e.file.file_name for e in _live(t, sid) if e.kind is FileKind.ADD}
