"""Writers that compact by themselves after every commit, as Java's do (``needLookup``:
``merge-engine=first-row``, ``changelog-producer=lookup``, ``force-lookup``), against Paimon
Java 0.9 and pypaimon 2.1 (the oracle).

Readers of first-row tables skip level 0, so a first-row table is readable at every snapshot
only because the writer pushes level 0 up after each commit (``ForceUpLevel0Compaction``,
``FirstRowMergeFunctionWrapper``: a key already on a level above is dropped, with the lookup
producer a new key is a ``+I``). Two directions:

* **ours -> them**: the same 4 commits (duplicate keys within and across commits) written by
  OUR writer into our table (``paimon write``) and by Java into its own. At every snapshot of
  our table (APPEND and COMPACT of each commit): Java's read, pypaimon's read and ours are the
  same lines, equal to the first-row model written by hand (an APPEND snapshot shows the state
  before its commit: level 0 is invisible) and to Java's read of its own table at the same
  snapshot. The snapshot lists agree (kinds, record counts, changelog counts), and with
  ``changelog-producer=lookup`` the changelog of every snapshot (Java's stream read of our
  table) equals the changelog Java produced for the same commits, and our own stream read.
* **Java -> ours**: Java writes a first-row (lookup) table, our writer appends commits with
  old and new keys, Java and we read every snapshot identically (= the model) and the
  changelog of our commits is ``+I`` for the new keys only.

Two oracle batches (one JVM each); the first runs while we write our tables.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.compact.manager import live_bucket_files
from paimon_core.fsck import fsck
from tests.interop import oracle as orc
from tests.interop.ours import cli, jsonl
from tests.interop.test_read_interop import assert_same_lines

pytestmark = pytest.mark.oracle

KIND = "_k"
FIELDS = [{"name": "pt", "type": "STRING NOT NULL"}, {"name": "id", "type": "INT NOT NULL"},
          {"name": "v", "type": "STRING"}, {"name": "n", "type": "BIGINT"}]
COMMITS = 4
# not the record counts: they follow the file layout, which may differ where the picker's
# size ratio is borderline (our Parquet files are not byte-identical to Java's)
SNAP_KEYS = ("id", "commit_kind", "changelog_record_count", "has_changelog_manifest")


@dataclass(frozen=True)
class Case:
    name: str
    options: dict[str, str]
    kinds: tuple[str, ...] = ("+I",)  # row kinds drawn for the inputs
    first_row: bool = True  # the model is first-row (else: only compared with Java)
    pypaimon: bool = True  # pypaimon 2.1 reads such tables as Java does

    def schema(self) -> dict[str, Any]:
        return {"fields": FIELDS, "partition_keys": ["pt"], "primary_keys": ["pt", "id"],
                "options": {"bucket": "2", **self.options}}

    @property
    def lookup(self) -> bool:
        return self.options.get("changelog-producer") == "lookup"


CASES = [
    Case("fr", {"merge-engine": "first-row"}),
    Case("fr_lookup", {"merge-engine": "first-row", "changelog-producer": "lookup"},
         kinds=("+I", "+I", "+U")),
    # retractions are dropped by the writer (TableWriteImpl), +U counts as an insert
    Case("fr_ignore", {"merge-engine": "first-row", "first-row.ignore-delete": "true"},
         kinds=("+I", "+U", "-D", "-U")),
    # force-lookup: Java's writer pushes level 0 up at every commit too, merging it with the
    # record above (LookupMergeFunction); pypaimon 2.1 merges the levels of such a table
    # without the lookup rule (it adds the upper record to the one that already includes it)
    Case("agg_force_lookup", {"merge-engine": "aggregation", "force-lookup": "true",
                              "fields.n.aggregate-function": "sum"},
         first_row=False, pypaimon=False),
    # the lookup producer with deduplicate + sequence.field: level-0 files are rewritten on
    # their way up (a newer sequence value may sit above)
    Case("dedup_seq_lookup", {"changelog-producer": "lookup", "sequence.field": "n"},
         kinds=("+I", "+U", "-D"), first_row=False),
]
JAVA_TO_OURS = Case("j_first", {"merge-engine": "first-row", "changelog-producer": "lookup"})


def batch_rows(rng: random.Random, k: int, case: Case, ids: range) -> list[dict[str, Any]]:
    """14 rows over 2 partitions x ``ids``, drawn with replacement: duplicate keys inside the
    commit; every row has its own ``v`` so the surviving row can be told apart."""
    out = []
    for j in range(14):
        row: dict[str, Any] = {"pt": rng.choice(["a", "b"]), "id": rng.choice(list(ids)),
                               "v": f"{case.name}-c{k}-r{j}", "n": rng.randrange(1000)}
        kind = rng.choice(case.kinds)
        if kind != "+I":
            row[KIND] = kind
        out.append(row)
    return out


@dataclass
class Model:
    """First-row state: the first add of every key (retractions ignored: ``ignore-delete``,
    and the writer refuses them otherwise)."""

    rows: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)

    def apply(self, batch: list[dict[str, Any]]) -> set[tuple[str, int]]:
        new = set()
        for r in batch:
            if r.get(KIND, "+I") not in ("+I", "+U"):
                continue
            key = (r["pt"], r["id"])
            if key not in self.rows:
                self.rows[key] = {c: r[c] for c in ("pt", "id", "v", "n")}
                new.add(key)
        return new

    def sorted_rows(self) -> list[dict[str, Any]]:
        return [self.rows[k] for k in sorted(self.rows)]


class Script:
    """Oracle commands; read-like ones write to ``out/<key>.jsonl``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cmds: list[dict[str, Any]] = []
        self.keys: list[str] = []

    def add(self, key: str, **cmd: Any) -> None:
        c = {"engine": "java", **cmd}
        if c["cmd"] in ("read", "incremental", "snapshots"):
            c["output"] = str(self.root / "out" / f"{key}.jsonl")
        if c["engine"] == "pypaimon":
            c["pypaimon_compat"] = True  # Java 0.9 manifests (no _VALUE_STATS_COLS)
        self.cmds.append(c)
        self.keys.append(key)


