"""STRING -> TIMESTAMP casts of values outside the years 1678-2261 (which int64 nanoseconds
cannot hold), and STRING -> TIMESTAMP / DATE of strings Java's parsers resolve or refuse in
their own ways, read as Paimon Java 0.9 reads them after its ALTER.

Java 0.9 creates a table of STRING columns, writes the values, ALTERs each column to a
TIMESTAMP of another precision (``Catalog.alterTable`` through SchemaTagOracle); Java and we
read the table; the values are also checked by hand.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from paimon_core.types import parse_sql_type
from tests.interop import schema_tag_java as J
from tests.interop.oracle import command_output, ensure_ready, run_batches
from tests.interop.ours import CliError, cli, jsonl

pytestmark = pytest.mark.oracle

TARGETS = {"t0": "TIMESTAMP(0)", "t3": "TIMESTAMP(3)", "t6": "TIMESTAMP(6)",
           "t6b": "TIMESTAMP(6)", "ltz6": "TIMESTAMP(6) WITH LOCAL TIME ZONE"}
VALUES = ["9999-12-31 23:59:59.999999", "0001-01-01 00:00:00", "1600-02-29 12:34:56.789",
          "2300-1-1 0:0:0.123456789", "1677-09-21 00:12:43.145224191", None,
          # Java's formatter resolves SMART: a day past the month's end is its last day,
          # 24:00:00 the next midnight
          "2024-02-30", "2023-02-29 01:00:00.5", "2024-04-31 10:00:00", "2024-01-01 24:00:00"]
# what Java 0.9 reads (DateTimeUtils.parseTimestampData, then the precision's truncation)
EXPECTED = {
    "t0": ["9999-12-31 23:59:59", "0001-01-01 00:00:00", "1600-02-29 12:34:56",
           "2300-01-01 00:00:00", "1677-09-21 00:12:43", None, "2024-02-29 00:00:00",
           "2023-02-28 01:00:00", "2024-04-30 10:00:00", "2024-01-02 00:00:00"],
    "t3": ["9999-12-31 23:59:59.999", "0001-01-01 00:00:00.000", "1600-02-29 12:34:56.789",
           "2300-01-01 00:00:00.123", "1677-09-21 00:12:43.145", None,
           "2024-02-29 00:00:00.000", "2023-02-28 01:00:00.500", "2024-04-30 10:00:00.000",
           "2024-01-02 00:00:00.000"],
    "t6": ["9999-12-31 23:59:59.999999", "0001-01-01 00:00:00.000000",
           "1600-02-29 12:34:56.789000", "2300-01-01 00:00:00.123456",
           "1677-09-21 00:12:43.145224", None, "2024-02-29 00:00:00.000000",
           "2023-02-28 01:00:00.500000", "2024-04-30 10:00:00.000000",
           "2024-01-02 00:00:00.000000"],
}


@pytest.fixture(scope="module")
def reads(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    ensure_ready()
    work = tmp_path_factory.mktemp("far-ts")
    (work / "out").mkdir()
    wh = str(work / "wh")
    (work / "schema.json").write_text(json.dumps({
        "fields": [{"name": "id", "type": "INT"},
                   *({"name": c, "type": "STRING"} for c in TARGETS)],
        "partition_keys": [], "primary_keys": [], "options": {"bucket": "-1"}}))
    rows = jsonl(work / "rows.jsonl", [{"id": i, **{c: v for c in TARGETS}}
                                       for i, v in enumerate(VALUES)])
    first = run_batches({"create": [
        {"cmd": "create", "warehouse": wh, "table": "db.t", "schema": str(work / "schema.json")},
        {"cmd": "write", "warehouse": wh, "table": "db.t", "input": rows}]}, work)["create"]
    assert not first.failures(), first.failures()
    answer = J.SchemaTagJava(work / "java").alter(
        Path(wh), "db.t", *(J.retype(c, parse_sql_type(t)) for c, t in TARGETS.items()))
    assert answer.ok, answer.text
    read = run_batches({"read": [{"cmd": "read", "engine": "java", "warehouse": wh,
                                  "table": "db.t", "output": str(work / "out" / "java.jsonl")}]},
                       work)["read"]
    java = command_output(work, {"java": read.records[0]}, "java")
    ours = cli(["read", "--warehouse", wh, "--table", "db.t"])
    return {k: sorted(map(json.loads, v), key=lambda r: r["id"])
            for k, v in (("java", java), ("ours", ours))}


def test_we_read_as_java(reads: dict[str, list[dict[str, Any]]]) -> None:
    assert reads["ours"] == reads["java"]


def test_values_by_hand(reads: dict[str, list[dict[str, Any]]]) -> None:
    got = {c: [r[c] for r in reads["ours"]] for c in EXPECTED}
    assert got == EXPECTED
    assert [r["t6b"] for r in reads["ours"]] == EXPECTED["t6"]


def test_timestamp9_outside_int64_nanoseconds_is_refused_naming_the_value(
    tmp_path: Path
) -> None:
    """TIMESTAMP(7..9) values are int64 nanoseconds here (years 1678-2261): Java reads
    '9999-12-31 23:59:59.999999999' as TIMESTAMP(9), we refuse it by name (never a wrong
    value; the whole read fails, as a read Java cannot do fails there)."""
    ensure_ready()
    wh = str(tmp_path / "wh")
    (tmp_path / "out").mkdir()
    (tmp_path / "schema.json").write_text(json.dumps({
        "fields": [{"name": "id", "type": "INT"}, {"name": "n", "type": "STRING"}],
        "partition_keys": [], "primary_keys": [], "options": {"bucket": "-1"}}))
    rows = jsonl(tmp_path / "rows.jsonl", [{"id": 1, "n": "2261-12-31 23:59:59.123456789"},
                                           {"id": 2, "n": "9999-12-31 23:59:59.999999999"}])
    done = run_batches({"c": [
        {"cmd": "create", "warehouse": wh, "table": "db.n",
         "schema": str(tmp_path / "schema.json")},
        {"cmd": "write", "warehouse": wh, "table": "db.n", "input": rows}]}, tmp_path)["c"]
    assert not done.failures(), done.failures()
    assert J.SchemaTagJava(tmp_path / "java").alter(
        Path(wh), "db.n", J.retype("n", parse_sql_type("TIMESTAMP(9)"))).ok
    read = run_batches({"r": [{"cmd": "read", "engine": "java", "warehouse": wh,
                               "table": "db.n", "output": str(tmp_path / "out" / "j.jsonl")}]},
                       tmp_path)["r"]
    java = [json.loads(x) for x in command_output(tmp_path, {"j": read.records[0]}, "j")]
    # Java reads both rows (the oracle prints a TIMESTAMP(9) through int64 epoch nanoseconds,
    # so its line for year 9999 wraps: 1816-03-30 05:56:08.066277375)
    assert [r["id"] for r in sorted(java, key=lambda r: r["id"])] == [1, 2]
    assert sorted(java, key=lambda r: r["id"])[0]["n"] == "2261-12-31 23:59:59.123456789"
    with pytest.raises(CliError, match=r"'9999-12-31 23:59:59\.999999999' .*TIMESTAMP\(9\).*"
                                       r"outside the range"):
        cli(["read", "--warehouse", wh, "--table", "db.n"])


@pytest.mark.parametrize("value, java_error", [
    ("2024-01-01 24:00:01", "HourOfDay"), ("10000-01-01 00:00:00", "could not be parsed at"),
    ("2024-02-32", "DayOfMonth"), ("0000-01-01", "YearOfEra"), ("2024-13-01", "MonthOfYear"),
])
def test_a_string_java_cannot_parse_fails_naming_it(
    tmp_path: Path, value: str, java_error: str
) -> None:
    _java_fails_and_so_do_we(tmp_path, value, "TIMESTAMP(6)", java_error, "not a timestamp")


def _java_fails_and_so_do_we(tmp_path: Path, value: str, target: str, java_error: str,
                             ours: str) -> None:
    ensure_ready()
    wh = str(tmp_path / "wh")
    (tmp_path / "schema.json").write_text(json.dumps({
        "fields": [{"name": "n", "type": "STRING"}], "partition_keys": [], "primary_keys": [],
        "options": {"bucket": "-1"}}))
    done = run_batches({"c": [
        {"cmd": "create", "warehouse": wh, "table": "db.n",
         "schema": str(tmp_path / "schema.json")},
        {"cmd": "write", "warehouse": wh, "table": "db.n",
         "input": jsonl(tmp_path / "rows.jsonl", [{"n": value}])}]}, tmp_path)["c"]
    assert not done.failures(), done.failures()
    assert J.SchemaTagJava(tmp_path / "java").alter(
        Path(wh), "db.n", J.retype("n", parse_sql_type(target))).ok
    read = run_batches({"r": [{"cmd": "read", "engine": "java", "warehouse": wh,
                               "table": "db.n"}]}, tmp_path)["r"]
    assert read.failures() and java_error in str(read.failures()[0].get("error"))
    with pytest.raises(CliError, match=f"CastError: .*'{re.escape(value)}' .*{ours}"):
        cli(["read", "--warehouse", wh, "--table", "db.n"])


# BinaryStringUtils.toDate: digits are a day number, else DateTimeUtils.parseDate
DATES = {"2024-3-5": "2024-03-05", "19000": "2022-01-08", "2024-3": "2024-03-01",
         "2017-12-12 09:30:00.0": "2017-12-12", " 2024": "2024-01-01",
         "1600-02-29": "1600-02-29", "0001-01-01": "0001-01-01", "2024-02-29": "2024-02-29",
         "00000000002024-1-01": "2024-01-01", "9999-12-31": "9999-12-31"}


def test_strings_read_as_dates_as_java_reads_them(tmp_path: Path) -> None:
    ensure_ready()
    wh = str(tmp_path / "wh")
    (tmp_path / "out").mkdir()
    (tmp_path / "schema.json").write_text(json.dumps({
        "fields": [{"name": "id", "type": "INT"}, {"name": "n", "type": "STRING"}],
        "partition_keys": [], "primary_keys": [], "options": {"bucket": "-1"}}))
    done = run_batches({"c": [
        {"cmd": "create", "warehouse": wh, "table": "db.d",
         "schema": str(tmp_path / "schema.json")},
        {"cmd": "write", "warehouse": wh, "table": "db.d",
         "input": jsonl(tmp_path / "rows.jsonl",
                        [{"id": i, "n": v} for i, v in enumerate(DATES)])}]}, tmp_path)["c"]
    assert not done.failures(), done.failures()
    assert J.SchemaTagJava(tmp_path / "java").alter(
        Path(wh), "db.d", J.retype("n", parse_sql_type("DATE"))).ok
    read = run_batches({"r": [{"cmd": "read", "engine": "java", "warehouse": wh,
                               "table": "db.d", "output": str(tmp_path / "out" / "j.jsonl")}]},
                       tmp_path)["r"]
    java = sorted(map(json.loads, command_output(tmp_path, {"j": read.records[0]}, "j")),
                  key=lambda r: r["id"])
    ours = sorted(map(json.loads, cli(["read", "--warehouse", wh, "--table", "db.d"])),
                  key=lambda r: r["id"])
    assert ours == java
    assert [r["n"] for r in ours] == list(DATES.values())


@pytest.mark.parametrize("value", ["2024-02-30", "2023-02-29", "2024-06-31", "2024-13-01",
                                   "10000-01-01", "2024-1-1000000000005", " 2024-01-02 03:04"])
def test_a_string_java_cannot_read_as_a_date_fails_naming_it(tmp_path: Path, value: str) -> None:
    """Java's parseDate checks the date (``isIllegalDate``): no rolling over into the next
    month, as Arrow's strptime did ('2024-02-30' read as 2024-03-01)."""
    _java_fails_and_so_do_we(tmp_path, value, "DATE", "For input string", "not a date")
