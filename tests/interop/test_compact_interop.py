"""Interop of compaction and changelog producers with Paimon Java 0.9 (the oracle).

One module fixture, two oracle batches (one JVM each) plus one run of ``PickerOracle.java``:

* batch 1 (while we write and compact our own tables in-process): Java writes the tables we
  will compact (``jb_*``: a write-only primary-key table with 6 level-0 runs, a primary-key
  table with a Java compaction in the middle, a write-only bucketed append table) and the
  changelog tables (``jc_*``: ``input``, ``full-compaction``, ``lookup``), recording its reads,
  snapshot lists and per-snapshot incremental (stream) reads;
* between the batches we compact the ``jb_*`` tables (universal for the write-only primary-key
  table: several levels; full for the others), and copy our compacted ``a_*`` tables;
* batch 2: Java reads our compacted tables (``a_*``: partitioned primary-key table with 3
  buckets and levels from inline + partial + full compaction, bucketed and unaware append
  tables) and the ``jb_*`` tables we compacted; on the copies Java appends (with -U/+U/-D) and
  compacts, then reads; Java reads the changelog of our ``oc_*`` tables (incremental stream,
  per snapshot).

Checks: every Java read of our files equals our read and the model; Java's read of a table we
compacted equals its read before; the changelog Java reads from our tables equals the changelog
Java produced itself for the same commits (and our own incremental read of it); the picker
agrees with the real ``UniversalCompaction`` on random runs; fsck is clean everywhere.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.compact.levels import LevelSortedRun
from paimon_core.compact.picker import (
    ForceUpLevel0Compaction,
    UniversalCompaction,
    pick_full_compaction,
)
from paimon_core.fsck import fsck
from paimon_core.schema_change import SetOption
from tests.compact.helpers import fmeta
from tests.interop import oracle as orc
from tests.interop.java_harness import ensure_oracle
from tests.interop.ours import cli, jsonl

pytestmark = pytest.mark.oracle

KIND = "_k"
PK_FIELDS = [{"name": "pt", "type": "STRING NOT NULL"}, {"name": "id", "type": "INT NOT NULL"},
             {"name": "v", "type": "STRING"}, {"name": "n", "type": "BIGINT"}]
APPEND_FIELDS = [{"name": "pt", "type": "STRING"}, {"name": "id", "type": "BIGINT"},
                 {"name": "s", "type": "STRING"}]
CL_FIELDS = [{"name": "id", "type": "INT NOT NULL"}, {"name": "v", "type": "STRING"}]


def pk_schema(**options: str) -> dict[str, Any]:
    return {"fields": PK_FIELDS, "partition_keys": ["pt"], "primary_keys": ["pt", "id"],
            "options": options}


def append_schema(**options: str) -> dict[str, Any]:
    return {"fields": APPEND_FIELDS, "partition_keys": ["pt"], "options": options}


def changelog_schema(producer: str) -> dict[str, Any]:
    # trigger 10: no size-dependent inline compaction in either engine
    return {"fields": CL_FIELDS, "primary_keys": ["id"],
            "options": {"bucket": "2", "changelog-producer": producer,
                        "num-sorted-run.compaction-trigger": "10"}}


# (name, schema, steps) of our tables; a step is ("write", rows) or ("compact", argv extra)
@dataclass
class Model:
    rows: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)

    def apply(self, batch: list[dict[str, Any]], key: tuple[str, ...]) -> None:
        for r in batch:
            k = tuple(r[c] for c in key)
            if r.get(KIND, "+I") in ("+I", "+U"):
                self.rows[k] = {c: v for c, v in r.items() if c != KIND}
            else:
                self.rows.pop(k, None)


def pk_batch(rng: random.Random, n: int, keys: int, tag: str) -> list[dict[str, Any]]:
    picked = rng.sample([(p, i) for p in ("p1", "p2") for i in range(keys)], n)
    kinds = rng.choices(["+I", "+U", "-D", "-U"], weights=[5, 2, 2, 1], k=n)
    return [{"pt": p, "id": i, "v": f"{tag}-{i}", "n": rng.randrange(10**6), KIND: k}
            for (p, i), k in zip(picked, kinds)]


def append_batch(rng: random.Random, n: int, base: int) -> list[dict[str, Any]]:
    return [{"pt": rng.choice(["p1", "p2", None]), "id": base + i, "s": f"s{base + i}"}
            for i in range(n)]


def cl_batch(rng: random.Random, n: int, tag: str) -> list[dict[str, Any]]:
    ids = rng.sample(range(30), n)
    kinds = rng.choices(["+I", "+U", "-D", "-U"], weights=[5, 2, 2, 1], k=n)
    return [{"id": i, "v": f"{tag}-{i}", KIND: k} for i, k in zip(ids, kinds)]


@dataclass
class Built:
    root: Path
    records: dict[str, dict[str, Any]]
    models: dict[str, Model]
    our_snapshots: dict[str, int]
    seconds: dict[str, float]

    def lines(self, key: str) -> list[str]:
        rec = self.records.get(key)
        if rec is None or rec.get("status") != "ok":
            raise AssertionError(f"oracle command {key}: {rec}")
        return (self.root / "out" / f"{key}.jsonl").read_text("utf-8").splitlines()


class Script:
    """Oracle commands with an output file per read-like command, keyed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cmds: list[dict[str, Any]] = []
        self.keys: list[str | None] = []
        (root / "out").mkdir(exist_ok=True)

    def add(self, key: str | None, **cmd: Any) -> None:
        c = {"engine": "java", **cmd}
        if key is not None:
            c["output"] = str(self.root / "out" / f"{key}.jsonl")
        self.cmds.append(c)
        self.keys.append(key)


