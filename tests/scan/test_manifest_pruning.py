"""Manifest pruning (issue 28): manifests skipped by their partition stats, manifest rows
dropped by partition and bucket before their files are built -- for scans and for the
commit's read of the live files of the partitions it touches.

The oracle of every pruned result is the unpruned one: the full plan (or every entry of every
manifest, decoded whole) filtered afterwards by rows matching the predicate in the table's
own data.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.commit.manifest_writer import ManifestWriter, clustered
from paimon_core.manifest_io import ManifestCache, ManifestIO
from paimon_core.scan import predicate_model as P
from paimon_core.schema_change import AddColumn
from paimon_core.spec import manifest as manifest_spec
from paimon_core.spec.binary_row import deserialize_binary_row, serialize_binary_row
from paimon_core.spec.file_entries import live_files
from paimon_core.spec.manifest import (
    BLOCK_INDEX_KEY,
    FileKind,
    ManifestEntry,
    decode_manifest,
    decode_manifests,
    encode_manifest,
)
from paimon_core.table import FileStoreTable
from paimon_core.types import parse_sql_type
from tests.commit.helpers import data_file
from tests.tables import make_catalog, make_table, spy_manifest_reads, write_rows

STRING = parse_sql_type("STRING")
INT = parse_sql_type("INT")
COLUMNS = [("dt", "STRING"), ("hr", "INT"), ("id", "INT"), ("v", "STRING")]
DAYS = ["d1", "d2", "d3", None]


def _rows(days: list[str | None], hrs: list[int | None], ids: range, tag: str) -> pa.Table:
    n = len(ids)
    return pa.table({
        "dt": pa.array([days[i % len(days)] for i in range(n)], pa.string()),
        "hr": pa.array([hrs[i % len(hrs)] for i in range(n)], pa.int32()),
        "id": pa.array(list(ids), pa.int32()),
        "v": pa.array([f"{tag}{i}" for i in ids], pa.string()),
    })


def _history(table: FileStoreTable) -> None:
    """Commits over several partitions (a null day and a null hour among them), an
    overwrite of one partition (DELETE entries), then a column added and more commits."""
    write_rows(table, _rows(["d1", "d2"], [0, 1], range(0, 40), "a"))
    write_rows(table, _rows(["d3"], [2, 3, None], range(40, 70), "b"))
    write_rows(table, _rows([None, "d1"], [1, 5], range(70, 100), "c"))
    with table.new_write("u", overwrite=True) as w:
        w.write_arrow(_rows(["d1"], [0], range(100, 110), "o"))
        messages = w.prepare_commit()
    table.new_commit("u").overwrite(messages, {"dt": "d1", "hr": 0})
    table.alter([AddColumn("w", "STRING")])
    t2 = _reload(table)
    data = _rows(["d4", "d1"], [7, 0], range(110, 140), "e").append_column(
        "w", pa.array(["x"] * 30, pa.string()))
    write_rows(t2, data)
    write_rows(t2, _rows(["d3"], [2], range(140, 150), "f").append_column(
        "w", pa.array(["y"] * 10, pa.string())))


def _reload(table: FileStoreTable) -> FileStoreTable:
    loaded = FileStoreTable.load(table.file_io, table.path, table.identifier)
    assert loaded is not None
    return loaded


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> FileStoreTable:
    wh = tmp_path_factory.mktemp("pruning")
    t = make_table(make_catalog(wh), COLUMNS, partition_keys=["dt", "hr"],
                   options={"bucket": "3", "bucket-key": "id", "write-only": "true"})
    _history(t)
    return _reload(t)


PREDICATES = [
    ("dt = d1", P.equal("dt", "d1"), pc.field("dt") == "d1"),
    ("dt IN (d1, d3)", P.is_in("dt", ["d1", "d3"]), pc.field("dt").isin(["d1", "d3"])),
    ("hr >= 1 AND hr < 3", P.and_(P.greater_or_equal("hr", 1), P.less_than("hr", 3)),
     (pc.field("hr") >= 1) & (pc.field("hr") < 3)),
    ("dt = d2 OR hr = 5", P.or_(P.equal("dt", "d2"), P.equal("hr", 5)),
     (pc.field("dt") == "d2") | (pc.field("hr") == 5)),
    ("dt IS NULL", P.is_null("dt"), pc.field("dt").is_null()),
    ("hr IS NULL", P.is_null("hr"), pc.field("hr").is_null()),
    ("dt = d3 AND hr = 2", P.and_(P.equal("dt", "d3"), P.equal("hr", 2)),
     (pc.field("dt") == "d3") & (pc.field("hr") == 2)),
    ("dt > d1 AND hr != 2", P.and_(P.greater_than("dt", "d1"), P.not_equal("hr", 2)),
     (pc.field("dt") > "d1") & (pc.field("hr") != 2)),
    ("dt = nope", P.equal("dt", "nope"), pc.field("dt") == "nope"),
]

BUCKET_PREDICATES = [
    ("id = 7", P.equal("id", 7), pc.field("id") == 7),
    ("id IN (3, 44, 120)", P.is_in("id", [3, 44, 120]), pc.field("id").isin([3, 44, 120])),
    ("dt = d1 AND id = 111", P.and_(P.equal("dt", "d1"), P.equal("id", 111)),
     (pc.field("dt") == "d1") & (pc.field("id") == 111)),
]
CASES = {name: (pred, expr) for name, pred, expr in PREDICATES + BUCKET_PREDICATES}
#: the partition part of each bucket case (the rows whose partitions the bucket filter scans)
PARTITION_PART = {"id = 7": pc.scalar(True), "id IN (3, 44, 120)": pc.scalar(True),
                  "dt = d1 AND id = 111": pc.field("dt") == "d1"}
PARTITION_CASES = [name for name, _, _ in PREDICATES]
BUCKET_CASES = [name for name, _, _ in BUCKET_PREDICATES]


def _files(plan_splits: Any) -> set[tuple[Any, ...]]:
    return {(s.partition_values, s.bucket, f.file_name) for s in plan_splits for f in s.files}


def _matching(table: FileStoreTable, expr: pc.Expression) -> pa.Table:
    return table.to_arrow().filter(expr)


@pytest.mark.parametrize("case", PARTITION_CASES)
def test_partition_pruned_plan_is_the_full_plan_filtered(table: FileStoreTable, case: str) -> None:
    sql, expr = CASES[case]
    full = table.new_read_builder().new_scan().plan().splits
    want = {(r["dt"], r["hr"]) for r in _matching(table, expr).select(["dt", "hr"]).to_pylist()}
    expected = {f for f in _files(full) if f[0] in want}
    got = table.new_read_builder().with_filter(sql).new_scan().plan().splits
    assert _files(got) == expected
    if case == "dt = nope":
        assert expected == set()
    else:
        assert expected  # every shape selects something, so the check can fail


@pytest.mark.parametrize("case", BUCKET_CASES)
def test_bucket_pruned_plan_keeps_exactly_the_buckets_of_the_rows(
    table: FileStoreTable, case: str
) -> None:
    sql, expr = CASES[case]
    full = table.new_read_builder().new_scan().plan().splits
    # the (partition, bucket)s that hold matching rows, found by reading each split
    read = table.new_read_builder().new_read()
    holding = {(s.partition_values, s.bucket) for s in full
               if read.to_arrow([s]).filter(expr).num_rows}
    assert holding
    got = table.new_read_builder().with_filter(sql).new_scan().plan().splits
    got_buckets = {(s.partition_values, s.bucket) for s in got}
    # no split outside the buckets of matching rows' partitions, every holding bucket kept
    parts = {p for p, _ in holding}
    assert holding <= got_buckets
    assert all(p in parts or b in {b2 for _, b2 in holding} for p, b in got_buckets)
    assert {b for _, b in got_buckets} <= {b for _, b in holding}
    rows = table.new_read_builder().with_filter(sql).new_read().to_arrow(got).filter(expr)
    assert sorted(rows.column("id").to_pylist()) == sorted(
        _matching(table, expr).column("id").to_pylist())


def _all_entries(table: FileStoreTable) -> list[ManifestEntry]:
    """Every entry of the latest snapshot's manifests, decoded whole, in list order."""
    mio = ManifestIO(table.file_io, table.path, ManifestCache(0, 0))
    snap = table.latest_snapshot()
    out: list[ManifestEntry] = []
    for m in mio.data_manifests(snap):
        path = mio.path(m.file_name)
        out += decode_manifest(table.file_io.read_bytes(path), path)
    return out


