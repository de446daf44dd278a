"""Dynamic bucket tables (``bucket=-1``) with Paimon Java 0.9, both ways.

``java/DynamicBucketOracle.java`` writes as Paimon's Flink sink does (``HashBucketAssigner``
loading the table's HASH index, one per assigner channel, then ``TableWrite.write(row,
bucket)`` whose ``HashIndexMaintainer`` writes the index files) and reads with Java's reader.

For each setting, the same two batches build four tables: Java then Java (JJ), Java then ours
(JP), ours then Java (PJ), ours then ours (PP). Each continuing writer loads the index the other
wrote. Expected: every table reads (by Java and by us) the rows of the hand-written model, and
every key sits in the same bucket in all four tables — our assignment is Java's, decision for
decision. The expected buckets of the single-channel setting are also written by hand.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.fsck import fsck
from paimon_core.schema_builder import Schema
from paimon_core.table import FileStoreTable
from tests.interop.java_harness import compile_java, run_java
from tests.interop.oracle import ensure_ready, run_batches

pytestmark = pytest.mark.oracle

SOURCE = Path(__file__).with_name("java") / "DynamicBucketOracle.java"

Row = tuple[str, str, int, str | None]  # kind, pt, id, v

# two batches: new keys, existing keys, a delete of a stored key and of a key never stored
B1: list[Row] = [("+I", "a", i, f"a{i}") for i in range(1, 8)] + [
    ("+I", "b", 1, "b1"), ("+I", "b", 2, "b2"), ("-D", "a", 3, None), ("-D", "a", 40, None)]
B2: list[Row] = [("+I", "a", 3, "a3'"), ("+I", "a", 8, "a8"), ("+I", "a", 40, "a40"),
                 ("+U", "a", 1, "a1'"), ("+I", "b", 3, "b3"), ("-D", "b", 2, None)] + [
    ("+I", "a", i, f"a{i}") for i in range(9, 14)]

SETTINGS = {
    # name: (table options, assigner channels)
    "one": ({"dynamic-bucket.target-row-num": "3"}, 1),
    "two": ({"dynamic-bucket.target-row-num": "2", "dynamic-bucket.initial-buckets": "2",
             "dynamic-bucket.assigner-parallelism": "2"}, 2),
}

# setting "one", by hand (PartitionIndex.assign, target 3): B1 a: 1,2,3 -> 0; 4,5,6 -> 1;
# 7, then the delete of 3 (known: 0) and of 40 (new) -> 2; b: 1, 2 -> 0. B2 a: 3 -> 0,
# 8 -> 2 (7, 40, 8: full), 40 -> 2, 1 -> 0, 9..11 -> 3, 12, 13 -> 4; b: 3 -> 0, 2 -> 0.
HAND_ONE = {("a", 1): 0, ("a", 2): 0, ("a", 3): 0, ("a", 4): 1, ("a", 5): 1, ("a", 6): 1,
            ("a", 7): 2, ("a", 8): 2, ("a", 40): 2, ("a", 9): 3, ("a", 10): 3, ("a", 11): 3,
            ("a", 12): 4, ("a", 13): 4, ("b", 1): 0, ("b", 3): 0}


def model() -> dict[tuple[str, int], str | None]:
    rows: dict[tuple[str, int], str | None] = {}
    for kind, pt, i, v in [*B1, *B2]:
        if kind == "-D":
            rows.pop((pt, i), None)
        else:
            rows[(pt, i)] = v
    return rows


def java_rows(rows: Sequence[Row]) -> str:
    return ";".join(f"{k}:{pt}:{i}:{v or ''}" for k, pt, i, v in rows)


def write_ours(t: FileStoreTable, rows: Sequence[Row], identifier: int) -> None:
    data = pa.table({"pt": [r[1] for r in rows], "id": pa.array([r[2] for r in rows], pa.int32()),
                     "v": [r[3] for r in rows], "_kind": [r[0] for r in rows]})
    with t.new_write("ours") as w:
        w.write_arrow(data, row_kind_column="_kind")
        t.new_commit("ours").commit(w.prepare_commit(), identifier)


def our_view(t: FileStoreTable) -> tuple[dict[tuple[str, int], str | None],
                                         dict[tuple[str, int], int]]:
    rows: dict[tuple[str, int], str | None] = {}
    buckets: dict[tuple[str, int], int] = {}
    rb = t.new_read_builder()
    for split in rb.new_scan().plan().splits:
        for r in rb.new_read().to_arrow([split]).to_pylist():
            key = (r["pt"], r["id"])
            assert key not in rows, f"{t.path}: key {key} in two buckets"
            rows[key] = r["v"]
            buckets[key] = split.bucket
    return rows, buckets


def java_view(lines: list[str]) -> list[tuple[dict[tuple[str, int], str | None],
                                             dict[tuple[str, int], int]]]:
    """The answers of READ commands, in order: (rows, bucket of each key)."""
    out: list[tuple[dict[tuple[str, int], str | None], dict[tuple[str, int], int]]] = []
    for line in lines:
        if line.startswith("OK rows="):
            out.append(({}, {}))
        elif line.startswith("R "):
            pt, i, v, b = line[2:].split("\t")
            rows, buckets = out[-1]
            key = (pt, int(i))
            assert key not in rows, f"Java read {key} twice (a key in two buckets)"
            rows[key] = v or None
            buckets[key] = int(b)
    return out


@pytest.fixture(scope="module")
def classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    return compile_java(tmp_path_factory.mktemp("dynjava"), SOURCE)


def _java(classpath: str, commands: list[list[str]]) -> list[str]:
    lines = run_java(classpath, "DynamicBucketOracle", ["\t".join(c) for c in commands],
                     timeout=900, jvm_args=("-Duser.timezone=UTC",))
    errors = [x for x in lines if x.startswith("ERR")]
    assert not errors, errors
    return lines


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_four_ways_agree(classpath: str, tmp_path: Path, setting: str) -> None:
    options, channels = SETTINGS[setting]
    wh = str(tmp_path / "wh")
    catalog = FileSystemCatalog(wh)
    names = {k: f"db.{k.lower()}" for k in ("JJ", "JP", "PJ", "PP")}
    opts = ",".join(f"{k}={v}" for k, v in options.items())
    # Java creates JJ and JP; we create PJ and PP (Java then reads our schema files)
    create = [["CREATE", wh, names[k], opts] for k in ("JJ", "JP")]
    catalog.create_database("db", ignore_if_exists=True)
    for k in ("PJ", "PP"):
        catalog.create_table(names[k], Schema.of(
            [("pt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("v", "STRING")],
            partition_keys=["pt"], primary_keys=["pt", "id"],
            options={"bucket": "-1", **options}))
    java_b1 = [["WRITE", wh, names[k], "java", "1", str(channels), java_rows(B1)]
               for k in ("JJ", "JP")]
    _java(classpath, create + java_b1)
    for k in ("PJ", "PP"):
        write_ours(catalog.get_table(names[k]), B1, 1)
    _java(classpath, [["WRITE", wh, names[k], "java", "2", str(channels), java_rows(B2)]
                      for k in ("JJ", "PJ")])
    for k in ("JP", "PP"):
        write_ours(catalog.get_table(names[k]), B2, 2)
    lines = _java(classpath, [["READ", wh, names[k]] for k in ("JJ", "JP", "PJ", "PP")])
    views = java_view(lines)
    assert len(views) == 4
    expected = model()
    reference_buckets = views[0][1]
    for k, (rows, buckets) in zip(("JJ", "JP", "PJ", "PP"), views):
        assert rows == expected, f"{setting}/{k}: Java's read"
        assert buckets == reference_buckets, f"{setting}/{k}: Java's buckets"
        t = catalog.get_table(names[k])
        ours_rows, ours_buckets = our_view(t)
        assert ours_rows == expected, f"{setting}/{k}: our read"
        assert ours_buckets == reference_buckets, f"{setting}/{k}: our buckets"
        assert fsck(t, deep=True).ok, f"{setting}/{k}: {fsck(t, deep=True).findings}"
    if setting == "one":
        assert reference_buckets == {k: v for k, v in HAND_ONE.items() if k in expected}
    else:  # two channels: each partition's keys fill two residue classes of buckets
        assert len(set(reference_buckets.values())) > 2


def test_oracle_reads_our_dynamic_table(tmp_path: Path) -> None:
    """The oracle CLI (Java 0.9 and pypaimon) reads a dynamic bucket table we wrote."""
    ensure_ready()
    wh = tmp_path / "wh"
    catalog = FileSystemCatalog(str(wh))
    catalog.create_database("db", ignore_if_exists=True)
    t = catalog.create_table("db.t", Schema.of(
        [("pt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("v", "STRING")],
        partition_keys=["pt"], primary_keys=["pt", "id"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "3"}))
    write_ours(t, B1, 1)
    write_ours(t, B2, 2)
    out = tmp_path / "out"
    out.mkdir()
    cmds = [{"cmd": "read", "warehouse": str(wh), "table": "db.t", "engine": "java",
             "output": str(out / "java.jsonl")},
            {"cmd": "read", "warehouse": str(wh), "table": "db.t", "engine": "pypaimon",
             "pypaimon_compat": True, "output": str(out / "pypaimon.jsonl")}]
    results = run_batches({"dyn-read": cmds}, tmp_path)
    assert not results["dyn-read"].failures(), results["dyn-read"].failures()
    expected = sorted(model().items())
    for engine in ("java", "pypaimon"):
        got = [json.loads(x) for x in (out / f"{engine}.jsonl").read_text().splitlines()]
        assert sorted(((r["pt"], r["id"]), r["v"]) for r in got) == expected, engine


def test_java_compacts_our_dynamic_table_and_we_continue(tmp_path: Path) -> None:
    """Java 0.9's full compaction of our table carries our index forward (a COMPACT snapshot
    with the same index manifest); our next write finds every stored key where it was."""
    ensure_ready()
    wh = tmp_path / "wh"
    catalog = FileSystemCatalog(str(wh))
    catalog.create_database("db", ignore_if_exists=True)
    t = catalog.create_table("db.t", Schema.of(
        [("pt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("v", "STRING")],
        partition_keys=["pt"], primary_keys=["pt", "id"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "3"}))
    write_ours(t, B1, 1)
    write_ours(t, B2, 2)
    rows, buckets = our_view(t)
    results = run_batches({"dyn-compact": [{"cmd": "compact", "warehouse": str(wh),
                                            "table": "db.t", "engine": "java"}]}, tmp_path)
    assert not results["dyn-compact"].failures(), results["dyn-compact"].failures()
    t = catalog.get_table("db.t")
    snaps = list(t.snapshot_manager.snapshots())
    assert [s.commit_kind.value for s in snaps] == ["APPEND", "APPEND", "COMPACT"]
    assert snaps[2].index_manifest == snaps[1].index_manifest
    assert our_view(t) == (rows, buckets)
    write_ours(t, [("+I", "a", 1, "again"), ("+I", "a", 77, "new")], 3)
    rows2, buckets2 = our_view(t)
    assert rows2 == {**rows, ("a", 1): "again", ("a", 77): "new"}
    assert all(buckets2[k] == b for k, b in buckets.items())
    assert fsck(t, deep=True).ok
