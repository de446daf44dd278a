"""Dynamic bucket mode (``bucket=-1`` primary-key tables): the assigner, the hash index files,
their commit, and the table operations that must keep the index consistent.

Expected buckets are derived by hand from Paimon 0.9's rules (``PartitionIndex.assign``: a
key in the index keeps its bucket, a new key goes to the lowest non-full bucket of its
assigner, else to the lowest bucket number the assigner owns and has not used); the Java
writer itself is compared in ``tests/interop/test_dynamic_bucket.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from paimon_core.bucket import hash_codes
from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import CorruptMetadataError, UnsupportedError
from paimon_core.fsck import fsck, orphan_files
from paimon_core.integration import AssignerChannel
from paimon_core.spec.hash_index import decode_hash_index, encode_hash_index
from paimon_core.spec.index_manifest import (
    HASH_INDEX,
    IndexManifestEntry,
    combine_index_entries,
)
from paimon_core.spec.manifest import FileKind
from paimon_core.spec.schema import TableSchema
from paimon_core.table import FileStoreTable
from paimon_core.types import int_type
from paimon_core.write.dynamic_bucket import DynamicBucketAssigner, compute_assigner
from tests.tables import make_table, sorted_rows, write_rows

P = b"\x00\x00\x00\x00" + bytes(8)  # the empty partition (arity 0)


def dyn_table(catalog: FileSystemCatalog, name: str = "db.dyn", **options: str
              ) -> FileStoreTable:
    return make_table(catalog, [("pt", "STRING"), ("id", "INT"), ("v", "STRING")], name=name,
                      partition_keys=["pt"], primary_keys=["pt", "id"],
                      options={"bucket": "-1", "dynamic-bucket.target-row-num": "3",
                               "write-only": "true", **options})


def rows(pt: str, ids: list[int], v: str = "x") -> pa.Table:
    return pa.table({"pt": [pt] * len(ids), "id": ids, "v": [f"{v}{i}" for i in ids]})


def key_hashes(ids: list[int]) -> list[int]:
    """BinaryRow hash of the trimmed key (id INT NOT NULL)."""
    t = int_type(nullable=False)
    return hash_codes([pa.array(ids, pa.int32())], [t]).tolist()


def buckets_of(t: FileStoreTable) -> dict[tuple[str, int], int]:
    """(pt, id) -> bucket of the live rows, from the planned splits."""
    out: dict[tuple[str, int], int] = {}
    rb = t.new_read_builder()
    for split in rb.new_scan().plan().splits:
        for r in rb.new_read().to_arrow([split]).to_pylist():
            key = (r["pt"], r["id"])
            assert key not in out, f"key {key} in two buckets"
            out[key] = split.bucket
    return out


def hash_index(t: FileStoreTable) -> dict[tuple[bytes, int], list[int]]:
    """(partition, bucket) -> sorted hashes of the latest snapshot's HASH index files."""
    snap = t.snapshot_manager.latest_snapshot()
    assert snap is not None and snap.index_manifest
    mio = t.new_planner(t.schema, None).manifests
    out = {}
    for e in mio.index_manifest(snap.index_manifest):
        assert e.index_type == HASH_INDEX and e.kind is FileKind.ADD
        path = Path(t.path) / "index" / e.file_name
        hashes = decode_hash_index(path.read_bytes(), str(path))
        assert len(hashes) == e.row_count and path.stat().st_size == e.file_size
        assert (e.partition, e.bucket) not in out
        out[(e.partition, e.bucket)] = sorted(hashes.tolist())
    return out


# ---------------------------------------------------------------------------- codecs
def test_hash_index_codec_is_big_endian_int32() -> None:
    data = encode_hash_index(np.array([1, -2, 2**31 - 1], np.int32))
    assert data == bytes.fromhex("00000001" "fffffffe" "7fffffff")
    assert decode_hash_index(data, "f").tolist() == [1, -2, 2**31 - 1]
    with pytest.raises(CorruptMetadataError, match="not a sequence of int32"):
        decode_hash_index(b"\x00\x01\x02", "index-x")


def _ie(kind: FileKind, bucket: int, name: str, typ: str = HASH_INDEX) -> IndexManifestEntry:
    return IndexManifestEntry(kind, P, bucket, typ, name, 4, 1, None)


