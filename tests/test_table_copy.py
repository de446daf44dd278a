"""``FileStoreTable.copy(dynamic_options)``: one job's options over the table's (Java's
``FileStoreTable.copy(Map)``), checked, applied by the writer, the commit and expiry, carried
through pickling, and never stored."""

from __future__ import annotations

import pickle
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core import FileStoreTable, ImmutableOptionError, SchemaError
from paimon_core.catalog import FileSystemCatalog
from paimon_core.schema_change import SetOption
from tests.tables import append_table, make_catalog, pk_table, write_rows

#: 4,000 rows of about 1 KiB of text each: one file at the default target size
ROWS = pa.table({"pt": ["a"] * 4000, "id": pa.array(range(4000), pa.int32()),
                 "v": [f"{i:04d}" + "x" * 1000 for i in range(4000)]})


def _files_written(table: FileStoreTable) -> int:
    with table.new_write("u") as w:
        w.write_arrow(ROWS)
        messages = w.prepare_commit()
    table.new_commit("u").commit(messages)
    return sum(len(m.new_files) for m in messages)


def _stored(catalog: FileSystemCatalog, name: str) -> dict[str, str]:
    return dict(catalog.get_table(name).schema.options)


def test_target_file_size_acts_on_the_copy_only(catalog: FileSystemCatalog) -> None:
    table = append_table(catalog)
    before = _stored(catalog, "db.ap")
    small = table.copy({"target-file-size": "512 kb"})
    assert small.options.target_file_size(False) == 512 * 1024
    # ~4 MB of text rolled at 512 KB: several files; the table itself writes one
    assert _files_written(small) >= 4
    assert _files_written(table) == 1
    assert _stored(catalog, "db.ap") == before
    assert table.schema_manager.list_schema_ids() == [0]
    assert "target-file-size" not in table.schema.options


def test_the_copy_pickles_with_its_options(catalog: FileSystemCatalog) -> None:
    small = append_table(catalog).copy({"target-file-size": "512 kb"})
    shipped = pickle.loads(pickle.dumps(small))  # what a Spark task gets
    assert shipped.dynamic_options == {"target-file-size": "512 kb"}
    assert shipped.schema == small.schema
    assert _files_written(shipped) >= 4
    # the stored schema, read by the unpickled copy, has no overlay
    assert "target-file-size" not in shipped.schema_manager.latest().options  # type: ignore[union-attr]


def test_the_commit_uses_the_copy_options(catalog: FileSystemCatalog) -> None:
    table = append_table(catalog)
    write_rows(table, pa.table({"pt": ["a", "b"], "id": pa.array([1, 2], pa.int32()),
                                "v": ["x", "y"]}))
    rows = pa.table({"pt": ["a"], "id": pa.array([3], pa.int32()), "v": ["z"]})
    static = table.copy({"dynamic-partition-overwrite": "false"})
    with static.new_write("u", overwrite=True) as w:
        w.write_arrow(rows)
        messages = w.prepare_commit()
    static.new_commit("u").overwrite(messages)
    # a static overwrite of the whole table: partition b is gone (the stored default,
    # dynamic overwrite, would have kept it)
    assert table.to_arrow().to_pylist() == [{"pt": "a", "id": 3, "v": "z"}]
    assert "dynamic-partition-overwrite" not in _stored(catalog, "db.ap")


def test_expiry_uses_the_copy_options(catalog: FileSystemCatalog) -> None:
    table = append_table(catalog)
    for i in range(4):
        write_rows(table, pa.table({"pt": ["a"], "id": pa.array([i], pa.int32()),
                                    "v": ["x"]}))
    table.copy({"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"}
               ).expire_snapshots()
    assert table.snapshot_manager.earliest_snapshot_id() == 3
    assert "snapshot.num-retained.max" not in _stored(catalog, "db.ap")


