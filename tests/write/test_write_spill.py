"""Writers bounded by ``write-buffer-size``: a full buffer is spilled as a sorted run (a
level-0 file) of its bucket and writing goes on (issue 16, scope 3).

Every result is compared with an independent reference: the same input written with one big
buffer (the whole-bucket flush), a Python model of the keys (latest sequence wins), Java
Paimon 0.9 reading the spilled commit, and the peak RSS of a fresh process.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_core import FileStoreTable, FileSystemCatalog
from paimon_core.cli.canonical import canonical_lines
from paimon_core.commit_message import CommitMessage
from paimon_core.spec.binary_row import deserialize_binary_row
from tests.interop import oracle as orc
from tests.tables import make_table

COLS = [("dt", "STRING"), ("id", "BIGINT"), ("v", "BIGINT"), ("s", "STRING")]
SMALL_BUFFER = "6 kb"  # a batch of BATCH rows is ~5 KiB of Arrow data
BATCH = 300
KEYS = 500
REPO = Path(__file__).resolve().parents[2]


def spk_table(catalog: FileSystemCatalog, name: str, **options: str) -> FileStoreTable:
    return make_table(catalog, COLS, name=name, partition_keys=["dt"],
                      primary_keys=["dt", "id"], options={"bucket": "2", **options})


def batches(seed: int, count: int, *, deletes: bool,
            seen_only: bool = False) -> list[tuple[pa.Table, pa.Array | None]]:
    """Random upserts over few keys (every key recurs in many spills), some ``v``/``s``
    nulls, and, with ``deletes``, a sprinkle of ``-D`` rows (``seen_only``: only of keys
    written by an earlier batch): (rows, row kinds)."""
    rng = np.random.default_rng(seed)
    seen: set[int] = set()
    out = []
    for i in range(count):
        ids = rng.integers(0, KEYS, size=BATCH)
        v = pa.array(ids * 100 + i, pa.int64(), mask=rng.random(BATCH) < 0.1)
        s = pa.array([f"s{i}-{k}" for k in ids], mask=rng.random(BATCH) < 0.1)
        t = pa.table({"dt": np.where(ids % 3 == 0, "a", "b"), "id": pa.array(ids, pa.int64()),
                      "v": v, "s": s})
        kinds = None
        if deletes:
            delete = rng.random(BATCH) < 0.15
            if seen_only:
                delete &= np.isin(ids, np.fromiter(seen, np.int64, len(seen)))
            kinds = pa.array(np.where(delete, "-D", "+I"))
        seen.update(ids.tolist())
        out.append((t, kinds))
    return out


def write(table: FileStoreTable, data: list[tuple[pa.Table, pa.Array | None]],
          ident: int = 1) -> list[CommitMessage]:
    w = table.new_write("u")
    for t, kinds in data:
        if kinds is None:
            w.write_arrow(t)
        else:
            w.write_arrow(t.append_column("_k", kinds), row_kind_column="_k")
    msgs = w.prepare_commit()
    table.new_commit("u").commit(msgs, ident)
    return msgs


def data_files_on_disk(table: FileStoreTable) -> set[str]:
    return {p.name for p in Path(table.path).rglob("*.parquet")}


def sorted_rows(table: FileStoreTable) -> list[dict[str, Any]]:
    return sorted(table.to_arrow().to_pylist(), key=lambda r: (r["dt"], r["id"]))


def dedup_model(data: list[tuple[pa.Table, pa.Array | None]]) -> list[dict[str, Any]]:
    """Latest record per key in input order; a ``-D`` removes the key."""
    state: dict[tuple[str, int], dict[str, Any] | None] = {}
    for t, kinds in data:
        ks = [None] * t.num_rows if kinds is None else kinds.to_pylist()
        for r, k in zip(t.to_pylist(), ks):
            state[(r["dt"], r["id"])] = None if k == "-D" else r
    return sorted((r for r in state.values() if r is not None),
                  key=lambda r: (r["dt"], r["id"]))


#: engine -> (options, deletes, deletes only of keys already written)
ENGINES: dict[str, tuple[dict[str, str], bool, bool]] = {
    "deduplicate": ({}, True, False),
    "deduplicate-changelog-input": ({"changelog-producer": "input"}, True, False),
    "partial-update": ({"merge-engine": "partial-update", "ignore-delete": "true"}, True,
                       False),
    # a retraction older than every insert of its key is dropped by a compaction into the
    # highest level (drop-delete), so its effect depends on when compactions run (in Java
    # too): retract only keys already written
    "aggregation": ({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
                     "fields.s.aggregate-function": "max", "fields.s.ignore-retract": "true"},
                    True, True),
    "first-row": ({"merge-engine": "first-row"}, False, False),
}


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_spilled_writes_read_like_one_buffer(catalog: FileSystemCatalog, engine: str) -> None:
    """Several spills per bucket (and inline compaction of the spilled runs) read back
    exactly like the same input written through one buffer, for every merge engine."""
    options, deletes, seen_only = ENGINES[engine]
    data = batches(11, 12, deletes=deletes, seen_only=seen_only)
    spilled = spk_table(catalog, "db.spilled", **{"write-buffer-size": SMALL_BUFFER},
                        **options)
    whole = spk_table(catalog, "db.whole", **options)
    msgs = write(spilled, data)
    ref = write(whole, data)
    assert all(len(m.new_files) == 1 for m in ref), "the reference flushes each bucket once"
    # every bucket got several level-0 runs before prepare_commit
    assert len(msgs) == 4 and all(len(m.new_files) >= 4 for m in msgs)
    assert sorted_rows(spilled) == sorted_rows(whole)
    if engine.startswith("deduplicate"):
        assert sorted_rows(spilled) == dedup_model(data)
    if engine == "deduplicate-changelog-input":  # every raw record, spill by spill
        assert sum(f.row_count for m in msgs for f in m.changelog_files) == 12 * BATCH


def test_spills_are_increasing_level0_runs_latest_wins(catalog: FileSystemCatalog) -> None:
    """Spilled files are sorted, key-unique level-0 runs whose sequence ranges follow each
    other in write order: a key in several spills reads as its latest record."""
    data = batches(5, 10, deletes=True)
    t = spk_table(catalog, "db.runs", **{"write-buffer-size": SMALL_BUFFER,
                                         "write-only": "true"})
    msgs = write(t, data)
    for m in msgs:
        files = sorted(m.new_files, key=lambda f: f.min_sequence_number)
        assert len(files) >= 4 and all(f.level == 0 for f in files)
        for a, b in itertools.pairwise(files):
            assert a.max_sequence_number < b.min_sequence_number
        keys_per_file = []
        dt = deserialize_binary_row(m.partition, [t.schema.field("dt").type])[0]
        for f in files:
            path = Path(t.path) / f"dt={dt}" / f"bucket-{m.bucket}" / f.file_name
            ids = pq.read_table(path).column("_KEY_id").to_numpy()
            assert (np.diff(ids) > 0).all()  # sorted and key-unique within a run
            keys_per_file.append(set(ids.tolist()))
        # the runs overlap: the same keys were spilled again and again
        assert any(a & b for a, b in itertools.pairwise(keys_per_file))
    assert sorted_rows(t) == dedup_model(data)


def test_one_oversized_write_call_is_spilled_in_slices(catalog: FileSystemCatalog) -> None:
    data = batches(3, 8, deletes=True)
    one = (pa.concat_tables([t for t, _ in data]),
           pa.concat_arrays([k for _, k in data if k is not None]))
    t = spk_table(catalog, "db.onecall", **{"write-buffer-size": SMALL_BUFFER})
    w = t.new_write("u")
    w.write_arrow(one[0].append_column("_k", one[1]), row_kind_column="_k")
    assert len(data_files_on_disk(t)) >= 8  # spilled during the call
    t.new_commit("u").commit(w.prepare_commit(), 1)
    assert sorted_rows(t) == dedup_model([one])


def test_sequence_numbers_stay_monotonic_across_spills_and_commits(
    catalog: FileSystemCatalog,
) -> None:
    t = spk_table(catalog, "db.seq", **{"write-buffer-size": SMALL_BUFFER,
                                        "write-only": "true"})
    first, second = batches(1, 5, deletes=False), batches(2, 5, deletes=True)
    m1 = write(t, first, 1)
    m2 = write(t, second, 2)
    for b in {(m.partition, m.bucket) for m in m1}:
        top1 = max(f.max_sequence_number for m in m1 if (m.partition, m.bucket) == b
                   for f in m.new_files)
        low2 = min(f.min_sequence_number for m in m2 if (m.partition, m.bucket) == b
                   for f in m.new_files)
        assert low2 > top1
    assert sorted_rows(t) == dedup_model(first + second)


def test_abort_after_spills_leaves_the_table_unchanged(catalog: FileSystemCatalog) -> None:
    t = spk_table(catalog, "db.abort", **{"write-buffer-size": SMALL_BUFFER})
    write(t, batches(8, 3, deletes=False))
    before_files, before_rows = data_files_on_disk(t), sorted_rows(t)
    snapshot = t.snapshot_manager.latest_snapshot_id()
    w = t.new_write("u")
    for b, _ in batches(9, 6, deletes=False):
        w.write_arrow(b)
    assert len(data_files_on_disk(t)) > len(before_files)  # spills landed on disk
    w.abort()  # deletes every file written since the last prepare_commit (Java's abort)
    assert data_files_on_disk(t) == before_files
    assert t.snapshot_manager.latest_snapshot_id() == snapshot
    assert sorted_rows(t) == before_rows
    # and a writer closed without prepare_commit does the same
    with t.new_write("u") as w2:
        for b, _ in batches(10, 6, deletes=False):
            w2.write_arrow(b)
    assert data_files_on_disk(t) == before_files


def test_append_table_rolls_a_new_file_when_the_buffer_is_full(
    catalog: FileSystemCatalog,
) -> None:
    """Append tables (``write-buffer-for-append`` is Java's opt-in buffer; ours always buffers
    rows by reference): a full buffer becomes a new file, the rows and their order kept."""
    t = make_table(catalog, COLS, name="db.app", options={"bucket": "-1",
                                                         "write-buffer-size": SMALL_BUFFER})
    data = [b for b, _ in batches(4, 8, deletes=False)]
    w = t.new_write("u")
    for b in data:
        w.write_arrow(b)
    assert len(data_files_on_disk(t)) >= 4
    msgs = w.prepare_commit()
    files = sorted((f for m in msgs for f in m.new_files), key=lambda f: f.min_sequence_number)
    assert files[0].min_sequence_number == 0
    for a, b in itertools.pairwise(files):
        assert b.min_sequence_number == a.max_sequence_number + 1
    t.new_commit("u").commit(msgs, 1)
    key = ["dt", "id", "v", "s"]
    want = pa.concat_tables(data).sort_by([(k, "ascending") for k in key])
    assert t.to_arrow().sort_by([(k, "ascending") for k in key]).equals(want)


@pytest.mark.oracle
def test_java_reads_a_spilled_commit(tmp_path: Path) -> None:
    """Java Paimon 0.9 merges our overlapping level-0 runs (write-only: no compaction) into
    the model's rows."""
    orc.ensure_ready()
    catalog = FileSystemCatalog(str(tmp_path / "wh"))
    data = batches(21, 10, deletes=True)
    t = spk_table(catalog, "db.spilled", **{"write-buffer-size": SMALL_BUFFER,
                                            "write-only": "true"})
    msgs = write(t, data)
    assert all(len(m.new_files) >= 4 for m in msgs)
    p = subprocess.run(
        [str(orc.ORACLE), "read", "--warehouse", str(tmp_path / "wh"), "--table", "db.spilled"],
        env=orc.oracle_env(), capture_output=True, text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    java = [line for line in p.stdout.splitlines() if line.strip()]
    want = canonical_lines(pa.Table.from_pylist(dedup_model(data)), t.schema.fields)
    assert java == want


# ------------------------------------------------------------------------- memory bounds

def run_worker(*args: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    p = subprocess.run([sys.executable, "-m", "tests.write.spill_memory_worker", *args],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
                       check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    out: dict[str, float] = json.loads(p.stdout.strip().splitlines()[-1])
    print(args, out)
    return out


BUFFER_MB = 64
BOUND = 6  # peak RSS growth at most BOUND x write-buffer-size


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["one-bucket", "skewed"])
def test_10m_rows_in_batches_stay_within_the_write_buffer(layout: str) -> None:
    """100 batches of 100k rows (10M rows, ~840 MB of Arrow data) into one bucket with
    ``write-buffer-size = 64 mb`` (write-only: the compaction of the runs is a separate
    concern). ``skewed``: a second partition gets one row of every batch; a buffer keeping
    rows by reference into the inputs would keep all of them alive (~670 MB before)."""
    got = run_worker("--layout", layout, "--buffer", f"{BUFFER_MB} mb")
    assert got["files"] >= 10  # spilled, not held
    assert got["peak_growth_mb"] < BOUND * BUFFER_MB, got


@pytest.mark.slow
def test_one_huge_write_call_is_sorted_in_buffer_sized_slices() -> None:
    """One ``write_arrow`` of 2M rows (~170 MB, held by the caller) with a 32 MB buffer:
    before, the whole call was sorted and gathered at once (~2x the input on top of it)."""
    got = run_worker("--layout", "one-call", "--batches", "20", "--buffer", "32 mb")
    assert got["files"] >= 2  # spills of at most twice the buffer (a slice on a full one)
    assert got["peak_growth_mb"] < BOUND * 32, got


# ------------------------------------------------------------- num-sorted-run.stop-trigger

STOP = {"write-buffer-size": SMALL_BUFFER, "num-sorted-run.compaction-trigger": "2",
        "num-sorted-run.stop-trigger": "3"}


def live_runs(table: FileStoreTable) -> dict[tuple[bytes, int], list[Any]]:
    out: dict[tuple[bytes, int], list[Any]] = {}
    for split in table.new_read_builder().new_scan().plan().splits:
        out.setdefault((split.partition, split.bucket), []).extend(split.files)
    return out


def test_spills_past_the_stop_trigger_compact_while_writing(
    catalog: FileSystemCatalog,
) -> None:
    """More spilled runs than ``num-sorted-run.stop-trigger``: the writer compacts the bucket
    before going on (Java waits for its compaction); files written and compacted away within
    the round are deleted at once, and the round's message carries the rest."""
    data = batches(13, 12, deletes=True)
    t = spk_table(catalog, "db.stop", **STOP)
    w = t.new_write("u")
    for b, k in data:
        w.write_arrow(b.append_column("_k", k), row_kind_column="_k")
    while_writing = data_files_on_disk(t)
    msgs = w.prepare_commit()
    assert all(m.compact_before and m.compact_after for m in msgs)
    spills = {f.file_name for m in msgs for f in m.new_files}
    assert len(spills) >= 4 * 8  # many spills per bucket
    assert while_writing - spills  # compaction output before prepare_commit
    t.new_commit("u").commit(msgs, 1)
    referenced = {f.file_name for m in msgs
                  for f in (*m.new_files, *m.compact_after, *m.changelog_files)}
    assert data_files_on_disk(t) == referenced  # no intermediate file left behind
    assert sorted_rows(t) == dedup_model(data)
    for files in live_runs(t).values():
        level0 = sum(1 for f in files if f.level == 0)
        levels = len({f.level for f in files if f.level > 0})
        assert level0 + levels <= 3


def test_abort_after_compacting_spills_leaves_the_table_unchanged(
    catalog: FileSystemCatalog,
) -> None:
    t = spk_table(catalog, "db.stopab", **STOP)
    first = batches(14, 4, deletes=False)
    write(t, first)
    before_files, before_rows = data_files_on_disk(t), sorted_rows(t)
    w = t.new_write("u")
    for b, _ in batches(15, 12, deletes=False):
        w.write_arrow(b)
    w.abort()
    assert data_files_on_disk(t) == before_files
    assert sorted_rows(t) == before_rows
    # the writer goes on from the committed files (its view of them was restored)
    again = batches(16, 6, deletes=True)
    for b, k in again:
        w.write_arrow(b.append_column("_k", k), row_kind_column="_k")
    t.new_commit("u").commit(w.prepare_commit(), 2)
    assert sorted_rows(t) == dedup_model(first + again)


def test_many_one_row_calls_keep_every_record(catalog: FileSystemCatalog) -> None:
    """Rows selected one by one from bigger inputs (pinning them) across spills."""
    src = batches(17, 3, deletes=True)
    data = [(b.slice(i, 1), k.slice(i, 1)) for b, k in src if k is not None
            for i in range(b.num_rows)]
    t = spk_table(catalog, "db.onerow", **{"write-buffer-size": "2 kb"})
    write(t, data)
    assert sorted_rows(t) == dedup_model(data)
