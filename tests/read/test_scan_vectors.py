"""Deletion vectors in the multi-file scan (``DataFileReader.read_many``): the one Arrow scan of
many files, each file's vector applied to its own batches as they stream in, equals each file
read alone (``read_one``) — with scan batches smaller than a file (a vector cut across batch
boundaries), vectors that are empty, remove every row, or hold positions past the file's end;
and a deletion-vector table read with a projection and a filter equals its full read, projected
and filtered afterwards."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core.read import data_file
from paimon_core.read.data_file import DataFileReader, FileRead
from tests.profiles import examples
from tests.tables import make_table, write_rows

COLUMNS = [("pt", "STRING"), ("k", "INT"), ("v", "BIGINT"), ("s", "STRING")]
SIZES = (9, 1, 17, 4)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[DataFileReader, list[FileRead]]:
    """Four files of 9, 1, 17 and 4 rows in one bucket (one commit each, never compacted)."""
    t = make_table(tmp_path_factory.mktemp("wh"), COLUMNS, partition_keys=["pt"],
                   primary_keys=["pt", "k"], options={"bucket": "1", "write-only": "true"})
    start = 0
    for i, n in enumerate(SIZES, 1):
        ks = list(range(start, start + n))
        start += n
        write_rows(t, pa.table({"pt": ["p"] * n, "k": pa.array(ks, pa.int32()),
                                "v": pa.array([k * 10 for k in ks], pa.int64()),
                                "s": [None if k % 5 == 0 else f"s{k}" for k in ks]}), i)
    rb = t.new_read_builder()
    reader = rb.new_read().reader
    (split,) = rb.new_scan().plan().splits
    assert sorted(f.row_count for f in split.files) == sorted(SIZES)
    reads = [FileRead(split.bucket_path, f, ("k", "v", "s", "pt"),
                      constants={"pt": pa.scalar("p")}) for f in split.files]
    return reader, reads


@st.composite
def vectors(draw: st.DrawFn, n: int) -> np.ndarray | None:
    kind = draw(st.sampled_from(["none", "empty", "all", "some", "past the end"]))
    if kind == "none":
        return None
    if kind == "empty":
        return np.zeros(0, dtype=np.int64)
    if kind == "all":
        return np.arange(n, dtype=np.int64)
    rows = draw(st.lists(st.integers(0, n - 1), max_size=n))
    if kind == "past the end":
        rows += [n, n + 3]
    return np.unique(np.asarray(rows, dtype=np.int64))


@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), batch=st.sampled_from([1, 2, 5, 1 << 17]))
def test_scan_applies_each_files_vector_to_its_rows(
    files: tuple[DataFileReader, list[FileRead]], data: st.DataObject, batch: int
) -> None:
    reader, plain = files
    order = data.draw(st.permutations(range(len(plain))))
    reads = [FileRead(plain[i].bucket_path, plain[i].file, plain[i].columns,
                      constants=plain[i].constants,
                      deleted_rows=data.draw(vectors(plain[i].file.row_count)))
             for i in order]
    scans: list[object] = []
    real_scan = DataFileReader._scan

    def spy(self: DataFileReader, *args: object) -> object:
        out = real_scan(self, *args)  # type: ignore[arg-type]
        scans.append(out)
        return out

    with mock.patch.object(data_file, "_SCAN_BATCH_ROWS", batch), \
            mock.patch.object(DataFileReader, "_scan", spy):
        got = reader.read_many(reads)
    assert len(scans) == 1 and scans[0] is not None  # the scan path, not the per-file one
    assert len(got) == len(reads)
    for r, t in zip(reads, got):
        alone = reader.read_one(r)
        assert t.schema == alone.schema
        assert t.to_pylist() == alone.to_pylist()
        n = r.file.row_count
        keep = np.ones(n, dtype=bool)
        if r.deleted_rows is not None:
            keep[r.deleted_rows[r.deleted_rows < n]] = False
        whole = reader.read_one(FileRead(r.bucket_path, r.file, r.columns,
                                         constants=r.constants))
        assert t.to_pylist() == [row for row, k in zip(whole.to_pylist(), keep) if k]


def test_a_file_whose_rows_differ_from_its_manifest_is_refused(
    files: tuple[DataFileReader, list[FileRead]]
) -> None:
    """The scan cannot vouch for a file whose row count differs from its manifest entry:
    the per-file path reads it and names it."""
    from dataclasses import replace

    from paimon_core.errors import CorruptMetadataError

    reader, plain = files
    bad = [plain[0], FileRead(plain[1].bucket_path,
                              replace(plain[1].file, row_count=plain[1].file.row_count + 1),
                              plain[1].columns, constants=plain[1].constants), *plain[2:]]
    with pytest.raises(CorruptMetadataError, match=plain[1].file.file_name):
        reader.read_many(bad)


@pytest.mark.parametrize("batch", [2, 1 << 17])
def test_dv_table_projection_and_filter(tmp_path: Path, batch: int) -> None:
    """A deletion-vector table (rows of level >= 1 files marked deleted by later upserts,
    deletes included) read with a projection and a filter equals its full read, projected
    and filtered afterwards; the filter's column need not be projected."""
    t = make_table(tmp_path / "wh", COLUMNS, partition_keys=["pt"], primary_keys=["pt", "k"],
                   options={"bucket": "2", "deletion-vectors.enabled": "true"})
    rng = np.random.default_rng(7)
    model: dict[tuple[str, int], tuple[int, str | None]] = {}
    for i in range(1, 6):
        n = 60
        ks = rng.integers(0, 80, n)
        pts = rng.choice(["a", "b"], n)
        kinds = rng.choice(["+I", "-D"], n, p=[0.8, 0.2]) if i > 1 else ["+I"] * n
        vs = rng.integers(0, 1000, n)
        rows = {}
        for p, k, v, kind in zip(pts, ks, vs, kinds):
            rows[(str(p), int(k))] = (int(v), str(kind))
        write_rows(t, pa.table({
            "pt": [p for p, _ in rows], "k": pa.array([k for _, k in rows], pa.int32()),
            "v": pa.array([v for v, _ in rows.values()], pa.int64()),
            "s": [f"s{v}" for v, _ in rows.values()],
            "_k": [kind for _, kind in rows.values()]}), i, row_kind_column="_k")
        for key, (v, kind) in rows.items():
            if kind == "-D":
                model.pop(key, None)
            else:
                model[key] = (v, f"s{v}")
    vectors = t.inspect.table_indexes()
    assert vectors.num_rows and sum(
        r["_CARDINALITY"] or 0 for ranges in vectors.column("dv_ranges").to_pylist()
        for r in ranges or ()) > 0  # some rows are marked deleted, not merged away
    with mock.patch.object(data_file, "_SCAN_BATCH_ROWS", batch):
        full = t.to_arrow()
        got = t.to_arrow(columns=["k", "s"], filter=["v >= 500", "pt = 'b'"])
    assert sorted(((r["pt"], r["k"]), (r["v"], r["s"])) for r in full.to_pylist()) \
        == sorted(model.items())
    mask = pc.and_(pc.greater_equal(full.column("v"), 500), pc.equal(full.column("pt"), "b"))
    expected = full.filter(mask).select(["k", "s"])
    assert got.schema == expected.schema
    assert sorted(got.to_pylist(), key=lambda r: r["k"]) \
        == sorted(expected.to_pylist(), key=lambda r: r["k"])
    assert got.num_rows


