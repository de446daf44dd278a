"""Deletion vectors WRITTEN by us, read by Paimon Java 0.9 and pypaimon 2.1 (the oracle).

One module fixture, two oracle batches (one JVM each):

* batch 1: Java creates ``dv_j`` (deduplicate) and ``pu_j`` (partial-update), both
  ``deletion-vectors.enabled=true`` with 2 buckets, and writes them (its own deletion vectors);
* ours, through the ``paimon`` CLI: updates and deletes into Java's ``dv_j`` (our writer loads
  Java's vectors and adds to them), a minor compaction, more writes and a full compaction;
  partial updates into ``pu_j``; and a table ``dv_o`` we create and write ourselves;
* batch 2: Java and pypaimon read EVERY snapshot of the three tables; then Java writes into
  ``dv_o`` (Java's writer loads OUR vectors) and compacts it fully;
* ours again: we read Java's result, write into ``dv_o`` once more and read it.

Checks: every engine's read of every snapshot equals ours, and the latest read after each of
our steps equals a model written by hand from the input rows; the index manifest changes only
with COMPACT snapshots, in Java's tables as in ours (``FileStoreCommitImpl``); each bucket has
at most one DV index file; our writes did add deletion vectors; a full compaction leaves no
deletion vector; fsck is clean.
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
from paimon_core.compact.deletion_vectors import dv_index_entries
from paimon_core.fsck import fsck
from paimon_core.spec.snapshot import CommitKind
from paimon_core.table import FileStoreTable
from tests.interop import oracle as orc
from tests.interop.ours import cli, jsonl

pytestmark = pytest.mark.oracle

KIND = "_k"
FIELDS = [{"name": "id", "type": "INT NOT NULL"}, {"name": "v", "type": "STRING"},
          {"name": "n", "type": "BIGINT"}]
TABLES = ("dv_j", "pu_j", "dv_o")


def schema(engine: str = "deduplicate") -> dict[str, Any]:
    return {"fields": FIELDS, "primary_keys": ["id"],
            "options": {"bucket": "2", "deletion-vectors.enabled": "true",
                        "merge-engine": engine}}


@dataclass
class Model:
    """The table's rows by key, written by hand from the input (deduplicate: the last row of
    a key wins, -U/-D remove it; partial-update: non-null fields overwrite)."""

    partial: bool = False
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)

    def apply(self, batch: list[dict[str, Any]]) -> None:
        for r in batch:
            row = {c: v for c, v in r.items() if c != KIND}
            if r.get(KIND, "+I") in ("-U", "-D"):
                self.rows.pop(r["id"], None)
            elif self.partial and r["id"] in self.rows:
                old = self.rows[r["id"]]
                self.rows[r["id"]] = {c: old[c] if v is None else v for c, v in row.items()}
            else:
                self.rows[r["id"]] = row

    def lines(self) -> list[str]:
        return sorted(json.dumps(r, sort_keys=True) for r in self.rows.values())


def mixed(rng: random.Random, n: int, tag: str, kinds: bool = True) -> list[dict[str, Any]]:
    ids = rng.sample(range(300), n)
    ks = rng.choices(["+I", "+U", "-D", "-U"], weights=[4, 3, 2, 1], k=n) if kinds else \
        ["+I"] * n
    return [{"id": i, "v": f"{tag}-{i}", "n": rng.randrange(10**6), KIND: k}
            for i, k in zip(ids, ks)]


def partial(rng: random.Random, n: int, tag: str) -> list[dict[str, Any]]:
    """Rows setting only one of the two value columns (the other null)."""
    out = []
    for i in rng.sample(range(60), n):
        if rng.random() < 0.5:
            out.append({"id": i, "v": f"{tag}-{i}", "n": None, KIND: "+I"})
        else:
            out.append({"id": i, "v": None, "n": rng.randrange(10**6), KIND: "+I"})
    return out


def canon(lines: list[str]) -> list[str]:
    return sorted(json.dumps(json.loads(x), sort_keys=True) for x in lines)


@dataclass
class Built:
    root: Path
    wh: str
    models: dict[str, Model]
    ours: dict[str, list[str]]  # our read of "table@snapshot"
    latest_checks: list[tuple[str, list[str], list[str]]]  # (step, our read, model)
    records: dict[str, dict[str, Any]]

    def lines(self, key: str) -> list[str]:
        return orc.command_output(self.root, self.records, key)

    def table(self, name: str) -> FileStoreTable:
        return FileSystemCatalog(self.wh).get_table(f"db.{name}")


def _our_read(wh: str, name: str, snapshot: int | None = None) -> list[str]:
    argv = ["read", "--warehouse", wh, "--table", f"db.{name}"]
    if snapshot is not None:
        argv += ["--snapshot", str(snapshot)]
    return canon(cli(argv))


def _our_write(wh: str, name: str, inputs: Path, tag: str, rows: list[dict[str, Any]]
               ) -> None:
    cli(["write", "--warehouse", wh, "--table", f"db.{name}", "--commit-user", "ours",
         "--kind", KIND, "--input", jsonl(inputs / f"{tag}.jsonl", rows)])


def _batch(root: Path, name: str, cmds: list[dict[str, Any]], keys: list[str | None]
           ) -> dict[str, dict[str, Any]]:
    """Run one oracle batch (every command must run); the records of the keyed commands (an
    unkeyed command that failed fails the fixture)."""
    out: dict[str, dict[str, Any]] = {}
    for rec in orc.run_batches({name: cmds}, root)[name].records:
        key = keys[rec["i"] - 1]
        if key is not None:
            out[key] = rec
        elif rec.get("status") != "ok":
            raise orc.OracleError(f"oracle command {cmds[rec['i'] - 1]} failed: {rec}")
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    orc.ensure_ready()
    root = tmp_path_factory.mktemp("dv-write")
    (root / "out").mkdir()
    inputs = root / "inputs"
    wh = str(root / "wh")
    rng = random.Random(3131)
    models = {"dv_j": Model(), "pu_j": Model(partial=True), "dv_o": Model()}
    checks: list[tuple[str, list[str], list[str]]] = []

    # ---- batch 1: Java creates and writes dv_j and pu_j
    cmds: list[dict[str, Any]] = []
    for name, engine in (("dv_j", "deduplicate"), ("pu_j", "partial-update")):
        path = inputs / f"{name}.schema.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(schema(engine)))
        cmds.append({"cmd": "create", "warehouse": wh, "table": f"db.{name}",
                     "schema": str(path)})
        batches = ([mixed(rng, 200, "j0", kinds=False), mixed(rng, 40, "j1"),
                    mixed(rng, 40, "j2")] if name == "dv_j"
                   else [partial(rng, 40, "pj0"), partial(rng, 20, "pj1")])
        for k, rows in enumerate(batches):
            cmds.append({"cmd": "write", "warehouse": wh, "table": f"db.{name}",
                         "input": jsonl(inputs / f"{name}-java{k}.jsonl", rows),
                         "kind": KIND})
            models[name].apply(rows)
    _batch(root, "dv-1", [{"engine": "java", **c} for c in cmds], [None] * len(cmds))
    checks.append(("java wrote dv_j", _our_read(wh, "dv_j"), models["dv_j"].lines()))

    # ---- ours: updates/deletes into Java's tables, compactions, a table of our own
    for k in range(2):
        rows = mixed(rng, 40, f"o{k}")
        _our_write(wh, "dv_j", inputs, f"dv_j-ours{k}", rows)
        models["dv_j"].apply(rows)
        checks.append((f"our write {k} into dv_j", _our_read(wh, "dv_j"),
                       models["dv_j"].lines()))
    cli(["compact", "--warehouse", wh, "--table", "db.dv_j", "--strategy", "minor"])
    rows = mixed(rng, 40, "o2")
    _our_write(wh, "dv_j", inputs, "dv_j-ours2", rows)
    models["dv_j"].apply(rows)
    cli(["compact", "--warehouse", wh, "--table", "db.dv_j", "--full"])
    checks.append(("our full compaction of dv_j", _our_read(wh, "dv_j"), models["dv_j"].lines()))
    for k in range(2):
        rows = partial(rng, 20, f"po{k}")
        _our_write(wh, "pu_j", inputs, f"pu_j-ours{k}", rows)
        models["pu_j"].apply(rows)
    checks.append(("our partial updates", _our_read(wh, "pu_j"), models["pu_j"].lines()))
    (inputs / "dv_o.schema.json").write_text(json.dumps(schema()))
    cli(["create", "--warehouse", wh, "--table", "db.dv_o", "--schema",
         str(inputs / "dv_o.schema.json")])
    for k, rows in enumerate([mixed(rng, 150, "c0", kinds=False), mixed(rng, 50, "c1"),
                              mixed(rng, 50, "c2")]):
        _our_write(wh, "dv_o", inputs, f"dv_o-ours{k}", rows)
        models["dv_o"].apply(rows)
    checks.append(("we wrote dv_o", _our_read(wh, "dv_o"), models["dv_o"].lines()))

    # ---- batch 2: Java and pypaimon read every snapshot; Java writes into dv_o, compacts
    ours: dict[str, list[str]] = {}
    cmds, keys = [], []
    for name in TABLES:
        latest = FileSystemCatalog(wh).get_table(f"db.{name}").latest_snapshot()
        assert latest is not None
        for sid in range(1, latest.id + 1):
            ours[f"{name}@{sid}"] = _our_read(wh, name, sid)
            for engine in ("java", "pypaimon"):
                key = f"{engine}-{name}@{sid}"
                cmd: dict[str, Any] = {"cmd": "read", "engine": engine, "warehouse": wh,
                                       "table": f"db.{name}", "snapshot": sid,
                                       "output": str(root / "out" / f"{key}.jsonl")}
                if engine == "pypaimon":
                    cmd["pypaimon_compat"] = True
                cmds.append(cmd)
                keys.append(key)
    rows = mixed(rng, 50, "j3")
    models["dv_o"].apply(rows)
    cmds += [{"cmd": "write", "engine": "java", "warehouse": wh, "table": "db.dv_o",
              "input": jsonl(inputs / "dv_o-java3.jsonl", rows), "kind": KIND},
             {"cmd": "read", "engine": "java", "warehouse": wh, "table": "db.dv_o",
              "output": str(root / "out" / "java-dv_o-after-java-write.jsonl")},
             {"cmd": "compact", "engine": "java", "warehouse": wh, "table": "db.dv_o"},
             {"cmd": "read", "engine": "java", "warehouse": wh, "table": "db.dv_o",
              "output": str(root / "out" / "java-dv_o-after-java-compact.jsonl")}]
    keys += [None, "java-dv_o-after-java-write", None, "java-dv_o-after-java-compact"]
    records = _batch(root, "dv-2", cmds, keys)

    # ---- ours after Java: read, write once more (our writer loads Java's vectors)
    checks.append(("java wrote and compacted dv_o", _our_read(wh, "dv_o"),
                   models["dv_o"].lines()))
    rows = mixed(rng, 50, "o9")
    _our_write(wh, "dv_o", inputs, "dv_o-ours9", rows)
    models["dv_o"].apply(rows)
    checks.append(("our write after java's", _our_read(wh, "dv_o"), models["dv_o"].lines()))
    yield Built(root, wh, models, ours, checks, records)


def test_reads_after_each_step_match_the_model(built: Built) -> None:
    for step, got, want in built.latest_checks:
        assert got == want, step


@pytest.mark.parametrize("name", TABLES)
@pytest.mark.parametrize("engine", ["java", "pypaimon"])
def test_every_snapshot_reads_identically(built: Built, engine: str, name: str) -> None:
    snaps = sorted(int(k.split("@")[1]) for k in built.ours if k.startswith(f"{name}@"))
    assert snaps
    for sid in snaps:
        assert canon(built.lines(f"{engine}-{name}@{sid}")) == built.ours[f"{name}@{sid}"], (
            f"{engine} read of {name} snapshot {sid}")


def test_java_reads_after_its_own_write_on_our_vectors(built: Built) -> None:
    after_compact = canon(built.lines("java-dv_o-after-java-compact"))
    assert canon(built.lines("java-dv_o-after-java-write")) == after_compact
    assert len(after_compact) > 100


def _dv_counts(table: FileStoreTable, snapshot_id: int) -> dict[tuple[bytes, int], int]:
    snap = table.snapshot_manager.snapshot(snapshot_id)
    return {k: sum(r.cardinality or 0 for e in es for r in e.dv_ranges or ())
            for k, es in dv_index_entries(table.manifest_io, snap).items()}


@pytest.mark.parametrize("name", TABLES)
def test_index_changes_go_with_compact_snapshots(built: Built, name: str) -> None:
    """Java's snapshots and ours alike: the index manifest changes only with a COMPACT
    snapshot (an APPEND keeps the previous one), one DV index file per bucket at most."""
    table = built.table(name)
    latest = table.latest_snapshot()
    assert latest is not None
    previous: str | None = None
    changed_by = set()
    for sid in range(1, latest.id + 1):
        snap = table.snapshot_manager.snapshot(sid)
        if snap.index_manifest != previous:
            assert snap.commit_kind is CommitKind.COMPACT, (name, sid, snap.commit_user)
            changed_by.add(snap.commit_user)
        previous = snap.index_manifest
        for key, entries in dv_index_entries(table.manifest_io, snap).items():
            assert len(entries) == 1, (name, sid, key)
    assert "ours" in changed_by, f"our writes to {name} changed no deletion vector"


def test_our_writes_mark_rows_and_full_compaction_clears_them(built: Built) -> None:
    table = built.table("dv_j")
    latest = table.latest_snapshot()
    assert latest is not None
    ours = [sid for sid in range(1, latest.id + 1)
            if table.snapshot_manager.snapshot(sid).commit_user == "ours"]
    # after our first write (an APPEND + the COMPACT carrying its vectors) rows are marked
    assert any(sum(_dv_counts(table, sid).values()) > 0 for sid in ours[:2])
    # our full compaction ran last on dv_j: every file with a vector was rewritten
    assert _dv_counts(table, latest.id) == {}


@pytest.mark.parametrize("name", TABLES)
def test_fsck_clean(built: Built, name: str) -> None:
    report = fsck(built.table(name))
    assert report.ok, report
