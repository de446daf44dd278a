"""The CDC job into a cross-partition table (``bucket = -1``, primary key ``id``, partitioned by
``weight``): updates that change the partition column move the key, and its old partition
loses the row.

Input: Canal's own output of the Debezium tutorial's ``inventory.products2``
(``cdc_corpus/canal/flink_inventory.jsonl``, see its SOURCES.md), landed in two batches (its
first two events, then the rest), so keys stored by batch 1 move in batch 2: 101 (3.14 ->
5.17), 102 (8.1 -> 5.17, then deleted), 107 (5.3 -> 5.1); 110 and 111 move within batch 2.
Batch 3 (``canal/truncate.jsonl``): an insert of 301, a ``TRUNCATE``, an insert of 302; the
rows after the truncate are written as an overwrite, whose index is the table's before it
(as Java 0.9's), so only 302 is left.
The job's ``main`` (the module ``python -m pipelines.jobs.cdc_ingest`` runs; that form runs in a
subprocess in test_cdc_routing.py) on the test session's Spark (two tasks, so two key slices);
Java 0.9 reads the result. Expected rows written by hand from the events.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.fsck import fsck
from paimon_core.schema_builder import Schema

pytestmark = pytest.mark.spark

FEED = Path(__file__).parent / "cdc_corpus" / "canal" / "flink_inventory.jsonl"
TRUNCATE = FEED.with_name("truncate.jsonl")
COLUMNS = [("id", "INT NOT NULL"), ("name", "STRING"), ("description", "STRING"),
           ("weight", "STRING")]

# by hand, from the feed's events (weight is the partition)
EXPECTED = [
    (101, "scooter", "Small 2-wheel scooter", "5.17"),
    (104, "hammer", "12oz carpenter's hammer", "0.75"),
    (105, "hammer", "14oz carpenter's hammer", "0.875"),
    (106, "hammer", "18oz carpenter hammer", "1.0"),
    (107, "rocks", "box of assorted rocks", "5.1"),
    (108, "jacket", "water resistent black wind breaker", "0.1"),
    (109, "spare tire", "24 inch spare tire", "22.2"),
    (110, "jacket", "new water resistent white wind breaker", "0.5"),
]
AFTER_TRUNCATE = [(302, "jacket", "water resistent black wind breaker", "0.1")]


@pytest.fixture(scope="module")
def ingested(spark: Any, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[Path, list[dict[str, Any]]]:
    from pipelines.jobs.cdc_ingest import main

    root = tmp_path_factory.mktemp("cdcxpart")
    lines = FEED.read_text().splitlines()
    for b, part in enumerate((lines[:2], lines[2:], TRUNCATE.read_text().splitlines()), 1):
        d = root / "landing" / f"batch-{b:06d}"
        d.mkdir(parents=True)
        (d / "part-0.jsonl").write_text("\n".join(part) + "\n")
    wh = root / "wh"
    FileSystemCatalog(str(wh)).create_table("inventory.products2", Schema.of(
        COLUMNS, primary_keys=["id"], partition_keys=["weight"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "3"}))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["--warehouse", str(wh), "--table", "inventory.products2",
                   "--landing", str(root / "landing"), "--format", "canal-json"])
    assert rc == 0
    return wh, [json.loads(x) for x in out.getvalue().splitlines() if x.startswith("{")]


def test_moved_keys_leave_their_old_partition(ingested: tuple[Path, list[dict[str, Any]]]
                                              ) -> None:
    wh, reports = ingested
    assert [r["batch"] for r in reports] == [1, 2, 3]
    assert [r["malformed"] for r in reports] == [0, 0, 0]
    t = FileSystemCatalog(str(wh)).get_table("inventory.products2")
    rb = t.new_read_builder().with_time_travel(snapshot_id=reports[1]["snapshot_ids"][-1])
    rows = sorted((r["id"], r["name"], r["description"], r["weight"])
                  for r in rb.new_read().to_arrow(rb.new_scan().plan().splits).to_pylist())
    assert rows == EXPECTED
    # every key once; the partitions the keys left hold nothing
    by_partition: dict[str, list[int]] = {}
    for split in rb.new_scan().plan().splits:
        for r in rb.new_read().to_arrow([split]).to_pylist():
            by_partition.setdefault(r["weight"], []).append(r["id"])
    assert sorted(i for ids in by_partition.values() for i in ids) == [r[0] for r in EXPECTED]
    for left in ("3.14", "8.1", "5.3", "0.2", "5.18", "0.8"):
        assert left not in by_partition, left
    assert sorted(by_partition["5.17"]) == [101]


def test_truncate_empties_the_table(ingested: tuple[Path, list[dict[str, Any]]]) -> None:
    wh, reports = ingested
    assert reports[2]["truncates"] == 1
    t = FileSystemCatalog(str(wh)).get_table("inventory.products2")
    rows = sorted((r["id"], r["name"], r["description"], r["weight"])
                  for r in t.to_arrow().to_pylist())
    assert rows == AFTER_TRUNCATE
    assert fsck(t, deep=True).ok


@pytest.mark.oracle
def test_java_reads_the_same(ingested: tuple[Path, list[dict[str, Any]]],
                             tmp_path: Path) -> None:
    from tests.interop.oracle import ensure_ready, run_batches

    wh, reports = ingested
    ensure_ready()
    moved = reports[1]["snapshot_ids"][-1]
    cmds = [{"cmd": "read", "warehouse": str(wh), "table": "inventory.products2",
             "engine": "java", "output": str(tmp_path / f"{name}.jsonl"), **extra}
            for name, extra in (("moved", {"snapshot": moved}), ("latest", {}))]
    result = run_batches({"cdcxp": cmds}, tmp_path)["cdcxp"]
    assert not result.failures(), result.stderr[-3000:]
    for name, expected in (("moved", EXPECTED), ("latest", AFTER_TRUNCATE)):
        java = sorted((r["id"], r["name"], r["description"], r["weight"]) for r in (
            json.loads(x) for x in (tmp_path / f"{name}.jsonl").read_text().splitlines()))
        assert java == expected, name