def run(scripts: dict[str, Script], root: Path) -> dict[str, dict[str, Any]]:
    results = orc.run_batches({n: s.cmds for n, s in scripts.items()}, root)
    records = {}
    for name, r in results.items():
        for rec in r.records:
            records[scripts[name].keys[rec["i"] - 1]] = rec
    return records


@dataclass
class Step:
    """One commit of ours: its input, the snapshots it made and the model after it."""

    rows: list[dict[str, Any]]
    snapshots: list[int]
    before: list[dict[str, Any]]
    after: list[dict[str, Any]]
    new_keys: set[tuple[str, int]]


@dataclass
class Built:
    root: Path
    records: dict[str, dict[str, Any]]
    steps: dict[str, list[Step]]  # case -> our commits
    java_snapshots: dict[str, list[list[int]]]  # case -> Java's snapshots per commit
    java_first: int  # the last snapshot Java wrote into the Java -> ours table

    def lines(self, key: str) -> list[str]:
        rec = self.records.get(key)
        if rec is None or rec.get("status") != "ok":
            raise AssertionError(f"oracle command {key}: {rec}")
        return (self.root / "out" / f"{key}.jsonl").read_text("utf-8").splitlines()


def our_snapshots(wh: str, table: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in cli(["snapshots", "--warehouse", wh, "--table", table])]


