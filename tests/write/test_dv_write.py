"""``deletion-vectors.enabled=true`` primary-key tables written and compacted by us (no oracle;
``tests/interop/test_dv_write_interop.py`` proves the same against Java 0.9 and pypaimon).

Checks, after every commit of random upserts and deletes into 2 buckets: the read equals a
model written by hand; no level-0 file is left (every commit compacts level 0 up with a
lookup); the levels >= 1 minus the deletion vectors hold every key once (what makes the read a
raw scan); one DV index file per bucket. Then: the compaction job (minor keeps, full clears
the vectors), the refusals Java 0.9 makes, a commit whose bucket's vectors changed meanwhile,
expiry and orphan cleaning of DV index files, ``inspect table_indexes``, fsck.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.compact.deletion_vectors import dv_index_entries, load_bucket_vectors
from paimon_core.compact.manager import live_bucket_files
from paimon_core.errors import CommitConflictError, SchemaError, UnsupportedError
from paimon_core.fsck import fsck
from paimon_core.orphans import remove_orphan_files
from paimon_core.read.data_file import DataFileReader
from paimon_core.schema_builder import Schema
from paimon_core.schema_change import SetOption
from paimon_core.table import FileStoreTable
from tests.interop.ours import cli

KINDS = ["+I", "+U", "-D", "-U"]


def dv_table(tmp_path: Path, name: str = "t", **options: str) -> FileStoreTable:
    cat = FileSystemCatalog(str(tmp_path / "wh"))
    return cat.create_table(f"db.{name}", Schema.of(
        [("id", "INT NOT NULL"), ("v", "STRING"), ("n", "BIGINT")], primary_keys=["id"],
        options={"bucket": "2", "deletion-vectors.enabled": "true", **options}))


def write(table: FileStoreTable, rows: list[tuple[int, str | None, int, str]], ident: int,
          user: str = "u") -> None:
    w = table.new_write(user)
    w.write_arrow(pa.table({"id": pa.array([r[0] for r in rows], pa.int32()),
                            "v": [r[1] for r in rows],
                            "n": pa.array([r[2] for r in rows], pa.int64()),
                            "k": [r[3] for r in rows]}), row_kind_column="k")
    table.new_commit(user).commit(w.prepare_commit(), ident)
    w.close()


def batch(rng: random.Random, n: int, tag: str) -> list[tuple[int, str | None, int, str]]:
    return [(i, f"{tag}{i}", rng.randrange(1000), rng.choices(KINDS, [4, 3, 2, 1])[0])
            for i in rng.sample(range(400), n)]


def apply(model: dict[int, tuple[str | None, int]], rows: list[tuple[int, str | None, int, str]]
          ) -> None:
    for i, v, n, k in rows:
        if k in ("-D", "-U"):
            model.pop(i, None)
        else:
            model[i] = (v, n)


def read(table: FileStoreTable) -> dict[int, tuple[str | None, int]]:
    t = table.to_arrow()
    return {r["id"]: (r["v"], r["n"]) for r in t.to_pylist()}


def raw_levels(table: FileStoreTable) -> tuple[int, list[int]]:
    """(level-0 files, keys of every level >= 1 file minus its deletion vector) of the
    latest snapshot; asserts one DV index file per bucket."""
    snap = table.latest_snapshot()
    dvs = dv_index_entries(table.manifest_io, snap)
    reader = DataFileReader(table.file_io, table.schema, table.schema_manager)
    level0, keys = 0, []
    for (part, bucket), (_, files) in live_bucket_files(table.manifest_io, snap).items():
        entries = dvs.get((part, bucket), [])
        assert len(entries) <= 1
        vectors = load_bucket_vectors(table.file_io, table.context.layout, entries)
        for f in files:
            if f.level == 0:
                level0 += 1
                continue
            data = reader.read(table.context.layout.bucket_dir(part, bucket), f, ["id"],
                               deleted_rows=vectors.of(f.file_name))
            keys += data.column("id").to_pylist()
    return level0, keys


def dv_count(table: FileStoreTable) -> int:
    entries = dv_index_entries(table.manifest_io, table.latest_snapshot())
    return sum(r.cardinality or 0 for es in entries.values() for e in es for r in e.dv_ranges or ())


def test_writes_keep_one_live_record_per_key(tmp_path: Path) -> None:
    table = dv_table(tmp_path)
    rng = random.Random(7)
    model: dict[int, tuple[str | None, int]] = {}
    first = [(i, f"a{i}", i, "+I") for i in range(300)]
    write(table, first, 0)
    apply(model, first)
    marked = 0
    for k in range(1, 7):
        rows = batch(rng, 60, f"b{k}-")
        write(table, rows, k)
        apply(model, rows)
        assert read(table) == model, k
        level0, keys = raw_levels(table)
        assert level0 == 0
        assert sorted(keys) == sorted(model)  # no key twice, no deleted key
        marked = max(marked, dv_count(table))
    assert marked > 0  # superseded rows were marked, not only rewritten
    assert fsck(table).ok


@pytest.mark.parametrize("engine", ["partial-update", "aggregation"])
def test_merge_engines(tmp_path: Path, engine: str) -> None:
    opts = {"merge-engine": engine}
    if engine == "aggregation":
        opts["fields.n.aggregate-function"] = "sum"
    table = dv_table(tmp_path, **opts)
    write(table, [(i, f"a{i}", 1, "+I") for i in range(50)], 0)
    write(table, [(i, None, 10, "+I") for i in range(0, 50, 5)], 1)
    write(table, [(i, f"c{i}", 100, "+I") for i in range(0, 50, 10)], 2)
    got = read(table)
    for i in range(50):
        if engine == "partial-update":
            want = (f"c{i}" if i % 10 == 0 else f"a{i}",
                    100 if i % 10 == 0 else 10 if i % 5 == 0 else 1)
        else:  # aggregation: v last non-null value, n summed
            want = (f"c{i}" if i % 10 == 0 else f"a{i}",
                    1 + (10 if i % 5 == 0 else 0) + (100 if i % 10 == 0 else 0))
        assert got[i] == want, i
    assert raw_levels(table)[0] == 0 and dv_count(table) > 0


@pytest.mark.parametrize(("options", "named"), [
    ({"merge-engine": "first-row"}, "merge-engine=first-row"),
    ({"changelog-producer": "full-compaction"}, "changelog-producer=full-compaction"),
])
def test_refused_as_java_refuses(tmp_path: Path, options: dict[str, str], named: str) -> None:
    """At CREATE and ALTER (``SchemaValidation.validateForDeletionVectors``); a table stored so
    anyway (another tool) is refused by its writer and its compaction."""
    with pytest.raises(SchemaError, match=named):
        dv_table(tmp_path, **options)
    plain = dv_table(tmp_path, name="p", **{"deletion-vectors.enabled": "false", **options})
    with pytest.raises(SchemaError, match=named):
        plain.alter([SetOption("deletion-vectors.enabled", "true")])
    schema_file = Path(plain.path) / "schema" / "schema-0"  # as another tool could store it
    doc = json.loads(schema_file.read_text())
    doc["options"]["deletion-vectors.enabled"] = "true"
    schema_file.write_text(json.dumps(doc))
    stored = FileSystemCatalog(str(tmp_path / "wh")).get_table("db.p")
    with pytest.raises(UnsupportedError, match=named):
        stored.new_write("u")
    with pytest.raises(UnsupportedError, match=named):
        stored.compact()


def test_compaction_job_minor_keeps_full_clears(tmp_path: Path) -> None:
    table = dv_table(tmp_path, **{"write-only": "true"})
    rng = random.Random(11)
    model: dict[int, tuple[str | None, int]] = {}
    # big enough that three small level-0 runs do not trigger a size-amplification compaction
    first = [(i, f"a{i}", i, "+I") for i in range(3000)]
    write(table, first, 0)
    apply(model, first)
    assert table.compact(strategy="minor") is not None  # level 0 up: no vector yet
    for k in range(1, 4):  # write-only: level-0 files stay (readers do not see them yet)
        rows = batch(rng, 50, f"b{k}-")
        write(table, rows, k)
        apply(model, rows)
    assert raw_levels(table)[0] > 0
    assert table.compact(strategy="minor") is not None
    assert read(table) == model
    level0, keys = raw_levels(table)
    assert level0 == 0 and sorted(keys) == sorted(model)
    assert dv_count(table) > 0  # the minor compaction marked rows in files it kept
    assert table.compact() is not None  # full: files with a vector rewritten
    assert dv_count(table) == 0 and read(table) == model
    assert table.inspect.table_indexes().num_rows == 0
    assert fsck(table).ok


def test_concurrent_change_of_a_buckets_vectors_conflicts(tmp_path: Path) -> None:
    table = dv_table(tmp_path, bucket="1")
    write(table, [(i, f"a{i}", i, "+I") for i in range(100)], 0)
    slow = table.new_write("slow")
    slow.write_arrow(pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["s1", "s2"],
                               "n": pa.array([1, 2], pa.int64())}))
    messages = slow.prepare_commit()
    assert messages[0].dv_index_added
    write(table, [(50, "fast", 5, "+U")], 1, user="fast")  # replaces the bucket's vectors
    with pytest.raises(CommitConflictError, match="deletion vectors of bucket 0"):
        table.new_commit("slow").commit(messages, 0)
    assert table.latest_snapshot().commit_user == "fast"  # nothing of ours landed
    table.new_commit("slow").abort(messages)
    assert read(table)[50] == ("fast", 5) and read(table)[1] == ("a1", 1)
    assert fsck(table).ok


def test_expire_orphans_inspect(tmp_path: Path) -> None:
    table = dv_table(tmp_path)
    rng = random.Random(5)
    write(table, [(i, f"a{i}", i, "+I") for i in range(200)], 0)
    for k in range(1, 6):
        write(table, batch(rng, 40, f"b{k}-"), k)
    index_dir = Path(table.context.layout.index_dir)
    before = {p.name for p in index_dir.iterdir()}
    rows = table.to_arrow().sort_by("id")
    live = {r["file_name"] for r in table.inspect.table_indexes().to_pylist()}
    assert live and live <= before and len(before) > len(live)
    table.expire_snapshots(retain_min=1, retain_max=1, older_than_millis=2**62)
    after = {p.name for p in index_dir.iterdir()}
    assert after == live  # vectors of expired snapshots gone, the live ones kept
    assert remove_orphan_files(table, older_than_millis=2**62).count == 0
    assert table.to_arrow().sort_by("id").equals(rows)
    idx = table.inspect.table_indexes()
    ranges = [r for x in idx.column("dv_ranges").to_pylist() for r in x]
    assert idx.column("index_type").to_pylist() == ["DELETION_VECTORS"] * idx.num_rows
    assert sum(r["_CARDINALITY"] for r in ranges) == dv_count(table) > 0
    # the CLI shows the same
    lines = cli(["inspect", "--warehouse", str(tmp_path / "wh"), "--table", "db.t",
                 "table_indexes"])
    assert sorted(json.loads(x)["file_name"] for x in lines) == sorted(live)
    assert fsck(table).ok


@pytest.mark.parametrize("producer", ["input", "lookup"])
def test_changelog_producers_java_allows(tmp_path: Path, producer: str) -> None:
    """Java 0.9 allows deletion vectors with the none/input/lookup producers: the lookup one's
    changelog comes with the COMPACT snapshot of every commit, input's with the APPEND."""
    table = dv_table(tmp_path, **{"changelog-producer": producer})
    rng = random.Random(1)
    model: dict[int, tuple[str | None, int]] = {}
    for k in range(4):
        rows = [(i, f"a{i}", i, "+I") for i in range(100)] if k == 0 else batch(rng, 30, f"b{k}")
        write(table, rows, k)
        apply(model, rows)
        assert read(table) == model, k
    assert raw_levels(table)[0] == 0 and dv_count(table) > 0
    with_log = {s.commit_kind.name for s in table.snapshot_manager.snapshots()
                if s.changelog_record_count}
    assert with_log == {"COMPACT" if producer == "lookup" else "APPEND"}
    assert fsck(table).ok


def test_append_table_with_deletion_vectors(tmp_path: Path) -> None:
    """An append table's vectors (Java's row-level DELETE writes them) are not applied by our
    compaction: it is refused by name; writes still append (they add no vector)."""
    cat = FileSystemCatalog(str(tmp_path / "wh"))
    table = cat.create_table("db.a", Schema.of(
        [("id", "INT"), ("v", "STRING")],
        options={"bucket": "1", "bucket-key": "id", "deletion-vectors.enabled": "true"}))
    for k in range(3):
        w = table.new_write("u")
        w.write_arrow(pa.table({"id": pa.array([k], pa.int32()), "v": [f"v{k}"]}))
        table.new_commit("u").commit(w.prepare_commit(), k)
    assert sorted(r["id"] for r in table.to_arrow().to_pylist()) == [0, 1, 2]
    with pytest.raises(UnsupportedError, match=r"append table with deletion-vectors\.enabled"):
        table.compact()
