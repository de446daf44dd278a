"""The CDC job's ``--format``s: Debezium JSON with and without the envelope, canal-json,
maxwell-json, ogg-json and aws-dms-json, on the tools' published output
(``tests/pipelines/cdc_corpus/<format>/``, sources in each folder's SOURCES.md). Expected rows
are written by hand from the events: the Flink inventory stream, emitted by four tools, must
land as the same table."""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from paimon_core import SchemaError
from paimon_core.catalog import FileSystemCatalog
from paimon_core.schema_builder import Schema
from pipelines.cdc.formats import FORMATS, check_sequence
from pipelines.cdc.formats.views import DDL
from pipelines.cdc.ingest import BatchReport, CdcOptions, ingest
from pipelines.cdc.settings import DecodeSettings
from pipelines.config import CatalogSettings
from pipelines.jobs.cdc_ingest import build_parser
from tests.pipelines.cdcgen import corpus_landing, corpus_source

CORPUS = Path(__file__).parent / "cdc_corpus"
PRODUCTS = [("id", "INT NOT NULL"), ("name", "STRING"), ("description", "STRING"),
            ("weight", "DOUBLE")]


def _p(i: int, name: str, description: str, weight: float) -> dict[str, Any]:
    return {"id": i, "name": name, "description": description, "weight": weight}


# the Flink inventory stream's final table (the Debezium tutorial's products): Postgres /
# GoldenGate streams end after the delete of 111; the Canal / Maxwell streams go on (101 and
# 102 weigh 5.17, then 102 and 103 are deleted)
INVENTORY = [
    _p(101, "scooter", "Small 2-wheel scooter", 3.14),
    _p(102, "car battery", "12V car battery", 8.1),
    _p(103, "12-pack drill bits", "12-pack of drill bits with sizes ranging from #40 to #3", 0.8),
    _p(104, "hammer", "12oz carpenter's hammer", 0.75),
    _p(105, "hammer", "14oz carpenter's hammer", 0.875),
    _p(106, "hammer", "18oz carpenter hammer", 1.0),
    _p(107, "rocks", "box of assorted rocks", 5.1),
    _p(108, "jacket", "water resistent black wind breaker", 0.1),
    _p(109, "spare tire", "24 inch spare tire", 22.2),
    _p(110, "jacket", "new water resistent white wind breaker", 0.5),
]
MYSQL_INVENTORY = [{**INVENTORY[0], "weight": 5.17}, *INVENTORY[3:]]
# GoldenGate prints the FLOAT column's float32 values as doubles
OGG_WEIGHTS = {101: 3.140000104904175, 102: 8.100000381469727, 103: 0.800000011920929,
               104: 0.75, 105: 0.875, 106: 1.0, 107: 5.099999904632568,
               108: 0.10000000149011612, 109: 22.200000762939453, 110: 0.5}
OGG_INVENTORY = [{**r, "weight": OGG_WEIGHTS[r["id"]]} for r in INVENTORY]


def _schema(columns: list[tuple[str, str]], **options: str) -> Any:
    return Schema.of(columns, primary_keys=[columns[0][0]],
                     options={"bucket": "2", **options}).to_table_schema(0)


def _decode(fmt: str, name: str, columns: list[tuple[str, str]] = PRODUCTS,
            **kw: Any) -> list[dict[str, Any]]:
    settings = DecodeSettings.of({k: kw.pop(k) for k in list(kw) if k != "file_index"})
    rows: list[dict[str, Any]] = FORMATS[fmt].decode((CORPUS / name).read_bytes(),
                                                     _schema(columns), settings=settings,
                                                     threads=False, **kw).to_pylist()
    return rows


