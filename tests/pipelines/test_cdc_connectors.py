"""Published connector output through the CDC job: every operation (c/u/d/r, m, t,
tombstones in both printings, key-only deletes, partial ``before``, the TOAST placeholder) and
the source position of each connector (Postgres, MySQL, SQL Server, Oracle, Db2, MongoDB),
found from ``source.connector`` without a flag. The events are the connectors' documented
examples (``tests/pipelines/cdc_corpus/``, sources in its README); the expected rows are
written by hand from the events."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import SchemaError
from paimon_core.catalog import FileSystemCatalog
from paimon_core.schema_builder import Schema
from pipelines.cdc.decode import decode_events, decode_file
from pipelines.cdc.events import position_columns
from pipelines.cdc.ingest import BatchReport, CdcOptions, ingest
from pipelines.cdc.settings import DecodeSettings
from pipelines.cdc.toast import fill_unavailable
from pipelines.config import CatalogSettings
from tests.pipelines.cdcgen import corpus_landing

CORPUS = Path(__file__).parent / "cdc_corpus"
#: the docs' ``customers`` table (the tutorial's inventory DB: every column NOT NULL)
CUSTOMERS = [("id", "INT NOT NULL"), ("first_name", "STRING NOT NULL"),
             ("last_name", "STRING NOT NULL"), ("email", "STRING NOT NULL")]
UPPER = [(n.upper(), t) for n, t in CUSTOMERS]
#: MySQL's position packed into one BIGINT: binlog index, pos, row (cdc_events.MYSQL_BITS)
MYSQL_SEQ_484 = 3 * 2**43 + 484 * 2**11 + 0


def _run(spark: Any, tmp: Path, files: list[list[str]], columns: list[tuple[str, str]],
         options: dict[str, str] | None = None, **opts: Any) -> tuple[list[BatchReport],
                                                                     list[dict[str, Any]]]:
    """``files``: per batch, the corpus files it holds; the table's rows after the job."""
    landing = corpus_landing(tmp, files)
    wh = str(tmp / "wh")
    key = columns[0][0]
    schema = Schema.of(columns, primary_keys=[key], options={"bucket": "2", **(options or {})})
    reports = ingest(spark, CatalogSettings(wh), "db.customers", str(landing),
                     CdcOptions(**opts), schema=schema)
    t = FileSystemCatalog(wh).get_table("db.customers")
    return reports, sorted(t.to_arrow().to_pylist(), key=lambda r: r[key])