@pytest.mark.parametrize("case", PARTITION_CASES + BUCKET_CASES)
def test_pruned_entries_are_the_entries_filtered_afterwards(
    table: FileStoreTable, case: str
) -> None:
    """At the entry level (DELETE entries included): the planner's pruned read holds every
    entry -- ADD or DELETE -- of a partition with matching rows and a bucket a matching row
    hashes to, and nothing of a partition without any."""
    sql, expr = CASES[case]
    planner = table.new_planner(table.schema, table.new_read_builder().with_filter(sql).predicate())
    got = planner.read_entries(planner.data_manifests(table.latest_snapshot()))
    entries = _all_entries(table)
    assert any(e.kind is FileKind.DELETE for e in entries)
    types = [STRING.with_nullable(True), INT.with_nullable(True)]
    part_rows = _matching(table, PARTITION_PART.get(case, expr)).select(["dt", "hr"])
    parts = {serialize_binary_row([r["dt"], r["hr"]], types) for r in part_rows.to_pylist()}
    expected = [e for e in entries if e.partition in parts]
    if case in BUCKET_CASES:
        # the buckets the matching rows were written to, found by reading every split
        read = table.new_read_builder().new_read()
        buckets = {s.bucket for s in table.new_read_builder().new_scan().plan().splits
                   if read.to_arrow([s]).filter(expr).num_rows}
        assert buckets
        expected = [e for e in expected if e.bucket in buckets]
    assert got == expected  # the same entries, in the same (list) order
    if case != "dt = nope":
        assert got
    assert any(e.kind is FileKind.DELETE for e in got) == any(
        e.kind is FileKind.DELETE for e in expected)


