"""CHAR columns of ORC data files after Java 0.9's ALTER to VARCHAR / STRING / a longer CHAR.

Java stores ORC ``char(n)`` padded to its length and reads it through ORC's char reader,
which trims the padding; the file's type decides, so after a CHAR -> VARCHAR change the old
values still read trimmed (and the padded statistics of the old files must not prune).
Tables ALTERed by Java (``Catalog.alterTable`` through SchemaTagOracle) after their first
write, then written again under the new types:

* ``db.j``: Java creates and writes it;
* ``db.o``: we create and write it (our ORC writer stores CHAR as an ORC ``string``);
* ``db.s``: Java writes one row (its file's statistics are that row's padded values).

Java, pypaimon and we read both tables' latest snapshot; ours must equal Java's, value for
value (padding included), and the values are checked by hand; filters on the changed columns
keep the old rows. pypaimon 2.1 reads the stored strings (no cast, no trim).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from paimon_core.types import parse_sql_type
from tests.interop import schema_tag_java as J
from tests.interop.oracle import command_output, ensure_ready, run_batches
from tests.interop.ours import cli, jsonl

pytestmark = pytest.mark.oracle

# (column, type before, type after)
CHANGES = [("c_vc", "CHAR(5)", "VARCHAR(10)"), ("c_str", "CHAR(5)", "STRING"),
           ("c_c8", "CHAR(5)", "CHAR(8)"), ("c_vc3", "CHAR(5)", "VARCHAR(3)")]
VALUES = ["ab", "abcde", "", " a ", None]
OLD = [{"id": i, **{c: v for c, _, _ in CHANGES}} for i, v in enumerate(VALUES)]
NEW = [{"id": 10, "c_vc": "new ", "c_str": "s", "c_c8": "x", "c_vc3": "xyz"}]


def _schema() -> dict[str, Any]:
    return {"fields": [{"name": "id", "type": "INT"},
                       *({"name": c, "type": old} for c, old, _ in CHANGES)],
            "partition_keys": [], "primary_keys": [],
            "options": {"bucket": "-1", "file.format": "orc"}}


def _canon(lines: list[str]) -> list[dict[str, Any]]:
    return sorted((json.loads(x) for x in lines), key=lambda r: r["id"])


@pytest.fixture(scope="module")
def reads(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    ensure_ready()
    work = tmp_path_factory.mktemp("orc-char")
    (work / "out").mkdir()
    wh = str(work / "wh")
    schema = work / "schema.json"
    schema.write_text(json.dumps(_schema()))
    old, new = jsonl(work / "old.jsonl", OLD), jsonl(work / "new.jsonl", NEW)

    def run(name: str, cmds: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        records = run_batches({name: cmds}, work)[name].records
        return {str(c.get("key", i)): r for i, (c, r) in enumerate(zip(cmds, records))}

    first = run("java-create", [
        {"cmd": "create", "warehouse": wh, "table": "db.j", "schema": str(schema)},
        {"cmd": "write", "warehouse": wh, "table": "db.j", "input": old},
        {"cmd": "create", "warehouse": wh, "table": "db.s", "schema": str(schema)},
        {"cmd": "write", "warehouse": wh, "table": "db.s",
         "input": jsonl(work / "single.jsonl", OLD[:1])}])
    assert all(r.get("status") == "ok" for r in first.values()), first
    cli(["create", "--warehouse", wh, "--table", "db.o", "--schema", str(schema)])
    cli(["write", "--warehouse", wh, "--table", "db.o", "--input", old])
    java = J.SchemaTagJava(work / "java")
    for t in ("db.j", "db.o", "db.s"):
        answer = java.alter(Path(wh), t, *(J.retype(c, parse_sql_type(n)) for c, _, n in CHANGES))
        assert answer.ok, answer.text
    second = run("java-write", [{"cmd": "write", "warehouse": wh, "table": "db.j", "input": new}])
    assert all(r.get("status") == "ok" for r in second.values()), second
    cli(["write", "--warehouse", wh, "--table", "db.o", "--input", new])
    cmds = [{"cmd": "read", "engine": e, "warehouse": wh, "table": f"db.{t}",
             "pypaimon_compat": e == "pypaimon", "key": f"{e}-{t}",
             "output": str(work / "out" / f"{e}-{t}.jsonl")}
            for t in ("j", "o") for e in ("java", "pypaimon")]
    records = run("reads", [{k: v for k, v in c.items() if k != "key"} for c in cmds])
    records = {c["key"]: records[str(i)] for i, c in enumerate(cmds)}
    out = {k: _canon(command_output(work, records, k)) for k in records}
    out["_wh"] = [{"wh": wh}]
    filtered = run("java-filter", [{"cmd": "read", "engine": "java", "warehouse": wh,
                                    "table": "db.s", "filter": ["c_vc = 'ab'"],
                                    "output": str(work / "out" / "f.jsonl")}])
    out["java-s-filtered"] = _canon(command_output(work, {"f": filtered["0"]}, "f")) \
        if filtered["0"].get("status") == "ok" else [{"error": filtered["0"]}]
    for t in ("j", "o"):
        out[f"ours-{t}"] = _canon(cli(["read", "--warehouse", wh, "--table", f"db.{t}"]))
    return out


# what Java 0.9 reads (ORC's char reader trims the file's padding; a CHAR target pads again,
# a shorter VARCHAR truncates: CastExecutors' string-to-string)
EXPECTED = {
    "c_vc": ["ab", "abcde", "", " a", None, "new "],
    "c_str": ["ab", "abcde", "", " a", None, "s"],
    "c_c8": ["ab      ", "abcde   ", "        ", " a      ", None, "x"],
    "c_vc3": ["ab", "abc", "", " a", None, "xyz"],
}


@pytest.mark.parametrize("table", ["j", "o"])
def test_reads_equal_java(reads: dict[str, list[dict[str, Any]]], table: str) -> None:
    assert reads[f"ours-{table}"] == reads[f"java-{table}"]


def test_pypaimon_reads_the_stored_strings(reads: dict[str, list[dict[str, Any]]]) -> None:
    """pypaimon 2.1 applies neither the cast nor ORC's trim: Java's padded char(5), our
    strings as written, the new type ignored (a difference of pypaimon's, not ours)."""
    assert [r["c_vc3"] for r in reads["pypaimon-j"]] == [
        "ab   ", "abcde", "     ", " a   ", None, "xyz"]
    assert [r["c_vc3"] for r in reads["pypaimon-o"]] == ["ab", "abcde", "", " a ", None, "xyz"]


@pytest.mark.parametrize("table", ["j", "o"])
@pytest.mark.parametrize(("where", "ids"), [
    ("c_vc = 'ab'", [0]), ("c_str = ' a'", [3]), ("c_c8 = 'abcde   '", [1]),
    ("c_vc3 = 'abc'", [1]), ("c_vc >= 'ab'", [0, 1, 10])])
def test_filters_keep_old_rows(reads: dict[str, list[dict[str, Any]]], table: str, where: str,
                               ids: list[int]) -> None:
    """A filter on a changed column keeps the old rows whose value (as read) matches: the old
    files' stats are of padded CHAR values and must not prune them."""
    wh = reads["_wh"][0]["wh"]
    got = _canon(cli(["read", "--warehouse", wh, "--table", f"db.{table}", "--filter", where]))
    assert [r["id"] for r in got] == ids


@pytest.mark.parametrize("table", ["j", "o"])
def test_values_as_java_reads_them(reads: dict[str, list[dict[str, Any]]], table: str) -> None:
    got = {c: [r[c] for r in reads[f"ours-{table}"]] for c in EXPECTED}
    assert got == EXPECTED



def test_padded_stats_of_a_java_file_do_not_prune(
    reads: dict[str, list[dict[str, Any]]]
) -> None:
    """``db.s``'s one Java ORC file holds only 'ab' in a CHAR(5): its statistics say
    'ab   ' (padded), its value reads 'ab' after the ALTER to VARCHAR(10). Java 0.9 prunes
    the file on ``c_vc = 'ab'`` (the issue's "filters on a changed column drop old rows");
    we keep the row."""
    wh = reads["_wh"][0]["wh"]
    assert reads["java-s-filtered"] == []
    got = _canon(cli(["read", "--warehouse", wh, "--table", "db.s", "--filter", "c_vc = 'ab'"]))
    assert [(r["id"], r["c_vc"]) for r in got] == [(0, "ab")]
