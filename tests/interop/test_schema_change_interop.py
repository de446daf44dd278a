"""ALTER TABLE against Paimon Java 0.9.

* The same changes applied by Java (``Catalog.alterTable``, through ``SchemaTagOracle``) and by
  us to copies of one Java-written table give identical schema files (apart from timeMillis):
  field ids (also nested ones), positions, types, options, comments, highestFieldId.
* What Java rejects we reject; where we are stricter than 0.9 (narrowing casts, primary-key
  retype, NULL -> NOT NULL on a column holding a null: tests/cli) Java accepts and we refuse.
  Column moves (FIRST/AFTER/BEFORE/LAST), comments and NOT NULL on a null-free column give
  Java's schema file.
* After our ALTER, Java 0.9 and pypaimon 2.1 read the table exactly as we do, Java can write to
  it, and we read Java's new files; we also read a Java-altered table as Java does.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.main import main as paimon_main
from paimon_core.errors import SchemaError
from paimon_core.fsck import fsck
from paimon_core.schema_builder import Schema
from paimon_core.schema_change import (
    AddColumn,
    DropColumn,
    Move,
    MoveType,
    RemoveOption,
    RenameColumn,
    SchemaChange,
    SetOption,
    UpdateColumnComment,
    UpdateColumnNullability,
    UpdateColumnPosition,
    UpdateColumnType,
    UpdateComment,
)
from paimon_core.types import parse_sql_type
from tests.interop import schema_tag_java as J
from tests.interop.oracle import ensure_ready, run_batches

pytestmark = pytest.mark.oracle

TABLE = "db.t"
SCHEMA = {
    "fields": [
        {"name": "pt", "type": "STRING"},
        {"name": "id", "type": "INT"},
        {"name": "a", "type": "INT"},
        {"name": "f", "type": "FLOAT"},
        {"name": "s", "type": "VARCHAR(5)"},
        {"name": "d", "type": "DECIMAL(5, 2)"},
        {"name": "nn", "type": "INT NOT NULL"},
        {"name": "r", "type": "ROW<x INT NOT NULL, y ROW<z STRING>>"},
    ],
    "partition_keys": ["pt"],
    "primary_keys": ["pt", "id"],
    "options": {"bucket": "2"},
}


def _rows0() -> list[dict[str, Any]]:
    return [{"pt": f"p{i % 2}", "id": i, "a": i * 7, "f": i / 4, "s": f"s{i}",
             "d": f"{i}.25", "nn": i, "r": {"x": i, "y": {"z": f"z{i}"}}} for i in range(12)]


def _t(sql: str) -> Any:
    return parse_sql_type(sql)


NESTED = "ROW<p INT, q ROW<u INT, v STRING>, w ARRAY<ROW<k INT>>>"

# (ours, Java's) for each ALTER batch
BATCHES: list[tuple[list[SchemaChange], list[str]]] = [
    ([AddColumn("c", "BIGINT", "a comment"), AddColumn("n", NESTED),
      AddColumn("first", "STRING", first=True), AddColumn("after_id", "INT", after="id")],
     [J.add("c", _t("BIGINT"), "a comment"), J.add("n", _t(NESTED)),
      J.add("first", _t("STRING"), first=True), J.add("after_id", _t("INT"), after="id")]),
    ([RenameColumn("a", "a2"), UpdateColumnType("a2", "BIGINT"), UpdateColumnType("f", "DOUBLE"),
      UpdateColumnType("s", "VARCHAR(10)"), UpdateColumnType("d", "DECIMAL(10, 2)"),
      DropColumn("c")],
     [J.rename("a", "a2"), J.retype("a2", _t("BIGINT")), J.retype("f", _t("DOUBLE")),
      J.retype("s", _t("VARCHAR(10)")), J.retype("d", _t("DECIMAL(10, 2)")), J.drop("c")]),
    ([SetOption("snapshot.num-retained.min", "5"), SetOption("custom.key", "v"),
      UpdateComment("table comment"), UpdateColumnNullability("nn", True),
      UpdateColumnComment("r", "top-level comment")],
     [J.set_option("snapshot.num-retained.min", "5"), J.set_option("custom.key", "v"),
      J.comment("table comment"), J.nullability("nn", True),
      J.column_comment("r", "top-level comment")]),
    ([AddColumn("c", "INT"), RemoveOption("custom.key"), UpdateColumnType("a2", "DOUBLE")],
     [J.add("c", _t("INT")), J.remove_option("custom.key"), J.retype("a2", _t("DOUBLE"))]),
    # moves, a comment, and NOT NULL on a column that holds no null (we check, Java does not)
    ([UpdateColumnPosition(Move("d", MoveType.FIRST)),
      UpdateColumnPosition(Move("s", MoveType.AFTER, "r")),
      UpdateColumnPosition(Move("id", MoveType.LAST)),
      UpdateColumnPosition(Move("c", MoveType.BEFORE, "pt")),
      UpdateColumnComment("f", "float col"), UpdateColumnNullability("a2", False)],
     [J.move("d", "FIRST"), J.move("s", "AFTER", "r"), J.move("id", "LAST"),
      J.move("c", "BEFORE", "pt"), J.column_comment("f", "float col"),
      J.nullability("a2", False)]),
]

# rejected by both (each on the unchanged table)
BOTH_REJECT: list[tuple[SchemaChange, str]] = [
    (DropColumn("id"), J.drop("id")),
    (DropColumn("pt"), J.drop("pt")),
    (RenameColumn("pt", "p"), J.rename("pt", "p")),
    (RenameColumn("id", "i"), J.rename("id", "i")),
    (RenameColumn("nope", "x"), J.rename("nope", "x")),
    (DropColumn("nope"), J.drop("nope")),
    (AddColumn("a", "INT"), J.add("a", _t("INT"))),
    (AddColumn("x", "INT NOT NULL"), J.add("x", _t("INT NOT NULL"))),
    (UpdateColumnType("pt", "VARCHAR(10)"), J.retype("pt", _t("VARCHAR(10)"))),
    (SetOption("merge-engine", "partial-update"), J.set_option("merge-engine", "partial-update")),
    (SetOption("bucket", "-1"), J.set_option("bucket", "-1")),
    (RemoveOption("bucket"), J.remove_option("bucket")),
    (UpdateColumnNullability("id", True), J.nullability("id", True)),
    (AddColumn("_KEY_x", "INT"), J.add("_KEY_x", _t("INT"))),
    (SetOption("snapshot.num-retained.min", "0"), J.set_option("snapshot.num-retained.min", "0")),
]
# accepted by Java 0.9, refused by us (documented in paimon_core.schema_change)
ONLY_WE_REJECT: list[tuple[SchemaChange, str]] = [
    (UpdateColumnType("a", "SMALLINT"), J.retype("a", _t("SMALLINT"))),
    (UpdateColumnType("f", "INT"), J.retype("f", _t("INT"))),
    (UpdateColumnType("s", "INT"), J.retype("s", _t("INT"))),
    (UpdateColumnType("id", "BIGINT NOT NULL"), J.retype("id", _t("BIGINT NOT NULL"))),
    (UpdateColumnNullability(("r", "x"), True), J.nullability("r.x", True)),
    (UpdateColumnComment(("r", "y", "z"), "deep"), J.column_comment("r.y.z", "deep")),
]


def _schema_file(wh: Path, sid: int) -> dict[str, Any]:
    obj = json.loads((wh / "db.db" / "t" / "schema" / f"schema-{sid}").read_text())
    obj.pop("timeMillis")
    return dict(obj)


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> J.SchemaTagJava:
    return J.SchemaTagJava(tmp_path_factory.mktemp("java-schema"))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Java-written PK table (one commit)."""
    ensure_ready()
    work = tmp_path_factory.mktemp("alter-base")
    (work / "schema.json").write_text(json.dumps(SCHEMA))
    (work / "rows0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows0()))
    wh = work / "wh"
    run_batches({"alter-base": [
        {"cmd": "create", "warehouse": str(wh), "table": TABLE,
         "schema": str(work / "schema.json")},
        {"cmd": "write", "warehouse": str(wh), "table": TABLE, "input": str(work / "rows0.jsonl")},
    ]}, work)
    return wh


def _copy(base: Path, dst: Path) -> Path:
    shutil.copytree(base, dst)
    return dst


def test_same_changes_give_the_same_schema_files(
    java: J.SchemaTagJava, base: Path, tmp_path: Path
) -> None:
    wj = _copy(base, tmp_path / "java")
    wp = _copy(base, tmp_path / "ours")
    ours = FileSystemCatalog(str(wp)).get_table(TABLE)
    for k, (changes, java_changes) in enumerate(BATCHES, start=1):
        answer = java.alter(wj, TABLE, *java_changes)
        assert answer.ok, answer.text
        ours.alter(changes)
        assert _schema_file(wp, k) == _schema_file(wj, k), f"batch {k}"
    final = _schema_file(wp, len(BATCHES))
    # the checks above must be able to fail: the nested ids follow Java's order
    n = next(f for f in final["fields"] if f["name"] == "n")
    # (n = 12; p = 13, u = 14, v = 15 before q = 16, k = 17 before w = 18)
    assert [f["id"] for f in n["type"]["fields"]] == [13, 16, 18]
    assert final["highestFieldId"] == 21


def test_rejections_match_java(java: J.SchemaTagJava, base: Path, tmp_path: Path) -> None:
    wj = _copy(base, tmp_path / "java")
    ours = FileSystemCatalog(str(_copy(base, tmp_path / "ours"))).get_table(TABLE)
    answers = java.run([["ALTER", str(wj), TABLE, c] for _, c in BOTH_REJECT])
    for (change, _), answer in zip(BOTH_REJECT, answers):
        assert not answer.ok, f"Java accepted {change}"
        with pytest.raises(SchemaError):
            ours.alter([change])
    assert sorted(p.name for p in (wj / "db.db" / "t" / "schema").iterdir()) == ["schema-0"]
    assert ours.schema_manager.list_schema_ids() == [0]
    for k, (change, java_change) in enumerate(ONLY_WE_REJECT):
        wjk = _copy(base, tmp_path / f"java-{k}")
        answer = java.alter(wjk, TABLE, java_change)
        assert answer.ok, f"Java 0.9 now rejects {change}: {answer.text}"
        with pytest.raises(SchemaError):
            ours.alter([change])


@pytest.mark.parametrize("change", [J.nullability("r.x", True), J.column_comment("r.y.z", "x")])
def test_java_cannot_read_old_files_after_a_nested_change(
    java: J.SchemaTagJava, base: Path, tmp_path: Path, change: str
) -> None:
    """Why we refuse nested nullability/comment changes on tables with snapshots: Java 0.9
    accepts the ALTER, then cannot read its own older files."""
    wj = _copy(base, tmp_path / "java")
    assert java.alter(wj, TABLE, change).ok
    results = run_batches({"nested": [{"cmd": "read", "warehouse": str(wj), "table": TABLE,
                                       "engine": "java"}]}, tmp_path)
    failures = results["nested"].failures()
    assert failures and "Only support column type evolution" in str(failures[0].get("error"))


def _ours(wh: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    capsys.readouterr()
    assert paimon_main(["read", "--warehouse", str(wh), "--table", TABLE]) == 0
    return capsys.readouterr().out.splitlines()


def _engine_reads(
    wh: Path, work: Path, tag: str, extra: list[dict[str, Any]]
) -> dict[str, list[str]]:
    cmds = [
        *extra,
        {"cmd": "read", "warehouse": str(wh), "table": TABLE, "engine": "java",
         "output": str(work / f"{tag}-java.jsonl")},
        {"cmd": "read", "warehouse": str(wh), "table": TABLE, "engine": "pypaimon",
         "pypaimon_compat": True, "output": str(work / f"{tag}-pypaimon.jsonl")},
    ]
    results = run_batches({tag: cmds}, work)
    assert not results[tag].failures(), results[tag].failures()
    return {e: (work / f"{tag}-{e}.jsonl").read_text().splitlines() for e in ("java", "pypaimon")}


def test_engines_read_and_write_after_our_alter(
    java: J.SchemaTagJava, base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wp = _copy(base, tmp_path / "ours")
    ours = FileSystemCatalog(str(wp)).get_table(TABLE)
    for changes, _ in BATCHES:
        ours.alter(changes)
    mine = _ours(wp, capsys)
    assert len(mine) == 12
    first = json.loads(mine[0])
    assert list(first) == ["d", "first", "c", "pt", "after_id", "a2", "f", "nn", "r", "s", "n",
                           "id"]
    assert ours.schema.field("f").description == "float col"
    assert not ours.schema.field("a2").type.nullable
    assert ours.schema.field("r").description == "top-level comment"
    assert first["a2"] == 0.0 and first["first"] is None and first["d"] == "0.25"
    reads = _engine_reads(wp, tmp_path, "after-alter", [])
    assert reads["java"] == mine
    assert reads["pypaimon"] == mine
    # Java writes under the new schema (updates of old keys and new keys)
    rows = [{"first": f"F{i}", "pt": f"p{i % 2}", "id": i, "after_id": -i, "a2": i * 1.5,
             "f": 0.5, "s": "longer-str", "d": "12345678.91", "nn": None,
             "r": {"x": i, "y": {"z": "new"}}, "n": {"p": 1, "q": {"u": 2, "v": "v"},
                                                          "w": [{"k": 3}]}, "c": i}
            for i in range(8, 16)]
    (tmp_path / "rows1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    write = {"cmd": "write", "warehouse": str(wp), "table": TABLE, "engine": "java",
             "input": str(tmp_path / "rows1.jsonl")}
    reads = _engine_reads(wp, tmp_path, "after-java-write", [write])
    mine = _ours(wp, capsys)
    assert len(mine) == 16 and reads["java"] == mine
    assert reads["pypaimon"] == mine
    assert fsck(FileSystemCatalog(str(wp)).get_table(TABLE), deep=True).ok


def test_we_read_a_java_altered_table(
    java: J.SchemaTagJava, base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wj = _copy(base, tmp_path / "java")
    for _, java_changes in BATCHES:
        assert java.alter(wj, TABLE, *java_changes).ok
    reads = _engine_reads(wj, tmp_path, "java-altered", [])
    assert _ours(wj, capsys) == reads["java"] and len(reads["java"]) == 12
    assert fsck(FileSystemCatalog(str(wj)).get_table(TABLE), deep=True).ok


def test_create_assigns_nested_ids_like_java(base: Path, tmp_path: Path) -> None:
    ours = FileSystemCatalog(str(tmp_path / "wh")).create_table(TABLE, Schema.from_json(SCHEMA))
    java_schema = json.loads((base / "db.db" / "t" / "schema" / "schema-0").read_text())
    assert [f.to_json() for f in ours.schema.fields] == java_schema["fields"]
