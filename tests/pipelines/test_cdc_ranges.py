"""The CDC job's line-aligned byte ranges (:mod:`pipelines.cdc.ranges`): planning against a
brute-force reference (Hadoop's rule: a line belongs to the range it starts in), ranged reads
through FileIO (local, memory, S3), and a file decoded in many small ranges giving exactly the
rows of its unsplit decode, positions and quarantine line numbers included (line positions of
later ranges turned into line numbers by counting the newlines before them): lines crossing
boundaries, CRLF, blank lines, tombstones and malformed lines at boundaries, ranges smaller
than a line; the corpus of published examples split the same way; the job itself with small
ranges (local, S3, CLI; Java 0.9 reads the table)."""

from __future__ import annotations

import datetime
import decimal
import itertools
import json
import random
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.canonical import canonical_lines
from paimon_core.io.file_io import FileIO
from paimon_core.schema_builder import Schema
from paimon_core.spec.schema import TableSchema
from pipelines.cdc.decode import decode_file
from pipelines.cdc.formats import FORMATS
from pipelines.cdc.ingest import CdcOptions, ingest
from pipelines.cdc.ranges import (
    LINE_BITS,
    LineNumbers,
    LineRange,
    parse_size,
    plan_ranges,
    split_points,
)
from pipelines.cdc.settings import DecodeSettings
from pipelines.config import CatalogSettings
from pipelines.jobs.cdc_ingest import main
from tests.pipelines.cdcgen import (
    ENVELOPE_SCHEMA,
    SCHEMA,
    generate,
    model_rows,
    write_landing,
)
from tests.pipelines.test_cdc_formats import REFERENCE_CASES

CORPUS = Path(__file__).parent / "cdc_corpus"
KEY = [("_pos_file", "ascending"), ("_pos_line", "ascending"), ("_event", "ascending")]


# ---------------------------------------------------------------------------- planning


@pytest.mark.parametrize(("text", "n"), [("134217728", 134217728), ("128m", 128 << 20),
                                         ("128MB", 128 << 20), ("1g", 1 << 30),
                                         ("64KiB", 64 << 10), ("7b", 7), (" 2 k ", 2048)])
def test_parse_size(text: str, n: int) -> None:
    assert parse_size(text) == n


@pytest.mark.parametrize("text", ["", "0", "-1", "12x", "1.5m", "mb", "3 mbx"])
def test_parse_size_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="size"):
        parse_size(text)


def _reference_points(data: bytes, m: int) -> list[int]:
    """Hadoop's rule spelled out: every line start, grouped by the nominal range it falls in;
    the first start of each non-empty group."""
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 10 and i + 1 < len(data)]
    firsts: dict[int, int] = {}
    for s in starts:
        firsts.setdefault(s // m, s)
    return sorted(firsts.values())


def _reader(data: bytes, calls: list[tuple[int, int]] | None = None) -> Any:
    """``read(offset, n)`` of ``data`` (noting each call in ``calls``)."""
    def read(offset: int, n: int) -> bytes:
        if calls is not None:
            calls.append((offset, n))
        return data[offset:offset + n]
    return read


@pytest.mark.parametrize("seed", range(40))
def test_split_points_follow_hadoops_rule(seed: int) -> None:
    rnd = random.Random(seed)
    alphabet = [b"a", b"b", b"\n", b"\r\n", b"\n\n", b"{}", b"x" * 50]
    data = b"".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 300)))
    for m in (1, 2, 3, 7, 16, 50, 101, 1000):
        for scan in (1, 5, 64, 1 << 20):
            got = split_points(_reader(data), len(data), m, scan_bytes=scan)
            assert got == (_reference_points(data, m) if data else [0]), (m, scan)


def test_split_points_read_only_near_the_boundaries() -> None:
    """Planning reads a few KB at each nominal boundary, never the file."""
    data = b"".join(b"{\"a\": %d}\n" % i for i in range(200_000))  # 2.5 MB
    calls: list[tuple[int, int]] = []
    got = split_points(_reader(data, calls), len(data), 1 << 18, scan_bytes=4096)
    assert got == _reference_points(data, 1 << 18)
    assert len(calls) == len(got) - 1 and sum(n for _, n in calls) <= 4096 * len(calls)
    assert [o for o, _ in calls] == [k * (1 << 18) - 1 for k in range(1, len(got))]


