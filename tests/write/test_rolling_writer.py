"""The rolling writer of primary-key files (``RollingKvWriter`` / ``KvFileStream``): files cut
at the target size, every file's meta equal to what the one-shot ``write_kv_file`` gives for
the same rows (the reference), changelog files never ending with ``-U``, aborts."""

from __future__ import annotations

import decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_core.datafile.writer import DataFileWriter, RollingKvWriter
from paimon_core.errors import StorageError
from paimon_core.io.file_io import FileIO
from paimon_core.layout import DataFilePathFactory
from paimon_core.schema_builder import Schema
from paimon_core.spec.binary_row import deserialize_binary_row
from paimon_core.spec.manifest import FileSource
from paimon_core.spec.schema import TableSchema
from paimon_core.types import parse_sql_type

COLS = [("pt", "STRING NOT NULL"), ("k1", "STRING NOT NULL"), ("k2", "BIGINT NOT NULL"),
        ("d", "DOUBLE"), ("s", "STRING"), ("ts", "TIMESTAMP(6)"), ("dec", "DECIMAL(10, 2)")]
KEY_TYPES = [parse_sql_type("STRING NOT NULL"), parse_sql_type("BIGINT NOT NULL")]


def schema(**options: str) -> TableSchema:
    return Schema.of(COLS, partition_keys=["pt"], primary_keys=["pt", "k1", "k2"],
                     options={"bucket": "1", **options}).to_table_schema()


def records(n: int, seed: int, *, changelog: bool = False) -> pa.Table:
    """``n`` records sorted by key, with NaN / -0.0 / nulls / long strings in the values."""
    rng = np.random.default_rng(seed)
    k1 = np.sort(rng.choice([f"key-{i:03d}" + "x" * int(i % 7 == 0) * 140 for i in range(50)],
                            size=n))
    k2 = rng.permutation(n).astype(np.int64)
    order = np.lexsort((k2, k1))
    d = rng.normal(size=n)
    d[rng.random(n) < 0.05] = np.nan
    d[rng.random(n) < 0.05] = -0.0
    s = [None if rng.random() < 0.1 else "v" * int(rng.integers(0, 40)) + str(i)
         for i in range(n)]
    kinds = rng.choice([0, 2, 3], size=n).astype(np.int8)
    if changelog:  # -U/+U pairs: a -U is always followed by its +U
        kinds = np.resize(np.array([0, 1, 2, 3], np.int8), n)
        if kinds[-1] == 1:
            kinds[-1] = 0
    return pa.table({
        "pt": pa.array(["p"] * n),
        "k1": pa.array(k1[order]),
        "k2": pa.array(k2[order]),
        "d": pa.array(d, mask=rng.random(n) < 0.05),
        "s": pa.array(s, pa.string()),
        "ts": pa.array(rng.integers(0, 10**15, n), pa.timestamp("us")),
        "dec": pa.array([decimal.Decimal(int(x)) / 100 for x in rng.integers(-10**6, 10**6, n)],
                        pa.decimal128(10, 2)),
        "_SEQUENCE_NUMBER": pa.array(rng.integers(0, 10**9, n), pa.int64()),
        "_VALUE_KIND": pa.array(kinds, pa.int8()),
    })


def new_writer(root: Path, s: TableSchema, fio: FileIO | None = None) -> DataFileWriter:
    return DataFileWriter(fio or FileIO(str(root)), s, DataFilePathFactory())


def roll(w: DataFileWriter, bucket: str, table: pa.Table, chunks: list[int], rows_per_file: int,
         *, changelog: bool = False) -> list:
    with RollingKvWriter(w, bucket, target_file_size=rows_per_file * 100, bytes_per_row=100.0,
                         level=3, changelog=changelog,
                         file_source=None if changelog else FileSource.COMPACT,
                         constant=(0,)) as out:
        pos = 0
        for c in chunks:
            out.write(table.slice(pos, c))
            pos += c
        out.write(table.slice(pos))
        return out.close()


def assert_same_rows(a: pa.Table, b: pa.Table) -> None:
    """Equal tables, NaN equal to NaN (bit for bit)."""
    def bits(t: pa.Table) -> np.ndarray:
        return np.asarray(t.column("d").fill_null(1.5).to_numpy()).view(np.int64)

    assert a.drop(["d"]).equals(b.drop(["d"]))
    assert a.column("d").is_null().equals(b.column("d").is_null())
    assert np.array_equal(bits(a), bits(b))


