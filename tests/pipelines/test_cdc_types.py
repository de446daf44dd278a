"""CDC values decoded by the event's own schema (Debezium JSON with schemas enabled): each
column's logical type (``schema.fields[after].fields[].name``, a decimal's ``scale``
parameter) decides how its JSON value is read; without a schema the table's type does.

Corpus: ``cdc_corpus/debezium_schema`` (see its SOURCES.md) and hand-built events in the
same form. Expected values are written by hand from the connector's documented encodings:
Kafka Connect ``Decimal`` = base64 of the big-endian two's complement unscaled value,
``VariableScaleDecimal`` = ``{"scale", "value"}``, ``Timestamp`` = epoch ms,
``MicroTimestamp`` = epoch µs, ``NanoTimestamp`` = epoch ns, ``Date`` = epoch days.
"""

from __future__ import annotations

import datetime
import decimal
import json
from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.schema_builder import Schema
from pipelines.cdc.decode import decode_file
from pipelines.cdc.settings import DecodeSettings

CORPUS = Path(__file__).parent / "cdc_corpus" / "debezium_schema"
D = decimal.Decimal

#: the Paimon types Paimon's own CDC gives these MySQL columns (precision 40 > 38: STRING)
ALLTYPE = Schema.of(
    [("_id", "INT NOT NULL"), ("pt", "DECIMAL(2, 1)"), ("_bit1", "BOOLEAN"),
     ("_bit", "BYTES"), ("_bigint", "BIGINT"), ("_bigint_unsigned", "DECIMAL(20, 0)"),
     ("_serial", "DECIMAL(20, 0)"), ("_float", "DOUBLE"), ("_numeric", "DECIMAL(8, 3)"),
     ("_fixed", "STRING"), ("_decimal", "DECIMAL(8, 0)"),
     ("_decimal_unsigned_zerofill", "DECIMAL(8, 0)"), ("_big_decimal", "DECIMAL(38, 10)"),
     ("_date", "DATE"), ("_datetime", "TIMESTAMP(0)"), ("_datetime3", "TIMESTAMP(3)"),
     ("_datetime6", "TIMESTAMP(6)"), ("_timestamp", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
     ("_varchar", "STRING"), ("_bin", "BYTES"), ("_json", "STRING"), ("_enum", "STRING"),
     ("_year", "INT"), ("_set", "STRING"), ("_time", "TIME"),
     ("_timestamp0", "TIMESTAMP(0)"), ("_point", "STRING"), ("_geometry", "STRING"),
     ("_linestring", "STRING"), ("_polygon", "STRING"), ("_multipoint", "STRING"),
     ("_multiline", "STRING"), ("_multipolygon", "STRING"),
     ("_geometrycollection", "STRING")],
    primary_keys=["_id"], options={"bucket": "1"})

#: the GeoJSON Paimon's MySQL sync writes for the same rows (apache/paimon
#: paimon-flink/paimon-flink-cdc/src/test/java/org/apache/paimon/flink/action/cdc/mysql/
#: MySqlSyncTableActionITCase.java, its all-types expectations; Paimon's Debezium sync uses
#: the same conversion, MySqlTypeUtils.convertWkbArray)
GEOJSON = {
    "_point": '{"coordinates":[1,1],"type":"Point","srid":0}',
    "_geometry": '{"coordinates":[[[1,1],[2,1],[2,2],[1,2],[1,1]]],"type":"Polygon","srid":0}',
    "_linestring": '{"coordinates":[[3,0],[3,3],[3,5]],"type":"LineString","srid":0}',
    "_polygon": '{"coordinates":[[[1,1],[2,1],[2,2],[1,2],[1,1]]],"type":"Polygon","srid":0}',
    "_multipoint": '{"coordinates":[[1,1],[2,2]],"type":"MultiPoint","srid":0}',
    "_multiline": '{"coordinates":[[[1,1],[2,2],[3,3]],[[4,4],[5,5]]],'
                  '"type":"MultiLineString","srid":0}',
    "_multipolygon": '{"coordinates":[[[[0,0],[10,0],[10,10],[0,10],[0,0]]],'
                     '[[[5,5],[7,5],[7,7],[5,7],[5,5]]]],"type":"MultiPolygon","srid":0}',
    "_geometrycollection": '{"geometries":[{"type":"Point","coordinates":[10,10]},'
                           '{"type":"Point","coordinates":[30,30]},{"type":"LineString",'
                           '"coordinates":[[15,15],[20,20]]}],"type":"GeometryCollection",'
                           '"srid":0}',
}
#: by hand: "Cw==" = 0x0B = 11, scale 1; "BKgXyAA=" = 0x04A817C800; "ALxfFg==" =
#: 0x00BC5F16 = 12345110, scale 3; "F8bjwqHo0RQZ/Jj5o9PW" (15 bytes) = ...321110, scale 3;
#: "K2c=" = 0x2B67; "AII1" = 0x008235; "ELfYJWlzSHt+L+c1GgAAAA==" scale 10; 19439 days;
#: 1679581805000 ms / 1679581805123 ms / 1679581805123456 µs; "_bit" (Bits, 64 bits) =
#: "xwcAAAAAAAA=" = c7 07 00 .. 00 little-endian: big-endian 00 .. 00 07 c7 (as Paimon's sync
#: stores it); "_time" (MicroTime) 36803000000 µs = 10:13:23; "_timestamp0" (ZonedTimestamp)
#: "2023-03-23T07:10:00Z"
ALLTYPE_ROW = {
    "_id": 1, "pt": D("1.1"), "_bit1": True, "_bit": bytes(6) + b"\x07\xc7",
    "_bigint": 10000000000, "_bigint_unsigned": D("20000000000"),
    "_serial": D("40000000000"), "_float": 1.5, "_numeric": D("12345.110"),
    "_fixed": "123456789876543212345678987654321.110", "_decimal": D("11111"),
    "_decimal_unsigned_zerofill": D("33333"),
    "_big_decimal": D("2222222222222222400000000000.0000000000"),
    "_date": datetime.date(2023, 3, 23),
    "_datetime": datetime.datetime(2023, 3, 23, 14, 30, 5),
    "_datetime3": datetime.datetime(2023, 3, 23, 14, 30, 5, 123000),
    "_datetime6": datetime.datetime(2023, 3, 23, 14, 30, 5, 123456),
    "_timestamp": datetime.datetime(2023, 3, 23, 22, 0, 10, 123456, tzinfo=datetime.UTC),
    "_varchar": "Apache Paimon", "_bin": b"bytes" + bytes(5), "_json": '{"a": "b"}',
    "_enum": "value1", "_year": 2023, "_set": "a,b", "_time": datetime.time(10, 13, 23),
    "_timestamp0": datetime.datetime(2023, 3, 23, 7, 10),
    **GEOJSON,
}

#: hand-built events in Debezium's form (field schemas as in the corpus line above)
_FIELDS = [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
     "version": 1, "parameters": {"scale": "2", "connect.decimal.precision": "10"},
     "field": "price"},
    {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "scale"},
                                  {"type": "bytes", "optional": False, "field": "value"}],
     "optional": True, "name": "io.debezium.data.VariableScaleDecimal", "version": 1,
     "field": "amount"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp",
     "version": 1, "field": "ts_us"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.NanoTimestamp",
     "version": 1, "field": "ts_ns"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.Timestamp", "version": 1,
     "field": "ts_ms"},
    {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
     "version": 1, "parameters": {"scale": "3", "connect.decimal.precision": "40"},
     "field": "wide"},
]
_ENVELOPE = {"type": "struct", "name": "t.Envelope", "optional": False, "fields": [
    {"type": "struct", "fields": _FIELDS, "optional": True, "name": "t.Value",
     "field": "before"},
    {"type": "struct", "fields": _FIELDS, "optional": True, "name": "t.Value",
     "field": "after"},
    {"type": "string", "optional": False, "field": "op"}]}