def test_split_points_line_longer_than_the_range() -> None:
    data = b"x" * 25 + b"\n" + b"y\n" + b"z" * 30 + b"\n"
    # nominal ranges of 10 bytes: lines start at 0, 26, 28; ranges 1, 3, 4, 5 hold no start
    assert split_points(_reader(data), len(data), 10) == [0, 26]
    assert split_points(_reader(data), len(data), 27) == [0, 28]
    assert split_points(_reader(data), len(data), 10, scan_bytes=1) == [0, 26]
    with pytest.raises(ValueError, match="positive"):
        split_points(_reader(data), len(data), 0)


def test_plan_ranges_and_ranged_reads(tmp_path: Path) -> None:
    lines = [b"{\"a\": %d}" % i for i in range(100)]
    data = b"\n".join(lines) + b"\n"
    for root in (str(tmp_path), "memory://ranges-test"):
        fio = FileIO(root)
        paths = [f"{root}/small.jsonl", f"{root}/big.jsonl"]
        fio.write_bytes(paths[0], b"{}\n")
        fio.write_bytes(paths[1], data)
        ranges = plan_ranges(fio, paths, 64)
        assert ranges[0] == LineRange(0, paths[0], 0, 3, 0)
        big = ranges[1:]
        assert [r.ordinal for r in big] == list(range(len(big)))
        assert big[0].start == 0 and big[-1].end == len(data)
        assert all(a.end == b.start for a, b in itertools.pairwise(big))
        got = [fio.read_range(r.path, r.start, r.length) for r in big]
        assert b"".join(got) == data
        numbers = LineNumbers(fio, ranges)
        for r, chunk in zip(big, got):  # whole lines; positions numbered as in the file
            first = numbers(r.file_index, r.first_position)
            assert first == data[:r.start].count(b"\n") + 1
            assert chunk.endswith(b"\n") and chunk.startswith(lines[first - 1])
            assert r.first_position == (r.ordinal << LINE_BITS) + 1
            n = chunk.count(b"\n")  # the range's last line
            assert numbers(r.file_index, r.first_position + n - 1) == first + n - 1
            assert chunk.endswith(lines[first + n - 2] + b"\n")
        assert numbers(0, 1) == 1
        assert fio.read_range(paths[1], len(data) - 3, 100) == b"9}\n"
        assert fio.read_range(paths[1], 5, 0) == b""
        assert plan_ranges(fio, paths, 64, splittable=False) == [
            LineRange(0, paths[0], 0, 3, 0), LineRange(1, paths[1], 0, len(data), 0)]
    with pytest.raises(ValueError, match="range"):
        FileIO(str(tmp_path)).read_range(paths[1], -1, 3)
    # container files are split at Avro blocks (tests/pipelines/test_cdc_avro_ranges.py)
    assert FORMATS["debezium-avro"].unit == "avro-block"
    assert all(f.splittable for f in FORMATS.values())
    assert {f.unit for n, f in FORMATS.items() if n != "debezium-avro"} == {"line"}


@pytest.mark.s3
def test_ranged_read_from_s3(s3_root: tuple[str, dict[str, str]]) -> None:
    root, storage = s3_root
    fio = FileIO(root, storage)
    data = b"".join(b"line %d\n" % i for i in range(1000))
    fio.write_bytes(f"{root}/f.jsonl", data)
    ranges = plan_ranges(fio, [f"{root}/f.jsonl"], 1000)
    assert len(ranges) == 9  # 8,890 bytes
    assert b"".join(fio.read_range(r.path, r.start, r.length) for r in ranges) == data
    numbers = LineNumbers(fio, ranges)
    assert [numbers(0, r.first_position) for r in ranges] == [
        data[:r.start].count(b"\n") + 1 for r in ranges]


# ---------------------------------------------------------------------------- decoding


def _schema() -> TableSchema:
    return Schema.from_json(SCHEMA).to_table_schema(0)


def _split_decode(data: bytes, m: int, decode: Any = decode_file, **kw: Any) -> pa.Table:
    """The rows of ``data`` decoded range by range (as the job's tasks do)."""
    points = split_points(_reader(data), len(data), m)
    ends = [*points[1:], len(data)]
    parts = [decode(data[s:e], first_line=data[:s].count(b"\n") + 1, **kw)
             for s, e in zip(points, ends)]
    return pa.concat_tables(parts)


