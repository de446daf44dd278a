"""StreamTableScan: startup modes, follow-up per changelog producer, consumers, checkpoints,
expiry, picklable plans, and the ``paimon stream`` / ``paimon incremental`` commands.

Expected change lines of :func:`build_history` come from Paimon Java 0.9 (oracle
``incremental --mode stream``) on a table with the same commits.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.main import main
from paimon_core.consumer import Consumer, ConsumerManager
from paimon_core.errors import SchemaError, SnapshotExpiredError, UnsupportedError
from paimon_core.io.file_io import join
from paimon_core.read.stream import read_stream_plan
from paimon_core.scan.streaming import StreamPlan, StreamTableScan
from paimon_core.table import FileStoreTable
from tests.scan.change_tables import (
    S1,
    S2,
    S3,
    S6,
    append_table,
    build_history,
    klines,
    lines,
    pk_table,
    upgrade_compaction,
    write,
)


def drain(scan: StreamTableScan) -> list[StreamPlan]:
    out = []
    while (plan := scan.plan()) is not None:
        out.append(plan)
    return out


def changes(scan: StreamTableScan, plans: list[StreamPlan]) -> list[str]:
    if not plans:
        return []
    return lines(scan.source, pa.concat_tables([scan.read(p) for p in plans]))  # type: ignore[arg-type]


# Java 0.9 stream (scan.mode=from-snapshot) over snapshots 1..6 of build_history
JAVA_STREAM_0_6 = klines(
    *S1, ("+U", "a", 1, "v2_a1"), ("-D", "a", 2, "x"), ("+I", "b", 7, "v2_b7"),
    ("+I", "b", 3, "v2_b3"), ("-D", "a", 99, "nokey"), *S3, *S6,
)
CURRENT = klines(  # the merged state at snapshot 6, as +I rows
    ("+I", "a", 1, "ow_a1"), ("+I", "a", 10, "v6_a10"), ("+I", "b", 1, "v6_b1"),
    ("+I", "b", 2, "v1_b2"), ("+I", "b", 3, "v2_b3"), ("+I", "b", 4, "v1_b4"),
    ("+I", "b", 5, "v1_b5"),
)


# ---------------------------------------------------------------------------------------------
# startup modes


def test_from_snapshot_follows_append_snapshots_only(pk: FileStoreTable) -> None:
    scan = pk.new_stream_scan(options={"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    plans = drain(scan)
    # 4 = COMPACT and 5 = OVERWRITE are skipped (changelog-producer none)
    assert [(p.snapshot_id, p.next_snapshot, p.source) for p in plans] == [
        (1, 2, "delta"), (2, 3, "delta"), (3, 4, "delta"), (6, 7, "delta"),
    ]
    assert changes(scan, plans) == JAVA_STREAM_0_6
    assert scan.checkpoint() == 7
    assert scan.plan() is None  # nothing new


def test_latest_full_then_follow(pk: FileStoreTable) -> None:
    scan = pk.new_stream_scan()  # scan.mode default -> latest-full
    first = scan.plan()
    assert first is not None and first.source == "full" and first.snapshot_id == 6
    assert lines(pk, scan.read(first)) == CURRENT
    assert scan.checkpoint() == 7 and scan.plan() is None
    write(pk, [("-D", "b", 2, "v1_b2"), ("+U", "b", 3, "v7")])
    plan = scan.plan()
    assert plan is not None and (plan.snapshot_id, plan.source) == (7, "delta")
    assert lines(pk, scan.read(plan)) == klines(("-D", "b", 2, "v1_b2"), ("+U", "b", 3, "v7"))


def test_latest_reads_only_new_snapshots(pk: FileStoreTable) -> None:
    scan = pk.new_stream_scan(options={"scan.mode": "latest"})
    assert scan.plan() is None and scan.checkpoint() == 7
    write(pk, [("+I", "z", 1, "new")])
    plan = scan.plan()
    assert plan is not None and plan.snapshot_id == 7
    assert lines(pk, scan.read(plan)) == klines(("+I", "z", 1, "new"))


def test_latest_on_an_empty_table_starts_at_the_first_snapshot(
    catalog: FileSystemCatalog,
) -> None:
    t = pk_table(catalog, "db.empty")
    scan = t.new_stream_scan(options={"scan.mode": "latest"})
    assert scan.plan() is None and scan.checkpoint() is None
    write(t, S1)
    write(t, S2)
    plans = drain(scan)
    assert [p.snapshot_id for p in plans] == [1, 2]


def test_latest_full_on_an_empty_table_waits(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.empty")
    scan = t.new_stream_scan()
    assert scan.plan() is None
    write(t, S1)
    plan = scan.plan()
    assert plan is not None and plan.source == "full" and plan.row_count == 10


def test_from_snapshot_full(pk: FileStoreTable) -> None:
    scan = pk.new_stream_scan(options={"scan.mode": "from-snapshot-full", "scan.snapshot-id": "2"})
    plans = drain(scan)
    assert [(p.snapshot_id, p.source) for p in plans] == [(2, "full"), (3, "delta"), (6, "delta")]
    assert lines(pk, scan.read(plans[0])) == lines(pk, _as_insert(pk.to_arrow(snapshot_id=2)))


def _as_insert(t: pa.Table) -> pa.Table:
    return t.add_column(0, "_kind", pa.array(["+I"] * t.num_rows, pa.string()))


def test_from_snapshot_before_earliest_starts_at_earliest(pk: FileStoreTable) -> None:
    for sid in (1, 2):
        pk.file_io.delete(pk.snapshot_manager.snapshot_path(sid))
    scan = pk.new_stream_scan(options={"scan.snapshot-id": "1"})  # default -> from-snapshot
    assert [p.snapshot_id for p in drain(scan)] == [3, 6]


def test_from_timestamp(pk: FileStoreTable) -> None:
    times = {s.id: s.time_millis for s in pk.snapshot_manager.snapshots()}
    # scan.mode default -> from-timestamp
    scan = pk.new_stream_scan(options={"scan.timestamp-millis": str(times[3])})
    assert [p.snapshot_id for p in drain(scan)] == [3, 6]
    scan = pk.new_stream_scan(
        options={"scan.mode": "from-timestamp", "scan.timestamp-millis": str(times[3] + 1)})
    assert [p.snapshot_id for p in drain(scan)] == [6]
    scan = pk.new_stream_scan(options={"scan.timestamp-millis": "0"})
    assert [p.snapshot_id for p in drain(scan)] == [1, 2, 3, 6]
    scan = pk.new_stream_scan(options={"scan.timestamp-millis": str(times[6] + 1)})
    assert drain(scan) == [] and scan.checkpoint() == 7


def test_scan_timestamp_text_is_utc(pk: FileStoreTable) -> None:
    import datetime

    t3 = pk.snapshot_manager.snapshot(3).time_millis
    text = datetime.datetime.fromtimestamp(t3 / 1000, datetime.UTC).strftime(
        "%Y-%m-%d %H:%M:%S.%f")[:-3]
    scan = pk.new_stream_scan(options={"scan.timestamp": text})
    assert [p.snapshot_id for p in drain(scan)] == [3, 6]


def test_compacted_full(pk: FileStoreTable) -> None:
    scan = pk.new_stream_scan(options={"scan.mode": "compacted-full"})
    plans = drain(scan)
    assert [(p.snapshot_id, p.source) for p in plans] == [(4, "full"), (6, "delta")]
    assert plans[0].commit_kind == "COMPACT"
    # with full-compaction.delta-commits only COMPACT snapshots whose commit identifier is a
    # multiple of it count; batch commits (identifier Long.MAX) always do
    scan = pk.new_stream_scan(
        options={"scan.mode": "compacted-full", "full-compaction.delta-commits": "3"}
    )
    assert scan.plan().snapshot_id == 4  # type: ignore[union-attr]


def test_compacted_full_picks_full_compactions(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.fc")
    write(t, S1)
    assert upgrade_compaction(t, identifier=3) == [2]
    write(t, S2)
    assert upgrade_compaction(t, level=4, identifier=4) == [4]
    opts = {"scan.mode": "compacted-full", "full-compaction.delta-commits": "3",
            "changelog-producer": "full-compaction"}
    assert t.new_stream_scan(options=opts).plan().snapshot_id == 2  # type: ignore[union-attr]
    opts["full-compaction.delta-commits"] = "2"
    assert t.new_stream_scan(options=opts).plan().snapshot_id == 4  # type: ignore[union-attr]


def test_compacted_full_without_compaction_reads_latest(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.nocompact")
    write(t, S1)
    write(t, S2)
    plan = t.new_stream_scan(options={"scan.mode": "compacted-full"}).plan()
    assert plan is not None and (plan.snapshot_id, plan.source) == (2, "full")


def test_unsupported_startups(pk: FileStoreTable) -> None:
    with pytest.raises(UnsupportedError, match="streaming"):
        pk.new_stream_scan(options={"scan.tag-name": "t1"})
    with pytest.raises(UnsupportedError, match="read_merged_changes"):
        pk.new_stream_scan(options={"incremental-between": "1,3"})
    with pytest.raises(UnsupportedError, match="file-creation"):
        pk.new_stream_scan(options={"scan.mode": "from-file-creation-time"})
    with pytest.raises(SchemaError, match=r"scan\.mode"):
        pk.new_stream_scan(options={"scan.mode": "nope"})
    with pytest.raises(SchemaError, match=r"needs scan\.snapshot-id"):
        pk.new_stream_scan(options={"scan.mode": "from-snapshot-full"})
    with pytest.raises(TypeError, match="snapshot"):  # Paimon option keys go in options={}
        pk.new_stream_scan(snapshot=3)  # type: ignore[call-arg]
    # streaming-read-overwrite=true is supported (refused only where Java refuses it):
    # tests/scan/test_streaming_overwrite.py


# ---------------------------------------------------------------------------------------------
# follow-up by changelog producer


def test_input_producer_reads_changelog_of_append_snapshots(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.pki", **{"changelog-producer": "input"})
    build_history(t)
    scan = t.new_stream_scan(options={"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    plans = drain(scan)
    assert [(p.snapshot_id, p.source) for p in plans] == [
        (1, "changelog"), (2, "changelog"), (3, "changelog"), (6, "changelog"),
    ]
    # Java 0.9: the changelog keeps every input record, -U included
    assert changes(scan, plans) == sorted([*JAVA_STREAM_0_6, klines(("-U", "a", 1, "v1_a1"))[0]])


@pytest.mark.parametrize("producer", ["full-compaction", "lookup"])
def test_compaction_producers_read_changelog_of_compact_snapshots(
    catalog: FileSystemCatalog, producer: str
) -> None:
    # written with changelog files, committed the way a compaction producer commits them:
    # data in an APPEND snapshot, changelog in a COMPACT snapshot
    t = pk_table(catalog, "db.pkc", **{"changelog-producer": "input"})
    assert write(t, S1, split_changelog=True) == [1, 2]
    assert write(t, S2, split_changelog=True) == [3, 4]
    assert upgrade_compaction(t) == [5]  # COMPACT without changelog: an empty plan
    scan = t.new_stream_scan(
        options={"changelog-producer": producer, "scan.mode": "from-snapshot",
                 "scan.snapshot-id": "1"}
    )
    plans = drain(scan)
    assert [(p.snapshot_id, p.source, p.commit_kind) for p in plans] == [
        (2, "changelog", "COMPACT"), (4, "changelog", "COMPACT"), (5, "changelog", "COMPACT"),
    ]
    assert plans[2].splits == ()
    assert changes(scan, plans) == klines(*S1, *S2)


def test_full_plan_level_filters(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.levels")
    write(t, S1)
    upgrade_compaction(t, level=5)  # S1's files -> level 5
    write(t, [("+U", "a", 1, "new")])  # level 0
    def full(**options: str) -> list[str]:
        plan = t.new_stream_scan(options={"scan.mode": "latest-full", **options}).plan()
        assert plan is not None and plan.source == "full"
        return lines(t, read_stream_plan(t, plan))

    assert klines(("+I", "a", 1, "new"))[0] in full()
    # lookup: levels > 0 only (the level-0 update is not compacted yet)
    assert klines(("+I", "a", 1, "v1_a1"))[0] in full(**{"changelog-producer": "lookup"})
    # full-compaction: the last level (num-levels - 1 = 5 by default) only
    assert len(full(**{"changelog-producer": "full-compaction"})) == 10
    assert full(**{"changelog-producer": "full-compaction", "num-levels": "3"}) == []


def test_append_table_stream(catalog: FileSystemCatalog) -> None:
    t = append_table(catalog, "db.ap")
    build_history(t)
    scan = t.new_stream_scan(options={"scan.mode": "from-snapshot", "scan.snapshot-id": "5"})
    plans = drain(scan)
    assert [p.snapshot_id for p in plans] == [6]  # 5 is the overwrite
    assert changes(scan, plans) == klines(*[("+I", r[1], r[2], r[3]) for r in S6])


def test_projection_and_filter(pk: FileStoreTable) -> None:
    scan = pk.new_stream_scan(options={"scan.mode": "from-snapshot", "scan.snapshot-id": "2"},
                              columns=["id"], filter="pt = 'a'")
    plans = drain(scan)
    data = pa.concat_tables([scan.read(p) for p in plans])
    assert data.column_names == ["_kind", "id"]
    assert sorted(zip(data.column("_kind").to_pylist(), data.column("id").to_pylist())) == [
        ("+I", 2), ("+U", 1), ("+U", 1), ("+U", 10), ("-D", 2), ("-D", 99),
    ]
    # partition pruning happens at planning: no split of partitions b / c
    assert {s.partition_values for p in plans for s in p.splits} == {("a",)}


# ---------------------------------------------------------------------------------------------
# checkpoints, consumers, expiry, pickling


def test_checkpoint_and_restore(pk: FileStoreTable) -> None:
    a = pk.new_stream_scan(options={"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    first = [a.plan(), a.plan()]
    cp = a.checkpoint()
    assert cp == 3
    b = pk.new_stream_scan(options={"scan.mode": "latest"})  # the startup is bypassed by restore
    b.restore(cp)
    rest = drain(b)
    assert [p.snapshot_id for p in rest] == [3, 6]
    got = lines(pk, pa.concat_tables([a.read(p) for p in first if p] + [b.read(p) for p in rest]))
    assert got == JAVA_STREAM_0_6


def test_consumer_resume_without_loss_or_repetition(pk: FileStoreTable) -> None:
    seen: list[pa.Table] = []
    reader = pk.new_stream_scan(
        "etl", options={"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    for _ in range(2):
        plan = reader.plan()
        assert plan is not None
        seen.append(reader.read(plan))
        reader.notify_checkpoint_complete(reader.checkpoint())
    assert ConsumerManager(pk.file_io, pk.path).consumer("etl") == Consumer(3)
    # a third plan is read but its checkpoint never completes (the reader dies)
    assert reader.plan() is not None
    # other commits happen meanwhile
    write(pk, [("+I", "q", 1, "later")])
    # a new reader with the same consumer resumes at snapshot 3, whatever its scan.mode says
    again = pk.new_stream_scan("etl", options={"scan.mode": "latest-full"})
    rest = drain(again)
    assert [p.snapshot_id for p in rest] == [3, 6, 7]
    for p in rest:
        seen.append(again.read(p))
        again.notify_checkpoint_complete(again.checkpoint())
    assert lines(pk, pa.concat_tables(seen)) == sorted(
        [*JAVA_STREAM_0_6, klines(("+I", "q", 1, "later"))[0]]
    )
    assert ConsumerManager(pk.file_io, pk.path).consumer("etl") == Consumer(8)
    # consumer.ignore-progress: the stored position is ignored
    fresh = pk.new_stream_scan("etl", options={"consumer.ignore-progress": "true"})
    plan = fresh.plan()
    assert plan is not None and plan.source == "full"
    # no consumer id: notify is a no-op
    pk.new_stream_scan().notify_checkpoint_complete(99)
    assert ConsumerManager(pk.file_io, pk.path).consumers() == {"etl": 8}


def test_consumer_id_option(pk: FileStoreTable) -> None:
    scan = pk.new_stream_scan(options={"consumer-id": "opt", "scan.mode": "latest"})
    assert scan.plan() is None
    scan.notify_checkpoint_complete(scan.checkpoint())
    assert ConsumerManager(pk.file_io, pk.path).consumer("opt") == Consumer(7)


def test_expired_snapshot_raises(pk: FileStoreTable) -> None:
    scan = pk.new_stream_scan(options={"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    assert scan.plan().snapshot_id == 1  # type: ignore[union-attr]
    # snapshots 2 and 3 expire under the reader
    sm = pk.snapshot_manager
    for sid in (2, 3):
        pk.file_io.delete(sm.snapshot_path(sid))
    pk.file_io.delete(sm.snapshot_path(1))
    with pytest.raises(SnapshotExpiredError) as e:
        scan.plan()
    msg = str(e.value)
    for part in ("snapshot 2 ", "earliest is 4", "snapshot.num-retained.min",
                 "snapshot.time-retained", "consumer-id"):
        assert part in msg, (part, msg)
    assert scan.checkpoint() == 2  # nothing was skipped


def test_decoupled_changelog_is_read_after_snapshot_expiry(pk: FileStoreTable) -> None:
    sm = pk.snapshot_manager
    fio = pk.file_io
    for sid in (1, 2):
        fio.write_bytes(join(pk.path, "changelog", f"changelog-{sid}"),
                        fio.read_bytes(sm.snapshot_path(sid)))
        fio.delete(sm.snapshot_path(sid))
    scan = pk.new_stream_scan(options={"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    plans = drain(scan)
    assert [p.snapshot_id for p in plans] == [1, 2, 3, 6]
    assert changes(scan, plans) == JAVA_STREAM_0_6


def test_plans_are_picklable(pk: FileStoreTable) -> None:
    scan = pk.new_stream_scan(options={"scan.mode": "from-snapshot-full", "scan.snapshot-id": "3"})
    plans = drain(scan)
    back = pickle.loads(pickle.dumps(plans))
    assert back == plans
    for p, q in zip(plans, back):
        assert lines(pk, read_stream_plan(pk, q)) == lines(pk, scan.read(p))
    # a plan read with another projection / filter elsewhere
    got = read_stream_plan(pk, back[0], columns=["v"], filter=["pt = 'b'", "id < 3"])
    assert sorted(got.column("v").to_pylist()) == ["v1_b1", "v1_b2"]
    assert got.column_names == ["_kind", "v"]


def test_next_batch(pk: FileStoreTable) -> None:
    scan = pk.new_stream_scan(options={"scan.mode": "from-snapshot", "scan.snapshot-id": "6"})
    batch = scan.next_batch()
    assert batch is not None and lines(pk, batch) == klines(*S6)
    assert scan.next_batch() is None
    assert scan.empty_table().column_names == ["_kind", "pt", "id", "v"]


# ---------------------------------------------------------------------------------------------
# CLI


def test_cli_incremental_stream(pk: FileStoreTable, catalog: FileSystemCatalog,
                                capsys: pytest.CaptureFixture[str]) -> None:
    base = ["incremental", "--warehouse", catalog.warehouse, "--table", "db.pk"]
    assert main([*base, "--from", "0", "--to", "6"]) == 0
    assert capsys.readouterr().out.splitlines() == JAVA_STREAM_0_6
    assert main([*base, "--from", "3", "--to", "5", "--mode", "stream"]) == 0
    assert capsys.readouterr().out == ""
    assert main([*base, "--from", "0", "--to", "9"]) == 1
    assert "bad snapshot range" in capsys.readouterr().err


def test_cli_stream_with_consumer(pk: FileStoreTable, catalog: FileSystemCatalog,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    base = ["stream", "--warehouse", catalog.warehouse, "--table", "db.pk"]
    assert main([*base, "--snapshot", "1", "--consumer-id", "cli", "--max-snapshots", "2",
                 "--headers"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "# snapshot 1 APPEND delta rows=10 next=2"
    assert out[11] == "# snapshot 2 APPEND delta rows=5 next=3"
    assert len(out) == 1 + 10 + 1 + 5
    assert ConsumerManager(pk.file_io, pk.path).consumer("cli") == Consumer(3)
    assert main([*base, "--consumer-id", "cli"]) == 0  # resumes at 3: snapshots 3 and 6
    rest = capsys.readouterr().out.splitlines()
    assert sorted(rest) == klines(*S3, *S6)
    assert ConsumerManager(pk.file_io, pk.path).consumer("cli") == Consumer(7)
    assert main([*base, "--columns", "id", "--filter", "pt = 'b'", "--max-snapshots", "1"]) == 0
    assert [json.loads(x) for x in capsys.readouterr().out.splitlines()] == [
        {"_kind": "+I", "id": i} for i in range(1, 6)
    ]
    assert main([*base, "--option", "bad"]) == 1
    assert "KEY=VALUE" in capsys.readouterr().err


@pytest.mark.parametrize("producer", ["none", "input", "full-compaction", "lookup"])
def test_table_changes_equals_the_stream_scan(tmp_path: Path, producer: str) -> None:
    # FileStoreTable.read_unmerged_changes(a, b) = what a streaming reader sees for (a, b]; it
    # used to fail on full-compaction / lookup tables (parts with different nullability)
    cat = FileSystemCatalog(str(tmp_path / "wh"))
    t = pk_table(cat, "db.c", **{"changelog-producer": producer})
    write(t, S1)
    write(t, S2)
    t.compact()
    write(t, S3)
    t = cat.get_table("db.c")
    latest = t.snapshot_manager.latest_snapshot_id()
    assert latest is not None
    got = lines(t, t.read_unmerged_changes(0, latest))
    scan = t.new_stream_scan(options={"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    expected: list[str] = []
    while (plan := scan.plan()) is not None and plan.snapshot_id <= latest:
        expected += lines(t, scan.read(plan))
    assert sorted(got) == sorted(expected)
    assert got, "a history with changes"
