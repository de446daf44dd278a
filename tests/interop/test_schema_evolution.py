"""Schema evolution on read, checked against Paimon Java 0.9.

The oracle cannot ALTER a table, so the test writes ``schema-1`` itself (rename, drop, add,
widen INT->BIGINT and FLOAT->DOUBLE, exactly as Java's ``SchemaManager.commitChanges`` would
lay it out), lets Java write more rows under the new schema, and compares our reads of files
written under both schemas with Java's own reads: latest, time travel to the old snapshot
(read with the old schema), and filters on renamed / added / widened columns.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.main import main as paimon_main
from paimon_core.spec.schema import encode_schema
from paimon_core.types import DataField, parse_sql_type
from tests.interop.oracle import ensure_ready, run_batches

pytestmark = pytest.mark.oracle

SCHEMA0 = {
    "fields": [
        {"name": "id", "type": "INT"},
        {"name": "a", "type": "INT"},
        {"name": "b", "type": "STRING"},
        {"name": "c", "type": "FLOAT"},
        {"name": "d", "type": "STRING"},
    ],
    "partition_keys": [],
}
TABLES = {
    "append": dict(SCHEMA0, primary_keys=[], options={"bucket": "-1"}),
    "pk": dict(SCHEMA0, primary_keys=["id"], options={"bucket": "2"}),
}
FILTERS = [[], ["b2 = 'x3'"], ["e IS NULL"], ["e > 100"], ["a > 2147483000"], ["c < 0.5"]]
# Paimon Java 0.9 cannot plan a filter on a column added after old files were written: its stats
# evolution throws NullPointerException (CastFieldGetter.getFieldOrNull on the missing stats).
# For these the expected rows are Java's unfiltered read, filtered here.
JAVA_09_NPE: dict[int, Any] = {
    2: lambda r: r["e"] is None,
    3: lambda r: r["e"] is not None and r["e"] > 100,
}


def _rows0() -> list[dict[str, Any]]:
    return [{"id": i, "a": 2147483000 + i if i % 5 == 0 else i, "b": f"x{i}",
             "c": i / 8, "d": f"drop{i}"} for i in range(40)]


def _rows1() -> list[dict[str, Any]]:
    # new schema: id, a BIGINT, b2, c DOUBLE, e BIGINT; some ids update old rows
    return [{"id": i, "a": 2**40 + i, "b2": f"y{i}", "c": i / 3, "e": i * 50}
            for i in range(30, 60)]


def _evolve(wh: Path, table: str) -> None:
    cat = FileSystemCatalog(str(wh))
    t = cat.get_table(f"db.{table}")
    s0 = t.schema
    by = {f.name: f for f in s0.fields}
    fields = [
        by["id"],
        replace(by["a"], type=parse_sql_type("BIGINT")),
        replace(by["b"], name="b2"),
        replace(by["c"], type=parse_sql_type("DOUBLE")),
        DataField(s0.highest_field_id + 1, "e", parse_sql_type("BIGINT")),
    ]
    s1 = replace(s0, id=1, fields=tuple(fields), highest_field_id=s0.highest_field_id + 1)
    (Path(t.path) / "schema" / "schema-1").write_bytes(encode_schema(s1))


def _our_lines(capsys: pytest.CaptureFixture[str], args: list[str]) -> list[str]:
    assert paimon_main(args) == 0
    return capsys.readouterr().out.splitlines()


@pytest.fixture(scope="module")
def evolved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    ensure_ready()
    work = tmp_path_factory.mktemp("evolution")
    wh = work / "wh"
    (work / "rows0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows0()))
    (work / "rows1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows1()))
    first: list[dict[str, Any]] = []
    for name, spec in TABLES.items():
        (work / f"{name}.json").write_text(json.dumps(spec))
        first += [
            {"cmd": "create", "warehouse": str(wh), "table": f"db.{name}",
             "schema": str(work / f"{name}.json")},
            {"cmd": "write", "warehouse": str(wh), "table": f"db.{name}",
             "input": str(work / "rows0.jsonl")},
        ]
    run_batches({"evolve-0": first}, work)
    for name in TABLES:
        _evolve(wh, name)
    second: list[dict[str, Any]] = []
    for name in TABLES:
        second.append({"cmd": "write", "warehouse": str(wh), "table": f"db.{name}",
                       "input": str(work / "rows1.jsonl")})
        second.append({"cmd": "read", "warehouse": str(wh), "table": f"db.{name}",
                       "snapshot": 1, "output": str(work / f"{name}-s1.jsonl")})
        for i, flt in enumerate(FILTERS):
            cmd: dict[str, Any] = {"cmd": "read", "warehouse": str(wh), "table": f"db.{name}",
                                   "output": str(work / f"{name}-f{i}.jsonl")}
            if flt:
                cmd["filter"] = flt
            second.append(cmd)
    run_batches({"evolve-1": second}, work)
    return wh, work


@pytest.mark.parametrize("table", sorted(TABLES))
@pytest.mark.parametrize("fi", range(len(FILTERS)))
def test_latest_read_maps_old_files_by_field_id(
    evolved: tuple[Path, Path], capsys: pytest.CaptureFixture[str], table: str, fi: int
) -> None:
    wh, work = evolved
    path = work / f"{table}-f{fi}.jsonl"
    if fi in JAVA_09_NPE:
        assert not path.exists(), "Java 0.9 now plans this filter: compare with it directly"
        unfiltered = (work / f"{table}-f0.jsonl").read_text().splitlines()
        expected = [line for line in unfiltered if JAVA_09_NPE[fi](json.loads(line))]
        assert expected
    else:
        expected = path.read_text().splitlines()
    args = ["read", "--warehouse", str(wh), "--table", f"db.{table}"]
    for f in FILTERS[fi]:
        args += ["--filter", f]
    assert _our_lines(capsys, args) == expected
    if not FILTERS[fi]:
        # both schemas' files contribute: old rows (no e) and new rows
        assert any('"e":null' in line for line in expected)
        assert any('"e":1500' in line for line in expected)
        assert not any('"d"' in line for line in expected)


@pytest.mark.parametrize("table", sorted(TABLES))
def test_time_travel_reads_with_the_snapshots_schema(
    evolved: tuple[Path, Path], capsys: pytest.CaptureFixture[str], table: str
) -> None:
    wh, work = evolved
    java = (work / f"{table}-s1.jsonl").read_text().splitlines()
    ours = _our_lines(capsys, ["read", "--warehouse", str(wh), "--table", f"db.{table}",
                               "--snapshot", "1"])
    # Java reads snapshot 1 with schema 0 (5 columns, `d` still there), as we do; the oracle
    # canonicalises Java's result with the *latest* schema's names, by position, so compare
    # the values positionally and check our names are schema 0's.
    assert len(java) == 40 and '"drop0"' in java[0]
    assert list(json.loads(ours[0])) == ["id", "a", "b", "c", "d"]
    assert [list(json.loads(x).values()) for x in ours] == [
        list(json.loads(x).values()) for x in java
    ]
