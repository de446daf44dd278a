"""Every ``python`` block of README.md runs (doctest-style), in a temporary warehouse.

The blocks are parsed out of README.md; each must have an :class:`Example` here (keyed by its
first line), which prepares what the block assumes (a table with some snapshots, the
variables it uses such as ``batch`` or ``sink``), runs the block with only the placeholder
warehouse path substituted, and checks its effect. A README block without an example fails
the test, and so does an example without its block; a block that cannot run here is in
:data:`NOT_RUN` with the reason (reported as a skip, never silently).
"""

from __future__ import annotations

import datetime
import decimal
import doctest
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import paimon_core
import paimon_core.table
from paimon_core import FileStoreTable, FileSystemCatalog, Schema
from tests.readme_harness import README, age_snapshots, arrow_rows, orders_rows, schema_json

#: the warehouse of the README's examples (replaced by a temporary directory)
WAREHOUSE = "/data/warehouse"


def readme_blocks(text: str) -> list[tuple[int, str]]:
    """``(line number, code)`` of every ``python`` block of ``text``."""
    out: list[tuple[int, str]] = []
    for m in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
        out.append((text.count("\n", 0, m.start()) + 2, m.group(1)))
    return out


# ------------------------------------------------------------------------------ preparation


def orders_table(wh: Path, commits: int = 8) -> FileStoreTable:
    """``sales.orders`` (region, order_id, amount), partitioned by region, ``commits``
    snapshots each updating every key."""
    table = FileSystemCatalog(str(wh)).create_table(
        "sales.orders", Schema.from_json(schema_json("region")))
    for c in range(1, commits + 1):
        builder = table.new_batch_write_builder("prep")
        with builder.new_write() as w:
            w.write_arrow(arrow_rows(orders_rows(c)))
            builder.new_commit().commit(w.prepare_commit(), c)
    return table


def reading(wh: Path) -> dict[str, Any]:
    table = orders_table(wh)
    table.create_tag("month-end", 5)
    # snapshots 1-3 committed before the README's point in time (1_700_000_000_000)
    age_snapshots(table, 3, int(time.time() * 1000) - 1_700_000_000_000 + 60_000)
    return {}


def with_table(wh: Path) -> dict[str, Any]:
    return {"table": orders_table(wh)}


def old_table(wh: Path) -> dict[str, Any]:
    table = orders_table(wh)
    latest = table.snapshot_manager.latest_snapshot_id() or 0
    age_snapshots(table, latest, 2 * 3600 * 1000)  # older than snapshot.time-retained
    return {"table": table}


def merged_changes(wh: Path) -> dict[str, Any]:
    table = orders_table(wh)
    times = [s.time_millis for s in table.snapshot_manager.snapshots()]
    return {"table": table, "t1_ms": times[2], "t2_ms": times[6]}


def streaming(wh: Path) -> dict[str, Any]:
    seen: list[pa.Table] = []
    return {"table": orders_table(wh), "sink": seen.append, "seen": seen}


def writing(wh: Path) -> dict[str, Any]:
    rows = arrow_rows(orders_rows(1))
    changes = arrow_rows(orders_rows(2)).append_column("op", pa.array(["+U"] * len(rows)))
    emea = rows.filter(pa.compute.equal(rows["region"], "emea"))
    return {"run_id": "run-1", "batch_id": 1, "batch": rows, "changes": changes, "emea": emea}


def copying(wh: Path) -> dict[str, Any]:
    return {"table": orders_table(wh, commits=1), "batch": arrow_rows(orders_rows(2))}


def check_routed(ns: dict[str, Any]) -> None:
    table: FileStoreTable = ns["table"]
    snap = table.latest_snapshot()
    assert snap is not None and snap.commit_user == "orders-routed"
    files = table.inspect.delta_files(snap.id).to_pylist()
    assert files and {f["bucket"] for f in files} <= {0, 1}
    assert sum(f["record_count"] for f in files) == ns["batch"].num_rows


def check_copy(ns: dict[str, Any]) -> None:
    import pyarrow.parquet as pq

    table: FileStoreTable = ns["table"]
    snap = table.latest_snapshot()
    assert snap is not None and snap.commit_user == "orders-backfill"
    added = [r["file_path"] for r in table.inspect.delta_files(snap.id).to_pylist()]
    codecs = {pq.ParquetFile(next(Path(table.path).rglob(name))).metadata.row_group(0)
              .column(0).compression for name in added}
    assert added and codecs == {"GZIP"}
    stored = FileSystemCatalog(str(Path(table.path).parents[1])).get_table("sales.orders")
    assert stored.schema.options == {"bucket": "2"} and stored.schema.id == 0


