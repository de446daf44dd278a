"""Database sync (issue 30, scope 2): one landing of change events of many tables, one Paimon
table each, created from their events, one commit per table per batch, exactly once.

Inputs: ``cdc_corpus/database/`` (canal flat messages of the MySQL ``inventory`` tutorial
database, in the shape of apache/paimon's ``kafka/canal/database`` test resources: see its
``SOURCES.md``), maxwell and Debezium lines written here in their tools' published shapes.
Expected rows are written by hand.
"""

from __future__ import annotations

import ctypes
import datetime
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import ConfigError
from paimon_core.table import FileStoreTable
from pipelines.cdc.database import (
    CreateOptions,
    DatabaseOptions,
    discover_tables,
    sync_database,
)
from pipelines.cdc.database.create import mysql_type
from pipelines.cdc.database.staging import line_tables, plain_lines, unrouted_reasons
from pipelines.cdc.ingest import CdcOptions
from pipelines.cdc.lines import split_lines
from pipelines.config import CatalogSettings
from pipelines.session import source_root

CORPUS = Path(__file__).parent / "cdc_corpus" / "database"

PRODUCTS_1 = [(102, "car battery", "12V car battery", 8.5)]
CUSTOMERS_1 = [(1001, "Sally", "Thomas", "sally@example.com"),
               (1002, "George", "Bailey", "gbailey@foobar.com")]
ORDERS_1 = [(10001, datetime.date(2016, 1, 16), 1001, 1, 102),
            (10002, datetime.date(2016, 1, 17), 1002, 2, 101)]


def _land(landing: Path, batch: int, src: Path | list[str]) -> None:
    landing.mkdir(parents=True, exist_ok=True)
    target = landing / f"batch-{batch:06d}.jsonl"
    if isinstance(src, Path):
        shutil.copy(src, target)
    else:
        target.write_text("\n".join(src) + "\n")


def _table(wh: Path, name: str) -> FileStoreTable:
    return FileSystemCatalog(str(wh)).get_table(name)


def _rows(t: FileStoreTable) -> list[tuple[Any, ...]]:
    cols = t.schema.field_names
    return sorted(tuple(r[c] for c in cols) for r in t.to_arrow().to_pylist())


def _snapshots(t: FileStoreTable) -> list[tuple[str, int]]:
    return [(s.commit_user, s.commit_identifier) for s in t.snapshot_manager.snapshots()]


def _canal(**kw: Any) -> DatabaseOptions:
    return DatabaseOptions(CdcOptions(format="canal-json"), **kw)


# ---------------------------------------------------------------------------- no Spark


def test_mysql_types_and_type_mappings() -> None:
    assert [mysql_type(t) for t in ("INT(11)", "int(10) unsigned", "tinyint(1)", "TINYINT(4)",
                                    "bigint(20) unsigned", "decimal(10,2)", "VARCHAR(255)",
                                    "datetime(3)", "longtext", "json", "bit(1)")] == [
        "INT", "BIGINT", "BOOLEAN", "TINYINT", "DECIMAL(20, 0)", "DECIMAL(10, 2)",
        "VARCHAR(255)", "TIMESTAMP(3)", "STRING", "STRING", "BOOLEAN"]
    assert mysql_type("tinyint(1)", ["tinyint1-not-bool"]) == "TINYINT"
    assert mysql_type("char(3)", ["char-to-string"]) == "STRING"
    assert mysql_type("longtext", ["longtext-to-bytes"]) == "BYTES"
    assert mysql_type("datetime(3)", ["to-string"]) == "STRING"
    assert mysql_type("bigint unsigned", ["bigint-unsigned-to-bigint"]) == "BIGINT"
    with pytest.raises(ConfigError, match="decimal-no-change"):
        CreateOptions(type_mapping=("decimal-no-change",))
    with pytest.raises(ConfigError, match="'op_time' is not supported"):
        CreateOptions(metadata_columns=("database_name", "op_time"))
    with pytest.raises(ConfigError, match="including-tables"):
        DatabaseOptions(including_tables="orders(")


