"""Writing first-row tables like Java's writer: readers skip level 0, so every commit pushes
level 0 up (a lookup compaction in the same commit: an APPEND and a COMPACT snapshot); a key
already on a level above is dropped (its first row is older); with
``changelog-producer=lookup`` only new keys give changelog (``+I``). Retractions need
``ignore-delete`` (Java's compaction refuses them). See
``tests/interop/test_first_row_interop.py`` for the comparison with Java and pypaimon."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from paimon_core.compact.manager import live_bucket_files
from paimon_core.errors import UnsupportedError
from paimon_core.fsck import fsck
from paimon_core.spec.snapshot import CommitKind
from paimon_core.table import FileStoreTable
from tests.compact.helpers import pk_table, read_sorted, rows

PAIMON = Path(sys.executable).with_name("paimon")

# (ids, pt) per commit: duplicate keys inside a commit (ids 1 and 3 twice in the first) and
# across commits
COMMITS: list[tuple[list[int], list[str]]] = [
    ([1, 2, 1, 3, 3], ["a", "a", "a", "b", "b"]),
    ([2, 4, 1, 5], ["a", "a", "b", "b"]),
    ([4, 6, 6, 3], ["a", "a", "a", "b"]),
    ([1, 2, 7], ["a", "b", "b"]),
]


def model_after(k: int) -> list[tuple[str, int, str]]:
    """(pt, id, v) of every key's first row after commit ``k`` (-1: none)."""
    first: dict[tuple[str, int], str] = {}
    for c in range(k + 1):
        ids, pts = COMMITS[c]
        for j, (i, p) in enumerate(zip(ids, pts)):
            first.setdefault((p, i), f"c{c}-{j}")
    return sorted((p, i, v) for (p, i), v in first.items())


def rows_of(table: FileStoreTable, sid: int) -> list[tuple[str, int, str]]:
    return [(r["pt"], r["id"], r["v"]) for r in read_sorted(table, sid)]


def live_levels(table: FileStoreTable) -> set[int]:
    return {f.level for _, files in live_bucket_files(table.manifest_io, table.latest_snapshot())
            .values() for f in files}


@pytest.mark.parametrize("producer", ["none", "lookup"])
def test_first_row_writer_compacts_every_commit(tmp_path: Path, producer: str) -> None:
    table = pk_table(str(tmp_path / "wh"), partitioned=True,
                     **{"merge-engine": "first-row", "changelog-producer": producer})
    w = table.new_write("w")  # one long-lived writer, as a streaming job keeps
    for k, (ids, pts) in enumerate(COMMITS):
        w.write_arrow(rows(ids, [f"c{k}-{j}" for j in range(len(ids))], pt=pts))
        append, compact = table.new_commit("w").commit(w.prepare_commit(), k)
        sm = table.snapshot_manager
        assert sm.snapshot(append).commit_kind is CommitKind.APPEND
        assert sm.snapshot(compact).commit_kind is CommitKind.COMPACT
        assert rows_of(table, append) == model_after(k - 1)  # level 0 is invisible
        assert rows_of(table, compact) == model_after(k)
        assert 0 not in live_levels(table)
        if producer == "lookup":
            new = set(model_after(k)) - set(model_after(k - 1))
            log = table.read_unmerged_changes(append - 1, compact).to_pylist()
            assert sorted((r["_kind"], r["pt"], r["id"], r["v"]) for r in log) == sorted(
                ("+I", *r) for r in new)
    w.close()
    # the files hold every key once: a key already above level 0 was not written again
    files = [f for _, fs in live_bucket_files(table.manifest_io, table.latest_snapshot())
             .values() for f in fs]
    assert sum(f.row_count for f in files) == len(model_after(len(COMMITS) - 1))
    assert fsck(table).ok


def test_first_row_retractions(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    table = pk_table(wh, bucket="1", **{"merge-engine": "first-row"})
    w = table.new_write("w")
    with pytest.raises(UnsupportedError, match="ignore-delete"):
        w.write_arrow(rows([1, 2], ["x", "y"], kinds=["+I", "-D"]), row_kind_column="_k")
    with pytest.raises(UnsupportedError, match="ignore-delete"):
        w.delete_arrow(rows([1], ["x"]))
    assert w.prepare_commit() == []  # nothing was buffered
    w.close()
    # ignore-delete: the writer drops -D / -U (TableWriteImpl), +U is an insert like +I
    table = pk_table(wh, "db.i", bucket="1", **{"merge-engine": "first-row",
                                                "first-row.ignore-delete": "true"})
    w = table.new_write("w")
    w.write_arrow(rows([1, 2, 3], ["a", "b", "c"], kinds=["-D", "+U", "+I"]),
                  row_kind_column="_k")
    table.new_commit("w").commit(w.prepare_commit(), 1)
    w.write_arrow(rows([2, 1, 1], ["x", "-", "y"], kinds=["-D", "-U", "+U"]),
                  row_kind_column="_k")
    w.delete_arrow(rows([3], ["c"]))
    table.new_commit("w").commit(w.prepare_commit(), 2)
    assert [(r["id"], r["v"]) for r in read_sorted(table)] == [(1, "y"), (2, "b"), (3, "c")]
    w.close()


def paimon(*argv: str) -> Any:
    p = subprocess.run([str(PAIMON), *argv], capture_output=True, text=True, timeout=120,
                       check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def test_cli_write_first_row_table(tmp_path: Path) -> None:
    """``paimon write`` on a first-row table, in a subprocess per commit (a fresh writer that
    restores the table each time)."""
    wh = str(tmp_path / "wh")
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({
        "fields": [{"name": "id", "type": "INT NOT NULL"}, {"name": "v", "type": "STRING"}],
        "primary_keys": ["id"], "options": {"bucket": "2", "merge-engine": "first-row"}}))
    paimon("create", "--warehouse", wh, "--table", "db.f", "--schema", str(schema))
    for k, ids in enumerate([[1, 2, 1], [2, 3], [3, 4, 1]]):
        data = tmp_path / f"in-{k}.jsonl"
        data.write_text("".join(json.dumps({"id": i, "v": f"c{k}-{j}"}) + "\n"
                                for j, i in enumerate(ids)))
        out = json.loads(paimon("write", "--warehouse", wh, "--table", "db.f", "--input",
                                str(data)))
        assert out["rows"] == len(ids) and len(out["snapshots"]) == 2  # APPEND + COMPACT
    got = [json.loads(x) for x in paimon("read", "--warehouse", wh, "--table", "db.f")
           .splitlines()]
    assert got == [{"id": 1, "v": "c0-0"}, {"id": 2, "v": "c0-1"}, {"id": 3, "v": "c1-1"},
                   {"id": 4, "v": "c2-1"}]
