"""ORC data files (``file.format=orc``) both ways with Paimon Java 0.9 and pypaimon 2.1.

* ``all`` (append, ours, two commits): every Paimon type in ORC; Java and pypaimon read it,
  Java also with filters that its stats pruning decides on our manifest stats; Java writes
  the same table and we read it.
* ``pk`` (primary key, created and first written by Java with ``file.format=orc``): we
  upsert and delete, fully compact, write again and expire snapshots; Java reads every
  snapshot (before and after the expiry) as we do, pypaimon reads the latest; then Java
  appends to and compacts a copy, and Java, pypaimon and we read the result.
* ``mixed`` (primary key, ours): Parquet files, then ``alter --set-option file.format=orc``
  and ORC files in the same buckets; Java and pypaimon read it before and after our full
  compaction rewrites both into ORC.

Expected rows are written by hand (``_fix`` spells out each normalisation of the input).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.orc as paorc
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.fsck import fsck
from tests.interop import oracle as orc
from tests.interop.oracle import command_output, write_rows
from tests.interop.test_write_interop import cli_ok

pytestmark = pytest.mark.oracle

Row = dict[str, Any]
KIND = "_kind"


def canonical(obj: Row) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def lines(rows: list[Row]) -> list[str]:
    return sorted(canonical(r) for r in rows)


# ---------------------------------------------------------------------------------------------
# all: every type

ALL_FIELDS = [
    ("id", "INT"), ("ti", "TINYINT"), ("si", "SMALLINT"), ("bi", "BIGINT"), ("f", "FLOAT"),
    ("d", "DOUBLE"), ("dec", "DECIMAL(10, 2)"), ("dec38", "DECIMAL(38, 6)"), ("c", "CHAR(5)"),
    ("vc", "VARCHAR(10)"), ("s", "STRING"), ("b", "BOOLEAN"), ("bin", "BYTES"),
    ("vb", "VARBINARY(8)"), ("dt", "DATE"), ("tm", "TIME"), ("ts0", "TIMESTAMP(0)"),
    ("ts3", "TIMESTAMP(3)"), ("ts6", "TIMESTAMP(6)"), ("ts9", "TIMESTAMP(9)"),
    ("ltz3", "TIMESTAMP(3) WITH LOCAL TIME ZONE"), ("ltz9", "TIMESTAMP(9) WITH LOCAL TIME ZONE"),
    ("arr", "ARRAY<INT>"), ("arrts", "ARRAY<TIMESTAMP(6)>"), ("m", "MAP<STRING, TIME>"),
    ("r", "ROW<x INT, y TIMESTAMP(6), z ARRAY<STRING>>"),
]


def _all_row(i: int, **kw: Any) -> Row:
    return {"id": i, **{n: None for n, _ in ALL_FIELDS[1:]}, **kw}


# (input, fixes to the input in the canonical output)
ALL_COMMIT_1: list[tuple[Row, Row]] = [
    (_all_row(1, ti=-128, si=-32768, bi=-9223372036854775808, f=1.5, d=-2.25, dec="12.99",
              dec38="-123456789012.123456", c="ab", vc="hello", s="x", b=True, bin="AAE=",
              vb="/w==", dt="2024-02-29", tm="12:34:56", ts0="2024-02-29 12:34:56",
              ts3="2024-02-29 12:34:56.789", ts6="1969-12-31 23:59:59.999",
              ts9="2024-02-29 12:34:56.123456789", ltz3="2024-02-29 12:34:56.789+02:00",
              ltz9="1960-06-15 12:00:00.5Z", arr=[1, None], arrts=["2000-01-01 00:00:00.000001"],
              m={"a": "01:02:03"},
              r={"x": 1, "y": "2000-01-01 00:00:00.000001", "z": ["u", None]}),
     {"ltz3": "2024-02-29 10:34:56.789Z", "ltz9": "1960-06-15 12:00:00.500000000Z",
      "ts6": "1969-12-31 23:59:59.999000", "m": [["a", "01:02:03"]]}),
    (_all_row(2), {}),
    (_all_row(3, ti=127, si=32767, bi=9223372036854775807, f=-0.0, d=1e300, dec="-0.01",
              dec38="99999999999999999999999999999999.999999", c="", vc="", s="",
              b=False, bin="", vb="", dt="1900-01-01", tm="23:59:59", ts0="1900-01-01 00:00:00",
              ts3="1969-12-31 23:59:59.999", ts6="2262-04-11 23:47:16.854775",
              ts9="1970-01-01 00:00:00.000000001", ltz3="1970-01-01 00:00:00.000Z",
              ltz9="2100-01-01 00:00:00.999999999Z", arr=[], arrts=[None], m={},
              r={"x": None, "y": None, "z": []}),
     {"m": []}),
]
ALL_COMMIT_2: list[tuple[Row, Row]] = [
    (_all_row(4, bi=5, s="y", dt="2024-03-01", ts3="2030-01-01 00:00:00.000", dec="100.00",
              r={"x": 4, "y": None, "z": None}), {}),
    (_all_row(5, bi=6, s="x", dt="1969-12-31", ts3="1950-01-01 00:00:00.001", dec="0.00"), {}),
]


def _fix(pairs: list[tuple[Row, Row]]) -> list[Row]:
    out = []
    for row, fix in pairs:
        r = {**row, **fix}
        for n, t in ALL_FIELDS:  # canonical renderings of the precision
            v = r.get(n)
            if v is None:
                continue
            if t == "TIMESTAMP(0)":
                r[n] = v
            elif t.startswith("TIMESTAMP(") and n not in fix:
                p = int(t[len("TIMESTAMP("):t.index(")")])
                r[n] = _pad(v, p)
        out.append(r)
    return out


def _pad(v: str, p: int) -> str:
    """A timestamp literal written at precision ``p`` (``...Z`` kept at the end)."""
    z = v.endswith("Z")
    body = v[:-1] if z else v
    head, _, frac = body.partition(".")
    body = f"{head}.{frac.ljust(p, '0')}" if p else head
    return body + ("Z" if z else "")


ALL_EXPECTED = _fix(ALL_COMMIT_1 + ALL_COMMIT_2)
# filter -> ids it keeps (Java prunes files by our manifest stats, then filters rows)
ALL_FILTERS: dict[str, set[int]] = {
    "bi >= 5": {3, 4, 5},
    "s = 'y'": {4},
    "dt < '1970-01-01'": {3, 5},
    "ts3 > '2025-01-01 00:00:00'": {4},
    "dec >= 100": {4},
    "ltz9 IS NULL": {2, 4, 5},
}
# Java's own ORC files read back (by Java and by us) other than the input: a time in the last
# second before 1970 a second late (ORC Java truncates the seconds toward zero). Its CHAR
# values are stored padded (ORC's char(n)) and read trimmed, as the input.
JAVA_WROTE: dict[int, Row] = {
    1: {"ts6": "1970-01-01 00:00:00.999000"},
    3: {"ts3": "1970-01-01 00:00:00.999"},
}
ALL_SCHEMA = {"fields": [{"name": n, "type": t} for n, t in ALL_FIELDS],
              "options": {"bucket": "-1", "file.format": "orc"}}
# the same table in ORC's file version 0.11 (orc.write.format: integer run-length encoding v1)
ALL11_SCHEMA = {**ALL_SCHEMA, "options": {**ALL_SCHEMA["options"], "orc.write.format": "0.11"}}

# ---------------------------------------------------------------------------------------------
# pk: created and first written by Java; ours afterwards

PK_FIELDS = [("k", "INT NOT NULL"), ("v", "STRING"), ("amount", "DECIMAL(12, 2)"),
             ("ts", "TIMESTAMP(6)"), ("ltz", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
             ("tags", "ARRAY<STRING>"), ("r", "ROW<a INT, b DATE>")]
PK_SCHEMA = {"fields": [{"name": n, "type": t} for n, t in PK_FIELDS], "primary_keys": ["k"],
             "options": {"bucket": "2", "file.format": "orc"}}


def _pk(k: int, v: str, amount: str | None = "1.00") -> Row:
    return {"k": k, "v": v, "amount": amount, "ts": f"2024-01-0{1 + k % 9} 00:00:00.00000{k % 10}",
            "ltz": "1969-12-31 23:59:58.999Z", "tags": [v, None], "r": {"a": k, "b": "2024-02-29"}}


PK_JAVA_1 = [("+I", _pk(k, f"j{k}")) for k in range(1, 9)]
PK_OURS_2 = [("+U", _pk(2, "o2", "22.50")), ("-D", _pk(3, "j3")), ("+I", _pk(10, "o10", None))]
PK_OURS_3 = [("+U", _pk(1, "o1b")), ("+I", _pk(11, "o11")), ("-D", _pk(10, "o10", None))]
PK_JAVA_4 = [("-D", _pk(4, "j4")), ("+U", _pk(5, "j5b", "-5.55")), ("+I", _pk(12, "j12"))]


def _pk_expected(*steps: list[tuple[str, Row]]) -> list[str]:
    model: dict[int, Row] = {}
    for step in steps:
        for kind, row in step:
            if kind in ("-D", "-U"):
                model.pop(row["k"], None)
            else:
                model[row["k"]] = row
    return lines(list(model.values()))


# snapshot -> expected rows (1: Java's write, 2: ours, 3: our full compaction, 4: ours)
PK_SNAPSHOTS = {1: _pk_expected(PK_JAVA_1), 2: _pk_expected(PK_JAVA_1, PK_OURS_2),
                3: _pk_expected(PK_JAVA_1, PK_OURS_2),
                4: _pk_expected(PK_JAVA_1, PK_OURS_2, PK_OURS_3)}
PK_AFTER_JAVA = _pk_expected(PK_JAVA_1, PK_OURS_2, PK_OURS_3, PK_JAVA_4)

# ---------------------------------------------------------------------------------------------
# mixed: parquet files, then orc files (ALTER), one table

MIXED_SCHEMA = {"fields": [{"name": n, "type": t} for n, t in PK_FIELDS], "primary_keys": ["k"],
                "options": {"bucket": "1"}}
MIXED_1 = [("+I", _pk(k, f"p{k}")) for k in range(1, 6)]
MIXED_2 = [("+U", _pk(1, "orc1")), ("-D", _pk(2, "p2")), ("+I", _pk(6, "orc6"))]
MIXED_EXPECTED = _pk_expected(MIXED_1, MIXED_2)


@dataclass
class Built:
    root: Path
    records: dict[str, dict[str, Any]]
    wh_ours: str
    wh_java: str
    wh_before_expire: str
    wh_after_java: str

    def out(self, key: str) -> list[str]:
        return command_output(self.root, self.records, key)


def _kinds(steps: list[tuple[str, Row]]) -> list[Row]:
    return [{**row, KIND: kind} for kind, row in steps]


class Plan:
    """Oracle commands by batch, each under a key (its output file is ``out/<key>.jsonl``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cmds: dict[str, list[tuple[str, dict[str, Any]]]] = {}

    def add(self, batch: str, key: str, cmd: dict[str, Any]) -> None:
        if cmd["cmd"] == "read":
            cmd = {**cmd, "output": str(self.root / "out" / f"{key}.jsonl")}
            if cmd.get("engine") == "pypaimon":
                cmd["pypaimon_compat"] = True
        self.cmds.setdefault(batch, []).append((key, cmd))

    def run(self, phase: str) -> dict[str, dict[str, Any]]:
        results = orc.run_batches(
            {f"{phase}-{b}": [c for _, c in cmds] for b, cmds in self.cmds.items()}, self.root)
        records = {}
        for name, r in results.items():
            for rec in r.records:
                records[self.cmds[name.split("-", 1)[1]][rec["i"] - 1][0]] = rec
        self.cmds = {}
        return records


def _ours_write(wh: str, table: str, path: str, kind: bool = False) -> None:
    cli_ok(["write", "--warehouse", wh, "--table", table, "--input", path,
            *(["--kind", KIND] if kind else [])])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    orc.ensure_ready()
    root = tmp_path_factory.mktemp("orc-interop")
    (root / "out").mkdir()
    d = root / "inputs"
    d.mkdir()
    wh_ours, wh_java, wh_before, wh_after = (
        str(root / n) for n in ("wh-ours", "wh-java", "wh-before-expire", "wh-after-java"))
    schemas = {t: str(d / f"{t}.schema.json") for t in ("all", "all11", "pk", "mixed")}
    for t, s in (("all", ALL_SCHEMA), ("all11", ALL11_SCHEMA), ("pk", PK_SCHEMA),
                 ("mixed", MIXED_SCHEMA)):
        Path(schemas[t]).write_text(json.dumps(s), "utf-8")
    all_inputs = [write_rows(d / "all-1.jsonl", [r for r, _ in ALL_COMMIT_1]),
                  write_rows(d / "all-2.jsonl", [r for r, _ in ALL_COMMIT_2])]
    plan = Plan(root)
    # batch 1 (Java): the pk table created and first written by Java; Java's copy of `all`
    java_pk = {"engine": "java", "warehouse": wh_ours, "table": "db.pk"}
    plan.add("java", "pk-create", {"cmd": "create", **java_pk, "schema": schemas["pk"]})
    plan.add("java", "pk-write-1", {"cmd": "write", **java_pk, "kind": KIND,
                                    "input": write_rows(d / "pk-1.jsonl", _kinds(PK_JAVA_1))})
    java_all = {"engine": "java", "warehouse": wh_java, "table": "db.all"}
    plan.add("java", "all-create", {"cmd": "create", **java_all, "schema": schemas["all"]})
    for i, path in enumerate(all_inputs):
        plan.add("java", f"all-write-{i}", {"cmd": "write", **java_all, "input": path})
    records = plan.run("1")
    # ours: `all`; the pk table's next snapshots; `mixed`
    for t in ("all", "all11"):
        cli_ok(["create", "--warehouse", wh_ours, "--table", f"db.{t}", "--schema", schemas[t]])
        for path in all_inputs:
            _ours_write(wh_ours, f"db.{t}", path)
    if records["pk-write-1"].get("status") == "ok":
        _ours_write(wh_ours, "db.pk", write_rows(d / "pk-2.jsonl", _kinds(PK_OURS_2)), kind=True)
        cli_ok(["compact", "--warehouse", wh_ours, "--table", "db.pk"])
        _ours_write(wh_ours, "db.pk", write_rows(d / "pk-3.jsonl", _kinds(PK_OURS_3)), kind=True)
        shutil.copytree(wh_ours, wh_before)
        cli_ok(["expire", "--warehouse", wh_ours, "--table", "db.pk", "--retain-max", "2",
                "--retain-min", "1"])
        shutil.copytree(wh_ours, wh_after)
    cli_ok(["create", "--warehouse", wh_ours, "--table", "db.mixed", "--schema", schemas["mixed"]])
    _ours_write(wh_ours, "db.mixed", write_rows(d / "mixed-1.jsonl", _kinds(MIXED_1)), kind=True)
    cli_ok(["alter", "--warehouse", wh_ours, "--table", "db.mixed",
            "--set-option", "file.format=orc"])
    _ours_write(wh_ours, "db.mixed", write_rows(d / "mixed-2.jsonl", _kinds(MIXED_2)), kind=True)
    # batch 2: Java and pypaimon read all of it; Java appends to and compacts a copy of pk
    for engine in ("java", "pypaimon"):
        on = {"engine": engine, "warehouse": wh_ours}
        plan.add(engine, f"{engine}-all", {"cmd": "read", **on, "table": "db.all"})
        plan.add(engine, f"{engine}-all11", {"cmd": "read", **on, "table": "db.all11"})
        plan.add(engine, f"{engine}-pk", {"cmd": "read", **on, "table": "db.pk"})
        plan.add(engine, f"{engine}-mixed-2", {"cmd": "read", **on, "table": "db.mixed"})
    plan.add("java", "java-all-own", {"cmd": "read", "engine": "java", "warehouse": wh_java,
                                      "table": "db.all"})
    for i, f in enumerate(ALL_FILTERS):
        plan.add("java", f"java-all-f{i}", {"cmd": "read", "engine": "java",
                                            "warehouse": wh_ours, "table": "db.all",
                                            "filter": [f]})
    for sid in PK_SNAPSHOTS:
        for wh, tag in ((wh_before, "before"), (wh_ours, "after")):
            if tag == "after" and sid < 3:
                continue
            plan.add("java", f"java-pk-{tag}-{sid}", {"cmd": "read", "engine": "java",
                                                      "warehouse": wh, "table": "db.pk",
                                                      "snapshot": sid})
    after = {"warehouse": wh_after, "table": "db.pk"}
    plan.add("java", "after-append", {"cmd": "write", "engine": "java", **after, "kind": KIND,
                                      "input": write_rows(d / "pk-4.jsonl", _kinds(PK_JAVA_4))})
    plan.add("java", "after-compact", {"cmd": "compact", "engine": "java", **after})
    plan.add("java", "after-java", {"cmd": "read", "engine": "java", **after})
    records.update(plan.run("2"))
    # pypaimon after Java's append and compaction (batch 2's groups run side by side)
    plan.add("pypaimon", "after-pypaimon", {"cmd": "read", "engine": "pypaimon", **after})
    # our full compaction of `mixed` (parquet + orc -> orc); Java and pypaimon read it
    cli_ok(["compact", "--warehouse", wh_ours, "--table", "db.mixed"])
    for engine in ("java", "pypaimon"):
        plan.add(engine, f"{engine}-mixed-3", {"cmd": "read", "engine": engine,
                                               "warehouse": wh_ours, "table": "db.mixed"})
    records.update(plan.run("3"))
    yield Built(root, records, wh_ours, wh_java, wh_before, wh_after)


def _ours(wh: str, table: str, *args: str) -> list[str]:
    return cli_ok(["read", "--warehouse", wh, "--table", table, *args])


def _ok(built: Built, *keys: str) -> None:
    for key in keys:
        rec = built.records[key]
        assert rec.get("status") == "ok", f"oracle command {key}: {rec.get('error')}"


def _data_files(wh: str, table: str) -> set[str]:
    bucket_files = Path(wh, "db.db", table).glob("bucket-*/data-*")
    return {p.suffix for p in bucket_files}


def test_java_and_pypaimon_read_our_orc_table_of_every_type(built: Built) -> None:
    want = lines(ALL_EXPECTED)
    assert _data_files(built.wh_ours, "all") == {".orc"}
    assert _ours(built.wh_ours, "db.all") == want
    assert built.out("java-all") == want
    assert built.out("pypaimon-all") == want


def test_java_and_pypaimon_read_our_orc_0_11_files(built: Built) -> None:
    """orc.write.format=0.11 (run-length encoding v1, cheaper to write) reads alike."""
    want = lines(ALL_EXPECTED)
    files = list(Path(built.wh_ours, "db.db", "all11").glob("bucket-*/data-*.orc"))
    assert files and {paorc.ORCFile(str(f)).file_version for f in files} == {"0.11"}
    assert _ours(built.wh_ours, "db.all11") == want
    assert built.out("java-all11") == want
    assert built.out("pypaimon-all11") == want


@pytest.mark.parametrize("i", range(len(ALL_FILTERS)))
def test_java_filters_our_orc_table_by_its_stats(built: Built, i: int) -> None:
    f, ids = list(ALL_FILTERS.items())[i]
    want = lines([r for r in ALL_EXPECTED if r["id"] in ids])
    assert _ours(built.wh_ours, "db.all", "--filter", f) == want
    assert built.out(f"java-all-f{i}") == want


def test_we_read_the_orc_table_java_wrote(built: Built) -> None:
    _ok(built, "all-create", "all-write-0", "all-write-1")
    assert _data_files(built.wh_java, "all") == {".orc"}
    want = lines([{**r, **JAVA_WROTE.get(r["id"], {})} for r in ALL_EXPECTED])
    assert built.out("java-all-own") == want
    assert _ours(built.wh_java, "db.all") == want


def test_java_orc_table_written_compacted_expired_by_us(built: Built) -> None:
    _ok(built, "pk-create", "pk-write-1")
    for sid, want in PK_SNAPSHOTS.items():
        assert _ours(built.wh_before_expire, "db.pk", "--snapshot", str(sid)) == want, sid
        assert built.out(f"java-pk-before-{sid}") == want, sid
        if sid >= 3:
            assert _ours(built.wh_ours, "db.pk", "--snapshot", str(sid)) == want, sid
            assert built.out(f"java-pk-after-{sid}") == want, sid
    assert built.out("java-pk") == PK_SNAPSHOTS[4]
    assert built.out("pypaimon-pk") == PK_SNAPSHOTS[4]
    # the expiry removed snapshots 1 and 2 (and the files only they held)
    snaps = [json.loads(x)["id"] for x in
             cli_ok(["snapshots", "--warehouse", built.wh_ours, "--table", "db.pk"])]
    assert snaps == [3, 4]
    assert _data_files(built.wh_ours, "pk") == {".orc"}
    report = fsck(FileSystemCatalog(built.wh_ours).get_table("db.pk"))
    assert report.ok, report


def test_java_appends_to_and_compacts_our_orc_table(built: Built) -> None:
    _ok(built, "after-append", "after-compact")
    assert built.out("after-java") == PK_AFTER_JAVA
    assert built.out("after-pypaimon") == PK_AFTER_JAVA
    assert _ours(built.wh_after_java, "db.pk") == PK_AFTER_JAVA


def test_mixed_parquet_and_orc_table(built: Built) -> None:
    assert _formats(built.wh_ours, "db.mixed", "2") == {"parquet", "orc"}
    assert _ours(built.wh_ours, "db.mixed", "--snapshot", "2") == MIXED_EXPECTED
    assert built.out("java-mixed-2") == MIXED_EXPECTED
    assert built.out("pypaimon-mixed-2") == MIXED_EXPECTED
    # our full compaction (snapshot 3) rewrote both formats into orc files
    assert _ours(built.wh_ours, "db.mixed") == MIXED_EXPECTED
    assert built.out("java-mixed-3") == MIXED_EXPECTED
    assert built.out("pypaimon-mixed-3") == MIXED_EXPECTED
    assert _formats(built.wh_ours, "db.mixed", "3") == {"orc"}
    report = fsck(FileSystemCatalog(built.wh_ours).get_table("db.mixed"))
    assert report.ok, report


def _formats(wh: str, table: str, snapshot: str) -> set[str]:
    """The formats of the data files of a snapshot (``paimon inspect ... files``)."""
    rows = cli_ok(["inspect", "--warehouse", wh, "--table", table, "--snapshot", snapshot,
                   "files"])
    return {json.loads(r)["file_format"] for r in rows}