def _spy_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    built: list[int] = []
    real = manifest_spec._build_entries

    def spy(*columns: Any) -> list[ManifestEntry]:
        built.append(len(columns[0]))
        return real(*columns)

    monkeypatch.setattr(manifest_spec, "_build_entries", spy)
    return built


def _day_table(where: Path, **catalog_options: str) -> FileStoreTable:
    """20 commits, each into a partition of its own (``day = 0..19``) with 4 files."""
    catalog = FileSystemCatalog(str(where), catalog_options)
    t = make_table(catalog, [("day", "INT"), ("id", "INT")], partition_keys=["day"],
                   options={"bucket": "4", "bucket-key": "id", "write-only": "true"})
    for day in range(20):
        write_rows(t, pa.table({"day": pa.array([day] * 8, pa.int32()),
                                "id": pa.array(range(8), pa.int32())}))
    return FileSystemCatalog(str(where), catalog_options).get_table("db.t")


def test_one_partition_plan_reads_and_builds_only_what_can_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no manifest is small enough for the cache: every read decodes selectively
    t = _day_table(tmp_path, **{"cache.manifest.small-file-threshold": "1 b"})
    metas = t.manifest_io.data_manifests(t.latest_snapshot())
    assert len(metas) >= 20
    reads = spy_manifest_reads(monkeypatch)
    built = _spy_builds(monkeypatch)
    splits = t.new_read_builder().with_filter("day = 7").new_scan().plan().splits
    assert {s.partition_values for s in splits} == {(7,)}
    assert len(reads) == 1  # the one manifest whose partition range holds day 7
    assert sum(built) == sum(len(s.files) for s in splits) == 4
    reads.clear()
    built.clear()
    full = t.new_read_builder().new_scan().plan().splits
    assert len(reads) == len(metas) and sum(built) == sum(len(s.files) for s in full) == 80


