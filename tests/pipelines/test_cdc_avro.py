"""``--format debezium-avro``: Debezium envelopes in Avro container files as Kafka Connect's S3
sink writes them (:mod:`pipelines.cdc.formats.avro`).

The files are written here with fastavro from the connectors' published events by Connect's
Avro rules (``tests/pipelines/connect_avro.py``; sources in
``cdc_corpus/debezium_avro/SOURCES.md``); expected rows are written by hand. The same events
as Avro and as Debezium JSON with schemas decode to the same rows (the Spark SQL reference
reads JSON only).
"""

from __future__ import annotations

import base64
import copy
import datetime
import decimal
import importlib.util
import io
import json
import random
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from fastavro.read import HEADER_SCHEMA

from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.canonical import canonical_lines
from paimon_core.integration import FileIO
from paimon_core.schema_builder import Schema
from pipelines.cdc.decode import decode_file
from pipelines.cdc.events import UNAVAILABLE, UNAVAILABLE_BASE64
from pipelines.cdc.formats.avro import (
    CORRUPT_AVRO,
    NOT_AVRO,
    NOT_ENVELOPE,
    UNSUPPORTED_CODEC,
    _base64,
    avro_file_order,
    decode_avro_file,
)
from pipelines.cdc.ingest import CdcOptions, ingest, list_batches
from pipelines.cdc.settings import DecodeSettings
from pipelines.config import CatalogSettings
from pipelines.jobs.cdc_ingest import main
from tests.pipelines.connect_avro import avro_value, container, envelope_file
from tests.pipelines.test_cdc_types import (
    _ENVELOPE,
    ALLTYPE,
    ALLTYPE_ROW,
    MIXED,
    MIXED_ERRORS,
    MIXED_LINES,
    MIXED_ROWS,
)

CORPUS = Path(__file__).parent / "cdc_corpus"
PG = json.loads((CORPUS / "debezium_avro" / "postgresql_customers.json").read_text())
D = decimal.Decimal
CUSTOMERS = Schema.of([("id", "INT NOT NULL"), ("first_name", "STRING NOT NULL"),
                       ("last_name", "STRING NOT NULL"), ("email", "STRING NOT NULL")],
                      primary_keys=["id"], options={"bucket": "2"})
SALLY = {"id": 2, "first_name": "Sally", "last_name": "Thomas", "email": "sally.thomas@acme.com"}
EDWARD = {"id": 3, "first_name": "Edward", "last_name": "Walker", "email": "ed@walker.com"}


def _rows(t: pa.Table, names: list[str]) -> dict[Any, dict[str, Any]]:
    return {r[names[0]]: {n: r[n] for n in names} for r in t.to_pylist() if r["_error"] is None}


def _without_value(t: pa.Table) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = t.drop_columns(["_value"]).to_pylist()
    return rows


def _pg_schema(nullable: bool) -> dict[str, Any]:
    """The docs' envelope schema; ``nullable``: its value columns optional (a table whose
    columns allow NULL: the key-only ``before`` then holds NULLs instead of fallbacks)."""
    s: dict[str, Any] = copy.deepcopy(PG["schema"])
    if nullable:
        for image in s["fields"][:2]:
            for f in image["fields"][1:]:
                f["optional"] = True
    return s


def _pg_events(nullable: bool) -> dict[str, list[dict[str, Any]]]:
    """Per landing file, the JSON-with-schema events (values as Debezium completes them)."""
    s = _pg_schema(nullable)
    return {name: [{"schema": s, "payload": avro_value(s, p)} for p in payloads]
            for name, payloads in PG["files"].items()}


def _landing(root: Path, nullable: bool) -> Path:
    landing = root / "landing"
    for name, events in _pg_events(nullable).items():
        path = landing / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(envelope_file(events, codec="deflate" if nullable else "null"))
    return landing


# ---------------------------------------------------------------------------- decoding