def _run(spark: Any, tmp: Path, fmt: str, files: list[list[str]],
         columns: list[tuple[str, str]] = PRODUCTS, options: dict[str, str] | None = None,
         **opts: Any) -> tuple[list[BatchReport], list[dict[str, Any]]]:
    """``files``: per batch, the corpus files it holds; the table's rows after the job."""
    landing = corpus_landing(tmp, files)
    wh = str(tmp / "wh")
    key = columns[0][0]
    schema = Schema.of(columns, primary_keys=[key], options={"bucket": "2", **(options or {})})
    opts.setdefault("source_table", corpus_source(files))  # the events name their table
    reports = ingest(spark, CatalogSettings(wh), "db.t", str(landing),
                     CdcOptions(format=fmt, **opts), schema=schema)
    t = FileSystemCatalog(wh).get_table("db.t")
    return reports, sorted(t.to_arrow().to_pylist(), key=lambda r: r[key])


# ---------------------------------------------------------------------------- decoding


def test_formats_registry_and_cli() -> None:
    assert set(FORMATS) == {"debezium-json", "debezium-avro", "canal-json", "maxwell-json",
                            "ogg-json", "aws-dms-json"}
    args = ["--warehouse", "w", "--table", "db.t", "--landing", "l"]
    assert build_parser().parse_args(args).format == "debezium-json"
    assert build_parser().parse_args([*args, "--format", "canal-json"]).format == "canal-json"
    with pytest.raises(SystemExit):
        build_parser().parse_args([*args, "--format", "avro"])


def test_canal_one_row_per_element_of_data_in_arrival_order() -> None:
    rows = _decode("canal-json", "canal/flink_inventory.jsonl")
    # 9 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 2 + the DDL + 2
    assert len(rows) == 21
    first = [r for r in rows if r["_pos_line"] == 1]
    assert [r["id"] for r in first] == list(range(101, 110))
    assert [r["_event"] for r in first] == [2 * i for i in range(9)]  # one event: counted once
    assert [(r["_pos_n0"], r["_pos_n1"], r["_pos_n2"]) for r in first[:2]] == [(0, 1, 0),
                                                                              (0, 1, 1)]
    ddl = [r for r in rows if r["_error"] is not None]
    assert [(r["_pos_line"], r["_error"], r["id"]) for r in ddl] == [(10, DDL, None)]
    update = [r for r in rows if r["_pos_line"] == 9]
    assert [(r["id"], r["_kind"], r["weight"]) for r in update] == [(101, "+U", 5.17),
                                                                   (102, "+U", 5.17)]
    deletes = [(r["id"], r["_kind"]) for r in rows if r["_pos_line"] == 11]
    assert deletes == [(102, "-D"), (103, "-D")]
    assert {r["_pos_ts"] for r in rows} == {None}  # es / ts order nothing


def test_canal_values_are_text_typed_by_the_table() -> None:
    cols = [("_id", "INT NOT NULL"), ("pt", "INT"), ("v1", "STRING"), ("v2", "BIGINT"),
            ("v3", "DECIMAL(8, 3)"), ("v4", "BYTES"), ("v5", "FLOAT")]
    (row,) = _decode("canal-json", "canal/paimon_event_row.jsonl", cols)
    assert row["_error"] is None
    assert (row["_id"], row["pt"], row["v1"], row["v2"]) == (9, 1, "nine", 90000000000)
    assert row["v3"] == decimal.Decimal("99999.999")
    assert row["v4"] == b"nine.bin"  # canal's ISO-8859-1 text of the VARBINARY
    assert row["v5"] == float(np.float32(9.9))


def test_canal_key_change_and_an_event_lands_whole() -> None:
    rows = _decode("canal-json", "canal/edited.jsonl")
    got = [(r["_pos_line"], r["_event"], r["id"], r["_kind"], r["_error"]) for r in rows]
    assert sorted(got, key=repr) == sorted([
        (1, 0, 201, "+I", None), (1, 2, 202, "+I", None),
        (2, 0, 203, "+U", None), (2, 1, 202, "-D", None),  # old holds the key: a key change
        (3, 0, None, None, "bad value for weight"),  # row 2's weight is "heavy": no row lands
    ], key=repr)