def test_bucket_filter_builds_only_the_bucket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _day_table(tmp_path, **{"cache.manifest.small-file-threshold": "1 b"})
    built = _spy_builds(monkeypatch)
    splits = t.new_read_builder().with_filter(["day = 3", "id = 5"]).new_scan().plan().splits
    assert len(splits) == 1 and sum(built) == 1
    assert 5 in t.new_read_builder().new_read().to_arrow(splits).column("id").to_pylist()


def test_a_filtered_read_never_serves_as_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _day_table(tmp_path)  # default cache: these small manifests are kept when read whole
    meta = t.manifest_io.data_manifests(t.latest_snapshot())[-1]  # day 19's delta

    def nothing(parts: list[bytes], b: list[int], tb: list[int]) -> Any:
        return np.array([], np.int64)

    def first(parts: list[bytes], b: list[int], tb: list[int]) -> Any:
        return np.array([0], np.int64)

    for read in (lambda m, s: m.manifest(meta.file_name, meta.file_size, select=s),
                 lambda m, s: m.manifests([meta], select=s)):
        mio = ManifestIO(t.file_io, t.path, ManifestCache())
        assert read(mio, nothing) == []
        assert not mio.is_cached(meta.file_name, meta.file_size)  # a selection is not kept
        assert len(read(mio, None)) == 4  # the whole file, now kept
        assert mio.is_cached(meta.file_name, meta.file_size)
        reads = spy_manifest_reads(monkeypatch)
        assert len(read(mio, first)) == 1  # selected from the cached whole file, no IO
        assert read(mio, nothing) == [] and reads == []
        assert len(read(mio, None)) == 4
        monkeypatch.undo()


def test_commit_reads_only_the_manifests_of_the_touched_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _day_table(tmp_path, **{"cache.manifest.small-file-threshold": "1 b"})
    reads = spy_manifest_reads(monkeypatch)
    with t.new_write("u2") as w:
        w.write_arrow(pa.table({"day": pa.array([12], pa.int32()),
                                "id": pa.array([2], pa.int32())}))
        messages = w.prepare_commit()
    reads.clear()
    t.new_commit("u2").commit(messages)
    assert reads == []  # an APPEND of new level-0 files checks no live file (Java 0.9)
    # a compaction deletes files: its conflict check reads the live files of day 12 only
    for _ in range(5):
        write_rows(t, pa.table({"day": pa.array([12], pa.int32()),
                                "id": pa.array([2], pa.int32())}))
    real_commit = type(t.new_commit("c")).commit
    commit_reads: list[int] = []

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        before = len(reads)
        try:
            return real_commit(self, *args, **kwargs)
        finally:
            commit_reads.append(len(reads) - before)

    monkeypatch.setattr(type(t.new_commit("c")), "commit", counted)
    metas = t.manifest_io.data_manifests(t.latest_snapshot())
    types = [t.schema.field("day").type]
    holding = [m for m in metas
               if deserialize_binary_row(m.partition_stats.min_values, types)[0] <= 12
               <= deserialize_binary_row(m.partition_stats.max_values, types)[0]]
    assert len(holding) < len(metas)
    reads.clear()
    assert t.compact([{"day": 12}]) is not None
    assert commit_reads == [len(holding)], (commit_reads, len(holding), len(metas))
    # and the compaction's plan read those manifests only, too (filtered reads keep none)
    assert len(reads) == 2 * len(holding), (len(reads), len(holding), len(metas))
    got = t.new_read_builder().with_filter("day = 12").new_read().to_arrow(
        t.new_read_builder().with_filter("day = 12").new_scan().plan().splits)
    assert sorted(got.column("id").to_pylist()) == sorted([*range(8), *[2] * 6])


def _entry(day: int | None, kind: FileKind = FileKind.ADD, bucket: int = 0,
           file: Any = None) -> ManifestEntry:
    part = serialize_binary_row([day], [INT.with_nullable(True)])
    return ManifestEntry(kind, part, bucket, 2, file or data_file())