def test_line_tables_names_every_line_or_says_why_not() -> None:
    big = "x" * (3 << 20)  # longer than the JSON reader's default block
    lines = pa.array([
        _debezium("customers", "c", {"id": 1, "note": big}, 154),
        "null",  # a Kafka tombstone
        '{"payload": {"op": "c"',  # cut off
        _debezium("orders", "c", {"id": 2}, 200),
        json.dumps({"op": "c", "after": {"id": 3}}),  # written by hand: no source
    ])
    db, tbl, bad = line_tables(lines, "debezium-json")
    assert list(zip(db.to_pylist(), tbl.to_pylist())) == [
        ("inventory", "customers"), (None, None), (None, None), ("inventory", "orders"),
        (None, None)]
    rows = np.array([1, 2, 4])
    assert unrouted_reasons(lines, rows, bad) == ["tombstone", "malformed JSON",
                                                  "event names no table"]


def test_plain_ranges_are_routed_as_views_of_their_bytes() -> None:
    text = (CORPUS / "canal_inventory_1.jsonl").read_bytes()
    plain = plain_lines(text, "canal-json")
    assert plain is not None
    with_newlines, db, tbl = plain
    assert with_newlines.to_pylist() == [x + "\n" for x in split_lines(text).to_pylist()]
    assert set(db.to_pylist()) == {"inventory"}
    assert tbl.to_pylist() == ["products", "customers", "orders", "products", "customers",
                               "customers", "orders", "products", "addresses"]
    # a tombstone parses as an event naming no table (as line_tables has it, then reasoned
    # by unrouted_reasons)
    tomb = plain_lines(text + b"null\n", "canal-json")
    assert tomb is not None and tomb[2].to_pylist()[-2:] == ["addresses", None]
    # any other range: split and parsed line by line (line_tables)
    for other in (text + b"\n", text.replace(b"\n", b"\r\n"), text[:-1],
                  text + b"\xff\n", b'{"database": "inventory", "table": "x"\n'):
        assert plain_lines(other, "canal-json") is None, other[-40:]


def test_discover_tables_reads_only_names(tmp_path: Path) -> None:
    _land(tmp_path, 1, CORPUS / "canal_inventory_1.jsonl")
    _land(tmp_path, 2, CORPUS / "canal_inventory_2.jsonl")
    found = discover_tables(str(tmp_path), "canal-json")
    assert [t.name for t in found] == ["inventory.addresses", "inventory.customers",
                                      "inventory.orders", "inventory.products"]


def test_job_refuses_an_unknown_type_mapping_before_spark(tmp_path: Path) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "pipelines.jobs.cdc_sync_database", "--warehouse",
         str(tmp_path / "wh"), "--database", "ods", "--landing", str(tmp_path),
         "--format", "canal-json", "--type-mapping", "to-string,decimal-no-change"],
        capture_output=True, text=True, timeout=120, check=False, env=_env())
    assert p.returncode == 1
    assert "ConfigError" in p.stderr and "'decimal-no-change'" in p.stderr


# ---------------------------------------------------------------------------- Spark

spark_only = pytest.mark.spark


@spark_only
@pytest.mark.parametrize("local_bytes", [64 << 20, 0], ids=["driver", "spark-jobs"])
def test_three_canal_tables_land_each_exactly(spark: Any, tmp_path: Path,
                                              local_bytes: int) -> None:
    landing, wh = tmp_path / "landing", tmp_path / "wh"
    _land(landing, 1, CORPUS / "canal_inventory_1.jsonl")
    tracker = spark.sparkContext.statusTracker()
    jobs = set(tracker.getJobIdsForGroup())
    (r,) = sync_database(spark, CatalogSettings(str(wh)), "ods", str(landing),
                         _canal(local_bytes=local_bytes))
    # small tables are written on the driver: the routing pass is the batch's one Spark job;
    # with local_bytes=0 each of the three tables is written by Spark jobs of its own
    ran = len(set(tracker.getJobIdsForGroup()) - jobs)
    assert ran == 1 if local_bytes else ran >= 4, ran
    by = {t.source: t for t in r.tables}
    assert sorted(by) == ["inventory.addresses", "inventory.customers", "inventory.orders",
                          "inventory.products"]
    assert [t.created for t in r.tables] == [False, True, True, True]
    # the CREATE of addresses is its only event: no row, no table yet (said, not failed)
    assert by["inventory.addresses"].error is None
    assert "not created yet" in (by["inventory.addresses"].note or "")
    assert not FileSystemCatalog(str(wh)).table_exists("ods.addresses")
    assert {s: (t.report.events, t.report.valid) for s, t in by.items()
            if t.report is not None} == {"inventory.products": (3, 3),
                                         "inventory.customers": (3, 3),
                                         "inventory.orders": (2, 2)}
    products = _table(wh, "ods.products")
    assert [f"{f.name} {f.type.sql()}" for f in products.schema.fields] == [
        "id INT NOT NULL", "name VARCHAR(255)", "description VARCHAR(512)", "weight FLOAT"]
    assert products.schema.primary_keys == ("id",)
    assert _rows(products) == PRODUCTS_1
    assert _rows(_table(wh, "ods.customers")) == CUSTOMERS_1
    orders = _table(wh, "ods.orders")
    assert orders.schema.primary_keys == ("order_number",)
    assert _rows(orders) == ORDERS_1
    for name in ("products", "customers", "orders"):
        assert _snapshots(_table(wh, f"ods.{name}")) == [(f"cdc-ods.{name}", 1)]
    # staging removed, the batch noted complete: a re-run asks the tables, routes nothing
    assert sorted(os.listdir(landing / "_staging")) == ["batch-000001.done.json"]
    (again,) = sync_database(spark, CatalogSettings(str(wh)), "ods", str(landing), _canal())
    assert again.skipped
    for name in ("products", "customers", "orders"):
        assert len(_snapshots(_table(wh, f"ods.{name}"))) == 1