def test_combine_index_entries_replaces_per_bucket() -> None:
    prev = [_ie(FileKind.ADD, 0, "a"), _ie(FileKind.ADD, 1, "b")]
    got = combine_index_entries(prev, [_ie(FileKind.ADD, 1, "c"), _ie(FileKind.ADD, 2, "d")])
    assert [(e.bucket, e.file_name) for e in got] == [(0, "a"), (1, "c"), (2, "d")]
    # deletes are applied before adds (an overwrite drops a bucket and re-adds it)
    got = combine_index_entries(prev, [_ie(FileKind.ADD, 0, "n"), _ie(FileKind.DELETE, 0, "a"),
                                       _ie(FileKind.DELETE, 1, "b")])
    assert [(e.bucket, e.file_name) for e in got] == [(0, "n")]
    with pytest.raises(CorruptMetadataError):
        combine_index_entries([_ie(FileKind.DELETE, 0, "a")], [])


# ---------------------------------------------------------------------------- assigner
def test_assigner_fills_lowest_non_full_bucket_then_opens_new_ones() -> None:
    a = DynamicBucketAssigner(target_row_num=2)
    # repeated hashes are one key; keys are dealt in arrival order
    assert a.assign(P, np.array([10, 11, 10, 12, 13, 14], np.int32)).tolist() == [0, 0, 0, 1, 1, 2]
    # known keys keep their bucket; bucket 2 has room for one more
    assert a.assign(P, np.array([14, 12, 15, 16], np.int32)).tolist() == [2, 1, 2, 3]
    # another partition starts from scratch
    q = b"\x00\x00\x00\x01" + bytes(16)
    assert a.assign(q, np.array([10], np.int32)).tolist() == [0]


def test_assigner_channels_own_bucket_residues() -> None:
    """Two channels and two assigners (initial-buckets=2): channel c creates buckets
    b % 2 == c; a key's channel is (abs(pHash % 2) + abs(keyHash % 2)) % 2."""
    a = DynamicBucketAssigner(target_row_num=1, num_channels=2, num_assigners=2)
    h = np.array([4, 5, 6, 7, -3], np.int32)
    chan = compute_assigner(0, h, 2, 2)
    assert chan.tolist() == [0, 1, 0, 1, 1]  # Java's remainder: -3 % 2 == -1, abs -> 1
    from paimon_core.write import dynamic_bucket as db
    start = abs(db.partition_hash(P)) % 2
    got = a.assign(P, h).tolist()
    # channel (start + h % 2) % 2 hands out its residue class 0/2/4... or 1/3/5...
    seen: dict[int, list[int]] = {}
    for hv, b in zip(h.tolist(), got):
        c = (start + abs(int(np.fmod(hv, 2)))) % 2
        seen.setdefault(c, []).append(b)
    assert seen.get(0, []) == [0, 2, 4][:len(seen.get(0, []))]
    assert seen.get(1, []) == [1, 3, 5][:len(seen.get(1, []))]
    with pytest.raises(ValueError, match="channel"):
        DynamicBucketAssigner(target_row_num=1, num_channels=2, num_assigners=2,
                              channels=[0]).assign(P, h)


# ---------------------------------------------------------------------------- table writes
def test_write_assigns_and_commits_hash_index(catalog: FileSystemCatalog) -> None:
    t = dyn_table(catalog)
    write_rows(t, pa.concat_tables([rows("a", [1, 2, 3, 4, 5]), rows("b", [1])]))
    assert buckets_of(t) == {("a", 1): 0, ("a", 2): 0, ("a", 3): 0, ("a", 4): 1, ("a", 5): 1,
                             ("b", 1): 0}
    idx = hash_index(t)
    pa_ = {p for p, _ in idx}
    assert len(pa_) == 2
    a_part = next(p for p, b in idx if b == 1)
    assert idx[(a_part, 0)] == sorted(key_hashes([1, 2, 3]))
    assert idx[(a_part, 1)] == sorted(key_hashes([4, 5]))
    # second commit: existing keys stay, the new key fills bucket 1, then bucket 2
    write_rows(t, rows("a", [5, 6, 7, 1], "y"))
    got = buckets_of(t)
    assert [got[("a", i)] for i in (1, 5, 6, 7)] == [0, 1, 1, 2]
    assert sorted_rows(t, "pt", "id", "v")[:7] == [
        ("a", 1, "y1"), ("a", 2, "x2"), ("a", 3, "x3"), ("a", 4, "x4"), ("a", 5, "y5"),
        ("a", 6, "y6"), ("a", 7, "y7")]
    idx2 = hash_index(t)
    assert idx2[(a_part, 1)] == sorted(key_hashes([4, 5, 6]))
    assert idx2[(a_part, 2)] == key_hashes([7])
    assert fsck(t, deep=True).ok