def write_ours(root: Path, wh: str, inputs: dict[str, list[list[dict[str, Any]]]]
               ) -> dict[str, list[Step]]:
    """Our tables: one ``paimon write`` per commit."""
    steps: dict[str, list[Step]] = {}
    for c in CASES:
        path = root / "in" / f"{c.name}.schema.json"
        cli(["create", "--warehouse", wh, "--table", f"db.{c.name}", "--schema", str(path)])
        model = Model()
        steps[c.name] = []
        for k, batch in enumerate(inputs[c.name]):
            before = model.sorted_rows()
            new = model.apply(batch)
            out = json.loads(cli([
                "write", "--warehouse", wh, "--table", f"db.{c.name}", "--kind", KIND,
                "--commit-user", "ours", "--input",
                jsonl(root / "in" / f"{c.name}-ours-{k}.jsonl", batch)])[0])
            steps[c.name].append(Step(batch, out["snapshots"], before, model.sorted_rows(), new))
    return steps


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    orc.ensure_ready()
    root = tmp_path_factory.mktemp("first-row-interop")
    for sub in ("in", "out"):
        (root / sub).mkdir()
    wh_o, wh_j = str(root / "wh-ours"), str(root / "wh-java")
    rng = random.Random(2024)
    inputs: dict[str, list[list[dict[str, Any]]]] = {
        c.name: [batch_rows(rng, k, c, range(8 + 2 * k)) for k in range(COMMITS)]
        for c in CASES}

    # ---- batch 1 (background): Java writes the same commits into its tables, and the
    # first two commits of the Java -> ours table
    s1 = Script(root)
    for c in [*CASES, JAVA_TO_OURS]:
        path = root / "in" / f"{c.name}.schema.json"
        path.write_text(json.dumps(c.schema()), "utf-8")
        s1.add(f"{c.name}-create", cmd="create", warehouse=wh_j, table=f"db.{c.name}",
               schema=str(path))
    for c in CASES:
        for k, batch in enumerate(inputs[c.name]):
            s1.add(f"{c.name}-w{k}", cmd="write", warehouse=wh_j, table=f"db.{c.name}",
                   kind=KIND, input=jsonl(root / "in" / f"{c.name}-java-{k}.jsonl", batch))
            s1.add(f"{c.name}-java-snapshots-{k}", cmd="snapshots", warehouse=wh_j,
                   table=f"db.{c.name}")
    j_inputs = [batch_rows(rng, k, JAVA_TO_OURS, range(8 + 2 * k)) for k in range(4)]
    for k in range(2):
        s1.add(f"j_first-w{k}", cmd="write", warehouse=wh_j, table="db.j_first", kind=KIND,
               input=jsonl(root / "in" / f"j_first-{k}.jsonl", j_inputs[k]))
    batch1 = orc.Batch("first-row-1", s1.cmds, root)

    # ---- meanwhile: our writer, one `paimon write` per commit
    try:
        steps = write_ours(root, wh_o, inputs)
    except BaseException:
        batch1.proc.kill()
        batch1.wait()
        raise
    r1 = batch1.wait()
    records = {s1.keys[rec["i"] - 1]: rec for rec in r1.records}
    for key, rec in records.items():
        if rec.get("status") != "ok" and not key.startswith(tuple(f"{c.name}-" for c in CASES)):
            raise orc.OracleError(f"oracle command {key} failed: {rec}")

    # Java's snapshots of each commit (from its listings after every write)
    java_snapshots: dict[str, list[list[int]]] = {}
    for c in CASES:
        per_commit, last = [], 0
        for k in range(COMMITS):
            key = f"{c.name}-java-snapshots-{k}"
            if records.get(key, {}).get("status") != "ok":
                break
            ids = [json.loads(x)["id"] for x in
                   (root / "out" / f"{key}.jsonl").read_text("utf-8").splitlines()]
            per_commit.append([i for i in ids if i > last])
            last = max(ids)
        java_snapshots[c.name] = per_commit

    # ---- Java -> ours: we append two commits to the table Java wrote
    j_model = Model()
    j_steps: list[Step] = []
    for batch in j_inputs[:2]:
        j_model.apply(batch)
    java_first = max(json.loads(x)["id"] for x in cli(
        ["snapshots", "--warehouse", wh_j, "--table", "db.j_first"]))
    for k in (2, 3):
        before = j_model.sorted_rows()
        new = j_model.apply(j_inputs[k])
        out = json.loads(cli([
            "write", "--warehouse", wh_j, "--table", "db.j_first", "--kind", KIND,
            "--commit-user", "ours", "--input",
            jsonl(root / "in" / f"j_first-{k}.jsonl", j_inputs[k])])[0])
        j_steps.append(Step(j_inputs[k], out["snapshots"], before, j_model.sorted_rows(), new))
    steps["j_first"] = j_steps

    # ---- batch 2: Java and pypaimon read our tables at every snapshot; Java reads its own
    # tables at every snapshot; stream reads (changelog) of both
    s2 = Script(root)
    for c in CASES:
        snaps = [s for st in steps[c.name] for s in st.snapshots]
        java_ids = [s for ids in java_snapshots[c.name] for s in ids]
        for sid in snaps:
            s2.add(f"{c.name}-ours-java-{sid}", cmd="read", warehouse=wh_o,
                   table=f"db.{c.name}", snapshot=sid)
            s2.add(f"{c.name}-ours-pypaimon-{sid}", cmd="read", warehouse=wh_o,
                   table=f"db.{c.name}", snapshot=sid, engine="pypaimon")
            if c.lookup:
                s2.add(f"{c.name}-ours-inc-{sid}", cmd="incremental", warehouse=wh_o,
                       table=f"db.{c.name}", **{"from": sid - 1, "to": sid, "mode": "stream"})
        for sid in java_ids:
            s2.add(f"{c.name}-java-java-{sid}", cmd="read", warehouse=wh_j,
                   table=f"db.{c.name}", snapshot=sid)
            s2.add(f"{c.name}-java-pypaimon-{sid}", cmd="read", warehouse=wh_j,
                   table=f"db.{c.name}", snapshot=sid, engine="pypaimon")
            if c.lookup:
                s2.add(f"{c.name}-java-inc-{sid}", cmd="incremental", warehouse=wh_j,
                       table=f"db.{c.name}", **{"from": sid - 1, "to": sid, "mode": "stream"})
        s2.add(f"{c.name}-ours-snapshots", cmd="snapshots", warehouse=wh_o,
               table=f"db.{c.name}")
        s2.add(f"{c.name}-java-snapshots", cmd="snapshots", warehouse=wh_j,
               table=f"db.{c.name}")
    for sid in range(1, max(j_steps[-1].snapshots) + 1):
        s2.add(f"j_first-java-{sid}", cmd="read", warehouse=wh_j, table="db.j_first",
               snapshot=sid)
        if sid > java_first:
            s2.add(f"j_first-inc-{sid}", cmd="incremental", warehouse=wh_j, table="db.j_first",
                   **{"from": sid - 1, "to": sid, "mode": "stream"})
    records.update(run({"first-row-2": s2}, root))
    yield Built(root, records, steps, java_snapshots, java_first)


