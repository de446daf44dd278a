"""``lookup-wait=false`` on a deletion-vector table written by us in streaming rounds, read by
Paimon Java 0.9 and pypaimon 2.1 at every snapshot.

One writer, three rounds with ``prepare_commit(wait_compaction=False)`` (what Flink's sink
does at a checkpoint when ``lookup-wait=false``), then one that waits (end of input). Each
round's level-0 files are committed alone and compacted into the next round's commit, so
a reader of the table (which skips level 0) sees a round's rows one commit later: Java reads
every snapshot as we do, and the latest as a model of the input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.compact.options import CompactOptions
from paimon_core.schema_builder import Schema
from tests.interop import oracle as orc
from tests.interop.ours import cli

pytestmark = pytest.mark.oracle


def canon(lines: list[str]) -> list[str]:
    return sorted(json.dumps(json.loads(x), sort_keys=True) for x in lines)


def test_java_reads_every_round_as_we_do(tmp_path: Path) -> None:
    orc.ensure_ready()
    wh = str(tmp_path / "wh")
    (tmp_path / "out").mkdir()
    t = FileSystemCatalog(wh).create_table("db.t", Schema.of(
        [("id", "INT NOT NULL"), ("v", "STRING")], primary_keys=["id"],
        options={"bucket": "2", "deletion-vectors.enabled": "true", "lookup-wait": "false"}))
    wait = CompactOptions.of(t.schema, t.options).prepare_commit_wait_compaction
    assert wait is False
    model: dict[int, str] = {}
    rounds = [range(0, 300), range(100, 140), range(280, 320), range(0, 10)]
    with t.new_write("s") as w:
        for k, ids in enumerate(rounds):
            data = pa.table({"id": pa.array(list(ids), pa.int32()),
                             "v": [f"r{k}-{i}" for i in ids]})
            w.write_arrow(data)
            model.update(zip(ids, data.column("v").to_pylist()))
            t.new_commit("s").commit(w.prepare_commit(wait_compaction=wait), k + 1)
        t.new_commit("s").commit(w.prepare_commit(), len(rounds) + 1)
    latest = t.latest_snapshot()
    assert latest is not None
    ours: dict[int, list[str]] = {}
    cmds: list[dict[str, Any]] = []
    for sid in range(1, latest.id + 1):
        ours[sid] = canon(cli(["read", "--warehouse", wh, "--table", "db.t",
                               "--snapshot", str(sid)]))
        for engine in ("java", "pypaimon"):
            cmds.append({"cmd": "read", "engine": engine, "warehouse": wh, "table": "db.t",
                         "snapshot": sid, "pypaimon_compat": engine == "pypaimon",
                         "output": str(tmp_path / "out" / f"{engine}@{sid}.jsonl")})
    records = {f"{c['engine']}@{c['snapshot']}": r
               for c, r in zip(cmds, orc.run_batches({"lw": cmds}, tmp_path)["lw"].records)}
    for sid in ours:
        for engine in ("java", "pypaimon"):
            theirs = canon(orc.command_output(tmp_path, records, f"{engine}@{sid}"))
            assert theirs == ours[sid], f"{engine} read of snapshot {sid}"
    # round k's rows appear with round k + 1's COMPACT snapshot, never before
    assert ours[1] == []
    seen = [len(rows) for rows in ours.values()]
    assert seen == sorted(seen) and seen[-1] == len(model)
    assert ours[latest.id] == canon([json.dumps({"id": i, "v": v}) for i, v in model.items()])