META_FIELDS = ("row_count", "min_key", "max_key", "key_stats", "value_stats",
               "min_sequence_number", "max_sequence_number", "delete_row_count", "schema_id")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rolling_files_equal_the_one_shot_writer(tmp_path: Path, seed: int) -> None:
    s = schema(**{"fields.s.stats-mode": "truncate(8)"})
    table = records(5000, seed)
    rng = np.random.default_rng(seed)
    chunks = [int(c) for c in rng.integers(0, 900, 12)]
    w = new_writer(tmp_path, s)
    metas = roll(w, str(tmp_path / "b"), table, chunks, rows_per_file=1200)
    # cut at the target: 1200 rows per file, the rest in the last one
    assert [m.row_count for m in metas] == [1200, 1200, 1200, 1200, 200]
    assert all(m.level == 3 and m.file_source is FileSource.COMPACT for m in metas)
    ref = new_writer(tmp_path, s)
    pos = 0
    prev_max = None
    for m in metas:
        back = pq.read_table(tmp_path / "b" / m.file_name)
        want = table.slice(pos, m.row_count)
        pos += m.row_count
        assert_same_rows(back.select(want.column_names).cast(want.schema), want)
        one = ref.write_kv_file(str(tmp_path / "ref"), want, constant=(0,))
        for name in META_FIELDS:
            assert getattr(m, name) == getattr(one, name), name
        assert m.file_size == (tmp_path / "b" / m.file_name).stat().st_size
        lo = deserialize_binary_row(m.min_key, KEY_TYPES)
        hi = deserialize_binary_row(m.max_key, KEY_TYPES)
        assert lo <= hi and (prev_max is None or prev_max < lo)  # key ranges do not overlap
        prev_max = hi
    assert pos == table.num_rows
    assert w.written_paths == [str(tmp_path / "b" / m.file_name) for m in metas]


def test_row_groups_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import paimon_core.datafile.writer as writer_mod

    monkeypatch.setattr(writer_mod, "_ROW_GROUP_ROWS", 700)
    table = records(3000, 4)
    metas = roll(new_writer(tmp_path, schema()), str(tmp_path), table, [100] * 20, 10**6)
    assert [m.row_count for m in metas] == [3000]
    md = pq.ParquetFile(tmp_path / metas[0].file_name).metadata
    # a row group is flushed once it holds 700 rows or more (pieces are not split)
    assert [md.row_group(i).num_rows for i in range(md.num_row_groups)] == [700, 700, 1600]


def test_changelog_files_never_end_with_update_before(tmp_path: Path) -> None:
    table = records(2001, 5, changelog=True)
    metas = roll(new_writer(tmp_path, schema()), str(tmp_path), table, [3, 5, 7, 11], 10,
                 changelog=True)
    assert len(metas) > 100 and sum(m.row_count for m in metas) == table.num_rows
    assert all(m.file_name.startswith("changelog-") for m in metas)
    assert all(m.file_source is FileSource.APPEND for m in metas)
    for m in metas:
        kinds = pq.read_table(tmp_path / m.file_name).column("_VALUE_KIND").to_pylist()
        assert kinds[-1] != 1 and kinds[0] != 2, m.file_name  # whole -U/+U pairs per file
        assert 10 <= len(kinds) <= 11 or m is metas[-1]


def test_object_store_files(tmp_path: Path) -> None:
    fio = FileIO("memory://rolling")
    w = new_writer(tmp_path, schema(), fio)
    table = records(1000, 6)
    metas = roll(w, "memory://rolling/t/bucket-0", table, [250], 400)
    assert [m.row_count for m in metas] == [400, 400, 200]
    for m in metas:
        path = f"memory://rolling/t/bucket-0/{m.file_name}"
        assert fio.size(path) == m.file_size


def test_a_failure_aborts_the_open_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import paimon_core.datafile.writer as writer_mod

    monkeypatch.setattr(writer_mod, "_ROW_GROUP_ROWS", 100)  # the open file is on disk
    w = new_writer(tmp_path, schema())
    table = records(1000, 7)
    out = RollingKvWriter(w, str(tmp_path), target_file_size=40_000, bytes_per_row=100.0)
    with pytest.raises(StorageError), out:
        out.write(table.slice(0, 600))  # one file done (400 rows), one open
        assert len(out.files) == 1 and w.written_paths
        raise StorageError("x", "injected")
    # every file created is in written_paths (what the caller deletes); none is open
    assert len(w.written_paths) == 2 and all(Path(p).exists() for p in w.written_paths)
    for p in w.written_paths:
        Path(p).unlink()
    assert not list(tmp_path.glob("*.parquet"))