def test_booleans_as_one_and_zero() -> None:
    cols = [("id", "INT NOT NULL"), ("ok", "BOOLEAN")]
    canal = ('{"data":[{"id":"1","ok":"1"},{"id":"2","ok":"0"}],"isDdl":false,'
             '"type":"INSERT"}\n{"data":[{"id":"3","ok":"2"}],"isDdl":false,"type":"INSERT"}\n')
    out = FORMATS["canal-json"].decode(canal.encode(), _schema(cols)).to_pylist()
    assert [(r["id"], r["ok"], r["_error"]) for r in out] == [
        (1, True, None), (2, False, None), (None, None, "bad value for ok")]
    maxwell = '{"type":"insert","data":{"id":1,"ok":1}}\n{"type":"insert","data":{"id":2,"ok":0}}'
    out = FORMATS["maxwell-json"].decode(maxwell.encode(), _schema(cols)).to_pylist()
    assert [(r["id"], r["ok"]) for r in out] == [(1, True), (2, False)]


MAXWELL_E = [("id", "INT NOT NULL"), ("m", "DOUBLE"), ("c", "TIMESTAMP(6)"),
             ("comment", "STRING"), ("_seq", "BIGINT")]


def _mysql_seq(file_index: int, pos: int, row: int) -> int:
    return file_index * 2**43 + pos * 2**11 + row


def test_maxwell_position_orders_and_fills_the_sequence() -> None:
    rows = _decode("maxwell-json", "maxwell/docs_position.jsonl", MAXWELL_E,
                   sequence_column="_seq")
    got = [(r["_pos_line"], r["_kind"], r["_error"], r["_seq"], r["_pos_s0"], r["_pos_n1"])
           for r in rows]
    assert got == [
        (1, "+U", None, _mysql_seq(6, 801200, 0), "master.000006", 801200),
        (2, None, DDL, None, "master.000006", 800050),
        (3, "+I", None, _mysql_seq(6, 800911, 0), "master.000006", 800911),
        (4, None, DDL, None, "master.000006", 804398)]
    assert rows[0]["c"] == datetime.datetime(2016, 10, 21, 5, 33, 54, 631000)
    assert rows[0]["m"] == 5.444


def test_maxwell_without_position_is_arrival_order_and_refuses_a_sequence() -> None:
    rows = _decode("maxwell-json", "maxwell/flink_inventory.jsonl")
    assert [(r["_pos_n0"], r["_pos_n1"]) for r in rows[:2]] == [(0, 1), (0, 2)]
    cols = [*PRODUCTS, ("_seq", "BIGINT")]
    rows = _decode("maxwell-json", "maxwell/flink_inventory.jsonl", cols, sequence_column="_seq")
    assert {r["_error"] for r in rows} == {
        "source position does not fit the sequence column _seq (Maxwell's position: "
        "output_binlog_position, a binlog file index below 2^20 and a pos below 2^32)"}


def test_ogg_pos_orders_and_fills_the_sequence() -> None:
    cols = [*PRODUCTS, ("_seq", "BIGINT")]
    rows = _decode("ogg-json", "ogg/flink_inventory.jsonl", cols, sequence_column="_seq")
    assert [r["_seq"] for r in rows] == list(range(143, 159))
    assert [r["_pos_n0"] for r in rows] == list(range(143, 159))
    assert rows[-1]["_kind"] == "-D" and rows[-1]["id"] == 111
    rows = _decode("ogg-json", "ogg/truncate.jsonl")
    assert [(r["_error"], r["_pos_n0"]) for r in rows] == [("truncate", 160), (None, 161)]
    big = ('{"op_type":"I","pos":"99999999999999999999","after":{"id":1}}\n'
           '{"op_type":"X","pos":"1","after":{"id":2}}\n')
    out = FORMATS["ogg-json"].decode(big.encode(), _schema(PRODUCTS)).to_pylist()
    assert [r["_error"] for r in out] == ["ogg-json: pos does not fit a BIGINT", "unknown op"]


