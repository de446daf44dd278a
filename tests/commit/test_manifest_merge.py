"""Manifest merging never changes what a snapshot contains (model-based)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.commit_message import CommitMessage
from paimon_core.schema_builder import Schema
from paimon_core.spec.binary_row import serialize_binary_row
from paimon_core.types import parse_sql_type
from tests.commit.helpers import data_file, message, part

INT = parse_sql_type("INT")


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("opts", [
    {"manifest.merge-min-count": "3", "manifest.target-file-size": "64 kb",
     "manifest.full-compaction-threshold-size": "1 mb"},
    # a manifest of one entry takes ~2.1 kB (mostly the Avro header), ~50 B more per entry
    {"manifest.merge-min-count": "2", "manifest.target-file-size": "4 kb",
     "manifest.full-compaction-threshold-size": "10 kb"},
])
def test_merged_lists_fold_to_the_model(tmp_path: Path, seed: int, opts: dict[str, str]) -> None:
    rng = random.Random(seed)
    t = FileSystemCatalog(str(tmp_path)).create_table(
        "db.t", Schema.of([("pt", "STRING"), ("v", "BIGINT")], partition_keys=["pt"],
                          options=opts))
    commit = t.new_commit("u")
    model: dict[str, tuple[str, object]] = {}  # file name -> (partition, meta)
    history: list[set[str]] = []
    for step in range(40):
        if rng.random() < 0.15:
            pt = rng.choice(["a", "b", "c"])
            f = data_file(2)
            commit.overwrite([message(t.path, pt, f)], {"pt": pt}, step)
            model = {k: v for k, v in model.items() if v[0] != pt}
            model[f.file_name] = (pt, f)
            history.append(set(model))
            continue
        msgs = []
        if model and rng.random() < 0.4:
            victims = rng.sample(sorted(model), k=min(len(model), rng.randint(1, 3)))
            for name in victims:
                pt, meta = model.pop(name)
                msgs.append(CommitMessage(part(pt), 0, -1, deleted_files=(meta,),  # type: ignore[arg-type]
                                          table_path=t.path))
        for _ in range(rng.randint(0, 4)):
            pt = rng.choice(["a", "b", "c"])
            f = data_file(rng.randint(1, 9))
            model[f.file_name] = (pt, f)
            msgs.append(message(t.path, pt, f))
        if not msgs:
            continue
        commit.commit(msgs, step)
        history.append(set(model))
    latest = t.snapshot_manager.latest_snapshot_id()
    assert latest == len(history)
    lists_sizes = []
    for sid, expected in enumerate(history, start=1):
        snap = t.snapshot_manager.snapshot(sid)
        plan = t.new_planner(t.schema, None).plan(snap)
        assert {f.file_name for s in plan.splits for f in s.files} == expected, f"snapshot {sid}"
        lists_sizes.append(len(t.manifest_io.manifest_list(snap.base_manifest_list)))
    # merging kept the base list short (without it, it grows by one manifest per commit)
    assert max(lists_sizes) < len(history) // 2


NO_MERGE = {"manifest.merge-min-count": "1000000", "manifest.target-file-size": "1 gb",
            "manifest.full-compaction-threshold-size": "100 gb"}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("opts", [
    # one-entry manifests take ~2 kB: 4 kB rolls every few dozen entries
    {"manifest.merge-min-count": "2", "manifest.target-file-size": "4 kb",
     "manifest.full-compaction-threshold-size": "8 kb"},
    {"manifest.merge-min-count": "3", "manifest.target-file-size": "4 kb",
     "manifest.full-compaction-threshold-size": "1 gb"},  # minor compaction only
    {"manifest.merge-min-count": "100", "manifest.target-file-size": "3 kb",
     "manifest.full-compaction-threshold-size": "6 kb"},  # full compaction only
], ids=["both", "minor", "full"])
def test_merging_reads_as_not_merging(tmp_path: Path, seed: int, opts: dict[str, str]) -> None:
    """The same commits (adds over 12 INT partitions, compaction deletes, overwrites,
    dropped partitions, a truncate) to a table that merges and to one that never does: every
    snapshot holds the same live files as the model, and merging kept the list short."""
    rng = random.Random(seed)
    cat = FileSystemCatalog(str(tmp_path))
    tables = [cat.create_table(name, Schema.of([("pt", "INT"), ("v", "BIGINT")],
                                               partition_keys=["pt"], options=o))
              for name, o in (("db.merged", opts), ("db.plain", NO_MERGE))]
    model: dict[str, tuple[int, object]] = {}

    def ipart(p: int) -> bytes:
        return serialize_binary_row([p], [INT])

    for step in range(1, 46):
        r = rng.random()
        if r < 0.08 and model:
            p = rng.choice(sorted({v[0] for v in model.values()}))
            for t in tables:
                t.new_commit("u").drop_partitions([{"pt": p}], step)
            model = {k: v for k, v in model.items() if v[0] != p}
        elif r < 0.16:
            p = rng.randrange(12)
            f = data_file(2)
            for t in tables:
                t.new_commit("u").overwrite(
                    [CommitMessage(ipart(p), 0, -1, new_files=(f,), table_path=t.path)],
                    {"pt": p}, step)
            model = {k: v for k, v in model.items() if v[0] != p}
            model[f.file_name] = (p, f)
        elif r < 0.18:
            for t in tables:
                t.new_commit("u").truncate(step)
            model = {}
        else:
            victims = (rng.sample(sorted(model), k=min(len(model), rng.randint(1, 4)))
                       if model and rng.random() < 0.4 else [])
            gone = [model.pop(name) for name in victims]
            adds = [(rng.randrange(12), data_file(1)) for _ in range(rng.randint(0, 6))]
            model.update((f.file_name, (p, f)) for p, f in adds)
            if not gone and not adds:
                continue
            for t in tables:
                msgs = [CommitMessage(ipart(p), 0, -1, deleted_files=(f,),  # type: ignore[arg-type]
                                      table_path=t.path) for p, f in gone]
                msgs += [CommitMessage(ipart(p), 0, -1, new_files=(f,), table_path=t.path)
                         for p, f in adds]
                t.new_commit("u").commit(msgs, step)
        live = []
        for t in tables:
            snap = t.latest_snapshot()
            assert snap is not None
            plan = t.new_planner(t.schema, None).plan(snap)
            live.append({f.file_name for s in plan.splits for f in s.files})
        assert live[0] == live[1] == set(model), f"step {step}"
    merged, plain = (t.manifest_io.data_manifests(t.latest_snapshot()) for t in tables)
    assert len(merged) < len(plain) // 2