MIXED = Schema.of(
    [("id", "INT NOT NULL"), ("price", "DECIMAL(10, 2)"), ("amount", "DECIMAL(12, 4)"),
     ("ts_us", "TIMESTAMP(6)"), ("ts_ns", "TIMESTAMP(6)"), ("ts_ms", "TIMESTAMP(3)"),
     ("wide", "STRING")],
    primary_keys=["id"], options={"bucket": "1"})
_US, _NS, _MS = 1704067200123456, 1704067200123456000, 1704067200123


def _with_schema(op: str, pos: int, after: dict[str, Any]) -> str:
    return json.dumps({"schema": _ENVELOPE, "payload": {
        "op": op, "ts_ms": 1, "before": None, "after": after, "source": {"pos": pos}}})


MIXED_LINES = [
    # 123456 = 0x01E240 -> "AeJA"; -123456 = 0xFE1DC0 -> "/h3A"
    _with_schema("c", 1, {"id": 1, "price": "AeJA", "amount": {"scale": 3, "value": "AeJA"},
                          "ts_us": _US, "ts_ns": _NS, "ts_ms": _MS, "wide": "AeJA"}),
    _with_schema("c", 2, {"id": 2, "price": "/h3A", "amount": {"scale": 0, "value": "/h3A"},
                          "ts_us": -1, "ts_ns": -1000, "ts_ms": -1}),
    # nanoseconds that are not whole microseconds: never truncated
    _with_schema("c", 3, {"id": 3, "ts_ns": _NS + 789}),
    # 10**12 unscaled = 0xE8D4A51000 -> "6NSlEAA="... with a leading 0x00 sign byte:
    # "AOjUpRAA"; scale 2 -> 10000000000.00: 11 integer digits > DECIMAL(10, 2)'s 8
    _with_schema("c", 4, {"id": 4, "price": "AOjUpRAA"}),
    # scale 5 > DECIMAL(12, 4)'s 4 and the last digit not 0: would round
    _with_schema("c", 5, {"id": 5, "amount": {"scale": 5, "value": "AeJB"}}),
    # no schema: the table's types decide (decimal text, epoch in the job's unit, ms)
    json.dumps({"op": "c", "ts_ms": 1, "after": {"id": 6, "price": "12.50", "ts_us": _MS,
                                                 "wide": 12345678987654321},
                "source": {"pos": 6}}),
]
MIXED_ROWS = {
    1: {"id": 1, "price": D("1234.56"), "amount": D("123.4560"),
        "ts_us": datetime.datetime(2024, 1, 1, 0, 0, 0, 123456),
        "ts_ns": datetime.datetime(2024, 1, 1, 0, 0, 0, 123456),
        "ts_ms": datetime.datetime(2024, 1, 1, 0, 0, 0, 123000), "wide": "123.456"},
    2: {"id": 2, "price": D("-1234.56"), "amount": D("-123456.0000"),
        "ts_us": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999),
        "ts_ns": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999),
        "ts_ms": datetime.datetime(1969, 12, 31, 23, 59, 59, 999000), "wide": None},
    6: {"id": 6, "price": D("12.50"), "amount": None, "ts_us":
        datetime.datetime(2024, 1, 1, 0, 0, 0, 123000), "ts_ns": None, "ts_ms": None,
        "wide": "12345678987654321"},
}
MIXED_ERRORS = {3: "bad value for ts_ns", 4: "bad value for price", 5: "bad value for amount"}


