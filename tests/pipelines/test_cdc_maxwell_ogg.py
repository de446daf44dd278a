"""The open items of the Maxwell and GoldenGate formats: Maxwell transactions of more than
2,047 rows with a sequence column (``output_binlog_position``), from the Maxwell docs' sample
events (``cdc_corpus/maxwell/docs_position.jsonl``); expected rows by hand; through the
job's CLI in a subprocess."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.schema_builder import Schema
from pipelines.cdc.formats import FORMATS
from pipelines.cdc.settings import DecodeSettings
from tests.pipelines.test_cdc_formats import MAXWELL_E, _mysql_seq, _schema
from tests.pipelines.test_named_input_errors import _run

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
def test_job_cli_lands_a_maxwell_transaction_over_2047_rows(tmp_path: Path) -> None:
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
    p = _run([sys.executable, "-m", "pipelines.jobs.cdc_ingest", "--warehouse", str(wh),
              "--table", "test.e", "--landing", str(tmp_path / "landing"),
              "--format", "maxwell-json"])
    assert p.returncode == 0, p.stderr[-3000:]
    report = json.loads(p.stdout.strip().splitlines()[-1])
    assert (report["events"], report["valid"]) == (2501, 2501)
    rows: dict[int, dict[str, Any]] = {
        r["id"]: r for r in FileSystemCatalog(str(wh)).get_table("test.e").to_arrow().to_pylist()}
    assert sorted(rows) == list(range(1, 2501))
    assert (rows[2100]["comment"], rows[2100]["_seq"]) == ("updated",
                                                           _mysql_seq(6, upd_pos, 2047))
    assert (rows[2099]["comment"], rows[2099]["_seq"]) == ("row 2099",
                                                           _mysql_seq(6, 820911, 2047))
    assert (rows[7]["comment"], rows[7]["_seq"]) == ("row 7", _mysql_seq(6, 800911, 6))
