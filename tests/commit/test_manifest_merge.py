"""Manifest merging never changes what a snapshot contains (model-based)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.commit_message import CommitMessage
from paimon_core.schema_builder import Schema
from tests.commit.helpers import data_file, message, part


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
