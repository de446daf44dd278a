"""Tables mixing every TIMESTAMP precision, both ways with Paimon Java 0.9 and pypaimon 2.1.

Java stores precision <= 3 as INT64 TIMESTAMP(MILLIS), 4..6 as INT64 TIMESTAMP(MICROS) and >= 7
as INT96, per Parquet leaf, and reads each precision only from that physical type; our writer
produces that per leaf in one file (``paimon_core/datafile/parquet_layout.py``). Checked here, each
against hand-written expected lines (the input rows are written at the column's precision,
so each expected value is its input text; the two truncations and the offsets are spelled
out):

* ``mix`` (append, two commits = two files): TIMESTAMP(3/6/7/9), LTZ(3/9), ARRAY<TIMESTAMP(9)>,
  ARRAY<TIMESTAMP(3)>, a ROW and a MAP mixing precisions; nanoseconds, before 1970, the ends of
  the nanosecond range, 0001 and 9999 for precision <= 6. Java and pypaimon read our table
  (unfiltered and with filters that Java's stats pruning decides on our manifest stats); Java
  writes the same table and we read it.
* ``bulk`` (3000 rows of few distinct values: dictionary-encoded INT96 and INT64 pages).
* ``pk``: TIMESTAMP(9) primary key, mixed value columns, our upserts and deletes; Java and
  pypaimon read it; Java writes the same table and we read it; then, on a copy, Java appends
  (-D/+U/+I) and fully compacts our files and Java, pypaimon and we read the result.

pypaimon 2.1 reads TIMESTAMP(7..9) values of primary-key tables truncated to microseconds
(its merge path; ``shapes.Gen`` ``micro_nanos``), keys included, so keys that differ only in
their nanoseconds merge into one: its reads of ``pk`` are compared with its reads of the
same table written (and appended to, compacted) by Java alone, the ``twin`` (PYPAIMON_PK).

Engine limits respected by the data (not ours, see ``shapes.Gen``): Java 0.9 cannot read
TIMESTAMP(7..9) values before 1970 with digits below the millisecond that it wrote itself, so
the tables Java rewrites (``pk``) keep those values at whole milliseconds (ours are read right:
``mix``); Java reads an all-null ROW as a null ROW, so no such ROW is written.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.fsck import fsck
from tests.interop import oracle as orc
from tests.interop.oracle import command_output, write_rows
from tests.interop.test_write_interop import cli_ok

pytestmark = pytest.mark.oracle

Row = dict[str, Any]


def canonical(obj: Row) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def lines(rows: list[Row]) -> list[str]:
    return sorted(canonical(r) for r in rows)


# ---------------------------------------------------------------------------------------------
# mix: (input row, expected canonical row); None = same as the input

MIX_SCHEMA = {"fields": [{"name": n, "type": t} for n, t in [
    ("id", "INT"), ("ts3", "TIMESTAMP(3)"), ("ts6", "TIMESTAMP(6)"), ("ts7", "TIMESTAMP(7)"),
    ("ts9", "TIMESTAMP(9)"), ("ltz3", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
    ("ltz9", "TIMESTAMP(9) WITH LOCAL TIME ZONE"), ("arr9", "ARRAY<TIMESTAMP(9)>"),
    ("arr3", "ARRAY<TIMESTAMP(3)>"),
    ("r", "ROW<a TIMESTAMP(3), b TIMESTAMP(9) WITH LOCAL TIME ZONE, c TIMESTAMP(6)>"),
    ("m", "MAP<STRING, TIMESTAMP(9)>"),
]], "options": {"bucket": "-1"}}

MIX_COMMIT_1: list[tuple[Row, Row | None]] = [
    ({"id": 1, "ts3": "2024-02-29 12:34:56.789", "ts6": "2024-02-29 12:34:56.789012",
      "ts7": "2024-02-29 12:34:56.123456789", "ts9": "2024-02-29 12:34:56.123456789",
      "ltz3": "2024-02-29 12:34:56.789+02:00", "ltz9": "2024-02-29 12:34:56.000000001Z",
      "arr9": ["2024-02-29 12:34:56.999999999", None], "arr3": ["2024-02-29 12:34:56.001"],
      "r": {"a": "2024-02-29 12:34:56.123", "b": "2024-02-29 12:34:56.987654321Z",
            "c": "2024-02-29 12:34:56.000001"},
      "m": {"x": "2024-02-29 12:34:56.000000999"}},
     {"ts7": "2024-02-29 12:34:56.1234567",  # truncated to the precision
      "ltz3": "2024-02-29 10:34:56.789Z",  # the instant, in UTC
      "m": [["x", "2024-02-29 12:34:56.000000999"]]}),
    ({"id": 2, "ts3": "1969-12-31 23:59:59.999", "ts6": "1969-12-31 23:59:59.999999",
      "ts7": "1969-12-31 23:59:59.99999999", "ts9": "1969-12-31 23:59:59.999999999",
      "ltz3": "1900-01-01 00:00:00.001Z", "ltz9": "1960-06-15 12:00:00.5-05:30",
      "arr9": ["1969-12-31 23:59:59.000000001", "1677-09-21 00:12:43.145224193"],
      "arr3": ["1000-01-01 00:00:00.000"],
      "r": {"a": "1969-01-01 00:00:00.001", "b": "1969-07-20 20:17:40.123456789Z",
            "c": "1969-12-31 23:59:59.999999"},
      "m": {"pre": "1901-12-13 20:45:52.000000001"}},
     {"ts7": "1969-12-31 23:59:59.9999999",  # truncated towards the past
      "ltz9": "1960-06-15 17:30:00.500000000Z",
      "m": [["pre", "1901-12-13 20:45:52.000000001"]]}),
]
MIX_COMMIT_2: list[tuple[Row, Row | None]] = [
    ({"id": 3, "ts3": "9999-12-31 23:59:59.999", "ts6": "9999-12-31 23:59:59.999999",
      "ts7": "2262-04-11 23:47:16.8547758", "ts9": "2262-04-11 23:47:16.854775807",
      "ltz3": "9999-12-31 23:59:59.999Z", "ltz9": "1677-09-21 00:12:43.145224193Z",
      "arr9": [], "arr3": ["0001-01-01 00:00:00.000", "9999-12-31 23:59:59.999"],
      "r": {"a": "0001-01-01 00:00:00.000", "b": None, "c": "9999-12-31 23:59:59.999999"},
      "m": {}},
     {"m": []}),
    ({"id": 4, "ts3": None, "ts6": None, "ts7": None, "ts9": None, "ltz3": None, "ltz9": None,
      "arr9": None, "arr3": None, "r": None, "m": None}, None),
    ({"id": 5, "ts3": "1970-01-01 00:00:00.000", "ts6": "1970-01-01 00:00:00.000000",
      "ts7": "1970-01-01 00:00:00.0000001", "ts9": "1970-01-01 00:00:00.000000000",
      "ltz3": "1970-01-01 00:00:00.000Z", "ltz9": "1970-01-01 00:00:00.000000001Z",
      "arr9": [None], "arr3": [],
      "r": {"a": None, "b": "1970-01-01 00:00:00.000000000Z", "c": "1970-01-01 00:00:00.000000"},
      "m": {"z": None}},
     {"m": [["z", None]]}),
]
# filter -> ids it keeps (Java prunes files by our manifest stats, then filters rows)
MIX_FILTERS: dict[str, set[int]] = {
    "ts9 > '2000-01-01 00:00:00.000000001'": {1, 3},
    "ts3 < '1970-01-01 00:00:00'": {2},
    "ltz9 IS NULL": {4},
    "ts6 >= '9999-01-01 00:00:00'": {3},
}


def _expected(pairs: list[tuple[Row, Row | None]]) -> list[Row]:
    return [{**row, **(fix or {})} for row, fix in pairs]


MIX_EXPECTED = _expected(MIX_COMMIT_1 + MIX_COMMIT_2)

# ---------------------------------------------------------------------------------------------
# bulk: few distinct values per column (dictionary pages), values at their precision

BULK_COLUMNS = {
    "ts3": ("TIMESTAMP(3)", ["1969-12-31 23:59:59.999", "9999-12-31 23:59:59.999",
                             "2024-01-01 00:00:00.001", None]),
    "ts6": ("TIMESTAMP(6)", ["0001-01-01 00:00:00.000001", "1970-01-01 00:00:00.000000", None,
                             "2024-01-01 00:00:00.123456", "1969-07-20 20:17:40.000001"]),
    "ts7": ("TIMESTAMP(7)", ["2024-01-01 00:00:00.1234567", None, "1999-12-31 23:59:59.9999999"]),
    "ts9": ("TIMESTAMP(9)", ["2262-04-11 23:47:16.854775807", "1677-09-21 00:12:43.145224193",
                             "1969-12-31 23:59:59.999999999", "2024-01-01 00:00:00.000000001",
                             None, "2000-01-01 00:00:00.000000000"]),
    "ltz9": ("TIMESTAMP(9) WITH LOCAL TIME ZONE", ["2024-01-01 00:00:00.000000001Z", None,
                                                   "1950-01-01 00:00:00.999999999Z"]),
}
BULK_SCHEMA = {"fields": [{"name": "id", "type": "INT"}] + [
    {"name": n, "type": t} for n, (t, _) in BULK_COLUMNS.items()], "options": {"bucket": "-1"}}
BULK_ROWS = [{"id": i, **{n: vs[(i * (k + 1)) % len(vs)]
                          for k, (n, (_, vs)) in enumerate(BULK_COLUMNS.items())}}
             for i in range(3000)]

# ---------------------------------------------------------------------------------------------
# pk: TIMESTAMP(9) key; pre-1970 values p >= 7 at whole milliseconds (Java rewrites this table)

PK_SCHEMA = {"fields": [{"name": n, "type": t} for n, t in [
    ("k", "TIMESTAMP(9) NOT NULL"), ("v3", "TIMESTAMP(3)"),
    ("l6", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("l9", "TIMESTAMP(9) WITH LOCAL TIME ZONE"),
    ("s", "STRING"), ("arr", "ARRAY<TIMESTAMP(9)>"),
    ("r", "ROW<a TIMESTAMP(3), b TIMESTAMP(9)>"),
]], "primary_keys": ["k"], "options": {"bucket": "1"}}
KIND = "_kind"


def _pk(k: str, tag: str, v3: str | None, l9: str | None) -> Row:
    return {"k": k, "v3": v3, "l6": "1969-12-31 23:59:59.999999Z", "l9": l9, "s": tag,
            "arr": [k, None], "r": {"a": v3, "b": k}}


PK_STEPS: list[list[tuple[str, Row]]] = [
    [("+I", _pk("2024-01-01 00:00:00.000000001", "a", "2024-01-01 00:00:00.001",
                "2024-01-01 00:00:00.000000001Z")),
     ("+I", _pk("2024-01-01 00:00:00.000000002", "b", None, None)),
     ("+I", _pk("1969-12-31 23:59:59.999000000", "c", "1969-12-31 23:59:59.999",
                "1969-12-31 23:59:59.999000000Z")),
     ("+I", _pk("1900-01-01 00:00:00.000000000", "d", "9999-12-31 23:59:59.999",
                "1900-01-01 00:00:00.000000000Z")),
     ("+I", _pk("2262-04-11 23:47:16.854775807", "e", "0001-01-01 00:00:00.000",
                "2262-04-11 23:47:16.854775807Z")),
     ("+I", _pk("2000-02-29 00:00:00.123456789", "f", "2000-02-29 00:00:00.123",
                "2000-02-29 00:00:00.123456789Z"))],
    [("-D", _pk("2024-01-01 00:00:00.000000002", "b", None, None)),
     ("+U", _pk("1969-12-31 23:59:59.999000000", "c2", "1970-01-01 00:00:00.000",
                "2100-01-01 00:00:00.999999999Z")),
     ("+I", _pk("2100-01-01 00:00:00.999999999", "g", "2100-01-01 00:00:00.999",
                "2100-01-01 00:00:00.999999999Z"))],
]
# Java's append on our table (then a Java full compaction)
PK_JAVA_APPEND: list[tuple[str, Row]] = [
    ("-D", _pk("1900-01-01 00:00:00.000000000", "d", "9999-12-31 23:59:59.999",
               "1900-01-01 00:00:00.000000000Z")),
    ("-U", _pk("2024-01-01 00:00:00.000000001", "a", "2024-01-01 00:00:00.001",
               "2024-01-01 00:00:00.000000001Z")),
    ("+U", _pk("2024-01-01 00:00:00.000000001", "a2", "2024-06-01 00:00:00.500",
               "2030-01-01 00:00:00.000000007Z")),
    ("+I", _pk("1970-01-01 00:00:00.000000001", "h", None, "1970-01-01 00:00:00.000000001Z")),
]


def _apply(model: dict[str, Row], steps: list[tuple[str, Row]]) -> None:
    for kind, row in steps:
        if kind in ("-D", "-U"):
            model.pop(row["k"], None)
        else:
            model[row["k"]] = row


def _pk_expected(*steps: list[tuple[str, Row]]) -> list[str]:
    model: dict[str, Row] = {}
    for s in steps:
        _apply(model, s)
    return lines(list(model.values()))


# ---------------------------------------------------------------------------------------------
# the build


@dataclass
class Built:
    root: Path
    records: dict[str, dict[str, Any]]
    wh_ours: str
    wh_java: str
    wh_after: str

    def out(self, key: str) -> list[str]:
        return command_output(self.root, self.records, key)


def _with_kind(steps: list[tuple[str, Row]]) -> list[Row]:
    return [{**row, KIND: kind} for kind, row in steps]


TABLES = {"db.mix": MIX_SCHEMA, "db.bulk": BULK_SCHEMA, "db.pk": PK_SCHEMA}


def _inputs(root: Path) -> dict[str, list[tuple[str, bool]]]:
    """Per table, its writes: (input file, with a kind column)."""
    d = root / "inputs"
    d.mkdir()
    for t, schema in TABLES.items():
        (d / f"{t}.schema.json").write_text(json.dumps(schema), "utf-8")
    return {
        "db.mix": [(write_rows(d / "mix-1.jsonl", [r for r, _ in MIX_COMMIT_1]), False),
                   (write_rows(d / "mix-2.jsonl", [r for r, _ in MIX_COMMIT_2]), False)],
        "db.bulk": [(write_rows(d / "bulk.jsonl", BULK_ROWS), False)],
        "db.pk": [(write_rows(d / f"pk-{k}.jsonl", _with_kind(s)), True)
                  for k, s in enumerate(PK_STEPS)],
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    orc.ensure_ready()
    root = tmp_path_factory.mktemp("ts-interop")
    (root / "out").mkdir()
    wh_ours, wh_java, wh_after, wh_twin = (
        str(root / n) for n in ("wh-ours", "wh-java", "wh-after", "wh-twin"))
    inputs = _inputs(root)
    for table, writes in inputs.items():
        cli_ok(["create", "--warehouse", wh_ours, "--table", table,
                "--schema", str(root / "inputs" / f"{table}.schema.json")])
        for path, kind in writes:
            cli_ok(["write", "--warehouse", wh_ours, "--table", table, "--input", path,
                    *(["--kind", KIND] if kind else [])])
    shutil.copytree(wh_ours, wh_after)
    plan: dict[str, list[tuple[str, dict[str, Any]]]] = {"java": [], "pypaimon": []}

    def add(batch: str, key: str, cmd: dict[str, Any]) -> None:
        if cmd["cmd"] == "read":
            cmd = {**cmd, "output": str(root / "out" / f"{key}.jsonl")}
        plan[batch].append((key, cmd))

    for engine in ("java", "pypaimon"):
        for table in TABLES:
            base = {"engine": engine, "warehouse": wh_ours, "table": table}
            add(engine, f"{engine}-{table}", {"cmd": "read", **base})
        for i, f in enumerate(MIX_FILTERS):
            add(engine, f"{engine}-db.mix-f{i}",
                {"cmd": "read", "engine": engine, "warehouse": wh_ours, "table": "db.mix",
                 "filter": [f]})
    # Java writes the same tables (we read them afterwards)
    for table, writes in inputs.items():
        base = {"engine": "java", "warehouse": wh_java, "table": table}
        add("java", f"create-{table}", {"cmd": "create", **base,
                                        "schema": str(root / "inputs" / f"{table}.schema.json")})
        for k, (path, kind) in enumerate(writes):
            add("java", f"write-{table}-{k}", {"cmd": "write", **base, "input": path,
                                               **({"kind": KIND} if kind else {})})
    # Java appends to and compacts our pk table, and its twin written by Java only;
    # everyone reads them after each step
    twin = {"engine": "java", "warehouse": wh_twin, "table": "db.pk"}
    add("java", "twin-create", {"cmd": "create", **twin,
                                "schema": str(root / "inputs" / "db.pk.schema.json")})
    for k, (path, _) in enumerate(inputs["db.pk"]):
        add("java", f"twin-write-{k}", {"cmd": "write", **twin, "input": path, "kind": KIND})
    add("java", "twin-pypaimon", {"cmd": "read", **twin, "engine": "pypaimon",
                                  "pypaimon_compat": True})
    path = write_rows(root / "inputs" / "pk-java.jsonl", _with_kind(PK_JAVA_APPEND))
    for step, cmd in (("append", {"cmd": "write", "input": path, "kind": KIND}),
                      ("compact", {"cmd": "compact"})):
        for prefix, wh in (("after", wh_after), ("twin", wh_twin)):
            on = {"warehouse": wh, "table": "db.pk"}
            add("java", f"{prefix}-{step}", {**cmd, "engine": "java", **on})
            add("java", f"{prefix}-{step}-java", {"cmd": "read", "engine": "java", **on})
            add("java", f"{prefix}-{step}-pypaimon", {"cmd": "read", "engine": "pypaimon", **on,
                                                      "pypaimon_compat": True})
    results = orc.run_batches({b: [c for _, c in cmds] for b, cmds in plan.items()}, root)
    records = {}
    for name, r in results.items():
        for rec in r.records:
            records[plan[name][rec["i"] - 1][0]] = rec
    yield Built(root, records, wh_ours, wh_java, wh_after)


def _ours(wh: str, table: str, *filters: str) -> list[str]:
    argv = ["read", "--warehouse", wh, "--table", table]
    for f in filters:
        argv += ["--filter", f]
    return cli_ok(argv)


def _ok(built: Built, key: str) -> None:
    rec = built.records[key]
    assert rec.get("status") == "ok", f"oracle command {key}: {rec.get('error')}"


EXPECTED = {
    "db.mix": lines(MIX_EXPECTED),
    "db.bulk": lines(BULK_ROWS),
    "db.pk": _pk_expected(*PK_STEPS),
}


@pytest.mark.parametrize("table", TABLES)
def test_java_and_pypaimon_read_our_table(built: Built, table: str) -> None:
    want = EXPECTED[table]
    assert _ours(built.wh_ours, table) == want
    assert built.out(f"java-{table}") == want
    if table == "db.pk":  # pypaimon 2.1 misreads it (PYPAIMON_PK): as it misreads Java's
        assert built.out("pypaimon-db.pk") == built.out("twin-pypaimon")
        assert built.out("pypaimon-db.pk") != want  # (the day pypaimon reads it right)
    else:
        assert built.out(f"pypaimon-{table}") == want


@pytest.mark.parametrize("i", range(len(MIX_FILTERS)))
def test_filtered_reads_of_our_table(built: Built, i: int) -> None:
    f, ids = list(MIX_FILTERS.items())[i]
    want = lines([r for r in MIX_EXPECTED if r["id"] in ids])
    assert _ours(built.wh_ours, "db.mix", f) == want
    assert built.out(f"java-db.mix-f{i}") == want
    assert built.out(f"pypaimon-db.mix-f{i}") == want


@pytest.mark.parametrize("table", TABLES)
def test_we_read_the_table_java_wrote(built: Built, table: str) -> None:
    for key in built.records:
        if key.startswith((f"create-{table}", f"write-{table}-")):
            _ok(built, key)
    assert _ours(built.wh_java, table) == EXPECTED[table]


def test_java_appends_to_and_compacts_our_pk_table(built: Built) -> None:
    want = _pk_expected(*PK_STEPS, PK_JAVA_APPEND)
    for key in built.records:
        if key.startswith(("twin-create", "twin-write-")):
            _ok(built, key)
    for step in ("append", "compact"):
        _ok(built, f"after-{step}")
        _ok(built, f"twin-{step}")
        assert built.out(f"after-{step}-java") == want, step
        assert built.out(f"twin-{step}-java") == want, step
        assert built.out(f"after-{step}-pypaimon") == built.out(f"twin-{step}-pypaimon"), step
    assert _ours(built.wh_after, "db.pk") == want
    table = FileSystemCatalog(built.wh_after).get_table("db.pk")
    report = fsck(table)
    assert report.ok, report