def aggregation(wh: Path) -> dict[str, Any]:
    ts = datetime.datetime(2024, 1, 2, 3, 4, 5)
    deltas = pa.table({
        "sku": ["a", "a", "b", "a"], "qty": pa.array([5, 3, 7, 2], pa.int64()),
        "last_seen": pa.array([ts] * 4, pa.timestamp("ms")), "tags": ["x", "y", "z", "x"],
        "op": ["+I", "+I", "+I", "-U"],
    })
    return {"catalog": FileSystemCatalog(str(wh)), "Schema": Schema, "deltas": deltas}


# ------------------------------------------------------------------------------ checks


def check_reading(ns: dict[str, Any]) -> None:
    assert ns["orders"].num_rows == 8 and ns["old"].num_rows == 8
    assert ns["big"].column_names == ["order_id", "amount"]
    # every key of each APPEND snapshot in (3, 7] (the writer's COMPACT snapshots add none)
    changes = ns["changes"]
    assert changes.column_names[0] == "_kind" and changes.num_rows % 8 == 0 and changes.num_rows
    assert ns["then"].num_rows == 8 and ns["tagged"].num_rows == 8


def check_plan(ns: dict[str, Any]) -> None:
    assert ns["plan"].splits and ns["part"].column_names == ["order_id", "amount"]


def check_merged(ns: dict[str, Any]) -> None:
    assert ns["upserts"].num_rows == ns["delta"].num_rows == 8


def check_streaming(ns: dict[str, Any]) -> None:
    assert sum(t.num_rows for t in ns["seen"]) == 64  # 8 APPEND snapshots x 8 keys, unmerged
    assert ns["scan"].checkpoint() == ns["table"].latest_snapshot().id + 1


def check_writing(ns: dict[str, Any]) -> None:
    table: FileStoreTable = ns["table"]
    assert table.to_arrow().num_rows == 0  # truncated at the end
    kinds = [s.commit_kind.value for s in table.snapshot_manager.snapshots()]
    assert kinds == ["APPEND", "OVERWRITE", "OVERWRITE", "OVERWRITE", "OVERWRITE"]
    first = table.snapshot_manager.snapshot(1)
    assert first.commit_user == "orders-ingest" and first.properties == {"dagster/run_id": "run-1"}


def check_schema(ns: dict[str, Any]) -> None:
    assert ns["report"].ok and "total" in ns["table"].schema.field_names


def check_inspect(ns: dict[str, Any]) -> None:
    table: FileStoreTable = ns["table"]
    assert ns["snaps"].column("snapshot_id").to_pylist() == [
        s.id for s in table.snapshot_manager.snapshots()]
    assert set(ns["files"].column("level").to_pylist()) <= set(range(6))
    assert ns["files"].num_rows and ns["debt"].num_rows
    assert ns["changes"].column_names[0] == "rowkind" and ns["changes"].num_rows == 8


def check_compaction(ns: dict[str, Any]) -> None:
    assert ns["table"].latest_snapshot().commit_kind.value == "COMPACT"


def check_aggregation(ns: dict[str, Any]) -> None:
    rows = {r["sku"]: r["qty"] for r in ns["table"].to_arrow().to_pylist()}
    assert rows == {"a": 6, "b": 7}


def check_cross_partition(ns: dict[str, Any]) -> None:
    assert ns["people"].to_arrow().to_pylist() == [{"city": "Lyon", "id": 7, "name": "Ada"}]


def check_maintenance(ns: dict[str, Any]) -> None:
    table = ns["table"]
    assert ns["r"].expired_ids and table.snapshot_manager.earliest_snapshot_id() == (
        table.latest_snapshot().id - 4)  # 5 retained


def check_io_manager(ns: dict[str, Any]) -> None:
    table = ns["catalog"].table("sales.daily")
    rows = table.to_arrow().to_pylist()
    assert sorted((r["dt"], r["id"]) for r in rows) == [
        ("2025-01-01", 1), ("2025-01-01", 2), ("2025-01-02", 1), ("2025-01-02", 2)]
    big = ns["catalog"].table("default.big").to_arrow().to_pylist()
    assert sorted((r["dt"], r["id"], r["amount"]) for r in big) == [
        ("2025-01-01", 2, 20.0), ("2025-01-02", 2, 20.0)]
    assert ns["result"].success


