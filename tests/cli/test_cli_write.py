"""``paimon create / write / alter / tag / fsck`` (no oracle needed; see
``tests/interop/test_cli_write_interop.py`` for the comparison with Paimon Java)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.main import main

SCHEMA = {
    "fields": [
        {"name": "pt", "type": "STRING"},
        {"name": "id", "type": "INT"},
        {"name": "amt", "type": "DECIMAL(10, 2)"},
        {"name": "f", "type": "FLOAT"},
        {"name": "bin", "type": "BYTES"},
        {"name": "d", "type": "DATE"},
        {"name": "tm", "type": "TIME(3)"},
        {"name": "ts", "type": "TIMESTAMP(3)"},
        {"name": "ltz", "type": "TIMESTAMP(6) WITH LOCAL TIME ZONE"},
        {"name": "tags", "type": "ARRAY<STRING>"},
        {"name": "m", "type": "MAP<INT, STRING>"},
        {"name": "r", "type": "ROW<a INT, b STRING>"},
    ],
    "partition_keys": ["pt"],
    "primary_keys": ["pt", "id"],
    "options": {"bucket": "2"},
}

ROWS = [
    {"pt": "a", "id": 1, "amt": "1.005", "f": 1.1, "bin": "AAEC", "d": "2024-02-29",
     "tm": "10:11:12.345", "ts": "2024-01-01 10:00:00.123456", "ltz": "2024-01-01T10:00:00+02:00",
     "tags": ["x", "y"], "m": {"1": "one"}, "r": {"a": 1, "b": "q"}},
    {"pt": "a", "id": 2, "amt": 2.5, "f": "NaN", "bin": None, "d": None, "tm": None,
     "ts": "1969-12-31T23:59:59.999", "ltz": "2024-01-01 10:00:00", "tags": [],
     "m": [[2, "two"]], "r": [2, "w"]},
    {"pt": "b", "id": 3},
]

EXPECTED = [
    '{"pt":"a","id":1,"amt":"1.01","f":1.1,"bin":"AAEC","d":"2024-02-29","tm":"10:11:12.345",'
    '"ts":"2024-01-01 10:00:00.123","ltz":"2024-01-01 08:00:00.000000Z","tags":["x","y"],'
    '"m":[[1,"one"]],"r":{"a":1,"b":"q"}}',
    '{"pt":"a","id":2,"amt":"2.50","f":"NaN","bin":null,"d":null,"tm":null,'
    '"ts":"1969-12-31 23:59:59.999","ltz":"2024-01-01 10:00:00.000000Z","tags":[],'
    '"m":[[2,"two"]],"r":{"a":2,"b":"w"}}',
    '{"pt":"b","id":3,"amt":null,"f":null,"bin":null,"d":null,"tm":null,"ts":null,"ltz":null,'
    '"tags":null,"m":null,"r":null}',
]


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


class Cli:
    def __init__(self, tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.tmp = tmp
        self.wh = str(tmp / "wh")
        self.capsys = capsys

    def __call__(self, *args: str, table: str = "db.t") -> tuple[int, list[str], str]:
        argv = list(args)
        at = 2 if argv[0] == "tag" else 1
        argv[at:at] = ["--warehouse", self.wh, "--table", table]
        rc = main(argv)
        out = self.capsys.readouterr()
        return rc, out.out.splitlines(), out.err

    def ok(self, *args: str) -> list[str]:
        rc, out, err = self(*args)
        assert rc == 0, err
        return out


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    c = Cli(tmp_path, capsys)
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    return c


def test_create_and_write_every_encoding(cli: Cli) -> None:
    out = cli.ok("create", "--schema", str(cli.tmp / "schema.json"))
    assert json.loads(out[0]) == {"op": "create", "table": "db.t", "created": True,
                                  "schema_id": 0}
    rc, _, err = cli("create", "--schema", str(cli.tmp / "schema.json"))
    assert rc == 1 and "already exists" in err
    out = cli.ok("create", "--schema", str(cli.tmp / "schema.json"), "--ignore-if-exists")
    assert json.loads(out[0])["created"] is False
    res = json.loads(cli.ok("write", "--input", str(_jsonl(cli.tmp / "r.jsonl", ROWS)))[0])
    assert (res["op"], res["rows"], res["snapshot"]) == ("write", 3, 1)
    assert cli.ok("read") == EXPECTED


def test_json_array_csv_and_parquet_inputs(cli: Cli) -> None:
    spec = {"fields": [{"name": "id", "type": "INT"}, {"name": "x", "type": "DECIMAL(38, 10)"},
                       {"name": "tags", "type": "ARRAY<INT>"}, {"name": "ok", "type": "BOOLEAN"}],
            "options": {"bucket": "-1"}}
    (cli.tmp / "s.json").write_text(json.dumps(spec))
    cli.ok("create", "--schema", str(cli.tmp / "s.json"))
    (cli.tmp / "a.json").write_text(
        '[{"id": 1, "x": 1234567890123456789012345678.0123456789, "tags": [1], "ok": true}]')
    cli.ok("write", "--input", str(cli.tmp / "a.json"))
    (cli.tmp / "b.csv").write_text('id,x,tags,ok\n2,-0.5,"[2, 3]",false\n3,,,\n')
    cli.ok("write", "--input", str(cli.tmp / "b.csv"))
    pq.write_table(pa.table({"id": pa.array([4], pa.int32()), "x": pa.array(
        [None], pa.decimal128(38, 10)), "tags": pa.array([[4]], pa.list_(pa.int32())),
        "ok": [True]}), cli.tmp / "c.parquet")
    cli.ok("write", "--input", str(cli.tmp / "c.parquet"))
    assert cli.ok("read") == [
        '{"id":1,"x":"1234567890123456789012345678.0123456789","tags":[1],"ok":true}',
        '{"id":2,"x":"-0.5000000000","tags":[2,3],"ok":false}',
        '{"id":3,"x":null,"tags":null,"ok":null}',
        '{"id":4,"x":null,"tags":[4],"ok":true}',
    ]


def test_kinds_overwrite_and_exactly_once(cli: Cli) -> None:
    cli.ok("create", "--schema", str(cli.tmp / "schema.json"))
    cli.ok("write", "--input", str(_jsonl(cli.tmp / "r.jsonl", ROWS)))
    changes = [{"_k": "-D", "pt": "a", "id": 1}, {"_k": "+U", "pt": "b", "id": 3, "amt": "9"},
               {"_k": None, "pt": "b", "id": 4}, {"pt": "c", "id": 5}]
    res = json.loads(cli.ok("write", "--input", str(_jsonl(cli.tmp / "k.jsonl", changes)),
                            "--kind", "_k")[0])
    assert res["snapshot"] == 2
    assert [json.loads(x)["id"] for x in cli.ok("read")] == [2, 3, 4, 5]
    # dynamic overwrite replaces only partition b
    cli.ok("write", "--input", str(_jsonl(cli.tmp / "o.jsonl", [{"pt": "b", "id": 9}])),
           "--overwrite")
    assert [(json.loads(x)["pt"], json.loads(x)["id"]) for x in cli.ok("read")] == [
        ("a", 2), ("b", 9), ("c", 5)]
    # overwrite of partition c with nothing for it: dynamic (Paimon's default) keeps it,
    # static replaces it by nothing
    cli.ok("write", "--input", str(_jsonl(cli.tmp / "e.jsonl", [])), "--overwrite", "pt=c")
    assert [json.loads(x)["pt"] for x in cli.ok("read")] == ["a", "b", "c"]
    cli.ok("write", "--input", str(cli.tmp / "e.jsonl"), "--overwrite", "pt=c",
           "--dynamic-partition-overwrite", "false")
    assert [json.loads(x)["pt"] for x in cli.ok("read")] == ["a", "b"]
    rc, _, err = cli("write", "--input", str(cli.tmp / "o.jsonl"), "--overwrite", "pt=a")
    assert rc == 1 and "partition" in err
    # same commit user + identifier twice: applied once
    args = ("write", "--input", str(_jsonl(cli.tmp / "x.jsonl", [{"pt": "x", "id": 1}])),
            "--commit-user", "pipe", "--commit-identifier", "5")
    first = json.loads(cli.ok(*args)[0])
    again = json.loads(cli.ok(*args)[0])
    assert first["snapshot"] == again["snapshot"] == 5
    snaps = FileSystemCatalog(cli.wh).get_table("db.t").snapshot_manager.list_snapshot_ids()
    assert snaps == [1, 2, 3, 4, 5]


def test_write_errors(cli: Cli) -> None:
    cli.ok("create", "--schema", str(cli.tmp / "schema.json"))
    for rows, message in (
        ([{"pt": "a", "id": 1, "nope": 1}], "unknown column"),
        ([{"pt": "a", "id": 1, "amt": "123456789.1"}], "does not fit"),
        ([{"pt": "a", "id": "x"}], "cannot convert"),
        ([{"pt": "a", "id": None}], "null"),
        ([{"pt": "a", "id": 1, "_k": "?"}], "row kind"),
    ):
        rc, _, err = cli("write", "--input", str(_jsonl(cli.tmp / "bad.jsonl", rows)),
                         "--kind", "_k")
        assert rc == 1 and message in err, (rows, err)
    (cli.tmp / "broken.jsonl").write_text("{nope\n")
    rc, _, err = cli("write", "--input", str(cli.tmp / "broken.jsonl"))
    assert rc == 1 and "broken.jsonl:1" in err
    assert FileSystemCatalog(cli.wh).get_table("db.t").latest_snapshot() is None
    rc, _, err = cli("write", "--input", str(cli.tmp / "broken.jsonl"), "--overwrite", "pt")
    assert rc == 2 and "partition spec" in err
    rc, _, _ = cli("write")
    assert rc == 2


def test_alter(cli: Cli) -> None:
    cli.ok("create", "--schema", str(cli.tmp / "schema.json"))
    out = cli.ok("alter", "--add-column", "n BIGINT AFTER id", "--rename-column", "amt=amount",
                 "--set-option", "snapshot.num-retained.min=3", "--alter-column-type", "f DOUBLE",
                 "--add-column", "nested ROW<x INT, y INT>", "--drop-column", "bin",
                 "--add-column", "first_col STRING FIRST", "--remove-option", "nothing")
    assert json.loads(out[0]) == {"op": "alter", "table": "db.t", "schema_id": 1, "changes": 8}
    s = FileSystemCatalog(cli.wh).get_table("db.t").schema
    assert s.field_names == ["first_col", "pt", "id", "n", "amount", "f", "d", "tm", "ts", "ltz",
                             "tags", "m", "r", "nested"]
    assert s.field("f").type.sql() == "DOUBLE" and s.options["snapshot.num-retained.min"] == "3"
    # changes apply in argv order: add then rename the new column
    cli.ok("alter", "--add-column", "z INT", "--rename-column", "z=zz")
    assert "zz" in FileSystemCatalog(cli.wh).get_table("db.t").schema.field_names
    for args, code, message in (
        (("--drop-column", "id"), 1, "primary key"),
        (("--alter-column-type", "tags STRING"), 1, "cannot be changed"),
        (("--set-option", "bucket=0"), 1, "bucket"),
        (("--add-column", "justaname"), 2, "NAME TYPE"),
        (("--add-column", "q NOTATYPE"), 1, "unknown type"),
        (("--rename-column", "x"), 2, "OLD=NEW"),
        ((), 2, "at least one change"),
    ):
        rc, _, err = cli("alter", *args)
        assert rc == code and message in err, (args, err)
    assert FileSystemCatalog(cli.wh).get_table("db.t").schema.id == 2


def test_alter_comment_nullability_and_moves(cli: Cli) -> None:
    cli.ok("create", "--schema", str(cli.tmp / "schema.json"))
    cli.ok("write", "--input", str(_jsonl(cli.tmp / "r.jsonl", ROWS)))
    # f holds no null in rows 1-2 but row 3 has one; d: null in rows 2 and 3
    rc, _, err = cli("alter", "--not-null", "f")
    assert rc == 1 and "'f': a nullable column cannot become NOT NULL" in err
    cli.ok("write", "--input", str(_jsonl(cli.tmp / "fix.jsonl", [
        {"pt": "b", "id": 3, "f": 0.5}])))  # the key's new version has an f
    out = cli.ok("alter", "--not-null", "f", "--column-comment", "f=a float",
                 "--move-column", "f FIRST",
                 "--move-column", "amt AFTER ts", "--move-column", "id LAST",
                 "--move-column", "tm BEFORE d", "--nullable", "r")
    assert json.loads(out[0])["schema_id"] == 1
    s = FileSystemCatalog(cli.wh).get_table("db.t").schema
    assert s.field_names == ["f", "pt", "bin", "tm", "d", "ts", "amt", "ltz", "tags", "m", "r",
                             "id"]
    assert s.field("f").type.sql() == "FLOAT NOT NULL" and s.field("f").description == "a float"
    assert s.field("r").type.nullable
    rows = [json.loads(x) for x in cli.ok("read")]
    assert [list(r)[:3] for r in rows[:1]] == [["f", "pt", "bin"]]
    assert {r["id"]: r["f"] for r in rows} == {1: 1.1, 2: "NaN", 3: 0.5}
    cli.ok("alter", "--column-comment", "f=")  # an empty comment removes it
    assert FileSystemCatalog(cli.wh).get_table("db.t").schema.field("f").description is None
    for args, code, message in (
        (("--move-column", "f SIDEWAYS"), 2, "NAME FIRST|LAST"),
        (("--move-column", "f AFTER"), 2, "NAME FIRST|LAST"),
        (("--move-column", "nope FIRST"), 1, "'nope' does not exist"),
        (("--not-null", "d"), 1, "'d': a nullable column cannot become NOT NULL"),
        (("--nullable", "id"), 1, "primary key"),
        (("--column-comment", "f"), 2, "NAME=COMMENT"),
        (("--column-comment", "r.a=nested"), 1, "could no longer read"),
    ):
        rc, _, err = cli("alter", *args)
        assert rc == code and message in err, (args, err)


def test_tags(cli: Cli) -> None:
    cli.ok("create", "--schema", str(cli.tmp / "schema.json"))
    cli.ok("write", "--input", str(_jsonl(cli.tmp / "r.jsonl", ROWS)))
    cli.ok("write", "--input", str(_jsonl(cli.tmp / "s.jsonl", [{"pt": "z", "id": 7}])))
    assert json.loads(cli.ok("tag", "create", "v1", "--snapshot", "1")[0]) == {
        "op": "tag-create", "tag": "v1", "snapshot": 1}
    cli.ok("tag", "create", "v2", "--time-retained", "1 d")
    assert [json.loads(x) for x in cli.ok("tag", "list")] == [
        {"tag": "v1", "snapshot": 1}, {"tag": "v2", "snapshot": 2}]
    assert cli.ok("read", "--tag", "v1") == EXPECTED
    rc, _, err = cli("tag", "create", "v1", "--snapshot", "2")
    assert rc == 1 and "already exists" in err
    rc, _, err = cli("tag", "create", "../x")
    assert rc == 1 and "invalid identifier" in err
    cli.ok("tag", "delete", "v1")
    rc, _, err = cli("tag", "delete", "v1")
    assert rc == 1 and "does not exist" in err
    assert [json.loads(x)["tag"] for x in cli.ok("tag", "list")] == ["v2"]


def test_fsck_exit_codes(cli: Cli) -> None:
    cli.ok("create", "--schema", str(cli.tmp / "schema.json"))
    cli.ok("write", "--input", str(_jsonl(cli.tmp / "r.jsonl", ROWS)))
    out = cli.ok("fsck", "--deep")
    assert len(out) == 1 and json.loads(out[0])["ok"] is True
    (Path(cli.wh) / "db.db" / "t" / "snapshot" / "LATEST").write_text("garbage")
    rc, out, _ = cli("fsck")
    assert rc == 0 and json.loads(out[0])["kind"] == "hint_invalid"
    data_file = next((Path(cli.wh) / "db.db" / "t").rglob("data-*.parquet"))
    data_file.unlink()
    rc, out, _ = cli("fsck")
    assert rc == 1
    lines = [json.loads(x) for x in out]
    assert lines[0]["kind"] == "missing_data_file" and lines[0]["severity"] == "error"
    assert lines[0]["path"].endswith(data_file.name)
    assert lines[-1]["op"] == "fsck" and lines[-1]["ok"] is False
    rc, _, err = cli("fsck", table="db.nope")
    assert rc == 1 and "does not exist" in err
