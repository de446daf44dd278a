"""Small tables with a known history for the incremental / streaming tests.

:func:`build_history` replays, with our writer, the six commits that were also written with
Paimon Java 0.9 through the oracle to record the expected outputs used by the tests
(``incremental --mode between|stream``): appends with -U/+U/-D, a COMPACT snapshot, a dynamic
INSERT OVERWRITE and more updates. Our COMPACT snapshot moves one level-0 file per bucket to
the last level (a legal "upgrade" compaction: the data is unchanged, as for Java's).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.canonical import canonical_lines
from paimon_core.commit_message import CommitMessage
from paimon_core.table import FileStoreTable
from tests.tables import append_table as _append_table
from tests.tables import pk_table as pk_table  # re-exported for the suites

USER = "change-tests"
BATCH_IDENTIFIER = 2**63 - 1

Row = tuple[str, int, str]
KRow = tuple[str, str, int, str]  # (kind, pt, id, v)

S1: list[KRow] = [("+I", p, i, f"v1_{p}{i}") for p in "ab" for i in range(1, 6)]
S2: list[KRow] = [
    ("-U", "a", 1, "v1_a1"), ("+U", "a", 1, "v2_a1"), ("-D", "a", 2, "x"),
    ("+I", "b", 7, "v2_b7"), ("+I", "b", 3, "v2_b3"), ("-D", "a", 99, "nokey"),
]
S3: list[KRow] = [
    ("-D", "b", 7, "v2_b7"), ("+U", "a", 1, "v3_a1"), ("+I", "a", 2, "v3_a2"),
    ("+I", "c", 1, "v3_c1"),
]
S5_OVERWRITE: list[KRow] = [("+I", "a", 10, "ow_a10"), ("+I", "a", 1, "ow_a1")]
S6: list[KRow] = [("+U", "b", 1, "v6_b1"), ("-D", "c", 1, "x"), ("+U", "a", 10, "v6_a10")]


def append_table(catalog: FileSystemCatalog, name: str, **options: str) -> FileStoreTable:
    """The shared append table with ``bucket=-1`` written into its schema (as Java's table
    of the recorded history has it)."""
    return _append_table(catalog, name, **{"bucket": "-1", **options})


def batch(rows: Sequence[KRow]) -> pa.Table:
    return pa.table({
        "_k": [r[0] for r in rows],
        "pt": [r[1] for r in rows],
        "id": pa.array([r[2] for r in rows], pa.int32()),
        "v": [r[3] for r in rows],
    })


def _tick(t: FileStoreTable) -> None:
    """Commits at least 2 ms apart: distinct snapshot times for timestamp-based tests."""
    latest = t.latest_snapshot()
    while latest is not None and int(time.time() * 1000) <= latest.time_millis + 1:
        time.sleep(0.001)


def write(t: FileStoreTable, rows: Sequence[KRow], *, split_changelog: bool = False) -> list[int]:
    """One commit of ``rows`` (with row kinds). ``split_changelog``: commit the changelog
    files of the write in a separate COMPACT snapshot (what a ``full-compaction`` /
    ``lookup`` producer's compaction commits), the data files in the APPEND snapshot."""
    _tick(t)
    w = t.new_write(USER)
    data = batch(rows)
    if t.is_primary_key_table:
        w.write_arrow(data, row_kind_column="_k")
    else:
        w.write_arrow(data.drop_columns(["_k"]))
    msgs = w.prepare_commit()
    w.close()
    c = t.new_commit(USER)
    if not split_changelog:
        return c.commit(msgs)
    data_msgs = [dataclasses.replace(m, changelog_files=()) for m in msgs]
    log_msgs = [
        dataclasses.replace(
            m, new_files=(), changelog_files=(), compact_changelog=m.changelog_files
        )
        for m in msgs
        if m.changelog_files
    ]
    out = c.commit(data_msgs)
    _tick(t)
    return out + c.commit(log_msgs)


def overwrite(t: FileStoreTable, rows: Sequence[KRow]) -> list[int]:
    _tick(t)
    w = t.new_write(USER)
    data = batch(rows).drop_columns(["_k"])
    w.write_arrow(data)
    # an overwrite commits new files only (a writer that compacts inline may have compacted
    # the old files of the bucket too: dropped here, as Java's overwrite does not commit it)
    msgs = [
        dataclasses.replace(
            m, changelog_files=(), compact_before=(), compact_after=(), compact_changelog=()
        )
        for m in w.prepare_commit()
    ]
    w.close()
    return t.new_commit(USER).overwrite(msgs)


def upgrade_compaction(
    t: FileStoreTable, level: int = 5, identifier: int = BATCH_IDENTIFIER
) -> list[int]:
    """A COMPACT snapshot that moves the oldest level-0 file of every bucket without a file
    at ``level`` to ``level``."""
    _tick(t)
    plan = t.new_read_builder().new_scan().plan()
    msgs = []
    for s in plan.splits:
        if any(f.level == level for f in s.files):
            continue
        zero = [f for f in s.files if f.level == 0]
        if not zero:
            continue
        f = min(zero, key=lambda x: x.max_sequence_number)
        msgs.append(CommitMessage(
            s.partition, s.bucket, s.total_buckets, compact_before=(f,),
            compact_after=(dataclasses.replace(f, level=level),), table_path=t.path,
            schema_id=t.schema.id,
        ))
    return t.new_commit(USER).commit(msgs, identifier)


def build_history(t: FileStoreTable) -> None:
    """Snapshots 1..6: APPEND, APPEND, APPEND, COMPACT, OVERWRITE, APPEND."""
    assert write(t, S1) == [1]
    assert write(t, S2) == [2]
    assert write(t, S3) == [3]
    if t.is_primary_key_table:
        assert upgrade_compaction(t) == [4]
    else:
        assert write(t, [("+I", "x", 0, "filler")]) == [4]
    assert overwrite(t, S5_OVERWRITE) == [5]
    assert write(t, S6) == [6]


def lines(t: FileStoreTable, data: pa.Table) -> list[str]:
    """Canonical JSON lines (the oracle's format, sorted) of a result with ``_kind``."""
    fields = [t.schema.field(c) for c in data.column_names if c != "_kind"]
    return canonical_lines(data, fields, kind_col="_kind")


def kline(kind: str, pt: str, id_: int, v: str | None) -> str:
    value: Any = "null" if v is None else f'"{v}"'
    return f'{{"_kind":"{kind}","pt":"{pt}","id":{id_},"v":{value}}}'


def klines(*rows: KRow) -> list[str]:
    return sorted(kline(*r) for r in rows)