@dataclass(frozen=True)
class Example:
    prepare: Callable[[Path], dict[str, Any]] = lambda wh: {}
    check: Callable[[dict[str, Any]], None] = lambda ns: None
    #: the namespace the block runs in also gets the README's earlier imports
    extra: dict[str, Any] = field(default_factory=dict)


#: README blocks by a marker (a piece of code found in exactly one block) -> their example
EXAMPLES: dict[str, Example] = {
    "table.to_arrow(tag=\"month-end\")": Example(reading, check_reading),
    "FileSystemCatalog(\"s3://lake/warehouse\"": Example(
        extra={"FileSystemCatalog": FileSystemCatalog},
        check=lambda ns: ns["catalog"].file_io.scheme == "s3" or pytest.fail("not s3")),
    "read.to_batches(": Example(with_table, check_plan),
    "read_merged_changes_between_timestamps": Example(merged_changes, check_merged),
    "new_stream_scan(": Example(streaming, check_streaming),
    "new_batch_write_builder(\n    \"orders-ingest\"": Example(writing, check_writing),
    "table.copy({": Example(copying, check_copy),
    "buckets=routed": Example(copying, check_routed),
    "RenameColumn(\"amount\", \"total\")": Example(with_table, check_schema),
    "compact_bucket(": Example(with_table, check_compaction),
    "table.inspect.snapshots()": Example(with_table, check_inspect),
    "\"shop.stock\"": Example(aggregation, check_aggregation),
    "\"crm.people\"": Example(lambda wh: {"catalog": FileSystemCatalog(str(wh)),
                                          "Schema": Schema, "pa": pa},
                               check_cross_partition),
    "expire_snapshots(": Example(old_table, check_maintenance),
    "PaimonPandasIOManager(catalog=": Example(check=lambda ns: check_io_manager(ns)),
}
#: README blocks (by marker) that are not run here, with the reason
NOT_RUN = {
    "PaimonTable.forName(spark, \"sales.orders\"":
        "needs the test session's SparkSession (the session fixture); runs as written in "
        "tests/pipelines/test_rowlevel.py::test_readme_block_runs_as_written",
    "spark.readStream":
        "starts a Spark session and a never-ending streaming query into /out and /ck; the same "
        "calls run in tests/pipelines (test_source.py, test_writer.py) and the README's Spark "
        "commands in tests/test_readme_commands.py",
    "# my_lake/definitions.py": "a file of the dg project of the section 'Your own table in 10 "
        "lines of YAML', which tests/assets/test_components_project.py builds and runs",
    "# my_lake/transforms.py": "the derived table's transform of that project (run there by "
        "the derived table's sensor-launched run)",
    '"spark.paimon.warehouse": "/data/warehouse"':
        "needs the test session's SparkSession (the session fixture); runs as written in "
        "tests/pipelines/test_spark_sql.py::test_readme_spark_sql_block_runs_as_written",
}


def _blocks() -> list[tuple[int, str]]:
    return readme_blocks(README.read_text())


def marker_of(code: str) -> str:
    """The one marker of :data:`EXAMPLES` / :data:`NOT_RUN` found in ``code``."""
    found = [m for m in [*EXAMPLES, *NOT_RUN] if m in code]
    assert len(found) == 1, f"README block {code[:80]!r}... matches markers {found}"
    return found[0]


def test_every_block_has_one_example() -> None:
    blocks = _blocks()
    for _, code in blocks:
        marker_of(code)
    for marker in [*EXAMPLES, *NOT_RUN]:
        assert sum(marker in code for _, code in blocks) == 1, (
            f"marker {marker!r} is not in exactly one README python block")


@pytest.mark.parametrize(("line", "code"), _blocks(), ids=lambda v: str(v)
                         if isinstance(v, int) else "")
def test_readme_block_runs(line: int, code: str, tmp_path: Path) -> None:
    marker = marker_of(code)
    if marker in NOT_RUN:
        pytest.skip(f"README.md line {line}: {NOT_RUN[marker]}")
    example = EXAMPLES[marker]
    wh = tmp_path / "warehouse"
    wh.mkdir()
    ns: dict[str, Any] = {"__name__": "readme", "decimal": decimal, **example.extra}
    ns.update(example.prepare(wh))
    source = code.replace(WAREHOUSE, str(wh))
    exec(compile(source, f"README.md:{line}", "exec"), ns)
    example.check(ns)


@pytest.mark.parametrize("module", [paimon_core, paimon_core.table], ids=lambda m: m.__name__)
def test_docstring_examples_run(module: Any) -> None:
    """The examples of the package's and the table's docstrings (each in a temp warehouse)."""
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted and not result.failed