def _records(script: Script, result: orc.BatchResult) -> dict[str, dict[str, Any]]:
    out = {}
    for rec in result.records:
        i = rec["i"] - 1  # the oracle numbers commands from 1
        key = script.keys[i]
        if key is not None:
            out[key] = rec
        elif rec.get("status") != "ok":
            raise orc.OracleError(f"oracle command {script.cmds[i]} failed: {rec}")
    return out


CL_STEPS: dict[str, list[str]] = {
    "input": ["w", "w", "w", "w", "w"],
    "full-compaction": ["w", "w", "w", "c", "w", "w", "c"],
    "lookup": ["w", "w", "w", "w", "w"],
}
CL_SNAPSHOTS = {"input": 5, "full-compaction": 7, "lookup": 10}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    orc.ensure_ready()
    root = tmp_path_factory.mktemp("compact-interop")
    inputs = root / "inputs"
    inputs.mkdir()
    rng = random.Random(4242)
    t0 = time.monotonic()
    seconds: dict[str, float] = {}
    wh_j, wh_a, wh_copy = str(root / "wh-java"), str(root / "wh-ours"), str(root / "wh-copy")
    wh_cj, wh_co = str(root / "wh-cl-java"), str(root / "wh-cl-ours")
    models: dict[str, Model] = {}

    # ---- batch 1: Java's tables
    s1 = Script(root)
    # jb_pk: Java never compacts inline (trigger 10); we compact with trigger 5 (ALTER)
    jb = {"jb_pk": pk_schema(bucket="1", **{"num-sorted-run.compaction-trigger": "10",
                                            "num-levels": "6"}),
          "jb_pk2": pk_schema(bucket="2"),
          "jb_app": append_schema(bucket="2", **{"bucket-key": "id", "write-only": "true"})}
    for name, schema in jb.items():
        path = inputs / f"{name}.schema.json"
        path.write_text(json.dumps(schema))
        s1.add(None, cmd="create", warehouse=wh_j, table=f"db.{name}", schema=str(path))
        models[name] = Model()
        for k in range(7 if name == "jb_pk" else 6 if name == "jb_app" else 4):
            if name == "jb_app":
                rows = append_batch(rng, 40, k * 1000)
                s1.add(None, cmd="write", warehouse=wh_j, table=f"db.{name}",
                       input=jsonl(inputs / f"{name}-{k}.jsonl", rows))
                for r in rows:  # append: every row is kept
                    models[name].rows[(r["id"],)] = r
            else:
                # jb_pk: a big first write compacted by Java to the max level, then 6 small
                # level-0 runs (our universal compaction then outputs to level 4)
                n = 3000 if name == "jb_pk" and k == 0 else 10 if name == "jb_pk" else 50
                rows = pk_batch(rng, n, 1600, f"{name}{k}")
                s1.add(None, cmd="write", warehouse=wh_j, table=f"db.{name}",
                       input=jsonl(inputs / f"{name}-{k}.jsonl", rows), kind=KIND)
                models[name].apply(rows, ("pt", "id"))
            if (name, k) in (("jb_pk2", 1), ("jb_pk", 0)):
                s1.add(None, cmd="compact", warehouse=wh_j, table=f"db.{name}")
        s1.add(f"{name}-before", cmd="read", warehouse=wh_j, table=f"db.{name}")
    cl_inputs: dict[str, list[str]] = {}
    for producer, steps in CL_STEPS.items():
        name = "jc_" + producer.replace("-", "_")
        path = inputs / f"{name}.schema.json"
        path.write_text(json.dumps(changelog_schema(producer)))
        s1.add(None, cmd="create", warehouse=wh_cj, table=f"db.{name}", schema=str(path))
        cl_inputs[producer] = []
        for k, step in enumerate(steps):
            if step == "w":
                f = jsonl(inputs / f"{name}-{k}.jsonl", cl_batch(rng, 12, f"{producer}{k}"))
                cl_inputs[producer].append(f)
                s1.add(None, cmd="write", warehouse=wh_cj, table=f"db.{name}", input=f,
                       kind=KIND)
            else:
                s1.add(None, cmd="compact", warehouse=wh_cj, table=f"db.{name}")
        for sid in range(1, CL_SNAPSHOTS[producer] + 1):
            s1.add(f"{name}-inc-{sid}", cmd="incremental", warehouse=wh_cj, table=f"db.{name}",
                   **{"from": sid - 1, "to": sid, "mode": "stream"})
        s1.add(f"{name}-snapshots", cmd="snapshots", warehouse=wh_cj, table=f"db.{name}")
    batch1 = orc.Batch("compact-1", s1.cmds, root)

    # ---- meanwhile: our tables
    ours = {"a_pk": pk_schema(bucket="3"),
            "a_app": append_schema(bucket="2", **{"bucket-key": "id"}),
            "a_unaware": append_schema(bucket="-1")}
    our_snapshots: dict[str, int] = {}
    for name, schema in ours.items():
        path = inputs / f"{name}.schema.json"
        path.write_text(json.dumps(schema))
        cli(["create", "--warehouse", wh_a, "--table", f"db.{name}", "--schema", str(path)])
        models[name] = Model()
        for k in range(6 if name != "a_unaware" else 4):
            argv = ["write", "--warehouse", wh_a, "--table", f"db.{name}",
                    "--commit-user", "ours"]
            if name == "a_pk":
                rows = pk_batch(rng, 60, 120, f"{name}{k}")
                models[name].apply(rows, ("pt", "id"))
                argv += ["--kind", KIND]
            else:
                rows = append_batch(rng, 40, k * 1000)
                for r in rows:
                    models[name].rows[(r["id"],)] = r
            cli([*argv, "--input", jsonl(inputs / f"{name}-{k}.jsonl", rows)])
        base = ["compact", "--warehouse", wh_a, "--table", f"db.{name}"]
        if name == "a_pk":
            cli([*base, "--full", "--partition", "pt=p1"])
        cli([*base, "--full"] if name != "a_pk" else [*base, "--strategy", "minor"])
        table = FileSystemCatalog(wh_a).get_table(f"db.{name}")
        snap = table.latest_snapshot()
        assert snap is not None
        our_snapshots[name] = snap.id
    shutil.copytree(wh_a, wh_copy)
    for producer, steps in CL_STEPS.items():
        name = "oc_" + producer.replace("-", "_")
        path = inputs / f"{name}.schema.json"
        path.write_text(json.dumps(changelog_schema(producer)))
        cli(["create", "--warehouse", wh_co, "--table", f"db.{name}", "--schema", str(path)])
        writes = iter(cl_inputs[producer])
        for step in steps:
            if step == "w":
                cli(["write", "--warehouse", wh_co, "--table", f"db.{name}", "--kind", KIND,
                     "--commit-user", "ours", "--input", next(writes)])
            else:
                cli(["compact", "--warehouse", wh_co, "--table", f"db.{name}", "--full"])
    # a first-row table (readers skip level 0): we write and compact, Java reads
    path = inputs / "a_first.schema.json"
    path.write_text(json.dumps(pk_schema(bucket="2", **{"merge-engine": "first-row",
                                                        "write-only": "true"})))
    cli(["create", "--warehouse", wh_a, "--table", "db.a_first", "--schema", str(path)])
    models["a_first"] = Model()
    for k in range(4):
        rows = [{c: v for c, v in r.items() if c != KIND}
                for r in pk_batch(rng, 60, 100, f"first{k}")]
        for r in rows:
            models["a_first"].rows.setdefault((r["pt"], r["id"]), r)
        cli(["write", "--warehouse", wh_a, "--table", "db.a_first", "--commit-user", "ours",
             "--input", jsonl(inputs / f"a_first-{k}.jsonl", rows)])
        if k % 2:  # the picker: level 0 pushed up (ForceUpLevel0Compaction)
            cli(["compact", "--warehouse", wh_a, "--table", "db.a_first", "--strategy", "minor"])
    seconds["ours"] = round(time.monotonic() - t0, 1)
    r1 = batch1.wait()
    records = _records(s1, r1)
    seconds["batch1"] = round(r1.seconds, 1)

    # ---- we compact Java's tables
    FileSystemCatalog(wh_j).get_table("db.jb_pk").alter(
        [SetOption("num-sorted-run.compaction-trigger", "5")])
    for name, full in (("jb_pk", False), ("jb_pk2", True), ("jb_app", True)):
        argv = ["compact", "--warehouse", wh_j, "--table", f"db.{name}"]
        out = json.loads(cli([*argv, "--strategy", "full" if full else "minor"])[0])
        assert out["snapshot"] is not None, name

    # ---- batch 2
    s2 = Script(root)
    for name in ours:
        s2.add(f"{name}-java-read", cmd="read", warehouse=wh_a, table=f"db.{name}")
        if name == "a_pk":
            rows = pk_batch(rng, 60, 120, "java")
            models["copy_" + name] = Model(dict(models[name].rows))
            models["copy_" + name].apply(rows, ("pt", "id"))
            s2.add(None, cmd="write", warehouse=wh_copy, table=f"db.{name}", kind=KIND,
                   input=jsonl(inputs / f"copy-{name}.jsonl", rows))
        else:
            rows = append_batch(rng, 40, 90_000)
            models["copy_" + name] = Model(dict(models[name].rows))
            for r in rows:
                models["copy_" + name].rows[(r["id"],)] = r
            s2.add(None, cmd="write", warehouse=wh_copy, table=f"db.{name}",
                   input=jsonl(inputs / f"copy-{name}.jsonl", rows))
        s2.add(None, cmd="compact", warehouse=wh_copy, table=f"db.{name}")
        s2.add(f"{name}-copy-read", cmd="read", warehouse=wh_copy, table=f"db.{name}")
    for name in jb:
        s2.add(f"{name}-after", cmd="read", warehouse=wh_j, table=f"db.{name}")
    s2.add("a_first-java-read", cmd="read", warehouse=wh_a, table="db.a_first")
    for producer in CL_STEPS:
        name = "oc_" + producer.replace("-", "_")
        for sid in range(1, CL_SNAPSHOTS[producer] + 1):
            s2.add(f"{name}-inc-{sid}", cmd="incremental", warehouse=wh_co, table=f"db.{name}",
                   **{"from": sid - 1, "to": sid, "mode": "stream"})
        s2.add(f"{name}-snapshots", cmd="snapshots", warehouse=wh_co, table=f"db.{name}")
    r2 = orc.run_batches({"compact-2": s2.cmds}, root)["compact-2"]
    records.update(_records(s2, r2))
    seconds["batch2"] = round(r2.seconds, 1)
    seconds["total"] = round(time.monotonic() - t0, 1)
    yield Built(root, records, models, our_snapshots, seconds)