def _special_file() -> tuple[bytes, dict[int, str]]:
    """Generated events (with and without the schema envelope) and, among them, the lines
    that matter at a boundary; returns the bytes and the 1-based line of each special line."""
    stream = generate(seed=21, keys=15, events=60, batches=1, malformed_per_batch=0,
                      evolve_from_batch=None)
    envelope = generate(seed=22, keys=15, events=20, batches=1, malformed_per_batch=0,
                        evolve_from_batch=None, encoding="connect")
    head = '{"schema":' + json.dumps(ENVELOPE_SCHEMA, separators=(",", ":")) + ',"payload":'
    lines = [*stream.batches[0][:30], *(head + x + "}" for x in envelope.batches[0]),
             *stream.batches[0][30:]]
    specials = {"not json": "{this is not json", "crlf": lines[3] + "\r", "blank": "",
                "null": "null", "tombstone": '{"schema": null, "payload": null}',
                "bad value": json.dumps({"op": "c", "after": {"region": "emea", "id": "x"},
                                         "source": {"lsn": 1}}),
                "long line": json.dumps({"op": "c", "after": {
                    "region": "emea", "id": 9999, "note": "n" * 3000}, "source": {"lsn": 2}})}
    at: dict[int, str] = {}
    for k, (name, text) in enumerate(specials.items()):  # later inserts leave earlier ones
        lines.insert(5 + 12 * k, text)
        at[5 + 12 * k + 1] = name
    return ("\n".join(lines) + "\n").encode(), at