@spark_only
def test_new_table_mid_feed_filters_prefix_suffix_and_unrouted(spark: Any,
                                                              tmp_path: Path) -> None:
    landing, wh = tmp_path / "landing", tmp_path / "wh"
    _land(landing, 1, CORPUS / "canal_inventory_1.jsonl")
    lines = (CORPUS / "canal_inventory_2.jsonl").read_text().splitlines()
    no_table = json.dumps({"data": [{"id": "1"}], "type": "INSERT", "isDdl": False})
    _land(landing, 2, [lines[0], '{"data": [{"id": "7"', *lines[1:], no_table])
    opts = _canal(including_tables=r"inventory\..*", excluding_tables="orders",
                  table_prefix="src_", table_suffix="_v1")
    r1, r2 = sync_database(spark, CatalogSettings(str(wh)), "ods", str(landing), opts)
    assert r1.excluded == {"inventory.orders": 2}
    assert sorted(FileSystemCatalog(str(wh)).list_tables("ods")) == [
        "src_addresses_v1", "src_customers_v1", "src_products_v1"]
    assert [(t.target, t.created) for t in r2.tables] == [
        ("ods.src_addresses_v1", True), ("ods.src_customers_v1", False),
        ("ods.src_products_v1", False)]
    assert r2.unrouted == {"malformed JSON": 1, "event names no table": 1}
    assert r2.quarantine is not None
    quarantined = [json.loads(x) for f in sorted(Path(r2.quarantine).iterdir())
                   for x in f.read_text().splitlines()]
    assert [(q["line"], q["reason"]) for q in quarantined] == [
        (2, "malformed JSON"), (6, "event names no table")]
    addresses = _table(wh, "ods.src_addresses_v1")
    assert [f"{f.name} {f.type.sql()}" for f in addresses.schema.fields] == [
        "id BIGINT NOT NULL", "customer_id INT", "street VARCHAR(255)", "city VARCHAR(255)",
        "is_default BOOLEAN"]
    assert _rows(addresses) == [(10, 1001, "3183 Moore Avenue", "Euless", True),
                                (11, 1002, "2389 Hidden Valley Road", "Harrisburg", True)]
    assert _rows(_table(wh, "ods.src_customers_v1")) == CUSTOMERS_1[:1]
    assert _rows(_table(wh, "ods.src_products_v1")) == [
        *PRODUCTS_1, (103, "12-pack drill bits",
                      "12-pack of drill bits with sizes ranging from #40 to #3",
                      pytest.approx(0.8))]
    assert _snapshots(_table(wh, "ods.src_products_v1")) == [("cdc-ods.src_products_v1", 1),
                                                            ("cdc-ods.src_products_v1", 2)]


def _maxwell(table: str, typ: str, data: dict[str, Any], pos: int,
             old: dict[str, Any] | None = None) -> str:
    ev = {"database": "shop", "table": table, "type": typ, "ts": 1477053217 + pos,
          "xid": 23396 + pos, "commit": True, "position": f"master.000006:{800000 + pos}",
          "server_id": 23042, "thread_id": 108, "primary_key_columns": ["id"], "data": data}
    if old is not None:
        ev["old"] = old
    return json.dumps(ev)