def our_read(wh: Path, table: str) -> list[str]:
    return cli(["read", "--warehouse", str(wh), "--table", table])


def model_lines(built: Built, wh: Path, table: str, model: str) -> None:
    """Our read equals the model (compared as rows)."""
    t = FileSystemCatalog(str(wh)).get_table(table)
    got = sorted(json.dumps(r, sort_keys=True) for r in t.to_arrow().to_pylist())
    want = sorted(json.dumps(r, sort_keys=True) for r in built.models[model].rows.values())
    assert got == want, f"{table}: our read differs from the model"


def test_java_reads_our_compacted_tables(built: Built) -> None:
    wh = built.root / "wh-ours"
    for name in ("a_pk", "a_app", "a_unaware"):
        t = FileSystemCatalog(str(wh)).get_table(f"db.{name}")
        kinds = [s.commit_kind.value for s in t.snapshot_manager.snapshots()]
        assert "COMPACT" in kinds, name
        assert built.lines(f"{name}-java-read") == our_read(wh, f"db.{name}"), name
        model_lines(built, wh, f"db.{name}", name)
        assert fsck(t).ok, name
    # the primary-key table ended with several levels in use (inline, partial, full)
    t = FileSystemCatalog(str(wh)).get_table("db.a_pk")
    levels = {f.level for s in t.new_read_builder().new_scan().plan().splits for f in s.files}
    assert 5 in levels and len(levels) >= 2, levels