def test_deletes_keep_their_hash(catalog: FileSystemCatalog) -> None:
    """As Java (every record notifies the index maintainer): a deleted key, even one never
    inserted, keeps a slot in its bucket, and comes back to the same bucket."""
    t = dyn_table(catalog)
    write_rows(t, rows("a", [1, 2]))
    with t.new_write("u") as w:
        w.delete_arrow(pa.table({"pt": ["a", "a"], "id": [2, 9]}))
        t.new_commit("u").commit(w.prepare_commit())
    (part, _), = [k for k in hash_index(t)]
    assert hash_index(t)[(part, 0)] == sorted(key_hashes([1, 2, 9]))
    write_rows(t, rows("a", [2, 10]))
    got = buckets_of(t)
    assert got == {("a", 1): 0, ("a", 2): 0, ("a", 10): 1}


def test_a_new_writer_loads_the_index_and_exactly_once(catalog: FileSystemCatalog) -> None:
    t = dyn_table(catalog)
    assert write_rows(t, rows("a", [1, 2, 3, 4]), 1, user="p") == [1]
    # replay of commit 1 by a fresh writer: nothing lands twice, the index is unchanged
    before = hash_index(t)
    assert write_rows(t, rows("a", [1, 2, 3, 4]), 1, user="p") == [1]
    assert hash_index(t) == before
    t2 = catalog.get_table("db.dyn")
    write_rows(t2, rows("a", [4, 3, 8]), 2, user="p")
    got = buckets_of(t2)
    assert [got[("a", i)] for i in (1, 2, 3, 4, 8)] == [0, 0, 0, 1, 1]
    assert fsck(t2, deep=True).ok


def test_abort_deletes_index_files(catalog: FileSystemCatalog) -> None:
    t = dyn_table(catalog)
    w = t.new_write("u")
    w.write_arrow(rows("a", [1, 2, 3, 4]))
    msgs = w.prepare_commit()
    names = [ix.file_name for m in msgs for ix in m.index_files]
    assert len(names) == 2
    t.new_commit("u").abort(msgs)
    assert not any((Path(t.path) / "index" / n).exists() for n in names)
    w.write_arrow(rows("a", [5]))
    w.abort()
    assert not list((Path(t.path) / "index").glob("*"))
    w.close()


def test_overwrite_replaces_the_partitions_index(catalog: FileSystemCatalog) -> None:
    t = dyn_table(catalog)
    write_rows(t, pa.concat_tables([rows("a", [1, 2, 3, 4, 5]), rows("b", [1, 2])]))
    b_before = {k: v for k, v in hash_index(t).items() if len(v) == 2 and k[1] == 0}
    wb = t.new_batch_write_builder("ow").overwrite({"pt": "a"})
    with wb.new_write() as w:  # a fresh assignment: no index loaded
        w.write_arrow(rows("a", [5, 6], "o"))
        wb.new_commit().commit(w.prepare_commit())
    assert sorted_rows(t, "pt", "id", "v") == [("a", 5, "o5"), ("a", 6, "o6"),
                                                ("b", 1, "x1"), ("b", 2, "x2")]
    got = buckets_of(t)
    assert got[("a", 5)] == 0 and got[("a", 6)] == 0
    idx = hash_index(t)
    assert len(idx) == 2  # a: one bucket (the old buckets' entries are gone), b untouched
    assert sorted(key_hashes([5, 6])) in idx.values()
    assert all(idx[k] == v for k, v in b_before.items())
    # dropping a partition drops its index entries
    t.new_commit("d").drop_partitions([{"pt": "a"}])
    assert list(hash_index(t).values()) == [sorted(key_hashes([1, 2]))]
    assert fsck(t, deep=True).ok


