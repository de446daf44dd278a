"""CDC ingestion end to end: a generated change stream (inserts, updates, deletes, events out
of order within and across batches, duplicates, malformed lines, a new column) -> the table
equals the model state; re-runs are exactly-once; Java 0.9 reads the same rows; S3 variant."""

from __future__ import annotations

import base64
import contextlib
import datetime
import decimal
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from paimon_core.bucket import bucket_ids
from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.canonical import canonical_lines
from paimon_core.fsck import fsck
from paimon_core.schema_builder import Schema
from paimon_core.table import FileStoreTable
from pipelines.cdc.ingest import BatchReport, CdcOptions, ErrorRatioExceeded, ingest
from pipelines.cdc.settings import DecodeSettings
from pipelines.config import CatalogSettings
from pipelines.jobs.cdc_ingest import main
from tests.pipelines.cdcgen import SCHEMA, CdcStream, generate, model_rows, write_landing

pytestmark = pytest.mark.spark


@dataclass
class Ingested:
    wh: Path
    landing: Path
    stream: CdcStream
    reports: list[BatchReport]

    def table(self) -> FileStoreTable:
        return FileSystemCatalog(str(self.wh)).get_table("db.cdc")


def _table_rows(t: FileStoreTable) -> list[dict[str, Any]]:
    rows = sorted(t.to_arrow().to_pylist(), key=lambda r: (r["region"], r["id"]))
    for r in rows:
        ts = r["ts"].replace(tzinfo=datetime.UTC)
        r["ts"] = int(ts.timestamp() * 1000)
    return rows


@pytest.fixture(scope="module")
def ingested(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Ingested:
    root = tmp_path_factory.mktemp("cdc")
    stream = generate(seed=11, keys=120, events=1000, batches=4, evolve_from_batch=2)
    write_landing(stream, str(root / "landing"))
    reports = ingest(spark, CatalogSettings(str(root / "wh")), "db.cdc", str(root / "landing"),
                     schema=Schema.from_json(SCHEMA))
    return Ingested(root / "wh", root / "landing", stream, reports)


def test_table_equals_model(ingested: Ingested) -> None:
    reps = ingested.reports
    assert [r.batch for r in reps] == [1, 2, 3, 4] and not any(r.skipped for r in reps)
    assert [r.malformed for r in reps] == ingested.stream.malformed == [2, 2, 2, 2]
    for r in reps:
        assert r.reasons == {"bad value for id": 1, "malformed JSON": 1}
        assert r.valid + r.malformed == r.events
        q = Path(r.quarantine or "")
        lines = [json.loads(x) for p in sorted(q.glob("part-*.jsonl"))
                 for x in p.read_text().splitlines()]
        assert sorted(x["reason"] for x in lines) == ["bad value for id", "malformed JSON"]
        assert all(x["batch"] == r.batch and x["file"] and x["line"] >= 1 for x in lines)
        assert json.loads((q / "_summary.json").read_text())["malformed"] == 2
    # the new column arrives with batch 3 and is added before that batch is written
    assert [r.new_columns for r in reps] == [{}, {}, {"note": "STRING"}, {}]
    t = ingested.table()
    assert t.schema.field_names[-1] == "note"
    assert _table_rows(t) == [
        {**r, "amount": decimal.Decimal(r["amount"])} for r in model_rows(ingested.stream, True)
    ]
    snaps = list(t.snapshot_manager.snapshots())
    assert [(s.commit_user, s.commit_identifier) for s in snaps] == [
        ("cdc-db.cdc", b) for b in (1, 2, 3, 4)]
    assert snaps[-1].properties is not None and snaps[-1].properties["cdc.batch"] == "4"
    assert fsck(t).ok
    # every row sits in the bucket Paimon's own bucket function gives its key
    read = t.new_read_builder().new_read()
    for split in t.new_read_builder().new_scan().plan().splits:
        rows = read.read_split(split)
        expected = bucket_ids([rows.column("id")], [t.schema.field("id").type], 4)
        assert np.array_equal(expected, np.full(rows.num_rows, split.bucket))


def test_rerun_is_exactly_once(ingested: Ingested, capsys: pytest.CaptureFixture[str]) -> None:
    t = ingested.table()
    before = _table_rows(t)
    args = ["--warehouse", str(ingested.wh), "--table", "db.cdc",
            "--landing", str(ingested.landing)]
    assert main(args) == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(r["batch"], r["skipped"]) for r in out] == [(b, True) for b in (1, 2, 3, 4)]
    assert main([*args, "--batch", "2"]) == 0  # an already committed batch, explicitly
    assert json.loads(capsys.readouterr().out)["skipped"] is True
    assert t.snapshot_manager.latest_snapshot_id() == 4
    assert _table_rows(t) == before