def test_dms_before_image_columns_and_control_records() -> None:
    rows = _decode("aws-dms-json", "aws_dms/paimon_product.jsonl")
    assert [(r["id"], r["_kind"], r["_error"]) for r in rows] == [
        (103, "+I", None), (104, "+I", None), (105, "+I", None), (101, "-D", None),
        (105, "+U", None), (107, "+I", None)]
    # new columns are the row's, never the BI_ before-image columns
    assert [r["_unknown"] for r in rows] == ["age", "age", "address", None, "address", None]
    (ctl,) = _decode("aws-dms-json", "aws_dms/control.jsonl")
    assert ctl["_error"] == DDL and ctl["_event"] == 0
    line = ('{"data":{"id":7,"name":"x","BI_id":6},"metadata":{"record-type":"data",'
            '"operation":"update"}}')
    out = FORMATS["aws-dms-json"].decode(line.encode(), _schema(PRODUCTS)).to_pylist()
    assert sorted((r["id"], r["_kind"]) for r in out) == [(6, "-D"), (7, "+U")]  # key change


def test_formats_without_position_refuse_a_sequence_column() -> None:
    for fmt in ("canal-json", "aws-dms-json"):
        with pytest.raises(SchemaError, match=f"{fmt} events carry no orderable source "
                                              "position to fill the sequence column _seq"):
            check_sequence(fmt, "_seq", None)
        check_sequence(fmt, "_seq", ["es"])  # a field the user names orders them
        check_sequence(fmt, None, None)
    for fmt in ("debezium-json", "maxwell-json", "ogg-json"):
        check_sequence(fmt, "_seq", None)
    # a named top-level field orders canal events and fills the sequence
    rows = _decode("canal-json", "canal/edited.jsonl", [*PRODUCTS, ("_seq", "BIGINT")],
                   position_fields=["es"], sequence_column="_seq")
    assert [r["_seq"] for r in rows if r["_error"] is None and r["_event"] == 0] == [
        1589373515000, 1589373546000]


#: canal's CREATE DATABASE as printed in the SeaTunnel canal resources (apache/seatunnel
#: seatunnel-e2e/.../connector-kafka-e2e/src/test/resources/canal/canal_data.txt, first line)
QUERY_DDL = ('{"data":null,"database":"canal_hvygfc","es":1697788899000,"id":1,"isDdl":true,'
             '"mysqlType":null,"old":null,"pkNames":null,"sql":"CREATE DATABASE IF NOT EXISTS '
             'canal_hvygfc","sqlType":null,"table":"","ts":1697788899992,"type":"QUERY"}')


def test_whole_file_and_line_paths_agree_in_other_formats() -> None:
    """A file of ``{`` lines is parsed whole; with a blank line it is split into lines: the
    same rows (a Debezium envelope tombstone is no tombstone in another format)."""
    from pipelines.cdc.decode import decode_file

    for fmt, name in [("canal-json", "canal/edited.jsonl"), ("ogg-json", "ogg/truncate.jsonl"),
                      ("maxwell-json", "maxwell/docs_position.jsonl")]:
        lines = [*(CORPUS / name).read_text().splitlines(), '{"schema":null,"payload":null}']
        f = FORMATS[fmt].decode.__self__  # type: ignore[attr-defined]
        whole = decode_file("\n".join(lines).encode(), _schema(PRODUCTS), fmt=f).to_pylist()
        split = decode_file("\n".join([*lines, ""]).encode() + b"\n\n", _schema(PRODUCTS),
                            fmt=f).to_pylist()
        assert sorted(whole, key=repr) == sorted(split, key=repr), fmt
        assert [r["_error"] for r in whole if r["_pos_line"] == len(lines)] == ["unknown op"]