def _rows(t: Any, names: list[str]) -> dict[Any, dict[str, Any]]:
    out = {}
    for r in t.to_pylist():
        if r["_error"] is None:
            out[r[names[0]]] = {n: r[n] for n in names}
    return out


def test_paimon_alltype_event_decoded_by_its_schema() -> None:
    schema = ALLTYPE.to_table_schema(0)
    got = decode_file((CORPUS / "paimon_alltype.jsonl").read_bytes(), schema,
                      settings=DecodeSettings(position_fields=("pos",)))
    assert got.column("_error").to_pylist() == [None]
    assert _rows(got, schema.field_names) == {1: ALLTYPE_ROW}


def test_mixed_logical_types_and_refusals() -> None:
    schema = MIXED.to_table_schema(0)
    got = decode_file(("\n".join(MIXED_LINES) + "\n").encode(), schema,
                      settings=DecodeSettings(position_fields=("pos",)))
    assert _rows(got, schema.field_names) == MIXED_ROWS
    errors = {r["_pos_line"]: r["_error"] for r in got.to_pylist() if r["_error"]}
    assert errors == MIXED_ERRORS


@pytest.mark.spark
def test_spark_reference_agrees(spark: Any, tmp_path: Path) -> None:
    from tests.pipelines.cdcref import compared_rows, spark_changes

    opts: dict[str, Any] = {"position_fields": ["pos"], "epoch_unit": "ms"}
    cases = [(ALLTYPE, (CORPUS / "paimon_alltype.jsonl").read_text().splitlines()),
             (MIXED, MIXED_LINES),
             (ALLTYPE, (CORPUS / "paimon_alltype_numbers.jsonl").read_text().splitlines()),
             (LONG, LONG_LINES), (TEMPORAL, TEMPORAL_LINES), (NESTED, NESTED_LINES)]
    for i, (sch, lines) in enumerate(cases):
        schema = sch.to_table_schema(0)
        f = tmp_path / f"events-{i}.jsonl"
        f.write_text("\n".join(lines) + "\n")
        ref = spark_changes(spark, f, schema, **opts)
        ours = decode_file(f.read_bytes(), schema, settings=DecodeSettings.of(opts))
        assert compared_rows(ours, schema) == compared_rows(ref, schema)


@pytest.mark.spark
def test_ingest_lands_exact_values(spark: Any, tmp_path: Path) -> None:
    from pipelines.cdc.ingest import CdcOptions, ingest
    from pipelines.config import CatalogSettings

    wh = str(tmp_path / "wh")
    for name, sch, lines, rows, errors in [
            ("alltype", ALLTYPE, (CORPUS / "paimon_alltype.jsonl").read_text().splitlines(),
             {1: ALLTYPE_ROW}, {}),
            ("mixed", MIXED, MIXED_LINES, MIXED_ROWS, MIXED_ERRORS),
            ("temporal", TEMPORAL, TEMPORAL_LINES, TEMPORAL_ROWS, TEMPORAL_ERRORS),
            ("nested", NESTED, NESTED_LINES, NESTED_ROWS, NESTED_ERRORS)]:
        landing = tmp_path / name
        landing.mkdir()
        (landing / "batch-000001.jsonl").write_text("\n".join(lines) + "\n")
        FileSystemCatalog(wh).create_table(f"db.{name}", sch)
        quarantine = tmp_path / f"q-{name}"
        (rep,) = ingest(spark, CatalogSettings(wh), f"db.{name}", str(landing),
                        CdcOptions(position_fields=("pos",), max_error_ratio=0.9,
                                   evolve_schema=False, quarantine=str(quarantine),
                                   source_table="all_types_table" if name == "alltype"
                                   else None))
        assert rep.reasons == {r: list(errors.values()).count(r) for r in errors.values()}
        if name == "temporal":  # the refused value beside its reason
            records = [json.loads(x) for f in sorted(quarantine.rglob("part-*.jsonl"))
                       for x in f.read_text().splitlines()]
            assert {r["line"]: (r["reason"], r["value"]) for r in records} == {
                k: (v, TEMPORAL_VALUES[k]) for k, v in TEMPORAL_ERRORS.items()}
        t = FileSystemCatalog(wh).get_table(f"db.{name}")
        names = sch.to_table_schema(0).field_names
        got = {r[names[0]]: {n: r[n] for n in names} for r in t.to_arrow().to_pylist()}
        assert got == rows