def test_written_manifests_are_clustered_and_fold_the_same(tmp_path: Path) -> None:
    t = make_table(tmp_path, [("day", "INT"), ("id", "INT")], partition_keys=["day"])
    writer = ManifestWriter(t.file_io, t.path, [INT], {}, 0, target_file_size=1)
    entries = []
    moved = data_file()
    for i in range(3000):
        day = (i * 7919) % 1000 if i % 500 else None  # shuffled days, a few null ones
        entries.append(_entry(day, bucket=i % 2))
    # a file added, deleted and re-added in one batch: its order must survive
    entries[10:10] = [_entry(5, FileKind.ADD, 1, moved), _entry(999, bucket=0)]
    entries.append(_entry(5, FileKind.DELETE, 1, moved))
    entries.append(_entry(5, FileKind.ADD, 1, moved))
    metas = writer.write_manifests(entries)
    assert len(metas) >= 3
    ranges = []
    for m in metas:
        lo = deserialize_binary_row(m.partition_stats.min_values, [INT.with_nullable(True)])[0]
        hi = deserialize_binary_row(m.partition_stats.max_values, [INT.with_nullable(True)])[0]
        ranges.append((lo, hi))
    # rolled from ordered entries: disjoint, narrow ranges (unordered, each spans ~0..999)
    assert all(hi - lo < 600 for lo, hi in ranges if lo is not None)
    mio = ManifestIO(t.file_io, t.path, ManifestCache(0, 0))
    back = mio.manifests(metas)
    assert sorted(map(_key, back)) == sorted(map(_key, entries))
    assert sorted(map(_key, live_files(back))) == sorted(map(_key, live_files(entries)))
    assert any(e.file is moved or e.file == moved for e in live_files(back))


def _key(e: ManifestEntry) -> tuple[Any, ...]:
    return (e.kind, e.partition, e.bucket, e.file.file_name)


def test_manifests_decoded_together_equal_one_by_one(tmp_path: Path) -> None:
    t = make_table(tmp_path, [("day", "INT"), ("id", "INT")], partition_keys=["day"])
    writer = ManifestWriter(t.file_io, t.path, [INT], {}, 0, target_file_size=1)
    metas = writer.write_manifests([_entry(i % 40, bucket=i % 2) for i in range(6000)])
    mio = ManifestIO(t.file_io, t.path, ManifestCache(0, 0))
    files = [(t.file_io.read_bytes(mio.path(m.file_name)), mio.path(m.file_name))
             for m in metas]
    assert len(files) >= 3
    one_by_one = [decode_manifest(d, p) for d, p in files]
    assert list(decode_manifests(files)) == one_by_one

    def odd_days(parts: list[bytes], b: list[int], tb: list[int]) -> Any:
        import numpy as np

        days = [deserialize_binary_row(p, [INT])[0] for p in parts]
        return np.flatnonzero([d % 2 == 1 and x == 1 for d, x in zip(days, b)])

    selected = list(decode_manifests(files, odd_days))
    assert selected == [[e for e in es if e.bucket == 1 and _day(e) % 2 == 1]
                        for es in one_by_one]
    assert sum(map(len, selected)) > 0
    # small manifests (decoded alone) among big ones (decoded together) keep their place:
    # a compaction's small DELETE manifest after the big ones once came back first, and the
    # fold of the plan found its files "added twice"
    smalls = [writer.write_manifests([_entry(d, bucket=1) for d in range(k, k + 5)])[0]
              for k in (100, 200)]
    small_files = [(t.file_io.read_bytes(mio.path(m.file_name)), mio.path(m.file_name))
                   for m in smalls]
    mixed = [files[0], small_files[0], files[1], files[2], small_files[1]]
    expected = [decode_manifest(d, p) for d, p in mixed]
    assert list(decode_manifests(mixed)) == expected
    assert list(decode_manifests(mixed, odd_days)) == [
        [e for e in es if e.bucket == 1 and _day(e) % 2 == 1] for es in expected]
    order = [*metas[:3], *smalls]
    order = [order[0], order[3], order[1], order[2], order[4]]
    assert ManifestIO(t.file_io, t.path, ManifestCache(0, 0)).manifests(order) == [
        e for es in expected for e in es]
    # a broken file among them is named, wherever it sits
    broken = files[1][0][:-40]
    with pytest.raises(Exception, match=files[1][1].replace("/", ".")):
        list(decode_manifests([files[0], (broken, files[1][1]), files[2]]))