def test_java_appends_to_and_compacts_our_tables(built: Built) -> None:
    wh = built.root / "wh-copy"
    for name in ("a_pk", "a_app", "a_unaware"):
        t = FileSystemCatalog(str(wh)).get_table(f"db.{name}")
        assert t.snapshot_manager.latest_snapshot_id() > built.our_snapshots[name]
        assert built.lines(f"{name}-copy-read") == our_read(wh, f"db.{name}"), name
        model_lines(built, wh, f"db.{name}", "copy_" + name)
        report = fsck(t)
        assert report.ok, (name, [f.to_json() for f in report.errors])


def test_we_compact_tables_java_wrote(built: Built) -> None:
    wh = built.root / "wh-java"
    for name in ("jb_pk", "jb_pk2", "jb_app"):
        before = built.lines(f"{name}-before")
        assert built.lines(f"{name}-after") == before, name
        assert our_read(wh, f"db.{name}") == before, name
        t = FileSystemCatalog(str(wh)).get_table(f"db.{name}")
        latest = t.latest_snapshot()
        assert latest is not None and latest.commit_kind.value == "COMPACT"
        model_lines(built, wh, f"db.{name}", name)
        assert fsck(t).ok, name
    # universal compaction of 6 level-0 runs: intermediate levels, readable by Java
    t = FileSystemCatalog(str(wh)).get_table("db.jb_pk")
    levels = {f.level for s in t.new_read_builder().new_scan().plan().splits for f in s.files}
    assert levels - {0, 5}, levels


