"""The ``op_ts`` metadata column (issue 30): each event's time of change in the source
database, from the field each format keeps it in (:mod:`pipelines.cdc.values.event_time`), on the
tools' published output (``cdc_corpus/<format>/``, sources in each folder's SOURCES.md).
Expected times are written by hand from the events' text (epoch values converted by hand:
1589373515000 ms = 2020-05-13 12:38:35 UTC, 1596684883 s = 2020-08-06 03:34:43 UTC,
1596001099434 ms = 2020-07-29 05:38:19.434 UTC)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from paimon_core import SchemaError
from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import ConfigError
from paimon_core.schema_builder import Schema
from pipelines.cdc.database import CreateOptions, DatabaseOptions
from pipelines.cdc.formats import FORMATS
from pipelines.cdc.ingest import CdcOptions
from pipelines.cdc.settings import DecodeSettings
from pipelines.cdc.values.event_time import check_event_time, check_op_ts_column, epoch_millis
from tests.pipelines.test_cdc_database import _env, _land

CORPUS = Path(__file__).parent / "cdc_corpus"
COLUMNS = [("id", "INT NOT NULL"), ("name", "STRING"), ("description", "STRING"),
           ("weight", "DOUBLE"), ("op_ts", "TIMESTAMP_LTZ(3)")]


def _utc(day: str, hms: str, ms: int = 0) -> datetime.datetime:
    d = datetime.datetime.fromisoformat(f"{day}T{hms}").replace(tzinfo=datetime.UTC)
    return d + datetime.timedelta(milliseconds=ms)


def _decode(fmt: str, name: str | bytes, **kw: Any) -> list[tuple[Any, ...]]:
    schema = Schema.of(COLUMNS, primary_keys=["id"], options={"bucket": "2"}
                       ).to_table_schema(0)
    data = (CORPUS / name).read_bytes() if isinstance(name, str) else name
    out = FORMATS[fmt].decode(data, schema, settings=DecodeSettings(op_ts_column="op_ts", **kw),
                              threads=False).to_pylist()
    return [(r["id"], r["_kind"], r["op_ts"], r["_error"]) for r in out]


def test_canal_es_per_row_of_each_event() -> None:
    day = "2020-05-13"
    t0 = _utc(day, "12:38:35")  # es 1589373515000: the one event of nine rows
    assert _decode("canal-json", "canal/flink_inventory.jsonl") == [
        *[(i, "+I", t0, None) for i in range(101, 110)],
        (106, "+U", _utc(day, "12:39:06"), None), (107, "+U", _utc(day, "12:39:09"), None),
        (110, "+I", _utc(day, "12:39:12"), None), (111, "+I", _utc(day, "12:39:15"), None),
        (110, "+U", _utc(day, "12:39:18"), None), (111, "+U", _utc(day, "12:39:20"), None),
        (111, "-D", _utc(day, "12:39:23"), None),
        (101, "+U", _utc(day, "12:42:33"), None), (102, "+U", _utc(day, "12:42:33"), None),
        (None, None, None, "ddl"),
        (102, "-D", _utc(day, "12:46:53"), None), (103, "-D", _utc(day, "12:46:53"), None)]


def test_maxwell_ts_is_seconds() -> None:
    day = "2020-08-06"
    t0 = _utc(day, "03:34:43")
    assert _decode("maxwell-json", "maxwell/flink_inventory.jsonl") == [
        *[(i, "+I", t0, None) for i in range(101, 110)],
        (106, "+U", _utc(day, "03:34:53"), None), (107, "+U", _utc(day, "03:34:57"), None),
        (110, "+I", _utc(day, "03:35:00"), None), (111, "+I", _utc(day, "03:35:04"), None),
        (110, "+U", _utc(day, "03:35:06"), None), (111, "+U", _utc(day, "03:35:12"), None),
        (111, "-D", _utc(day, "03:35:14"), None),
        (101, "+U", _utc(day, "03:35:28"), None), (102, "+U", _utc(day, "03:35:28"), None),
        (102, "-D", _utc(day, "03:35:38"), None), (103, "-D", _utc(day, "03:35:38"), None)]


def test_ogg_op_ts_text_and_no_compressed_refusal_for_it() -> None:
    day = "2020-05-13"
    assert _decode("ogg-json", "ogg/flink_inventory.jsonl") == [
        (101, "+I", _utc(day, "15:40:06"), None),
        *[(i, "+I", _utc(day, "15:40:07"), None) for i in range(102, 110)],
        (106, "+U", _utc(day, "17:26:27", 936), None),
        (107, "+U", _utc(day, "17:28:19", 505), None),
        (110, "+I", _utc(day, "17:30:10", 230), None),
        (111, "+I", _utc(day, "17:30:43", 428), None),
        (110, "+U", _utc(day, "17:32:20", 327), None),
        (111, "+U", _utc(day, "17:32:10", 904), None),
        (111, "-D", _utc(day, "17:32:24", 455), None)]


def test_dms_timestamp_truncated_to_milliseconds() -> None:
    t = _utc("2024-10-27", "12:39:03", 210)  # "2024-10-27T12:39:03.210671Z"
    assert _decode("aws-dms-json", "aws_dms/paimon_product.jsonl") == [
        (103, "+I", t, None), (104, "+I", t, None), (105, "+I", t, None),
        (101, "-D", t, None), (105, "+U", t, None), (107, "+I", t, None)]


def test_debezium_source_ts_ms_not_the_envelope_ts_ms() -> None:
    day = "2020-07-29"
    want = [*[(101 + i, "+I", _utc(day, "05:38:19", ms), None)
              for i, ms in enumerate((434, 435, 435, 436, 436, 436, 437, 437, 437))],
            (106, "+U", _utc(day, "08:21:29", 629), None),  # (envelope ts_ms: ...890411)
            (107, "+U", _utc(day, "08:22:10", 407), None),
            (110, "+I", _utc(day, "08:22:26", 488), None),
            (111, "+I", _utc(day, "08:22:56", 756), None),
            (110, "+U", _utc(day, "08:23:02", 228), None),
            (111, "+U", _utc(day, "08:23:05", 627), None),
            (111, "-D", _utc(day, "08:23:08", 168), None)]
    assert _decode("debezium-json", "debezium_json/flink_inventory_plain.jsonl") == want
    assert _decode("debezium-json", "debezium_json/flink_inventory_envelope.jsonl") == want


def test_debezium_avro_source_ts_ms() -> None:
    from pipelines.cdc.formats.avro import decode_avro_file
    from tests.pipelines.connect_avro import envelope_file
    from tests.pipelines.test_cdc_avro import _pg_events

    schema = Schema.of([("id", "INT NOT NULL"), ("first_name", "STRING NOT NULL"),
                        ("last_name", "STRING NOT NULL"), ("email", "STRING NOT NULL"),
                        ("op_ts", "TIMESTAMP_LTZ(3)")], primary_keys=["id"],
                       options={"bucket": "2"}).to_table_schema(0)
    got = []
    for i, events in enumerate(_pg_events(False).values()):
        t = decode_avro_file(envelope_file(events), schema, file_index=i,
                             settings=DecodeSettings(op_ts_column="op_ts"))
        got += [(r["id"], r["_kind"], r["op_ts"], r["_error"]) for r in t.to_pylist()]
    t0 = _utc("2019-05-28", "08:58:24", 863)  # source.ts_ms 1559033904863
    assert got == [(1, "+I", t0, None),
                   (1, "+U", t0, None),  # (the envelope's ts_ms: 1465584025523)
                   (1, "-D", t0, None), (2, "+I", t0, None),
                   (None, None, None, "truncate"),
                   (3, "+I", _utc("2019-05-28", "08:58:24", 963), None)]


def test_an_event_without_its_time_is_refused_by_name() -> None:
    # a CDC pipeline's Kafka sink: source holds only db / table (no ts_ms)
    rows = _decode("debezium-json", "routing/debezium_no_position.jsonl")
    assert rows and {r[3] for r in rows} == {"missing op_ts (source.ts_ms)"}
    got = _decode("ogg-json", _ODD_OGG.encode())
    assert [(r[0], r[2], r[3]) for r in got] == [
        (1, _utc("2020-05-13", "15:40:06", 123), None),
        (2, _utc("2020-05-13", "15:40:06"), None),
        *[(None, None, "missing op_ts (op_ts)")] * 4]


def test_epoch_millis_bounds_and_config_refusals() -> None:
    import pyarrow as pa

    assert epoch_millis(pa.array([0, 253402300799, 253402300800, None]), 4, 1000
                        ).to_pylist() == [0, 253402300799000, None, None]
    assert epoch_millis(pa.array(["1589373515000", "-5", "1.5"]), 3).to_pylist() == [
        1589373515000, -5, None]
    with pytest.raises(ConfigError, match="op_ts: json events carry no time of change"):
        check_event_time("json")
    schema = Schema.of([("id", "INT NOT NULL"), ("op_ts", "STRING")], primary_keys=["id"]
                       ).to_table_schema(0)
    with pytest.raises(SchemaError, match="metadata column op_ts is STRING"):
        check_op_ts_column(schema, "op_ts")
    with pytest.raises(SchemaError, match="when"):
        check_op_ts_column(schema, "when")
    create = CreateOptions(metadata_columns=("op_ts", "database_name"))
    assert DatabaseOptions(CdcOptions(format="ogg-json"), create=create).create is create
    with pytest.raises(ConfigError, match="metadata-column: 'schema_name' is not supported"):
        CreateOptions(metadata_columns=("schema_name",))


# ---------------------------------------------------------------------------- reference

_ODD_OGG = "\n".join(json.dumps({
    "table": "OGG.TBL_TEST", "op_type": "I", "pos": f"{i:023d}",
    "after": {"id": i, "name": "x"}, "op_ts": ts}) for i, ts in enumerate(
    ["2020-05-13 15:40:06.123456", "2020-05-13T15:40:06Z", "2020-05-13 15:40:06+02:00",
     "2020-02-30 10:00:00", "yesterday", None], start=1)) + "\n"


@pytest.mark.spark
def test_the_reference_fills_op_ts_alike(spark: Any, tmp_path: Path) -> None:
    """The Spark SQL reference (``formats.reference.with_op_ts``): the same op_ts and reasons
    as the decoders, every format."""
    from tests.pipelines.cdcfmtref import spark_sql_rows
    from tests.pipelines.cdcref import compared_rows, spark_changes

    schema = Schema.of(COLUMNS, primary_keys=["id"], options={"bucket": "2"}
                       ).to_table_schema(0)
    cases = [("canal-json", "canal/flink_inventory.jsonl"),
             ("maxwell-json", "maxwell/flink_inventory.jsonl"),
             ("ogg-json", "ogg/flink_inventory.jsonl"),
             ("aws-dms-json", "aws_dms/paimon_product.jsonl")]
    texts = [(fmt, (CORPUS / name).read_text()) for fmt, name in cases]
    texts.append(("ogg-json", _ODD_OGG))
    cols = [*schema.field_names, "_kind", "_error", "_event", "_pos_line"]

    def canon(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return sorted((tuple(r[c] for c in cols) for r in rows), key=repr)

    by_sql = spark_sql_rows(spark, texts, schema, tmp_path, op_ts_column="op_ts")
    for i, ((fmt, text), ref) in enumerate(zip(texts, by_sql)):
        ours = FORMATS[fmt].decode(text.encode(), schema, file_index=i, threads=False,
                                   settings=DecodeSettings(op_ts_column="op_ts"))
        assert canon(ours.to_pylist()) == canon(ref), fmt
    assert [r["_error"] for r in by_sql[-1]].count("missing op_ts (op_ts)") == 4
    for name in ("debezium_json/flink_inventory_plain.jsonl",
                 "debezium_json/flink_inventory_envelope.jsonl",
                 "routing/debezium_no_position.jsonl"):
        ours = FORMATS["debezium-json"].decode((CORPUS / name).read_bytes(), schema,
                                               threads=False,
                                               settings=DecodeSettings(op_ts_column="op_ts"))
        ref = spark_changes(spark, CORPUS / name, schema, op_ts_column="op_ts")
        assert compared_rows(ours, schema) == compared_rows(ref, schema), name


# ---------------------------------------------------------------------------- the job


@pytest.mark.spark
def test_database_sync_job_fills_op_ts(tmp_path: Path) -> None:
    """``python -m pipelines.jobs.cdc_ingest --database`` (the database sync) with
    ``--metadata-column op_ts,table_name`` over canal's inventory database feed."""
    import subprocess
    import sys

    _land(tmp_path / "landing", 1, CORPUS / "database" / "canal_inventory_1.jsonl")
    p = subprocess.run(
        [sys.executable, "-m", "pipelines.jobs.cdc_ingest", "--warehouse", str(tmp_path / "wh"),
         "--database", "ods", "--landing", str(tmp_path / "landing"), "--format", "canal-json",
         "--master", "local[2]", "--metadata-column", "op_ts,table_name"],
        env=_env(), capture_output=True, text=True, timeout=900, check=False, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    cat = FileSystemCatalog(str(tmp_path / "wh"))
    day = "2020-05-13"  # es 1589373516000 .. 1589373522000: 12:38:36 .. 12:38:42
    products = cat.get_table("ods.products")
    assert [f"{f.name} {f.type.sql()}" for f in products.schema.fields][-2:] == [
        "op_ts TIMESTAMP(3) WITH LOCAL TIME ZONE", "table_name STRING"]

    def rows(name: str, *cols: str) -> list[tuple[Any, ...]]:
        t = cat.get_table(f"ods.{name}").to_arrow()
        return sorted(tuple(r[c] for c in cols) for r in t.to_pylist())

    assert rows("products", "id", "op_ts", "table_name") == [
        (102, _utc(day, "12:38:39"), "products")]  # 101 deleted at 12:38:43
    assert rows("customers", "id", "op_ts") == [(1001, _utc(day, "12:38:41")),
                                                (1002, _utc(day, "12:38:40"))]
    assert rows("orders", "order_number", "op_ts") == [(10001, _utc(day, "12:38:38")),
                                                       (10002, _utc(day, "12:38:42"))]
