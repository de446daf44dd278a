"""Cross-partition upsert tables (``bucket=-1``, primary key ``id`` without the partition key
``pt``) with Paimon Java 0.9, both ways.

``java/CrossPartitionOracle.java`` writes as Paimon's Flink sink does (``IndexBootstrap`` +
``GlobalIndexAssigner``, which emits the ``-D`` of a key that moved partition, then
``TableWrite.write(row, bucket)``) and reads with Java's reader.

The same two batches build four tables: Java then Java (JJ), Java then ours (JP), ours then
Java (PJ), ours then ours (PP); each continuing writer bootstraps its index from the other's
files. Expected (by hand, below): every table reads the same rows, by Java and by us, each key
once, in the same bucket; Java 0.9 and pypaimon 2.1 read our table through the oracle CLI.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_core.datafile.writer as datafile_writer
from paimon_core.catalog import FileSystemCatalog
from paimon_core.fsck import fsck
from paimon_core.schema_builder import Schema
from paimon_core.table import FileStoreTable
from tests.interop.java_harness import compile_java, run_java
from tests.interop.oracle import ensure_ready, run_batches, spark_jars

pytestmark = pytest.mark.oracle

SOURCE = Path(__file__).with_name("java") / "CrossPartitionOracle.java"
BASE = {"dynamic-bucket.target-row-num": "2"}

Row = tuple[str, str, int, str | None]  # kind, pt, id, v
View = dict[tuple[str, int], tuple[str | None, int]]  # (pt, id) -> (v, bucket)

# batch 1: 1 moves a -> b within the batch (its -D frees a/0, which 5 then takes)
B1: list[Row] = [("+I", "a", 1, "x"), ("+I", "a", 2, "x"), ("+I", "a", 3, "x"),
                 ("+I", "b", 4, "x"), ("+I", "b", 1, "y"), ("+I", "a", 5, "y")]
# batch 2 (the writer bootstraps from the table): 2 moves a -> c; a delete of 3 arriving in
# partition z deletes it from a; 6 is new; 4 is updated in place; 1 moves back b -> a; 7..9 new
B2: list[Row] = [("+I", "c", 2, "z"), ("-D", "z", 3, None), ("+I", "a", 6, "z"),
                 ("+U", "b", 4, "x2"), ("+I", "a", 1, "z"), ("+I", "d", 7, "z"),
                 ("+I", "d", 8, "z"), ("+I", "d", 9, "z")]

# by hand (target 2; a move frees its place before the next row): after B1 a: {2, 5} in 0,
# {3} in 1; b: {4, 1} in 0. B2: c2 -> c/0 (a/0 freed); 3 leaves a/1 (its -D in z/0); 6 -> a/0;
# 1 leaves b/0 -> a/1 (a/0 full); 7, 8 -> d/0, 9 -> d/1.
EXPECTED: View = {
    ("a", 5): ("y", 0), ("a", 6): ("z", 0), ("a", 1): ("z", 1), ("b", 4): ("x2", 0),
    ("c", 2): ("z", 0), ("d", 7): ("z", 0), ("d", 8): ("z", 0), ("d", 9): ("z", 1)}


# ignore-delete, by hand (target 2): a/0: 1, 2; a/1: 3. Java's assigner takes the -D of 1
# arriving in b first (1's entry moves to b, freeing a/0), then its writer drops it: 1 stays
# in a, and 4 takes a/0 (a/1 when the -D is dropped before the index)
IGNORE_B1: list[Row] = [("+I", "a", 1, "x"), ("+I", "a", 2, "x"), ("+I", "a", 3, "x")]
IGNORE_B2: list[Row] = [("-D", "b", 1, None), ("+I", "a", 4, "y")]
IGNORE_EXPECTED: View = {("a", 1): ("x", 0), ("a", 2): ("x", 0), ("a", 3): ("x", 1),
                         ("a", 4): ("y", 0)}

# INSERT OVERWRITE: the index is the table's before the overwrite (b/0 full: 1 -> b/1, its -D
# in a/0). A static overwrite keeps only the new rows; a dynamic one replaces the partitions
# receiving files, a included (the -D), so 2 is gone with it, b's old rows too.
OVER_B1: list[Row] = [("+I", "a", 1, "x"), ("+I", "a", 2, "x"), ("+I", "b", 3, "x"),
                      ("+I", "b", 5, "x"), ("+I", "d", 6, "x")]
OVER_B2: list[Row] = [("+I", "b", 1, "o"), ("+I", "c", 4, "o")]
OVER_EXPECTED: dict[str, View] = {
    "false": {("b", 1): ("o", 1), ("c", 4): ("o", 0)},
    "true": {("b", 1): ("o", 1), ("c", 4): ("o", 0), ("d", 6): ("x", 0)}}

# index-ttl 1 h: batch 1 written 2 h ago (Java in a time zone 2 h behind, ours with its
# clock set back), batch 2 now. Batch 3: a/0 (only old files) is not loaded, so 2 arriving
# in c is a new key there and stays in a too; b/0 holds a file of now: 4 moves, its -D in b.
TTL_B1: list[Row] = [("+I", "a", 2, "old"), ("+I", "b", 3, "old")]
TTL_B2: list[Row] = [("+I", "b", 4, "new")]
TTL_B3: list[Row] = [("+I", "c", 2, "moved"), ("+I", "c", 4, "moved")]
TTL_EXPECTED: View = {("a", 2): ("old", 0), ("b", 3): ("old", 0), ("c", 2): ("moved", 0),
                      ("c", 4): ("moved", 0)}
OLD_HOURS = 2


def java_rows(rows: Sequence[Row]) -> str:
    return ";".join(f"{k}:{pt}:{i}:{v or ''}" for k, pt, i, v in rows)


def write_ours(t: FileStoreTable, rows: Sequence[Row], identifier: int, *,
               overwrite: bool = False) -> None:
    data = pa.table({"pt": [r[1] for r in rows], "id": pa.array([r[2] for r in rows], pa.int32()),
                     "v": [r[3] for r in rows], "_kind": [r[0] for r in rows]})
    with t.new_write("ours", overwrite=overwrite) as w:
        w.write_arrow(data, row_kind_column="_kind")
        commit = t.new_commit("ours")
        if overwrite:
            commit.overwrite(w.prepare_commit(), commit_identifier=identifier)
        else:
            commit.commit(w.prepare_commit(), identifier)


def our_view(t: FileStoreTable, unique: bool = True) -> View:
    out: View = {}
    ids: set[int] = set()
    rb = t.new_read_builder()
    for split in rb.new_scan().plan().splits:
        for r in rb.new_read().to_arrow([split]).to_pylist():
            assert not unique or r["id"] not in ids, f"{t.path}: key {r['id']} stored twice"
            ids.add(r["id"])
            out[(r["pt"], r["id"])] = (r["v"], split.bucket)
    return out


def java_views(lines: list[str]) -> list[View]:
    """The answers of READ commands, in order."""
    out: list[View] = []
    for line in lines:
        if line.startswith("OK rows="):
            out.append({})
        elif line.startswith("R "):
            pt, i, v, b = line[2:].split("\t")
            out[-1][(pt, int(i))] = (v or None, int(b))
    return out


@pytest.fixture(scope="module")
def classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    jars = spark_jars()
    rocksdb = sorted(jars.glob("rocksdbjni-*.jar")) if jars is not None else []
    if not rocksdb:  # GlobalIndexAssigner keeps its index in RocksDB
        pytest.skip("no rocksdbjni jar (pyspark's) for Java's GlobalIndexAssigner")
    cp = compile_java(tmp_path_factory.mktemp("xpartjava"), SOURCE)
    return f"{cp}:{rocksdb[-1]}"


def _java(classpath: str, commands: list[list[str]], zone: str = "UTC") -> list[str]:
    lines = run_java(classpath, "CrossPartitionOracle", ["\t".join(c) for c in commands],
                     timeout=900, jvm_args=(f"-Duser.timezone={zone}",))
    errors = [x for x in lines if x.startswith("ERR")]
    assert not errors, errors
    return lines


@dataclass(frozen=True)
class Batch:
    rows: list[Row]
    overwrite: bool = False
    old: bool = False  # written OLD_HOURS ago (the files' creation time)


@dataclass(frozen=True)
class Case:
    options: dict[str, str]
    batches: list[Batch]
    expected: View
    unique: bool = True  # every key stored once


CASES = {
    "moves": Case({}, [Batch(B1), Batch(B2)], EXPECTED),
    "ignore-delete": Case({"ignore-delete": "true"}, [Batch(IGNORE_B1), Batch(IGNORE_B2)],
                          IGNORE_EXPECTED),
    **{f"overwrite-dynamic-{d}": Case({"dynamic-partition-overwrite": d},
                                      [Batch(OVER_B1), Batch(OVER_B2, overwrite=True)],
                                      OVER_EXPECTED[d]) for d in ("false", "true")},
    "index-ttl": Case({"cross-partition-upsert.index-ttl": "1 h"},
                      [Batch(TTL_B1, old=True), Batch(TTL_B2), Batch(TTL_B3)], TTL_EXPECTED,
                      unique=False),
}


def ways(case: Case) -> list[str]:
    """Who writes each batch of a case's four tables: all Java, Java then ours, ours then
    Java, all ours."""
    n = len(case.batches)
    return ["J" * n, "J" + "P" * (n - 1), "P" + "J" * (n - 1), "P" * n]


@pytest.fixture(scope="module")
def views(classpath: str, tmp_path_factory: pytest.TempPathFactory
          ) -> dict[str, dict[str, tuple[View, View]]]:
    """Every case's four tables written batch by batch (one JVM per step for all cases);
    case -> way -> (Java's read, our read)."""
    wh = str(tmp_path_factory.mktemp("xpart") / "wh")
    catalog = FileSystemCatalog(wh)
    tables = {(c, w): f"db.{c.replace('-', '_')}_{w.lower()}" for c, case in CASES.items()
              for w in ways(case)}
    create = []
    for (c, w), name in tables.items():
        options = {**BASE, **CASES[c].options}
        if w[0] == "J":
            create.append(["CREATE", wh, name, ",".join(f"{k}={v}" for k, v in options.items())])
        else:
            catalog.create_table(name, Schema.of(
                [("pt", "STRING"), ("id", "INT NOT NULL"), ("v", "STRING")],
                partition_keys=["pt"], primary_keys=["id"], options={"bucket": "-1", **options}))
    assert _java(classpath, create) == ["OK CROSS_PARTITION"] * len(create)
    real_clock = datafile_writer.local_now_millis
    for i in range(1, 1 + max(len(case.batches) for case in CASES.values())):
        for old in (True, False):
            steps = [(c, w, name, CASES[c].batches[i - 1]) for (c, w), name in tables.items()
                     if len(CASES[c].batches) >= i and CASES[c].batches[i - 1].old is old]
            cmds = [["OVERWRITE", wh, name, java_rows(b.rows)] if b.overwrite else
                    ["WRITE", wh, name, "java", str(i), java_rows(b.rows)]
                    for _, w, name, b in steps if w[i - 1] == "J"]
            if cmds:
                _java(classpath, cmds, f"Etc/GMT+{OLD_HOURS}" if old else "UTC")
            with pytest.MonkeyPatch.context() as mp:
                if old:
                    mp.setattr(datafile_writer, "local_now_millis",
                               lambda: real_clock() - OLD_HOURS * 3_600_000)
                for _, w, name, b in steps:
                    if w[i - 1] == "P":
                        write_ours(catalog.get_table(name), b.rows, i, overwrite=b.overwrite)
    names = list(tables.items())
    lines = _java(classpath, [["READ", wh, name] for _, name in names])
    java = java_views(lines)
    counts = [int(x.split("=")[1]) for x in lines if x.startswith("OK rows=")]
    assert len(java) == len(names)
    out: dict[str, dict[str, tuple[View, View]]] = {c: {} for c in CASES}
    for ((c, w), name), j, n in zip(names, java, counts):
        t = catalog.get_table(name)
        out[c][w] = (j, our_view(t, CASES[c].unique))
        if CASES[c].unique:
            assert n == len({i for _, i in j}), f"{c} {w}: Java read a key twice"
            assert fsck(t, deep=True).ok, f"{c} {w}: {fsck(t, deep=True).findings}"
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_four_ways_agree(views: dict[str, dict[str, tuple[View, View]]], case: str) -> None:
    """moves: keys moving within and across commits; ignore-delete: deletes through the
    index first; overwrite-dynamic-*: INSERT OVERWRITE from the table's index before it;
    index-ttl: expired buckets not loaded (a key then kept in two partitions)."""
    for w, (java, ours) in views[case].items():
        assert java == CASES[case].expected, f"{w}: Java's read"
        assert ours == CASES[case].expected, f"{w}: our read"


def test_oracle_reads_our_cross_partition_table(tmp_path: Path) -> None:
    """The oracle CLI (Java 0.9 and pypaimon 2.1) reads a cross-partition table we wrote."""
    ensure_ready()
    wh = tmp_path / "wh"
    catalog = FileSystemCatalog(str(wh))
    catalog.create_database("db", ignore_if_exists=True)
    t = catalog.create_table("db.t", Schema.of(
        [("pt", "STRING"), ("id", "INT NOT NULL"), ("v", "STRING")],
        partition_keys=["pt"], primary_keys=["id"], options={"bucket": "-1", **BASE}))
    write_ours(t, B1, 1)
    write_ours(t, B2, 2)
    out = tmp_path / "out"
    out.mkdir()
    cmds = [{"cmd": "read", "warehouse": str(wh), "table": "db.t", "engine": "java",
             "output": str(out / "java.jsonl")},
            {"cmd": "read", "warehouse": str(wh), "table": "db.t", "engine": "pypaimon",
             "pypaimon_compat": True, "output": str(out / "pypaimon.jsonl")}]
    results = run_batches({"xpart-read": cmds}, tmp_path)
    assert not results["xpart-read"].failures(), results["xpart-read"].stderr[-3000:]
    expected = sorted((k, v) for k, (v, _) in EXPECTED.items())
    for engine in ("java", "pypaimon"):
        got = [json.loads(x) for x in (out / f"{engine}.jsonl").read_text().splitlines()]
        assert sorted(((r["pt"], r["id"]), r["v"]) for r in got) == expected, engine