ANNE = {"id": 1, "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}
SALLY = {"id": 2, "first_name": "Sally", "last_name": "Thomas", "email": "sally.thomas@acme.com"}


@pytest.mark.spark
def test_postgres_ops_messages_tombstones_key_only_delete(spark: Any, tmp_path: Path) -> None:
    # before: the key-only delete crashed the write (NOT NULL), "m" and the envelope
    # tombstone were "unknown op"
    (rep,), rows = _run(spark, tmp_path, [["postgresql/ops.jsonl"]], CUSTOMERS)
    assert rep.reasons == {} and rep.malformed == 0
    assert (rep.events, rep.valid, rep.tombstones, rep.messages) == (8, 4, 2, 2)
    assert rows == [SALLY]  # id 1: created, updated, deleted by its key alone


@pytest.mark.spark
def test_postgres_key_only_delete_in_a_later_batch(spark: Any, tmp_path: Path) -> None:
    # the delete reaches a row written by an earlier batch: only its key is in the event
    reports, rows = _run(spark, tmp_path, [["postgresql/partial_before.jsonl"],
                                           ["postgresql/ops.jsonl"]], CUSTOMERS)
    assert [r.malformed for r in reports] == [0, 0]
    assert rows == [{**SALLY, "vip": None}]


@pytest.mark.spark
def test_postgres_partial_before_is_no_key_change(spark: Any, tmp_path: Path) -> None:
    # before: the update was taken for a key change (-D of a NULL key) and the batch died
    (rep,), rows = _run(spark, tmp_path, [["postgresql/partial_before.jsonl"]], CUSTOMERS)
    assert rep.new_columns == {"vip": "BOOLEAN"} and rep.malformed == 0
    assert rows == [{**ANNE, "first_name": "Anne Marie", "vip": True}]


@pytest.mark.spark
def test_postgres_toast_placeholder_keeps_the_previous_value(spark: Any, tmp_path: Path) -> None:
    # before: the placeholder was written as the email (silently)
    (rep,), rows = _run(spark, tmp_path, [["postgresql/toast.jsonl"]], CUSTOMERS)
    assert rep.malformed == 0
    assert rows == [{**ANNE, "first_name": "Anne Marie"}]  # email: the create's, same batch
    # the previous value from the table as the batch starts (the create in batch 1)
    reports, rows = _run(spark, tmp_path / "2", [["postgresql/toast_create.jsonl"],
                                                 ["postgresql/toast_update.jsonl"]], CUSTOMERS)
    assert [r.malformed for r in reports] == [0, 0]
    assert rows == [{**ANNE, "first_name": "Anne Marie"}]


@pytest.mark.spark
def test_postgres_toast_placeholder_without_previous_value_is_refused(spark: Any,
                                                                      tmp_path: Path) -> None:
    (rep,), rows = _run(spark, tmp_path, [["postgresql/toast_update.jsonl"]], CUSTOMERS,
                        max_error_ratio=1.0)
    assert rep.reasons == {"unchanged TOAST value without a previous value for email": 1}
    assert rows == []


@pytest.mark.spark
@pytest.mark.parametrize("mode", ["store", "refuse"])
def test_postgres_toast_placeholder_options(spark: Any, tmp_path: Path, mode: str) -> None:
    (rep,), rows = _run(spark, tmp_path, [["postgresql/toast.jsonl"]], CUSTOMERS,
                        max_error_ratio=0.5, unavailable=mode)
    if mode == "store":  # the documented opt-in: the placeholder text is the value
        assert rep.malformed == 0
        assert rows == [{**ANNE, "first_name": "Anne Marie",
                         "email": "__debezium_unavailable_value"}]
    else:
        assert rep.reasons == {"unchanged TOAST value for email": 1}
        assert rows == [ANNE]


@pytest.mark.spark
def test_postgres_truncate_empties_the_table_at_its_position(spark: Any,
                                                             tmp_path: Path) -> None:
    # before: "unknown op" and the batch failed. Batch 1: Anne Marie and Sally; batch 2: a
    # create of id 1 (lsn 24023128, the docs' create), the truncate (lsn 46523128), and a
    # create of id 3 after it (lsn 46523200): only id 3 is left
    # the create after the truncate is written first: the stream order is the position's
    reports, rows = _run(spark, tmp_path / "run", [
        ["postgresql/partial_before.jsonl"],
        ["postgresql/after_truncate.jsonl", "postgresql/truncate.jsonl"]], CUSTOMERS)
    assert [(r.truncates, r.malformed, r.valid) for r in reports] == [(0, 0, 2), (1, 0, 2)]
    assert rows == [{"id": 3, "first_name": "Edward", "last_name": "Walker",
                     "email": "ed@walker.com", "vip": None}]
    t = FileSystemCatalog(str(tmp_path / "run" / "wh")).get_table("db.customers")
    # the truncate is a snapshot of its own (tests/pipelines/test_cdc_truncate.py)
    kinds = [t.snapshot_manager.snapshot(s).commit_kind.value for s in reports[1].snapshot_ids]
    assert kinds == ["APPEND", "OVERWRITE", "APPEND"]
    # a re-run applies nothing twice
    again = ingest(spark, CatalogSettings(str(tmp_path / "run" / "wh")), "db.customers",
                   str(tmp_path / "run" / "landing"))
    assert [r.skipped for r in again] == [True, True]


A4 = {"id": 1004, "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}


@pytest.mark.spark
def test_mysql_file_pos_row_orders_and_fills_the_sequence(spark: Any, tmp_path: Path) -> None:
    # before: "missing source position" without a flag; file,pos gave a NULL sequence
    cols = [*CUSTOMERS, ("_seq", "BIGINT")]
    (rep,), rows = _run(spark, tmp_path, [["mysql/update_before_create.jsonl"]], cols,
                        {"sequence.field": "_seq"})
    assert rep.malformed == 0
    # the update (pos 484) is later than the create (pos 154) written after it
    assert rows == [{**A4, "first_name": "Anne Marie", "_seq": MYSQL_SEQ_484}]
    reports, rows = _run(spark, tmp_path / "2", [["mysql/update_before_create.jsonl"],
                                                 ["mysql/delete.jsonl"]], cols,
                         {"sequence.field": "_seq"})
    assert rows == [] and [r.malformed for r in reports] == [0, 0]


@pytest.mark.spark
@pytest.mark.parametrize(("folder", "columns", "email_col", "expected_key"), [
    ("sqlserver", CUSTOMERS, "email", 1005),
    ("db2", UPPER, "EMAIL", 1005),
])
def test_lsn_text_positions_order_events(spark: Any, tmp_path: Path, folder: str,
                                         columns: list[tuple[str, str]], email_col: str,
                                         expected_key: int) -> None:
    # before: "missing source position" (the default position field was lsn)
    (rep,), rows = _run(spark, tmp_path, [[f"{folder}/update_before_create.jsonl"]], columns)
    assert rep.malformed == 0
    assert [(r[columns[0][0]], r[email_col]) for r in rows] == [
        (expected_key, "noreply@example.org")]


@pytest.mark.spark
def test_oracle_scn_orders_events(spark: Any, tmp_path: Path) -> None:
    (rep,), rows = _run(spark, tmp_path, [["oracle/update_before_create.jsonl"]], UPPER)
    assert rep.malformed == 0
    assert rows == [{"ID": 1004, "FIRST_NAME": "Anne", "LAST_NAME": "Kretchmar",
                     "EMAIL": "anne@example.com"}]


@pytest.mark.spark
def test_mixed_connectors_in_one_batch_are_refused(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="mixes the events of connectors mysql, sqlserver"):
        _run(spark, tmp_path, [["mysql/update_before_create.jsonl",
                                "sqlserver/update_before_create.jsonl"]], CUSTOMERS)


def _decoded(name: str, columns: list[tuple[str, str]], **kw: Any) -> list[dict[str, Any]]:
    schema = Schema.of(columns, primary_keys=[columns[0][0]],
                       options={"bucket": "1"}).to_table_schema(0)
    return decode_file((CORPUS / name).read_bytes(), schema,
                       settings=DecodeSettings.of(kw)).to_pylist()


@pytest.mark.parametrize(("name", "columns", "positions"), [
    ("postgresql/ops.jsonl", CUSTOMERS, [24023128, 24023200, 24023300, 46523128, 46523200,
                                        46523300]),  # (the messages too)
    ("mysql/update_before_create.jsonl", CUSTOMERS, [("mysql-bin.000003", 484, 0),
                                                     ("mysql-bin.000003", 154, 0)]),
    ("sqlserver/update_before_create.jsonl", CUSTOMERS, [
        ("00000027:00000ac0:0007", "00000027:00000ac0:0002", 2),
        ("00000027:00000758:0005", "00000027:00000758:0003", 1)]),
    ("oracle/update_before_create.jsonl", UPPER, [2125544, 2122185]),
    ("db2/update_before_create.jsonl", UPPER, [
        ("00000027:00000ac0:0007", "00000027:00000ac0:0002"),
        ("00000027:00000758:0005", "00000027:00000758:0003")]),
    ("mongodb/create.jsonl", [("_id", "BIGINT")], [(1558965508000, 31)]),
])
def test_positions_of_each_connector(name: str, columns: list[tuple[str, str]],
                                     positions: list[Any]) -> None:
    rows = [r for r in _decoded(name, columns) if r["_pos_n0"] is not None
            or r["_pos_s0"] is not None]
    got = []
    for r in rows:
        parts = tuple(r[f"_pos_n{i}"] if r[f"_pos_n{i}"] is not None else r[f"_pos_s{i}"]
                      for i in range(3))
        parts = tuple(p for p in parts if p is not None)
        got.append(parts[0] if len(parts) == 1 else parts)
    assert got == positions


def test_unknown_connector_is_named_and_the_flag_overrides() -> None:
    line = (b'{"op": "c", "after": {"id": 1}, "source": {"connector": "vitess", '
            b'"vgtid": "x", "lsn": 5}}\n')
    schema = Schema.of([("id", "INT")], primary_keys=["id"],
                       options={"bucket": "1"}).to_table_schema(0)
    (row,) = decode_file(line, schema).to_pylist()
    assert row["_error"] == "unknown source connector"
    (row,) = decode_file(line, schema, settings=DecodeSettings(position_fields=["lsn"])).to_pylist()
    assert row["_error"] is None and row["_pos_n0"] == 5


@pytest.mark.spark
def test_corpus_decoders_agree_with_spark_reference(spark: Any, tmp_path: Path) -> None:
    from tests.pipelines.cdcref import compared_rows, spark_changes

    # one file of several connectors (the job refuses such a batch; the decoders still agree
    # on each event's own position fields)
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join((CORPUS / n).read_text() for n in [
        "mysql/update_before_create.jsonl", "sqlserver/update_before_create.jsonl",
        "postgresql/ops.jsonl", "mongodb/create.jsonl"]))

    cases = [("postgresql/ops.jsonl", CUSTOMERS), ("postgresql/partial_before.jsonl", CUSTOMERS),
             ("postgresql/toast.jsonl", CUSTOMERS), ("postgresql/truncate.jsonl", CUSTOMERS),
             ("mysql/update_before_create.jsonl", [*CUSTOMERS, ("_seq", "BIGINT")]),
             ("sqlserver/update_before_create.jsonl", CUSTOMERS),
             ("sqlserver/update_before_create.jsonl", [*CUSTOMERS, ("_seq", "BIGINT")]),
             ("oracle/update_before_create.jsonl", UPPER),
             ("db2/update_before_create.jsonl", UPPER)]
    for name, columns, unavailable in [*[(n, c, "previous") for n, c in cases],
                                       ("postgresql/toast.jsonl", CUSTOMERS, "refuse"),
                                       (str(mixed), CUSTOMERS, "previous")]:
        schema = Schema.of(columns, primary_keys=[columns[0][0]],
                           options={"bucket": "1"}).to_table_schema(0)
        seq = "_seq" if columns[-1][0] == "_seq" else None
        ours = decode_file((CORPUS / name).read_bytes(), schema,
                           settings=DecodeSettings(sequence_column=seq, unavailable=unavailable))
        ref = spark_changes(spark, CORPUS / name, schema, position_fields=None,
                            epoch_unit="ms", sequence_column=seq, unavailable=unavailable)
        assert compared_rows(ours, schema) == compared_rows(ref, schema), name
        pos = [c for c in position_columns(None) if c != "_pos_file"]  # every slot
        assert (sorted(ours.select(pos).to_pylist(), key=repr)
                == sorted(ref.select(pos).to_pylist(), key=repr)), name


def test_sequence_value_per_connector() -> None:
    """The table's sequence column gets one BIGINT of the position: MySQL file index, pos and
    row packed; MongoDB the oplog second and ``ord``; an 80-bit SQL Server LSN does not fit a
    BIGINT: refused with the reason, never a NULL sequence."""
    cols = [*CUSTOMERS, ("_seq", "BIGINT")]
    rows = _decoded("mysql/update_before_create.jsonl", cols, sequence_column="_seq")
    assert [r["_seq"] for r in rows] == [MYSQL_SEQ_484, 3 * 2**43 + 154 * 2**11]
    # the docs' MongoDB create, its after as an object (the docs' JSON-string image is value
    # decoding, not positions)
    mongo = json.loads((CORPUS / "mongodb/create.jsonl").read_text())
    mongo["payload"]["after"] = {"_id": 1004}
    schema = Schema.of([("_id", "BIGINT"), ("_seq", "BIGINT")], primary_keys=["_id"],
                       options={"bucket": "1"}).to_table_schema(0)
    (row,) = decode_file(json.dumps(mongo).encode(), schema,
                         settings=DecodeSettings(sequence_column="_seq")).to_pylist()
    assert row["_error"] is None and row["_seq"] == 1558965508 * 2**32 + 31
    rows = _decoded("sqlserver/update_before_create.jsonl", cols, sequence_column="_seq")
    assert {r["_error"] for r in rows} == {
        "source position does not fit the sequence column _seq"}


def test_fill_unavailable_takes_the_latest_earlier_value_else_the_table() -> None:
    schema = Schema.of([("id", "INT"), ("t", "STRING"), ("b", "BYTES")], primary_keys=["id"],
                       options={"bucket": "1"}).to_table_schema(0)
    ph = "__debezium_unavailable_value"
    data = pa.table({
        "id": pa.array([1, 1, 1, 2, 3, 4], pa.int32()),
        "t": ["a", ph, ph, ph, ph, "x"],
        "b": [b"1", ph.encode(), b"2", ph.encode(), b"3", ph.encode()],
        "_kind": ["+I", "+U", "+U", "+U", "+U", "-D"],
        "_pos_n0": [1, 3, 2, 5, 6, 7],  # id 1: positions 1, 3, 2: the row at 3 is last
    })
    asked: list[list[str]] = []

    def previous(cols: Sequence[str]) -> pa.Table:
        asked.append(list(cols))
        return pa.table({"id": pa.array([2], pa.int32()), "t": pa.array([None], pa.string()),
                         "b": [b"old"]})

    out, refused = fill_unavailable(data, schema, ["_pos_n0"], previous)
    got = {(r["id"], r["_pos_n0"]): (r["t"], r["b"]) for r in out.to_pylist()}
    assert got[(1, 3)] == ("a", b"2")  # t from position 1 (2 is a placeholder too), b from 2
    assert got[(1, 2)] == ("a", b"2")
    assert got[(2, 5)] == (None, b"old")  # the table's value: NULL is a value
    assert got[(4, 7)] == ("x", ph.encode())  # a delete's values are left alone
    assert refused == {4: "unchanged TOAST value without a previous value for t"}  # id 3
    assert asked == [["id", "t", "b"]]


def test_envelope_tombstones_on_the_whole_file_path() -> None:
    """Every line starts with ``{``: the file is parsed as one document (no lines split), and
    the tombstones printed with the envelope are still found, as on the per-line path."""
    ops = [x for x in (CORPUS / "postgresql/ops.jsonl").read_text().splitlines()
           if x != "null"]
    lines = [*ops, '{"schema":null,"payload":null}', '{"payload": null , "schema": null}',
             '{"schema": null}']
    schema = Schema.of(CUSTOMERS, primary_keys=["id"], options={"bucket": "2"}
                       ).to_table_schema(0)
    whole = decode_file(("\n".join(lines) + "\n").encode(), schema)
    per_line = decode_events(lines, schema)
    def by_line(t: pa.Table) -> list[dict[str, Any]]:  # (tombstones come last per line)
        return sorted(t.to_pylist(), key=lambda r: (r["_pos_line"], r["_event"]))

    assert by_line(whole) == by_line(per_line)
    errors = [r["_error"] for r in whole.to_pylist() if r["_event"] == 0]
    assert errors.count("tombstone") == 3 and errors.count("unknown op") == 1
    assert errors.count("message") == 2
