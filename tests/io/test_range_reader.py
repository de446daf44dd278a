"""Sized opens of data files on S3 (``FileIO.open_sized``): no HEAD, a small file in one GET,
a large one as its tail and then only the ranges the reader needs; a file shorter than its
metadata says is a typed error naming it."""

from __future__ import annotations

import io
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import CorruptMetadataError
from paimon_core.io.file_io import FileIO
from paimon_core.io.range_reader import TAIL_BYTES, WHOLE_FILE_BYTES, RangeReader
from paimon_core.schema_builder import Schema
from tests.reliability.s3proxy import FaultProxy


def _parquet(rows: int) -> bytes:
    rng = np.random.default_rng(7)
    t = pa.table({"a": pa.array(np.arange(rows, dtype=np.int64)),
                  "b": pa.array(rng.random(rows)),
                  "c": pa.array([f"s{i % 977}" for i in range(rows)])})
    buf = io.BytesIO()
    pq.write_table(t, buf, compression="none")
    return buf.getvalue()


def test_reads_inside_the_first_block_make_no_request() -> None:
    data = bytes(range(256)) * 1024  # 256 KiB: above the tail, below the whole-file size
    calls: list[tuple[int, int]] = []

    def fetch(start: int, end: int) -> bytes:
        calls.append((start, end))
        return data[start:end]

    r = RangeReader("f", len(data), fetch, whole_file_bytes=64 << 10, tail_bytes=TAIL_BYTES)
    r.seek(-8, io.SEEK_END)
    assert r.read(8) == data[-8:]
    assert calls == [(len(data) - TAIL_BYTES, len(data))]  # the tail, once
    r.seek(len(data) - 1000)
    assert r.read(100) == data[-1000:-900]
    assert len(calls) == 1
    r.seek(10)
    assert r.read(20) == data[10:30]  # outside the tail: exactly that range
    assert calls[1:] == [(10, 30)]
    r.seek(len(data) + 5)
    assert r.read(4) == b""


def test_streamed_columns_read_ahead_within_the_cache() -> None:
    """A streamed read (every column chunk its own sequence of small reads, interleaved)
    fetches ahead per stream: a few large GETs, not one per buffer; the blocks kept never
    exceed the cache; the rows are the file's."""
    rng = np.random.default_rng(3)
    n = 400_000
    t = pa.table({c: pa.array(rng.random(n)) for c in "abcd"})
    buf = io.BytesIO()
    pq.write_table(t, buf, compression="none", row_group_size=200_000)
    data = buf.getvalue()  # ~12.8 MB

    def streamed(**kw: int) -> tuple[pa.Table, list[tuple[int, int]], RangeReader]:
        calls: list[tuple[int, int]] = []

        def fetch(start: int, end: int) -> bytes:
            calls.append((start, end))
            return data[start:end]

        r = RangeReader("f", len(data), fetch, **kw)
        pf = pq.ParquetFile(r, buffer_size=64 << 10, pre_buffer=False)
        out = pa.Table.from_batches(list(pf.iter_batches(batch_size=50_000)))
        return out, calls, r

    got, calls, r = streamed(read_ahead_bytes=4 << 20, cache_bytes=16 << 20)
    exact, exact_calls, _ = streamed(read_ahead_bytes=1)  # no read-ahead: one GET per read
    assert got.equals(t) and exact.equals(t)
    assert len(exact_calls) > 100  # a GET per page (~1 MB) or buffer
    # 4 streams share 16 MiB: 4 MiB ahead each -> 4 blocks, plus each of the 8 chunks' first
    # read and the footer
    assert len(calls) <= len(data) // (4 << 20) + 2 * 8 + 2, calls
    assert r._cached <= 16 << 20
    assert sum(e - s for s, e in calls) < 1.5 * len(data)  # little read twice


def test_short_file_is_an_error_naming_it() -> None:
    r = RangeReader("bucket-0/data-1.parquet", 100, lambda s, e: b"x" * 10)
    with pytest.raises(OSError, match=r"data-1\.parquet.*shorter than the 100 bytes"):
        r.read(100)


@pytest.fixture
def proxied_io(s3_root: tuple[str, dict[str, str]], s3_server: dict[str, str]
               ) -> Iterator[tuple[FileIO, FaultProxy, str]]:
    root, opts = s3_root
    proxy = FaultProxy(s3_server["endpoint"]).start()
    try:
        yield FileIO(root, {**opts, "s3.endpoint": proxy.endpoint}), proxy, root
    finally:
        proxy.stop()


@pytest.mark.s3
def test_small_parquet_file_is_one_get(proxied_io: tuple[FileIO, FaultProxy, str]) -> None:
    fio, proxy, root = proxied_io
    blob = _parquet(1000)
    assert len(blob) <= WHOLE_FILE_BYTES
    path = f"{root}/small.parquet"
    fio.write_bytes(path, blob)
    with proxy.counting("small file") as n:
        t = pq.ParquetFile(pa.PythonFile(fio.open_sized(path, len(blob)), mode="r")).read(
            columns=["a", "c"])
    assert t.column("a").to_pylist() == list(range(1000))
    assert [e.kind for e in n.exchanges] == ["GET range"], n.describe()


@pytest.mark.s3
def test_large_parquet_file_reads_tail_then_chunks(
        proxied_io: tuple[FileIO, FaultProxy, str]) -> None:
    fio, proxy, root = proxied_io
    blob = _parquet(300_000)  # ~7 MB, one row group
    assert len(blob) > WHOLE_FILE_BYTES
    path = f"{root}/large.parquet"
    fio.write_bytes(path, blob)
    with proxy.counting("large file, one column") as n:
        t = pq.ParquetFile(pa.PythonFile(fio.open_sized(path, len(blob)), mode="r")).read(
            columns=["a"])
    assert t.column("a").to_pylist()[-3:] == [299_997, 299_998, 299_999]
    assert n.count("HEAD") == 0, n.describe()
    # the tail (footer), then column a's chunk: never the whole file
    assert n.count("GET range") == 2, n.describe()
    got = sum(int(e.range.split("-")[1]) - int(e.range.split("=")[1].split("-")[0]) + 1
              for e in n.exchanges if e.range)
    assert got < len(blob) // 2, n.describe()


@pytest.mark.s3
def test_data_file_shorter_or_missing_on_s3_is_typed(s3_root: tuple[str, dict[str, str]]
                                                     ) -> None:
    """A data file that lost bytes, or the whole file, is a CorruptMetadataError naming it,
    never a wrong read or a library error."""
    root, opts = s3_root
    cat = FileSystemCatalog(root, opts)
    t = cat.create_table("db.t", Schema.of([("k", "INT"), ("v", "STRING")]))
    w = t.new_write("u")
    w.write_arrow(pa.table({"k": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}))
    t.new_commit("u").commit(w.prepare_commit(), 1)
    split = t.new_read_builder().new_scan().plan().splits[0]
    name = split.files[0].file_name
    path = next(p for p in t.file_io.fs.find(t.file_io._fs_path(t.path)) if p.endswith(name))
    full = t.file_io.fs.cat_file(path)
    t.file_io.fs.pipe_file(path, full[: len(full) // 2])
    with pytest.raises(CorruptMetadataError, match=name):
        cat.get_table("db.t").to_arrow()
    t.file_io.fs.rm_file(path)
    with pytest.raises(CorruptMetadataError, match=f"{name}.*missing"):
        cat.get_table("db.t").to_arrow()