def test_split_decode_equals_the_whole_file() -> None:
    schema = _schema()
    data, at = _special_file()
    kw = {"settings": DecodeSettings(sequence_column="_seq")}
    whole = decode_file(data, schema, **kw).sort_by(KEY)
    errors = {r["_pos_line"]: r["_error"] for r in whole.to_pylist() if r["_error"]}
    assert errors == {n: {"not json": "malformed JSON", "bad value": "bad value for id",
                          "null": "tombstone", "tombstone": "tombstone"}[name]
                      for n, name in at.items()
                      if name in ("not json", "bad value", "null", "tombstone")}
    starts = [0, *[i + 1 for i, b in enumerate(data) if b == 10][:-1]]
    sizes = {1, 2, 97, 500, 4096, len(data) // 3}  # 1: every line its own range
    for n in at:  # each special line starting exactly at a boundary, and crossing one
        sizes |= {starts[n - 1], starts[n - 1] + 1}
    for m in sorted(sizes):
        got = _split_decode(data, m, schema=schema, **kw).sort_by(KEY)
        assert got.equals(whole), m
    # threads, and a range whose lines are all special, change nothing
    s, e = starts[at_line(at, "blank") - 1], starts[at_line(at, "blank")]
    one = decode_file(data[s:e], schema, first_line=at_line(at, "blank"), **kw)
    assert one.num_rows == 0


def at_line(at: dict[int, str], name: str) -> int:
    return next(n for n, x in at.items() if x == name)


def test_split_decode_of_crlf_file() -> None:
    schema = _schema()
    stream = generate(seed=23, keys=10, events=40, batches=1, evolve_from_batch=None)
    data = ("\r\n".join(stream.batches[0]) + "\r\n").encode()
    whole = decode_file(data, schema, settings=DecodeSettings(sequence_column="_seq")).sort_by(KEY)
    assert sorted(r["_error"] for r in whole.to_pylist() if r["_error"]) == [
        "bad value for id", "malformed JSON"]
    for m in (1, 50, 333, 1000):
        got = _split_decode(data, m, schema=schema,
                            settings=DecodeSettings(sequence_column="_seq")).sort_by(KEY)
        assert got.equals(whole), m


CORPUS_JSON = [(cols, fmt, name) for cols, cases in REFERENCE_CASES for fmt, name in cases] + [
    (None, "debezium-json", "debezium_json/flink_inventory_envelope.jsonl"),
    (None, "debezium-json", "debezium_json/flink_inventory_plain.jsonl"),
    (None, "debezium-json", "postgresql/ops.jsonl"),
    (None, "debezium-json", "mysql/update_before_create.jsonl"),
]
PRODUCTS = [("id", "INT NOT NULL"), ("name", "STRING"), ("description", "STRING"),
            ("weight", "DOUBLE")]
CUSTOMERS = [("id", "INT NOT NULL"), ("first_name", "STRING NOT NULL"),
             ("last_name", "STRING NOT NULL"), ("email", "STRING NOT NULL")]


@pytest.mark.parametrize(("columns", "fmt", "name"), CORPUS_JSON,
                         ids=[f"{f}:{n}" for _, f, n in CORPUS_JSON])
def test_published_examples_split_decode_equals_whole(columns: list[tuple[str, str]] | None,
                                                      fmt: str, name: str) -> None:
    """Every JSON corpus file (the tools' published examples, cdc_corpus/SOURCES.md) decoded
    in ranges of a few bytes up to a few lines: the rows of the whole file."""
    if columns is None:
        columns = PRODUCTS if "inventory" in name else CUSTOMERS
    schema = Schema.of(columns, primary_keys=[columns[0][0]],
                       options={"bucket": "2"}).to_table_schema(0)
    data = (CORPUS / name).read_bytes()
    kw = {"schema": schema, "file_index": 3, "settings": DecodeSettings(), "threads": False}
    decode = FORMATS[fmt].decode
    whole = decode(data, **kw).sort_by(KEY)
    assert whole.num_rows >= 1
    for m in (1, 64, 700):
        got = _split_decode(data, m, decode, **kw).sort_by(KEY)
        assert got.equals(whole), (name, m)


# ---------------------------------------------------------------------------- the job


def _quarantined(q: Path) -> list[tuple[Any, ...]]:
    rows = [json.loads(x) for p in sorted(q.glob("batch-*/part-*.jsonl"))
            for x in p.read_text().splitlines()]
    return sorted((r["batch"], Path(r["file"]).name, r["line"], r["reason"]) for r in rows)


@pytest.mark.spark
def test_job_in_small_ranges_equals_unsplit(spark: Any, tmp_path: Path) -> None:
    stream = generate(seed=31, keys=60, events=900, batches=2, evolve_from_batch=2)
    write_landing(stream, str(tmp_path / "landing"), files_per_batch=2, envelope=False)
    # a malformed line crossing a boundary, a blank line and a tombstone; their line numbers
    f = tmp_path / "landing" / "batch-000001" / "part-1.jsonl"
    lines = f.read_text().splitlines()
    lines[100:100] = ["{\"op\": \"c\", \"after\": " + "[" * 900, "", "null"]
    f.write_text("\n".join(lines) + "\n")
    out = {}
    for name, size in (("whole", None), ("ranges", 2048)):
        wh = tmp_path / f"wh-{name}"
        q = tmp_path / f"q-{name}"
        reports = ingest(spark, CatalogSettings(str(wh)), "db.cdc", str(tmp_path / "landing"),
                         CdcOptions(max_error_ratio=0.05, quarantine=str(q),
                                    max_partition_bytes=size),
                         schema=Schema.from_json(SCHEMA))
        t = FileSystemCatalog(str(wh)).get_table("db.cdc")
        out[name] = (sorted(t.to_arrow().to_pylist(), key=lambda r: (r["region"], r["id"])),
                     [(r.events, r.valid, r.malformed, r.tombstones, r.reasons,
                       r.new_columns) for r in reports], _quarantined(q))
    assert out["ranges"] == out["whole"]
    rows, reps, quarantined = out["ranges"]
    assert len(rows) == len(stream.model) and reps[0][2] == 3 and reps[0][3] == 1
    assert ("1", "part-1.jsonl", 101, "malformed JSON") in [
        (str(b), n, line, r) for b, n, line, r in quarantined]
    for r in rows:
        r["ts"] = int(r["ts"].replace(tzinfo=datetime.UTC).timestamp() * 1000)
    assert rows == [{**r, "amount": decimal.Decimal(r["amount"])}
                    for r in model_rows(stream, False)]


@pytest.mark.spark
def test_connector_example_through_the_cli_in_ranges(spark: Any, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    """Debezium's Postgres example (create, update, key-only delete, messages, tombstones;
    cdc_corpus/postgresql) with every line its own range: the rows written by hand."""
    d = tmp_path / "landing" / "batch-000001"
    d.mkdir(parents=True)
    shutil.copy(CORPUS / "postgresql" / "ops.jsonl", d / "part-0.jsonl")
    shutil.copy(CORPUS / "postgresql" / "ops.jsonl", d / "part-1.jsonl")
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"fields": [{"name": n, "type": t} for n, t in CUSTOMERS],
                                  "primary_keys": ["id"], "options": {"bucket": "2"}}))
    wh = tmp_path / "wh"
    code = main(["--warehouse", str(wh), "--table", "db.customers", "--landing",
                 str(tmp_path / "landing"), "--schema", str(schema),
                 "--max-partition-bytes", "1b"])
    assert code == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (report["events"], report["valid"], report["tombstones"], report["messages"]) == (
        16, 8, 4, 4)
    rows = FileSystemCatalog(str(wh)).get_table("db.customers").to_arrow().to_pylist()
    assert rows == [{"id": 2, "first_name": "Sally", "last_name": "Thomas",
                     "email": "sally.thomas@acme.com"}]