def test_compaction_and_expiry_keep_the_index(catalog: FileSystemCatalog) -> None:
    t = dyn_table(catalog, **{"write-only": "false", "num-sorted-run.compaction-trigger": "2"})
    for i in range(6):
        write_rows(t, rows("a", [1, 2, 3, 4, i + 10], f"v{i}"))
    kinds = [t.snapshot_manager.snapshot(i).commit_kind.value
             for i in range(1, t.snapshot_manager.latest_snapshot_id() + 1)]
    assert "COMPACT" in kinds  # inline compaction ran
    assert t.compact() is not None  # and a full one
    idx = hash_index(t)
    t.create_tag("early", 2)  # a tag keeps snapshot 2's index files alive
    tagged = sorted_rows(t, "pt", "id", "v", tag="early")
    index_dir = Path(t.path) / "index"
    before = {p.name for p in index_dir.iterdir()}
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert fsck(t, deep=True).ok  # every index file of the retained snapshot / tag is there
    assert hash_index(t) == idx
    assert sorted_rows(t, "pt", "id", "v", tag="early") == tagged
    after = {p.name for p in index_dir.iterdir()}
    assert after < before  # superseded index files of expired snapshots are gone
    assert orphan_files(t, 2**62) == []  # and nothing left unreferenced
    t.delete_tag("early")
    write_rows(t, rows("a", [1, 99], "z"))
    assert buckets_of(t)[("a", 1)] == 0
    assert len(buckets_of(t)) == 11
    assert fsck(t, deep=True).ok


def test_fsck_checks_the_hash_index(catalog: FileSystemCatalog) -> None:
    t = dyn_table(catalog)
    write_rows(t, rows("a", [1, 2, 3, 4, 5]))
    assert fsck(t).ok
    snap = t.snapshot_manager.latest_snapshot()
    assert snap is not None and snap.index_manifest
    entries = sorted(t.new_planner(t.schema, None).manifests.index_manifest(snap.index_manifest),
                     key=lambda e: e.bucket)
    f0, f1 = (Path(t.path) / "index" / e.file_name for e in entries)
    h0 = decode_hash_index(f0.read_bytes(), "")
    h1 = decode_hash_index(f1.read_bytes(), "")
    # bucket 1's index loses key 4's hash for one of bucket 0's: two findings
    f1.write_bytes(encode_hash_index(np.array([h0[0], *h1[1:]], np.int32)))
    found = [f.message for f in fsck(t).findings if f.kind.value == "hash_index_inconsistent"]
    assert any("two buckets" in m for m in found), found
    assert any("missing from its HASH index" in m for m in found), found
    # no index at all for a bucket with data
    f1.write_bytes(encode_hash_index(h1))
    assert fsck(t).ok
    t2 = dyn_table(catalog, name="db.dyn2")
    write_rows(t2, rows("a", [1]))
    s2 = t2.snapshot_manager.latest_snapshot()
    assert s2 is not None
    path = Path(t2.snapshot_manager.snapshot_path(s2.id))
    doc = json.loads(path.read_text())
    del doc["indexManifest"]
    path.write_text(json.dumps(doc, indent=2))
    found = [f.message for f in fsck(t2).findings if f.kind.value == "hash_index_inconsistent"]
    assert found and "no HASH index entry" in found[0]


def test_options_validated(catalog: FileSystemCatalog) -> None:
    """A bad value is refused at CREATE; stored by another engine, by the writer."""
    from dataclasses import replace

    from paimon_core.errors import SchemaError
    from paimon_core.schema_change import publish_schema

    with pytest.raises(SchemaError, match="initial-buckets"):
        dyn_table(catalog, "db.refused", **{"dynamic-bucket.initial-buckets": "0"})
    t = dyn_table(catalog)
    publish_schema(t.file_io, t.path, replace(t.schema, id=1, options={
        **t.schema.options, "dynamic-bucket.initial-buckets": "0"}))
    with pytest.raises(SchemaError, match="initial-buckets"):
        catalog.get_table("db.dyn").new_write("u")


