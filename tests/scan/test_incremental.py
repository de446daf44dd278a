"""incremental-between (Paimon 0.9 ``IncrementalStartingScanner`` semantics).

The expected lines were produced by Paimon Java 0.9 through the oracle
(``oracle incremental --mode between``) on a table written by Java with exactly the commits of
:func:`tests.scan.change_tables.build_history`; our writer replays them here.
"""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.main import main
from paimon_core.errors import SchemaError, SnapshotExpiredError, SnapshotNotExistError
from paimon_core.read.incremental import IncrementalRead
from paimon_core.scan.incremental import (
    plan_incremental,
    resolve_scan_mode,
    resolve_timestamp_range,
)
from paimon_core.scan.java_merge_order import JavaPriorityQueue, java_sorted_runs, loser_tree_merge
from paimon_core.table import FileStoreTable
from tests.commit.helpers import data_file
from tests.scan.change_tables import (
    append_table,
    build_history,
    klines,
    lines,
    pk_table,
)

# Java 0.9 `incremental --mode between` on the same history (changelog-producer none)
JAVA_PK_BETWEEN = {
    (0, 6): klines(
        ("+I", "a", 2, "v3_a2"), ("+I", "a", 3, "v1_a3"), ("+I", "a", 4, "v1_a4"),
        ("+I", "a", 5, "v1_a5"), ("+I", "b", 2, "v1_b2"), ("+I", "b", 3, "v2_b3"),
        ("+I", "b", 4, "v1_b4"), ("+I", "b", 5, "v1_b5"), ("+U", "a", 1, "v3_a1"),
        ("+U", "a", 10, "v6_a10"), ("+U", "b", 1, "v6_b1"), ("-D", "a", 99, "nokey"),
        ("-D", "b", 7, "v2_b7"), ("-D", "c", 1, "x"),
    ),
    (0, 2): klines(
        ("+I", "a", 3, "v1_a3"), ("+I", "a", 4, "v1_a4"), ("+I", "a", 5, "v1_a5"),
        ("+I", "b", 1, "v1_b1"), ("+I", "b", 2, "v1_b2"), ("+I", "b", 3, "v2_b3"),
        ("+I", "b", 4, "v1_b4"), ("+I", "b", 5, "v1_b5"), ("+I", "b", 7, "v2_b7"),
        ("+U", "a", 1, "v2_a1"), ("-D", "a", 2, "x"), ("-D", "a", 99, "nokey"),
    ),
    (1, 3): klines(
        ("+I", "a", 2, "v3_a2"), ("+I", "b", 3, "v2_b3"), ("+I", "c", 1, "v3_c1"),
        ("+U", "a", 1, "v3_a1"), ("-D", "a", 99, "nokey"), ("-D", "b", 7, "v2_b7"),
    ),
    (2, 5): klines(
        ("+I", "a", 2, "v3_a2"), ("+I", "c", 1, "v3_c1"), ("+U", "a", 1, "v3_a1"),
        ("-D", "b", 7, "v2_b7"),
    ),
    (3, 5): [],  # a COMPACT and an OVERWRITE snapshot: nothing
    (3, 6): klines(("+U", "a", 10, "v6_a10"), ("+U", "b", 1, "v6_b1"), ("-D", "c", 1, "x")),
}

