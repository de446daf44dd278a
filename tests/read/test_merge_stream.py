"""The streaming merge-read (``paimon_core.read.merge_stream``, ``TableRead.to_batches``)
equals the whole-section merge (``TableRead.to_arrow``, ``merge_records`` over a section read
whole) for every merge engine, with merge buffers of 1, 2 and 7 rows that force many chunk
boundaries; and its memory stays bounded on a large bucket."""

from __future__ import annotations

import decimal
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core.options import CoreOptions
from paimon_core.read import merge_stream
from paimon_core.read.merge import merge_records, sections
from paimon_core.read.merge_stream import merge_section_batches, run_buffer_rows
from paimon_core.spec.keys import key_decoder
from paimon_core.spec.system_fields import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND
from paimon_core.table import FileStoreTable
from tests.profiles import examples
from tests.tables import make_table, write_rows

BUFFER = CoreOptions.MERGE_BUFFER_ROWS
COLUMNS = [("k1", "INT"), ("k2", "STRING"), ("sq", "BIGINT"), ("a", "BIGINT"), ("s", "STRING")]

#: engine options -> the row kinds a commit may carry
ENGINES: list[tuple[dict[str, str], tuple[str, ...]]] = [
    ({"merge-engine": "deduplicate"}, ("+I", "+U", "-D")),
    ({"merge-engine": "deduplicate", "sequence.field": "sq"}, ("+I", "+U", "-D")),
    ({"merge-engine": "deduplicate", "ignore-delete": "true"}, ("+I", "-D")),
    ({"merge-engine": "partial-update"}, ("+I",)),
    ({"merge-engine": "partial-update", "sequence.field": "sq"}, ("+I",)),
    ({"merge-engine": "partial-update", "partial-update.ignore-delete": "true"}, ("+I", "-D")),
    ({"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
      "fields.s.aggregate-function": "last_non_null_value"}, ("+I", "+U", "-D")),
    ({"merge-engine": "aggregation", "fields.a.aggregate-function": "max",
      "fields.s.aggregate-function": "listagg", "changelog-producer": "lookup"}, ("+I",)),
    ({"merge-engine": "first-row"}, ("+I",)),
    ({"merge-engine": "first-row", "first-row.ignore-delete": "true"}, ("+I", "-D")),
]


@st.composite
def commits(draw: st.DrawFn, kinds: tuple[str, ...]) -> list[pa.Table]:
    out = []
    for _ in range(draw(st.integers(1, 5))):
        n = draw(st.integers(1, 30))
        ints = st.lists(st.integers(0, 12), min_size=n, max_size=n)
        out.append(pa.table({
            "k1": pa.array(draw(ints), pa.int32()),
            "k2": draw(st.lists(st.sampled_from(["", "a", "b", "é", "中"]), min_size=n,
                                max_size=n)),
            "sq": pa.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)),
                           pa.int64()),
            "a": pa.array(draw(st.lists(st.one_of(st.none(), st.integers(-9, 9)), min_size=n,
                                        max_size=n)), pa.int64()),
            "s": draw(st.lists(st.one_of(st.none(), st.sampled_from(["x", "y", "zz"])),
                               min_size=n, max_size=n)),
            "_k": draw(st.lists(st.sampled_from(kinds), min_size=n, max_size=n)),
        }))
    return out


#: SQL type of k1 -> its Arrow type (k1 is drawn as small ints and cast)
KEY_TYPES: dict[str, pa.DataType] = {
    "INT": pa.int32(), "BIGINT": pa.int64(), "DATE": pa.date32(),
    "TIMESTAMP(6)": pa.timestamp("us"), "DECIMAL(10, 2)": pa.decimal128(10, 2),
    "STRING": pa.string(), "BOOLEAN": pa.bool_(), "DOUBLE": pa.float64(),
}


def _with_key_type(batch: pa.Table, sql: str) -> pa.Table:
    target = KEY_TYPES[sql]
    ints = batch.column("k1")
    if pa.types.is_decimal(target):
        k1 = pa.array([decimal.Decimal(v) / 4 for v in ints.to_pylist()], target)
    else:
        k1 = ints.cast(pa.int32() if pa.types.is_date(target) else pa.int64()).cast(target)
    return batch.set_column(0, "k1", k1)


def _table(where: Path, options: dict[str, str], buffer_rows: int, key_type: str = "INT",
           primary_keys: tuple[str, ...] = ("k1", "k2")) -> FileStoreTable:
    columns = [("k1", key_type), *COLUMNS[1:]]
    return make_table(where, columns, primary_keys=list(primary_keys), options={
        "bucket": "1", "write-only": "true", "target-file-size": "1 kb",
        BUFFER: str(buffer_rows), **options})


def _sorted(rows: list[dict[str, Any]], keys: list[str]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: tuple(r[k] for k in keys))