def test_schema_num_buckets_dynamic(catalog: FileSystemCatalog) -> None:
    t = dyn_table(catalog)
    assert isinstance(t.schema, TableSchema) and t.schema.num_buckets == -1


def test_uncommitted_index_files_are_orphans(catalog: FileSystemCatalog) -> None:
    """A task attempt whose messages never reach the commit (killed, or lost to a retry)
    leaves index files that orphan cleaning reclaims without touching live ones."""
    from paimon_core.orphans import remove_orphan_files

    t = dyn_table(catalog)
    write_rows(t, rows("a", [1, 2, 3, 4]))
    live = {p.name for p in (Path(t.path) / "index").iterdir()}
    w = t.new_write("u")
    w.write_arrow(rows("a", [5, 6, 7, 8]))
    lost = {ix.file_name for m in w.prepare_commit() for ix in m.index_files}
    assert lost and not lost & live
    found = {Path(p).name for p in orphan_files(t, 2**62)}
    assert lost <= found and not found & live
    remove_orphan_files(t, older_than_millis=2**62)
    assert {p.name for p in (Path(t.path) / "index").iterdir()} == live
    assert fsck(t, deep=True).ok


def test_two_writers_of_one_partition_conflict(catalog: FileSystemCatalog) -> None:
    """Two writers loading the same index and adding keys: the first commit wins, the second
    is a conflict (committing it would drop the first one's keys from the index)."""
    from paimon_core.errors import CommitConflictError

    t = dyn_table(catalog)
    write_rows(t, rows("a", [1]))
    w1, w2 = t.new_write("one"), t.new_write("two")
    w1.write_arrow(rows("a", [2]))
    w2.write_arrow(rows("a", [3]))
    m1, m2 = w1.prepare_commit(), w2.prepare_commit()
    assert [m.replaces_index for m in m1] == [m.replaces_index for m in m2] != [""]
    t.new_commit("one").commit(m1, 1)
    with pytest.raises(CommitConflictError, match="another writer"):
        t.new_commit("two").commit(m2, 1)
    t.new_commit("two").abort(m2)
    # a writer's second commit extends its own first one: no conflict
    w1.write_arrow(rows("a", [4]))
    t.new_commit("one").commit(w1.prepare_commit(), 2)
    assert hash_index(t) == {k: sorted(key_hashes([1, 2, 4])) for k in hash_index(t)}
    assert fsck(t, deep=True).ok
    # a different partition does not conflict
    w3 = t.new_write("three")
    w3.write_arrow(rows("b", [1]))
    w1.write_arrow(rows("a", [5]))
    t.new_commit("one").commit(w1.prepare_commit(), 3)
    t.new_commit("three").commit(w3.prepare_commit(), 1)
    assert fsck(t, deep=True).ok
    for w in (w1, w2, w3):
        w.close()


@pytest.mark.parametrize(("options", "named"), [
    ({"deletion-vectors.enabled": "true"}, "deletion-vectors.enabled=true"),
    ({"merge-engine": "first-row"}, "merge-engine=first-row"),
    ({"changelog-producer": "lookup"}, "changelog-producer=lookup"),
    ({"force-lookup": "true"}, "force-lookup=true"),
])
def test_a_channel_writer_refuses_lookup_tables_naming_the_option(
    catalog: FileSystemCatalog, options: dict[str, str], named: str
) -> None:
    """A writer of one assigner channel may share a bucket with another task: a table whose
    level-0 files must be compacted at every commit is refused, naming the option set."""
    t = dyn_table(catalog, **{"write-only": "false", **options})
    with pytest.raises(UnsupportedError, match=f"{re.escape(named)} needs: .*'bucket'") as e:
        t.new_write("u", assigner_channel=AssignerChannel(0, 2, 2))
    assert "\n" not in str(e.value)
    assert [n for n in ("first-row", "changelog-producer", "force-lookup", "deletion-vectors")
            if n in str(e.value)] == [n for n in ("first-row", "changelog-producer",
                                                  "force-lookup", "deletion-vectors")
                                      if n in named]
