"""``--format debezium-avro`` beyond one small uncompressed file: every codec Kafka Connect's
S3 sink writes (``avro.codec``: null, deflate, snappy, bzip2; and Avro's xz, zstandard), and
large container files decoded in ranges of blocks (:mod:`pipelines.cdc.avro_blocks`: a block
belongs to the range its preceding sync marker starts in), giving exactly the rows of the
whole file, in order, with the record numbers of quarantined records; through the job's CLI
in a subprocess.

The events are Debezium's published Postgres ``customers`` events
(``cdc_corpus/debezium_avro``), written with fastavro by Connect's Avro rules
(``tests/pipelines/connect_avro.py``); expected rows by hand.
"""

from __future__ import annotations

import copy
import io
import json
import sys
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.integration import FileIO
from paimon_core.schema_builder import Schema
from pipelines.cdc import avro_blocks
from pipelines.cdc.formats.avro import CORRUPT_AVRO, decode_avro_file
from pipelines.cdc.ranges import LineNumbers, plan_ranges, range_bytes
from tests.pipelines.connect_avro import avro_schema, avro_value, envelope_file
from tests.pipelines.test_named_input_errors import _run

CORPUS = Path(__file__).parent / "cdc_corpus"
PG = json.loads((CORPUS / "debezium_avro" / "postgresql_customers.json").read_text())
CUSTOMERS = Schema.of([("id", "INT NOT NULL"), ("first_name", "STRING NOT NULL"),
                       ("last_name", "STRING NOT NULL"), ("email", "STRING NOT NULL")],
                      primary_keys=["id"], options={"bucket": "2"})
#: the codecs of the Avro spec (Connect's S3 sink offers null, deflate, snappy, bzip2)
CODECS = ["null", "deflate", "snappy", "bzip2", "xz", "zstandard"]
KEY = [("_pos_file", "ascending"), ("_pos_line", "ascending"), ("_event", "ascending")]


def _docs_events() -> list[dict[str, Any]]:
    """The docs' events (create Anne, update to Anne Marie, delete, the read of Sally, the
    truncate, the create of Edward) as JSON-with-schema events."""
    s = PG["schema"]
    return [{"schema": s, "payload": avro_value(s, p)} for ps in PG["files"].values()
            for p in ps if p["op"] != "t"]


def _many(n: int) -> list[dict[str, Any]]:
    """``n`` creates (ids 1..n, names ``f<i>`` / ``l<i>``) and, for every third id, an update
    of its email, from the docs' create event (lsn increasing)."""
    s = PG["schema"]
    create = next(p for ps in PG["files"].values() for p in ps if p["op"] == "c")
    out = []
    for i in range(1, n + 1):
        p = copy.deepcopy(create)
        p["after"] = {"id": i, "first_name": f"f{i}", "last_name": f"l{i}",
                      "email": f"{i}@acme.com"}
        p["source"]["lsn"] = 1000 + 2 * i
        out.append(p)
        if i % 3 == 0:
            u = copy.deepcopy(p)
            u["op"], u["before"] = "u", dict(p["after"])
            u["after"] = {**p["after"], "email": f"{i}@new.example"}
            u["source"]["lsn"] = 1001 + 2 * i
            out.append(u)
    return [{"schema": s, "payload": avro_value(s, p)} for p in out]


def _blocks_file(events: list[dict[str, Any]], codec: str, sync_interval: int) -> bytes:
    """``events`` as one container file of blocks of about ``sync_interval`` bytes."""
    buf = io.BytesIO()
    w = fastavro.write.Writer(buf, fastavro.parse_schema(avro_schema(events[0]["schema"])),
                              codec=codec, sync_interval=sync_interval)
    for e in events:
        w.write(avro_value(e["schema"], e["payload"]))
    w.flush()
    return buf.getvalue()


