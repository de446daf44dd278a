"""Type changes Paimon Java 0.9's ALTER allows, read value for value as Java reads them.

Java 0.9 creates a table (append, and primary-key), writes old rows, ALTERs column types
(lossy ones included: DECIMAL -> INT, DOUBLE -> INT, STRING -> DECIMAL, ...;
``Catalog.alterTable`` through SchemaTagOracle), then writes rows under the new schema. We
read both snapshots; the latest is compared with Java's read, and the issue's examples with
values written here by hand. A filter on a changed column keeps the old rows whose converted
value matches (stats of old files are in the old type and must not prune them).
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from paimon_core.cli.main import main as paimon_main
from paimon_core.types import parse_sql_type
from tests.interop import schema_tag_java as J
from tests.interop.oracle import ensure_ready, run_batches

pytestmark = pytest.mark.oracle

TABLE = "db.t"
# (column, type before, type after)
CHANGES = [
    ("dec_int", "DECIMAL(10, 2)", "INT"),
    ("dbl_int", "DOUBLE", "INT"),
    ("str_dec", "STRING", "DECIMAL(10, 2)"),
    ("big_int", "BIGINT", "INT"),
    ("dbl_big", "DOUBLE", "BIGINT"),
    ("flt_dec", "FLOAT", "DECIMAL(6, 3)"),
    ("dec_dec", "DECIMAL(10, 4)", "DECIMAL(6, 2)"),
    ("dec_dbl", "DECIMAL(10, 3)", "DOUBLE"),
    ("int_dec", "INT", "DECIMAL(5, 1)"),
    ("str_int", "STRING", "INT"),
    ("str_dbl", "STRING", "DOUBLE"),
    ("str_bool", "STRING", "BOOLEAN"),
    ("int_str", "INT", "STRING"),
    ("dbl_str", "DOUBLE", "STRING"),
    ("dec_str", "DECIMAL(8, 3)", "STRING"),
    ("bool_int", "BOOLEAN", "INT"),
    ("int_bool", "INT", "BOOLEAN"),
    ("str_char", "STRING", "CHAR(4)"),
    ("str_vc", "STRING", "VARCHAR(3)"),
    ("by_bin", "BYTES", "BINARY(3)"),
    ("str_by", "STRING", "BYTES"),
    ("ts_date", "TIMESTAMP(6)", "DATE"),
    ("ts_ts3", "TIMESTAMP(6)", "TIMESTAMP(3)"),
    ("ts_str", "TIMESTAMP(3)", "STRING"),
    ("ts_big", "TIMESTAMP(3)", "BIGINT"),
    ("date_ts", "DATE", "TIMESTAMP(3)"),
    ("date_str", "DATE", "STRING"),
    ("str_date", "STRING", "DATE"),
    ("str_ts", "STRING", "TIMESTAMP(3)"),
    ("str_time", "STRING", "TIME(3)"),
    ("ts_time", "TIMESTAMP(3)", "TIME(0)"),
    ("str_time_tz", "STRING", "TIME(3)"),
    ("str_ts_short", "STRING", "TIMESTAMP(6)"),
    ("str_dbl_hex", "STRING", "DOUBLE"),
    ("str_flt_hex", "STRING", "FLOAT"),
]
B64 = lambda b: base64.b64encode(b).decode()  # noqa: E731

OLD_ROWS: list[dict[str, Any]] = [
    {"id": 1, "dec_int": "12.99", "dbl_int": 1.9, "str_dec": "2.345", "big_int": 2**40 + 5,
     "dbl_big": 1e30, "flt_dec": 0.1, "dec_dec": "1.2350", "dec_dbl": "0.100", "int_dec": 1234,
     "str_int": "42", "str_dbl": "1.5", "str_bool": "yes", "int_str": 7, "dbl_str": 1e10,
     "dec_str": "1.500", "bool_int": True, "int_bool": 0, "str_char": "ab", "str_vc": "abcdef",
     "by_bin": B64(b"\x01\x02\x03\x04"), "str_by": "hé", "ts_date": "2024-01-02 03:04:05.678901",
     "ts_ts3": "2024-01-02 03:04:05.678901", "ts_str": "2024-01-02 03:04:05.100",
     "ts_big": "2024-01-02 03:04:05.999", "date_ts": "2024-02-29", "date_str": "2024-02-29",
     "str_date": "2024-3-5", "str_ts": "2024-01-02 03:04:05.123456", "str_time": "01:02:03.5",
     "ts_time": "2024-01-02 03:04:05.678", "str_time_tz": "10:00:00+02:00",
     "str_ts_short": "2024-3-5 1:2:3.5", "str_dbl_hex": "0x1.8p1", "str_flt_hex": "0x1p-3f"},
    {"id": 2, "dec_int": "-7.99", "dbl_int": -1.9, "str_dec": "-2.345", "big_int": -(2**31) - 1,
     "dbl_big": -1e30, "flt_dec": -1.5, "dec_dec": "-99.9950", "dec_dbl": "-2.675",
     "int_dec": -9999, "str_int": "-3.9", "str_dbl": "-2e3", "str_bool": "F", "int_str": -1,
     "dbl_str": 0.0001, "dec_str": "-0.250", "bool_int": False, "int_bool": 5,
     "str_char": "abcdef", "str_vc": "ab", "by_bin": B64(b"\x09"), "str_by": "x",
     "ts_date": "1969-12-31 23:00:00.500000", "ts_ts3": "1969-12-31 23:59:59.999999",
     "ts_str": "1999-12-31 23:59:59.000", "ts_big": "1969-12-31 23:59:59.500",
     "date_ts": "1969-12-31", "date_str": "0001-01-01", "str_date": "19000",
     "str_ts": "2024-01-02", "str_time": "3723004", "ts_time": "2000-01-01 23:59:59.999",
     "str_time_tz": "5:2:3.1235-01:30", "str_ts_short": "2024-12-1 9:08:07.123456789",
     "str_dbl_hex": " -0X.8P-2d ", "str_flt_hex": "0x1.8p1"},
    {"id": 3, **{c: None for c, _, _ in CHANGES}},
]

# what Java 0.9 reads for the examples (written by hand from its CastExecutors)
EXPECTED = {
    1: {"dec_int": 12, "dbl_int": 1, "str_dec": "2.35", "big_int": 5, "dbl_big": 2**63 - 1,
        "int_dec": "1234.0", "str_int": 42, "int_bool": False, "str_char": "ab  ", "str_vc": "abc",
        "dbl_str": "1.0E10", "ts_date": "2024-01-02", "dec_dec": "1.24",
        # parseTime adds a "+02:00" offset to the hours (no conversion to UTC)
        "str_time_tz": "12:00:00.000", "str_ts_short": "2024-03-05 01:02:03.500000",
        # Double.parseDouble / Float.parseFloat read hexadecimal literals
        "str_dbl_hex": 3.0, "str_flt_hex": 0.125},
    2: {"dec_int": -7, "dbl_int": -1, "str_dec": "-2.35", "big_int": 2**31 - 1, "dbl_big": -(2**63),
        "str_int": -3, "int_bool": True, "str_char": "abcd", "ts_date": "1970-01-01",
        "dec_dec": "-100.00", "dbl_str": "1.0E-4", "int_dec": "-9999.0",
        # 5-1 h, 2-30 min, 3 s, 123 ms + 1 (the fourth fraction digit rounds up); nanoseconds
        # floored to the precision
        "str_time_tz": "03:32:03.124", "str_ts_short": "2024-12-01 09:08:07.123456",
        "str_dbl_hex": -0.125, "str_flt_hex": 3.0},
    3: {"str_dec": None, "dec_int": None},
}


def _schema(kind: str) -> dict[str, Any]:
    """An append table, or a primary-key table (its read merges the old and new files)."""
    pk = kind == "pk"
    return {"fields": [{"name": "id", "type": "INT NOT NULL" if pk else "INT"},
                       *({"name": c, "type": old} for c, old, _ in CHANGES)],
            "partition_keys": [], "primary_keys": ["id"] if pk else [],
            "options": {"bucket": "1" if pk else "-1"}}


def _new_rows() -> list[dict[str, Any]]:
    return [{"id": 10, "dec_int": 5, "dbl_int": 6, "str_dec": "1.25", "big_int": 8,
             "str_char": "wxyz", "ts_date": "2025-05-05", "int_bool": True}]


def _run(batches: dict[str, list[dict[str, Any]]], work: Path) -> None:
    """Run oracle batches; every command must succeed."""
    for name, result in run_batches(batches, work).items():
        assert not result.failures(), (name, result.failures())


def _read_java(wh: Path, work: Path, tag: str) -> list[str]:
    cmd: dict[str, Any] = {"cmd": "read", "warehouse": str(wh), "table": TABLE, "engine": "java",
                           "output": str(work / f"{tag}.jsonl")}
    results = run_batches({tag: [cmd]}, work)
    assert not results[tag].failures(), results[tag].failures()
    return (work / f"{tag}.jsonl").read_text().splitlines()


def _ours(wh: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> list[str]:
    capsys.readouterr()
    assert paimon_main(["read", "--warehouse", str(wh), "--table", TABLE, *extra]) == 0
    return capsys.readouterr().out.splitlines()


@pytest.fixture(scope="module", params=["append", "pk"])
def altered(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Java 0.9: create, write the old rows, ALTER every column of CHANGES, write new rows."""
    ensure_ready()
    work = tmp_path_factory.mktemp(f"cast-evolution-{request.param}")
    (work / "schema.json").write_text(json.dumps(_schema(request.param)))
    (work / "old.jsonl").write_text("".join(json.dumps(r) + "\n" for r in OLD_ROWS))
    (work / "new.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _new_rows()))
    wh = work / "wh"
    _run({"create": [
        {"cmd": "create", "warehouse": str(wh), "table": TABLE,
         "schema": str(work / "schema.json")},
        {"cmd": "write", "warehouse": str(wh), "table": TABLE, "input": str(work / "old.jsonl")},
    ]}, work)
    java = J.SchemaTagJava(work / "java")
    answer = java.alter(wh, TABLE, *(J.retype(c, parse_sql_type(new)) for c, _, new in CHANGES))
    assert answer.ok, answer.text
    _run({"write-new": [{"cmd": "write", "warehouse": str(wh), "table": TABLE,
                                "input": str(work / "new.jsonl")}]}, work)
    return wh


def test_we_read_every_java_cast_as_java(
    altered: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    java = _read_java(altered, tmp_path, "latest")
    mine = _ours(altered, capsys)
    assert len(mine) == 4
    by_id = {json.loads(x)["id"]: json.loads(x) for x in mine}
    for rid, expected in EXPECTED.items():
        got = {k: by_id[rid][k] for k in expected}
        assert got == expected, rid
    for theirs, ours in zip(java, mine):
        assert json.loads(ours) == json.loads(theirs)
    assert mine == java


def test_old_snapshot_reads_the_old_types(
    altered: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Time travel to the snapshot before the ALTER reads its own schema's types (the
    oracle's Java time-travel read cannot be compared: its row printer takes the latest
    schema's types and fails on the old values)."""
    rows = {r["id"]: r for r in map(json.loads, _ours(altered, capsys, "--snapshot", "1"))}
    assert sorted(rows) == [1, 2, 3]
    assert {k: rows[1][k] for k in ("dec_int", "dbl_int", "str_dec", "str_char", "ts_date")} == {
        "dec_int": "12.99", "dbl_int": 1.9, "str_dec": "2.345", "str_char": "ab",
        "ts_date": "2024-01-02 03:04:05.678901"}
    assert rows[2]["dec_int"] == "-7.99" and rows[2]["str_dec"] == "-2.345"


@pytest.mark.parametrize("where, ids", [
    ("dec_int = 12", [1]), ("dbl_int = -1", [2]), ("str_dec > 2.3", [1]),
    ("str_dec < 2", [2, 10]),
    ("str_char = 'abcd'", [2]), ("dec_int < 13", [1, 2, 10]), ("big_int = 5", [1]),
])
def test_filters_on_a_changed_column_keep_old_rows(
    altered: Path, capsys: pytest.CaptureFixture[str], where: str, ids: list[int]
) -> None:
    rows = [json.loads(x) for x in _ours(altered, capsys, "--filter", where)]
    assert sorted(r["id"] for r in rows) == ids


@pytest.mark.parametrize("value, new_type, message, java_error", [
    ("abc", "INT", r"value 'abc' of type STRING cannot be read as INT: not an integer", "abc"),
    ("99999999.995", "DECIMAL(10, 2)", r"value '99999999\.995' .* more than 10 digits", "is null"),
    # DateTimeUtils' formatter has a space between date and time, no "T"
    ("2024-01-02T03:04:05", "TIMESTAMP(3)", r"value '2024-01-02T03:04:05' .* not a timestamp",
     "2024-01-02T03:04:05"),
    ("12:00 UTC", "TIME", r"value '12:00 UTC' .* not a time of day", "12:00 UTC"),
])
def test_an_old_value_java_cannot_read_fails_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, new_type: str,
    message: str, java_error: str
) -> None:
    """Java fails its read on a string it cannot parse ('abc' -> INT) and on a decimal over
    the new precision (a null its reader does not expect); we fail too, naming the value."""
    wh, work = tmp_path / "wh", tmp_path / "w"
    work.mkdir()
    (work / "schema.json").write_text(json.dumps({
        "fields": [{"name": "s", "type": "STRING"}], "partition_keys": [], "primary_keys": [],
        "options": {"bucket": "-1"}}))
    (work / "rows.jsonl").write_text(json.dumps({"s": value}) + "\n")
    _run({"bad": [
        {"cmd": "create", "warehouse": str(wh), "table": TABLE,
         "schema": str(work / "schema.json")},
        {"cmd": "write", "warehouse": str(wh), "table": TABLE,
         "input": str(work / "rows.jsonl")},
    ]}, work)
    java = J.SchemaTagJava(work / "java")
    assert java.alter(wh, TABLE, J.retype("s", parse_sql_type(new_type))).ok
    results = run_batches({"bad-read": [{"cmd": "read", "warehouse": str(wh),
                                         "table": TABLE, "engine": "java"}]}, work)
    failures = results["bad-read"].failures()
    assert failures, f"Java read {value!r} as {new_type}"
    assert java_error in str(failures[0].get("error")), failures
    capsys.readouterr()
    assert paimon_main(["read", "--warehouse", str(wh), "--table", TABLE]) == 1
    err = capsys.readouterr().err
    assert re.search("CastError: .*column 's': " + message, err), err