def test_base64_is_rfc4648() -> None:
    rnd = random.Random(7)
    values: list[bytes | None] = [bytes(rnd.randrange(256) for _ in range(rnd.randrange(40)))
                                  for _ in range(300)]
    values[5] = None
    values[6] = b""
    arr = pa.array(values, pa.binary())
    want = [None if v is None else base64.b64encode(v).decode() for v in values]
    assert _base64(arr).to_pylist() == want
    assert _base64(arr.slice(3, 50)).to_pylist() == want[3:53]
    # Debezium's unchanged-TOAST placeholder of a bytes column reads as the JSON path's
    assert _base64(pa.array([UNAVAILABLE.encode()])).to_pylist() == [UNAVAILABLE_BASE64]


def test_paimon_alltype_event_as_avro() -> None:
    schema = ALLTYPE.to_table_schema(0)
    line = (CORPUS / "debezium_schema" / "paimon_alltype.jsonl").read_text()
    got = decode_avro_file(envelope_file([json.loads(line)]), schema,
                           settings=DecodeSettings(position_fields=("pos",)))
    assert got.column("_error").to_pylist() == [None]
    assert _rows(got, schema.field_names) == {1: ALLTYPE_ROW}
    json_rows = decode_file(line.encode(), schema,
                            settings=DecodeSettings(position_fields=("pos",)))
    assert _without_value(got) == _without_value(json_rows)


#: the hand-built events of test_cdc_types with ``source`` and ``ts_ms`` in their schema
_ENVELOPE_FIELDS: list[Any] = _ENVELOPE["fields"]  # type: ignore[assignment]
_MIXED_SCHEMA = {**_ENVELOPE, "fields": [
    *_ENVELOPE_FIELDS, {"type": "int64", "optional": True, "field": "ts_ms"},
    {"type": "struct", "optional": False, "name": "t.Source", "field": "source",
     "fields": [{"type": "int64", "optional": False, "field": "pos"}]}]}
MIXED_EVENTS = [{**json.loads(x), "schema": _MIXED_SCHEMA} for x in MIXED_LINES[:5]]


def test_mixed_logical_types_and_refusals_as_avro() -> None:
    schema = MIXED.to_table_schema(0)
    got = decode_avro_file(envelope_file(MIXED_EVENTS), schema,
                           settings=DecodeSettings(position_fields=("pos",)))
    assert _rows(got, schema.field_names) == {k: MIXED_ROWS[k] for k in (1, 2)}
    errors = {r["_pos_line"]: r["_error"] for r in got.to_pylist() if r["_error"]}
    assert errors == MIXED_ERRORS  # by record number
    bad = {r["_pos_line"]: json.loads(r["_value"]) for r in got.to_pylist() if r["_error"]}
    assert bad[4]["after"]["price"] == "AOjUpRAA"  # the record, as Debezium JSON
    lines = "\n".join(json.dumps(e) for e in MIXED_EVENTS).encode()
    assert _without_value(got) == _without_value(
        decode_file(lines, schema, settings=DecodeSettings(position_fields=("pos",))))


@pytest.mark.parametrize("nullable", [False, True])
def test_postgres_events_as_avro_and_as_json_decode_alike(nullable: bool) -> None:
    schema = CUSTOMERS.to_table_schema(0)
    for i, (name, events) in enumerate(_pg_events(nullable).items()):
        avro = decode_avro_file(envelope_file(events), schema, file_index=i)
        lines = "\n".join(json.dumps(e) for e in events).encode()
        assert _without_value(avro) == _without_value(decode_file(lines, schema,
                                                                  file_index=i)), name
        assert avro.column("_connector").to_pylist() == ["postgresql"] * len(events)