@pytest.mark.oracle
def test_java_reads_the_same_rows(ingested: Ingested, tmp_path: Path) -> None:
    from tests.interop.oracle import ensure_ready, run_batches

    ensure_ready()
    out = tmp_path / "java.jsonl"
    cmd = {"cmd": "read", "warehouse": str(ingested.wh), "table": "db.cdc", "engine": "java",
           "output": str(out)}
    result = run_batches({"cdc": [cmd]}, tmp_path)["cdc"]
    assert not result.failures(), (result.failures(), result.stderr[-3000:])
    t = ingested.table()
    data = t.to_arrow()
    ours = canonical_lines(data, [t.schema.field(c) for c in data.column_names])
    java = out.read_text().splitlines()
    assert len(java) == len(ingested.stream.model) > 0
    assert java == ours


def _event(op: str, lsn: int, before: dict[str, Any] | None, after: dict[str, Any] | None,
           **extra: Any) -> str:
    return json.dumps({"op": op, "ts_ms": 1000 + lsn, "before": before, "after": after,
                       "source": {"lsn": lsn}, **extra})


DECODE_SCHEMA = Schema.of(
    [("k", "INT"), ("s", "STRING"), ("d", "DATE"), ("t", "TIMESTAMP(6)"),
     ("l", "TIMESTAMP(3) WITH LOCAL TIME ZONE"), ("b", "BYTES"), ("ok", "BOOLEAN"),
     ("tags", "ARRAY<STRING>"), ("m", "DECIMAL(5, 2)")],
    primary_keys=["k"], options={"bucket": "2"})
_BLOB = base64.b64encode(b"\x00\xff").decode()
_FULL = {"k": 1, "s": "x", "d": 19723, "t": 1704067200000, "l": "2024-01-01T10:00:00Z",
         "b": _BLOB, "ok": True, "tags": ["a", "b"], "m": "12.50"}
NO_POSITION = json.dumps({"op": "c", "after": {"k": 8}})
DECODE_LINES = [
    _event("c", 10, None, _FULL),
    _event("u", 30, {"k": 1}, {**_FULL, "k": 5, "s": "moved"}),  # key change: -D 1, +U 5
    _event("c", 20, None, {**_FULL, "k": 1, "s": "older"}),  # older than the move
    _event("r", 11, None, {"k": 2, "d": "2024-02-29", "t": "2024-01-01 12:30:00"}),
    _event("c", 12, None, {"k": 3}),
    _event("d", 13, {"k": 3}, None),  # insert then delete within the batch: -D wins
    json.dumps({"schema": {}, "payload": json.loads(_event("c", 14, None, {"k": 4}))}),
    "null",  # a Kafka tombstone: skipped, counted
    "",  # blank: not an event
    _event("c", 15, None, {"k": 6, "m": "1.005"}),  # does not fit DECIMAL(5, 2)
    _event("c", 16, None, {"k": 7, "ok": "maybe"}),
    _event("u", 17, None, None),
    _event("c", 18, None, {"s": "no key"}),
    NO_POSITION,  # no source position: arrival order (a batch mixing it is refused)
    _event("c", 19, None, {"k": "nine"}),  # a string where the key is an INT
    "{not json",
    _event("c", 21, None, {"k": 10, "m": 3.5, "new_col": 1}),  # JSON number decimal; new key
]


def test_arrow_decoder_agrees_with_spark_reference(spark: Any, tmp_path: Path) -> None:
    from pipelines.cdc.decode import decode_events
    from tests.pipelines.cdcref import compared_rows, spark_changes

    schema = DECODE_SCHEMA.to_table_schema(0)
    opts = {"position_fields": ["lsn"], "epoch_unit": "ms"}
    f = tmp_path / "events.jsonl"
    f.write_text("\n".join(DECODE_LINES) + "\n")
    ref = spark_changes(spark, f, schema, **opts)
    ours = decode_events(DECODE_LINES, schema, file_index=0,
                         settings=DecodeSettings.of(opts))
    assert set(ours.column("_pos_file").to_pylist()) == {0}  # the file's ordinal
    assert compared_rows(ours, schema) == compared_rows(ref, schema)
    assert ours.schema.field("k").type == ref.schema.field("k").type