#: the same event as Paimon's later resource writes it (decimals as JSON numbers; see
#: SOURCES.md): numbers longer than a double must land exactly
ALLTYPE_NUMBERS_ROW = {**ALLTYPE_ROW,
                       "_big_decimal": D("2222222222222222300000001111.1234567890")}
LONG = Schema.of([("id", "INT NOT NULL"), ("d38", "DECIMAL(38, 2)"), ("s", "STRING"),
                  ("big", "DECIMAL(38, 0)"), ("n", "BIGINT")],
                 primary_keys=["id"], options={"bucket": "1"})
LONG_LINES = [  # hand-built, no schema: the table's types decide
    '{"op": "c", "after": {"id": 1, "d38": 123456789012345678901234567890123456.78, '
    '"s": 123456789876543212345678987654321, "big": 12345678901234567890123, "n": 1}, '
    '"source": {"pos": 1}}',
    # a double's worth of digits stays as it was
    json.dumps({"op": "c", "after": {"id": 2, "d38": 1.25, "s": 1.5, "n": 1234567890123456789},
                "source": {"pos": 2}}),
    # longer than the column: refused, never rounded
    json.dumps({"op": "c", "after": {"id": 3}, "source": {"pos": 3}})
    .replace('"id": 3', '"id": 3, "d38": 1.2345678901234567891'),
]
LONG_ROWS = {
    1: {"id": 1, "d38": D("123456789012345678901234567890123456.78"),
        "s": "123456789876543212345678987654321", "big": D("12345678901234567890123"),
        "n": 1},
    2: {"id": 2, "d38": D("1.25"), "s": "1.5", "big": None, "n": 1234567890123456789},
}


def test_numbers_longer_than_a_double_land_exactly() -> None:
    for sch, lines, rows, errors in [
            (ALLTYPE, (CORPUS / "paimon_alltype_numbers.jsonl").read_text().splitlines(),
             {1: ALLTYPE_NUMBERS_ROW}, {}),
            (LONG, LONG_LINES, LONG_ROWS, {3: "bad value for d38"})]:
        schema = sch.to_table_schema(0)
        for data in [("\n".join(lines) + "\n").encode(), ("\r\n".join(lines)).encode()]:
            got = decode_file(data, schema, settings=DecodeSettings(position_fields=("pos",)))
            assert _rows(got, schema.field_names) == rows
            assert {r["_pos_line"]: r["_error"] for r in got.to_pylist()
                    if r["_error"]} == errors
            bad = [r["_value"] for r in got.to_pylist() if r["_error"]]
            assert bad == [lines[k - 1] for k in errors]  # quarantined as read


@pytest.mark.spark
def test_ingest_lands_long_numbers_exactly(spark: Any, tmp_path: Path) -> None:
    from pipelines.cdc.ingest import CdcOptions, ingest
    from pipelines.config import CatalogSettings

    wh = str(tmp_path / "wh")
    landing = tmp_path / "long"
    landing.mkdir()
    (landing / "batch-000001.jsonl").write_text("\n".join(LONG_LINES) + "\n")
    FileSystemCatalog(wh).create_table("db.long", LONG)
    (rep,) = ingest(spark, CatalogSettings(wh), "db.long", str(landing),
                    CdcOptions(position_fields=("pos",), max_error_ratio=0.9,
                               evolve_schema=False))
    assert rep.reasons == {"bad value for d38": 1}
    names = LONG.to_table_schema(0).field_names
    got = {r["id"]: {n: r[n] for n in names}
           for r in FileSystemCatalog(wh).get_table("db.long").to_arrow().to_pylist()}
    assert got == LONG_ROWS