def test_malformed_lines_and_tombstones_in_other_formats() -> None:
    lines = ['{"data": "x", "type": "INSERT"}', "null", "not json",
             '{"data":[{"id":"1"}],"type":"REPLACE"}', QUERY_DDL,
             QUERY_DDL.replace('"isDdl":true', '"isDdl":false')]  # a QUERY is DDL anyway
    out = FORMATS["canal-json"].decode(("\n".join(lines) + "\n").encode(),
                                       _schema(PRODUCTS)).to_pylist()
    assert sorted((r["_pos_line"], r["_error"]) for r in out) == [
        (1, "canal-json: data is not a list of rows"), (2, "tombstone"), (3, "malformed JSON"),
        (4, "unknown op"), (5, DDL), (6, DDL)]


# ---------------------------------------------------------------------------- the job


@pytest.mark.spark
@pytest.mark.parametrize(("fmt", "name", "expected", "other"), [
    ("debezium-json", "debezium_json/flink_inventory_plain.jsonl", INVENTORY, 0),
    ("debezium-json", "debezium_json/flink_inventory_envelope.jsonl", INVENTORY, 0),
    # the CREATE of table user02: another table's event
    ("canal-json", "canal/flink_inventory.jsonl", MYSQL_INVENTORY, 1),
    ("maxwell-json", "maxwell/flink_inventory.jsonl", MYSQL_INVENTORY, 0),
    ("ogg-json", "ogg/flink_inventory.jsonl", OGG_INVENTORY, 0),
    ("ogg-json", "ogg/flink_inventory_reversed.jsonl", OGG_INVENTORY, 0),  # pos orders
])
def test_inventory_stream_lands_the_same_in_every_format(spark: Any, tmp_path: Path, fmt: str,
                                                         name: str, expected: list[Any],
                                                         other: int) -> None:
    (rep,), rows = _run(spark, tmp_path, fmt, [[name]])
    assert rep.malformed == 0 and rep.reasons == {} and rep.ddl == 0
    assert rep.other_tables == other
    assert rep.events == len((CORPUS / name).read_text().splitlines())
    assert rep.valid == rep.events - other
    assert rows == expected


@pytest.mark.spark
def test_canal_key_change_rejected_event_and_truncate(spark: Any, tmp_path: Path) -> None:
    reports, rows = _run(spark, tmp_path, "canal-json",
                         [["canal/flink_inventory.jsonl"], ["canal/edited.jsonl"],
                          ["canal/truncate.jsonl"]], max_error_ratio=0.5)
    assert [(r.events, r.valid, r.malformed, r.truncates) for r in reports] == [
        (11, 10, 0, 0), (3, 2, 1, 0), (3, 2, 0, 1)]
    assert reports[1].reasons == {"bad value for weight": 1}
    # the truncate emptied the table (8 inventory rows, 201 and 203); 302 came after it
    assert rows == [_p(302, "jacket", "water resistent black wind breaker", 0.1)]
    q = Path(reports[1].quarantine or "") / "part-00000.jsonl"
    quarantined = [x for p in q.parent.glob("part-*.jsonl") for x in p.read_text().splitlines()]
    assert len(quarantined) == 1 and '"line": 3' in quarantined[0]


@pytest.mark.spark
def test_canal_key_change_moves_the_row(spark: Any, tmp_path: Path) -> None:
    (rep,), rows = _run(spark, tmp_path, "canal-json", [["canal/edited.jsonl"]],
                        max_error_ratio=0.5)
    assert rep.valid == 2 and rep.malformed == 1
    assert rows == [_p(201, "scooter", "Small 2-wheel scooter", 3.14),
                    _p(203, "car battery", "12V car battery", 8.1)]


@pytest.mark.spark
def test_maxwell_position_orders_across_batches(spark: Any, tmp_path: Path) -> None:
    reports, rows = _run(spark, tmp_path, "maxwell-json", [["maxwell/docs_position.jsonl"]],
                         MAXWELL_E, {"sequence.field": "_seq"})
    assert [(r.events, r.valid, r.ddl, r.malformed) for r in reports] == [(4, 2, 2, 0)]
    assert rows == [{"id": 1, "m": 5.444, "c": datetime.datetime(2016, 10, 21, 5, 33, 54, 631000),
                     "comment": "I am a creature of light.", "_seq": _mysql_seq(6, 801200, 0)}]
    _, rows = _run(spark, tmp_path / "2", "maxwell-json",
                   [["maxwell/docs_position.jsonl"], ["maxwell/docs_delete.jsonl"]], MAXWELL_E,
                   {"sequence.field": "_seq"})
    assert rows == []


