"""The open items of the Maxwell and GoldenGate formats: Maxwell transactions of more than
2,047 rows with a sequence column (``output_binlog_position``), from the Maxwell docs' sample
events (``cdc_corpus/maxwell/docs_position.jsonl``); GoldenGate's compressed updates (only
the key and the changed columns in ``after``), made from the published Flink OGG events
(``cdc_corpus/ogg/flink_inventory.jsonl``) by leaving out the unchanged columns; expected
rows by hand; each through the job's ``main`` (the module ``python -m pipelines.jobs.cdc_ingest``
runs; tests/pipelines/test_cdc_routing.py runs that form in a subprocess) on the test session's
Spark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.schema_builder import Schema
from pipelines.cdc.formats import FORMATS
from pipelines.cdc.formats.ogg_compressed import NO_VALUE
from pipelines.cdc.settings import DecodeSettings
from tests.pipelines.test_cdc_formats import MAXWELL_E, PRODUCTS, _mysql_seq, _schema

CORPUS = Path(__file__).parent / "cdc_corpus"
#: the docs' INSERT (``master.000006:800911``, xid 23396)
MAXWELL_INSERT = json.loads((CORPUS / "maxwell" / "docs_position.jsonl").read_text()
                            .splitlines()[2])
ROWS_PER_EVENT = 100


def _big_transaction(n: int) -> tuple[list[str], int]:
    """One transaction of ``n`` inserts (ids 1..n, ``comment`` ``row <id>``) in binlog rows
    events of :data:`ROWS_PER_EVENT` rows (Maxwell: every row of an event carries the event's
    end position; ``xoffset`` counts the transaction's rows), then an update of id 2100 in a
    last event; returns the lines and the update's position."""
    lines = []
    for i in range(1, n + 1):
        ev = {**MAXWELL_INSERT, "xoffset": i - 1,
              "position": f"master.000006:{800911 + 1000 * ((i - 1) // ROWS_PER_EVENT)}",
              "data": {**MAXWELL_INSERT["data"], "id": i, "comment": f"row {i}"}}
        ev.pop("commit")
        lines.append(json.dumps(ev))
    upd_pos = 800911 + 1000 * (n // ROWS_PER_EVENT + 1)
    upd = {**MAXWELL_INSERT, "type": "update", "xoffset": n, "commit": True,
           "position": f"master.000006:{upd_pos}",
           "data": {**MAXWELL_INSERT["data"], "id": 2100, "comment": "updated"},
           "old": {"comment": "row 2100"}}
    lines.append(json.dumps(upd))
    return lines, upd_pos


def test_maxwell_transaction_over_2047_rows_fills_the_sequence() -> None:
    lines, upd_pos = _big_transaction(2500)
    out = FORMATS["maxwell-json"].decode(("\n".join(lines) + "\n").encode(),
                                         _schema(MAXWELL_E),
                                         settings=DecodeSettings(sequence_column="_seq"),
                                         threads=False).to_pylist()
    assert [r["_error"] for r in out] == [None] * 2501
    by_line = {r["_pos_line"]: r for r in out}
    # by hand: row i is in the event ending at 800911 + 1000 * ((i - 1) // 100), xoffset i - 1
    # (capped at 2047: the rows of one event past row 2047 share the value)
    assert by_line[1]["_seq"] == _mysql_seq(6, 800911, 0)
    assert by_line[2048]["_seq"] == _mysql_seq(6, 800911 + 20000, 2047)
    assert by_line[2100]["_seq"] == _mysql_seq(6, 800911 + 20000, 2047)
    assert by_line[2101]["_seq"] == _mysql_seq(6, 800911 + 21000, 2047)
    assert (by_line[2501]["_kind"], by_line[2501]["_seq"]) == ("+U", _mysql_seq(6, upd_pos,
                                                                                  2047))
    # the exact order is the slots' (file, pos, xoffset)
    assert [(r["_pos_s0"], r["_pos_n1"], r["_pos_n2"]) for r in out[2098:2101]] == [
        ("master.000006", 820911, 2098), ("master.000006", 820911, 2099),
        ("master.000006", 821911, 2100)]
    seqs = [r["_seq"] for r in out]
    assert seqs == sorted(seqs)


@pytest.mark.spark
def test_job_cli_lands_a_maxwell_transaction_over_2047_rows(
        spark: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from pipelines.jobs.cdc_ingest import main

    lines, upd_pos = _big_transaction(2500)
    # the update first in the landing (a later file of the batch holds the inserts): the
    # sequence, not the arrival, decides
    d = tmp_path / "landing" / "batch-000001"
    d.mkdir(parents=True)
    (d / "a.jsonl").write_text(lines[-1] + "\n")
    (d / "b.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    wh = tmp_path / "wh"
    FileSystemCatalog(str(wh)).create_table("test.e", Schema.of(
        MAXWELL_E, primary_keys=["id"], options={"bucket": "2", "sequence.field": "_seq"}))
    capsys.readouterr()
    rc = main(["--warehouse", str(wh), "--table", "test.e",
               "--landing", str(tmp_path / "landing"), "--format", "maxwell-json"])
    out = capsys.readouterr()
    assert rc == 0, out.err[-3000:]
    report = json.loads(out.out.strip().splitlines()[-1])
    assert (report["events"], report["valid"]) == (2501, 2501)
    rows: dict[int, dict[str, Any]] = {
        r["id"]: r for r in FileSystemCatalog(str(wh)).get_table("test.e").to_arrow().to_pylist()}
    assert sorted(rows) == list(range(1, 2501))
    assert (rows[2100]["comment"], rows[2100]["_seq"]) == ("updated",
                                                           _mysql_seq(6, upd_pos, 2047))
    assert (rows[2099]["comment"], rows[2099]["_seq"]) == ("row 2099",
                                                           _mysql_seq(6, 820911, 2047))
    assert (rows[7]["comment"], rows[7]["_seq"]) == ("row 7", _mysql_seq(6, 800911, 6))


# ---------------------------------------------------------------------------- GoldenGate

OGG_LINES = (CORPUS / "ogg" / "flink_inventory.jsonl").read_text().splitlines()


def _ogg(pos: int, op: str, **images: dict[str, Any]) -> str:
    head = json.loads(OGG_LINES[0])
    ev = {"table": head["table"], "pos": f"{pos:023d}", "op_type": op, **images}
    return json.dumps(ev)


def _compressed_feed() -> list[str]:
    """The corpus' inserts of 101 and 102 (lines 1-2), then compressed updates: 101's
    weight (a full ``before``); 101's description set to NULL with a ``before`` of the key
    and weight only (``name`` in neither image: refused); 102's name changed to a text that
    holds ``"weight":`` (not a key); 102's weight with no ``before`` (refused)."""
    scooter = json.loads(OGG_LINES[0])["after"]
    return [OGG_LINES[0], OGG_LINES[1],
            _ogg(150, "U", before=scooter, after={"id": 101, "weight": 5.5}),
            _ogg(151, "U", before={"id": 101, "weight": 5.5},
                 after={"id": 101, "description": None}),
            _ogg(152, "U", before={"id": 102, "name": "car battery"},
                 after={"id": 102, "name": 'x "weight": 1'}),
            _ogg(153, "U", after={"id": 102, "weight": 7.25})]


def test_ogg_compressed_updates_merge_before_and_refuse_by_name() -> None:
    data = ("\n".join(_compressed_feed()) + "\n").encode()
    out = FORMATS["ogg-json"].decode(data, _schema(PRODUCTS), threads=False).to_pylist()
    got = [(r["_pos_line"], r["_kind"], r["id"], r["name"], r["description"], r["weight"],
            r["_error"]) for r in out]
    assert got == [
        (1, "+I", 101, "scooter", "Small 2-wheel scooter", 3.140000104904175, None),
        (2, "+I", 102, "car battery", "12V car battery", 8.100000381469727, None),
        # by hand: name and description from before, weight from after
        (3, "+U", 101, "scooter", "Small 2-wheel scooter", 5.5, None),
        (4, None, None, None, None, None, NO_VALUE + "name"),
        # description and weight in neither image of line 5 (only the key and name)
        (5, None, None, None, None, None, NO_VALUE + "description, weight"),
        (6, None, None, None, None, None, NO_VALUE + "name, description")]
    # a sequence column (filled from pos) is no column the source sends: not asked for
    out = FORMATS["ogg-json"].decode(data, _schema([*PRODUCTS, ("_seq", "BIGINT")]),
                                     settings=DecodeSettings(sequence_column="_seq"),
                                     threads=False).to_pylist()
    assert [(r["_pos_line"], r["_seq"], r["weight"]) for r in out if r["_error"] is None] == [
        (1, 143, 3.140000104904175), (2, 144, 8.100000381469727), (3, 150, 5.5)]


@pytest.mark.spark
def test_ogg_compressed_updates_agree_with_the_reference(spark: Any, tmp_path: Path) -> None:
    """The Spark SQL reference merges and refuses GoldenGate's compressed updates as the fast
    path does (the same rows, reasons and positions)."""
    from tests.pipelines.cdcfmtref import spark_sql_rows

    text = "\n".join(_compressed_feed()) + "\n"
    schema = _schema(PRODUCTS)
    (by_sql,) = spark_sql_rows(spark, [("ogg-json", text)], schema, tmp_path)
    ours = FORMATS["ogg-json"].decode(text.encode(), schema, file_index=0,
                                      threads=False).to_pylist()
    cols = [*schema.field_names, "_kind", "_error", "_event", "_pos_line",
            *[f"_pos_{k}{i}" for i in range(3) for k in "ns"]]

    def canon(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return sorted((tuple(r[c] for c in cols) for r in rows), key=repr)

    assert canon(ours) == canon(by_sql)
    assert [r["_error"] for r in sorted(by_sql, key=lambda r: r["_pos_line"])] == [
        None, None, None, NO_VALUE + "name", NO_VALUE + "description, weight",
        NO_VALUE + "name, description"]


def test_ogg_full_updates_are_unchanged_by_the_merge() -> None:
    # the corpus' updates hold every column: rows as before the merge existed
    out = FORMATS["ogg-json"].decode((CORPUS / "ogg" / "flink_inventory.jsonl").read_bytes(),
                                     _schema(PRODUCTS), threads=False).to_pylist()
    assert all(r["_error"] is None for r in out)
    upd = next(r for r in out if r["id"] == 106 and r["_kind"] == "+U")
    assert (upd["description"], upd["weight"]) == ("18oz carpenter hammer", 1.0)


@pytest.mark.spark
def test_job_cli_lands_ogg_compressed_updates(spark: Any, capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    from pipelines.jobs.cdc_ingest import main

    d = tmp_path / "landing" / "batch-000001"
    d.mkdir(parents=True)
    (d / "ogg.jsonl").write_text("\n".join(_compressed_feed()[:3]) + "\n")
    wh = tmp_path / "wh"
    FileSystemCatalog(str(wh)).create_table("OGG.TBL_TEST", Schema.of(
        PRODUCTS, primary_keys=["id"], options={"bucket": "2"}))
    capsys.readouterr()
    rc = main(["--warehouse", str(wh), "--table", "OGG.TBL_TEST",
               "--landing", str(tmp_path / "landing"), "--format", "ogg-json"])
    assert rc == 0, capsys.readouterr().err[-3000:]
    rows = sorted(FileSystemCatalog(str(wh)).get_table("OGG.TBL_TEST").to_arrow().to_pylist(),
                  key=lambda r: r["id"])
    assert rows == [
        {"id": 101, "name": "scooter", "description": "Small 2-wheel scooter", "weight": 5.5},
        {"id": 102, "name": "car battery", "description": "12V car battery",
         "weight": 8.100000381469727}]