def _ok_rows(t: pa.Table) -> list[dict[str, Any]]:
    return [{k: r[k] for k in ("id", "first_name", "email", "_kind", "_pos_line")}
            for r in t.sort_by(KEY).to_pylist() if r["_error"] is None]


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_decodes_the_docs_events(codec: str) -> None:
    schema = CUSTOMERS.to_table_schema(0)
    got = decode_avro_file(envelope_file(_docs_events(), codec=codec), schema)
    assert got.column("_error").null_count == got.num_rows, got.column("_error").to_pylist()
    # by hand: create Anne (1), update to Anne Marie (2), key-only delete (3), read Sally (4),
    # create Edward (5)
    assert [(r["id"], r["first_name"], r["_kind"], r["_pos_line"]) for r in _ok_rows_all(got)
            ] == [(1, "Anne", "+I", 1), (1, "Anne Marie", "+U", 2), (1, "", "-D", 3),
                  (2, "Sally", "+I", 4), (3, "Edward", "+I", 5)]


def _ok_rows_all(t: pa.Table) -> list[dict[str, Any]]:
    return [r for r in t.sort_by(KEY).to_pylist() if r["_error"] is None]


@pytest.mark.parametrize("codec", ["null", "snappy"])
def test_ranges_of_blocks_decode_as_the_whole_file(tmp_path: Path, codec: str) -> None:
    schema = CUSTOMERS.to_table_schema(0)
    data = _blocks_file(_many(600), codec, sync_interval=700)
    path = tmp_path / "t+0+0000000000.avro"
    path.write_bytes(data)
    whole = decode_avro_file(data, schema)
    assert whole.num_rows == 600 + 200  # an update that keeps its key is one +U
    io_ = FileIO(str(tmp_path))
    for max_bytes in (1, 997, 4096, len(data) // 3, len(data)):
        ranges = plan_ranges(io_, [str(path)], max_bytes, unit="avro-block")
        parts = [decode_avro_file(range_bytes(io_, r), schema, first_line=r.first_position)
                 for r in ranges]
        got = pa.concat_tables(parts)
        # the positions order the records as the whole file's record numbers do
        numbers = LineNumbers(io_, ranges)
        lines = [numbers(0, p) for p in got.column("_pos_line").to_pylist()]
        assert lines == whole.column("_pos_line").to_pylist(), max_bytes
        assert got.drop(["_pos_line"]).equals(whole.drop(["_pos_line"])), max_bytes
        if max_bytes == 1:  # every block its own range: the file's blocks, after the header
            assert len(ranges) == _block_count(data)
    # by hand: id 3 created at record 3, its email updated at record 4
    rows = [r for r in _ok_rows(whole) if r["id"] == 3]
    assert rows == [
        {"id": 3, "first_name": "f3", "email": "3@acme.com", "_kind": "+I", "_pos_line": 3},
        {"id": 3, "first_name": "f3", "email": "3@new.example", "_kind": "+U",
         "_pos_line": 4}]


def _block_count(data: bytes) -> int:
    reader = fastavro.block_reader(io.BytesIO(data))
    return sum(1 for _ in reader)


def test_split_points_read_near_the_boundaries_only() -> None:
    data = _blocks_file(_many(3000), "null", sync_interval=2000)
    reads: list[tuple[int, int]] = []

    def read(off: int, n: int) -> bytes:
        reads.append((off, n))
        return data[off:off + n]

    points = avro_blocks.split_points(read, len(data), 65536, scan_bytes=1024)
    assert len(points) == -(-len(data) // 65536)
    header = avro_blocks.read_header(lambda o, n: data[o:o + n], len(data))
    for p in points[1:]:  # each range starts right after a sync marker, at a block
        assert data[p - 16:p] == header.sync
    # the header's first 64 KB, then a few KB at each boundary: never the whole file
    assert sum(n for _, n in reads) < 65536 + 4096 * len(points) < len(data) / 2
    # not a container file: one range (the decode names the reason)
    assert avro_blocks.split_points(lambda o, n: b'{"op": "c"}\n'[o:o + n], 12, 4) == [0]


def test_corrupt_block_in_a_later_range_is_numbered_in_the_file(tmp_path: Path) -> None:
    schema = CUSTOMERS.to_table_schema(0)
    data = bytearray(_blocks_file(_many(90), "null", sync_interval=500))
    header = avro_blocks.read_header(lambda o, n: bytes(data[o:o + n]), len(data))
    # corrupt the first record of the fifth block (its first union index: -64)
    at = header.length
    for _ in range(4):
        _, size, start = avro_blocks._block_header(bytes(data), at) or (0, 0, 0)
        at = start + size + 16
    first_bad = sum(1 for _ in fastavro.reader(io.BytesIO(bytes(data[:at])))) + 1
    data[(avro_blocks._block_header(bytes(data), at) or (0, 0, 0))[2]] = 0x7F
    path = tmp_path / "x.avro"
    path.write_bytes(bytes(data))
    io_ = FileIO(str(tmp_path))
    ranges = plan_ranges(io_, [str(path)], 600, unit="avro-block")
    numbers = LineNumbers(io_, ranges)
    rows = [r for r in decode_avro_range_rows(io_, ranges, schema) if r["_error"]]
    bad = [(numbers(0, r["_pos_line"]), r["_error"]) for r in rows]
    assert bad and bad[0] == (first_bad, CORRUPT_AVRO)
    assert "record 1 of this range of blocks" in rows[0]["_value"], rows[0]["_value"]


def decode_avro_range_rows(io_: FileIO, ranges: Any, schema: Any) -> list[dict[str, Any]]:
    return [r for x in ranges for r in decode_avro_file(
        range_bytes(io_, x), schema, first_line=x.first_position).to_pylist()]


@pytest.mark.spark
def test_job_cli_lands_a_snappy_file_in_ranges(tmp_path: Path) -> None:
    d = tmp_path / "landing" / "batch-000001"
    d.mkdir(parents=True)
    data = _blocks_file(_many(300), "snappy", sync_interval=1000)
    (d / "pg.inventory.customers+0+0000000000.avro").write_bytes(data)
    (d / "pg.inventory.customers+0+0000000300.avro").write_bytes(
        envelope_file(_docs_events(), codec="snappy"))
    wh = tmp_path / "wh"
    FileSystemCatalog(str(wh)).create_table("db.customers", CUSTOMERS)
    p = _run([sys.executable, "-m", "pipelines.jobs.cdc_ingest", "--warehouse", str(wh),
              "--table", "db.customers", "--landing", str(tmp_path / "landing"),
              "--format", "debezium-avro", "--max-partition-bytes", "4k"])
    assert p.returncode == 0, p.stderr[-3000:]
    report = json.loads(p.stdout.strip().splitlines()[-1])
    assert (report["events"], report["valid"]) == (400 + 5, 400 + 5)
    rows = {r["id"]: r for r in
            FileSystemCatalog(str(wh)).get_table("db.customers").to_arrow().to_pylist()}
    # by hand: ids 1..300 as created, every third with its new email; then the docs' events
    # in the second file: id 1 updated to Anne Marie and deleted, Sally (2) and Edward (3)
    # replace the generated ids 2 and 3
    assert sorted(rows) == list(range(2, 301))
    assert rows[2] == {"id": 2, "first_name": "Sally", "last_name": "Thomas",
                       "email": "sally.thomas@acme.com"}
    assert rows[3] == {"id": 3, "first_name": "Edward", "last_name": "Walker",
                       "email": "ed@walker.com"}
    assert rows[6]["email"] == "6@new.example" and rows[7]["email"] == "7@acme.com"
    assert rows[300] == {"id": 300, "first_name": "f300", "last_name": "l300",
                         "email": "300@new.example"}


# ---------------------------------------------------------------------------- maps, unions

#: a table with map columns (Debezium's Postgres HSTORE with ``hstore.handling.mode=map``:
#: a Connect map of strings) and columns written as unions of several types
TYPED = Schema.of([("id", "INT NOT NULL"), ("attrs", "MAP<STRING, STRING>"),
                   ("counts", "MAP<STRING, BIGINT>"), ("n", "BIGINT"), ("s", "STRING"),
                   ("f", "DOUBLE")], primary_keys=["id"], options={"bucket": "1"})


def _typed_envelope(value_fields: list[dict[str, Any]]) -> dict[str, Any]:
    value = {"type": "record", "name": "Value", "namespace": "pg.public.t",
             "fields": [{"name": "id", "type": "int"}, *value_fields]}
    return {"type": "record", "name": "Envelope", "namespace": "pg.public.t", "fields": [
        {"name": "before", "type": ["null", value], "default": None},
        {"name": "after", "type": ["null", "Value"], "default": None},
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
        {"name": "source", "type": {"type": "record", "name": "Source", "fields": [
            {"name": "pos", "type": "long"}]}}]}


_TYPED_FIELDS = [
    {"name": "attrs", "type": ["null", {"type": "map", "values": "string"}], "default": None},
    {"name": "counts", "type": ["null", {"type": "map", "values": ["null", "long"]}],
     "default": None},
    {"name": "n", "type": ["null", "long", "string"], "default": None},
    {"name": "s", "type": ["null", "long", "string", "boolean"], "default": None},
    {"name": "f", "type": ["null", "float", "string"], "default": None}]


def test_maps_and_unions_of_several_types_decode_into_the_table_types() -> None:
    from pipelines.cdc.settings import DecodeSettings
    from tests.pipelines.connect_avro import container

    afters = [
        {"id": 1, "attrs": {"key1": "val1", "key2": "val2"}, "counts": {"a": 1, "b": None},
         "n": 5, "s": 6, "f": 1.100000023841858},
        {"id": 2, "attrs": {}, "counts": None, "n": "7", "s": "seven", "f": "2.5"},
        {"id": 3, "attrs": None, "counts": {"z": 9}, "n": None, "s": True, "f": None},
        {"id": 4, "attrs": None, "counts": None, "n": "x", "s": None, "f": None}]
    recs = [{"before": None, "after": a, "op": "c", "ts_ms": 1, "source": {"pos": i}}
            for i, a in enumerate(afters, 1)]
    got = decode_avro_file(container(_typed_envelope(_TYPED_FIELDS), recs),
                           TYPED.to_table_schema(0),
                           settings=DecodeSettings(position_fields=("pos",)))
    cols = ["id", "attrs", "counts", "n", "s", "f", "_error"]
    # by hand: maps as (key, value) pairs; union values by the column's type; "x" is no
    # BIGINT: the record is refused, naming the column
    assert got.select(cols).to_pylist() == [
        {"id": 1, "attrs": [("key1", "val1"), ("key2", "val2")],
         "counts": [("a", 1), ("b", None)], "n": 5, "s": "6", "f": 1.1, "_error": None},
        {"id": 2, "attrs": [], "counts": None, "n": 7, "s": "seven", "f": 2.5, "_error": None},
        {"id": 3, "attrs": None, "counts": [("z", 9)], "n": None, "s": "true", "f": None,
         "_error": None},
        {"id": None, "attrs": None, "counts": None, "n": None, "s": None, "f": None,
         "_error": "bad value for n"}]


def test_union_with_a_record_among_several_types_is_refused_by_name() -> None:
    from tests.pipelines.connect_avro import container

    fields = [{"name": "n", "type": ["null", "long", {"type": "record", "name": "Point",
                                                       "fields": [{"name": "x",
                                                                   "type": "long"}]}]}]
    recs = [{"before": None, "after": {"id": 1, "n": 5}, "op": "c", "ts_ms": 1,
             "source": {"pos": 1}}]
    got = decode_avro_file(container(_typed_envelope(fields), recs), TYPED.to_table_schema(0))
    (row,) = got.to_pylist()
    assert row["_error"] == "unsupported Avro schema"
    assert "before.n" in row["_value"] and "mixes record" in row["_value"], row["_value"]
