"""The CDC job into dynamic bucket tables (``bucket = -1``, the default of Paimon's own CDC
sync): the generated change stream lands as the model says, every key in exactly one bucket
whose HASH index holds its key hash, exactly once on re-runs, read by Java 0.9 (Java
continuing our index is proven in ``tests/interop/test_dynamic_bucket.py``); the connectors'
published examples for truncate and the TOAST placeholder (``tests/pipelines/cdc_corpus/``,
sources in its SOURCES.md) behave as with fixed buckets (the expected rows are the
hand-written ones of ``test_cdc_connectors``)."""

from __future__ import annotations

import datetime
import decimal
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core import UnsupportedError
from paimon_core.bucket import hash_codes
from paimon_core.catalog import FileSystemCatalog
from paimon_core.fsck import fsck
from paimon_core.schema_builder import Schema
from paimon_core.spec.hash_index import decode_hash_index
from paimon_core.table import FileStoreTable
from pipelines.cdc.ingest import BatchReport, CdcOptions, ingest
from pipelines.config import CatalogSettings
from pipelines.jobs.cdc_ingest import main
from tests.pipelines.cdcgen import (
    SCHEMA,
    CdcStream,
    corpus_landing,
    generate,
    model_rows,
    write_landing,
)

pytestmark = pytest.mark.spark

CORPUS = Path(__file__).parent / "cdc_corpus"
DYNAMIC = {"bucket": "-1", "dynamic-bucket.target-row-num": "8",
           "dynamic-bucket.assigner-parallelism": "3"}


def _dynamic_schema() -> Schema:
    spec = json.loads(json.dumps(SCHEMA))
    spec["options"] = {**spec["options"], **DYNAMIC}
    return Schema.from_json(spec)


def _rows(t: FileStoreTable) -> list[dict[str, Any]]:
    rows = sorted(t.to_arrow().to_pylist(), key=lambda r: (r["region"], r["id"]))
    for r in rows:
        r["ts"] = int(r["ts"].replace(tzinfo=datetime.UTC).timestamp() * 1000)
    return rows


def check_index(t: FileStoreTable) -> dict[tuple[str, int], int]:
    """Every live key in one bucket, its hash in that bucket's HASH index, no hash of a
    partition in two buckets' index files; returns (region, id) -> bucket."""
    snap = t.latest_snapshot()
    assert snap is not None and snap.index_manifest
    planner = t.new_planner(t.schema, None)
    index: dict[tuple[bytes, int], set[int]] = {}
    for e in planner.manifests.index_manifest(snap.index_manifest):
        path = Path(t.path) / "index" / e.file_name
        hashes = decode_hash_index(path.read_bytes(), str(path)).tolist()
        assert len(hashes) == e.row_count == len(set(hashes))
        index[(e.partition, e.bucket)] = set(hashes)
    by_part: dict[bytes, list[set[int]]] = {}
    for (p, _), hs in index.items():
        by_part.setdefault(p, []).append(hs)
    for sets in by_part.values():
        assert sum(len(s) for s in sets) == len(set().union(*sets)), "a hash in two buckets"
    where: dict[tuple[str, int], int] = {}
    rb = t.new_read_builder()
    id_type = t.schema.field("id").type
    for split in rb.new_scan().plan().splits:
        rows = rb.new_read().to_arrow([split])
        hashes = hash_codes([rows.column("id")], [id_type])
        assert set(hashes.tolist()) <= index[(split.partition, split.bucket)]
        for region, i in zip(rows.column("region").to_pylist(), rows.column("id").to_pylist()):
            assert (region, i) not in where, f"key {(region, i)} in two buckets"
            where[(region, i)] = split.bucket
    return where


