"""Streaming compaction: sections written as they are merged through the rolling writer,
single-file sections streamed chunk by chunk, changelog produced chunk by chunk; several
output files that keep every row; a failure leaves nothing behind; memory does not grow
with the bucket (measured in a fresh process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.compact.manager import live_bucket_files
from paimon_core.datafile.writer import KvFileStream
from paimon_core.errors import StorageError
from paimon_core.fsck import fsck
from paimon_core.options import CoreOptions
from paimon_core.spec.manifest import FileSource
from paimon_core.table import FileStoreTable
from tests.compact import test_compact_pk as pk_tests
from tests.compact.helpers import pk_table, read_sorted, rows
from tests.compact.test_compact_pk import check_files, replay
from tests.tables import make_table

REPO = Path(__file__).resolve().parents[2]


def write(table: FileStoreTable, ids: list[int], tag: str, i: int, *,
          kinds: list[str] | None = None) -> None:
    w = table.new_write("w")
    w.write_arrow(rows(ids, [f"{tag}-{k}" + "x" * (k % 13) for k in ids], pt=["a"] * len(ids),
                       kinds=kinds), row_kind_column="_k" if kinds else None)
    table.new_commit("w").commit(w.prepare_commit(), i)
    w.close()


def live(table: FileStoreTable) -> list[Any]:
    snap = table.latest_snapshot()
    return [f for _, files in live_bucket_files(table.manifest_io, snap).values() for f in files]


def upserts(table: FileStoreTable, n: int, seed: int, start: int) -> None:
    """3 upserts of n/10 random keys (some deleted), as in issue 16's workload."""
    rng = np.random.default_rng(seed)
    for k in range(3):
        ids = sorted(int(x) for x in rng.choice(n, size=n // 10, replace=False))
        kinds = ["-D" if x % 17 == 0 else "+U" for x in ids]
        write(table, ids, f"u{k}", start + k, kinds=kinds)


@pytest.mark.parametrize("chunk_rows", [None, 777])
def test_full_compaction_rolls_several_files_keeping_every_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_rows: int | None) -> None:
    if chunk_rows:  # single-file sections stream in many chunks
        monkeypatch.setattr(CoreOptions, "merge_buffer_rows", property(lambda _: chunk_rows))
    table = pk_table(str(tmp_path / "wh"), partitioned=True, bucket="1",
                     **{"target-file-size": "48 kb", "write-only": "true"})
    n = 20_000
    write(table, list(range(0, n, 2)), "a", 0)
    write(table, list(range(1, n, 2)), "b", 1)
    upserts(table, n, 3, 2)
    before = read_sorted(table)
    table.compact()
    assert read_sorted(table) == before
    files = live(table)
    assert len(files) >= 4, "several output files"
    assert {f.level for f in files} == {5}
    assert all(f.file_source is FileSource.COMPACT for f in files)
    # a second compaction with several small single-file sections of one run
    write(table, list(range(n, n + 3000)), "c", 10)
    write(table, list(range(n + 3000, n + 6000)), "d", 11)
    before = read_sorted(table)
    table.compact()
    assert read_sorted(table) == before
    check_files(table)  # every file's meta equals its rows; levels >= 1 disjoint
    assert fsck(table).ok


def test_compaction_properties_in_tiny_chunks(tmp_path_factory: pytest.TempPathFactory,
                                              tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The compaction property tests (reads kept against a model, file metas exact, lookup
    changelog replays to the table; composite string keys with a sequence field; first-row)
    with single-file sections streamed in chunks of 2 rows."""
    monkeypatch.setattr(CoreOptions, "merge_buffer_rows", property(lambda _: 2))
    pk_tests.test_compaction_keeps_reads(tmp_path_factory)
    pk_tests.test_string_keys_and_sequence_field(tmp_path / "strings")
    for producer in ("none", "lookup"):
        pk_tests.test_first_row_compaction(tmp_path / producer, producer)


def test_changelog_chunk_by_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Changelog of full-compaction and lookup tables compacted in many chunks, rolled into
    several changelog files, replays to the table."""
    monkeypatch.setattr(CoreOptions, "merge_buffer_rows", property(lambda _: 97))
    for producer in ("full-compaction", "lookup"):
        table = pk_table(str(tmp_path / producer), partitioned=True, bucket="1",
                         **{"target-file-size": "16 kb", "write-only": "true",
                            "changelog-producer": producer,
                            "num-sorted-run.compaction-trigger": "2"})
        model: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        replayed_at = 0
        n = 4000
        write(table, list(range(n)), "a", 0)
        table.compact()
        for k in range(4):
            upserts(table, n, 10 + k, 10 * k + 1)
            table.compact(strategy="full" if k % 2 else "minor")
            latest = table.latest_snapshot()
            assert latest is not None
            replay(table, model, replayed_at, latest.id)
            replayed_at = latest.id
            want = {(r["pt"], r["id"]): (r["v"], r["n"]) for r in read_sorted(table)}
            if producer == "lookup" or k % 2:  # full-compaction: at full compactions only
                assert model == want, (producer, k)
        per_snapshot = [_changelog_files(table, s.changelog_manifest_list)
                        for s in table.snapshot_manager.snapshots() if s.changelog_manifest_list]
        assert max(len(x) for x in per_snapshot) >= 2, "several changelog files in one commit"
        check_files(table)


def _changelog_files(table: FileStoreTable, manifest_list: str) -> list[str]:
    io = table.manifest_io
    return [e.file.file_name for m in io.manifest_list(manifest_list)
            for e in io.manifest(m.file_name)]


def test_upgraded_file_keeps_its_path(tmp_path: Path) -> None:
    table = pk_table(str(tmp_path / "wh"), partitioned=True, bucket="1",
                     **{"target-file-size": "3 kb", "write-only": "true"})
    write(table, list(range(500)), "a", 0)  # level-0 files of disjoint keys, most upgraded
    before = {f.file_name: f for f in live(table)}
    table.compact()
    after = live(table)
    kept = [f for f in after if f.file_name in before]
    assert len(kept) >= 5, "files of at least compaction-file-size are upgraded"
    for f in kept:
        b = before[f.file_name]
        assert (f.level, f.file_size, f.row_count) == (5, b.file_size, b.row_count)
        assert f.file_source is b.file_source


def test_failure_mid_compaction_leaves_nothing(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    table = pk_table(str(tmp_path / "wh"), partitioned=True, bucket="1",
                     **{"target-file-size": "16 kb", "write-only": "true"})
    write(table, list(range(3000)), "a", 0)
    upserts(table, 3000, 5, 1)
    bucket = Path(table.path) / "pt=a" / "bucket-0"
    files_before = sorted(p.name for p in bucket.iterdir())
    snap = table.latest_snapshot()
    rows_before = read_sorted(table)
    calls = []
    orig = KvFileStream.close

    def failing_close(self: KvFileStream) -> Any:
        calls.append(self.name)
        if len(calls) == 3:  # two files done, the third fails
            raise StorageError(self.path, "injected failure")
        return orig(self)

    monkeypatch.setattr(KvFileStream, "close", failing_close)
    with pytest.raises(StorageError, match="injected"):
        table.compact()
    assert len(calls) == 3
    latest = table.latest_snapshot()
    assert latest is not None and snap is not None and latest.id == snap.id  # no commit
    # the files written before the failure were deleted (the writer's written_paths)
    assert sorted(p.name for p in bucket.iterdir()) == files_before
    assert read_sorted(table) == rows_before


# ---- memory: a bucket of one sorted run in many files (each file a section)

PROBE_ROWS = 2_000_000


def build_runs_bucket(warehouse: str, n: int) -> None:
    table = make_table(warehouse, [("id", "BIGINT NOT NULL"), ("s", "STRING"),
                                   ("x", "DOUBLE"), ("m", "BIGINT")],
                       primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    step = 100_000
    for i, start in enumerate(range(0, n, step)):
        ids = np.arange(start, min(n, start + step), dtype=np.int64)
        w = table.new_write("w")
        w.write_arrow(pa.table({
            "id": ids,
            "s": pa.array([f"value-{k:012d}-abcdef" for k in ids.tolist()]),
            "x": ids.astype(np.float64) / 3,
            "m": ids * 7,
        }))
        table.new_commit("w").commit(w.prepare_commit(), i)
        w.close()


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} in /proc/self/status")


def probe(warehouse: str) -> None:
    """Run in a fresh process: full compaction; prints the peak RSS growth in MB. The peak
    is ``VmHWM`` (this process image's high-water mark): ``ru_maxrss`` survives ``exec``
    and would report the forking parent's size."""
    table = FileSystemCatalog(warehouse).get_table("db.t")
    base = _status_mb("VmRSS")
    table.compact()
    peak = _status_mb("VmHWM")
    print(json.dumps({"growth_mb": peak - base, "files": len(live(table)), "base_mb": base}))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_full_compaction_memory_does_not_grow_with_the_bucket(tmp_path: Path) -> None:
    """2M rows in 20 level-0 files of disjoint keys: the whole-bucket path held every row
    (+253 MB measured) where the streaming one holds a chunk and a row group (+110 MB)."""
    wh = str(tmp_path / "wh")
    build_runs_bucket(wh, PROBE_ROWS)
    t = FileSystemCatalog(wh).get_table("db.t")
    before = t.to_arrow().num_rows
    code = f"from tests.compact.test_stream_compact import probe; probe({wh!r})"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (os.environ.get("PYTHONPATH"), str(REPO)) if p)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=str(REPO), timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    t = FileSystemCatalog(wh).get_table("db.t")
    assert t.to_arrow().num_rows == before == PROBE_ROWS
    # the bucket is ~150 MB as Arrow: well under it, whatever the bucket's size
    assert got["growth_mb"] < 175, got