# changelog-producer=input, mode auto (= changelog): changelog files keep -U/+U pairs, and a
# file contributes one record per merge group, so a key updated in two snapshots keeps both +U
JAVA_INPUT_BETWEEN = {
    (1, 3): klines(
        ("+I", "a", 2, "v3_a2"), ("+I", "b", 3, "v2_b3"), ("+I", "c", 1, "v3_c1"),
        ("+U", "a", 1, "v2_a1"), ("+U", "a", 1, "v3_a1"), ("-D", "a", 99, "nokey"),
        ("-D", "b", 7, "v2_b7"),
    ),
    (2, 6): klines(
        ("+I", "a", 2, "v3_a2"), ("+U", "a", 1, "v3_a1"), ("+U", "a", 10, "v6_a10"),
        ("+U", "b", 1, "v6_b1"), ("-D", "b", 7, "v2_b7"), ("-D", "c", 1, "x"),
    ),
    (0, 6): klines(
        ("+I", "a", 2, "v3_a2"), ("+I", "a", 3, "v1_a3"), ("+I", "a", 4, "v1_a4"),
        ("+I", "a", 5, "v1_a5"), ("+I", "b", 2, "v1_b2"), ("+I", "b", 3, "v2_b3"),
        ("+I", "b", 4, "v1_b4"), ("+I", "b", 5, "v1_b5"), ("+U", "a", 1, "v2_a1"),
        ("+U", "a", 1, "v3_a1"), ("+U", "a", 10, "v6_a10"), ("+U", "b", 1, "v6_b1"),
        ("-D", "a", 99, "nokey"), ("-D", "b", 7, "v2_b7"), ("-D", "c", 1, "x"),
    ),
}


@pytest.mark.parametrize("rng", sorted(JAVA_PK_BETWEEN), ids=lambda r: f"{r[0]}-{r[1]}")
def test_pk_delta_between_matches_java(pk: FileStoreTable, rng: tuple[int, int]) -> None:
    assert lines(pk, pk.read_merged_changes(*rng)) == JAVA_PK_BETWEEN[rng]


