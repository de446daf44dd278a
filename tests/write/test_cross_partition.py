"""Cross-partition upsert tables (``bucket=-1``, primary key without the partition keys).

Expected rows and buckets are derived by hand from Paimon 0.9's ``GlobalIndexAssigner``: a key
arriving in another partition deletes its stored row (deduplicate), is dropped (first-row) or
is written to the stored partition (partial-update); new keys fill the lowest bucket of their
partition below ``dynamic-bucket.target-row-num``. Java itself is compared in
``tests/interop/test_cross_partition_interop.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import paimon_core.datafile.writer as datafile_writer
from paimon_core.bucket import key_fingerprint_pair
from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import SchemaError, UnsupportedError
from paimon_core.spec.option_enums import BucketMode
from paimon_core.table import FileStoreTable
from paimon_core.types import DataType, int_type
from paimon_core.write import cross_partition
from paimon_core.write.cross_partition import key_slices
from paimon_core.write.dynamic_bucket import AssignerChannel
from tests.tables import make_catalog, make_table, sorted_rows, write_rows


def xp_table(catalog: FileSystemCatalog, name: str = "db.xp", **options: str) -> FileStoreTable:
    return make_table(catalog, [("pt", "STRING"), ("id", "INT NOT NULL"), ("v", "STRING")],
                      name=name, partition_keys=["pt"], primary_keys=["id"],
                      options={"bucket": "-1", "dynamic-bucket.target-row-num": "2",
                               "write-only": "true", **options})


def rows(*r: tuple[str, int, str | None], kinds: list[str] | None = None) -> pa.Table:
    t = pa.table({"pt": [x[0] for x in r], "id": pa.array([x[1] for x in r], pa.int32()),
                  "v": [x[2] for x in r]})
    return t if kinds is None else t.append_column("_k", pa.array(kinds))


def buckets_of(t: FileStoreTable) -> dict[tuple[str, int], int]:
    """(pt, id) -> bucket of every live row (a key in two places fails the test)."""
    out: dict[tuple[str, int], int] = {}
    seen: set[int] = set()
    rb = t.new_read_builder()
    for split in rb.new_scan().plan().splits:
        for r in rb.new_read().to_arrow([split]).to_pylist():
            assert r["id"] not in seen, f"key {r['id']} stored twice"
            seen.add(r["id"])
            out[(r["pt"], r["id"])] = split.bucket
    return out


@pytest.fixture
def catalog(tmp_path: Path) -> FileSystemCatalog:
    return make_catalog(tmp_path)


def test_create_needs_dynamic_bucket(catalog: FileSystemCatalog) -> None:
    assert xp_table(catalog).bucket_mode is BucketMode.CROSS_PARTITION
    with pytest.raises(SchemaError, match=r"bucket=4: a primary key without all partition keys"):
        xp_table(catalog, "db.fixed", bucket="4")


def test_moved_key_is_deleted_from_its_old_partition(catalog: FileSystemCatalog) -> None:
    t = xp_table(catalog)
    write_rows(t, rows(("a", 1, "x1"), ("a", 2, "x2"), ("a", 3, "x3"), ("b", 4, "x4")))
    # target 2: a: 1, 2 -> 0, 3 -> 1; b: 4 -> 0
    assert buckets_of(t) == {("a", 1): 0, ("a", 2): 0, ("a", 3): 1, ("b", 4): 0}
    # a new writer bootstraps the index from the table: 1 moves a -> b (its -D in a/0 frees a
    # place there, which 5 takes)
    write_rows(t, rows(("b", 1, "y1"), ("a", 5, "y5")))
    assert sorted_rows(t, "pt", "id", "v") == [
        ("a", 2, "x2"), ("a", 3, "x3"), ("a", 5, "y5"), ("b", 1, "y1"), ("b", 4, "x4")]
    assert buckets_of(t) == {("a", 2): 0, ("a", 3): 1, ("a", 5): 0, ("b", 1): 0, ("b", 4): 0}


def test_key_moving_twice_in_one_call_and_across_commits(catalog: FileSystemCatalog) -> None:
    t = xp_table(catalog)
    with t.new_write("u") as w:
        # 1: a -> b -> a within one call (each move deletes the previous version)
        w.write_arrow(rows(("a", 1, "p"), ("b", 1, "q"), ("a", 1, "r"), ("b", 2, "s")))
        t.new_commit("u").commit(w.prepare_commit(), 1)
        assert sorted_rows(t, "pt", "id", "v") == [("a", 1, "r"), ("b", 2, "s")]
        # the same writer goes on with its index: 2 moves b -> c, 1 stays in a
        w.write_arrow(rows(("c", 2, "s2"), ("a", 1, "r2")))
        t.new_commit("u").commit(w.prepare_commit(), 2)
    assert sorted_rows(t, "pt", "id", "v") == [("a", 1, "r2"), ("c", 2, "s2")]
    # a delete arriving in another partition deletes the stored row (Java: the -D of the old
    # row, then the -D in the new partition)
    write_rows(t, rows(("z", 1, None), kinds=["-D"]), row_kind_column="_k")
    assert sorted_rows(t, "pt", "id", "v") == [("c", 2, "s2")]
    # and the key comes back anywhere
    write_rows(t, rows(("b", 1, "back")))
    assert sorted_rows(t, "pt", "id", "v") == [("b", 1, "back"), ("c", 2, "s2")]


def test_first_row_keeps_the_first_partition(catalog: FileSystemCatalog) -> None:
    t = xp_table(catalog, **{"merge-engine": "first-row", "write-only": "false"})
    write_rows(t, rows(("a", 1, "first"), ("b", 2, "p"), ("c", 2, "q")))
    write_rows(t, rows(("b", 1, "later"), ("b", 3, "n")))
    assert sorted_rows(t, "pt", "id", "v") == [("a", 1, "first"), ("b", 2, "p"), ("b", 3, "n")]


def test_partial_update_writes_into_the_stored_partition(tmp_path: Path) -> None:
    t = make_table(tmp_path, [("pt", "STRING"), ("id", "INT NOT NULL"), ("v", "STRING"),
                              ("w", "STRING")], partition_keys=["pt"], primary_keys=["id"],
                   options={"bucket": "-1", "merge-engine": "partial-update",
                            "write-only": "true"})
    write_rows(t, pa.table({"pt": ["a"], "id": pa.array([1], pa.int32()), "v": ["x"],
                            "w": pa.nulls(1, pa.string())}))
    write_rows(t, pa.table({"pt": ["b"], "id": pa.array([1], pa.int32()),
                            "v": pa.nulls(1, pa.string()), "w": ["y"]}))
    assert sorted_rows(t, "pt", "id", "v", "w") == [("a", 1, "x", "y")]


def test_key_slices_split_the_keys_and_their_buckets(catalog: FileSystemCatalog) -> None:
    t = xp_table(catalog)
    write_rows(t, rows(*[("a", i, f"x{i}") for i in range(1, 9)]))
    moved = rows(*[("b", i, f"y{i}") for i in range(1, 9)], ("b", 20, "n"), ("b", 21, "n"))
    sl = key_slices([moved.column("id")], [int_type(nullable=False)], 2)
    msgs = []
    for c in (0, 1):
        with t.new_write("u", assigner_channel=AssignerChannel(c, 2, 2)) as w:
            w.write_arrow(moved.filter(pa.array(sl == c)))
            msgs += w.prepare_commit()
    t.new_commit("u").commit(msgs, 1)
    assert sorted_rows(t, "pt", "id") == [("b", i) for i in [*range(1, 9), 20, 21]]
    for (pt, i), b in buckets_of(t).items():  # each slice dealt only its own buckets
        assert b % 2 == int(sl[[*range(1, 9), 20, 21].index(i)]), (pt, i, b)


def weak_keys(columns: list[pa.Array | pa.ChunkedArray], types: list[DataType]
              ) -> tuple[np.ndarray, np.ndarray]:
    """A fingerprint that collides on purpose (``id % 2``), with the real check word."""
    _, check = key_fingerprint_pair(columns, types)
    ids = np.asarray(pa.chunked_array([columns[0]]).to_numpy(), np.int64)
    return (ids % 2).astype(np.uint64), check


def test_fingerprint_collisions_never_move_the_wrong_row(
        catalog: FileSystemCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cross_partition, "_fingerprints", weak_keys)
    t = xp_table(catalog)
    # 1 and 3 share a fingerprint, so do 2 and 4: four keys, none a version of another
    write_rows(t, rows(("a", 1, "x1"), ("b", 3, "x3"), ("a", 2, "x2"), ("a", 4, "x4")))
    assert sorted_rows(t, "pt", "id", "v") == [
        ("a", 1, "x1"), ("a", 2, "x2"), ("a", 4, "x4"), ("b", 3, "x3")]
    # a new writer (bootstrapped): 3 moves b -> a (its -D in b, never 1's), 4 moves a -> c,
    # 1 is updated where it is; 5 (1's fingerprint too) is new in b
    write_rows(t, rows(("a", 3, "y3"), ("c", 4, "y4"), ("a", 1, "y1"), ("b", 5, "y5")))
    assert sorted_rows(t, "pt", "id", "v") == [
        ("a", 1, "y1"), ("a", 2, "x2"), ("a", 3, "y3"), ("b", 5, "y5"), ("c", 4, "y4")]
    assert buckets_of(t) == {("a", 1): 0, ("a", 2): 0, ("a", 3): 1, ("b", 5): 0, ("c", 4): 0}


def test_partition_fingerprint_collision_is_refused(
        catalog: FileSystemCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cross_partition, "key_fingerprints",
                        lambda cols, types: np.zeros(len(cols[0]), np.uint64))
    t = xp_table(catalog)
    with t.new_write("u") as w, pytest.raises(UnsupportedError, match=r"\['pt'\] share one"):
        w.write_arrow(rows(("a", 1, "x"), ("b", 2, "y")))


def test_ignore_delete_passes_deletes_through_the_index(catalog: FileSystemCatalog) -> None:
    """Java's ``processInput`` takes the ``-D`` first: 1's entry moves a -> b (a/0 freed),
    then ``TableWriteImpl`` drops it; so 4 takes a/0 (dropped first: a/1)."""
    t = xp_table(catalog, **{"ignore-delete": "true"})
    write_rows(t, rows(("a", 1, "x"), ("a", 2, "x"), ("a", 3, "x")))  # a/0: 1, 2; a/1: 3
    write_rows(t, rows(("b", 1, None), ("a", 4, "y"), kinds=["-D", "+I"]),
               row_kind_column="_k")
    assert buckets_of(t) == {("a", 1): 0, ("a", 2): 0, ("a", 3): 1, ("a", 4): 0}


def test_insert_overwrite_bootstraps_from_the_table_before_it(
        catalog: FileSystemCatalog) -> None:
    """Java 0.9 loads the index from the latest snapshot for an overwrite too: b/0 is full
    (3, 5), so 1 (moved a -> b) goes to b/1; a full-table overwrite keeps only the new rows."""
    t = xp_table(catalog, **{"dynamic-partition-overwrite": "false"})
    write_rows(t, rows(("a", 1, "x"), ("b", 3, "x"), ("b", 5, "x")))
    with t.new_write("u", overwrite=True) as w:
        w.write_arrow(rows(("b", 1, "o"), ("c", 4, "o")))
        t.new_commit("u").overwrite(w.prepare_commit())
    assert sorted_rows(t, "pt", "id", "v") == [("b", 1, "o"), ("c", 4, "o")]
    assert buckets_of(t) == {("b", 1): 1, ("c", 4): 0}


def test_index_ttl_skips_buckets_older_than_it(
        catalog: FileSystemCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """Buckets whose files are all older than the TTL are not loaded (Java's
    ``IndexBootstrap.filterSplit``): 2 (a/0, written 2 h ago) moving to c is a new key there
    and stays in a too; 4 (b/0, a file of now) moving to c deletes its old row."""
    t = xp_table(catalog, **{"cross-partition-upsert.index-ttl": "1 h"})
    real = datafile_writer.local_now_millis
    monkeypatch.setattr(datafile_writer, "local_now_millis", lambda: real() - 7_200_000)
    write_rows(t, rows(("a", 2, "old"), ("b", 3, "old")))
    monkeypatch.setattr(datafile_writer, "local_now_millis", real)
    write_rows(t, rows(("b", 4, "new")))
    write_rows(t, rows(("c", 2, "moved"), ("c", 4, "moved")))
    assert sorted(r for r in sorted_rows(t, "pt", "id", "v")) == [
        ("a", 2, "old"), ("b", 3, "old"), ("c", 2, "moved"), ("c", 4, "moved")]


def test_a_move_frees_its_place_before_the_next_key(catalog: FileSystemCatalog) -> None:
    """Java deals row by row: 1 leaves a/0 (a -D there) before 5 arrives, so 5 takes a/0."""
    t = xp_table(catalog)
    write_rows(t, rows(("a", 1, "x"), ("a", 2, "x"), ("a", 3, "x"), ("b", 4, "x"),
                       ("b", 1, "y"), ("a", 5, "y")))
    assert buckets_of(t) == {("a", 2): 0, ("a", 3): 1, ("a", 5): 0, ("b", 4): 0, ("b", 1): 0}
