"""TableRead: the bulk (one Arrow scan) path, partition constants, sequence-ordered merges."""

from __future__ import annotations

import datetime
import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_core.errors import CorruptMetadataError
from paimon_core.read import data_file
from paimon_core.read.data_file import repeat
from paimon_core.table import FileStoreTable
from tests.tables import make_table

COLS = [("dt", "STRING"), ("p", "INT"), ("d", "DATE"), ("id", "BIGINT"), ("v", "STRING")]


def _table(tmp_path: Path, **options: str) -> FileStoreTable:
    return make_table(tmp_path / "wh", COLS, partition_keys=["dt", "p", "d"],
                      primary_keys=["dt", "p", "d", "id"], options={"bucket": "2", **options})


def _batch(keys: list[tuple[str, int, datetime.date, int]], tag: str) -> pa.Table:
    return pa.table(
        {
            "dt": [k[0] for k in keys],
            "p": pa.array([k[1] for k in keys], pa.int32()),
            "d": pa.array([k[2] for k in keys], pa.date32()),
            "id": pa.array([k[3] for k in keys], pa.int64()),
            "v": [f"{tag}-{k[3]}" for k in keys],
        }
    )


def _write(
    t: FileStoreTable, data: pa.Table, ident: int, user: str = "u", deletes: bool = False
) -> None:
    w = t.new_write(user)
    if deletes:
        w.delete_arrow(data)
    else:
        w.write_arrow(data)
    t.new_commit(user).commit(w.prepare_commit(), ident)
    w.close()


PARTS = [("a", 1, datetime.date(2024, 1, 1)), ("b/ c=%", -7, datetime.date(1970, 1, 1))]


def _history(t: FileStoreTable, seed: int) -> dict[tuple[Any, ...], str]:
    """Several commits of upserts and deletes; returns the expected final state."""
    rng = random.Random(seed)
    state: dict[tuple[Any, ...], str] = {}
    for ident in range(1, 7):
        keys = sorted({(*rng.choice(PARTS), rng.randrange(60)) for _ in range(40)})
        if ident % 3 == 0:
            _write(t, _batch(keys, "x"), ident, deletes=True)
            for k in keys:
                state.pop(k, None)
        else:
            _write(t, _batch(keys, f"c{ident}"), ident)
            for k in keys:
                state[k] = f"c{ident}-{k[3]}"
    return state


def _rows(table: pa.Table) -> dict[tuple[Any, ...], str]:
    return {(r["dt"], r["p"], r["d"], r["id"]): r["v"] for r in table.to_pylist()}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_merged_read_equals_model_and_is_key_ordered_per_split(tmp_path: Path, seed: int) -> None:
    t = _table(tmp_path)
    expected = _history(t, seed)
    got = t.to_arrow()
    assert _rows(got) == expected
    assert got.num_rows == len(expected)
    # each split's rows come out in key order (like Java's merge read)
    rb = t.new_read_builder()
    for split in rb.new_scan().plan().splits:
        ids = rb.new_read().read_split(split).column("id").to_pylist()
        assert ids == sorted(ids)
    # the bulk path and the file-by-file path agree
    assert _rows(t.to_arrow(filter="id >= 30")) == {k: v for k, v in expected.items() if k[3] >= 30}


def test_per_file_fallback_gives_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _table(tmp_path)
    expected = _history(t, 4)
    monkeypatch.setattr(data_file.DataFileReader, "_scan", lambda *a: None)
    assert _rows(t.to_arrow()) == expected


def test_overlapping_sequence_ranges_still_latest_wins(tmp_path: Path) -> None:
    # two writers that started from the same restored state write overlapping sequence
    # ranges: the merge must then order by sequence number, not by file
    t = _table(tmp_path, bucket="1")
    part = PARTS[0]
    keys = [(*part, i) for i in range(10)]
    _write(t, _batch(keys, "base"), 1)
    w1, w2 = t.new_write("w1"), t.new_write("w2")
    w1.write_arrow(_batch(keys[:5], "one"))
    w2.write_arrow(_batch(keys[3:9], "two"))
    m1, m2 = w1.prepare_commit(), w2.prepare_commit()
    t.new_commit("w1").commit(m1, 1)
    t.new_commit("w2").commit(m2, 1)
    files = [f for s in t.new_read_builder().new_scan().plan().splits for f in s.files]
    seqs = sorted((f.min_sequence_number, f.max_sequence_number) for f in files)
    assert seqs[-2:] == [(10, 14), (10, 15)], seqs  # overlapping; w2's file sorts last
    got = _rows(t.to_arrow())
    # w1 wrote keys 0-4 with sequence numbers 10-14, w2 keys 3-8 with 10-15: keys 3 and 4
    # have the higher sequence number in w1's file although w2's file sorts after it
    assert [got[k] for k in keys] == [
        *(f"one-{i}" for i in range(5)),
        *(f"two-{i}" for i in range(5, 9)),
        "base-9",
    ]


def test_row_count_mismatch_names_the_file(tmp_path: Path) -> None:
    t = _table(tmp_path, bucket="1")
    part = PARTS[0]
    _write(t, _batch([(*part, i) for i in range(10)], "a"), 1)
    _write(t, _batch([(*part, i) for i in range(5, 15)], "b"), 2)
    split = t.new_read_builder().new_scan().plan().splits[0]
    assert len(split.files) == 2
    victim = Path(split.bucket_path) / split.files[0].file_name
    pq.write_table(pq.read_table(victim).slice(0, 3), victim)
    with pytest.raises(CorruptMetadataError) as ei:
        t.to_arrow()
    assert victim.name in str(ei.value)


def test_file_lacking_a_column_names_the_file(tmp_path: Path) -> None:
    t = _table(tmp_path, bucket="1")
    part = PARTS[0]
    _write(t, _batch([(*part, i) for i in range(10)], "a"), 1)
    _write(t, _batch([(*part, i) for i in range(5, 15)], "b"), 2)
    split = t.new_read_builder().new_scan().plan().splits[0]
    victim = Path(split.bucket_path) / split.files[1].file_name
    pq.write_table(pq.read_table(victim).drop(["v"]), victim)
    with pytest.raises(CorruptMetadataError) as ei:
        t.to_arrow()
    assert victim.name in str(ei.value)


def test_partition_columns_come_from_the_partition(tmp_path: Path) -> None:
    t = _table(tmp_path)
    expected = _history(t, 5)
    got = t.to_arrow(columns=["dt", "p", "d"])
    assert sorted(got.to_pylist(), key=str) == sorted(
        [{"dt": k[0], "p": k[1], "d": k[2]} for k in expected], key=str
    )
    assert got.schema.field("p").type == pa.int32()
    assert got.schema.field("d").type == pa.date32()


@pytest.mark.parametrize(
    ("value", "typ"),
    [
        ("2024-01-02", pa.string()),
        ("", pa.string()),
        ("ü/ =%", pa.string()),
        (b"\x00\xff", pa.binary()),
        (-5, pa.int8()),
        (2**40, pa.int64()),
        (True, pa.bool_()),
        (19000, pa.date32()),
        (None, pa.string()),
        (None, pa.int32()),
    ],
)
def test_repeat(value: Any, typ: pa.DataType) -> None:
    for n in (0, 1, 1000):
        a = repeat(pa.scalar(value, type=typ), n)
        a.validate(full=True)
        assert a.type == typ
        assert a.to_pylist() == [pa.scalar(value, type=typ).as_py()] * n
    assert np.asarray(repeat(pa.scalar(3, pa.int16()), 4)).tolist() == [3, 3, 3, 3]