@pytest.mark.parametrize(("key", "value", "table_value"), [
    ("bucket", "4", "2"),
    ("primary-key", "id", "pt,id"),
    ("partition", "id", "pt"),
    ("merge-engine", "partial-update", None),
    ("sequence.field", "v", None),
])
def test_an_immutable_option_that_differs_is_refused(
        catalog: FileSystemCatalog, key: str, value: str, table_value: str | None) -> None:
    table = pk_table(catalog)
    with pytest.raises(ImmutableOptionError) as e:
        table.copy({key: value})
    assert (e.value.key, e.value.table_value, e.value.given) == (key, table_value, value)
    assert repr(key) in str(e.value) and repr(value) in str(e.value)


def test_an_immutable_option_equal_to_the_table_is_no_change(
        catalog: FileSystemCatalog) -> None:
    table = pk_table(catalog)
    same = table.copy({"bucket": "2", "primary-key": "pt, id", "partition": "pt",
                       "write-only": "true"})
    assert same.dynamic_options == {}
    assert same.schema == table.schema


def test_a_bad_value_is_refused_naming_key_and_value(catalog: FileSystemCatalog) -> None:
    table = append_table(catalog)
    with pytest.raises(SchemaError, match=r"target-file-size.*12 apples"):
        table.copy({"target-file-size": "12 apples"})
    with pytest.raises(SchemaError, match=r"write-only.*maybe"):
        table.copy({"write-only": "maybe"})
    with pytest.raises(SchemaError, match="must be strings"):
        table.copy({"write-only": True})  # type: ignore[dict-item]


def test_an_empty_overlay_returns_an_equal_table(catalog: FileSystemCatalog) -> None:
    table = pk_table(catalog)
    same = table.copy({})
    assert same is not table
    assert (same.path, same.identifier, same.schema, same.dynamic_options) == (
        table.path, table.identifier, table.schema, {})


def test_a_copy_of_a_copy_keeps_both_overlays(catalog: FileSystemCatalog) -> None:
    table = append_table(catalog)
    both = table.copy({"target-file-size": "1 mb"}).copy({"write-buffer-size": "8 mb"})
    assert both.dynamic_options == {"target-file-size": "1 mb", "write-buffer-size": "8 mb"}
    assert both.options.write_buffer_size == 8 << 20


def test_alter_on_a_copy_stores_the_change_not_the_overlay(warehouse: Path) -> None:
    catalog = make_catalog(warehouse)
    small = append_table(catalog).copy({"target-file-size": "512 kb"})
    small.alter([SetOption("snapshot.num-retained.min", "3")])
    stored = _stored(catalog, "db.ap")
    assert stored["snapshot.num-retained.min"] == "3"
    assert "target-file-size" not in stored
    assert small.schema.options["target-file-size"] == "512 kb"
    assert small.schema.id == 1


def test_a_copy_time_travels_by_its_scan_options(catalog: FileSystemCatalog) -> None:
    table = append_table(catalog)
    for i in range(3):
        write_rows(table, pa.table({"pt": ["a"], "id": pa.array([i], pa.int32()),
                                    "v": ["x"]}))
    table.create_tag("first", 1)
    ids = [sorted(r["id"] for r in table.copy(o).to_arrow().to_pylist()) for o in (
        {"scan.snapshot-id": "2"}, {"scan.tag-name": "first"},
        {"scan.timestamp-millis": str(table.snapshot_manager.snapshot(2).time_millis)}, {})]
    assert ids == [[0, 1], [0], [0, 1], [0, 1, 2]]
    # an explicit argument wins over the copy's option
    assert table.copy({"scan.snapshot-id": "2"}).to_arrow(snapshot_id=1).num_rows == 1
    with pytest.raises(SchemaError, match="at most one time-travel option"):
        table.copy({"scan.snapshot-id": "2", "scan.tag-name": "first"}).to_arrow()
    with pytest.raises(SchemaError, match=r"scan.snapshot-id='two'"):
        table.copy({"scan.snapshot-id": "two"}).to_arrow()
