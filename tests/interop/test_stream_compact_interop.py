"""Paimon Java 0.9 (the oracle) reads a table we compacted into several files through the
rolling writer, and its full-compaction changelog, and then compacts it itself."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.compact.manager import live_bucket_files
from paimon_core.schema_change import SetOption
from paimon_core.table import FileStoreTable
from tests.interop import oracle as orc
from tests.interop.ours import cli
from tests.tables import make_table

pytestmark = pytest.mark.oracle

N = 20_000


def commit(table: FileStoreTable, ids: np.ndarray, tag: str, i: int, kinds: list[str]) -> None:
    w = table.new_write("w")
    w.write_arrow(pa.table({
        "pt": ["p"] * len(ids),
        "id": pa.array(ids, pa.int64()),
        "v": [f"{tag}-{k}" + "z" * int(k % 11) for k in ids.tolist()],
        "n": pa.array(ids * 3, pa.int64()),
        "_k": kinds,
    }), row_kind_column="_k")
    table.new_commit("w").commit(w.prepare_commit(), i)
    w.close()


def test_java_reads_our_rolled_compaction(tmp_path: Path) -> None:
    orc.ensure_ready()
    wh = str(tmp_path / "wh")
    table = make_table(wh, [("pt", "STRING NOT NULL"), ("id", "BIGINT NOT NULL"),
                            ("v", "STRING"), ("n", "BIGINT")],
                       name="db.t", partition_keys=["pt"], primary_keys=["pt", "id"],
                       options={"bucket": "1", "write-only": "true",
                                "target-file-size": "64 kb",
                                "changelog-producer": "full-compaction"})
    commit(table, np.arange(N), "a", 0, ["+I"] * N)
    rng = np.random.default_rng(16)
    for k in range(3):
        ids = np.sort(rng.choice(N, size=N // 10, replace=False))
        commit(table, ids, f"u{k}", k + 1, ["-D" if i % 13 == 0 else "+U" for i in ids])
    table.compact()
    snap = table.latest_snapshot()
    files = [f for _, fs in live_bucket_files(table.manifest_io, snap).values() for f in fs]
    assert len(files) >= 3 and {f.level for f in files} == {5}, "several rolled files"
    ours = cli(["read", "--warehouse", wh, "--table", "db.t"])
    table.alter([SetOption("write-only", "false")])  # Java compacts only then
    assert len(ours) == FileSystemCatalog(wh).get_table("db.t").to_arrow().num_rows
    out = tmp_path / "out"
    out.mkdir()
    cmds = [
        {"engine": "java", "cmd": "read", "warehouse": wh, "table": "db.t",
         "output": str(out / "read.jsonl")},
        {"engine": "java", "cmd": "compact", "warehouse": wh, "table": "db.t"},
        {"engine": "java", "cmd": "read", "warehouse": wh, "table": "db.t",
         "output": str(out / "read-after.jsonl")},
    ]
    result = orc.run_batches({"rolled": cmds}, tmp_path)["rolled"]
    assert not result.failures(), str(result.failures())
    assert (out / "read.jsonl").read_text("utf-8").splitlines() == ours
    assert (out / "read-after.jsonl").read_text("utf-8").splitlines() == ours