def test_event_decoding_and_row_kinds(spark: Any, tmp_path: Path) -> None:
    schema = DECODE_SCHEMA
    # (the position-less event would make the batch one of two orders, refused:
    # tests/pipelines/test_cdc_routing.py)
    lines = [x for x in DECODE_LINES if x != NO_POSITION]
    landing = tmp_path / "landing" / "batch-000001.jsonl"
    landing.parent.mkdir()
    landing.write_text("\n".join(lines) + "\n")
    wh = str(tmp_path / "wh")
    FileSystemCatalog(wh).create_table("db.e", schema)
    (rep,) = ingest(spark, CatalogSettings(wh), "db.e", str(landing.parent),
                    CdcOptions(max_error_ratio=0.6), properties={"dagster.run-id": "r9"})
    assert rep.tombstones == 1 and rep.events == 15
    assert rep.reasons == {"bad value for k": 1, "bad value for m": 1, "bad value for ok": 1,
                           "malformed JSON": 1, "missing after": 1, "null key k": 1}
    assert rep.new_columns == {"new_col": "BIGINT"}
    assert rep.rows_written == 6  # keys 1 (-D), 2, 3 (-D), 4, 5, 10
    t = FileSystemCatalog(wh).get_table("db.e")
    props = t.latest_snapshot().properties  # type: ignore[union-attr]
    assert props is not None and props["dagster.run-id"] == "r9" and props["cdc.batch"] == "1"
    got = {r["k"]: r for r in t.to_arrow().to_pylist()}
    assert sorted(got) == [2, 4, 5, 10]
    assert got[10]["m"] == decimal.Decimal("3.50") and got[10]["new_col"] == 1
    five = got[5]
    assert five["s"] == "moved" and five["d"] == datetime.date(2024, 1, 1)
    assert five["t"] == datetime.datetime(2024, 1, 1)
    assert five["l"] == datetime.datetime(2024, 1, 1, 10, tzinfo=datetime.UTC)
    assert five["b"] == b"\x00\xff" and five["ok"] is True and five["tags"] == ["a", "b"]
    assert five["m"] == decimal.Decimal("12.50")
    assert got[2]["d"] == datetime.date(2024, 2, 29)
    assert got[2]["t"] == datetime.datetime(2024, 1, 1, 12, 30)
    assert got[4]["s"] is None


def test_error_ratio_exceeded_commits_nothing(spark: Any, tmp_path: Path) -> None:
    landing = tmp_path / "landing" / "batch-000001"
    landing.mkdir(parents=True)
    good = [_event("c", i, None, {"region": "emea", "id": i, "_seq": i}) for i in range(6)]
    (landing / "a.jsonl").write_text("\n".join([*good, "{broken", "[]", "1"]) + "\n")
    wh = tmp_path / "wh"
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    err = io.StringIO()
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["--warehouse", str(wh), "--table", "db.cdc", "--landing",
                   str(landing.parent), "--schema", str(tmp_path / "schema.json"),
                   "--max-error-ratio", "0.2"])
    assert rc == 3, err.getvalue()
    report = json.loads(out.getvalue())
    assert report["malformed"] == 3 and report["events"] == 9
    assert "ErrorRatio" in err.getvalue() or "malformed" in err.getvalue()
    t = FileSystemCatalog(str(wh)).get_table("db.cdc")
    assert t.latest_snapshot() is None
    q = landing.parent / "_quarantine" / "batch-000001"
    assert sum(len(p.read_text().splitlines()) for p in q.glob("part-*.jsonl")) == 3
    with pytest.raises(ErrorRatioExceeded):
        ingest(spark, CatalogSettings(str(wh)), "db.cdc", str(landing.parent),
               CdcOptions(max_error_ratio=0.2))


@pytest.mark.s3
def test_ingest_from_and_to_s3(spark: Any, s3_root: tuple[str, dict[str, str]]) -> None:
    from paimon_core.io.file_io import FileIO, join

    root, storage = s3_root
    stream = generate(seed=3, keys=40, events=240, batches=2, evolve_from_batch=None)
    fio = FileIO(root, storage)
    for b, lines in enumerate(stream.batches, 1):
        fio.write_bytes(join(root, "landing", f"batch-{b:06d}", "part-0.jsonl"),
                        ("\n".join(lines) + "\n").encode())
    settings = CatalogSettings(join(root, "wh"), storage)
    reports = ingest(spark, settings, "db.cdc", join(root, "landing"),
                     CdcOptions(max_error_ratio=0.05), schema=Schema.from_json(SCHEMA))
    assert [(r.batch, r.malformed) for r in reports] == [(1, 2), (2, 2)]
    assert fio.exists(join(root, "landing", "_quarantine", "batch-000001", "_summary.json"))
    t = settings.catalog().get_table("db.cdc")
    assert _table_rows(t) == [
        {**r, "amount": decimal.Decimal(r["amount"])} for r in model_rows(stream, False)]