@pytest.mark.parametrize("producer", list(CL_STEPS))
def test_changelog_equals_java(built: Built, producer: str) -> None:
    suffix = producer.replace("-", "_")
    ours, theirs = "oc_" + suffix, "jc_" + suffix
    keys = ("id", "commit_kind", "changelog_record_count", "has_changelog_manifest")
    ours_snaps = [{k: json.loads(x)[k] for k in keys} for x in built.lines(f"{ours}-snapshots")]
    java_snaps = [{k: json.loads(x)[k] for k in keys} for x in built.lines(f"{theirs}-snapshots")]
    assert ours_snaps == java_snaps
    assert any(s["changelog_record_count"] for s in java_snaps)
    wh = built.root / "wh-cl-ours"
    for sid in range(1, CL_SNAPSHOTS[producer] + 1):
        expected = built.lines(f"{theirs}-inc-{sid}")
        assert built.lines(f"{ours}-inc-{sid}") == expected, (producer, sid)
        mine = cli(["incremental", "--warehouse", str(wh), "--table", f"db.{ours}",
                    "--from", str(sid - 1), "--to", str(sid)])
        assert sorted(mine) == expected, (producer, sid)
    assert fsck(FileSystemCatalog(str(wh)).get_table(f"db.{ours}")).ok


