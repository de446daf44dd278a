"""Issue 29 (scope 2): CREATE checks every option value a user hands us, as ALTER does -- a
bad value is refused at create, naming the key and the value, and no table is left behind
(before: the table was created and its first write failed). Unknown keys pass, at CREATE as at
ALTER (Java passes them through). The Spark paths are in
``tests/pipelines/test_spark_sql_statements.py`` / ``test_spark_write_options.py``, the
components' in ``tests/assets/test_components.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import SchemaError
from paimon_core.schema_builder import Schema
from paimon_core.schema_change import SetOption

COLUMNS = [("id", "BIGINT NOT NULL"), ("v", "STRING")]
REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("options", "message"), [
    ({"target-file-size": "12 apples"}, "option target-file-size='12 apples' is not a memory size"),
    ({"write-only": "maybe"}, "option write-only='maybe' is not a boolean"),
    ({"snapshot.num-retained.max": "ten"}, "option snapshot.num-retained.max='ten' is not an "
                                           "integer"),
    ({"snapshot.time-retained": "1 fortnight"}, "snapshot.time-retained='1 fortnight'"),
    ({"changelog-producer": "sometimes"}, "option changelog-producer='sometimes' must be one of"),
])
def test_catalog_create_refuses_a_bad_value_by_key_and_value(
        tmp_path: Path, options: dict[str, str], message: str) -> None:
    catalog = FileSystemCatalog(str(tmp_path / "wh"))
    with pytest.raises(SchemaError) as e:
        catalog.create_table("db.t", Schema.of(COLUMNS, primary_keys=["id"], options=options))
    assert message in str(e.value)
    assert not catalog.table_exists("db.t")


def test_both_values_of_the_issue_are_refused_and_good_ones_kept(tmp_path: Path) -> None:
    catalog = FileSystemCatalog(str(tmp_path / "wh"))
    with pytest.raises(SchemaError, match=r"write-only='maybe'|target-file-size='12 apples'"):
        catalog.create_table("db.t", Schema.of(COLUMNS, options={
            "target-file-size": "12 apples", "write-only": "maybe"}))
    assert not catalog.table_exists("db.t")
    good = {"target-file-size": "64 mb", "write-only": "true", "team.owner": "ops"}
    t = catalog.create_table("db.t", Schema.of(COLUMNS, options=good))
    assert t.schema.options == good


def test_unknown_keys_pass_at_create_as_at_alter(tmp_path: Path) -> None:
    catalog = FileSystemCatalog(str(tmp_path / "wh"))
    catalog.create_table("db.t", Schema.of(COLUMNS, options={"x.custom": "anything"}))
    catalog.alter_table("db.t", [SetOption("y.custom", "anything else")])
    assert catalog.get_table("db.t").schema.options == {
        "x.custom": "anything", "y.custom": "anything else"}


def test_cli_create_refuses_a_bad_value(tmp_path: Path) -> None:
    """``python -m paimon_core.cli.main create``: exit 1, one line naming the key and the value."""
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"fields": [{"name": "id", "type": "BIGINT"}],
                                  "options": {"write-only": "maybe"}}))
    wh = tmp_path / "wh"
    proc = subprocess.run(
        [sys.executable, "-m", "paimon_core.cli.main", "create", "--warehouse", str(wh),
         "--table", "db.t", "--schema", str(schema)],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "option write-only='maybe' is not a boolean" in proc.stderr
    assert proc.stdout == ""
    assert not FileSystemCatalog(str(wh)).table_exists("db.t")


@pytest.mark.oracle
def test_a_table_java_wrote_with_options_we_do_not_know_opens(tmp_path: Path) -> None:
    """The check is for what a user hands us at CREATE: a table Paimon Java created with an
    option of its own (``lookup.cache-max-memory-size``) and a custom key opens, reads, and
    takes an ALTER as before; a create-if-missing of it opens it as it is."""
    from tests.interop.oracle import ensure_ready, run_batches

    ensure_ready()
    wh = tmp_path / "wh"
    options = {"bucket": "1", "lookup.cache-max-memory-size": "64 mb", "x.owner": "ops"}
    (tmp_path / "schema.json").write_text(json.dumps({
        "fields": [{"name": "id", "type": "BIGINT"}, {"name": "v", "type": "STRING"}],
        "primary_keys": ["id"], "partition_keys": [], "options": options}))
    (tmp_path / "rows.jsonl").write_text('{"id": 1, "v": "a"}\n{"id": 2, "v": "b"}\n')
    run_batches({"java": [
        {"cmd": "create", "warehouse": str(wh), "table": "db.j",
         "schema": str(tmp_path / "schema.json")},
        {"cmd": "write", "warehouse": str(wh), "table": "db.j",
         "input": str(tmp_path / "rows.jsonl")},
    ]}, tmp_path)
    catalog = FileSystemCatalog(str(wh))
    again = catalog.create_table("db.j", Schema.of(COLUMNS, primary_keys=["id"]),
                                 ignore_if_exists=True)
    assert again.schema.options == options
    assert sorted(again.to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    catalog.alter_table("db.j", [SetOption("snapshot.num-retained.max", "50")])
    assert catalog.get_table("db.j").schema.options == {
        **options, "snapshot.num-retained.max": "50"}