@pytest.mark.spark
def test_ogg_sequence_and_truncate(spark: Any, tmp_path: Path) -> None:
    cols = [*PRODUCTS, ("_seq", "BIGINT")]
    reports, rows = _run(spark, tmp_path, "ogg-json", [["ogg/flink_inventory_reversed.jsonl"]],
                         cols, {"sequence.field": "_seq"})
    assert rows == [{**r, "_seq": s} for r, s in zip(
        OGG_INVENTORY, [143, 144, 145, 146, 147, 152, 153, 150, 151, 156])]
    reports, rows = _run(spark, tmp_path / "2", "ogg-json",
                         [["ogg/flink_inventory.jsonl"], ["ogg/truncate.jsonl"]])
    assert [r.truncates for r in reports] == [0, 1]
    assert rows == [_p(112, "jacket", "water resistent black wind breaker",
                       0.10000000149011612)]


@pytest.mark.spark
def test_dms_new_columns_before_images_and_control(spark: Any, tmp_path: Path) -> None:
    (rep,), rows = _run(spark, tmp_path, "aws-dms-json",
                        [["aws_dms/control.jsonl", "aws_dms/paimon_product.jsonl"]])
    # the control record names table awsdms_apply_exceptions: another table's event
    assert (rep.events, rep.valid, rep.other_tables, rep.malformed) == (7, 6, 1, 0)
    assert rep.new_columns == {"address": "STRING", "age": "BIGINT"}
    assert rows == [
        {**_p(103, "12-pack drill bits",
              "12-pack of drill bits with sizes ranging from #40 to #3", 0.8),
         "address": None, "age": 18},
        {**_p(104, "hammer", "12oz carpenter's hammer", 0.75), "address": None, "age": 24},
        {**_p(105, "hammer", "14oz carpenter's hammer", 0.875), "address": "Beijing",
         "age": None},
        {**_p(107, "rocks", "box of assorted rocks", 5.3), "address": None, "age": None}]


@pytest.mark.spark
def test_a_sequence_column_the_format_cannot_fill_is_refused(spark: Any,
                                                             tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="--position-fields"):
        _run(spark, tmp_path, "canal-json", [["canal/flink_inventory.jsonl"]],
             [*PRODUCTS, ("_seq", "BIGINT")], {"sequence.field": "_seq"})
    t = FileSystemCatalog(str(tmp_path / "wh")).get_table("db.t")
    assert t.latest_snapshot() is None  # nothing was written


def test_unknown_format_is_refused(tmp_path: Path) -> None:
    from pipelines.cdc.ingest import ingest_batch

    wh = str(tmp_path / "wh")
    FileSystemCatalog(wh).create_table("db.t", Schema.of(PRODUCTS, primary_keys=["id"],
                                                         options={"bucket": "1"}))
    with pytest.raises(SchemaError, match="unknown CDC format 'avro-json'"):
        ingest_batch(None, CatalogSettings(wh), "db.t", 1, [],  # type: ignore[arg-type]
                     CdcOptions(format="avro-json"))


# ---------------------------------------------------------------------------- the reference


EVENT_ROW = [("_id", "INT NOT NULL"), ("pt", "INT"), ("v1", "STRING"), ("v2", "BIGINT"),
             ("v3", "DECIMAL(8, 3)"), ("v4", "BYTES"), ("v5", "FLOAT")]