#: a hand-written Avro schema with Connect's annotations on Avro logical types and bare Avro
#: logical types (another producer's): each decodes by its unit / scale
_VALUE = {"type": "record", "name": "Value", "namespace": "t", "fields": [
    {"name": "id", "type": "int"},
    {"name": "d", "type": ["null", {"type": "int", "connect.version": 1,
                                    "connect.name": "org.apache.kafka.connect.data.Date",
                                    "logicalType": "date"}], "default": None},
    {"name": "cts", "type": ["null", {"type": "long", "connect.version": 1,
                                      "connect.name": "org.apache.kafka.connect.data.Timestamp",
                                      "logicalType": "timestamp-millis"}], "default": None},
    {"name": "us", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}],
     "default": None},
    {"name": "dec", "type": ["null", {"type": "bytes", "logicalType": "decimal",
                                      "precision": 10, "scale": 2}], "default": None},
    {"name": "fdec", "type": ["null", {"type": "fixed", "name": "F8", "size": 8,
                                       "logicalType": "decimal", "precision": 18,
                                       "scale": 3}], "default": None},
    {"name": "f32", "type": ["null", "float"], "default": None},
    {"name": "bin", "type": ["null", "bytes"], "default": None},
    {"name": "e", "type": ["null", {"type": "enum", "name": "E", "symbols": ["A", "B"]}],
     "default": None},
    {"name": "tags", "type": ["null", {"type": "array", "items": "string"}],
     "default": None}]}
_LOGICAL_ENVELOPE = {"type": "record", "name": "Envelope", "namespace": "t", "fields": [
    {"name": "before", "type": ["null", _VALUE], "default": None},
    {"name": "after", "type": ["null", "t.Value"], "default": None},
    {"name": "source", "type": {"type": "record", "name": "Source",
                                "fields": [{"name": "pos", "type": "long"}]}},
    {"name": "op", "type": "string"},
    {"name": "ts_ms", "type": ["null", "long"], "default": None}]}
LOGICAL = Schema.of(
    [("id", "INT NOT NULL"), ("d", "DATE"), ("cts", "TIMESTAMP(3)"), ("us", "TIMESTAMP(6)"),
     ("dec", "DECIMAL(10, 2)"), ("fdec", "DECIMAL(17, 3)"), ("f32", "DOUBLE"),
     ("bin", "BYTES"), ("e", "STRING"), ("tags", "ARRAY<STRING>")],
    primary_keys=["id"], options={"bucket": "1"})
_UTC = datetime.UTC


_LOGICAL_AFTER = {"id": 1, "d": datetime.date(2024, 2, 29),
                  "cts": datetime.datetime(2024, 1, 1, 0, 0, 0, 123000, tzinfo=_UTC),
                  "us": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=_UTC),
                  "dec": D("-1234.56"), "fdec": D("12345678901234.567"), "f32": 1.1,
                  "bin": b"\x00\xff\xfe", "e": "B", "tags": ["x", "y"]}
LOGICAL_RECORDS = [
    {"before": None, "after": _LOGICAL_AFTER, "source": {"pos": 1}, "op": "c", "ts_ms": 5},
    # 15 integer digits (Avro's precision 18 holds them) do not fit DECIMAL(17, 3): refused,
    # never rounded
    {"before": None, "after": {"id": 2, "fdec": D("123456789012345.678")},
     "source": {"pos": 2}, "op": "c", "ts_ms": 6}]
#: by hand: 2024-02-29; 1704067200123 ms; -1 µs; unscaled -123456 at scale 2; the float 1.1f
#: as the double 1.1 (its shortest text, as Connect's JSON prints it)
LOGICAL_ROWS = {1: {
    "id": 1, "d": datetime.date(2024, 2, 29),
    "cts": datetime.datetime(2024, 1, 1, 0, 0, 0, 123000),
    "us": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999),
    "dec": D("-1234.56"), "fdec": D("12345678901234.567"), "f32": 1.1,
    "bin": b"\x00\xff\xfe", "e": "B", "tags": ["x", "y"]}}
LOGICAL_ERRORS = {2: "bad value for fdec"}


