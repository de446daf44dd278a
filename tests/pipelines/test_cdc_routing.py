"""Routing by the event's own table, position-less Debezium events, TINYINT(1) into BOOLEAN
(issue 30, scope 1, 3, 4), as a user meets them: ``python -m pipelines.jobs.cdc_ingest`` in a
subprocess over landings of published multi-table output (``cdc_corpus/routing/SOURCES.md``);
expected rows written by hand. The decoders' agreement with the Spark SQL reference on the
same multi-table files closes the module."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from paimon_core import FileSystemCatalog, Schema
from pipelines.cdc.source_tables import OTHER_TABLE, TableFilter
from pipelines.session import source_root
from tests.pipelines.test_cdc_formats import INVENTORY, PRODUCTS, _decode, _p

CORPUS = Path(__file__).parent / "cdc_corpus"
ROUTING = CORPUS / "routing"

@dataclass(frozen=True)
class Run:
    """One run of the job: its exit code, its stderr (in process: with the log records) and
    its printed batch reports."""

    returncode: int
    stderr: str
    reports: list[dict[str, Any]]


def _argv(tmp: Path, table: str, schema: dict[str, Any], batches: list[list[str]],
          *args: str) -> list[str]:
    """The job's arguments over a landing of ``batches`` (per batch, its files' lines), into
    ``table`` created from ``schema`` (the ``--schema`` file's JSON)."""
    landing = tmp / "landing"
    for b, files in enumerate(batches, 1):
        d = landing / f"batch-{b:06d}"
        d.mkdir(parents=True)
        for i, text in enumerate(files):
            (d / f"part-{i}.jsonl").write_text(text)
    (tmp / "schema.json").write_text(json.dumps(schema))
    return ["--warehouse", str(tmp / "wh"), "--table", table, "--landing", str(landing),
            "--schema", str(tmp / "schema.json"), "--master", "local[2]", *args]


def _reports(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in stdout.splitlines() if x.startswith("{")]


def _job(tmp: Path, table: str, schema: dict[str, Any], batches: list[list[str]],
         *args: str) -> Run:
    """``python -m pipelines.jobs.cdc_ingest`` in a subprocess (its own JVM), as the README
    runs it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [source_root(), *filter(None, [os.environ.get("PYTHONPATH")])])}
    p = subprocess.run(
        [sys.executable, "-m", "pipelines.jobs.cdc_ingest",
         *_argv(tmp, table, schema, batches, *args)],
        env=env, capture_output=True, text=True, timeout=900, check=False, cwd=tmp)
    return Run(p.returncode, p.stderr, _reports(p.stdout))


@pytest.fixture
def job(spark: Any, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
        ) -> Callable[..., Run]:
    """The same job's ``main`` (the module the ``python -m`` form runs: ``run_job_main``) in
    this process on the test session's Spark: the cases beyond the first subprocess one, each
    without a JVM start-up of its own."""
    from pipelines.jobs.cdc_ingest import main

    def run(tmp: Path, table: str, schema: dict[str, Any], batches: list[list[str]],
            *args: str) -> Run:
        capsys.readouterr()
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="pipelines"):
            rc = main(_argv(tmp, table, schema, batches, *args))
        out = capsys.readouterr()
        return Run(rc, out.err + caplog.text, _reports(out.out))

    return run


def _rows(tmp: Path, table: str, key: str = "id") -> list[dict[str, Any]]:
    t = FileSystemCatalog(str(tmp / "wh")).get_table(table)
    return sorted(t.to_arrow().to_pylist(), key=lambda r: r[key])


def _lines(name: str, *numbers: int) -> str:
    """Lines ``numbers`` (1-based) of a routing corpus file, as a file."""
    lines = (ROUTING / name).read_text().splitlines()
    return "".join(lines[n - 1] + "\n" for n in numbers)


def _schema(columns: list[tuple[str, str]], key: str = "id",
            **options: str) -> dict[str, Any]:
    """The ``--schema`` file of a table of ``columns`` keyed by ``key``."""
    return {"fields": [{"name": n, "type": t} for n, t in columns], "primary_keys": [key],
            "options": {"bucket": "2", **options}}


def _quarantined(tmp: Path) -> list[str]:
    return [x for f in (tmp / "landing" / "_quarantine").rglob("part-*.jsonl")
            for x in f.read_text().splitlines()]


@pytest.mark.spark
def test_whole_database_canal_dump_lands_only_the_products(tmp_path: Path) -> None:
    # before: the customers events were taken as products rows (exit 0) and the products
    # schema gained first_name, last_name and email; the customers' truncate emptied it
    p = _job(tmp_path, "inventory.products", _schema(PRODUCTS),
             [[(ROUTING / "canal_inventory_database.jsonl").read_text()]],
             "--format", "canal-json")
    assert p.returncode == 0, p.stderr[-3000:]
    (rep,) = p.reports
    assert (rep["events"], rep["valid"], rep["other_tables"], rep["malformed"],
            rep["truncates"], rep["only_other_tables"]) == (7, 3, 4, 0, 0, False)
    assert rep["new_columns"] == {} and rep["reasons"] == {}
    assert _rows(tmp_path, "inventory.products") == [
        _p(101, "scooter", "Small 2-wheel scooter", 3.14),
        _p(102, "car battery", "12V car battery", 8.1),
        _p(103, "12-pack drill bits", "12-pack of drill bits with sizes ranging from #40 to #3",
           0.8),
        _p(104, "hammer", "12oz carpenter's hammer", 0.75),
        _p(105, "hammer", "14oz carpenter's hammer", 0.875),
        _p(106, "hammer", "18oz carpenter hammer", 1.0),
        _p(107, "rocks", "box of assorted rocks", 5.1),
        _p(108, "jacket", "water resistent black wind breaker", 0.1),
        _p(109, "spare tire", "24 inch spare tire", 22.2)]
    t = FileSystemCatalog(str(tmp_path / "wh")).get_table("inventory.products")
    assert t.schema.field_names == ["id", "name", "description", "weight"]
    assert _quarantined(tmp_path) == []


CUSTOMER = [("id", "STRING NOT NULL"), ("name", "STRING"), ("city", "STRING")]


@pytest.mark.spark
def test_three_table_canal_file_takes_the_table_asked_for(job: Callable[..., Run],
                                                          tmp_path: Path) -> None:
    # before: the customer and order_item events were quarantined (bad value for id, null
    # key id) and the batch failed at the error ratio
    product = [("id", "INT NOT NULL"), ("name", "STRING"), ("price", "DOUBLE")]
    three = (ROUTING / "canal_three_tables.jsonl").read_text()
    # batch 2: only customer events (lines 2, 5, 7): nothing of it is the product table's
    p = job(tmp_path / "product", "mydb.product", _schema(product),
            [[three], [_lines("canal_three_tables.jsonl", 2, 5, 7)]], "--format", "canal-json")
    assert p.returncode == 0, p.stderr[-3000:]
    reps = p.reports
    assert [(r["events"], r["valid"], r["other_tables"], r["malformed"],
             r["only_other_tables"]) for r in reps] == [(7, 3, 4, 0, False),
                                                        (3, 0, 3, 0, True)]
    assert "batch 2: all 3 events name other source tables" in p.stderr
    assert _rows(tmp_path / "product", "mydb.product") == [
        {"id": 2, "name": "pear", "price": 2.5}]
    assert _quarantined(tmp_path / "product") == []
    # another source table into a target named otherwise
    p = job(tmp_path / "clients", "shop.clients", _schema(CUSTOMER), [[three]],
            "--format", "canal-json", "--source-table", r"mydb\.customer")
    assert p.returncode == 0, p.stderr[-3000:]
    (rep,) = p.reports
    assert (rep["events"], rep["valid"], rep["other_tables"], rep["malformed"]) == (7, 3, 4, 0)
    assert _rows(tmp_path / "clients", "shop.clients") == [
        {"id": "c-1", "name": "alice", "city": "Shanghai"},
        {"id": "c-2", "name": "bob", "city": "Beijing"}]


@pytest.mark.spark
def test_position_less_debezium_lands_in_arrival_order(job: Callable[..., Run],
                                                        tmp_path: Path) -> None:
    # before: every event refused as "missing source position", nothing committed; batch 2
    # mixes the position-less file with the same events carrying Postgres lsns: refused
    no_position = (ROUTING / "debezium_no_position.jsonl").read_text()
    positioned = (CORPUS / "debezium_json" / "flink_inventory_plain.jsonl").read_text()
    p = job(tmp_path, "inventory.products", _schema(PRODUCTS),
            [[no_position], [no_position, positioned]])
    assert p.returncode == 1 and p.reports == []  # (the job prints its reports at the end)
    assert _rows(tmp_path, "inventory.products") == INVENTORY
    (line,) = [x for x in p.stderr.splitlines() if x.startswith("cdc_ingest:")]
    assert ("batch 2 mixes events with a source position (postgresql) and events without "
            "one (ordered by arrival)") in line
    t = FileSystemCatalog(str(tmp_path / "wh")).get_table("inventory.products")
    assert t.snapshot_manager.latest_snapshot_id() == 1  # batch 2: nothing
    props = t.latest_snapshot().properties  # type: ignore[union-attr]
    assert props is not None and (props["cdc.batch"], props["cdc.events"]) == ("1", "18")


@pytest.mark.spark
def test_position_less_debezium_cannot_fill_a_sequence_column(job: Callable[..., Run],
                                                               tmp_path: Path) -> None:
    schema = _schema([*PRODUCTS, ("_seq", "BIGINT")], **{"sequence.field": "_seq"})
    p = job(tmp_path, "inventory.products", schema,
            [[(ROUTING / "debezium_no_position.jsonl").read_text()]])
    assert p.returncode == 1
    assert ("batch 1: events without a source position cannot fill the sequence column _seq"
            in p.stderr), p.stderr[-3000:]
    t = FileSystemCatalog(str(tmp_path / "wh")).get_table("inventory.products")
    assert t.latest_snapshot() is None


@pytest.mark.spark
def test_debezium_tinyint1_and_boolean_land_in_boolean_columns(job: Callable[..., Run],
                                                                tmp_path: Path) -> None:
    # before: "bad value for _tinyint1" (Debezium sends MySQL's TINYINT(1) / BOOLEAN as 1 / 0)
    columns = [("_id", "INT NOT NULL"), ("_tinyint1", "BOOLEAN"), ("_boolean", "BOOLEAN"),
               ("_bool", "BOOLEAN")]
    alltype = (CORPUS / "debezium_schema" / "paimon_alltype.jsonl").read_text()
    event = json.loads(alltype)
    event["payload"]["after"].update({"_id": 2, "_bool": 2})  # 2 is no boolean
    event["payload"]["source"]["pos"] = 1
    p = job(tmp_path, "db.all_types_table", _schema(columns, "_id"),
            [[alltype], [json.dumps(event) + "\n"]], "--no-evolve")
    assert p.returncode == 3, p.stderr[-3000:]
    reps = p.reports
    # batch 1 landed; batch 2 stopped the job (its report alone is printed)
    assert [(r["batch"], r["valid"], r["malformed"], r["reasons"]) for r in reps] == [
        (2, 0, 1, {"bad value for _bool": 1})]
    assert _rows(tmp_path, "db.all_types_table", "_id") == [
        {"_id": 1, "_tinyint1": True, "_boolean": True, "_bool": False}]


# ---------------------------------------------------------------------------- the reference


@pytest.mark.spark
def test_debezium_routing_agrees_with_the_spark_reference(spark: Any, tmp_path: Path) -> None:
    """Paimon's four-table Debezium file and the position-less inventory: the fast path and
    the Spark SQL reference give the same rows, outcomes and positions."""
    from pipelines.cdc.decode import decode_events
    from pipelines.cdc.settings import DecodeSettings
    from tests.pipelines.cdcref import compared_rows, spark_changes

    schema = Schema.from_json(_schema(PRODUCTS)).to_table_schema(0)
    for name, tables, other in [("paimon_include_topic0.jsonl", "flink", 3),
                                ("debezium_no_position.jsonl", "products", 2)]:
        path = ROUTING / name
        filt = TableFilter.of_table(tables)
        ref = spark_changes(spark, path, schema, source_tables=filt)
        ours = decode_events(path.read_text().splitlines(), schema,
                             settings=DecodeSettings(source_tables=filt))
        assert compared_rows(ours, schema) == compared_rows(ref, schema), name
        assert ours.column("_error").to_pylist().count(OTHER_TABLE) == other
        if name.startswith("debezium_no"):  # arrival order: no position, no ts_ms
            assert set(ours.column("_pos_n0").to_pylist()) == {None}
            assert set(ours.column("_pos_ts").to_pylist()) == {None}


@pytest.mark.spark
def test_formats_routing_agrees_with_the_spark_reference(spark: Any, tmp_path: Path) -> None:
    """Multi-table files of canal, GoldenGate, Maxwell and DMS with a filter: the fast path
    (:mod:`pipelines.cdc.formats`) and the reference (``format_events``) agree."""
    from tests.pipelines.cdcfmtref import spark_sql_rows

    schema = Schema.from_json(_schema(PRODUCTS)).to_table_schema(0)
    cols = [*schema.field_names, "_kind", "_error", "_event", "_pos_line", "_connector",
            *[f"_pos_{k}{i}" for i in range(3) for k in "ns"]]

    def canon(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return sorted((tuple(r[c] for c in cols) for r in rows), key=repr)

    filt = TableFilter(r"inventory\.products|OGG\.TBL_TEST|product", ignore_case=True)
    cases = [("canal-json", "routing/canal_inventory_database.jsonl"),
             ("canal-json", "routing/canal_three_tables.jsonl"),
             ("ogg-json", "ogg/flink_inventory.jsonl"),
             ("maxwell-json", "maxwell/docs_position.jsonl"),
             ("aws-dms-json", "aws_dms/control.jsonl")]
    texts = [(fmt, (CORPUS / name).read_text()) for fmt, name in cases]
    sql = spark_sql_rows(spark, texts, schema, tmp_path, filt)
    others = []
    for i, ((fmt, name), by_sql) in enumerate(zip(cases, sql)):
        ours = _decode(fmt, name, PRODUCTS, file_index=i, source_tables=filt)
        assert canon(ours) == canon(by_sql), name
        others.append(sum(r["_error"] == OTHER_TABLE for r in ours))
    # customers' 3 events and truncate; customer's 3 and order_item's 1; none; table e's 4
    # (2 changes, 2 DDL);
    # the control record of awsdms_apply_exceptions
    assert others == [4, 4, 0, 4, 1]


# ---------------------------------------------------------------------------- decimals


def test_schemaless_decimal_bytes_only_behind_the_option() -> None:
    """Debezium JSON without schemas under ``decimal.handling.mode=precise``: ``"AJY="`` is
    base64 of the unscaled 150 (bytes 00 96), 1.50 at the column's scale 2, only with
    ``--decimal-base64``; without it the text is no decimal (refused, never guessed)."""
    import decimal

    from paimon_core import ConfigError
    from pipelines.cdc.decode import decode_events
    from pipelines.cdc.ingest import CdcOptions
    from pipelines.cdc.settings import DecodeSettings
    from pipelines.jobs.cdc_args import cdc_options
    from pipelines.jobs.cdc_ingest import build_parser

    schema = Schema.from_json(_schema([("id", "INT NOT NULL"), ("price", "DECIMAL(5, 2)")])
                              ).to_table_schema(0)
    lines = [json.dumps({"op": "c", "after": {"id": 1, "price": "AJY="},
                         "source": {"connector": "postgresql", "lsn": 10}}),
             json.dumps({"op": "c", "after": {"id": 2, "price": "12.50"},
                         "source": {"connector": "postgresql", "lsn": 11}})]
    on = decode_events(lines, schema, settings=DecodeSettings(decimal_base64=True))
    assert on.column("price").to_pylist() == [decimal.Decimal("1.50"), decimal.Decimal("12.50")]
    off = decode_events(lines, schema).to_pylist()
    assert [(r["price"], r["_error"]) for r in off] == [
        (None, "bad value for price"), (decimal.Decimal("12.50"), None)]
    args = build_parser().parse_args(["--warehouse", "w", "--table", "db.t", "--landing", "l",
                                      "--decimal-base64"])
    assert cdc_options(args).decode_settings(None).decimal_base64 is True
    with pytest.raises(ConfigError, match=r"decimal_base64.*canal-json"):
        CdcOptions(format="canal-json", decimal_base64=True)


@pytest.mark.spark
def test_decimal_base64_agrees_with_the_reference(spark: Any, tmp_path: Path) -> None:
    """``--decimal-base64`` in the Spark SQL reference: the same rows and reasons. By hand:
    ``AJY=`` (00 96) is 150 -> 1.50, ``/2o=`` (ff 6a) is -150 -> -1.50, ``AYag`` (01 86 a0)
    is 100000 -> 1000.00 (beyond DECIMAL(5, 2): bad value), ``12.50`` is no base64 (read as
    text), ``AJY`` is no strict base64 (text, not a decimal: bad value); an event whose
    schema names the column a Connect ``Decimal`` of scale 1 is decoded by that scale
    (``AJY=`` -> 15.0)."""
    import decimal

    from pipelines.cdc.decode import decode_events
    from pipelines.cdc.settings import DecodeSettings
    from tests.pipelines.cdcref import compared_rows, spark_changes

    schema = Schema.from_json(_schema([("id", "INT NOT NULL"), ("price", "DECIMAL(5, 2)")])
                              ).to_table_schema(0)

    def ev(i: int, price: str, schema_scale: int | None = None) -> str:
        e: dict[str, Any] = {"op": "c", "after": {"id": i, "price": price},
                             "source": {"connector": "postgresql", "lsn": 10 + i}}
        if schema_scale is None:
            return json.dumps(e)
        fields = [{"field": "id", "type": "int32"},
                  {"field": "price", "type": "bytes", "parameters": {"scale": str(schema_scale)},
                   "name": "org.apache.kafka.connect.data.Decimal"}]
        return json.dumps({"schema": {"type": "struct", "fields": [
            {"field": "after", "type": "struct", "fields": fields}]}, "payload": e})

    lines = [ev(1, "AJY="), ev(2, "/2o="), ev(3, "AYag"), ev(4, "12.50"), ev(5, "AJY"),
             ev(6, "AJY=", schema_scale=1)]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n")
    ours = decode_events(lines, schema, settings=DecodeSettings(decimal_base64=True))
    ref = spark_changes(spark, path, schema, decimal_base64=True)
    assert compared_rows(ours, schema) == compared_rows(ref, schema)
    got = sorted((r["_pos_line"], r["price"], r["_error"]) for r in ref.to_pylist())
    d = decimal.Decimal
    assert got == [(1, d("1.50"), None), (2, d("-1.50"), None),
                   (3, None, "bad value for price"), (4, d("12.50"), None),
                   (5, None, "bad value for price"), (6, d("15.00"), None)]
