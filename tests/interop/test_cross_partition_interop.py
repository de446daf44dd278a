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
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.fsck import fsck
from paimon_core.schema_builder import Schema
from paimon_core.table import FileStoreTable
from tests.interop.java_harness import compile_java, run_java
from tests.interop.oracle import ensure_ready, run_batches, spark_jars

pytestmark = pytest.mark.oracle

SOURCE = Path(__file__).with_name("java") / "CrossPartitionOracle.java"
OPTIONS = {"dynamic-bucket.target-row-num": "2"}

Row = tuple[str, str, int, str | None]  # kind, pt, id, v

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
EXPECTED: dict[tuple[str, int], tuple[str | None, int]] = {
    ("a", 5): ("y", 0), ("a", 6): ("z", 0), ("a", 1): ("z", 1), ("b", 4): ("x2", 0),
    ("c", 2): ("z", 0), ("d", 7): ("z", 0), ("d", 8): ("z", 0), ("d", 9): ("z", 1)}


def java_rows(rows: Sequence[Row]) -> str:
    return ";".join(f"{k}:{pt}:{i}:{v or ''}" for k, pt, i, v in rows)


def write_ours(t: FileStoreTable, rows: Sequence[Row], identifier: int) -> None:
    data = pa.table({"pt": [r[1] for r in rows], "id": pa.array([r[2] for r in rows], pa.int32()),
                     "v": [r[3] for r in rows], "_kind": [r[0] for r in rows]})
    with t.new_write("ours") as w:
        w.write_arrow(data, row_kind_column="_kind")
        t.new_commit("ours").commit(w.prepare_commit(), identifier)


def our_view(t: FileStoreTable) -> dict[tuple[str, int], tuple[str | None, int]]:
    out: dict[tuple[str, int], tuple[str | None, int]] = {}
    ids: set[int] = set()
    rb = t.new_read_builder()
    for split in rb.new_scan().plan().splits:
        for r in rb.new_read().to_arrow([split]).to_pylist():
            assert r["id"] not in ids, f"{t.path}: key {r['id']} stored twice"
            ids.add(r["id"])
            out[(r["pt"], r["id"])] = (r["v"], split.bucket)
    return out


def java_views(lines: list[str]) -> list[dict[tuple[str, int], tuple[str | None, int]]]:
    """The answers of READ commands, in order."""
    out: list[dict[tuple[str, int], tuple[str | None, int]]] = []
    for line in lines:
        if line.startswith("OK rows="):
            out.append({})
        elif line.startswith("R "):
            pt, i, v, b = line[2:].split("\t")
            assert not any(k[1] == int(i) for k in out[-1]), f"Java read key {i} twice"
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


def _java(classpath: str, commands: list[list[str]]) -> list[str]:
    lines = run_java(classpath, "CrossPartitionOracle", ["\t".join(c) for c in commands],
                     timeout=900, jvm_args=("-Duser.timezone=UTC",))
    errors = [x for x in lines if x.startswith("ERR")]
    assert not errors, errors
    return lines


def test_four_ways_agree(classpath: str, tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    catalog = FileSystemCatalog(wh)
    names = {k: f"db.{k.lower()}" for k in ("JJ", "JP", "PJ", "PP")}
    opts = ",".join(f"{k}={v}" for k, v in OPTIONS.items())
    created = _java(classpath, [["CREATE", wh, names[k], opts] for k in ("JJ", "JP")])
    assert created == ["OK CROSS_PARTITION"] * 2
    for k in ("PJ", "PP"):
        catalog.create_table(names[k], Schema.of(
            [("pt", "STRING"), ("id", "INT NOT NULL"), ("v", "STRING")],
            partition_keys=["pt"], primary_keys=["id"], options={"bucket": "-1", **OPTIONS}))
    _java(classpath, [["WRITE", wh, names[k], "java", "1", java_rows(B1)]
                      for k in ("JJ", "JP")])
    for k in ("PJ", "PP"):
        write_ours(catalog.get_table(names[k]), B1, 1)
    _java(classpath, [["WRITE", wh, names[k], "java", "2", java_rows(B2)]
                      for k in ("JJ", "PJ")])
    for k in ("JP", "PP"):
        write_ours(catalog.get_table(names[k]), B2, 2)
    views = java_views(_java(classpath, [["READ", wh, names[k]]
                                         for k in ("JJ", "JP", "PJ", "PP")]))
    assert len(views) == 4
    for k, java in zip(("JJ", "JP", "PJ", "PP"), views):
        assert java == EXPECTED, f"{k}: Java's read"
        t = catalog.get_table(names[k])
        assert our_view(t) == EXPECTED, f"{k}: our read"
        assert fsck(t, deep=True).ok, f"{k}: {fsck(t, deep=True).findings}"


def test_oracle_reads_our_cross_partition_table(tmp_path: Path) -> None:
    """The oracle CLI (Java 0.9 and pypaimon 2.1) reads a cross-partition table we wrote."""
    ensure_ready()
    wh = tmp_path / "wh"
    catalog = FileSystemCatalog(str(wh))
    catalog.create_database("db", ignore_if_exists=True)
    t = catalog.create_table("db.t", Schema.of(
        [("pt", "STRING"), ("id", "INT NOT NULL"), ("v", "STRING")],
        partition_keys=["pt"], primary_keys=["id"], options={"bucket": "-1", **OPTIONS}))
    write_ours(t, B1, 1)
    write_ours(t, B2, 2)
    out = tmp_path / "out"
    out.mkdir()
    cmds = [{"cmd": "read", "warehouse": str(wh), "table": "db.t", "engine": "java",
             "output": str(out / "java.jsonl")},
            {"cmd": "read", "warehouse": str(wh), "table": "db.t", "engine": "pypaimon",
             "pypaimon_compat": True, "output": str(out / "pypaimon.jsonl")}]
    results = run_batches({"xpart-read": cmds}, tmp_path)
    assert not results["xpart-read"].failures(), results["xpart-read"].failures()
    expected = sorted((k, v) for k, (v, _) in EXPECTED.items())
    for engine in ("java", "pypaimon"):
        got = [json.loads(x) for x in (out / f"{engine}.jsonl").read_text().splitlines()]
        assert sorted(((r["pt"], r["id"]), r["v"]) for r in got) == expected, engine
