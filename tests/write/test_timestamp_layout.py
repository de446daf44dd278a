"""Any mix of TIMESTAMP precisions in one Parquet file, laid out per leaf as Java 0.9 writes
it (p <= 3 INT64 TIMESTAMP(MILLIS), 4..6 INT64 TIMESTAMP(MICROS), >= 7 INT96), on every way a
data file reaches storage (encoded in memory, streamed to a local file, an object store), with
exact values and stats. The Java side of the same comparison is
``tests/interop/test_timestamp_interop.py``."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.canonical import canonical_lines
from paimon_core.cli.rows_input import rows_to_arrow
from paimon_core.datafile.writer import DataFileWriter
from paimon_core.errors import SchemaError
from paimon_core.io.file_io import FileIO
from paimon_core.layout import DataFilePathFactory
from paimon_core.schema_builder import Schema
from paimon_core.spec.binary_row import deserialize_binary_row
from paimon_core.spec.parquet_footer import (
    TAIL_SIZE,
    decode_file_metadata,
    footer_start,
    schema_leaves,
)
from paimon_core.spec.schema import TableSchema
from paimon_core.spec.thrift_compact import TStruct
from paimon_core.write.input import conform_input

REPO = Path(__file__).resolve().parents[2]
JAVA_FILE = REPO / "tests" / "spec" / "data" / "java09_timestamps.parquet"

# the schema and rows Java 0.9 wrote JAVA_FILE with (tests/spec/data/README.md)
JAVA_FIELDS = [
    ("id", "INT"), ("ts0", "TIMESTAMP(0)"), ("ts3", "TIMESTAMP(3)"), ("ts6", "TIMESTAMP(6)"),
    ("ts7", "TIMESTAMP(7)"), ("ts9", "TIMESTAMP(9)"),
    ("ltz3", "TIMESTAMP(3) WITH LOCAL TIME ZONE"), ("ltz6", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("ltz9", "TIMESTAMP(9) WITH LOCAL TIME ZONE"), ("nn3", "TIMESTAMP(3) NOT NULL"),
    ("nn9", "TIMESTAMP(9) NOT NULL"), ("arr", "ARRAY<TIMESTAMP(9)>"),
    ("arr3", "ARRAY<TIMESTAMP(3) NOT NULL>"),
    ("r", "ROW<a TIMESTAMP(3), b TIMESTAMP(9) WITH LOCAL TIME ZONE, c TIMESTAMP(6) NOT NULL>"),
    ("m", "MAP<STRING, TIMESTAMP(9)>"),
    ("m6", "MAP<TIMESTAMP(6), TIMESTAMP(3) WITH LOCAL TIME ZONE>"),
]
JAVA_ROWS: list[dict[str, Any]] = [
    {"id": 1, "ts0": "2024-01-01 00:00:01", "ts3": "2024-01-01 00:00:00.999",
     "ts6": "9999-12-31 23:59:59.999999", "ts7": "2024-01-01 00:00:00.1234567",
     "ts9": "2024-01-01 00:00:00.123456789", "ltz3": "2024-01-01 00:00:00.001Z",
     "ltz6": "0001-01-01 00:00:00.000001Z", "ltz9": "2262-04-11 23:47:16.854775807Z",
     "nn3": "2024-01-01 00:00:00.001", "nn9": "2024-01-01 00:00:00.000000001",
     "arr": ["2000-01-01 00:00:00.000000001", None], "arr3": ["2000-01-01 00:00:00.123"],
     "r": {"a": "2000-01-01 00:00:00.123", "b": "2000-01-01 00:00:00.123456789Z",
           "c": "2000-01-01 00:00:00.123456"},
     "m": {"k": "2000-01-01 00:00:00.123456789"},
     "m6": [["2000-01-01 00:00:00.123456", "2000-01-01 00:00:00.123Z"]]},
    {"id": 2, "nn3": "1900-01-01 00:00:00", "nn9": "1970-01-01 00:00:00"},
]
# Java 0.9's read of JAVA_FILE's table (the oracle's canonical lines)
JAVA_LINES = [
    '{"id":1,"ts0":"2024-01-01 00:00:01","ts3":"2024-01-01 00:00:00.999","ts6":"9999-12-31 '
    '23:59:59.999999","ts7":"2024-01-01 00:00:00.1234567","ts9":"2024-01-01 00:00:00.123456789",'
    '"ltz3":"2024-01-01 00:00:00.001Z","ltz6":"0001-01-01 00:00:00.000001Z","ltz9":"2262-04-11 '
    '23:47:16.854775807Z","nn3":"2024-01-01 00:00:00.001","nn9":"2024-01-01 00:00:00.000000001",'
    '"arr":["2000-01-01 00:00:00.000000001",null],"arr3":["2000-01-01 00:00:00.123"],"r":{"a":'
    '"2000-01-01 00:00:00.123","b":"2000-01-01 00:00:00.123456789Z","c":"2000-01-01 '
    '00:00:00.123456"},"m":[["k","2000-01-01 00:00:00.123456789"]],"m6":[["2000-01-01 '
    '00:00:00.123456","2000-01-01 00:00:00.123Z"]]}',
    '{"id":2,"ts0":null,"ts3":null,"ts6":null,"ts7":null,"ts9":null,"ltz3":null,"ltz6":null,'
    '"ltz9":null,"nn3":"1900-01-01 00:00:00.000","nn9":"1970-01-01 00:00:00.000000000",'
    '"arr":null,"arr3":null,"r":null,"m":null,"m6":null}',
]
# what a SchemaElement says about a leaf's layout: type, type_length, repetition,
# converted_type, logicalType
LAYOUT_FIELDS = (1, 2, 3, 6, 10)


def footer_leaves(path: str) -> dict[tuple[str, ...], TStruct]:
    data = Path(path).read_bytes()
    start = footer_start(data[-TAIL_SIZE:], len(data), path)
    return schema_leaves(decode_file_metadata(data[start:-TAIL_SIZE], path), path)


def layout(e: TStruct) -> list[Any]:
    return [e.get(i) for i in LAYOUT_FIELDS]


def write_file(fio: FileIO, bucket: str, schema: TableSchema, table: pa.Table) -> str:
    data, _ = conform_input(table, schema)
    meta = DataFileWriter(fio, schema, DataFilePathFactory()).write_append_file(bucket, data, 0)
    path = f"{bucket}/{meta.file_name}"
    assert fio.size(path) == meta.file_size
    return path


def test_every_leaf_is_laid_out_as_java_lays_it_out(tmp_path: Path) -> None:
    schema = Schema.of(JAVA_FIELDS).to_table_schema()
    ours = write_file(FileIO(str(tmp_path)), str(tmp_path), schema,
                      rows_to_arrow(JAVA_ROWS, schema))
    java_leaves = footer_leaves(str(JAVA_FILE))
    our_leaves = footer_leaves(ours)
    assert list(our_leaves) == list(java_leaves)
    for leaf, e in java_leaves.items():
        assert layout(our_leaves[leaf]) == layout(e), leaf
    # both files read the same through pyarrow (neither carries an ARROW:schema)
    assert b"ARROW:schema" not in (pq.ParquetFile(ours).metadata.metadata or {})
    mine, javas = pq.read_table(ours), pq.read_table(JAVA_FILE)
    assert mine.schema == javas.schema
    assert mine.to_pylist() == javas.to_pylist()


EDGE = {  # column -> values (epoch units of the column's precision), edge values of its range
    "ts3": [-1, 253402300799999, -62135596800000, None],  # 1969-12-31 ..59.999, 9999, 0001
    "ltz3": [0, 1, -1, 253402300799999],
    "ts6": [-1, 253402300799999999, None, 1],
    "ts9": [-1, 2**63 - 1, -(2**63) + 1, 1_700_000_000_123_456_789],  # ns range ends
    "ltz9": [None, -1_000_000_000_000_000_001, 1, 0],
    "ts7": [-100, 1_700_000_000_123_456_700, None, 0],
}
EDGE_TYPES = {"ts3": "TIMESTAMP(3)", "ltz3": "TIMESTAMP(3) WITH LOCAL TIME ZONE",
              "ts6": "TIMESTAMP(6)", "ts9": "TIMESTAMP(9)",
              "ltz9": "TIMESTAMP(9) WITH LOCAL TIME ZONE", "ts7": "TIMESTAMP(7)"}
UNIT = {"ts3": "ms", "ltz3": "ms", "ts6": "us", "ts9": "ns", "ltz9": "ns", "ts7": "ns"}


def edge_table(repeat: int) -> pa.Table:
    cols = {}
    for name, values in EDGE.items():
        tz = "UTC" if name.startswith("ltz") else None
        cols[name] = pa.array(values * repeat, pa.timestamp(UNIT[name], tz))
    cols["arr9"] = pa.array([[-1, None], None, [], [2**63 - 1]] * repeat,
                            pa.list_(pa.timestamp("ns")))
    cols["arr3"] = pa.array([[-1], [253402300799999], None, []] * repeat,
                            pa.list_(pa.timestamp("ms")))
    return pa.table(cols)


EDGE_SCHEMA = Schema.of([*EDGE_TYPES.items(), ("arr9", "ARRAY<TIMESTAMP(9)>"),
                         ("arr3", "ARRAY<TIMESTAMP(3)>")]).to_table_schema()


@pytest.mark.parametrize("where, repeat", [
    ("local, encoded in memory", 1),
    ("local, streamed by Arrow", 40_000),  # > 4 MiB of Arrow data: written natively
    ("object store", 1),
    ("object store, dictionary-encoded", 1000),  # >= 2048 rows: dictionaries tried
])
def test_values_survive_exactly(tmp_path: Path, where: str, repeat: int) -> None:
    if where.startswith("object store"):
        fio, bucket = FileIO("memory://ts-layout"), f"memory://ts-layout/{tmp_path.name}"
    else:
        fio, bucket = FileIO(str(tmp_path)), str(tmp_path / "bucket-0")
    table = edge_table(repeat)
    path = write_file(fio, bucket, EDGE_SCHEMA, table)
    if where.startswith("object store"):
        local = tmp_path / "copy.parquet"
        local.write_bytes(fio.read_bytes(path))
        path = str(local)
    leaves = footer_leaves(path)
    assert [leaves[(c,)].value(1) for c in EDGE] == [2, 2, 2, 3, 3, 3]  # INT64 / INT96
    assert leaves[("arr9", "list", "element")].value(1) == 3
    assert leaves[("arr3", "list", "element")].value(6) == 9  # TIMESTAMP_MILLIS
    back = pq.read_table(path)
    for name in table.column_names:
        want = table.column(name)
        got = back.column(name)
        if pa.types.is_timestamp(want.type) and want.type.unit == "ns":
            got = got.cast(pa.timestamp("ns", want.type.tz))  # INT96 has no time zone
        assert got.type == want.type, name
        assert got.equals(want), name


def test_pk_table_with_a_nanosecond_key_and_our_compaction(tmp_path: Path) -> None:
    catalog = FileSystemCatalog(str(tmp_path / "wh"))
    t = catalog.create_table("db.pk", Schema.of(
        [("k", "TIMESTAMP(9) NOT NULL"), ("v3", "TIMESTAMP(3)"),
         ("l6", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("s", "STRING")],
        primary_keys=["k"], options={"bucket": "1"}))
    keys = [-1, 1_700_000_000_123_456_789, -86_400_000_000_001, 0]
    data = pa.table({
        "k": pa.array(keys, pa.timestamp("ns")),
        "v3": pa.array([-1, None, 253402300799999, 5], pa.timestamp("ms")),
        "l6": pa.array([1, 2, None, -1], pa.timestamp("us", "UTC")),
        "s": ["a", "b", "c", "d"],
    })
    w = t.new_write("u")
    w.write_arrow(data)
    msgs = w.prepare_commit()
    t.new_commit("u").commit(msgs, 1)
    ((meta,),) = [m.new_files for m in msgs]
    leaves = footer_leaves(os.path.join(t.path, "bucket-0", meta.file_name))
    assert leaves[("_KEY_k",)].value(1) == 3 and leaves[("k",)].value(1) == 3
    assert leaves[("v3",)].value(6) == 9 and leaves[("l6",)].value(6) == 10
    key_types = [t.schema.field("k").type]
    assert deserialize_binary_row(meta.min_key, key_types, exact_timestamps=True) == [min(keys)]
    assert deserialize_binary_row(meta.max_key, key_types, exact_timestamps=True) == [max(keys)]
    # an update of one key (nanoseconds apart from another), then our full compaction reads
    # both files and writes the merged one
    update = data.slice(1, 1).set_column(3, "s", pa.array(["b2"]))
    w = t.new_write("u")
    w.write_arrow(update)
    t.new_commit("u").commit(w.prepare_commit(), 2)
    assert t.compact() is not None
    want = data.set_column(3, "s", pa.array(["a", "b2", "c", "d"]))
    assert t.to_arrow().sort_by("k").to_pylist() == want.sort_by("k").to_pylist()
    (compacted,) = [p for p in (Path(t.path) / "bucket-0").glob("data-*.parquet")
                    if p.name != meta.file_name and pq.ParquetFile(p).metadata.num_rows == 4]
    leaves = footer_leaves(str(compacted))
    assert leaves[("_KEY_k",)].value(1) == 3 and leaves[("v3",)].value(6) == 9


MIX_SCHEMA = {"fields": [{"name": n, "type": ty} for n, ty in JAVA_FIELDS]}


def test_cli_writes_a_table_mixing_precisions(tmp_path: Path) -> None:
    """``paimon create`` / ``write`` / ``read`` as separate processes."""
    (tmp_path / "schema.json").write_text(json.dumps(MIX_SCHEMA))
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in JAVA_ROWS))
    base = [sys.executable, "-m", "paimon_core.cli.main"]
    where = ["--warehouse", str(tmp_path / "wh"), "--table", "db.mix"]
    env = {**os.environ, "TZ": "UTC"}

    def run(*args: str) -> list[str]:
        p = subprocess.run([*base, args[0], *where, *args[1:]], capture_output=True, text=True,
                           env=env, timeout=300, check=False)
        assert p.returncode == 0, p.stderr
        return p.stdout.splitlines()

    run("create", "--schema", str(tmp_path / "schema.json"))
    run("write", "--input", str(rows))
    assert run("read") == JAVA_LINES


def test_canonical_lines_of_java_rows() -> None:
    """The rows above, converted and printed by us, are what Java printed (so the two
    tests above compare against Java's values, not ours)."""
    schema = Schema.of(JAVA_FIELDS).to_table_schema()
    table, _ = conform_input(rows_to_arrow(JAVA_ROWS, schema), schema)
    assert canonical_lines(table, list(schema.fields)) == JAVA_LINES
    assert np.array_equal(table.column("id").to_numpy(), [1, 2])


def test_nanoseconds_beyond_their_range_are_refused(tmp_path: Path) -> None:
    """TIMESTAMP(7..9) values are Arrow nanoseconds (1677-09-21 .. 2262-04-11): a value
    beyond is a typed error before anything is written, beside INT64 columns or not."""
    catalog = FileSystemCatalog(str(tmp_path / "wh"))
    t = catalog.create_table("db.t", Schema.of([("ts9", "TIMESTAMP(9)"), ("ts3", "TIMESTAMP(3)")]))
    w = t.new_write("u")
    with pytest.raises(SchemaError, match="ts9"):
        w.write_arrow(pa.table({"ts9": pa.array([dt.datetime(9999, 12, 31)], pa.timestamp("us")),
                                "ts3": pa.array([0], pa.timestamp("ms"))}))
    with pytest.raises(SchemaError, match="ts9"):
        rows_to_arrow([{"ts9": "9999-12-31 00:00:00"}], t.schema)
    assert not list((tmp_path / "wh").rglob("*.parquet"))


def test_multiset_and_deep_nesting(tmp_path: Path) -> None:
    schema = Schema.of([
        ("ms", "MULTISET<TIMESTAMP(3)>"), ("n9", "TIMESTAMP(9)"),
        ("deep", "ARRAY<ROW<x MAP<INT, ARRAY<TIMESTAMP(6) WITH LOCAL TIME ZONE>>>>"),
    ]).to_table_schema()
    rows = [{"ms": ["1969-12-31 23:59:59.999", "1969-12-31 23:59:59.999", "9999-01-01"],
             "n9": "1969-12-31 23:59:59.999999999",
             "deep": [{"x": {"1": ["0001-01-01 00:00:00.000001Z", None]}}, None]},
            {"ms": None, "n9": None, "deep": []}]
    path = write_file(FileIO(str(tmp_path)), str(tmp_path), schema, rows_to_arrow(rows, schema))
    leaves = footer_leaves(path)
    assert layout(leaves[("ms", "key_value", "key")])[3:] == layout(
        footer_leaves(str(JAVA_FILE))[("arr3", "list", "element")])[3:]  # TIMESTAMP(MILLIS)
    deep = leaves[("deep", "list", "element", "x", "key_value", "value", "list", "element")]
    assert (deep.value(1), deep.value(6)) == (2, 10)  # INT64 TIMESTAMP_MICROS
    assert leaves[("n9",)].value(1) == 3
    back = pq.read_table(path)
    table, _ = conform_input(rows_to_arrow(rows, schema), schema)
    assert back.column("deep").cast(table.column("deep").type).equals(table.column("deep"))
    assert back.column("ms").to_pylist() == table.column("ms").to_pylist()