@pytest.fixture(scope="module")
def ingested(spark: Any, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[Path, Path, CdcStream, list[BatchReport]]:
    root = tmp_path_factory.mktemp("cdcdyn")
    stream = generate(seed=23, keys=120, events=1000, batches=4, evolve_from_batch=2)
    write_landing(stream, str(root / "landing"))
    reports = ingest(spark, CatalogSettings(str(root / "wh")), "db.cdc", str(root / "landing"),
                     schema=_dynamic_schema())
    return root / "wh", root / "landing", stream, reports


def test_dynamic_table_equals_model(ingested: tuple[Path, Path, CdcStream, list[BatchReport]]
                                    ) -> None:
    wh, _, stream, reports = ingested
    assert [r.batch for r in reports] == [1, 2, 3, 4] and not any(r.skipped for r in reports)
    assert [r.malformed for r in reports] == stream.malformed
    t = FileSystemCatalog(str(wh)).get_table("db.cdc")
    assert t.schema.num_buckets == -1
    assert _rows(t) == [{**r, "amount": decimal.Decimal(r["amount"])}
                        for r in model_rows(stream, True)]
    where = check_index(t)
    # 120 keys over 4 regions, at most 8 per bucket, 3 channels each with its own buckets
    per_region: dict[str, set[int]] = {}
    for (region, _), b in where.items():
        per_region.setdefault(region, set()).add(b)
    assert all(len(bs) >= 3 for bs in per_region.values())
    assert fsck(t, deep=True).ok


def test_dynamic_rerun_is_exactly_once(
        ingested: tuple[Path, Path, CdcStream, list[BatchReport]],
        capsys: pytest.CaptureFixture[str]) -> None:
    wh, landing, _, _ = ingested
    t = FileSystemCatalog(str(wh)).get_table("db.cdc")
    before = _rows(t)
    assert main(["--warehouse", str(wh), "--table", "db.cdc", "--landing", str(landing)]) == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert all(r["skipped"] for r in out)
    assert _rows(t) == before and t.snapshot_manager.latest_snapshot_id() == 4


@pytest.mark.oracle
def test_java_reads_our_dynamic_table(
        ingested: tuple[Path, Path, CdcStream, list[BatchReport]], tmp_path: Path) -> None:
    from tests.interop.oracle import ensure_ready, run_batches

    wh, _, stream, _ = ingested
    copy = tmp_path / "wh"
    shutil.copytree(wh, copy)
    ensure_ready()
    out = tmp_path / "java.jsonl"
    result = run_batches({"cdcdyn": [{"cmd": "read", "warehouse": str(copy), "table": "db.cdc",
                                      "engine": "java", "output": str(out)}]}, tmp_path)["cdcdyn"]
    assert not result.failures(), result.stderr[-3000:]
    t = FileSystemCatalog(str(copy)).get_table("db.cdc")
    java = sorted((r["region"], r["id"], r["name"]) for r in
                  (json.loads(x) for x in out.read_text().splitlines()))
    assert java == sorted((r["region"], r["id"], r["name"]) for r in model_rows(stream, True))
    assert check_index(t)  # reading did not change anything


CUSTOMERS = [("id", "INT NOT NULL"), ("first_name", "STRING NOT NULL"),
             ("last_name", "STRING NOT NULL"), ("email", "STRING NOT NULL")]
ANNE = {"id": 1, "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}


def _run(spark: Any, tmp: Path, files: list[list[str]]) -> tuple[list[BatchReport],
                                                                 list[dict[str, Any]]]:
    landing = corpus_landing(tmp, files)
    wh = str(tmp / "wh")
    schema = Schema.of(CUSTOMERS, primary_keys=["id"], options={"bucket": "-1"})
    reports = ingest(spark, CatalogSettings(wh), "db.customers", str(landing), CdcOptions(),
                     schema=schema)
    t = FileSystemCatalog(wh).get_table("db.customers")
    assert fsck(t, deep=True).ok
    return reports, sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"])


def test_dynamic_truncate_and_toast(spark: Any, tmp_path: Path) -> None:
    # the truncate case of test_cdc_connectors: only id 3 is left; batch 2 lands in steps
    # (the changes before the truncate, the truncate as an OVERWRITE emptying the table and
    # its index, then id 3), and the last step's index holds only id 3's hash
    reports, rows = _run(spark, tmp_path / "t", [
        ["postgresql/partial_before.jsonl"],
        ["postgresql/after_truncate.jsonl", "postgresql/truncate.jsonl"]])
    assert [(r.truncates, r.malformed, r.valid) for r in reports] == [(0, 0, 2), (1, 0, 2)]
    assert rows == [{"id": 3, "first_name": "Edward", "last_name": "Walker",
                     "email": "ed@walker.com", "vip": None}]
    t = FileSystemCatalog(str(tmp_path / "t" / "wh")).get_table("db.customers")
    snaps = list(t.snapshot_manager.snapshots())
    assert [(s.commit_identifier, s.commit_kind.value, (s.properties or {}).get("commit.step"))
            for s in snaps][-3:] == [(2, "APPEND", "1/3"), (2, "OVERWRITE", "2/3"),
                                     (2, "APPEND", "3/3")]
    manifests = t.new_planner(t.schema, None).manifests
    emptied = snaps[-2]
    assert not emptied.index_manifest or manifests.index_manifest(emptied.index_manifest) == []
    snap = snaps[-1]
    assert snap.index_manifest
    entries = manifests.index_manifest(snap.index_manifest)
    three = hash_codes([pa.array([3], pa.int32())], [t.schema.field("id").type]).tolist()
    assert [decode_hash_index((Path(t.path) / "index" / e.file_name).read_bytes(), "")
            .tolist() for e in entries] == [three]
    # the TOAST placeholder takes the previous value from the table (written in batch 1)
    reports, rows = _run(spark, tmp_path / "toast", [["postgresql/toast_create.jsonl"],
                                                     ["postgresql/toast_update.jsonl"]])
    assert [r.malformed for r in reports] == [0, 0]
    assert rows == [{**ANNE, "first_name": "Anne Marie"}]


def test_lookup_tables_refused_with_the_option_named(spark: Any, tmp_path: Path) -> None:
    landing = tmp_path / "landing" / "batch-000001"
    landing.mkdir(parents=True)
    shutil.copy(CORPUS / "postgresql/toast_create.jsonl", landing / "part-0.jsonl")
    schema = Schema.of(CUSTOMERS, primary_keys=["id"],
                       options={"bucket": "-1", "merge-engine": "first-row"})
    with pytest.raises(UnsupportedError, match=r"first-row.*'bucket'"):
        ingest(spark, CatalogSettings(str(tmp_path / "wh")), "db.customers",
               str(tmp_path / "landing"), CdcOptions(), schema=schema)
