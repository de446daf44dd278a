"""Changelog-mode incremental reads (``incremental-between`` over the changelog files of the
``input`` / ``lookup`` / ``full-compaction`` producers) stream: merge buffers of 1, 2 and 7
rows, which cut every section into many chunks, give the result of a buffer that holds every
section whole (one chunk: the whole-section merge) for every merge engine, through
``read_merged_changes`` and ``iter_merged_changes``; and on a modest table no step holds more
than the merge budget (it fails if a file or a section is materialised)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core.errors import UnsupportedError
from paimon_core.options import CoreOptions
from paimon_core.read import data_file, incremental, merge_stream
from paimon_core.table import FileStoreTable
from tests.profiles import examples
from tests.read.test_merge_stream import ENGINES, commits
from tests.tables import make_table, write_rows

BUFFER = CoreOptions.MERGE_BUFFER_ROWS
COLUMNS = [("k1", "INT"), ("k2", "STRING"), ("sq", "BIGINT"), ("a", "BIGINT"), ("s", "STRING")]
PRODUCERS = ("input", "lookup", "full-compaction")


def _changelog_table(where: Path, options: dict[str, str], producer: str,
                     buffer_rows: int) -> FileStoreTable:
    opts = {"bucket": "1", "target-file-size": "1 kb", BUFFER: str(buffer_rows), **options,
            "changelog-producer": producer}
    if producer == "input":
        opts["write-only"] = "true"  # no compaction: one changelog file set per commit
    return make_table(where, COLUMNS, primary_keys=["k1", "k2"], options=opts)


def _write_history(t: FileStoreTable, batches: list[pa.Table], full_every: int) -> None:
    """Every batch in a commit; a full compaction after every ``full_every``-th commit (the
    full-compaction producer writes its changelog there)."""
    for i, b in enumerate(batches, 1):
        write_rows(t, b, i, row_kind_column="_k")
        if t.options.changelog_producer.value == "full-compaction" and i % full_every == 0:
            t.compact(strategy="full")


@settings(max_examples=examples(20), suppress_health_check=[HealthCheck.too_slow,
                                                           HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_changelog_read_streams_like_the_whole_section(
        tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    options, kinds = data.draw(st.sampled_from(ENGINES), label="engine")
    producer = data.draw(st.sampled_from(PRODUCERS), label="producer")
    if producer != "input":  # lookup / full-compaction: the engines' own changelogs
        options = {k: v for k, v in options.items() if k != "changelog-producer"}
    batches = data.draw(commits(kinds))
    full_every = data.draw(st.integers(1, 3))
    small = data.draw(st.sampled_from([1, 2, 7]), label="buffer")
    where = tmp_path_factory.mktemp("wh")
    got: dict[int, tuple[Any, Any]] = {}
    rng = None
    for buffer_rows in (small, 1_000_000):
        t = _changelog_table(where / str(buffer_rows), options, producer, buffer_rows)
        _write_history(t, batches, full_every)
        latest = t.latest_snapshot()
        if latest is None:  # nothing was written (only deletes of absent keys ignored)
            return
        if rng is None:
            start = data.draw(st.integers(0, latest.id - 1), label="start")
            rng = (start, latest.id)
        got[buffer_rows] = _read_both(t, rng)
    (small_arrow, small_batches), (one_chunk, one_chunk_batches) = got.values()
    # same rows in the same (key) order (or the same refusal of the merge engine): the
    # whole-section merge is the reference
    assert small_arrow == one_chunk
    assert small_batches == one_chunk_batches
    if isinstance(one_chunk, list) and isinstance(one_chunk_batches, list):
        assert small_batches == one_chunk


def _read_both(t: FileStoreTable, rng: tuple[int, int]) -> tuple[Any, Any]:
    """``read_merged_changes`` and ``iter_merged_changes`` (batches of 3 rows) of ``rng``."""
    def batches() -> pa.Table:
        got = list(t.iter_merged_changes(*rng, mode="changelog", batch_size=3))
        assert all(b.num_rows <= 3 for b in got)
        return pa.Table.from_batches(got) if got else pa.table({})

    return (_outcome(lambda: t.read_merged_changes(*rng, mode="changelog")), _outcome(batches))


def _outcome(read: Callable[[], pa.Table]) -> list[dict[str, Any]] | str:
    """The rows read, or the type and message of the engine's refusal (an aggregate function
    without retraction meeting a ``-U``)."""
    try:
        return read().to_pylist()
    except UnsupportedError as e:
        return f"{type(e).__name__}: {e}"


@pytest.mark.parametrize("buffer_rows", [1, 2, 3, 5])
def test_a_key_repeated_in_a_changelog_file_is_never_cut(tmp_path: Path,
                                                          buffer_rows: int) -> None:
    """A changelog file holds ``-U``/``+U`` of a key: a batch boundary inside the pair (one
    run's batch ends at ``-U 2`` while another run's holds both records of key 2) must not
    cut the key, or the ``+U`` of the first run would merge apart from its peers and come
    out twice."""
    got = {}
    for b in (buffer_rows, 1_000_000):
        t = make_table(tmp_path / str(b), [("id", "BIGINT"), ("v", "BIGINT")], name="db.cl",
                       primary_keys=["id"], options={
                           "bucket": "1", "write-only": "true", "changelog-producer": "input",
                           BUFFER: str(b)})
        for i, (ids, kinds) in enumerate([
                ([1, 1, 2, 2], ["-U", "+U", "-U", "+U"]),
                ([2, 2, 5, 5], ["-U", "+U", "-U", "+U"]),
                ([0, 2, 2, 3], ["+I", "-U", "+U", "+I"])], 1):
            write_rows(t, pa.table({"id": pa.array(ids, pa.int64()),
                                    "v": pa.array([10 * i + j for j in range(4)], pa.int64()),
                                    "_k": kinds}), i, row_kind_column="_k")
        got[b] = t.read_merged_changes(0, 3, mode="changelog").to_pylist()
    small, whole = got.values()
    assert small == whole
    assert [(r["_kind"], r["id"]) for r in whole].count(("+U", 2)) == 1


# ---------------------------------------------------------------------------------------------
# bounded: a modest changelog table read with a small budget holds at most that budget


@pytest.fixture(scope="module")
def input_changelog(tmp_path_factory: pytest.TempPathFactory) -> FileStoreTable:
    """One bucket, 60k keys inserted then 4 upserts of 20k random keys with
    ``changelog-producer=input`` (raw -U/+U pairs): changelog sections of 5 sorted runs."""
    where = tmp_path_factory.mktemp("wh")
    t = make_table(where, [("id", "BIGINT"), ("v", "BIGINT"), ("s", "STRING")],
                   name="db.cl", primary_keys=["id"],
                   options={"bucket": "1", "write-only": "true", "changelog-producer": "input"})
    n = 60_000
    ids = np.arange(n, dtype=np.int64)
    write_rows(t, pa.table({"id": ids, "v": ids, "s": ids.astype(str)}), 1)
    rng = np.random.default_rng(16)
    for c in range(4):
        up = np.sort(rng.choice(n, n // 3, replace=False)).astype(np.int64)
        # each updated key: -U old, +U new (a -U/+U pair per key, as a CDC source sends)
        both = np.repeat(up, 2)
        pairs = np.tile(np.array(["-U", "+U"]), len(up))
        write_rows(t, pa.table({"id": both, "v": both + c + 1, "s": both.astype(str),
                                "_k": pairs}), c + 2, row_kind_column="_k")
    return t


def test_changelog_read_holds_at_most_the_budget(input_changelog: FileStoreTable,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Every merge input and every decoded batch stays within the merge budget (4096 rows
    for a section of 5 runs: 4096 rows per run at least), no file is read whole, and the
    result equals the whole-section merge (one chunk) of the same table."""
    t = input_changelog
    latest = t.latest_snapshot()
    assert latest is not None
    budget = 4096
    monkeypatch.setattr(CoreOptions, "merge_buffer_rows", property(lambda _: 1_000_000))
    one_chunk = t.read_merged_changes(0, latest.id, mode="changelog")
    largest: dict[str, int] = {"read": 0, "merge": 0, "whole_reads": 0}

    def spy_read(fn: Any) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            for b in fn(*args, **kwargs):
                largest["read"] = max(largest["read"], b.num_rows)
                yield b
        return wrapped

    def spy_merge(fn: Any) -> Any:
        def wrapped(table: pa.Table, *args: Any, **kwargs: Any) -> Any:
            largest["merge"] = max(largest["merge"], table.num_rows)
            return fn(table, *args, **kwargs)
        return wrapped

    def no_whole_read(*args: Any, **kwargs: Any) -> Any:
        largest["whole_reads"] += 1
        raise AssertionError("a changelog file was read whole")

    monkeypatch.setattr(CoreOptions, "merge_buffer_rows", property(lambda _: budget))
    monkeypatch.setattr(data_file.DataFileReader, "iter_read",
                        spy_read(data_file.DataFileReader.iter_read))
    monkeypatch.setattr(data_file.DataFileReader, "read", no_whole_read)
    monkeypatch.setattr(incremental, "merge_records", spy_merge(incremental.merge_records))
    rows = 0
    batches = []
    for b in t.iter_merged_changes(0, latest.id, mode="changelog", batch_size=1000):
        assert b.num_rows <= 1000
        rows += b.num_rows
        batches.append(b)
    assert rows == one_chunk.num_rows > 10 * budget  # the range is far larger than a step
    assert pa.Table.from_batches(batches).to_pylist() == one_chunk.to_pylist()
    per_run = merge_stream.run_buffer_rows(budget, 5)
    assert 0 < largest["read"] <= per_run, largest
    # a chunk: at most a buffer per run plus the rows of the key a run's batch held back
    assert 0 < largest["merge"] <= 5 * per_run + 10, largest
    assert largest["whole_reads"] == 0