def test_avro_logical_types_decode_exactly() -> None:
    got = decode_avro_file(container(_LOGICAL_ENVELOPE, LOGICAL_RECORDS),
                           LOGICAL.to_table_schema(0),
                           settings=DecodeSettings(position_fields=("pos",)))
    assert _rows(got, LOGICAL.to_table_schema(0).field_names) == LOGICAL_ROWS
    assert {r["_pos_line"]: r["_error"] for r in got.to_pylist() if r["_error"]} == \
        LOGICAL_ERRORS


def test_unreadable_files_are_rejected_by_file_and_record() -> None:
    schema = CUSTOMERS.to_table_schema(0)
    good = _pg_events(False)
    first = next(iter(good.values()))
    # not Avro at all: one rejected event, record 1
    got = decode_avro_file(json.dumps(first[0]).encode(), schema, file_index=3)
    assert [(r["_error"], r["_pos_file"], r["_pos_line"]) for r in got.to_pylist()] == [
        (NOT_AVRO, 3, 1)]
    # a file cut short: the blocks before the cut are decoded, then one rejected event
    events = [e for v in good.values() for e in v if e["payload"]["op"] == "c"]
    buf = io.BytesIO()
    s = fastavro.parse_schema(json.loads(json.dumps(_avro_schema(events[0]["schema"]))))
    w = fastavro.write.Writer(buf, s, sync_interval=1)  # one block per record
    for e in events:
        w.write(avro_value(e["schema"], e["payload"]))
        w.flush()
    data = buf.getvalue()
    got = decode_avro_file(data[:-20], schema)
    out = [(r["_error"], r["_pos_line"]) for r in got.to_pylist()]
    assert out == [(None, 1), (CORRUPT_AVRO, 2)]
    assert "record 2" in got.to_pylist()[1]["_value"]
    # records that are not envelopes (e.g. flattened by ExtractNewRecordState): no op
    flat = container({"type": "record", "name": "Value", "fields": [
        {"name": "id", "type": "int"}]}, [{"id": 1}, {"id": 2}])
    got = decode_avro_file(flat, schema)
    assert got.column("_error").to_pylist() == ["unknown op", "unknown op"]
    # a file of bare strings
    got = decode_avro_file(container("string", ["x"]), schema)
    assert got.column("_error").to_pylist() == [NOT_ENVELOPE]
    # a codec whose library is not installed (the S3 sink's avro.codec=snappy, without
    # cramjam / python-snappy): named, not taken for corrupt data
    fo = io.BytesIO(data)
    header = fastavro.schemaless_reader(fo, HEADER_SCHEMA)
    assert isinstance(header, dict)
    header["meta"]["avro.codec"] = b"snappy"
    hdr = io.BytesIO()
    fastavro.schemaless_writer(hdr, HEADER_SCHEMA, header)
    if importlib.util.find_spec("cramjam") is None and importlib.util.find_spec("snappy") is None:
        got = decode_avro_file(hdr.getvalue() + data[fo.tell():], schema)
        (row,) = got.to_pylist()
        assert (row["_error"], row["_pos_line"]) == (UNSUPPORTED_CODEC, 1)
        assert "snappy" in row["_value"]


def test_null_records_are_tombstones() -> None:
    # the S3 sink writes none (behavior.on.null.values), but a file of ["null", Envelope]
    # may hold them: counted and skipped, as the JSON path's ``null`` lines
    events = [e for v in _pg_events(False).values() for e in v][:2]
    s = _avro_schema(events[0]["schema"])
    recs = [avro_value(events[0]["schema"], e["payload"]) for e in events]
    got = decode_avro_file(container(["null", s], [recs[0], None, recs[1]]),
                           CUSTOMERS.to_table_schema(0))
    assert sorted((r["_pos_line"], r["_error"]) for r in got.to_pylist()) == [
        (1, None), (2, "tombstone"), (3, None)]


