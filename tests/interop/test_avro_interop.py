"""Avro data files read: a primary-key table Java 0.9 writes in Parquet, then ORC, then Avro
(``file.format`` altered between its writes, as issue 31 describes), and an append table
Java writes in Avro; we read every snapshot as Java does. (We do not write Avro: a write to
such a table is refused by name, tests/write/test_orc_writer.py.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.interop import oracle as orc
from tests.interop.oracle import command_output, write_rows
from tests.interop.test_write_interop import cli_ok

pytestmark = pytest.mark.oracle

Row = dict[str, Any]
KIND = "_kind"
FIELDS = [("k", "INT NOT NULL"), ("ti", "TINYINT"), ("v", "STRING"), ("amount", "DECIMAL(10, 2)"),
          ("dt", "DATE"), ("tm", "TIME"), ("ts", "TIMESTAMP(3)"), ("ts6", "TIMESTAMP(6)"),
          ("ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("b", "BOOLEAN"), ("bin", "BYTES"),
          ("tags", "ARRAY<STRING>"), ("m", "MAP<STRING, INT>"), ("r", "ROW<a INT, b DATE>")]


def _row(k: int, v: str, amount: str | None = "1.50") -> Row:
    return {"k": k, "ti": -k, "v": v, "amount": amount, "dt": "2024-02-29", "tm": "12:34:56",
            "ts": f"2024-01-01 00:00:0{k % 10}.123", "ts6": "1969-07-20 20:17:40.000001",
            "ltz": "2024-01-01 00:00:00.000001Z", "b": k % 2 == 0, "bin": "AAE=",
            "tags": [v, None], "m": {"x": k}, "r": {"a": k, "b": "1900-01-01"}}


# (format in force, the changes Java writes in it)
STEPS: list[tuple[str, list[tuple[str, Row]]]] = [
    ("parquet", [("+I", _row(k, f"p{k}")) for k in range(1, 5)]),
    ("orc", [("+U", _row(1, "o1", "-7.25")), ("-D", _row(2, "p2")), ("+I", _row(5, "o5"))]),
    ("avro", [("+U", _row(3, "a3", None)), ("-D", _row(5, "o5")), ("+I", _row(6, "a6"))]),
]
APPEND_ROWS = [_row(i, f"x{i}") for i in range(1, 4)] + [
    {"k": 9} | {n: None for n, _ in FIELDS[1:]}]


def _canonical(row: Row) -> str:
    """The read's line of an input row (a MAP as key/value pairs)."""
    m = row.get("m")
    out = {**row, "m": None if m is None else [[k, v] for k, v in m.items()]}
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def _expected(upto: int) -> list[str]:
    model: dict[int, Row] = {}
    for _, changes in STEPS[:upto]:
        for kind, row in changes:
            if kind in ("-D", "-U"):
                model.pop(row["k"], None)
            else:
                model[row["k"]] = row
    return sorted(_canonical(r) for r in model.values())


@dataclass
class Built:
    root: Path
    wh: str
    records: dict[str, dict[str, Any]]

    def out(self, key: str) -> list[str]:
        return command_output(self.root, self.records, key)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    orc.ensure_ready()
    root = tmp_path_factory.mktemp("avro-interop")
    (root / "out").mkdir()
    wh = str(root / "wh")
    schema = {"fields": [{"name": n, "type": t} for n, t in FIELDS], "primary_keys": ["k"],
              "options": {"bucket": "1", "file.format": "parquet"}}
    (root / "pk.json").write_text(json.dumps(schema), "utf-8")
    append = {"fields": schema["fields"], "options": {"bucket": "-1", "file.format": "avro"}}
    (root / "append.json").write_text(json.dumps(append), "utf-8")
    records: dict[str, dict[str, Any]] = {}
    pk = {"engine": "java", "warehouse": wh, "table": "db.pk"}
    for i, (fmt, changes) in enumerate(STEPS):
        cmds: list[tuple[str, dict[str, Any]]] = []
        if i == 0:
            cmds.append(("create", {"cmd": "create", **pk, "schema": str(root / "pk.json")}))
            cmds.append(("append-create", {"cmd": "create", **pk, "table": "db.append",
                                           "schema": str(root / "append.json")}))
            cmds.append(("append-write", {"cmd": "write", **pk, "table": "db.append",
                                          "input": write_rows(root / "append.jsonl", APPEND_ROWS)}))
        else:
            cli_ok(["alter", "--warehouse", wh, "--table", "db.pk",
                    "--set-option", f"file.format={fmt}"])
        rows = [{**r, KIND: kind} for kind, r in changes]
        cmds.append((f"write-{fmt}", {"cmd": "write", **pk, "kind": KIND,
                                      "input": write_rows(root / f"{fmt}.jsonl", rows)}))
        if i == len(STEPS) - 1:
            for sid in range(1, len(STEPS) + 1):
                cmds.append((f"java-{sid}", {"cmd": "read", **pk, "snapshot": sid,
                                             "output": str(root / "out" / f"java-{sid}.jsonl")}))
            cmds.append(("java-append", {"cmd": "read", **pk, "table": "db.append",
                                         "output": str(root / "out" / "java-append.jsonl")}))
        result = orc.run_batches({f"step-{i}": [c for _, c in cmds]}, root)[f"step-{i}"]
        for rec in result.records:
            records[cmds[rec["i"] - 1][0]] = rec
    yield Built(root, wh, records)


def test_we_read_a_table_java_wrote_in_parquet_orc_and_avro(built: Built) -> None:
    for key in ("create", "write-parquet", "write-orc", "write-avro"):
        assert built.records[key].get("status") == "ok", built.records[key]
    files = {p.suffix for p in Path(built.wh, "db.db", "pk", "bucket-0").glob("data-*")}
    assert files == {".parquet", ".orc", ".avro"}
    for sid in range(1, len(STEPS) + 1):
        want = _expected(sid)
        assert built.out(f"java-{sid}") == want, sid
        ours = cli_ok(["read", "--warehouse", built.wh, "--table", "db.pk", "--snapshot",
                       str(sid)])
        assert ours == want, sid


def test_we_read_javas_avro_append_table(built: Built) -> None:
    want = sorted(_canonical(r) for r in APPEND_ROWS)
    assert built.out("java-append") == want
    assert cli_ok(["read", "--warehouse", built.wh, "--table", "db.append"]) == want