def test_input_changelog_between_matches_java(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.pki", **{"changelog-producer": "input"})
    build_history(t)
    assert t.latest_snapshot().changelog_manifest_list is not None  # type: ignore[union-attr]
    for rng, expected in JAVA_INPUT_BETWEEN.items():
        assert lines(t, t.read_merged_changes(*rng)) == expected, rng
    # delta mode on the same table = the merged data files (like a table without producer)
    assert lines(t, t.read_merged_changes(0, 6, mode="delta")) == JAVA_PK_BETWEEN[(0, 6)]


def test_append_table_between(catalog: FileSystemCatalog) -> None:
    t = append_table(catalog, "db.ap")
    build_history(t)
    # append tables: rows added by APPEND snapshots, +I (the snapshot-5 overwrite is skipped)
    got = lines(t, t.read_merged_changes(1, 6))
    expected = klines(
        ("+I", "a", 1, "v3_a1"), ("+I", "a", 2, "v3_a2"), ("+I", "b", 7, "v2_b7"),
        ("+I", "c", 1, "v3_c1"), ("+I", "x", 0, "filler"), ("+I", "b", 1, "v6_b1"),
        ("+I", "c", 1, "x"), ("+I", "a", 10, "v6_a10"),
        ("+I", "a", 1, "v2_a1"), ("+I", "a", 2, "x"), ("+I", "b", 3, "v2_b3"),
        ("+I", "a", 99, "nokey"), ("+I", "a", 1, "v1_a1"), ("+I", "b", 7, "v2_b7"),
    )
    assert got == expected


def test_projection_and_filter(pk: FileStoreTable) -> None:
    got = pk.read_merged_changes(0, 6, columns=["id", "v"], filter="pt = 'b'")
    assert got.column_names == ["_kind", "id", "v"]
    rows = sorted(zip(got.column("_kind").to_pylist(), got.column("id").to_pylist()))
    assert rows == [("+I", 2), ("+I", 3), ("+I", 4), ("+I", 5), ("+U", 1), ("-D", 7)]
    # the filter applies after merging: key b7 was inserted then deleted -> one -D row
    got = pk.read_merged_changes(0, 6, filter=["pt = 'b'", "id = 7"])
    assert lines(pk, got) == klines(("-D", "b", 7, "v2_b7"))


def test_scan_modes(pk: FileStoreTable) -> None:
    # no changelog producer: changelog mode finds no changelog files
    assert pk.read_merged_changes(0, 6, mode="changelog").num_rows == 0
    assert lines(pk, pk.read_merged_changes(0, 6, mode="DELTA")) == JAVA_PK_BETWEEN[(0, 6)]
    with pytest.raises(SchemaError, match="auto, delta, changelog or diff"):
        pk.read_merged_changes(0, 6, mode="all")


def test_range_checks(pk: FileStoreTable) -> None:
    assert pk.read_merged_changes(6, 6).num_rows == 0
    with pytest.raises(SchemaError, match="must not exceed"):
        pk.read_merged_changes(4, 3)
    with pytest.raises(SnapshotNotExistError, match="snapshot 7 does not exist"):
        pk.read_merged_changes(0, 7)
    # expire snapshots 1 and 2 (metadata only): (1, 6] is still readable, (0, 6] is not
    for sid in (1, 2):
        pk.file_io.delete(pk.snapshot_manager.snapshot_path(sid))
    assert lines(pk, pk.read_merged_changes(2, 6)) == klines(
        ("+I", "a", 2, "v3_a2"), ("+U", "a", 1, "v3_a1"), ("+U", "a", 10, "v6_a10"),
        ("+U", "b", 1, "v6_b1"), ("-D", "b", 7, "v2_b7"), ("-D", "c", 1, "x"),
    )
    with pytest.raises(SnapshotExpiredError, match="snapshot 2 has expired"):
        pk.read_merged_changes(1, 6)


def test_empty_table(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.empty")
    got = t.read_merged_changes(0, 3)
    assert got.num_rows == 0 and got.column_names == ["_kind", "pt", "id", "v"]


def test_between_timestamp(pk: FileStoreTable) -> None:
    snaps = {s.id: s.time_millis for s in pk.snapshot_manager.snapshots()}
    sm = pk.snapshot_manager
    # (t1, t2] -> (latest snapshot at or before t1, latest at or before t2]
    assert resolve_timestamp_range(sm, snaps[1], snaps[3]) == (1, 3)
    assert resolve_timestamp_range(sm, snaps[1] + 1, snaps[3] + 1) == (1, 3)
    assert resolve_timestamp_range(sm, snaps[1] - 1, snaps[6]) == (0, 6)
    assert resolve_timestamp_range(sm, snaps[6] + 1, snaps[6] + 5) is None
    assert resolve_timestamp_range(sm, 0, snaps[1] - 1) is None
    got = pk.read_merged_changes_between_timestamps(snaps[1], snaps[3])
    assert lines(pk, got) == JAVA_PK_BETWEEN[(1, 3)]
    assert pk.read_merged_changes_between_timestamps(snaps[6] + 1, snaps[6] + 9).num_rows == 0


def test_plan_is_picklable_and_ordered(pk: FileStoreTable) -> None:
    planner = pk.new_planner(pk.schema, None)
    plan = plan_incremental(pk.snapshot_manager, planner, 0, 6, "delta")
    assert [(s.partition_values, s.bucket) for s in plan.splits] == sorted(
        (s.partition_values, s.bucket) for s in plan.splits
    )
    assert all(s.snapshot_id == 6 and not s.raw_convertible for s in plan.splits)
    # snapshots 1, 2, 3, 6 are APPEND: 1 + 1 + ... files; no file of COMPACT/OVERWRITE
    back = pickle.loads(pickle.dumps(plan))
    assert back == plan
    from paimon_core.read.table_read import TableRead

    read = TableRead(pk.file_io, pk.schema, pk.schema_manager)
    got = IncrementalRead(read, "delta").to_arrow(back.splits)
    assert lines(pk, got) == JAVA_PK_BETWEEN[(0, 6)]


def test_resolve_scan_mode(pk: FileStoreTable) -> None:
    from paimon_core.options import CoreOptions

    assert resolve_scan_mode("auto", CoreOptions({})) == "delta"
    assert resolve_scan_mode("auto", CoreOptions({"changelog-producer": "lookup"})) == "changelog"
    assert resolve_scan_mode(" Changelog ", CoreOptions({})) == "changelog"


# ---------------------------------------------------------------------------------------------
# Java's merge order: the two tie cases observed with Java 0.9 (lookup changelog files, whose
# -U/-D "before" rows repeat the old sequence number)


def test_java_sorted_runs_priority_queue_order() -> None:
    a = data_file(3, key_range=(3, 7))
    b = data_file(1, key_range=(7, 7))
    # both in one section (7 is not > 7); the second file starts a new run; the queue holds
    # [new run, old run] since equal max keys do not sift up
    runs = java_sorted_runs([a, b], _int_key)
    assert runs == [[[b], [a]]]
    # re-partitioning the flattened split (what the read does) gives the same order here
    assert java_sorted_runs([b, a], _int_key) == [[[b], [a]]]
    c = data_file(1, key_range=(1, 5))
    d = data_file(1, key_range=(1, 1))
    assert java_sorted_runs([c, d], _int_key) == [[[d], [c]]]
    e = data_file(1, key_range=(6, 9))
    f = data_file(1, key_range=(10, 12))
    # disjoint ranges: separate sections; overlapping ones share a section, disjoint files
    # inside a section are appended to the run with the smallest max key
    assert java_sorted_runs([f, e, c], _int_key) == [[[c]], [[e]], [[f]]]
    g = data_file(1, key_range=(2, 8))
    # c, g: two runs, queue [c (max 5), g (max 8)]; e polls c and is appended to it, and the
    # longer run re-enters behind g
    assert java_sorted_runs([c, g, e], _int_key) == [[[g], [c, e]]]


def _int_key(b: bytes) -> tuple[int, ...]:
    from paimon_core.spec.binary_row import deserialize_binary_row
    from paimon_core.types import parse_sql_type

    return tuple(deserialize_binary_row(b, [parse_sql_type("INT NOT NULL")]))


def test_java_priority_queue_matches_jdk_layout() -> None:
    q: JavaPriorityQueue[int] = JavaPriorityQueue(lambda x: (x,))
    for x in [5, 3, 8, 1, 9, 2]:
        q.add(x)
    assert q.items == [1, 3, 2, 5, 9, 8]  # java.util.PriorityQueue after the same adds
    assert q.poll() == 1
    assert q.items == [2, 3, 8, 5, 9]
    assert [q.poll() for _ in range(5)] == [2, 3, 5, 8, 9]


def test_loser_tree_groups_and_ties() -> None:
    # Java 0.9 case "b7": run 0 = [(7, seq 1) -D], run 1 = [(3, 0) -U, (3, 2) +U, (7, 1) +I];
    # key 3 is grouped twice (one record per run per group), then the tie on key 7 goes to
    # run 1, whose record arrived later in the tree: Java returned "+I b7"
    run0 = [((7,), (1,), 10)]
    run1 = [((3,), (0,), 20), ((3,), (2,), 21), ((7,), (1,), 22)]
    assert loser_tree_merge([run0, run1]) == [[20], [21], [10, 22]]
    # case "b1": both runs start with key 1 at seq 0 -> run 0 pops last and wins
    run0 = [((1,), (0,), 0), ((1,), (4,), 1)]
    run1 = [((1,), (0,), 5), ((2,), (0,), 6)]
    assert loser_tree_merge([run0, run1]) == [[5, 0], [1], [6]]
    # no tie: ascending sequence inside a group, whatever the run
    run0 = [((1,), (9,), 0)]
    run1 = [((1,), (3,), 1)]
    run2 = [((1,), (5,), 2), ((4,), (0,), 3)]
    assert loser_tree_merge([run0, run1, run2]) == [[1, 2, 0], [3]]
    assert loser_tree_merge([]) == []
    assert loser_tree_merge([[], []]) == []


# ---------------------------------------------------------------------------------------------
# CLI


def test_cli_incremental_between(pk: FileStoreTable, catalog: FileSystemCatalog,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    base = ["incremental", "--warehouse", catalog.warehouse, "--table", "db.pk"]
    assert main([*base, "--from", "1", "--to", "3", "--mode", "between"]) == 0
    assert capsys.readouterr().out.splitlines() == JAVA_PK_BETWEEN[(1, 3)]
    assert main([*base, "--from", "0", "--to", "6", "--mode", "between",
                 "--scan-mode", "changelog"]) == 0
    assert capsys.readouterr().out == ""
    assert main([*base, "--from", "3", "--to", "2", "--mode", "between"]) == 1
    assert "must not exceed" in capsys.readouterr().err


def test_result_schema_keeps_not_null(pk: FileStoreTable) -> None:
    got = pk.read_merged_changes(0, 6)
    assert got.schema.field("_kind").type == pa.string()
    assert got.schema.field("id").nullable is False


# ---------------------------------------------------------------------------------------------
# sequence ties through read_merged_changes: hand-written compaction changelogs shaped like
# the ones Java 0.9's lookup producer wrote (the "before" row repeats the old sequence number)


def _changelog_commit(t: FileStoreTable, pt: str, rows: list[tuple[int, str, int, str]]) -> int:
    """A COMPACT snapshot whose only content is one changelog file of partition ``pt``
    (bucket 0) holding ``rows`` = (id, kind, sequence number, v), sorted by key."""
    from paimon_core.commit_message import CommitMessage
    from paimon_core.datafile.writer import DataFileWriter
    from paimon_core.layout import DataFilePathFactory
    from paimon_core.spec.binary_row import serialize_binary_row

    codes = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}
    data = pa.table({
        "pt": [pt] * len(rows),
        "id": pa.array([r[0] for r in rows], pa.int32()),
        "v": [r[3] for r in rows],
        "_SEQUENCE_NUMBER": pa.array([r[2] for r in rows], pa.int64()),
        "_VALUE_KIND": pa.array([codes[r[1]] for r in rows], pa.int8()),
    })
    writer = DataFileWriter(t.file_io, t.schema, DataFilePathFactory(t.schema.file_format))
    meta = writer.write_kv_file(join_path(t.path, f"pt={pt}", "bucket-0"), data,
                                changelog=True, constant=[0])
    part = serialize_binary_row([pt], [t.schema.field("pt").type])
    msg = CommitMessage(part, 0, 1, compact_changelog=(meta,), table_path=t.path,
                        schema_id=t.schema.id)
    (sid,) = t.new_commit("ties").commit([msg])
    return sid


def join_path(*parts: str) -> str:
    from paimon_core.io.file_io import join

    out = parts[0]
    for p in parts[1:]:
        out = join(out, p)
    return out


def test_sequence_ties_follow_javas_loser_tree(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.ties", bucket="1", **{"changelog-producer": "lookup"})
    # "b1": file 1 = +I 1..5 (seq 0..3), file 2 = [-U 1 (old seq 0), +U 1 (seq 4)]
    _changelog_commit(t, "b", [(1, "+I", 0, "v1"), (2, "+I", 1, "v2"), (4, "+I", 2, "v4"),
                               (5, "+I", 3, "v5")])
    _changelog_commit(t, "b", [(1, "-U", 0, "v1"), (1, "+U", 4, "v6")])
    # "c1": +I (seq 0) then, in a later file, -D with the same sequence number
    _changelog_commit(t, "c", [(1, "+I", 0, "v3")])
    _changelog_commit(t, "c", [(1, "-D", 0, "v3")])
    # "b7"-like: file [3 -U seq 0, 3 +U seq 2, 7 +I seq 1], later file [7 -D seq 1]
    _changelog_commit(t, "d", [(3, "-U", 0, "a"), (3, "+U", 2, "b"), (7, "+I", 1, "x")])
    _changelog_commit(t, "d", [(7, "-D", 1, "x")])
    got = lines(t, t.read_merged_changes(0, 6))
    # Java 0.9 answered these shapes with: -U b1 and +U b1 (no +I b1), +I c1 (not -D),
    # and +I for key 7 of partition d (the file reaching key 7 later wins the tie)
    assert got == klines(
        ("-U", "b", 1, "v1"), ("+U", "b", 1, "v6"), ("+I", "b", 2, "v2"), ("+I", "b", 4, "v4"),
        ("+I", "b", 5, "v5"), ("+I", "c", 1, "v3"), ("-U", "d", 3, "a"), ("+U", "d", 3, "b"),
        ("+I", "d", 7, "x"),
    )
    # ranges holding only one of the tied files have no tie
    assert lines(t, t.read_merged_changes(2, 3)) == klines(("+I", "c", 1, "v3"))
    assert lines(t, t.read_merged_changes(3, 4)) == klines(("-D", "c", 1, "v3"))
