"""Java 0.9 and pypaimon 2.1 read a table whose manifests we merged (issue 28).

Our writer and committer build an append table with tiny manifest settings (4 kB target,
merge-min-count 3, full compaction at 12 kB), so that its commits fold ADD-only manifests by
copying their Avro blocks (``manifest_concat``), fold manifests with DELETEs by decoding, and
run full compactions over overwrites and dropped partitions. Every snapshot, read by Java 0.9
and by pypaimon through the oracle, equals our read of it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import paimon_core.commit.manifest_merge as manifest_merge
from paimon_core.catalog import FileSystemCatalog
from paimon_core.fsck import fsck
from paimon_core.schema_builder import Schema
from paimon_core.spec.manifest_list import ManifestFileMeta
from tests.interop.oracle import ensure_ready, run_batches
from tests.interop.ours import cli

pytestmark = pytest.mark.oracle

OPTIONS = {"manifest.target-file-size": "4 kb", "manifest.merge-min-count": "3",
           "manifest.full-compaction-threshold-size": "12 kb", "bucket": "-1"}


def _rows(pts: list[str], step: int, n: int = 3) -> pa.Table:
    return pa.table({
        "pt": pa.array([p for p in pts for _ in range(n)], pa.string()),
        "id": pa.array([step * 1000 + i for _ in pts for i in range(n)], pa.int64()),
        "s": pa.array([f"s{step}-{i}" for _ in pts for i in range(n)], pa.string()),
    })


def test_java_and_pypaimon_read_our_merged_manifests(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ensure_ready()
    copies: list[ManifestFileMeta] = []
    real = manifest_merge.concat_manifests

    def counting(*args: Any, **kw: Any) -> ManifestFileMeta | None:
        out = real(*args, **kw)
        if out is not None:
            copies.append(out)
        return out

    monkeypatch.setattr(manifest_merge, "concat_manifests", counting)
    wh = tmp_path / "wh"
    t = FileSystemCatalog(str(wh)).create_table(
        "db.t", Schema.of([("pt", "STRING"), ("id", "BIGINT"), ("s", "STRING")],
                          partition_keys=["pt"], options=OPTIONS))
    for step in range(1, 31):
        w = t.new_write("u", overwrite=step % 9 == 0)
        if step % 9 == 0:  # a static overwrite of partition b
            w.write_arrow(_rows(["b"], step))
            t.new_commit("u").overwrite(w.prepare_commit(), {"pt": "b"}, step)
        elif step % 13 == 0:
            t.new_commit("u").drop_partitions([{"pt": "c"}], step)
        else:
            w.write_arrow(_rows(["a", "b", "c", f"p{step % 5}"], step))
            t.new_commit("u").commit(w.prepare_commit(), step)
        w.close()
    assert copies, "no ADD-only manifests were folded by copying"
    latest = t.snapshot_manager.latest_snapshot_id()
    assert latest is not None
    out = tmp_path / "out"
    out.mkdir()
    snaps = range(max(1, latest - 11), latest + 1)
    cmds: list[dict[str, Any]] = []
    for s in snaps:
        for engine in ("java", "pypaimon"):
            cmds.append({"cmd": "read", "warehouse": str(wh), "table": "db.t", "engine": engine,
                         "snapshot": s, "output": str(out / f"{engine}-{s}.jsonl")})
    results = run_batches({"merged": cmds}, tmp_path)
    assert not results["merged"].failures(), results["merged"].failures()
    for s in snaps:
        mine = cli(["read", "--warehouse", str(wh), "--table", "db.t", "--snapshot", str(s)])
        assert len(mine) > 0
        for engine in ("java", "pypaimon"):
            theirs = (out / f"{engine}-{s}.jsonl").read_text().splitlines()
            assert theirs == mine, f"snapshot {s}: {engine} reads our merged manifests"
    last = [json.loads(x) for x in cli(["read", "--warehouse", str(wh), "--table", "db.t"])]
    assert {r["pt"] for r in last} >= {"a", "b"}
    report = fsck(FileSystemCatalog(str(wh)).get_table("db.t"), deep=True)
    assert report.ok, report.errors