def our_read(wh: Path, table: str, sid: int) -> list[str]:
    return cli(["read", "--warehouse", str(wh), "--table", table, "--snapshot", str(sid)])


def rows_at(wh: Path, table: str, sid: int) -> list[dict[str, Any]]:
    t = FileSystemCatalog(str(wh)).get_table(table)
    return sorted(t.to_arrow(snapshot_id=sid).to_pylist(), key=lambda r: (r["pt"], r["id"]))


def check_java_write(built: Built, case: Case) -> None:
    for k in range(COMMITS):
        rec = built.records.get(f"{case.name}-w{k}")
        if rec is None or rec.get("status") != "ok":
            pytest.fail(f"Java's write {k} of {case.name} failed: {rec}", pytrace=False)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_our_writer_every_snapshot(built: Built, case: Case) -> None:
    check_java_write(built, case)
    wh = built.root / "wh-ours"
    table = f"db.{case.name}"
    steps = built.steps[case.name]
    java = built.java_snapshots[case.name]
    # like Java's writer: every commit is an APPEND and a COMPACT snapshot
    assert [len(s.snapshots) for s in steps] == [len(ids) for ids in java] == [2] * COMMITS
    for k, step in enumerate(steps):
        for sid, jid in zip(step.snapshots, java[k]):
            ours = our_read(wh, table, sid)
            what = f"{case.name} commit {k} snapshot {sid}"
            assert_same_lines(built.lines(f"{case.name}-ours-java-{sid}"), ours,
                              f"{what}: Java reads our table")
            assert_same_lines(built.lines(f"{case.name}-java-java-{jid}"), ours,
                              f"{what}: Java reads its own table (snapshot {jid})")
            if case.pypaimon:
                assert_same_lines(built.lines(f"{case.name}-ours-pypaimon-{sid}"), ours,
                                  f"{what}: pypaimon reads our table")
                assert_same_lines(built.lines(f"{case.name}-java-pypaimon-{jid}"), ours,
                                  f"{what}: pypaimon reads Java's table (snapshot {jid})")
            if case.first_row:  # level 0 is invisible: an APPEND shows the state before
                kind = FileSystemCatalog(str(wh)).get_table(table).snapshot_manager.snapshot(
                    sid).commit_kind.value
                want = step.after if kind == "COMPACT" else step.before
                assert rows_at(wh, table, sid) == want, f"{what} ({kind}): the model"
    t = FileSystemCatalog(str(wh)).get_table(table)
    levels = {f.level for _, files in live_bucket_files(t.manifest_io, t.latest_snapshot())
              .values() for f in files}
    assert 0 not in levels  # every commit pushed level 0 up
    assert fsck(t).ok
    if not case.pypaimon:  # the exclusion above still holds: pypaimon misreads Java's table
        assert any(built.lines(f"{case.name}-java-pypaimon-{jid}")
                   != built.lines(f"{case.name}-java-java-{jid}") for ids in java for jid in ids)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_snapshot_lists_equal_java(built: Built, case: Case) -> None:
    check_java_write(built, case)
    ours = [{k: json.loads(x)[k] for k in SNAP_KEYS}
            for x in built.lines(f"{case.name}-ours-snapshots")]
    java = [{k: json.loads(x)[k] for k in SNAP_KEYS}
            for x in built.lines(f"{case.name}-java-snapshots")]
    assert ours == java