def _debezium(table: str, op: str, after: dict[str, Any] | None, pos: int,
              before: dict[str, Any] | None = None) -> str:
    return json.dumps({"schema": None, "payload": {
        "before": before, "after": after, "op": op, "ts_ms": 1465581902461 + pos,
        "source": {"version": "2.7.0.Final", "connector": "mysql", "name": "mysql-server-1",
                   "ts_ms": 1465581902300 + pos, "snapshot": False, "db": "inventory",
                   "table": table, "server_id": 223344, "file": "mysql-bin.000003",
                   "pos": pos, "row": 0}}})


@spark_only
def test_maxwell_and_debezium_multi_table(spark: Any, tmp_path: Path) -> None:
    landing, wh = tmp_path / "maxwell", tmp_path / "wh"
    _land(landing, 1, [
        _maxwell("e", "insert", {"id": 1, "m": 4.25, "comment": "I am a creature of light."}, 1),
        _maxwell("users", "insert", {"id": 7, "name": "ann"}, 2),
        _maxwell("e", "update", {"id": 1, "m": 5.5, "comment": "I am a creature of light."},
                 3, {"m": 4.25}),
        _maxwell("users", "delete", {"id": 7, "name": "ann"}, 4),
        _maxwell("users", "insert", {"id": 8, "name": "bob"}, 5)])
    settings = CatalogSettings(str(wh))
    meta = CreateOptions(metadata_columns=("database_name", "table_name"))
    (r,) = sync_database(spark, settings, "mx", str(landing),
                         DatabaseOptions(CdcOptions(format="maxwell-json"), create=meta))
    assert not r.failed
    e = _table(wh, "mx.e")
    assert [f"{f.name} {f.type.sql()}" for f in e.schema.fields] == [
        "id BIGINT NOT NULL", "m DOUBLE", "comment STRING", "database_name STRING",
        "table_name STRING"]
    assert _rows(e) == [(1, 5.5, "I am a creature of light.", "shop", "e")]
    assert _rows(_table(wh, "mx.users")) == [(8, "bob", "shop", "users")]

    landing = tmp_path / "debezium"
    _land(landing, 1, [
        _debezium("customers", "c", {"id": 1004, "email": "annek@noanswer.org"}, 154),
        _debezium("geom", "c", {"gid": 1, "wkt": "POINT(1 1)"}, 200),
        _debezium("orders", "c", {"id": 10001, "quantity": 1}, 300),
        _debezium("customers", "u", {"id": 1004, "email": "anne@example.com"}, 484),
        _debezium("orders", "d", None, 805, {"id": 10001, "quantity": 1})])
    opts = DatabaseOptions(CdcOptions(), create=CreateOptions(primary_keys=("id",)))
    (r,) = sync_database(spark, settings, "dbz", str(landing), opts)
    (failed,) = r.failed
    assert failed.target == "dbz.geom"
    assert "cannot create table dbz.geom" in (failed.error or "")
    assert "--primary-keys id are not all among its columns gid, wkt" in (failed.error or "")
    assert _rows(_table(wh, "dbz.customers")) == [(1004, "anne@example.com")]
    assert _rows(_table(wh, "dbz.orders")) == []
    assert len(_snapshots(_table(wh, "dbz.orders"))) == 1
    # the batch is not complete: its staging stays for the re-run
    assert (landing / "_staging" / "batch-000001").is_dir()


# ---------------------------------------------------------------------------- kill

