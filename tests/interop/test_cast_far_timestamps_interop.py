"""STRING -> TIMESTAMP casts of values outside the years 1678-2261 (which int64 nanoseconds
cannot hold), and STRING -> TIMESTAMP / DATE of strings Java's parsers resolve or refuse in
their own ways, read as Paimon Java 0.9 reads them after its ALTER.

Java 0.9 creates every table of the module (STRING columns) and writes its values, ALTERs each
column to a TIMESTAMP or DATE (``Catalog.alterTable`` through SchemaTagOracle) and reads them:
one JVM per step for the whole module (a value Java cannot read fails its table's read, so each
such value has a table of its own). We read the same tables; the values are also checked by
hand.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
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
# TIMESTAMP(7..9) values are int64 nanoseconds here (years 1678-2261)
NANOS = ["2261-12-31 23:59:59.123456789", "9999-12-31 23:59:59.999999999"]
# BinaryStringUtils.toDate: digits are a day number, else DateTimeUtils.parseDate
DATES = {"2024-3-5": "2024-03-05", "19000": "2022-01-08", "2024-3": "2024-03-01",
         "2017-12-12 09:30:00.0": "2017-12-12", " 2024": "2024-01-01",
         "1600-02-29": "1600-02-29", "0001-01-01": "0001-01-01", "2024-02-29": "2024-02-29",
         "00000000002024-1-01": "2024-01-01", "9999-12-31": "9999-12-31"}
# strings Java's read fails on: (value, target type, Java's error, our CastError's words)
UNREADABLE = [
    *((v, "TIMESTAMP(6)", e, "not a timestamp") for v, e in [
        ("2024-01-01 24:00:01", "HourOfDay"), ("10000-01-01 00:00:00", "could not be parsed at"),
        ("2024-02-32", "DayOfMonth"), ("0000-01-01", "YearOfEra"),
        ("2024-13-01", "MonthOfYear")]),
    # Java's parseDate checks the date (``isIllegalDate``): no rolling over into the next
    # month, as Arrow's strptime did ('2024-02-30' read as 2024-03-01)
    *((v, "DATE", "For input string", "not a date") for v in [
        "2024-02-30", "2023-02-29", "2024-06-31", "2024-13-01", "10000-01-01",
        "2024-1-1000000000005", " 2024-01-02 03:04"]),
]


@dataclass(frozen=True)
class Tables:
    """The module's warehouse after Java's ALTERs; Java's read records and outputs."""

    root: Path
    warehouse: str
    java: dict[str, dict[str, Any]]  # table -> the read command's status record

    def java_rows(self, table: str) -> list[dict[str, Any]]:
        lines = command_output(self.root, self.java, table)
        return sorted(map(json.loads, lines), key=lambda r: r["id"])

    def our_rows(self, table: str) -> list[dict[str, Any]]:
        lines = cli(["read", "--warehouse", self.warehouse, "--table", f"db.{table}"])
        return sorted(map(json.loads, lines), key=lambda r: r["id"])


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Tables:
    ensure_ready()
    root = tmp_path_factory.mktemp("far-ts")
    (root / "out").mkdir()
    wh = str(root / "wh")
    # table -> (its STRING columns' values by row, the ALTERs to run)
    specs: dict[str, tuple[list[dict[str, Any]], dict[str, str]]] = {
        "t": ([{c: v for c in TARGETS} for v in VALUES], TARGETS),
        "n9": ([{"n": v} for v in NANOS], {"n": "TIMESTAMP(9)"}),
        "d": ([{"n": v} for v in DATES], {"n": "DATE"}),
        **{f"u{i}": ([{"n": v}], {"n": target})
           for i, (v, target, _, _) in enumerate(UNREADABLE)},
    }
    cmds: list[dict[str, Any]] = []
    for name, (rows, alters) in specs.items():
        schema = root / f"{name}.schema.json"
        schema.write_text(json.dumps({
            "fields": [{"name": "id", "type": "INT"},
                       *({"name": c, "type": "STRING"} for c in alters)],
            "partition_keys": [], "primary_keys": [], "options": {"bucket": "-1"}}))
        cmds += [{"cmd": "create", "warehouse": wh, "table": f"db.{name}", "schema": str(schema)},
                 {"cmd": "write", "warehouse": wh, "table": f"db.{name}",
                  "input": jsonl(root / f"{name}.rows.jsonl",
                                 [{"id": i, **r} for i, r in enumerate(rows)])}]
    created = run_batches({"create": cmds}, root)["create"]
    assert not created.failures(), created.failures()
    answers = J.SchemaTagJava(root / "java").run([
        ["ALTER", wh, f"db.{name}", *(J.retype(c, parse_sql_type(t)) for c, t in alters.items())]
        for name, (_, alters) in specs.items()])
    assert all(a.ok for a in answers), [a.text for a in answers if not a.ok]
    read = run_batches({"read": [
        {"cmd": "read", "engine": "java", "warehouse": wh, "table": f"db.{name}",
         "output": str(root / "out" / f"{name}.jsonl")} for name in specs]}, root)["read"]
    return Tables(root, wh, dict(zip(specs, read.records)))


def test_we_read_as_java(tables: Tables) -> None:
    assert tables.our_rows("t") == tables.java_rows("t")


def test_values_by_hand(tables: Tables) -> None:
    ours = tables.our_rows("t")
    got = {c: [r[c] for r in ours] for c in EXPECTED}
    assert got == EXPECTED
    assert [r["t6b"] for r in ours] == EXPECTED["t6"]


def test_timestamp9_outside_int64_nanoseconds_is_refused_naming_the_value(
    tables: Tables
) -> None:
    """Java reads '9999-12-31 23:59:59.999999999' as TIMESTAMP(9), we refuse it by name
    (never a wrong value; the whole read fails, as a read Java cannot do fails there)."""
    java = tables.java_rows("n9")
    # Java reads both rows (the oracle prints a TIMESTAMP(9) through int64 epoch nanoseconds,
    # so its line for year 9999 wraps: 1816-03-30 05:56:08.066277375)
    assert [r["id"] for r in java] == [0, 1]
    assert java[0]["n"] == NANOS[0]
    with pytest.raises(CliError, match=r"'9999-12-31 23:59:59\.999999999' .*TIMESTAMP\(9\).*"
                                       r"outside the range"):
        tables.our_rows("n9")


def test_strings_read_as_dates_as_java_reads_them(tables: Tables) -> None:
    ours = tables.our_rows("d")
    assert ours == tables.java_rows("d")
    assert [r["n"] for r in ours] == list(DATES.values())


@pytest.mark.parametrize("case", range(len(UNREADABLE)),
                         ids=[f"{t}:{v!r}" for v, t, _, _ in UNREADABLE])
def test_a_string_java_cannot_read_fails_naming_it(tables: Tables, case: int) -> None:
    value, _, java_error, ours = UNREADABLE[case]
    record = tables.java[f"u{case}"]
    assert record.get("status") != "ok" and java_error in str(record.get("error"))
    with pytest.raises(CliError, match=f"CastError: .*'{re.escape(value)}' .*{ours}"):
        tables.our_rows(f"u{case}")
