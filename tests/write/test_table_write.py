"""TableWrite: routing, sequence numbers, in-buffer merge, rolling, flushing, abort."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_core.bucket import bucket_ids
from paimon_core.catalog import FileSystemCatalog
from paimon_core.commit_message import CommitMessage
from paimon_core.errors import PaimonError, SchemaError, UnsupportedError
from paimon_core.schema_builder import Schema
from paimon_core.schema_change import publish_schema
from paimon_core.spec.binary_row import deserialize_binary_row, serialize_binary_row
from paimon_core.table import FileStoreTable
from paimon_core.types import parse_sql_type
from tests.profiles import examples
from tests.tables import make_table

PK_COLS = [("dt", "STRING"), ("id", "BIGINT"), ("v", "STRING")]


def pk_table(catalog: FileSystemCatalog, name: str = "db.pk", **options: str) -> FileStoreTable:
    return make_table(catalog, PK_COLS, name=name, partition_keys=["dt"],
                      primary_keys=["dt", "id"], options={"bucket": "2", **options})


def rows(dt: list[str], ids: list[int], v: list[str | None]) -> pa.Table:
    return pa.table({"dt": dt, "id": pa.array(ids, pa.int64()), "v": pa.array(v, pa.string())})


def commit(table: FileStoreTable, msgs: list[CommitMessage], ident: int) -> None:
    table.new_commit("test-user").commit(msgs, ident)


def read_sorted(table: FileStoreTable) -> list[dict[str, Any]]:
    return sorted(table.to_arrow().to_pylist(), key=lambda r: (r["dt"], r["id"]))


def files_of(msgs: list[CommitMessage]) -> Iterator[tuple[CommitMessage, Any]]:
    for m in msgs:
        for f in m.new_files:
            yield m, f


def bucket_dir(table: FileStoreTable, m: CommitMessage) -> str:
    pt = deserialize_binary_row(m.partition, [table.schema.field("dt").type])[0]
    return os.path.join(table.path, f"dt={pt}", f"bucket-{m.bucket}")


def read_file(table: FileStoreTable, m: CommitMessage, f: Any) -> pa.Table:
    return pq.read_table(os.path.join(bucket_dir(table, m), f.file_name))


# --------------------------------------------------------------------------------- PK tables


def test_in_buffer_dedup_and_sequence_numbers(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, bucket="1")
    w = t.new_write("u")
    w.write_arrow(rows(["a"] * 4, [3, 1, 3, 2], ["x", "y", "z", None]))
    w.write_arrow(rows(["a"], [1], ["y2"]))
    msgs = w.prepare_commit()
    assert len(msgs) == 1 and len(msgs[0].new_files) == 1
    m, f = next(files_of(msgs))
    data = read_file(t, m, f)
    assert data.column("_KEY_id").to_pylist() == [1, 2, 3]
    assert data.column("v").to_pylist() == ["y2", None, "z"]
    assert data.column("_SEQUENCE_NUMBER").to_pylist() == [4, 3, 2]
    assert (f.row_count, f.min_sequence_number, f.max_sequence_number) == (3, 2, 4)
    key = [parse_sql_type("BIGINT NOT NULL")]
    assert f.min_key == serialize_binary_row([1], key)
    assert f.max_key == serialize_binary_row([3], key)
    assert m.total_buckets == 1 and m.table_path == t.path and m.schema_id == 0
    commit(t, msgs, 1)
    assert read_sorted(t) == [{"dt": "a", "id": 1, "v": "y2"}, {"dt": "a", "id": 2, "v": None},
                              {"dt": "a", "id": 3, "v": "z"}]


def test_sequence_numbers_continue_across_commits_and_writers(
    catalog: FileSystemCatalog,
) -> None:
    t = pk_table(catalog, bucket="1")
    w = t.new_write("A")
    ca = t.new_commit("A")
    w.write_arrow(rows(["a", "a"], [1, 2], ["x", "y"]))
    m1 = w.prepare_commit()
    assert [(f.min_sequence_number, f.max_sequence_number) for _, f in files_of(m1)] == [(0, 1)]
    ca.commit(m1, 1)
    w.write_arrow(rows(["a"], [1], ["x2"]))
    m2 = w.prepare_commit()
    assert [f.min_sequence_number for _, f in files_of(m2)] == [2]
    ca.commit(m2, 2)
    # a brand-new writer restores from the latest snapshot; another partition starts at 0
    w2 = catalog.get_table("db.pk").new_write("B")
    w2.write_arrow(rows(["a", "b"], [2, 9], ["y2", "q"]))
    m3 = w2.prepare_commit()
    got = {(m.partition, f.min_sequence_number) for m, f in files_of(m3)}
    pa_ = serialize_binary_row(["a"], [parse_sql_type("STRING NOT NULL")])
    pb = serialize_binary_row(["b"], [parse_sql_type("STRING NOT NULL")])
    assert got == {(pa_, 3), (pb, 0)}
    t.new_commit("B").commit(m3, 1)  # another commit user: seq 3 in dt=a, 0 in dt=b
    # writer A reads B's snapshot before its next round (its own snapshots are skipped)
    w.write_arrow(rows(["a", "b"], [1, 9], ["x3", "q2"]))
    m4 = w.prepare_commit()
    assert {(m.partition, f.min_sequence_number) for m, f in files_of(m4)} == {
        (pa_, 4), (pb, 1)}
    ca.commit(m4, 3)
    assert read_sorted(t) == [{"dt": "a", "id": 1, "v": "x3"}, {"dt": "a", "id": 2, "v": "y2"},
                              {"dt": "b", "id": 9, "v": "q2"}]


def test_deletes_and_retractions(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog)
    w = t.new_write("u")
    w.write_arrow(rows(["a", "a", "b"], [1, 2, 3], ["x", "y", "z"]))
    commit(t, w.prepare_commit(), 1)
    w.delete_arrow(pa.table({"dt": ["a"], "id": pa.array([2], pa.int64())}))  # keys only
    kinds = pa.array(["-U", "+U", "-D"])
    w.write_arrow(rows(["b", "b", "a"], [3, 3, 1], ["z", "z2", "x"]).append_column("k", kinds),
                  row_kind_column="k")
    msgs = w.prepare_commit()
    deletes = {f.file_name: f.delete_row_count for _, f in files_of(msgs)}
    assert sorted(deletes.values()) == [0, 2] or sorted(deletes.values()) == [0, 1, 1]
    for m, f in files_of(msgs):
        data = read_file(t, m, f)
        kinds_in_file = data.column("_VALUE_KIND").to_pylist()
        assert f.delete_row_count == sum(k in (1, 3) for k in kinds_in_file)
    commit(t, msgs, 2)
    assert read_sorted(t) == [{"dt": "b", "id": 3, "v": "z2"}]


def test_ignore_delete_and_sequence_field(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.ign", **{"ignore-delete": "true"})
    w = t.new_write("u")
    w.write_arrow(rows(["a"], [1], ["x"]))
    w.delete_arrow(rows(["a"], [1], ["x"]))
    msgs = w.prepare_commit()
    assert sum(f.row_count for _, f in files_of(msgs)) == 1
    commit(t, msgs, 1)
    assert read_sorted(t) == [{"dt": "a", "id": 1, "v": "x"}]
    s = catalog.create_table("db.seq", Schema.of(
        [("id", "INT"), ("ver", "INT"), ("v", "STRING")], primary_keys=["id"],
        options={"bucket": "1", "sequence.field": "ver"}))
    w = s.new_write("u")
    w.write_arrow(pa.table({"id": [1, 1, 1], "ver": [5, 9, 7], "v": ["a", "b", "c"]}))
    msgs = w.prepare_commit()
    commit(s, msgs, 1)
    assert s.to_arrow().to_pylist() == [{"id": 1, "ver": 9, "v": "b"}]


def test_changelog_producer_input(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.cl", **{"changelog-producer": "input", "bucket": "1"})
    w = t.new_write("u")
    w.write_arrow(rows(["a", "a", "a"], [2, 1, 2], ["x", "y", "x2"]).append_column(
        "k", pa.array(["+I", "+I", "+U"])), row_kind_column="k")
    msgs = w.prepare_commit()
    (m,) = msgs
    assert len(m.changelog_files) == 1 and len(m.new_files) == 1
    cl = m.changelog_files[0]
    assert cl.file_name.startswith("changelog-") and cl.row_count == 3
    data = pq.read_table(os.path.join(bucket_dir(t, m), cl.file_name))
    assert data.column("_KEY_id").to_pylist() == [1, 2, 2]
    assert data.column("_SEQUENCE_NUMBER").to_pylist() == [1, 0, 2]
    assert data.column("_VALUE_KIND").to_pylist() == [0, 0, 2]
    commit(t, msgs, 1)
    ch = t.read_unmerged_changes(0, 1)
    assert sorted(zip(ch.column("_kind").to_pylist(), ch.column("v").to_pylist())) == [
        ("+I", "x"), ("+I", "y"), ("+U", "x2")]


def test_rolling_at_small_target_file_size(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.roll", **{"target-file-size": "4 kb", "bucket": "1"})
    w = t.new_write("u")
    n = 3000
    ids = np.random.default_rng(1).permutation(n)
    w.write_arrow(rows(["a"] * n, ids.tolist(), [f"v{i}" for i in ids]))
    msgs = w.prepare_commit()
    files = [f for _, f in files_of(msgs)]
    assert len(files) > 5
    assert sum(f.row_count for f in files) == n
    key = [parse_sql_type("BIGINT NOT NULL")]
    ranges = sorted((deserialize_binary_row(f.min_key, key)[0],
                     deserialize_binary_row(f.max_key, key)[0]) for f in files)
    for (_, hi), (lo, _) in itertools.pairwise(ranges):
        assert hi < lo  # sorted, non-overlapping files
    commit(t, msgs, 1)
    assert len(t.to_arrow()) == n
    a = catalog.create_table("db.aroll", Schema.of(
        [("x", "BIGINT")], options={"target-file-size": "8 kb"}))
    aw = a.new_write("u")
    for _ in range(4):
        aw.write_arrow(pa.table({"x": pa.array(np.arange(1000), pa.int64())}))
    amsgs = aw.prepare_commit()
    afiles = [f for _, f in files_of(amsgs)]
    # files roll at 8 KiB of Arrow data (1024 int64 rows); the rest is flushed at the end
    counts = sorted((f.min_sequence_number, f.row_count) for f in afiles)
    assert [c for _, c in counts] == [1024, 1024, 1024, 928]
    assert [s for s, _ in counts] == [0, 1024, 2048, 3072]
    assert all(f.max_sequence_number == f.min_sequence_number + f.row_count - 1 for f in afiles)


def test_buffer_flush_at_small_write_buffer_size(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.buf", **{"write-buffer-size": "2 kb", "bucket": "1"})
    w = t.new_write("u")
    for i in range(3):
        w.write_arrow(rows(["a"] * 200, list(range(200)), [f"{i}"] * 200))
    # files were written before prepare_commit, one per flush, with increasing sequences
    written = [p for p in Path(t.path).rglob("data-*.parquet")]
    assert len(written) == 3
    msgs = w.prepare_commit()
    files = sorted((f for _, f in files_of(msgs)), key=lambda f: f.min_sequence_number)
    assert [(f.min_sequence_number, f.max_sequence_number) for f in files] == [
        (0, 199), (200, 399), (400, 599)]
    commit(t, msgs, 1)
    assert {r["v"] for r in t.to_arrow().to_pylist()} == {"2"}  # the newest flush wins


def test_abort_deletes_unprepared_files_only(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.ab", **{"write-buffer-size": "1 kb", "bucket": "1"})
    w = t.new_write("u")
    w.write_arrow(rows(["a"] * 100, list(range(100)), ["x"] * 100))
    handed_out = w.prepare_commit()
    kept = {f.file_name for _, f in files_of(handed_out)}
    w.write_arrow(rows(["a"] * 100, list(range(100)), ["y"] * 100))  # flushed (tiny buffer)
    before = {p.name for p in Path(t.path).rglob("*.parquet")}
    assert len(before) > len(kept)
    w.abort()
    after = {p.name for p in Path(t.path).rglob("*.parquet")}
    assert after == kept
    assert w.prepare_commit() == []
    # the writer stays usable, names are never reused, sequence numbers keep increasing
    w.write_arrow(rows(["a"], [1], ["z"]))
    again = w.prepare_commit()
    new_names = {f.file_name for _, f in files_of(again)}
    assert not new_names & before
    assert min(f.min_sequence_number for _, f in files_of(again)) >= 200
    commit(t, handed_out + again, 1)
    assert {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}[1] == "z"


def test_close_aborts_and_refuses_more_writes(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.cl2", **{"write-buffer-size": "1 kb"})
    with t.new_write("u") as w:
        w.write_arrow(rows(["a"] * 100, list(range(100)), ["x"] * 100))
    assert list(Path(t.path).rglob("*.parquet")) == []
    with pytest.raises(PaimonError, match="closed"):
        w.write_arrow(rows(["a"], [1], ["x"]))


def test_partitions_null_empty_special(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.parts", Schema.of(
        [("p", "STRING"), ("q", "INT"), ("x", "INT")], partition_keys=["p", "q"]))
    w = t.new_write("u")
    w.write_arrow(pa.table({"p": ["a/b=c", None, "", " ", "a/b=c"], "q": [1, 2, None, 4, 1],
                            "x": [1, 2, 3, 4, 5]}))
    msgs = w.prepare_commit()
    assert all(m.bucket == 0 and m.total_buckets == -1 for m in msgs)
    dirs = {str(p.parent.relative_to(t.path)) for p in Path(t.path).rglob("*.parquet")}
    assert dirs == {"p=a%2Fb%3Dc/q=1/bucket-0", "p=__DEFAULT_PARTITION__/q=2/bucket-0",
                    "p=__DEFAULT_PARTITION__/q=__DEFAULT_PARTITION__/bucket-0",
                    "p=__DEFAULT_PARTITION__/q=4/bucket-0"}
    assert len(msgs) == 4  # '' and NULL are different partitions that share a directory
    types = [f.type for f in t.schema.fields]
    stats = {}
    for m in msgs:
        (f,) = m.new_files
        lo = deserialize_binary_row(f.value_stats.min_values, types)
        hi = deserialize_binary_row(f.value_stats.max_values, types)
        stats[tuple(deserialize_binary_row(m.partition, types[:2]))] = (
            lo[:2], hi[:2], f.value_stats.null_counts[:2], f.row_count)
    assert stats == {
        ("a/b=c", 1): (["a/b=c", 1], ["a/b=c", 1], (0, 0), 2),
        (None, 2): ([None, 2], [None, 2], (1, 0), 1),
        ("", None): (["", None], ["", None], (0, 1), 1),
        (" ", 4): ([" ", 4], [" ", 4], (0, 0), 1),
    }
    commit(t, msgs, 1)
    got = sorted(t.to_arrow().to_pylist(), key=lambda r: r["x"])
    assert [r["p"] for r in got] == ["a/b=c", None, "", " ", "a/b=c"]


def test_bucketed_append_and_routing(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.bk", Schema.of(
        [("k", "STRING"), ("x", "INT")], options={"bucket": "4", "bucket-key": "k"}))
    keys = [f"key{i}" for i in range(200)]
    w = t.new_write("u")
    w.write_arrow(pa.table({"k": keys, "x": list(range(200))}))
    msgs = w.prepare_commit()
    expected = bucket_ids([pa.array(keys)], [parse_sql_type("STRING")], 4)
    for m in msgs:
        assert m.total_buckets == 4
        for f in m.new_files:
            got = pq.read_table(os.path.join(t.path, f"bucket-{m.bucket}", f.file_name))
            assert all(expected[x] == m.bucket for x in got.column("x").to_pylist())
    assert sum(f.row_count for _, f in files_of(msgs)) == 200
    w.write_arrow(pa.table({"k": ["a"], "x": [1]}).append_column("kind", pa.array(["+I"])),
                  row_kind_column="kind")
    with pytest.raises(UnsupportedError, match="only \\+I"):
        w.write_arrow(pa.table({"k": ["a"], "x": [1], "kind": ["-D"]}), row_kind_column="kind")
    with pytest.raises(UnsupportedError):
        w.delete_arrow(pa.table({"k": ["a"], "x": [1]}))


def test_rowkind_field_option(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.rk", Schema.of(
        [("id", "INT"), ("op", "STRING"), ("v", "INT")], primary_keys=["id"],
        options={"bucket": "1", "rowkind.field": "op"}))
    w = t.new_write("u")
    w.write_arrow(pa.table({"id": [1, 2, 1], "op": ["+I", "+I", "-D"], "v": [1, 2, 1]}))
    commit(t, w.prepare_commit(), 1)
    assert t.to_arrow().to_pylist() == [{"id": 2, "op": "+I", "v": 2}]


@pytest.mark.parametrize("schema, match", [
    (Schema.of([("a", "INT")], options={"partition.legacy-name": "false"}), "legacy"),
])
def test_unsupported_tables(catalog: FileSystemCatalog, schema: Schema, match: str) -> None:
    t = catalog.create_table("db.u", schema)
    with pytest.raises(UnsupportedError, match=match):
        t.new_write("u")


def test_bad_options(catalog: FileSystemCatalog) -> None:
    schema = Schema.of([("id", "INT")], primary_keys=["id"],
                       options={"bucket": "1", "write-buffer-size": "lots"})
    with pytest.raises(SchemaError, match="write-buffer-size='lots'"):  # refused at CREATE
        catalog.create_table("db.o", schema)
    # a bad value stored by another engine: the write refuses it
    t = catalog.create_table("db.o", Schema.of([("id", "INT")], primary_keys=["id"],
                                               options={"bucket": "1"}))
    publish_schema(t.file_io, t.path, replace(t.schema, id=1, options={
        "bucket": "1", "write-buffer-size": "lots"}))
    with pytest.raises(SchemaError, match="write-buffer-size='lots'"):
        catalog.get_table("db.o").new_write("u")


def test_many_partitions_one_call(catalog: FileSystemCatalog) -> None:
    t = catalog.create_table("db.mp", Schema.of(
        [("p", "INT"), ("q", "STRING"), ("id", "BIGINT"), ("v", "DOUBLE")],
        partition_keys=["p", "q"], primary_keys=["p", "q", "id"], options={"bucket": "3"}))
    rng = np.random.default_rng(5)
    n = 5000
    data = pa.table({"p": rng.integers(0, 20, n).astype(np.int32),
                     "q": pa.array(rng.choice(["x", "y", "z"], n)),
                     "id": rng.integers(0, 400, n), "v": rng.random(n)})
    w = t.new_write("u")
    w.write_arrow(data)
    msgs = w.prepare_commit()
    assert len({(m.partition, m.bucket) for m in msgs}) == len(msgs)
    commit(t, msgs, 1)
    # model: last occurrence of every key wins
    model: dict[tuple[int, str, int], float] = {}
    for r in data.to_pylist():
        model[(r["p"], r["q"], r["id"])] = r["v"]
    got = {(r["p"], r["q"], r["id"]): r["v"] for r in t.to_arrow().to_pylist()}
    assert got == model


# --------------------------------------------------------------------------------- properties

KEY_TYPES = [("k1", "STRING"), ("k2", "DECIMAL(20, 2)"), ("k3", "TIMESTAMP(3)")]


def test_composite_keys_sorted_unique_with_exact_bounds(catalog: FileSystemCatalog) -> None:
    import datetime as dt
    import decimal

    t = catalog.create_table("db.ck", Schema.of(
        [*KEY_TYPES, ("v", "INT")], primary_keys=["k1", "k2", "k3"], options={"bucket": "1"}))
    rnd = np.random.default_rng(11)
    n = 2000
    k1 = rnd.choice(["", "a", "ab", "\xff", "é", "Z", "a\x00"], n)
    k2 = [decimal.Decimal(int(x)) / 100 for x in rnd.integers(-300, 300, n)]
    k3 = [dt.datetime(2024, 1, 1) + dt.timedelta(milliseconds=int(x))
          for x in rnd.integers(-5, 5, n)]
    data = pa.table({"k1": pa.array(k1.tolist()), "k2": pa.array(k2, pa.decimal128(20, 2)),
                     "k3": pa.array(k3, pa.timestamp("ms")),
                     "v": pa.array(range(n), pa.int32())})
    w = t.new_write("u")
    w.write_arrow(data)
    (m,) = w.prepare_commit()
    (f,) = m.new_files
    got = pq.read_table(os.path.join(t.path, "bucket-0", f.file_name))
    keys = list(zip(*(got.column(f"_KEY_{k}").to_pylist() for k, _ in KEY_TYPES)))
    java_keys = [(a.encode(), b, c) for a, b, c in keys]
    assert java_keys == sorted(java_keys) and len(set(keys)) == len(keys)
    model: dict[Any, int] = {}
    for r in data.to_pylist():
        model[(r["k1"], r["k2"], r["k3"])] = r["v"]
    assert dict(zip(keys, got.column("v").to_pylist())) == model
    types = [t.schema.field(k).type for k, _ in KEY_TYPES]
    assert f.min_key == serialize_binary_row(list(keys[0]), types)
    assert f.max_key == serialize_binary_row(list(keys[-1]), types)


@settings(max_examples=examples(25))
@given(
    batches=st.lists(
        st.lists(st.tuples(st.integers(0, 30), st.sampled_from(["+I", "-U", "+U", "-D"]),
                           st.integers(0, 9)), min_size=1, max_size=40),
        min_size=1, max_size=5),
    commit_every=st.integers(1, 3),
    tiny=st.booleans(),
)
def test_random_upserts_match_model(
    batches: list[list[tuple[int, str, int]]], commit_every: int, tiny: bool
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        opts = {"bucket": "2"}
        if tiny:
            opts.update({"write-buffer-size": "300 b", "target-file-size": "500 b"})
        t = FileSystemCatalog(d).create_table("db.h", Schema.of(
            [("id", "INT"), ("v", "INT")], primary_keys=["id"], options=opts))
        w = t.new_write("u")
        c = t.new_commit("u")
        model: dict[int, int] = {}
        ident = 0
        for i, batch in enumerate(batches):
            ids, kinds, vals = zip(*batch)
            w.write_arrow(pa.table({"id": pa.array(ids, pa.int32()),
                                    "v": pa.array(vals, pa.int32()), "k": kinds}),
                          row_kind_column="k")
            for k, kind, v in batch:
                if kind in ("-U", "-D"):
                    model.pop(k, None)
                else:
                    model[k] = v
            if (i + 1) % commit_every == 0 or i == len(batches) - 1:
                msgs = w.prepare_commit()
                for _, f in files_of(msgs):
                    assert f.min_sequence_number <= f.max_sequence_number
                ident += 1
                c.commit(msgs, ident)
        got = {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}
        assert got == model


def test_dictionary_encoding_only_in_files_big_enough_to_judge(
    catalog: FileSystemCatalog,
) -> None:
    """Small files carry no dictionary pages (zstd folds their repeats); a big file
    dictionary-encodes its low-cardinality columns only."""
    t = pk_table(catalog)
    w = t.new_write("u")
    w.write_arrow(rows(["a"] * 50, list(range(50)), ["x"] * 50))
    small = w.prepare_commit()
    commit(t, small, 1)
    for m, f in files_of(small):
        md = pq.ParquetFile(os.path.join(bucket_dir(t, m), f.file_name)).metadata
        assert not any(md.row_group(0).column(i).has_dictionary_page
                       for i in range(md.num_columns))
    n = 20_000
    w = t.new_write("u")
    w.write_arrow(rows(["b"] * n, list(range(n)), [f"v{i % 3}" for i in range(n)]))
    big = w.prepare_commit()
    commit(t, big, 2)
    for m, f in files_of(big):
        md = pq.ParquetFile(os.path.join(bucket_dir(t, m), f.file_name)).metadata
        enc = {md.row_group(0).column(i).path_in_schema:
               md.row_group(0).column(i).has_dictionary_page for i in range(md.num_columns)}
        assert enc["v"] and not enc["id"] and not enc["_SEQUENCE_NUMBER"]
    assert len(read_sorted(t)) == n + 50


def test_writers_in_many_threads_share_the_write_pool(catalog: FileSystemCatalog) -> None:
    """Concurrent writers (one per thread, distinct commit users) on the shared pool."""
    from concurrent.futures import ThreadPoolExecutor

    t = pk_table(catalog, bucket="4")

    def job(k: int) -> list[CommitMessage]:
        w = t.new_write(f"u{k}")
        w.write_arrow(rows(["a"] * 100, [k * 1000 + i for i in range(100)], ["v"] * 100))
        return w.prepare_commit()

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(job, range(6)))
    for k, msgs in enumerate(results):
        t.new_commit(f"u{k}").commit(msgs, 1)
    assert len(read_sorted(t)) == 600


def _written(d: str, batches: list[pa.Table], opts: dict[str, str]) -> tuple[list[Any], list[Any]]:
    """(file metadata without names and times, file contents) of one commit per batch list."""
    t = FileSystemCatalog(d).create_table("db.s", Schema.of(
        [("dt", "STRING"), ("id", "BIGINT"), ("name", "STRING"), ("seq", "INT"),
         ("ts", "TIMESTAMP(6)"), ("x", "DOUBLE")],
        partition_keys=["dt"], primary_keys=["dt", "name", "id"], options=opts))
    metas: list[Any] = []
    contents: list[Any] = []
    for ident, commit_batches in enumerate(batches):
        w = t.new_write("u")
        for b in commit_batches:
            w.write_arrow(b, row_kind_column="k")
        msgs = w.prepare_commit()
        for m, f in sorted(files_of(msgs), key=lambda mf: (mf[0].partition, mf[0].bucket)):
            metas.append((m.partition, m.bucket, f.row_count, f.min_key, f.max_key,
                          f.key_stats, f.value_stats, f.min_sequence_number,
                          f.max_sequence_number, f.delete_row_count, f.level))
            contents.append(pq.read_table(os.path.join(
                t.path, f"dt={deserialize_binary_row(m.partition, [parse_sql_type('STRING')])[0]}",
                f"bucket-{m.bucket}", f.file_name)).to_pylist())
        commit(t, msgs, ident)
    return metas, contents


@settings(max_examples=examples(20))
@given(
    commits=st.lists(st.lists(st.lists(st.tuples(
        st.sampled_from(["a", "b", "c"]), st.integers(0, 25), st.sampled_from(["x", "yy", ""]),
        st.sampled_from(["+I", "-U", "+U", "-D"]), st.integers(0, 3),
        st.sampled_from([1.5, -0.0, 0.0, float("nan"), None])),
        min_size=1, max_size=30), min_size=1, max_size=3), min_size=1, max_size=3),
    sequence_field=st.booleans(),
    regroup=st.booleans(),
)
def test_small_buckets_flushed_together_write_the_same_files(
    commits: list[list[list[tuple[str, int, str, str, int, float | None]]]],
    sequence_field: bool, regroup: bool,
) -> None:
    """The one-pass flush of many small buckets writes exactly the files the bucket-by-bucket
    flush writes: rows, order, sequence numbers, key bounds and stats (composite keys,
    retractions, duplicates, several write calls, a sequence field, rows routed by index)."""
    import tempfile

    import paimon_core.write.table_write as tw

    batches = [[pa.table({
        "dt": [r[0] for r in b], "id": pa.array([r[1] for r in b], pa.int64()),
        "name": [r[2] for r in b], "k": [r[3] for r in b],
        "seq": pa.array([r[4] for r in b], pa.int32()),
        "ts": pa.array([1_700_000_000_000_000 + r[1] for r in b], pa.timestamp("us")),
        "x": pa.array([r[5] for r in b], pa.float64())}) for b in c] for c in commits]
    opts = {"bucket": "3", **({"sequence.field": "seq"} if sequence_field else {})}
    saved = (tw.is_small, tw._REGROUP_BYTES, tw.SMALL_BUCKET_BYTES)
    try:
        if regroup:  # each bucket's rows become a slice of one regrouped copy of the input
            tw.SMALL_BUCKET_BYTES = -1
        else:  # every bucket's rows stay indices into the input
            tw._REGROUP_BYTES = 0
        with tempfile.TemporaryDirectory() as d1, tempfile.TemporaryDirectory() as d2:
            together = _written(d1, batches, opts)
            tw.is_small = lambda st, target: False  # type: ignore[assignment]
            one_by_one = _written(d2, batches, opts)
    finally:
        tw.is_small, tw._REGROUP_BYTES, tw.SMALL_BUCKET_BYTES = saved
    assert together[0] == one_by_one[0]
    assert repr(together[1]) == repr(one_by_one[1])  # NaN-safe
