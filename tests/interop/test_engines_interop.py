"""Interop of the merge engines with Paimon Java 0.9 (the oracle).

For every case (an engine and some options) the same 3-4 commits, with row kinds, are
written twice: by Java 0.9 into its table (``oracle write --kind``) and by OUR writer into
ours (``paimon write --kind``). After every step:

* Java reads its own table: the expected rows;
* we read Java's table (at the snapshot of that step) -> the same rows;
* Java reads OUR table (at the snapshot of that step) -> the same rows;
* we read our own table -> the same rows.

The aggregation case has a Java full compaction in the middle (of Java's table and of ours,
then both get two more commits). The first-row case: both writers compact (lookup) at every
commit (readers see levels >= 1 only; ``tests/interop/test_first_row_interop.py`` goes
further). All Java work runs in two oracle batches (one JVM each).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.interop import oracle as orc
from tests.interop.oracle import command_output
from tests.interop.ours import cli
from tests.interop.ours import jsonl as _jsonl
from tests.interop.test_read_interop import assert_same_lines

pytestmark = pytest.mark.oracle

K = "_k"  # the row-kind column of the inputs
COMPACT = "compact"


@dataclass(frozen=True)
class Case:
    name: str
    fields: list[tuple[str, str]]
    options: dict[str, str]
    steps: list[list[dict[str, Any]] | str]  # rows of a commit, or COMPACT (Java, full)
    ours: bool = True  # also written by our writer
    ours_xfail: str = ""  # a known problem of our side (outside the merge engines)

    @property
    def table(self) -> str:
        return f"db.{self.name}"

    def schema(self) -> dict[str, Any]:
        return {
            "fields": [{"name": n, "type": t} for n, t in self.fields],
            "partition_keys": ["pt"],
            "primary_keys": ["pt", "id"],
            "options": {"bucket": "2", **self.options},
        }


def _rows(names: str, *rows: tuple[Any, ...]) -> list[dict[str, Any]]:
    cols = names.split()
    return [dict(zip(cols, r)) for r in rows]


CASES = [
    Case(
        "dedup_seq",
        [("pt", "STRING"), ("id", "INT"), ("ts", "BIGINT"), ("v", "STRING")],
        {"merge-engine": "deduplicate", "sequence.field": "ts"},
        [
            _rows("pt id ts v _k", ("a", 1, 10, "a1", None), ("a", 2, 5, "a2", "+I"),
                  ("b", 1, None, "b1", None), ("b", 2, 7, "b2", None), ("a", 3, 1, "a3", None)),
            _rows("pt id ts v _k", ("a", 1, 5, "older", "+U"), ("a", 2, 5, "tie", "+U"),
                  ("b", 1, 0, "b1new", "+U"), ("a", 3, 2, "a3", "-D")),
            _rows("pt id ts v _k", ("b", 2, 3, "b2", "-D"), ("a", 3, 0, "again", "+I"),
                  ("a", 4, None, "n1", None), ("a", 4, None, "n2", None)),
            _rows("pt id ts v _k", ("b", 1, None, "null loses", "+U"), ("b", 3, 1, "b3", None)),
        ],
    ),
    Case(
        # a delete wins over an older insert arriving after it only while the delete record
        # exists: a full compaction drops it (no tombstone at the highest level), then an older
        # insert is live again (mart.orders_enriched follows the source in this; README)
        "dedup_seq_tombstone",
        [("pt", "STRING"), ("id", "INT"), ("ts", "BIGINT"), ("v", "STRING")],
        {"merge-engine": "deduplicate", "sequence.field": "ts"},
        [
            _rows("pt id ts v _k", ("a", 1, 100, "v1", "+I"), ("a", 2, 100, "v2", "+I")),
            _rows("pt id ts v _k", ("a", 1, 300, "v1", "-D"), ("a", 2, 50, "older", "+U")),
            _rows("pt id ts v _k", ("a", 1, 150, "late", "+I"), ("a", 3, 1, "v3", "+I")),
            COMPACT,
            _rows("pt id ts v _k", ("a", 1, 120, "later", "+I")),
        ],
    ),
    Case(
        "partial_update",
        [("pt", "STRING"), ("id", "INT"), ("a", "BIGINT"), ("b", "STRING"), ("c", "DOUBLE")],
        {"merge-engine": "partial-update", "partial-update.ignore-delete": "true"},
        [
            _rows("pt id a b c _k", ("a", 1, 1, None, None, None), ("a", 2, None, "x", 1.5, None),
                  ("b", 1, 3, "y", None, None)),
            _rows("pt id a b c _k", ("a", 1, None, "p", None, None), ("a", 2, 7, None, None, "+U"),
                  ("b", 1, None, None, 2.5, None), ("a", 1, None, None, 0.25, None)),
            _rows("pt id a b c _k", ("a", 1, 1, "p", 0.25, "-D"), ("a", 2, 8, "z", None, "+U"),
                  ("b", 2, None, None, 9.0, None)),
            _rows("pt id a b c _k", ("a", 1, None, "q", None, "-U"), ("b", 2, 5, None, None, None)),
        ],
    ),
    Case(
        "partial_update_remove",
        [("pt", "STRING"), ("id", "INT"), ("a", "BIGINT"), ("b", "STRING"), ("c", "DOUBLE")],
        {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
        [
            _rows("pt id a b c _k", ("a", 1, 1, "x", 1.0, None), ("a", 2, 2, "y", None, None),
                  ("b", 1, 3, None, 3.0, None)),
            _rows("pt id a b c _k", ("a", 1, None, "x2", None, None), ("a", 2, 2, "y", None, "-D"),
                  ("b", 1, 3, None, 3.0, "-U")),
            # inserted and deleted in one commit: Java writes nothing, we write the -D
            _rows("pt id a b c _k", ("b", 1, None, None, 4.0, None), ("a", 3, 5, "n", None, None),
                  ("a", 3, 5, "n", None, "-D")),
            _rows("pt id a b c _k", ("a", 1, 1, "x2", 1.0, "-D"), ("b", 2, 6, "m", None, None)),
        ],
    ),
    Case(
        "partial_update_groups",
        [("pt", "STRING"), ("id", "INT"), ("g1", "INT"), ("a", "BIGINT"), ("b", "STRING"),
         ("g2", "INT"), ("c", "BIGINT"), ("d", "STRING")],
        {"merge-engine": "partial-update", "fields.g1.sequence-group": "a,b",
         "fields.g2.sequence-group": "c", "fields.c.aggregate-function": "sum"},
        [
            _rows("pt id g1 a b g2 c d _k", ("a", 1, 1, 10, "x", 1, 5, "d1", None),
                  ("a", 2, 2, 20, "y", None, None, None, None)),
            _rows("pt id g1 a b g2 c d _k", ("a", 1, 0, 99, "old", 2, 3, None, None),
                  ("a", 2, None, 1, "ignored", 1, 4, "d2", None)),
            _rows("pt id g1 a b g2 c d _k", ("a", 1, 3, None, None, None, None, None, "-U"),
                  ("a", 2, 2, 20, "y", 0, 1, None, "-D")),
            _rows("pt id g1 a b g2 c d _k", ("a", 1, 4, 40, "new", None, None, "d4", None),
                  ("b", 1, 1, 1, "b", 1, 1, None, None)),
        ],
    ),
    Case(
        "aggregation",
        [("pt", "STRING"), ("id", "INT"), ("i", "INT"), ("l", "BIGINT"), ("d", "DOUBLE"),
         ("dec", "DECIMAL(20, 2)"), ("mx", "INT"), ("mn", "STRING"), ("lv", "STRING"),
         ("lnn", "STRING"), ("fv", "STRING"), ("fnn", "INT"), ("la", "STRING"),
         ("ba", "BOOLEAN"), ("bo", "BOOLEAN")],
        {"merge-engine": "aggregation",
         "fields.i.aggregate-function": "sum", "fields.l.aggregate-function": "product",
         "fields.d.aggregate-function": "sum", "fields.dec.aggregate-function": "sum",
         "fields.mx.aggregate-function": "max", "fields.mx.ignore-retract": "true",
         "fields.mn.aggregate-function": "min", "fields.mn.ignore-retract": "true",
         "fields.lv.aggregate-function": "last_value",
         "fields.fv.aggregate-function": "first_value", "fields.fv.ignore-retract": "true",
         "fields.fnn.aggregate-function": "first_non_null_value",
         "fields.fnn.ignore-retract": "true",
         "fields.la.aggregate-function": "listagg", "fields.la.list-agg-delimiter": "|",
         "fields.la.ignore-retract": "true",
         "fields.ba.aggregate-function": "bool_and", "fields.ba.ignore-retract": "true",
         "fields.bo.aggregate-function": "bool_or", "fields.bo.ignore-retract": "true"},
        [
            _rows("pt id i l d dec mx mn lv lnn fv fnn la ba bo _k",
                  ("a", 1, 1, 2, 0.5, "1.25", 3, "m", "v1", "n1", "f1", None, "x", True, False,
                   None),
                  ("a", 1, 2, 3, 0.25, "2.50", 1, "a", None, None, "f2", 7, "y", True, False,
                   None),
                  ("b", 2, 5, 5, 1.0, "0.01", None, None, "v", "n", None, None, None, None, True,
                   None)),
            _rows("pt id i l d dec mx mn lv lnn fv fnn la ba bo _k",
                  ("a", 1, 1, 3, 0.5, "1.25", 100, "0", "v1", "n1", "zz", 1, "q", False, True,
                   "-U"),
                  ("a", 1, 10, 4, 0.125, "0.75", 9, "b", "v3", None, "f3", 8, "z", False, False,
                   "+U"),
                  ("b", 2, 1, 2, 2.0, "0.02", 4, "k", None, "n2", "g", 3, "w", True, None, None)),
            COMPACT,
            _rows("pt id i l d dec mx mn lv lnn fv fnn la ba bo _k",
                  ("a", 1, 3, 2, 1.5, "10.00", 2, "c", "v4", "n4", "f4", 9, "t", True, True,
                   None),
                  ("b", 2, 5, 5, 1.0, "0.01", None, None, "v", "n", None, None, None, None, True,
                   "-D"),
                  ("a", 2, 7, 7, 7.0, "7.00", 7, "s", "v", "n", "f", 7, "u", None, None, None)),
            _rows("pt id i l d dec mx mn lv lnn fv fnn la ba bo _k",
                  ("a", 2, 3, 7, 1.0, "1.00", 1, "r", None, None, "h", None, "v", False, None,
                   "-U"),
                  ("b", 3, 1, 1, 1.0, "1.00", 1, "x", "x", "x", "x", 1, "x", True, True, None)),
        ],
    ),
    Case(
        # lookup compaction at every commit leaves a key on several levels: of those only the
        # newest counts (LookupMergeFunction), or sums would be counted twice
        "aggregation_lookup",
        [("pt", "STRING"), ("id", "INT"), ("i", "BIGINT"), ("s", "STRING"), ("v", "STRING")],
        {"merge-engine": "aggregation", "changelog-producer": "lookup",
         "fields.i.aggregate-function": "sum", "fields.s.aggregate-function": "listagg",
         "fields.s.ignore-retract": "true"},
        [
            _rows("pt id i s v _k", ("a", 1, 1, "x", "v1", None), ("a", 2, 2, "y", None, None),
                  ("b", 1, 3, None, "w", None)),
            _rows("pt id i s v _k", ("a", 1, 10, "z", None, None), ("b", 1, 1, "q", "w2", "-U")),
            _rows("pt id i s v _k", ("a", 1, 100, "t", "v3", None), ("a", 2, 5, "u", "r", None)),
            _rows("pt id i s v _k", ("a", 1, 1000, None, None, "+U"), ("b", 2, 7, "n", "m", None)),
        ],
        ours_xfail="our lookup compaction merges without merge_records(primary_keys=...): the "
        "partition column pt is aggregated (last_non_null_value retracts it to null) where Java "
        "keeps primary-key columns (FieldPrimaryKeyAgg); compact/changelog.py "
        "KeyedRecords.merge must pass the table's primary keys",
    ),
    Case(
        "first_row",
        [("pt", "STRING"), ("id", "INT"), ("v", "STRING")],
        {"merge-engine": "first-row", "first-row.ignore-delete": "true"},
        [
            _rows("pt id v _k", ("a", 1, "first", None), ("a", 2, "x", None),
                  ("a", 1, "second", None)),
            _rows("pt id v _k", ("a", 1, "third", None), ("b", 1, "b", None), ("a", 2, "x", "-D")),
            _rows("pt id v _k", ("b", 1, "b2", "+U"), ("b", 2, "c", None)),
        ],
    ),
]


# ---------------------------------------------------------------------------------------------
# build


@dataclass
class Built:
    root: Path
    java_wh: str
    our_wh: str
    java_snaps: dict[tuple[str, int], int]  # (case, step) -> Java table's snapshot id
    our_snaps: dict[tuple[str, int], int]  # (case, step) -> our table's snapshot id
    our_errors: dict[str, str]  # case -> why our writer failed
    records: dict[str, dict[str, Any]]  # oracle status record per output key

    def out(self, key: str) -> list[str]:
        return command_output(self.root, self.records, key)


class _Batch:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.cmds: list[dict[str, Any]] = []
        self.keys: list[str] = []

    def add(self, key: str, cmd: dict[str, Any]) -> None:
        if cmd["cmd"] in ("read", "snapshots"):
            cmd = {**cmd, "output": str(self.root / "out" / f"{key}.jsonl")}
        self.cmds.append({"engine": "java", **cmd})
        self.keys.append(key)


def _run(batches: dict[str, _Batch], root: Path) -> dict[str, dict[str, Any]]:
    results = orc.run_batches({n: b.cmds for n, b in batches.items() if b.cmds}, root)
    records = {}
    for name, r in results.items():
        for rec in r.records:
            records[batches[name].keys[rec["i"] - 1]] = rec
    return records


def _our_step(case: Case, wh: str, k: int, rows: list[dict[str, Any]], root: Path) -> int:
    path = _jsonl(root / "in" / f"{case.name}-{k}.jsonl", rows)
    res = json.loads(cli(["write", "--warehouse", wh, "--table", case.table, "--input", path,
                          "--kind", K, "--commit-user", "ours"])[0])
    return int(res["snapshot"])


def _latest(wh: str, case: Case) -> int:
    lines = cli(["snapshots", "--warehouse", wh, "--table", case.table])
    return int(json.loads(lines[-1])["id"])


def build(root: Path) -> Built:
    for sub in ("in", "out", "wh-java", "wh-ours"):
        shutil.rmtree(root / sub, ignore_errors=True)
        (root / sub).mkdir(parents=True)
    java_wh, our_wh = str(root / "wh-java"), str(root / "wh-ours")
    first, second = _Batch(root), _Batch(root)
    our_snaps: dict[tuple[str, int], int] = {}
    our_errors: dict[str, str] = {}
    later: list[tuple[Case, int, list[dict[str, Any]]]] = []  # our steps after a Java compaction
    for case in CASES:
        schema = root / "in" / f"{case.name}.schema.json"
        schema.write_text(json.dumps(case.schema()), "utf-8")
        if case.ours:
            cli(["create", "--warehouse", our_wh, "--table", case.table, "--schema",
                 str(schema)])
        base = {"warehouse": java_wh, "table": case.table}
        first.add(f"{case.name}-create", {"cmd": "create", **base, "schema": str(schema)})
        compacted = False
        for k, step in enumerate(case.steps):
            # Java's table
            if step == COMPACT:
                first.add(f"{case.name}-{k}-op", {"cmd": "compact", **base})
            else:
                assert isinstance(step, list)
                first.add(f"{case.name}-{k}-op", {"cmd": "write", **base, "kind": K,
                                                  "input": _jsonl(root / "in" /
                                                                  f"{case.name}-{k}-java.jsonl",
                                                                  step)})
            first.add(f"{case.name}-{k}-java-java", {"cmd": "read", **base})
            first.add(f"{case.name}-{k}-snapshots", {"cmd": "snapshots", **base})
            # our table (a Java compaction of it splits our steps in two batches)
            if not case.ours:
                continue
            ob = {"warehouse": our_wh, "table": case.table}
            if step == COMPACT:
                first.add(f"{case.name}-{k}-ours-op", {"cmd": "compact", **ob})
                compacted = True
                continue
            assert isinstance(step, list)
            if compacted:
                later.append((case, k, step))
                continue
            if case.name in our_errors:
                continue
            try:
                our_snaps[(case.name, k)] = _our_step(case, our_wh, k, step, root)
            except orc.OracleError as e:
                our_errors[case.name] = str(e)
                continue
            first.add(f"{case.name}-{k}-java-ours",
                      {"cmd": "read", **ob, "snapshot": our_snaps[(case.name, k)]})
    records = _run({"first": first}, root)
    for case, k, step in later:
        for kk in range(k):  # the Java compaction of our table, if that was the step before
            if case.steps[kk] == COMPACT and (case.name, kk) not in our_snaps:
                our_snaps[(case.name, kk)] = _latest(our_wh, case)
                second.add(f"{case.name}-{kk}-java-ours", {"cmd": "read", "warehouse": our_wh,
                                                          "table": case.table,
                                                          "snapshot": our_snaps[(case.name, kk)]})
        our_snaps[(case.name, k)] = _our_step(case, our_wh, k, step, root)
        second.add(f"{case.name}-{k}-java-ours", {"cmd": "read", "warehouse": our_wh,
                                                 "table": case.table,
                                                 "snapshot": our_snaps[(case.name, k)]})
    records.update(_run({"second": second}, root))
    java_snaps = {}
    for case in CASES:
        for k in range(len(case.steps)):
            key = f"{case.name}-{k}-snapshots"
            if records.get(key, {}).get("status") == "ok":
                lines = (root / "out" / f"{key}.jsonl").read_text("utf-8").splitlines()
                java_snaps[(case.name, k)] = int(json.loads(lines[-1])["id"])
    return Built(root, java_wh, our_wh, java_snaps, our_snaps, our_errors, records)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    orc.ensure_ready()
    yield build(tmp_path_factory.mktemp("engines"))


# ---------------------------------------------------------------------------------------------
# tests

STEPS = [(c, k) for c in CASES for k in range(len(c.steps))]


def _read(wh: str, case: Case, snap: int) -> list[str]:
    return cli(["read", "--warehouse", wh, "--table", case.table, "--snapshot", str(snap)])


@pytest.mark.parametrize("case, step", STEPS, ids=[f"{c.name}-{k}" for c, k in STEPS])
def test_engine_step(case: Case, step: int, built: Built) -> None:
    for k in range(step + 1):  # every step before must have worked (error, not a skip)
        rec = built.records.get(f"{case.name}-{k}-op")
        if rec is None or rec.get("status") != "ok":
            pytest.fail(f"Java step {k} of {case.name} failed: {rec}", pytrace=False)
    expected = built.out(f"{case.name}-{step}-java-java")
    if not expected:
        pytest.fail(f"harness: Java's read of {case.name} after step {step} is empty",
                    pytrace=False)
    ours_of_java = _read(built.java_wh, case, built.java_snaps[(case.name, step)])
    assert_same_lines(ours_of_java, expected, f"{case.name} step {step}: we read Java's table")
    if not case.ours:
        return
    if case.name in built.our_errors:
        msg = f"our writer failed on {case.name}: {built.our_errors[case.name]}"
        if case.ours_xfail:
            pytest.xfail(f"{case.ours_xfail} ({msg[:300]})")
        pytest.fail(msg, pytrace=False)
    our_snap = built.our_snaps[(case.name, step)]
    assert_same_lines(built.out(f"{case.name}-{step}-java-ours"), expected,
                      f"{case.name} step {step}: Java reads our table")
    assert_same_lines(_read(built.our_wh, case, our_snap), expected,
                      f"{case.name} step {step}: we read our table")


def test_cases_change_something(built: Built) -> None:
    """Every step of every case changes Java's result (an inert step would test nothing)."""
    for case in CASES:
        prev: list[str] | None = None
        for k in range(len(case.steps)):
            lines = built.out(f"{case.name}-{k}-java-java")
            if case.steps[k] != COMPACT:
                assert lines != prev, f"{case.name}: step {k} changes nothing"
            else:
                assert lines == prev, f"{case.name}: the compaction changed the rows"
            prev = lines