#: the job, SIGKILLed right after the first table's batch committed
KILL_AFTER_FIRST_TABLE = """
import os, signal, sys
import pipelines.cdc.database.sync as sync
real = sync.ingest_batch
def ingest_batch(*args, **kwargs):
    report = real(*args, **kwargs)
    if report.snapshot_ids:
        os.kill(os.getpid(), signal.SIGKILL)
    return report
sync.ingest_batch = ingest_batch
from pipelines.jobs.runner import run_job_main
run_job_main("pipelines.jobs.cdc_sync_database")
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [source_root(), *filter(None, [os.environ.get("PYTHONPATH")])])}


def _job(head: list[str], tmp: Path, extra: Sequence[str] = (),
         preexec: Callable[[], None] | None = None) -> subprocess.CompletedProcess[str]:
    argv = ["--warehouse", str(tmp / "wh"), "--database", "ods", "--landing",
            str(tmp / "landing"), "--format", "canal-json", "--master", "local[2]", *extra]
    return subprocess.run([sys.executable, *head, *argv], env=_env(), capture_output=True,
                          text=True, timeout=900, check=False, cwd=tmp, preexec_fn=preexec)


def _without_root_override() -> None:
    """In the child before exec: root's power to write where the mode forbids
    (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) dropped from the bounding set, so a chmod-ed
    read-only landing is read-only for the job (a no-op for other users)."""
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
            if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@spark_only
@pytest.mark.slow  # two runs of the job: the refused one before its JVM, the other with one
def test_read_only_landing_needs_and_takes_a_staging_dir(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    _land(landing, 1, CORPUS / "canal_inventory_1.jsonl")
    before = sorted((p.relative_to(landing), p.read_bytes()) for p in landing.rglob("*"))
    for p in [landing, *landing.rglob("*")]:
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        refused = _job(["-m", "pipelines.jobs.cdc_sync_database"], tmp_path,
                       preexec=_without_root_override)
        assert refused.returncode == 1, refused.stderr[-3000:]
        (line,) = [x for x in refused.stderr.splitlines() if "StorageError" in x]
        assert line.startswith("cdc_sync_database: StorageError: storage error on "
                               f"{landing / '_staging'}: the database sync cannot write its "
                               "staging here (permission denied: "), line
        assert line.endswith("; a read-only landing needs a staging location of its own "
                             "(--staging-dir)"), line
        assert not (tmp_path / "wh").exists()  # refused before any work
        assert "SparkContext" not in refused.stderr and "WARN" not in refused.stderr  # no JVM

        staging = tmp_path / "staging"
        synced = _job(["-m", "pipelines.jobs.cdc_ingest"], tmp_path,  # --database: the sync
                      ["--staging-dir", str(staging)], preexec=_without_root_override)
        assert synced.returncode == 0, synced.stderr[-3000:]
    finally:
        for p in [landing, *landing.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
    wh = tmp_path / "wh"
    for name, rows in (("products", PRODUCTS_1), ("customers", CUSTOMERS_1),
                       ("orders", ORDERS_1)):
        assert _rows(_table(wh, f"ods.{name}")) == rows
    assert sorted((p.relative_to(landing), p.read_bytes())
                  for p in landing.rglob("*")) == before
    # the batch noted done in the staging dir (its routed lines gone with the commits)
    assert sorted(p.name for p in staging.iterdir()) == ["batch-000001.done.json"]


@spark_only
@pytest.mark.slow  # two runs of the job: two JVM start-ups
def test_kill_between_two_tables_then_rerun_commits_each_table_once(tmp_path: Path) -> None:
    _land(tmp_path / "landing", 1, CORPUS / "canal_inventory_1.jsonl")
    killed = _job(["-c", KILL_AFTER_FIRST_TABLE], tmp_path)
    assert killed.returncode == -9, killed.stderr[-3000:]
    wh = tmp_path / "wh"
    cat = FileSystemCatalog(str(wh))
    # the tables go by source name: customers committed, orders and products not yet
    assert _snapshots(_table(wh, "ods.customers")) == [("cdc-ods.customers", 1)]
    assert not cat.table_exists("ods.orders") and not cat.table_exists("ods.products")
    assert (tmp_path / "landing" / "_staging" / "batch-000001" / "_routed.json").is_file()

    rerun = _job(["-m", "pipelines.jobs.cdc_ingest"], tmp_path)  # --database: the same job
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    (report,) = [json.loads(x) for x in rerun.stdout.splitlines() if x.startswith("{")]
    done = {t["target"]: t["report"]["skipped"] for t in report["tables"] if t["report"]}
    assert done == {"ods.customers": True, "ods.orders": False, "ods.products": False}
    for name, rows in (("products", PRODUCTS_1), ("customers", CUSTOMERS_1),
                       ("orders", ORDERS_1)):
        t = _table(wh, f"ods.{name}")
        assert _snapshots(t) == [(f"cdc-ods.{name}", 1)]
        assert _rows(t) == rows
    assert not (tmp_path / "landing" / "_staging" / "batch-000001").exists()
