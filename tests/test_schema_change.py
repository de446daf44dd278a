"""ALTER TABLE (``paimon_core.schema_change``): every rule, field ids, atomic commit, reads."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import PaimonError, SchemaError, TableNotExistError
from paimon_core.schema_builder import Schema
from paimon_core.schema_change import (
    AddColumn,
    DropColumn,
    Move,
    MoveType,
    RemoveOption,
    RenameColumn,
    SetOption,
    UpdateColumnComment,
    UpdateColumnNullability,
    UpdateColumnPosition,
    UpdateColumnType,
    UpdateComment,
    apply_changes,
    check_type_change,
    commit_changes,
)
from paimon_core.spec.schema import TableSchema, encode_schema
from paimon_core.table import FileStoreTable
from paimon_core.types import DataField, RowType, parse_sql_type
from tests.tables import write_rows


def _schema(
    cols: list[tuple[str, str]] | None = None, *, pks: tuple[str, ...] = (),
    parts: tuple[str, ...] = (), options: dict[str, str] | None = None,
) -> TableSchema:
    cols = cols or [("pt", "STRING"), ("id", "INT"), ("a", "INT"), ("b", "STRING")]
    return Schema.of(cols, partition_keys=parts, primary_keys=pks,
                     options=options or {"bucket": "-1"}).to_table_schema(0)


PK = dict(pks=("pt", "id"), parts=("pt",), options={"bucket": "2"})


def _apply(schema: TableSchema, *changes: Any, has_snapshots: bool = False) -> TableSchema:
    return apply_changes(schema, list(changes), has_snapshots=has_snapshots)


def _write(table: FileStoreTable, rows: dict[str, list[Any]], types: dict[str, pa.DataType]) -> int:
    return write_rows(table, pa.table({k: pa.array(v, types.get(k)) for k, v in rows.items()}))[-1]


# ---------------------------------------------------------------------------------------------
# add column and field ids


def test_add_column_takes_highest_field_id_plus_one_and_java_nested_order() -> None:
    s0 = _schema()
    assert s0.highest_field_id == 3
    s1 = _apply(s0, AddColumn("c", "BIGINT", "a comment"),
                AddColumn("n", "ROW<x INT, y ARRAY<ROW<z INT, w STRING>>, v INT>"))
    assert s1.id == 1
    c = s1.field("c")
    assert (c.id, c.type.sql(), c.description) == (4, "BIGINT", "a comment")
    n = s1.field("n")
    assert n.id == 5
    assert isinstance(n.type, RowType)
    # Java's ReassignFieldId numbers a nested field's own nested fields before the field
    # itself (RowType.Builder.field(name, type.accept(this))): x=6, z=7, w=8, y=9, v=10
    x, y, v = n.type.fields
    assert (x.id, y.id, v.id) == (6, 9, 10)
    inner = y.type.element  # type: ignore[union-attr]
    assert isinstance(inner, RowType) and [f.id for f in inner.fields] == [7, 8]
    assert s1.highest_field_id == 10
    assert s1.to_json()["highestFieldId"] == 10


def test_field_ids_are_never_reused() -> None:
    s1 = _apply(_schema(), AddColumn("c", "INT"))
    assert s1.field("c").id == 4
    s2 = _apply(s1, DropColumn("c"))
    assert s2.highest_field_id == 4 and "c" not in s2.field_names
    s3 = _apply(s2, AddColumn("c", "INT"), AddColumn("d", "INT"))
    assert [s3.field("c").id, s3.field("d").id] == [5, 6]
    # dropping a nested column keeps its nested ids used too
    s4 = _apply(s3, AddColumn("r", "ROW<p INT, q INT>"))
    assert [f.id for f in s4.field("r").type.fields] == [8, 9]  # type: ignore[union-attr]
    s5 = _apply(s4, DropColumn("r"), AddColumn("e", "INT"))
    assert s5.field("e").id == 10 and s5.highest_field_id == 10


def test_add_column_positions() -> None:
    s = _apply(_schema(), AddColumn("f", "INT", first=True), AddColumn("g", "INT", after="id"))
    assert s.field_names == ["f", "pt", "id", "g", "a", "b"]
    with pytest.raises(SchemaError, match="does not exist"):
        _apply(_schema(), AddColumn("g", "INT", after="nope"))
    with pytest.raises(SchemaError, match="at most one"):
        AddColumn("g", "INT", first=True, after="id")


@pytest.mark.parametrize(("change", "message"), [
    (AddColumn("a", "INT"), "already exists"),
    (AddColumn("c", "INT NOT NULL"), "cannot be NOT NULL"),
    (AddColumn("_KEY_x", "INT"), "reserved"),
    (AddColumn("_SEQUENCE_NUMBER", "BIGINT"), "reserved"),
    (AddColumn("_VALUE_KIND", "TINYINT"), "reserved"),
    (AddColumn("", "INT"), "invalid column name"),
])
def test_add_column_errors(change: AddColumn, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        _apply(_schema(), change)


# ---------------------------------------------------------------------------------------------
# rename / drop


def test_rename_keeps_the_field_id() -> None:
    s = _apply(_schema(**PK), RenameColumn("a", "a2"))
    assert s.field("a2").id == 2 and "a" not in s.field_names


@pytest.mark.parametrize(("change", "message"), [
    (RenameColumn("pt", "p"), "partition key"),
    (RenameColumn("id", "i"), "primary key"),
    (RenameColumn("a", "b"), "already exists"),
    (RenameColumn("zz", "y"), "does not exist"),
    (DropColumn("pt"), "partition key"),
    (DropColumn("id"), "primary key"),
    (DropColumn("zz"), "does not exist"),
])
def test_rename_and_drop_errors(change: Any, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        _apply(_schema(**PK), change)


def test_cannot_drop_every_column() -> None:
    s = _schema([("a", "INT"), ("b", "INT")])
    with pytest.raises(SchemaError, match="all columns"):
        _apply(s, DropColumn("a"), DropColumn("b"))
    only_partition_left = _schema([("pt", "STRING"), ("a", "INT")], parts=("pt",))
    with pytest.raises(SchemaError, match="not a partition key"):
        _apply(only_partition_left, DropColumn("a"))


def test_drop_column_referenced_by_options_is_rejected() -> None:
    s = _schema([("id", "INT"), ("a", "INT"), ("seq", "BIGINT")], pks=("id",),
                options={"bucket": "1", "sequence.field": "seq"})
    with pytest.raises(SchemaError, match=r"sequence\.field"):
        _apply(s, DropColumn("seq"))
    s2 = _schema([("id", "INT"), ("k", "INT"), ("a", "INT")],
                 options={"bucket": "2", "bucket-key": "k"})
    with pytest.raises(SchemaError, match="bucket-key"):
        _apply(s2, RenameColumn("k", "k2"))


# ---------------------------------------------------------------------------------------------
# types


@pytest.mark.parametrize(("old", "new"), [
    ("TINYINT", "SMALLINT"), ("TINYINT", "INT"), ("TINYINT", "BIGINT"), ("SMALLINT", "INT"),
    ("SMALLINT", "BIGINT"), ("INT", "BIGINT"), ("TINYINT", "DOUBLE"), ("INT", "DOUBLE"),
    ("BIGINT", "DOUBLE"), ("FLOAT", "DOUBLE"), ("VARCHAR(5)", "VARCHAR(10)"),
    ("VARCHAR(5)", "STRING"), ("CHAR(3)", "VARCHAR(3)"), ("CHAR(3)", "STRING"),
    ("VARBINARY(4)", "BYTES"), ("BINARY(4)", "VARBINARY(8)"), ("DECIMAL(10, 2)", "DECIMAL(20, 2)"),
    ("DECIMAL(5, 0)", "DECIMAL(6, 0)"), ("INT NOT NULL", "BIGINT"), ("INT", "INT"),
])
def test_allowed_widenings(old: str, new: str) -> None:
    check_type_change("c", parse_sql_type(old), parse_sql_type(new))
    s = _apply(_schema([("id", "INT"), ("c", old)]), UpdateColumnType("c", new))
    assert s.field("c").type == parse_sql_type(new)
    assert s.field("c").id == 1


@pytest.mark.parametrize(("old", "new"), [
    ("BIGINT", "INT"), ("INT", "SMALLINT"), ("SMALLINT", "TINYINT"), ("DOUBLE", "FLOAT"),
    ("INT", "FLOAT"), ("DOUBLE", "BIGINT"), ("INT", "STRING"), ("STRING", "INT"),
    ("VARCHAR(10)", "VARCHAR(5)"), ("STRING", "CHAR(10)"), ("CHAR(3)", "CHAR(5)"),
    ("BINARY(2)", "BINARY(4)"), ("BYTES", "VARBINARY(4)"), ("DECIMAL(10, 2)", "DECIMAL(9, 2)"),
    ("DECIMAL(10, 2)", "DECIMAL(12, 3)"), ("INT", "DECIMAL(20, 0)"), ("DATE", "TIMESTAMP(3)"),
    ("TIMESTAMP(3)", "TIMESTAMP(6)"), ("BOOLEAN", "INT"), ("ARRAY<INT>", "ARRAY<BIGINT>"),
    ("ROW<a INT>", "ROW<a BIGINT>"), ("MAP<STRING, INT>", "MAP<STRING, BIGINT>"),
])
def test_rejected_type_changes(old: str, new: str) -> None:
    with pytest.raises(SchemaError, match="cannot be changed"):
        _apply(_schema([("id", "INT"), ("c", old)]), UpdateColumnType("c", new))


def test_type_change_of_key_columns_and_nullability() -> None:
    with pytest.raises(SchemaError, match="partition key"):
        _apply(_schema([("pt", "INT"), ("a", "INT")], parts=("pt",)),
               UpdateColumnType("pt", "BIGINT"))
    with pytest.raises(SchemaError, match="primary key"):
        _apply(_schema([("id", "INT"), ("a", "INT")], pks=("id",), options={"bucket": "1"}),
               UpdateColumnType("id", "BIGINT"))
    with pytest.raises(SchemaError, match="cannot become NOT NULL"):
        _apply(_schema([("id", "INT"), ("a", "INT")]), UpdateColumnType("a", "BIGINT NOT NULL"),
               has_snapshots=True)
    s = _schema([("id", "INT"), ("a", "INT NOT NULL")])
    assert _apply(s, UpdateColumnType("a", "BIGINT")).field("a").type.sql() == "BIGINT"
    kept = _apply(s, UpdateColumnType("a", "BIGINT", keep_nullability=True))
    assert kept.field("a").type.sql() == "BIGINT NOT NULL"


def test_update_nullability() -> None:
    s = _schema([("id", "INT"), ("a", "INT NOT NULL"), ("r", "ROW<x INT NOT NULL, y INT>")],
                pks=("id",), options={"bucket": "1"})
    s1 = _apply(s, UpdateColumnNullability("a", True), UpdateColumnNullability(("r", "x"), True))
    assert s1.field("a").type.nullable
    assert s1.field("r").type.fields[0].type.nullable  # type: ignore[union-attr]
    with pytest.raises(SchemaError, match="primary key"):
        _apply(s, UpdateColumnNullability("id", True))
    with pytest.raises(SchemaError, match="could no longer read"):
        _apply(s, UpdateColumnNullability(("r", "y"), False), has_snapshots=True)  # nested
    s = _schema([("id", "INT"), ("a", "INT"), ("b", "INT")], pks=("id",), options={"bucket": "1"})
    with pytest.raises(SchemaError, match="'b': a nullable column cannot become NOT NULL"):
        apply_changes(s, [UpdateColumnNullability("a", False), UpdateColumnNullability("b", False)],
                      has_snapshots=True, null_free=["a"])
    s2 = apply_changes(s, [UpdateColumnNullability("a", False)], has_snapshots=True,
                       null_free=["a"])
    assert not s2.field("a").type.nullable
    assert not _apply(s, UpdateColumnNullability("b", False)).field("b").type.nullable  # empty
    with pytest.raises(SchemaError, match="does not exist"):
        _apply(s, UpdateColumnNullability(("r", "zz"), True))
    with pytest.raises(SchemaError, match="no nested fields"):
        _apply(s, UpdateColumnNullability(("a", "x"), True))


def test_nested_changes_need_an_empty_table() -> None:
    s = _schema([("id", "INT"), ("r", "ROW<x INT NOT NULL, y ROW<z INT>> NOT NULL")])
    for change in (UpdateColumnNullability(("r", "x"), True),
                   UpdateColumnComment(("r", "y", "z"), "c")):
        with pytest.raises(SchemaError, match="could no longer read"):
            _apply(s, change, has_snapshots=True)
        _apply(s, change)  # no files yet: fine
    # top-level changes do not change the type Java compares
    s1 = _apply(s, UpdateColumnNullability("r", True), UpdateColumnComment("r", "c"),
                has_snapshots=True)
    assert s1.field("r").type.nullable and s1.field("r").description == "c"


def test_comments_and_positions() -> None:
    s = _schema([("id", "INT"), ("r", "ROW<x INT>"), ("a", "INT"), ("b", "INT")])
    s1 = _apply(s, UpdateComment("table"), UpdateColumnComment("a", "col a"),
                UpdateColumnComment(("r", "x"), "nested x"))
    assert s1.comment == "table" and s1.field("a").description == "col a"
    assert s1.field("r").type.fields[0].description == "nested x"  # type: ignore[union-attr]
    assert "comment" not in _apply(s1, UpdateComment(None)).to_json()
    moved = _apply(s, UpdateColumnPosition(Move("b", MoveType.FIRST)))
    assert moved.field_names == ["b", "id", "r", "a"]
    moved = _apply(s, UpdateColumnPosition(Move("id", MoveType.AFTER, "a")))
    assert moved.field_names == ["r", "a", "id", "b"]
    moved = _apply(s, UpdateColumnPosition(Move("b", MoveType.BEFORE, "r")))
    assert moved.field_names == ["id", "b", "r", "a"]
    moved = _apply(s, UpdateColumnPosition(Move("id", MoveType.LAST)))
    assert moved.field_names == ["r", "a", "b", "id"]
    assert [f.id for f in moved.fields] == [1, 3, 4, 0]
    with pytest.raises(SchemaError, match="itself"):
        _apply(s, UpdateColumnPosition(Move("id", MoveType.FIRST)))


# ---------------------------------------------------------------------------------------------
# options


@pytest.mark.parametrize(("key", "value", "message"), [
    ("bucket", "0", "bucket"), ("bucket", "abc", "integer"), ("bucket", str(2**31), "bucket"),
    ("snapshot.num-retained.min", "0", "snapshot.num-retained.min"),
    ("snapshot.num-retained.max", "x", "integer"), ("snapshot.time-retained", "soon", "duration"),
    ("merge-engine", "foo", "merge-engine"), ("dynamic-partition-overwrite", "yes", "boolean"),
    ("target-file-size", "big", "memory size"), ("file.format", "csv", "file format"),
    ("changelog-producer", "input", "primary-key"), ("sequence.field", "nope", "sequence.field"),
])
def test_option_values_are_validated(key: str, value: str, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        _apply(_schema(), SetOption(key, value))


def test_num_retained_min_not_above_max() -> None:
    with pytest.raises(SchemaError, match="must not be larger"):
        _apply(_schema(), SetOption("snapshot.num-retained.min", "20"),
               SetOption("snapshot.num-retained.max", "5"))


def test_options_on_a_table_with_snapshots() -> None:
    fixed = _schema(**PK)
    # Paimon 0.9 checkAlterTableOption: immutable options and bucket -1 <-> N
    for key in ("merge-engine", "sequence.field", "bucket-key", "rowkind.field"):
        with pytest.raises(SchemaError, match="cannot be changed once"):
            _apply(fixed, SetOption(key, "x"), has_snapshots=True)
        with pytest.raises(SchemaError, match="cannot be changed once"):
            _apply(fixed, RemoveOption(key), has_snapshots=True)
    with pytest.raises(SchemaError, match="cannot be reset"):
        _apply(fixed, RemoveOption("bucket"), has_snapshots=True)
    with pytest.raises(SchemaError, match="to -1"):
        _apply(fixed, SetOption("bucket", "-1"), has_snapshots=True)
    unaware = _schema(options={"bucket": "-1"})
    with pytest.raises(SchemaError, match="when it is -1"):
        _apply(unaware, SetOption("bucket", "4"), has_snapshots=True)
    # a fixed N -> M change is allowed (0.9: rescale with INSERT OVERWRITE afterwards)
    assert _apply(fixed, SetOption("bucket", "4"), has_snapshots=True).num_buckets == 4
    # without snapshots everything valid goes
    assert _apply(fixed, SetOption("merge-engine", "partial-update")).options[
        "merge-engine"] == "partial-update"
    assert _apply(unaware, SetOption("bucket", "4"), SetOption("bucket-key", "id")).num_buckets == 4
    s = _apply(fixed, SetOption("snapshot.num-retained.min", "3"), RemoveOption("bucket2"),
               has_snapshots=True)
    assert s.options == {"bucket": "2", "snapshot.num-retained.min": "3"}
    with pytest.raises(SchemaError, match="cannot be altered"):
        _apply(fixed, SetOption("primary-key", "id"))


def test_old_schema_versions_keep_their_defaults() -> None:
    v1 = TableSchema(id=3, fields=(DataField(0, "a", parse_sql_type("INT NOT NULL")),),
                     primary_keys=("a",), version=1, highest_field_id=0)
    s = _apply(v1, AddColumn("b", "INT"))
    assert s.version == 3 and s.id == 4
    assert s.options == {"bucket": "1", "file.format": "orc"}
    v2 = TableSchema(id=0, fields=v1.fields, primary_keys=("a",), version=2,
                     options={"bucket": "2"}, highest_field_id=0)
    assert _apply(v2, AddColumn("b", "INT")).options == {"bucket": "2", "file.format": "orc"}


# ---------------------------------------------------------------------------------------------
# committing


def test_commit_writes_the_next_schema_file(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.t", Schema.of([("id", "INT"), ("a", "INT")],
                                               primary_keys=["id"], options={"bucket": "1"}))
    s = t.alter([AddColumn("c", "ROW<x INT, y ROW<z STRING>>", "d"), RenameColumn("a", "a2"),
                 SetOption("snapshot.num-retained.min", "3"), UpdateComment("hello")])
    assert t.schema is s and s.id == 1
    on_disk = json.loads((Path(t.path) / "schema" / "schema-1").read_text())
    on_disk.pop("timeMillis")
    assert on_disk == {
        "version": 3, "id": 1,
        "fields": [
            {"id": 0, "name": "id", "type": "INT NOT NULL"},
            {"id": 1, "name": "a2", "type": "INT"},
            {"id": 2, "name": "c", "description": "d", "type": {"type": "ROW", "fields": [
                {"id": 3, "name": "x", "type": "INT"},
                {"id": 5, "name": "y", "type": {"type": "ROW", "fields": [
                    {"id": 4, "name": "z", "type": "STRING"}]}}]}},
        ],
        "highestFieldId": 5, "partitionKeys": [], "primaryKeys": ["id"],
        "options": {"bucket": "1", "snapshot.num-retained.min": "3"}, "comment": "hello",
    }
    assert catalog.get_table("db.t").schema.field_names == ["id", "a2", "c"]


def test_a_rejected_alter_writes_nothing(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.t", Schema.of([("id", "INT"), ("a", "INT")]))
    with pytest.raises(SchemaError):
        t.alter([AddColumn("c", "INT"), DropColumn("nope")])
    assert t.schema_manager.list_schema_ids() == [0]
    with pytest.raises(SchemaError, match="no schema changes"):
        t.alter([])


def test_catalog_alter_table(catalog: FileSystemCatalog) -> None:
    catalog.create_table("db.t", Schema.of([("id", "INT")]))
    s = catalog.alter_table("db.t", [AddColumn("b", "STRING")])
    assert s is not None and s.field_names == ["id", "b"]
    with pytest.raises(TableNotExistError):
        catalog.alter_table("db.nope", [AddColumn("b", "STRING")])
    assert catalog.alter_table("db.nope", [AddColumn("b", "STRING")],
                               ignore_if_not_exists=True) is None
    # NOT NULL through the catalog: checked against the table's rows, as by FileStoreTable
    t = catalog.get_table("db.t")
    _write(t, {"id": [1, 2], "b": ["x", None]}, {"id": pa.int32()})
    with pytest.raises(SchemaError, match="'b': a nullable column cannot become NOT NULL"):
        catalog.alter_table("db.t", [UpdateColumnNullability("b", False)])
    s = catalog.alter_table("db.t", [UpdateColumnNullability("id", False),
                                     UpdateColumnComment("id", "the key")])
    assert s is not None and s.field("id").type.sql() == "INT NOT NULL"
    assert s.field("id").description == "the key"


def test_race_for_the_schema_id_reapplies_on_the_winner(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.t", Schema.of([("id", "INT"), ("a", "INT")]))
    real = t.file_io.try_create
    calls = []

    def racing(path: str, data: bytes) -> bool:
        if not calls and path.endswith("schema-1"):
            # another writer publishes schema-1 (adds column x) just before us
            other = apply_changes(t.schema, [AddColumn("x", "INT")], has_snapshots=False)
            assert real(path, encode_schema(other))
        calls.append(path)
        return real(path, data)

    t.file_io.try_create = racing  # type: ignore[method-assign]
    s = commit_changes(t.file_io, t.path, [AddColumn("y", "INT")], sleep=lambda _: None)
    assert [c.rsplit("/", 1)[-1] for c in calls] == ["schema-1", "schema-2"]
    assert s.id == 2 and s.field_names == ["id", "a", "x", "y"]
    assert (s.field("x").id, s.field("y").id) == (2, 3)


def test_lost_race_budget_is_bounded(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.t", Schema.of([("id", "INT")]))
    t.file_io.try_create = lambda path, data: False  # type: ignore[method-assign,assignment]
    with pytest.raises(PaimonError, match="gave up after 3 attempts"):
        commit_changes(t.file_io, t.path, [AddColumn("y", "INT")], max_retries=2,
                       sleep=lambda _: None)


def test_concurrent_alters_all_land_with_unique_ids(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.t", Schema.of([("id", "INT")]))
    n = 8
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def alter(i: int) -> None:
        table = catalog.get_table("db.t")  # its own handle
        barrier.wait()
        try:
            table.alter([AddColumn(f"c{i}", "ROW<p INT, q INT>")])
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=alter, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    final = catalog.get_table("db.t").schema
    assert final.id == n
    assert sorted(final.field_names[1:]) == sorted(f"c{i}" for i in range(n))
    ids = [f.id for f in final.fields]
    ids += [g.id for f in final.fields[1:] for g in f.type.fields]  # type: ignore[union-attr]
    assert sorted(ids) == list(range(3 * n + 1)) and final.highest_field_id == 3 * n
    assert t.schema_manager.list_schema_ids() == list(range(n + 1))


# ---------------------------------------------------------------------------------------------
# reading after ALTER (the reader maps columns by field id)


def test_reads_after_alter_map_by_field_id(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.t", Schema.of(
        [("pt", "STRING"), ("id", "INT"), ("a", "INT"), ("b", "STRING"), ("c", "FLOAT"),
         ("d", "DECIMAL(5, 2)")], partition_keys=["pt"], primary_keys=["pt", "id"],
        options={"bucket": "2"}))
    i32 = {"id": pa.int32(), "a": pa.int32(), "c": pa.float32(), "d": pa.decimal128(5, 2)}
    import decimal
    _write(t, {"pt": ["x", "x", "y"], "id": [1, 2, 3], "a": [10, 20, 30],
               "b": ["b1", "b2", "b3"], "c": [0.5, 1.5, 2.5],
               "d": [decimal.Decimal("1.25")] * 3}, i32)
    t.alter([UpdateColumnType("a", "BIGINT"), RenameColumn("b", "b2"), DropColumn("c"),
             AddColumn("c", "DOUBLE"), UpdateColumnType("d", "DECIMAL(12, 2)"),
             AddColumn("e", "STRING", first=True)])
    _write(t, {"e": ["new"], "pt": ["x"], "id": [2], "a": [2**40], "b2": ["z"], "c": [9.0],
               "d": [decimal.Decimal("123456.78")]},
           {"id": pa.int32(), "d": pa.decimal128(12, 2)})
    got = sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == [
        {"e": None, "pt": "x", "id": 1, "a": 10, "b2": "b1", "c": None,
         "d": decimal.Decimal("1.25")},
        {"e": "new", "pt": "x", "id": 2, "a": 2**40, "b2": "z", "c": 9.0,
         "d": decimal.Decimal("123456.78")},
        {"e": None, "pt": "y", "id": 3, "a": 30, "b2": "b3", "c": None,
         "d": decimal.Decimal("1.25")},
    ]
    # the dropped FLOAT c (id 4) is not the new DOUBLE c (id 6)
    assert t.schema.field("c").id == 6
    # time travel reads snapshot 1 with schema 0
    old = t.to_arrow(snapshot_id=1)
    assert old.column_names == ["pt", "id", "a", "b", "c", "d"]
    assert sorted(old.column("c").to_pylist()) == [0.5, 1.5, 2.5]
    assert t.to_arrow(filter="b2 = 'b3'").column("id").to_pylist() == [3]


def test_publish_schema_written_before_it_and_abort_of_its_files(tmp_path: Path) -> None:
    """A write that evolves the schema (pipelines.spark_source.sink_schema): files are written with
    the
    schema computed by apply_changes before it is published; an abort deletes them although
    their schema id is newer than the table's; publish_schema publishes exactly that schema
    (a retry of the same one passes) and refuses when another schema took the id."""
    from paimon_core.errors import CommitConflictError
    from paimon_core.identifier import Identifier
    from paimon_core.schema_change import publish_schema

    cat = FileSystemCatalog(str(tmp_path / "wh"))
    t = cat.create_table("db.t", Schema.of([("id", "BIGINT NOT NULL"), ("v", "STRING")],
                                           primary_keys=["id"], options={"bucket": "1"}))
    evolved = apply_changes(t.schema, [AddColumn("extra", "INT")], has_snapshots=False)
    pending = FileStoreTable(cat.file_io, t.path, Identifier.parse("db.t"), evolved,
                             cat.manifest_cache)
    with pending.new_write("u") as w:
        w.write_arrow(pa.table({"id": [1], "v": ["a"], "extra": [3]}))
        msgs = w.prepare_commit()
    files = list(Path(t.path).rglob("data-*"))
    assert files and all(m.schema_id == 1 for m in msgs)
    pending.new_commit("u").abort(msgs)
    assert not any(f.exists() for f in files)
    assert t.schema_manager.latest().id == 0  # type: ignore[union-attr]
    publish_schema(cat.file_io, t.path, evolved)
    publish_schema(cat.file_io, t.path, evolved)  # the same schema again: a retry
    assert cat.get_table("db.t").schema.field_names == ["id", "v", "extra"]
    other = apply_changes(t.schema, [AddColumn("other", "INT")], has_snapshots=False)
    with pytest.raises(CommitConflictError, match=r"schema 1 of .* was created by another"):
        publish_schema(cat.file_io, t.path, other)