#: the corpus files of each table, for the agreement with the reference
REFERENCE_CASES: list[tuple[list[tuple[str, str]], list[tuple[str, str]]]] = [
    (PRODUCTS, [("canal-json", "canal/flink_inventory.jsonl"),
                ("canal-json", "canal/edited.jsonl"), ("canal-json", "canal/truncate.jsonl"),
                ("maxwell-json", "maxwell/flink_inventory.jsonl"),
                ("ogg-json", "ogg/flink_inventory_reversed.jsonl"),
                ("ogg-json", "ogg/truncate.jsonl"),
                ("aws-dms-json", "aws_dms/paimon_product.jsonl"),
                ("aws-dms-json", "aws_dms/control.jsonl")]),
    (EVENT_ROW, [("canal-json", "canal/paimon_event_row.jsonl")]),
    (MAXWELL_E[:-1], [("maxwell-json", "maxwell/docs_position.jsonl")]),
]


@pytest.mark.spark
@pytest.mark.parametrize(("columns", "cases"), REFERENCE_CASES)
def test_fast_path_agrees_with_the_reference(spark: Any, tmp_path: Path,
                                             columns: list[tuple[str, str]],
                                             cases: list[tuple[str, str]]) -> None:
    """The Spark SQL reference (``pipelines.cdc.formats.reference`` then ``cdc_events``): the same
    rows, kinds, reasons and positions."""
    from tests.pipelines.cdcfmtref import spark_sql_rows

    schema = _schema(columns)
    cols = [*schema.field_names, "_kind", "_error", "_event", "_pos_line", "_pos_ts",
            "_connector", *[f"_pos_{k}{i}" for i in range(3) for k in "ns"]]

    def canon(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return sorted((tuple(r[c] for c in cols) for r in rows), key=repr)

    texts = [(fmt, (CORPUS / name).read_text()) for fmt, name in cases]
    sql = spark_sql_rows(spark, texts, schema, tmp_path)
    for i, ((fmt, name), by_sql) in enumerate(zip(cases, sql)):
        ours = _decode(fmt, name, columns, file_index=i)
        assert canon(ours) == canon(by_sql), name
        assert len(ours) >= 1


@pytest.mark.spark
@pytest.mark.oracle
def test_java_reads_what_the_formats_wrote(spark: Any, tmp_path: Path) -> None:
    """A canal table (multi-row events, a key change, a truncate) and a DMS table (added
    columns) as Paimon Java 0.9 reads them: the same rows as ours."""
    from paimon_core.cli.canonical import canonical_lines
    from tests.interop.oracle import ensure_ready, run_batches

    ensure_ready()
    runs = {"canal": _run(spark, tmp_path / "canal", "canal-json",
                          [["canal/flink_inventory.jsonl"], ["canal/edited.jsonl"]],
                          max_error_ratio=0.5),
            "dms": _run(spark, tmp_path / "dms", "aws-dms-json",
                        [["aws_dms/paimon_product.jsonl"]])}
    batches = {k: [{"cmd": "read", "warehouse": str(tmp_path / k / "wh"), "table": "db.t",
                    "engine": "java", "output": str(tmp_path / f"{k}.jsonl")}] for k in runs}
    results = run_batches(batches, tmp_path)
    for k, (_, rows) in runs.items():
        assert not results[k].failures(), (results[k].failures(), results[k].stderr[-3000:])
        t = FileSystemCatalog(str(tmp_path / k / "wh")).get_table("db.t")
        data = t.to_arrow()
        ours = canonical_lines(data, [t.schema.field(c) for c in data.column_names])
        java = (tmp_path / f"{k}.jsonl").read_text().splitlines()
        assert len(java) == len(rows) > 0
        assert java == ours


@pytest.mark.spark
def test_canal_typed_values_through_the_job(spark: Any, tmp_path: Path) -> None:
    (rep,), rows = _run(spark, tmp_path, "canal-json", [["canal/paimon_event_row.jsonl"]],
                        EVENT_ROW)
    assert (rep.events, rep.valid, rep.malformed) == (1, 1, 0)
    assert rows == [{"_id": 9, "pt": 1, "v1": "nine", "v2": 90000000000,
                     "v3": decimal.Decimal("99999.999"), "v4": b"nine.bin",
                     "v5": float(np.float32(9.9))}]