def test_each_index_file_is_read_once_per_read(tmp_path: Path) -> None:
    """A bucket's DV index file holds the vectors of several of its data files: a read fetches
    it once, not once per data file."""
    from paimon_core.io.file_io import FileIO

    t = make_table(tmp_path / "wh", COLUMNS, partition_keys=["pt"], primary_keys=["pt", "k"],
                   options={"bucket": "1", "deletion-vectors.enabled": "true"})
    # 400 keys, then 200 of them, then 10 of those: three levels, the two lower ones with
    # rows marked deleted (vectors of two data files in the bucket's one index file)
    for i, ks in enumerate([range(400), range(100, 300), range(150, 160)], 1):
        write_rows(t, pa.table({"pt": ["p"] * len(ks), "k": pa.array(ks, pa.int32()),
                                "v": pa.array([i] * len(ks), pa.int64()),
                                "s": [f"s{i}"] * len(ks)}), i)
    splits = t.new_read_builder().new_scan().plan().splits
    index_paths = {df.path for s in splits for _, df in s.deletion_files}
    with_vectors = max(len(s.deletion_files) for s in splits)
    assert with_vectors >= 2, "the bucket should hold several vectors"
    calls: list[str] = []
    real = FileIO.read_bytes

    def spy(self: FileIO, path: str) -> bytes:
        calls.append(path)
        return real(self, path)

    with mock.patch.object(FileIO, "read_bytes", spy):
        got = t.to_arrow()
        streamed = pa.Table.from_batches(
            list(t.new_read_builder().new_read().to_batches(
                t.new_read_builder().new_scan().plan().splits)))
    assert sorted(p for p in calls if p in index_paths) == sorted(index_paths) * 2
    ks = sorted(got.column("k").to_pylist())
    assert ks == list(range(400))
    assert sorted(got.filter(pc.equal(got.column("v"), 3)).column("k").to_pylist()) \
        == list(range(150, 160))
    assert sorted(streamed.column("k").to_pylist()) == ks