def test_new_column_is_sampled_for_the_schema_evolution() -> None:
    # an added column (``vip``) in a later file's schema: the job adds it, typed from the
    # samples (the records as Debezium JSON)
    from pipelines.cdc.formats import sample_values

    s = _pg_schema(False)
    for image in s["fields"][:2]:
        image["fields"].append({"type": "boolean", "optional": True, "field": "vip"})
    payload = {**PG["files"][next(iter(PG["files"]))][0]}
    payload["after"] = {**payload["after"], "vip": True}
    got = decode_avro_file(envelope_file([{"schema": s, "payload": avro_value(s, payload)}]),
                           CUSTOMERS.to_table_schema(0))
    (row,) = got.to_pylist()
    assert (row["_error"], row["_unknown"]) == (None, "vip")
    assert sample_values("debezium-json", [row["_value"]], ["vip"]) == {"vip": [True]}


def _avro_schema(connect: dict[str, Any]) -> Any:
    from tests.pipelines.connect_avro import avro_schema

    return avro_schema(connect)


def test_s3_sink_files_order_by_partition_then_offset(tmp_path: Path) -> None:
    d = tmp_path / "batch-000001"
    d.mkdir()
    names = ["t+10+0000000000.avro", "t+2+0000000100.avro", "t+2+0000000005.avro",
             "t+0+0000001000.avro", "_summary.json"]
    for n in names:
        (d / n).write_bytes(b"")
    (tmp_path / "batch-000002.avro").write_bytes(b"")
    got = list_batches(FileIO(str(tmp_path)), str(tmp_path))
    assert [(b, [f.rsplit("/", 1)[-1] for f in fs]) for b, fs in got] == [
        (1, ["t+0+0000001000.avro", "t+2+0000000005.avro", "t+2+0000000100.avro",
             "t+10+0000000000.avro"]),
        (2, ["batch-000002.avro"])]
    assert avro_file_order("a/b/x.avro") == ("a/b", "x.avro", -1, -1)


# ---------------------------------------------------------------------------- the job