@pytest.mark.s3
@pytest.mark.spark
def test_job_reads_s3_landing_in_ranges(spark: Any, s3_root: tuple[str, dict[str, str]]
                                        ) -> None:
    from paimon_core.io.file_io import join

    root, storage = s3_root
    stream = generate(seed=33, keys=30, events=300, batches=1, evolve_from_batch=None)
    fio = FileIO(root, storage)
    fio.write_bytes(join(root, "landing", "batch-000001", "part-0.jsonl"),
                    ("\n".join(stream.batches[0]) + "\n").encode())
    settings = CatalogSettings(join(root, "wh"), storage)
    (rep,) = ingest(spark, settings, "db.cdc", join(root, "landing"),
                    CdcOptions(max_error_ratio=0.05, max_partition_bytes=4096),
                    schema=Schema.from_json(SCHEMA))
    assert rep.malformed == 2
    t = settings.catalog().get_table("db.cdc")
    assert t.to_arrow().num_rows == len(stream.model)


@pytest.mark.spark
@pytest.mark.oracle
def test_java_reads_the_table_written_in_ranges(spark: Any, tmp_path: Path) -> None:
    from tests.interop.oracle import ensure_ready, run_batches

    ensure_ready()
    stream = generate(seed=35, keys=40, events=400, batches=1, evolve_from_batch=None,
                      encoding="connect")
    write_landing(stream, str(tmp_path / "landing"), files_per_batch=1, envelope=True)
    wh = tmp_path / "wh"
    ingest(spark, CatalogSettings(str(wh)), "db.cdc", str(tmp_path / "landing"),
           CdcOptions(max_error_ratio=0.05, max_partition_bytes=3000),
           schema=Schema.from_json(SCHEMA))
    out = tmp_path / "java.jsonl"
    cmd = {"cmd": "read", "warehouse": str(wh), "table": "db.cdc", "engine": "java",
           "output": str(out)}
    result = run_batches({"cdc": [cmd]}, tmp_path)["cdc"]
    assert not result.failures(), (result.failures(), result.stderr[-3000:])
    t = FileSystemCatalog(str(wh)).get_table("db.cdc")
    data = t.to_arrow()
    ours = canonical_lines(data, [t.schema.field(c) for c in data.column_names])
    assert out.read_text().splitlines() == ours
    assert len(ours) == len(stream.model)


@pytest.mark.spark
def test_range_size_from_spark_conf(spark: Any) -> None:
    from paimon_core.errors import SchemaError
    from pipelines.cdc.batch.stage import max_partition_bytes

    key = "spark.sql.files.maxPartitionBytes"
    old = spark.conf.get(key, None)
    try:
        spark.conf.unset(key)
        assert max_partition_bytes(spark, CdcOptions()) == 128 << 20  # Spark's default
        spark.conf.set(key, "64m")
        assert max_partition_bytes(spark, CdcOptions()) == 64 << 20
        assert max_partition_bytes(spark, CdcOptions(max_partition_bytes=1000)) == 1000
        with pytest.raises(SchemaError, match="positive"):
            max_partition_bytes(spark, CdcOptions(max_partition_bytes=0))
    finally:
        if old is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, old)