def _day(e: ManifestEntry) -> int:
    return int(deserialize_binary_row(e.partition, [INT])[0])


def _two_field_entries(n: int) -> list[ManifestEntry]:
    types = [STRING.with_nullable(True), INT.with_nullable(True)]
    out = []
    for i in range(n):
        day = None if i % 97 == 0 else f"d{i % 40:02d}"
        hr = None if i % 89 == 0 else (i // 40) % 24
        out.append(ManifestEntry(FileKind.ADD, serialize_binary_row([day, hr], types), i % 3, 3,
                                 data_file()))
    return out


BLOCK_CASES = [
    ("dt = d07", P.equal("dt", "d07")),
    ("dt IN (d00, d39)", P.is_in("dt", ["d00", "d39"])),
    ("dt = d12 AND hr = 5", P.and_(P.equal("dt", "d12"), P.equal("hr", 5))),
    ("dt = d12 AND hr > 20", P.and_(P.equal("dt", "d12"), P.greater_than("hr", 20))),
    ("hr = 3", P.equal("hr", 3)),
    ("dt IS NULL", P.is_null("dt")),
    ("dt = d05 AND hr IS NULL", P.and_(P.equal("dt", "d05"), P.is_null("hr"))),
    ("dt >= d30 OR hr = 1", P.or_(P.greater_or_equal("dt", "d30"), P.equal("hr", 1))),
]


@pytest.mark.parametrize("case", [c[0] for c in BLOCK_CASES])
def test_block_index_skips_blocks_and_keeps_every_matching_row(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manifest our writer ordered and indexed: the blocks whose partition range cannot
    match are not decompressed, and the rows read are exactly those of a whole decode
    filtered afterwards."""
    from paimon_core.scan.manifest_filter import EntryFilter
    from paimon_core.scan.predicate_model import evaluate_row
    from paimon_core.spec import _avro

    pred = dict(BLOCK_CASES)[case]
    types = [STRING.with_nullable(True), INT.with_nullable(True)]
    entries, ordered = clustered(_two_field_entries(3000), types, {})
    assert ordered  # as ManifestWriter.write_manifests orders them
    data = encode_manifest(entries, ordered=True)
    whole = decode_manifest(data, "m")

    def ok(part: bytes) -> bool:
        dt, hr = deserialize_binary_row(part, types)
        return evaluate_row(pred, {"dt": dt, "hr": hr})

    expected = [e for e in whole if ok(e.partition)]
    assert expected
    flt = EntryFilter.of_predicate(pred, ["dt", "hr"], types, ok)
    blocks = len(_avro.parse_container(data, "m").blocks)
    assert blocks > 5
    decompressed: list[int] = []
    real = _avro._decompress

    def spy(codec: str, block: bytes) -> bytes:
        decompressed.append(1)
        return real(codec, block)

    monkeypatch.setattr(_avro, "_decompress", spy)
    got = decode_manifest(data, "m", flt.rows, flt.block_ok)
    assert got == expected
    if case in ("hr = 3", "dt >= d30 OR hr = 1"):  # a block spans days: hr's range unknown
        assert len(decompressed) == blocks
    else:
        assert 0 < len(decompressed) < blocks  # some blocks skipped, undecompressed
    assert list(decode_manifests([(data, "m"), (data, "m2")], flt.rows, flt.block_ok)) == [
        expected, expected]
    # other readers take the index as an unknown header key (fastavro decodes every header
    # value as text: pypaimon failed on a binary one)
    plain = encode_manifest(entries, codec="null", ordered=True)
    assert BLOCK_INDEX_KEY in fastavro.reader(io.BytesIO(plain)).metadata
    assert len(list(fastavro.reader(io.BytesIO(plain)))) == 3000
    # without the index (a manifest written by another engine): every block, same rows
    unindexed = encode_manifest(whole)
    decompressed.clear()
    assert decode_manifest(unindexed, "m", flt.rows, flt.block_ok) == expected
    assert len(decompressed) == len(_avro.parse_container(unindexed, "m").blocks)