def _streamed(t: FileStoreTable, columns: list[str] | None = None,
              where: str | None = None) -> pa.Table:
    rb = t.new_read_builder()
    if columns is not None:
        rb = rb.with_projection(columns)
    if where is not None:
        rb = rb.with_filter(where)
    read = rb.new_read()
    batches = list(read.to_batches(rb.new_scan().plan().splits, batch_size=5))
    assert all(b.num_rows <= 5 for b in batches)
    return pa.Table.from_batches(batches, schema=read.output_schema)


@settings(max_examples=examples(120), suppress_health_check=[HealthCheck.too_slow,
                                                            HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_streamed_read_equals_whole_section_read(tmp_path_factory: pytest.TempPathFactory,
                                                 data: st.DataObject) -> None:
    options, kinds = data.draw(st.sampled_from(ENGINES))
    buffer_rows = data.draw(st.sampled_from([1, 2, 7]))
    key_type = data.draw(st.sampled_from(sorted(KEY_TYPES)))
    # one key column: the numpy cut; two: the lexicographic Arrow cut
    keys = data.draw(st.sampled_from([["k1", "k2"], ["k1"]]))
    t = _table(tmp_path_factory.mktemp("wh"), options, buffer_rows, key_type, tuple(keys))
    batches = data.draw(commits(kinds))
    compact_after = data.draw(st.integers(0, len(batches)))
    for i, b in enumerate(batches, 1):
        write_rows(t, _with_key_type(b, key_type), i, row_kind_column="_k")
        if i == compact_after:  # a max-level run of many small files under the level-0 ones
            t.compact()
    expected = t.to_arrow()  # whole sections merged at once
    got = _streamed(t)
    assert got.schema == expected.schema
    assert _sorted(got.to_pylist(), keys) == _sorted(expected.to_pylist(), keys)
    # projections and filters: applied after the merge (no old version resurfaces)
    exp = t.to_arrow(columns=["k1", "a"], filter="a > 0").to_pylist()
    got_f = _streamed(t, ["k1", "a"], "a > 0").to_pylist()
    assert sorted(map(str, got_f)) == sorted(map(str, exp))


@settings(max_examples=examples(80), suppress_health_check=[HealthCheck.too_slow,
                                                            HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_merge_section_batches_equals_merge_records(tmp_path_factory: pytest.TempPathFactory,
                                                    data: st.DataObject) -> None:
    """The compaction's view: system columns kept, retractions kept, chunks sorted by key
    and in ascending key ranges; equal to merge_records over the section read whole."""
    options, kinds = data.draw(st.sampled_from(ENGINES))
    buffer_rows = data.draw(st.sampled_from([1, 2, 7]))
    t = _table(tmp_path_factory.mktemp("wh"), options, buffer_rows)
    for i, b in enumerate(data.draw(commits(kinds)), 1):
        write_rows(t, b, i, row_kind_column="_k")
    rb = t.new_read_builder()
    reader = rb.new_read().reader
    schema = t.schema
    core = CoreOptions(schema.options)
    decode = key_decoder(schema)
    keys = [KEY_PREFIX + k for k in schema.trimmed_primary_keys]
    seq = [*core.sequence_fields, SEQUENCE_NUMBER]
    ignore = core.ignore_delete() and core.merge_engine.value != "aggregation"
    for split in rb.new_scan().plan().splits:
        for section in sections(split.files, decode):
            chunks = list(merge_section_batches(
                reader, split.bucket_path, section, options=core, decode_key=decode,
                columns=schema.field_names, sequence_columns=seq,
                primary_keys=schema.primary_keys, buffer_rows=buffer_rows))
            whole = pa.concat_tables([
                reader.read(split.bucket_path, f, schema.field_names, system=True)
                for f in section])
            levels = np.concatenate([np.full(f.row_count, f.level, np.int32) for f in section])
            if ignore:
                live = np.isin(whole.column(VALUE_KIND).to_numpy(), [0, 2])
                whole, levels = whole.filter(pa.array(live)), levels[live]
            if len(section) > 1:
                whole = merge_records(whole, keys, seq, VALUE_KIND, core,
                                      primary_keys=schema.primary_keys, levels=levels)
            got = pa.concat_tables(chunks) if chunks else whole.schema.empty_table()
            assert got.schema == whole.schema
            assert got.to_pylist() == whole.to_pylist()  # same rows, both in key order
            # chunk boundaries never split a key
            seen: set[tuple[Any, ...]] = set()
            for c in chunks:
                ks = set(zip(*(c.column(k).to_pylist() for k in keys)))
                assert not ks & seen
                seen |= ks


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.too_slow,
                                                           HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_incremental_delta_read_streams(tmp_path_factory: pytest.TempPathFactory,
                                        data: st.DataObject) -> None:
    """``incremental-between`` over deltas merges through the streaming merge: tiny buffers
    give the result of a buffer that holds every section whole (one chunk)."""
    options, kinds = data.draw(st.sampled_from(ENGINES))
    batches = data.draw(commits(kinds))
    where = tmp_path_factory.mktemp("wh")
    got = {}
    start = None
    for buffer_rows in (data.draw(st.sampled_from([1, 2, 7])), 1_000_000):
        t = _table(where / str(buffer_rows), options, buffer_rows)
        ids = [s for i, b in enumerate(batches, 1)
               for s in write_rows(t, b, i, row_kind_column="_k")]
        if not ids:
            return
        if start is None:
            start = data.draw(st.integers(0, max(ids) - 1))
        got[buffer_rows] = t.read_merged_changes(start, max(ids), mode="delta")
    small, whole = got.values()
    assert small.schema == whole.schema
    assert small.to_pylist() == whole.to_pylist()  # same rows in the same (key) order


@settings(max_examples=examples(100))
@given(deleted=st.lists(st.integers(0, 40), max_size=20), batch=st.sampled_from([1, 2, 7, 64]),
       system=st.booleans())
def test_iter_read_equals_read(tmp_path_factory: pytest.TempPathFactory, deleted: list[int],
                               batch: int, system: bool) -> None:
    """A file streamed in batches (deletion vector applied per batch, system columns,
    partition constants) equals the file read whole."""
    from paimon_core.read.data_file import FileRead

    t = make_table(tmp_path_factory.mktemp("wh"), [("pt", "STRING"), *COLUMNS],
                   partition_keys=["pt"], primary_keys=["pt", "k1", "k2"],
                   options={"bucket": "1", "write-only": "true"})
    n = 30
    write_rows(t, pa.table({"pt": ["p"] * n, "k1": pa.array(range(n), pa.int32()),
                            "k2": ["a"] * n, "sq": pa.array(range(n), pa.int64()),
                            "a": pa.array([None] * n, pa.int64()), "s": ["x"] * n}), 1)
    rb = t.new_read_builder()
    reader = rb.new_read().reader
    (split,) = rb.new_scan().plan().splits
    (f,) = split.files
    dv = np.unique(np.asarray(deleted, dtype=np.int64))
    cols = ("pt", "k1", "s") if system else tuple(t.schema.field_names)
    const = {"pt": pa.scalar("p")}
    whole = reader.read(split.bucket_path, f, cols, system=system, deleted_rows=dv,
                        constants=const)
    parts = list(reader.iter_read(FileRead(split.bucket_path, f, cols, system=system,
                                           deleted_rows=dv, constants=const), batch))
    assert all(p.num_rows <= batch for p in parts)
    assert pa.concat_tables(parts).to_pylist() == whole.to_pylist()
    assert whole.num_rows == n - len(dv[dv < n])


def test_buffer_rows_option_is_validated(tmp_path: Path) -> None:
    """A bad buffer size is refused at CREATE; stored by another engine, by the read."""
    from dataclasses import replace

    from paimon_core.errors import SchemaError
    from paimon_core.schema_change import publish_schema

    with pytest.raises(SchemaError, match=BUFFER):
        _table(tmp_path / "refused", {}, 0)
    t = _table(tmp_path / "wh", {}, 4)
    write_rows(t, pa.table({"k1": pa.array([1], pa.int32()), "k2": ["a"],
                            "sq": pa.array([1], pa.int64()), "a": pa.array([1], pa.int64()),
                            "s": ["x"], "_k": ["+I"]}), 1, row_kind_column="_k")
    publish_schema(t.file_io, t.path, replace(t.schema, id=1,
                                              options={**t.schema.options, BUFFER: "0"}))
    from paimon_core.catalog import FileSystemCatalog

    with pytest.raises(SchemaError, match=BUFFER):
        _streamed(FileSystemCatalog(str(tmp_path / "wh")).get_table("db.t"))


# ---------------------------------------------------------------------------------------------
# bounded memory on a large bucket

_MEASURE = textwrap.dedent("""
    import json, sys
    from paimon_core.catalog import FileSystemCatalog
    t = FileSystemCatalog(sys.argv[1]).get_table("db.big")
    rb = t.new_read_builder()
    splits = rb.new_scan().plan().splits
    read = rb.new_read()
    def status(field):  # MB; VmHWM is this process's own peak (ru_maxrss keeps the parent's)
        with open("/proc/self/status") as f:
            return next(int(x.split()[1]) for x in f if x.startswith(field)) / 1024
    # the largest table a step builds: every batch read and every merge input
    from paimon_core.read import data_file, merge_stream
    largest = {"read": 0, "merge": 0}
    def spy(kind, fn):
        def wrapped(*args, **kwargs):
            out = fn(*args, **kwargs)
            if kind == "merge":
                largest[kind] = max(largest[kind], args[0].num_rows)
                return out
            def batches():
                for t in out:
                    largest[kind] = max(largest[kind], t.num_rows)
                    yield t
            return batches()
        return wrapped
    merge_stream.merge_records = spy("merge", merge_stream.merge_records)
    data_file.DataFileReader.iter_read = spy("read", data_file.DataFileReader.iter_read)
    base = status("VmRSS")
    rows = 0
    if sys.argv[2] == "stream":
        for b in read.to_batches(splits):
            rows += b.num_rows
    else:
        rows = read.to_arrow(splits).num_rows
    peak = status("VmHWM")
    print(json.dumps({"rows": rows, "growth": peak - base, **largest}))
""")


def _growth(warehouse: Path, mode: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(warehouse), mode],
                         check=True, capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2])
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.slow
def test_streamed_read_of_a_large_bucket_is_bounded(tmp_path: Path) -> None:
    """2M rows in one bucket + 3 overlapping upserts of 200k: the whole-bucket read grows by
    hundreds of MB; the streamed read must stay a small fraction of it (it fails if a step
    materialises the bucket)."""
    n = 2_000_000
    t = make_table(tmp_path / "wh", [("id", "BIGINT"), ("v", "BIGINT"), ("s", "STRING")],
                   name="db.big", primary_keys=["id"],
                   options={"bucket": "1", "write-only": "true"})
    rng = np.random.default_rng(7)
    ids = np.arange(n, dtype=np.int64)
    write_rows(t, pa.table({"id": ids, "v": ids, "s": pa.array(ids.astype(str))}), 1)
    for c in range(3):
        up = np.sort(rng.choice(n, n // 10, replace=False)).astype(np.int64)
        write_rows(t, pa.table({"id": up, "v": up + c + 1, "s": pa.array(up.astype(str))}), c + 2)
    whole = _growth(tmp_path / "wh", "whole")
    stream = _growth(tmp_path / "wh", "stream")
    assert whole["rows"] == stream["rows"] == n
    assert whole["growth"] > 150, whole  # the bucket really is large
    # the section's budget (paimon-core.merge.buffer-rows) is shared by its 4 sorted runs:
    # no batch exceeds a run's share, no merge step the budget
    budget = CoreOptions({}).merge_buffer_rows
    assert 0 < stream["read"] <= run_buffer_rows(budget, 4), stream
    assert 0 < stream["merge"] <= budget, stream
    # the process grows by a constant (code, pools) plus the buffers, not by the bucket
    assert stream["growth"] < 0.6 * whole["growth"], (stream, whole)


# ---------------------------------------------------------------------------------------------
# floating-point keys: cut only when no key is NaN and every run is sorted


@pytest.mark.parametrize("nan", [False, True])
def test_double_key_sections_are_cut_unless_a_key_is_nan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nan: bool) -> None:
    """Three overlapping commits on a DOUBLE key, streamed with a 2-row budget: without NaN
    the section is cut into many chunks; with a NaN key (Java holds NaN equal to every value:
    no safe cut) it is merged whole, in one chunk. Both equal the whole-section read."""
    t = make_table(tmp_path / "wh", [("k", "DOUBLE"), ("v", "BIGINT")], primary_keys=["k"],
                   options={"bucket": "1", "write-only": "true", BUFFER: "2"})
    for c, keys in enumerate([[-2.5, -0.5, 0.0, 1.5, 3.0, 7.0, 9.5], [-0.5, 1.5, 2.0, 9.5],
                              [-2.5, 0.0, 2.0, 3.0, 11.0]], 1):
        if nan and c == 2:
            keys = [*keys, float("nan")]
        write_rows(t, pa.table({"k": pa.array(keys, pa.float64()),
                                "v": pa.array([c] * len(keys), pa.int64())}), c)
    chunks: list[int] = []
    real = merge_stream.section_chunks

    def spy(*args: Any, **kwargs: Any) -> Any:
        for chunk in real(*args, **kwargs):
            chunks.append(chunk.records.num_rows)
            yield chunk

    monkeypatch.setattr(merge_stream, "section_chunks", spy)
    streamed = _streamed(t)
    whole = t.to_arrow()
    def rows(t: pa.Table) -> list[tuple[Any, ...]]:  # NaN != NaN: compared as a marker
        return sorted(("nan", 0.0, r["v"]) if r["k"] != r["k"] else ("num", r["k"], r["v"])
                      for r in t.to_pylist())

    assert rows(streamed) == rows(whole)
    assert streamed.num_rows == 9 + nan
    assert sum(chunks) == 16 + nan
    if nan:
        assert chunks == [17]
    else:
        assert len(chunks) > 3