@pytest.mark.parametrize("case", [c for c in CASES if c.lookup], ids=lambda c: c.name)
def test_changelog_equals_java(built: Built, case: Case) -> None:
    check_java_write(built, case)
    wh = built.root / "wh-ours"
    steps = built.steps[case.name]
    java = built.java_snapshots[case.name]
    seen_log = False
    for k, step in enumerate(steps):
        for sid, jid in zip(step.snapshots, java[k]):
            expected = built.lines(f"{case.name}-java-inc-{jid}")
            got = built.lines(f"{case.name}-ours-inc-{sid}")
            assert got == expected, (case.name, k, sid)
            mine = cli(["incremental", "--warehouse", str(wh), "--table", f"db.{case.name}",
                        "--from", str(sid - 1), "--to", str(sid)])
            assert sorted(mine) == expected, (case.name, k, sid)
            seen_log = seen_log or bool(expected)
        if not case.first_row:
            continue
        # the COMPACT snapshot of the commit: the first rows of the keys this commit added,
        # as written (+I, or +U: Java keeps the record's kind)
        log = [json.loads(x) for x in built.lines(f"{case.name}-ours-inc-{step.snapshots[-1]}")]
        first = {(r["pt"], r["id"]): r for r in reversed(step.rows)}
        assert sorted((x["_kind"], x["pt"], x["id"], x["v"]) for x in log) == sorted(
            (first[k].get(KIND, "+I"), *k, first[k]["v"]) for k in step.new_keys)
    assert seen_log


def test_we_append_to_javas_first_row_table(built: Built) -> None:
    for k in range(2):
        rec = built.records.get(f"j_first-w{k}")
        assert rec is not None and rec.get("status") == "ok", rec
    wh = built.root / "wh-java"
    steps = built.steps["j_first"]
    assert [len(s.snapshots) for s in steps] == [2, 2]
    last = max(steps[-1].snapshots)
    for sid in range(1, last + 1):
        ours = our_read(wh, "db.j_first", sid)
        assert_same_lines(built.lines(f"j_first-java-{sid}"), ours,
                          f"Java reads the Java+ours table at snapshot {sid}")
    for step in steps:
        append, compact = step.snapshots
        assert rows_at(wh, "db.j_first", append) == step.before
        assert rows_at(wh, "db.j_first", compact) == step.after
        old = {(r["pt"], r["id"]) for r in step.before}
        assert step.new_keys and any((r["pt"], r["id"]) in old for r in step.rows)
        assert built.lines(f"j_first-inc-{append}") == []  # level 0 gives no changelog
        log = [json.loads(x) for x in built.lines(f"j_first-inc-{compact}")]
        assert [x["_kind"] for x in log] == ["+I"] * len(step.new_keys)
        assert {(x["pt"], x["id"]) for x in log} == step.new_keys
        mine = cli(["incremental", "--warehouse", str(wh), "--table", "db.j_first",
                    "--from", str(compact - 1), "--to", str(compact)])
        assert sorted(mine) == built.lines(f"j_first-inc-{compact}")
    assert fsck(FileSystemCatalog(str(wh)).get_table("db.j_first")).ok