@pytest.fixture(scope="module")
def avro_job(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The docs' Postgres events as S3-sink Avro files through the job's CLI: batch 1
    (create, update, key-only delete of id 1 in partition 0; a snapshot read of id 2 in
    partition 1), then batch 2 (a truncate and a create of id 3)."""
    root = tmp_path_factory.mktemp("avro")
    landing = _landing(root, nullable=False)
    wh = root / "wh"
    FileSystemCatalog(str(wh)).create_table("db.customers", CUSTOMERS)
    args = ["--warehouse", str(wh), "--table", "db.customers", "--landing", str(landing),
            "--format", "debezium-avro"]
    assert main([*args, "--batch", "1"]) == 0
    rows = FileSystemCatalog(str(wh)).get_table("db.customers").to_arrow().to_pylist()
    assert sorted(rows, key=lambda r: r["id"]) == [SALLY]
    assert main(args) == 0
    return wh


@pytest.mark.spark
def test_job_lands_s3_sink_avro_files(avro_job: Path) -> None:
    t = FileSystemCatalog(str(avro_job)).get_table("db.customers")
    assert t.to_arrow().to_pylist() == [EDWARD]  # truncated, then id 3
    snaps = list(t.snapshot_manager.snapshots())
    # batch 2 in steps: the truncate (an OVERWRITE emptying the table), then the create
    assert [(s.commit_identifier, s.commit_kind.value) for s in snaps] == [
        (1, "APPEND"), (2, "OVERWRITE"), (2, "APPEND")]
    props = [s.properties or {} for s in snaps]
    # every step of batch 2 carries the batch's counts and its place among the steps
    assert [(p["cdc.events"], p["cdc.malformed"], p.get("commit.step")) for p in props] == [
        ("4", "0", None), ("2", "0", "1/2"), ("2", "0", "2/2")]


@pytest.mark.spark
def test_job_key_only_delete_with_nulls_and_bad_files(spark: Any, tmp_path: Path) -> None:
    # the value columns optional in the Avro schema: the key-only delete's before holds
    # NULLs for the table's NOT NULL columns; a file that is not Avro is quarantined
    landing = _landing(tmp_path, nullable=True)
    (landing / "batch-000001" / "notes+0+0000000000.avro").write_text('{"op": "c"}\n')
    wh = str(tmp_path / "wh")
    reports = ingest(spark, CatalogSettings(wh), "db.customers", str(landing),
                     CdcOptions(format="debezium-avro", max_error_ratio=0.5),
                     schema=CUSTOMERS, batches=[1])
    (rep,) = reports
    assert (rep.events, rep.valid, rep.reasons) == (5, 4, {NOT_AVRO: 1})
    q = [json.loads(x) for p in sorted(Path(rep.quarantine or "").glob("part-*.jsonl"))
         for x in p.read_text().splitlines()]
    assert [(Path(x["file"]).name, x["line"], x["reason"]) for x in q] == [
        ("notes+0+0000000000.avro", 1, NOT_AVRO)]
    assert "not " in q[0]["event"]
    rows = FileSystemCatalog(wh).get_table("db.customers").to_arrow().to_pylist()
    assert rows == [SALLY]


@pytest.mark.oracle
@pytest.mark.spark
def test_java_reads_the_avro_ingested_table(avro_job: Path, tmp_path: Path) -> None:
    from tests.interop.oracle import ensure_ready, run_batches

    ensure_ready()
    out = tmp_path / "java.jsonl"
    cmd = {"cmd": "read", "warehouse": str(avro_job), "table": "db.customers",
           "engine": "java", "output": str(out)}
    result = run_batches({"avro": [cmd]}, tmp_path)["avro"]
    assert not result.failures(), (result.failures(), result.stderr[-3000:])
    t = FileSystemCatalog(str(avro_job)).get_table("db.customers")
    data = t.to_arrow()
    assert data.to_pylist() == [EDWARD]
    ours = canonical_lines(data, [t.schema.field(c) for c in data.column_names])
    assert out.read_text().splitlines() == ours


@pytest.mark.spark
def test_job_lands_exact_values_from_avro(spark: Any, tmp_path: Path) -> None:
    # the decoding cases above through the job: one S3-sink file per table, read back
    wh = str(tmp_path / "wh")
    alltype = json.loads((CORPUS / "debezium_schema" / "paimon_alltype.jsonl").read_text())
    for name, sch, data, rows, errors in [
            ("alltype", ALLTYPE, envelope_file([alltype]), {1: ALLTYPE_ROW}, {}),
            ("mixed", MIXED, envelope_file(MIXED_EVENTS), {k: MIXED_ROWS[k] for k in (1, 2)},
             MIXED_ERRORS),
            ("logical", LOGICAL, container(_LOGICAL_ENVELOPE, LOGICAL_RECORDS), LOGICAL_ROWS,
             LOGICAL_ERRORS)]:
        batch = tmp_path / name / "batch-000001"
        batch.mkdir(parents=True)
        (batch / f"db.{name}+0+0000000000.avro").write_bytes(data)
        FileSystemCatalog(wh).create_table(f"db.{name}", sch)
        (rep,) = ingest(spark, CatalogSettings(wh), f"db.{name}", str(tmp_path / name),
                        CdcOptions(position_fields=("pos",), max_error_ratio=0.9,
                                   evolve_schema=False, format="debezium-avro",
                                   source_table="all_types_table" if name == "alltype"
                                   else None))  # (the table Paimon's event names)
        assert rep.reasons == {r: 1 for r in errors.values()}, name
        q = [json.loads(x) for p in sorted(Path(rep.quarantine or tmp_path).glob("part-*"))
             for x in p.read_text().splitlines()]
        assert sorted((x["line"], x["reason"]) for x in q) == sorted(errors.items())
        names = sch.to_table_schema(0).field_names
        got = {r[names[0]]: {n: r[n] for n in names}
               for r in FileSystemCatalog(wh).get_table(f"db.{name}").to_arrow().to_pylist()}
        assert got == rows, name