def _field(name: str | None, typ: str, field: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": typ, "optional": True, "field": field}
    if name is not None:
        out["name"] = name
    return out


#: hand-built events with Debezium's field schemas (its documented encodings: Time = ms past
#: midnight, MicroTime = µs, NanoTime = ns, ZonedTime = ISO time in GMT, ZonedTimestamp = ISO
#: timestamp with offset, Bits = little-endian bytes, base64)
_TEMPORAL_FIELDS = [
    _field(None, "int32", "id"), _field("io.debezium.time.Time", "int32", "t0"),
    _field("io.debezium.time.MicroTime", "int64", "t3"),
    _field("io.debezium.time.NanoTime", "int64", "tn"),
    _field("org.apache.kafka.connect.data.Time", "int32", "tc"),
    _field("io.debezium.time.ZonedTime", "string", "tz"),
    _field("io.debezium.time.MicroTimestamp", "int64", "ts3"),
    _field("io.debezium.time.ZonedTimestamp", "string", "ltz"),
    _field("io.debezium.time.ZonedTimestamp", "string", "ntz"),
    _field("io.debezium.data.Bits", "bytes", "bits"),
    _field("io.debezium.data.Bits", "bytes", "flag"),
]
_TEMPORAL_ENVELOPE = {"type": "struct", "name": "t.Envelope", "optional": False, "fields": [
    {"type": "struct", "fields": _TEMPORAL_FIELDS, "optional": True, "field": "before"},
    {"type": "struct", "fields": _TEMPORAL_FIELDS, "optional": True, "field": "after"}]}
TEMPORAL = Schema.of(
    [("id", "INT NOT NULL"), ("t0", "TIME(0)"), ("t3", "TIME(3)"), ("tn", "TIME(3)"),
     ("tc", "TIME(3)"), ("tz", "TIME(6)"), ("ts3", "TIMESTAMP(3)"),
     ("ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("ntz", "TIMESTAMP(6)"), ("bits", "BYTES"),
     ("flag", "BOOLEAN")],
    primary_keys=["id"], options={"bucket": "1"})
_TEMPORAL_AFTER: list[dict[str, Any]] = [
    # 36803000 ms = 10:13:23; 36803123000 µs = 10:13:23.123; 45296789000000 ns = 12:34:56.789
    {"id": 1, "t0": 36803000, "t3": 36803123000, "tn": 45296789000000, "tc": 36803123,
     "tz": "10:13:23.123Z",
     "ts3": 1679581805123000, "ltz": "2023-03-23T22:00:10.123456Z",
     "ntz": "2023-03-23T22:00:10.123456+02:00", "bits": "xwcA", "flag": "AQ=="},
    # the edges of the day; an offset taken away (ZonedTime is GMT); "AA==" = 0 = false;
    # nine fraction digits of zeros are exact
    {"id": 2, "t0": 0, "t3": 86399999000, "tz": "01:00:00+02:00", "flag": "AA==",
     "ltz": "1969-12-31T23:59:59.999999000Z", "ntz": "2023-03-23T22:00:10-05:30"},
    # no schema: the table's type (numbers in the job's epoch unit, ms; text as written)
    {"id": 3, "t0": 3_600_000, "tz": "23:59:59.5"},
    {"id": 4, "t0": 36803001},  # 10:13:23.001 into TIME(0): finer than the column
    {"id": 5, "t3": 36803123001},  # a microsecond: Paimon's TIME keeps milliseconds
    {"id": 6, "tn": 86_400_000_000_000},  # 24:00: not a time of day
    {"id": 7, "tz": "10:13:23.1234Z"},  # below the millisecond
    {"id": 8, "ts3": 1679581805123001},  # a microsecond into TIMESTAMP(3)
    {"id": 9, "ltz": "2023-03-23T22:00:10.1234561Z"},  # a digit below the microsecond
    {"id": 10, "flag": "Ag=="},  # the bit string 10 is not a boolean
    {"id": 11, "tz": "25:00:00Z"},
]
TEMPORAL_LINES = [
    json.dumps({"op": "c", "ts_ms": 1, "after": a, "source": {"pos": i + 1}}) if a["id"] == 3
    else json.dumps({"schema": _TEMPORAL_ENVELOPE, "payload": {
        "op": "c", "ts_ms": 1, "before": None, "after": a, "source": {"pos": i + 1}}})
    for i, a in enumerate(_TEMPORAL_AFTER)]
_NONE = {c: None for c in ("t0", "t3", "tn", "tc", "tz", "ts3", "ltz", "ntz", "bits", "flag")}
TEMPORAL_ROWS = {
    1: {"id": 1, "t0": datetime.time(10, 13, 23), "t3": datetime.time(10, 13, 23, 123000),
        "tn": datetime.time(12, 34, 56, 789000), "tc": datetime.time(10, 13, 23, 123000),
        "tz": datetime.time(10, 13, 23, 123000),
        "ts3": datetime.datetime(2023, 3, 23, 14, 30, 5, 123000),
        "ltz": datetime.datetime(2023, 3, 23, 22, 0, 10, 123456, tzinfo=datetime.UTC),
        "ntz": datetime.datetime(2023, 3, 23, 20, 0, 10, 123456),
        "bits": b"\x00\x07\xc7", "flag": True},  # "xwcA" = c7 07 00
    2: {**_NONE, "id": 2, "t0": datetime.time(0), "t3": datetime.time(23, 59, 59, 999000),
        "tz": datetime.time(23, 0), "flag": False,
        "ltz": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=datetime.UTC),
        "ntz": datetime.datetime(2023, 3, 24, 3, 30, 10)},
    3: {**_NONE, "id": 3, "t0": datetime.time(1), "tz": datetime.time(23, 59, 59, 500000)},
}
#: the refused values, as the quarantine shows them (JSON text; a string as itself)
TEMPORAL_VALUES = {4: "36803001", 5: "36803123001", 6: "86400000000000",
                   7: "10:13:23.1234Z", 8: "1679581805123001",
                   9: "2023-03-23T22:00:10.1234561Z", 10: "Ag==", 11: "25:00:00Z"}
TEMPORAL_ERRORS = {4: "bad value for t0", 5: "bad value for t3", 6: "bad value for tn",
                   7: "bad value for tz", 8: "bad value for ts3", 9: "bad value for ltz",
                   10: "bad value for flag", 11: "bad value for tz"}


def test_times_zoned_timestamps_and_bits() -> None:
    schema = TEMPORAL.to_table_schema(0)
    got = decode_file(("\n".join(TEMPORAL_LINES) + "\n").encode(), schema,
                      settings=DecodeSettings(position_fields=("pos",)))
    assert _rows(got, schema.field_names) == TEMPORAL_ROWS
    assert {r["_pos_line"]: r["_error"] for r in got.to_pylist()
            if r["_error"]} == TEMPORAL_ERRORS


# ------------------------------------------------------------------ Debezium's documented types

TYPES_CORPUS = Path(__file__).parent / "cdc_corpus" / "debezium_types"
_UTC = datetime.UTC

PG_TYPES = Schema.of(
    [("id", "INT NOT NULL"), ("ts", "TIMESTAMP(6)"),
     ("tstz", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("timetz", "TIME(3)"), ("iso_date", "DATE"),
     ("iso_time", "TIME(3)"), ("iso_ts", "TIMESTAMP(6)"), ("bit1", "BOOLEAN"), ("bits", "BYTES"),
     ("hstore", "STRING"), ("doc", "STRING"), ("uid", "STRING"), ("path", "STRING"),
     ("mood", "STRING"), ("span", "STRING"), ("span_us", "BIGINT"), ("geom", "STRING")],
    primary_keys=["id"], options={"bucket": "1"})
#: by hand from the docs' examples (see debezium_types/SOURCES.md); "AwI=" = 03 02 (BIT(10)
#: b'1000000011' = 0x203, little-endian) -> 02 03
PG_TYPES_ROWS = {1: {
    "id": 1, "ts": datetime.datetime(2018, 6, 20, 15, 13, 16, 945104),
    "tstz": datetime.datetime(2019, 7, 9, 2, 28, 57, 123456, tzinfo=_UTC),
    "timetz": datetime.time(4, 5, 11, 789000), "iso_date": datetime.date(2017, 9, 15),
    "iso_time": datetime.time(4, 5, 11, 789000),
    "iso_ts": datetime.datetime(2019, 7, 9, 2, 28, 57, 123456), "bit1": True,
    "bits": b"\x02\x03", "hstore": '{"key" : "val"}', "doc": "<a>b</a>",
    "uid": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "path": "Top.Science.Astronomy",
    "mood": "happy", "span": "P1Y2M3DT4H5M6.78S", "span_us": 3600000000,
    "geom": '{"coordinates":[1,1],"type":"Point","srid":4326}'}}
#: Postgres' +infinity / -infinity timestamps are no times Paimon (or Spark) holds
PG_TYPES_ERRORS = {2: "bad value for ts", 3: "bad value for ts"}

MYSQL_TYPES = Schema.of(
    [("id", "INT NOT NULL"), ("dt", "TIMESTAMP(0)"),
     ("ts_ltz", "TIMESTAMP(0) WITH LOCAL TIME ZONE"), ("ts_ntz", "TIMESTAMP(0)"),
     ("t", "TIME(6)"), ("d", "DATE"), ("y", "INT"), ("flags", "BYTES"), ("j", "STRING"),
     ("e", "STRING"), ("s", "STRING"), ("pt", "STRING")],
    primary_keys=["id"], options={"bucket": "1"})
_MY_NONE = {c: None for c in MYSQL_TYPES.to_table_schema(0).field_names}
MYSQL_TYPES_ROWS = {
    1: {"id": 1, "dt": datetime.datetime(2018, 6, 20, 6, 37, 3),
        "ts_ltz": datetime.datetime(2018, 6, 20, 13, 37, 3, tzinfo=_UTC),
        "ts_ntz": datetime.datetime(2018, 6, 20, 13, 37, 3), "t": datetime.time(0),
        "d": datetime.date(2018, 6, 20), "y": 2018, "flags": b"\x02\x03", "j": '{"a": [1, 2]}',
        "e": "small", "s": "a,c", "pt": '{"coordinates":[1,1],"type":"Point","srid":0}'},
    3: {**_MY_NONE, "id": 3, "ts_ltz": datetime.datetime(1970, 1, 1, tzinfo=_UTC),
        "t": datetime.time(23, 59, 59, 999000)},
}
#: 23:59:59.999999 (the docs' last MicroTime): Paimon's TIME keeps milliseconds
MYSQL_TYPES_ERRORS = {2: "bad value for t"}
TYPES_CASES = [("postgresql", PG_TYPES, PG_TYPES_ROWS, PG_TYPES_ERRORS),
               ("mysql", MYSQL_TYPES, MYSQL_TYPES_ROWS, MYSQL_TYPES_ERRORS)]


@pytest.mark.parametrize(("name", "sch", "rows", "errors"), TYPES_CASES)
def test_debezium_documented_types(name: str, sch: Schema, rows: dict[int, Any],
                                   errors: dict[int, str]) -> None:
    schema = sch.to_table_schema(0)
    got = decode_file((TYPES_CORPUS / f"{name}.jsonl").read_bytes(), schema)
    assert _rows(got, schema.field_names) == rows
    assert {r["_pos_line"]: r["_error"] for r in got.to_pylist() if r["_error"]} == errors


@pytest.mark.spark
def test_debezium_documented_types_agree_with_spark_reference(spark: Any,
                                                              tmp_path: Path) -> None:
    from tests.pipelines.cdcref import compared_rows, spark_changes

    for name, sch, _, _ in TYPES_CASES:
        schema = sch.to_table_schema(0)
        f = TYPES_CORPUS / f"{name}.jsonl"
        ref = spark_changes(spark, f, schema, position_fields=None, epoch_unit="ms")
        ours = decode_file(f.read_bytes(), schema)
        assert compared_rows(ours, schema) == compared_rows(ref, schema)


@pytest.fixture(scope="module")
def types_warehouse(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documented-types corpus ingested by the job, one table per connector."""
    from pipelines.cdc.ingest import CdcOptions, ingest
    from pipelines.config import CatalogSettings

    root = tmp_path_factory.mktemp("types")
    wh = root / "wh"
    for name, sch, _, errors in TYPES_CASES:
        landing = root / name
        landing.mkdir()
        (landing / "batch-000001.jsonl").write_bytes((TYPES_CORPUS / f"{name}.jsonl")
                                                     .read_bytes())
        FileSystemCatalog(str(wh)).create_table(f"db.{name}", sch)
        (rep,) = ingest(spark, CatalogSettings(str(wh)), f"db.{name}", str(landing),
                        CdcOptions(max_error_ratio=0.9, evolve_schema=False,
                                   source_table="types"))  # the events' table
        assert rep.reasons == {r: list(errors.values()).count(r) for r in errors.values()}
    return wh


@pytest.mark.spark
@pytest.mark.parametrize(("name", "sch", "rows", "errors"), TYPES_CASES)
def test_ingest_lands_documented_types(types_warehouse: Path, name: str, sch: Schema,
                                       rows: dict[int, Any], errors: dict[int, str]) -> None:
    names = sch.to_table_schema(0).field_names
    t = FileSystemCatalog(str(types_warehouse)).get_table(f"db.{name}")
    assert {r["id"]: {n: r[n] for n in names} for r in t.to_arrow().to_pylist()} == rows


@pytest.mark.spark
@pytest.mark.oracle
def test_java_reads_documented_types(types_warehouse: Path, tmp_path: Path) -> None:
    from paimon_core.cli.canonical import canonical_lines
    from tests.interop.oracle import ensure_ready, run_batches

    ensure_ready()
    cmds = {name: [{"cmd": "read", "warehouse": str(types_warehouse), "table": f"db.{name}",
                    "engine": "java", "output": str(tmp_path / f"{name}.jsonl")}]
            for name, _, _, _ in TYPES_CASES}
    results = run_batches(cmds, tmp_path)
    for name, _, rows, _ in TYPES_CASES:
        assert not results[name].failures(), results[name].stderr[-3000:]
        t = FileSystemCatalog(str(types_warehouse)).get_table(f"db.{name}")
        data = t.to_arrow()
        ours = canonical_lines(data, [t.schema.field(c) for c in data.column_names])
        java = (tmp_path / f"{name}.jsonl").read_text().splitlines()
        assert len(java) == len(rows)
        assert java == ours


# ------------------------------------------------------------------ nested values, exactly

NESTED = Schema.of(
    [("id", "INT NOT NULL"), ("a", "ARRAY<DECIMAL(38, 2)>"), ("r", "ROW<x DECIMAL(38, 10), "
                                                                  "s STRING, d DOUBLE>"),
     ("tags", "ARRAY<STRING>"), ("n", "ARRAY<BIGINT>")],
    primary_keys=["id"], options={"bucket": "1"})
NESTED_LINES = [  # hand-built, no schema: the table's types decide
    '{"op": "c", "after": {"id": 1, "a": [123456789012345678901234567890123456.78, 1.5], '
    '"r": {"x": 1234567890123456789012345678.0123456789, "s": "x", "d": 0.5}, '
    '"tags": ["t", 123456789876543212345678987654321], "n": [1, 2]}, "source": {"pos": 1}}',
    '{"op": "c", "after": {"id": 2, "a": [1.1, 2.25], "r": {"x": 0.1, "s": "y", "d": 1.5}, '
    '"tags": ["u"], "n": [3]}, "source": {"pos": 2}}',
    # a third decimal digit where DECIMAL(38, 2) keeps two: refused, never rounded
    '{"op": "c", "after": {"id": 3, "a": [1.005]}, "source": {"pos": 3}}',
    # 29 integer digits where DECIMAL(38, 10) keeps 28
    '{"op": "c", "after": {"id": 4, "r": {"x": 12345678901234567890123456789, "s": "z", '
    '"d": 1}}, "source": {"pos": 4}}',
]
NESTED_ROWS = {
    1: {"id": 1, "a": [D("123456789012345678901234567890123456.78"), D("1.50")],
        "r": {"x": D("1234567890123456789012345678.0123456789"), "s": "x", "d": 0.5},
        "tags": ["t", "123456789876543212345678987654321"], "n": [1, 2]},
    2: {"id": 2, "a": [D("1.10"), D("2.25")], "r": {"x": D("0.1000000000"), "s": "y", "d": 1.5},
        "tags": ["u"], "n": [3]},
}
NESTED_ERRORS = {3: "bad value for a", 4: "bad value for r"}


def test_nested_values_land_exactly() -> None:
    schema = NESTED.to_table_schema(0)
    for data in [("\n".join(NESTED_LINES) + "\n").encode(), "\r\n".join(NESTED_LINES).encode()]:
        got = decode_file(data, schema, settings=DecodeSettings(position_fields=("pos",)))
        assert _rows(got, schema.field_names) == NESTED_ROWS
        assert {r["_pos_line"]: r["_error"] for r in got.to_pylist()
                if r["_error"]} == NESTED_ERRORS


def test_bad_value_names_the_refused_value() -> None:
    from pipelines.cdc.values.convert import BAD_VALUE_CHARS, bad_value

    assert [bad_value(NESTED_LINES[k - 1], r) for k, r in NESTED_ERRORS.items()] == [
        "[1.005]", '{"x":12345678901234567890123456789,"s":"z","d":1}']
    delete = json.dumps({"schema": None, "payload": {"op": "d", "before": {"k": "x" * 100},
                                                     "source": {"lsn": 1}}})
    assert bad_value(delete, "bad value for k") == "x" * (BAD_VALUE_CHARS - 1) + "…"
    assert bad_value(delete, "null key k") is None
    assert bad_value("{not json", "bad value for k") is None


@pytest.mark.spark
def test_time_column_keeps_its_value_across_batches_and_toast(spark: Any,
                                                              tmp_path: Path) -> None:
    """A TIME column through two batches: the second one's update carries the TOAST
    placeholder in another column, so the job fills it from the table (read back as Paimon's
    millisecond TIME) beside the decoded times."""
    from pipelines.cdc.events import UNAVAILABLE
    from pipelines.cdc.ingest import CdcOptions, ingest
    from pipelines.config import CatalogSettings

    sch = Schema.of([("id", "INT NOT NULL"), ("t", "TIME(3)"), ("note", "STRING")],
                    primary_keys=["id"], options={"bucket": "1"})
    fields = [_field(None, "int32", "id"), _field("io.debezium.time.MicroTime", "int64", "t"),
              _field(None, "string", "note")]
    env = {"type": "struct", "fields": [
        {"type": "struct", "fields": fields, "optional": True, "field": f}
        for f in ("before", "after")]}

    def ev(op: str, pos: int, after: dict[str, Any]) -> str:
        return json.dumps({"schema": env, "payload": {"op": op, "after": after,
                                                      "source": {"pos": pos}}})

    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "batch-000001.jsonl").write_text(
        ev("c", 1, {"id": 1, "t": 45296789000, "note": "long text"}) + "\n")
    (landing / "batch-000002.jsonl").write_text(
        ev("u", 2, {"id": 1, "t": 1000, "note": UNAVAILABLE}) + "\n")
    wh = str(tmp_path / "wh")
    FileSystemCatalog(wh).create_table("db.t", sch)
    reps = ingest(spark, CatalogSettings(wh), "db.t", str(landing),
                  CdcOptions(position_fields=("pos",), evolve_schema=False))
    assert [r.reasons for r in reps] == [{}, {}]
    got = FileSystemCatalog(wh).get_table("db.t").to_arrow().to_pylist()
    assert got == [{"id": 1, "t": datetime.time(0, 0, 0, 1000), "note": "long text"}]


def test_geojson_refuses_what_it_cannot_write() -> None:
    import base64
    import struct

    from pipelines.cdc.values.geometry import geojson

    def b64(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    point = struct.pack("<BIdd", 1, 1, 1.5, -2.0)
    assert geojson(b64(point), 3857) == '{"coordinates":[1.5,-2],"type":"Point","srid":3857}'
    # big-endian, and PostGIS' EWKB with its SRID flag
    assert geojson(b64(struct.pack(">BIdd", 0, 1, 1.0, 2.0)), None) == \
        '{"coordinates":[1,2],"type":"Point","srid":0}'
    assert geojson(b64(struct.pack("<BIIdd", 1, 0x20000001, 4326, 1.0, 2.0)), "4326") == \
        '{"coordinates":[1,2],"type":"Point","srid":4326}'
    for bad in [point[:-1], point + b"\x00", struct.pack("<BIddd", 1, 1001, 1.0, 2.0, 3.0),
                struct.pack("<BIdd", 1, 1, float("nan"), float("nan")), b"\x02" + point[1:]]:
        with pytest.raises(ValueError):
            geojson(b64(bad), None)