def test_picker_equals_java(tmp_path: Path) -> None:
    if shutil.which("javac") is None:
        pytest.skip("javac not installed")
    jars = ensure_oracle()
    cp = ":".join([str(tmp_path), *sorted(str(p) for p in jars.glob("*.jar"))])
    src = Path(__file__).with_name("java") / "PickerOracle.java"
    subprocess.run(["javac", "-nowarn", "-d", str(tmp_path), "-cp", cp, str(src)], check=True,
                   capture_output=True, timeout=300)
    rng = random.Random(7)
    cases, expected = [], []
    for i in range(400):
        trigger = rng.choice([1, 2, 3, 5])
        amp, ratio = rng.choice([25, 100, 200]), rng.choice([0, 1, 10])
        num_levels = rng.choice([3, 6])
        n0 = rng.randrange(0, 8)
        levels = sorted(rng.sample(range(1, num_levels), rng.randrange(0, num_levels)))
        spec = [(0, rng.choice([1, 10, 100, rng.randrange(1, 1000)])) for _ in range(n0)]
        spec += [(lv, rng.randrange(1, 5000)) for lv in levels]
        if not spec:
            continue
        runs = [LevelSortedRun(lv, (fmeta(sz, level=lv),)) for lv, sz in spec]
        mode = "UFP"[i % 3]
        u = UniversalCompaction(amp, ratio, trigger)
        unit = (u.pick(num_levels, runs) if mode == "U" else
                ForceUpLevel0Compaction(u).pick(num_levels, runs) if mode == "F" else
                pick_full_compaction(num_levels, runs))
        cases.append(" ".join([mode, str(trigger), str(amp), str(ratio), str(num_levels),
                               *(f"{lv}:{sz}" for lv, sz in spec)]))
        expected.append("none" if unit is None else f"{unit.output_level} {len(unit.files)}")
    proc = subprocess.run(["java", "-cp", cp, "PickerOracle"], input="\n".join(cases) + "\n",
                          capture_output=True, text=True, timeout=300, check=True)
    got = proc.stdout.splitlines()
    assert len(got) == len(cases)
    bad = [(c, g, e) for c, g, e in zip(cases, got, expected) if g != e]
    assert not bad, bad[:5]
    assert sum(e != "none" for e in expected) > 100  # the cases exercise real picks


def test_java_reads_our_first_row_compaction(built: Built) -> None:
    """first-row: compaction is what makes rows visible (readers skip level 0); a key
    already compacted is never written again, so Java's raw read of levels > 0 is exact."""
    wh = built.root / "wh-ours"
    assert built.lines("a_first-java-read") == our_read(wh, "db.a_first")
    model_lines(built, wh, "db.a_first", "a_first")
    assert fsck(FileSystemCatalog(str(wh)).get_table("db.a_first")).ok
