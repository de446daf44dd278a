"""Every command line of README.md's ``bash`` blocks runs as written, in a subprocess, on small
data (issue 13, item 4): the ``paimon`` tool, each Spark job's ``python -m`` form and the
``spark-submit`` form, with the environment the README shows (the virtual environment's
programs first on ``PATH``, as after ``. .venv/bin/activate``).

The commands are parsed out of README.md; each must have a scenario here (keyed by the
command's words, comments dropped), which prepares a small table / landing zone / input file,
runs the command through ``bash -c`` with only the placeholder paths substituted (``/data/wh``,
``/data/landing/...``, ``/exports/...``, the S3 endpoint, which becomes a moto_server on
loopback; relative names such as ``wh`` and ``schema.json`` are made in the command's working
directory), checks the exit code and verifies the effect. A README command without a scenario
fails the test, unless it is in :data:`NOT_RUN` with the reason; a scenario or exception
without its README command fails too.

Wall time: the ``paimon`` commands take about a second each; each Spark command starts a
Spark driver of its own (10-20 s on an idle 2-core machine), hence the ``slow`` marks.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
import json
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.consumer import Consumer, ConsumerManager
from paimon_core.errors import SchemaError
from paimon_core.fsck import fsck
from paimon_core.schema_builder import Schema
from paimon_core.spec.snapshot import CommitKind
from paimon_core.table import FileStoreTable
from tests.pipelines.connect_avro import envelope_file
from tests.readme_harness import (
    README,
    REPO,
    VENV_BIN,
    Shell,
    age_snapshots,
    arrow_rows,
    command_key,
    commit_rows,
    flags,
    fresh,
    kinds,
    latest_kind,
    live_files,
    make_table,
    norm,
    old_orphan,
    orders_rows,
    readme_commands,
    rows_of,
    sales_rows,
    schema_json,
    venv_env,
)

#: README commands this test does not run, with the reason.
NOT_RUN: dict[str, str] = {
    "make demo": "the demo (a CI job of its own) runs the whole Dagster story for minutes",
    "make ui": "a long-lived dagster dev server (tests/assets/test_ui.py runs dagster dev)",
    "make test": "the whole suite, of which this test is a part",
    ".venv/bin/python -m pipelines.connect start":
        "a long-lived Spark Connect server (a JVM) the user's runs share; "
        "tests/pipelines/test_connect_server.py runs the same command (two at once, idle stop)",
    ".venv/bin/python -m pipelines.connect stop": "stops the server of the line above",
    "make prod-demo": "the production topology's story for minutes; tests/prod/test_topology.py "
                      "runs the same story (scripts/prod_demo.py) in `make test-prod`",
    "make test-prod": "tests/prod, which .ci/run runs after `make test`",
    "export DAGSTER_HOME=~/dagster_home && mkdir -p $DAGSTER_HOME && cp dagster.yaml "
    "$DAGSTER_HOME/": "sets up a Dagster home in the user's home directory for dagster dev",
    "export PAIMON_WAREHOUSE=/data/warehouse PAIMON_LANDING=/data/landing":
        "the environment of the dagster dev line below",
    ".venv/bin/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000":
        "a long-lived UI server on a fixed port (tests/assets/test_ui.py runs dagster dev)",
    **{key: "a step of the dg project of the section 'Your own table in 10 lines of YAML', "
       "which tests/assets/test_components_project.py builds and runs" for key in (
        "mkdir -p my_lake/my_lake/defs/orders my_lake/my_lake/defs/order_flags "
        "my_lake/my_lake/defs/lake my_lake/my_lake/defs/maintenance",
        "cd my_lake",
        "dg check defs",
        "export DAGSTER_HOME=$PWD/dagster_home PAIMON_WAREHOUSE=$PWD/warehouse "
        "PAIMON_LANDING=$PWD/landing",
        "mkdir -p $DAGSTER_HOME && cp ../paimon-pipelines/dagster.yaml $DAGSTER_HOME/ && "
        "python -m assets.pools",
        "dg dev -p 3000",
    )},
}


# ------------------------------------------------------------------------------ paimon


def _orders(sh: Shell, commits: int) -> FileStoreTable:
    return make_table(sh.work / "wh", "db.orders", commits)


def incremental(sh: Shell, command: str) -> None:
    _orders(sh, 8)
    f = flags(command)
    lo, hi = int(f["--from"]), int(f["--to"])
    if f.get("--mode") == "between":  # merged per key: each key's last version in (lo, hi]
        want = kinds(orders_rows(hi))
    else:  # what a streaming reader sees, snapshot by snapshot
        want = kinds([r for s in range(lo + 1, hi + 1) for r in orders_rows(s)])
    assert norm(sh.json_lines(command)) == want


def stream_consumer(sh: Shell, command: str) -> None:
    t = _orders(sh, 8)
    consumer = flags(command)["--consumer-id"]
    out = sh.run(command).stdout.splitlines()
    headers = [x for x in out if x.startswith("#")]
    assert headers == (["# snapshot 8 APPEND full rows=8 next=9"] if "--headers" in command
                       else [])
    assert norm([json.loads(x) for x in out if not x.startswith("#")]) == kinds(
        orders_rows(8))
    stored = ConsumerManager(t.file_io, t.path).consumer(consumer)
    assert stored is not None and stored.next_snapshot == 9
    # the next run resumes after what this one printed: only the new snapshot's changes
    commit_rows(t, orders_rows(9), 9)
    assert norm(sh.json_lines(command)) == kinds(orders_rows(9))


def stream_follow(sh: Shell, command: str) -> None:
    t = _orders(sh, 8)
    start = int(flags(command)["--snapshot"])
    text, cwd = sh.prepare(command)
    proc = subprocess.Popen(["bash", "-c", text], cwd=cwd, env=sh.env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()

    def take(n: int) -> list[dict[str, Any]]:
        got: list[dict[str, Any]] = []
        while len(got) < n:
            line = lines.get(timeout=300)  # a hang guard, not a timing assertion
            assert line is not None, f"{text} exited ({proc.wait()}) after {got}"
            if not line.startswith("#"):
                got.append(json.loads(line))
        return norm(got)

    try:
        assert take(8 * (9 - start)) == kinds(
            [r for s in range(start, 9) for r in orders_rows(s)])
        commit_rows(t, orders_rows(9), 9)  # a snapshot committed while it follows
        assert take(8) == kinds(orders_rows(9))
        assert proc.poll() is None
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)


def create(sh: Shell, command: str) -> None:
    (sh.work / flags(command)["--schema"]).write_text(json.dumps(schema_json("region")))
    assert sh.json_lines(command) == [
        {"created": True, "op": "create", "schema_id": 0, "table": "db.orders"}]
    t = FileSystemCatalog(str(sh.work / "wh")).get_table("db.orders")
    assert t.schema.field_names == ["region", "order_id", "amount"]
    assert (list(t.schema.partition_keys), list(t.schema.primary_keys)) == (
        ["region"], ["region", "order_id"])


def write_kinds(sh: Shell, command: str) -> None:
    t = _orders(sh, 1)
    kind = flags(command)["--kind"]
    changes = [
        {"region": "emea", "order_id": 1, "amount": "99.50", kind: "+U"},
        {"region": "amer", "order_id": 2, "amount": None, kind: "-D"},
        {"region": "amer", "order_id": 9, "amount": "1.25", kind: "+I"},
        {"region": "emea", "order_id": 10, "amount": "3.00", kind: None},  # NULL kind: +I
    ]
    (sh.work / flags(command)["--input"]).write_text(
        "".join(json.dumps(r) + "\n" for r in changes))
    out = sh.json_lines(command)
    assert (out[0]["rows"], out[0]["snapshot"]) == (4, 2)
    want = [r for r in orders_rows(1) if (r["region"], r["order_id"]) != ("amer", 2)]
    want = [{**r, "amount": "99.50"} if (r["region"], r["order_id"]) == ("emea", 1) else r
            for r in want]
    want += [{k: v for k, v in r.items() if k != kind} for r in changes[2:]]
    assert rows_of(t) == norm(want)


def write_overwrite(sh: Shell, command: str) -> None:
    t = _orders(sh, 1)
    f = flags(command)
    region = f["--overwrite"].split("=", 1)[1]
    day = [{"region": region, "order_id": 7, "amount": "70.00"},
           {"region": region, "order_id": 8, "amount": "80.00"}]
    pq.write_table(arrow_rows(day), sh.work / f["--input"])
    assert sh.json_lines(command)[0]["snapshot"] == 2
    assert latest_kind(t) is CommitKind.OVERWRITE
    assert rows_of(t) == norm([r for r in orders_rows(1) if r["region"] != region] + day)


def read(sh: Shell, command: str) -> None:
    _orders(sh, 8)
    f = flags(command)
    assert f["--filter"] == "amount > 10"  # the expectation below
    want = [r for r in orders_rows(int(f["--snapshot"])) if decimal.Decimal(r["amount"]) > 10]
    assert 0 < len(want) < 8
    assert norm(sh.json_lines(command)) == want


def snapshots(sh: Shell, command: str) -> None:
    _orders(sh, 8)
    out = sh.json_lines(command)
    assert [(s["id"], s["commit_kind"], s["commit_user"], s["commit_identifier"]) for s in out] \
        == [(i, "APPEND", "prep", i) for i in range(1, 9)]


def describe(sh: Shell, command: str) -> None:
    _orders(sh, 8)
    d = json.loads(sh.run(command).stdout)
    assert [x["name"] for x in d["fields"]] == ["region", "order_id", "amount"]
    assert (d["latest_snapshot"], d["total_record_count"]) == (8, 64)


def alter(sh: Shell, command: str) -> None:
    t = _orders(sh, 2)
    assert sh.json_lines(command)[0]["schema_id"] == 1
    assert rows_of(t) == norm([{"region": r["region"], "order_id": r["order_id"],
                                "total": r["amount"], "channel": None}
                               for r in orders_rows(2)])


def alter_columns(sh: Shell, command: str) -> None:
    t = _orders(sh, 2)
    assert sh.json_lines(command)[0]["schema_id"] == 1
    s = fresh(t).schema
    assert s.field_names == ["region", "amount", "order_id"]
    assert s.field("amount").description == "order total"
    assert not s.field("amount").type.nullable
    assert rows_of(t) == orders_rows(2)
    with pytest.raises(SchemaError, match="amount"):  # NOT NULL from now on
        commit_rows(fresh(t), [{"region": "emea", "order_id": 9, "amount": None}], 3)


def tag_create(sh: Shell, command: str) -> None:
    t = _orders(sh, 3)
    name = shlex.split(command)[3]
    assert sh.json_lines(command) == [{"op": "tag-create", "snapshot": 3, "tag": name}]
    commit_rows(t, orders_rows(4), 4)
    assert rows_of(t, tag=name) == orders_rows(3) != rows_of(t)


def fsck_deep(sh: Shell, command: str) -> None:
    t = _orders(sh, 3)
    assert sh.json_lines(command)[0]["ok"] is True
    # "exit 1 if broken": a data file of the table goes missing
    victim = next(iter(live_files(t).values()))[0]
    next(Path(t.path).rglob(victim)).unlink()
    p = sh.run(command, expect_rc=1)
    assert json.loads(p.stdout.splitlines()[-1])["ok"] is False


def inspect_buckets(sh: Shell, command: str) -> None:
    # write-only: every commit leaves one level-0 file (one sorted run) in each bucket it hits
    t = _orders(sh, 3)
    out = sh.json_lines(command)
    live = live_files(t)
    assert sorted(r["file_count"] for r in out) == sorted(len(fs) for fs in live.values())
    assert all(r["sorted_runs"] == r["file_count"] == 3 and r["max_level"] == 0 for r in out)
    fresh(t).compact()  # full: one sorted run on the max level per bucket
    after = sh.json_lines(command)
    assert [r["bucket"] for r in after] == [r["bucket"] for r in out]
    assert all(r["sorted_runs"] == 1 and r["max_level"] == 5 for r in after)


def compact_picker(sh: Shell, command: str) -> None:
    # eight level-0 runs per bucket: the picker's trigger (5) and a full compaction agree
    t = _orders(sh, 8)
    before = live_files(t)
    out = sh.json_lines(command)
    assert out[0]["snapshot"] == 9 and latest_kind(t) is CommitKind.COMPACT
    after = live_files(t)
    assert after.keys() == before.keys()
    assert all(len(after[k]) < len(before[k]) for k in before)
    assert rows_of(t) == orders_rows(8) and fsck(fresh(t)).ok


def compact_one_bucket(sh: Shell, command: str) -> None:
    t = _orders(sh, 8)
    f = flags(command)
    part, bucket = f["--partition"], int(f["--bucket"])
    before = live_files(t)
    assert sh.json_lines(command)[0]["snapshot"] == 9
    assert latest_kind(t) is CommitKind.COMPACT
    after = live_files(t)
    changed = [k for k in before if after.get(k) != before[k]]
    assert len(changed) == 1 and changed[0][1] == bucket and len(after[changed[0]]) == 1
    assert (Path(t.path) / part / f"bucket-{bucket}" / after[changed[0]][0]).is_file()
    assert rows_of(t) == orders_rows(8) and fsck(fresh(t)).ok


def expire(sh: Shell, command: str) -> None:
    t = _orders(sh, 8)
    f = flags(command)
    if "--time-retained" in f:  # snapshots 1..6 are two hours old, 7 and 8 fresh
        assert (f["--retain-min"], f["--time-retained"]) == ("5", "30 min")
        age_snapshots(t, 6, 2 * 3600 * 1000)
        want = [1, 2, 3]  # 4..8: the five retain-min keeps
    else:  # all fresh, all after --older-than-ms: --retain-max forces the oldest out
        assert f["--retain-max"] == "3"
        want = [1, 2, 3, 4, 5]
    out = sh.json_lines(command)[0]
    assert (out["expired_ids"], out["earliest"]) == (want, want[-1] + 1)
    assert rows_of(t) == orders_rows(8) and fsck(fresh(t)).ok


def remove_orphans(sh: Shell, command: str) -> None:
    t = _orders(sh, 2)
    orphan = old_orphan(t, "region=emea")
    out = sh.json_lines(command)
    assert [(sh.work / x["path"]).resolve() for x in out[:-1]] == [orphan.resolve()]
    assert out[-1]["dry_run"] is ("--dry-run" in command) and out[-1]["files"] == 1
    assert orphan.exists() is ("--dry-run" in command)


def _consumers(sh: Shell, commits: int) -> tuple[FileStoreTable, ConsumerManager]:
    t = _orders(sh, commits)
    mgr = ConsumerManager(t.file_io, t.path)
    mgr.reset_consumer("etl", Consumer(next_snapshot=2))
    mgr.reset_consumer("audit", Consumer(next_snapshot=3))
    return t, mgr


def consumer_list(sh: Shell, command: str) -> None:
    _consumers(sh, 3)
    assert sh.json_lines(command) == [{"consumer": "audit", "next_snapshot": 3},
                                      {"consumer": "etl", "next_snapshot": 2}]


def consumer_reset(sh: Shell, command: str) -> None:
    n = int(flags(command)["--next-snapshot"])
    _, mgr = _consumers(sh, n - 1)  # the next snapshot to be committed is the furthest
    sh.run(command)
    assert mgr.consumers() == {"etl": n, "audit": 3}


def consumer_delete(sh: Shell, command: str) -> None:
    _, mgr = _consumers(sh, 3)
    sh.run(command)
    assert mgr.consumers() == {"audit": 3}


# ------------------------------------------------------------------------------ Spark jobs

CDC_SCHEMA = {
    "fields": [{"name": "order_id", "type": "BIGINT"}, {"name": "customer", "type": "STRING"},
               {"name": "amount", "type": "DECIMAL(12, 2)"}, {"name": "_seq", "type": "BIGINT"}],
    "primary_keys": ["order_id"],
    "options": {"bucket": "2", "sequence.field": "_seq"},
}


def _event(op: str, lsn: int, before: dict[str, Any] | None, after: dict[str, Any] | None
           ) -> str:
    return json.dumps({"op": op, "before": before, "after": after, "ts_ms": 1_704_067_200_000 + lsn,
                       "source": {"lsn": lsn}})


def _order(i: int, customer: str, amount: str) -> dict[str, Any]:
    return {"order_id": i, "customer": customer, "amount": amount}


#: two landing batches; an update of order 1 from before the last one arrives late
CDC_BATCHES = {
    "batch-000001/part-0.json": [
        _event("c", 1, None, _order(1, "ann", "10.50")),
        _event("c", 2, None, _order(2, "bob", "3.00")),
        _event("c", 3, None, _order(3, "cid", "7.25")),
        _event("u", 5, _order(1, "ann", "10.50"), _order(1, "ann", "12.00")),
    ],
    "batch-000002/part-0.json": [
        _event("d", 6, _order(2, "bob", "3.00"), None),
        _event("u", 4, _order(1, "ann", "10.50"), _order(1, "ann", "11.00")),  # late
        _event("u", 7, _order(3, "cid", "7.25"), _order(3, "cid", "8.75")),
        _event("c", 8, None, _order(4, "dan", "1.00")),
    ],
}


def cdc_ingest(sh: Shell, command: str) -> None:
    f = flags(command)
    landing = sh.prepare(f["--landing"])[0]
    if landing.startswith("s3://"):
        import boto3

        s3 = boto3.client("s3", endpoint_url=sh.s3(), region_name="us-east-1")
        bucket, prefix = landing.removeprefix("s3://").split("/", 1)
        if bucket not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
            s3.create_bucket(Bucket=bucket)
        for name, events in CDC_BATCHES.items():
            s3.put_object(Bucket=bucket, Key=f"{prefix}/{name}",
                          Body=("\n".join(events) + "\n").encode())
    else:
        for name, events in CDC_BATCHES.items():
            (Path(landing) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(landing) / name).write_text("\n".join(events) + "\n")
    if "--schema" in f:  # the job creates the table
        (sh.work / f["--schema"]).write_text(json.dumps(CDC_SCHEMA))
    else:
        FileSystemCatalog(sh.subst["/data/wh"]).create_table(f["--table"],
                                                             Schema.from_json(CDC_SCHEMA))
    reports = sh.json_lines(command)
    assert [(r["batch"], r["events"], r["valid"], r["malformed"], r["snapshot_ids"])
            for r in reports] == [(1, 4, 4, 0, [1]), (2, 4, 4, 0, [2])]
    t = FileSystemCatalog(sh.subst["/data/wh"]).get_table(f["--table"])
    assert norm([{k: v for k, v in r.items() if k != "_seq"} for r in rows_of(t)]) == norm(
        [_order(1, "ann", "12.00"), _order(3, "cid", "8.75"), _order(4, "dan", "1.00")])
    assert fsck(t).ok


#: the Flink inventory stream as Canal emits it (tests/pipelines/cdc_corpus/canal/SOURCES.md)
CANAL_INVENTORY = REPO / "tests/pipelines/cdc_corpus/canal/flink_inventory.jsonl"


def cdc_ingest_format(sh: Shell, command: str) -> None:
    f = flags(command)
    assert f["--format"] == "canal-json"
    landing = Path(sh.prepare(f["--landing"])[0])
    (landing / "batch-000001").mkdir(parents=True)
    shutil.copy(CANAL_INVENTORY, landing / "batch-000001" / "part-0.json")
    FileSystemCatalog(sh.subst["/data/wh"]).create_table(f["--table"], Schema.of(
        [("id", "INT NOT NULL"), ("name", "STRING"), ("description", "STRING"),
         ("weight", "DOUBLE")], primary_keys=["id"], options={"bucket": "2"}))
    (report,) = sh.json_lines(command)
    # the inventory's events name table products2; its last event, a CREATE of user02, is
    # another table's
    assert f["--source-table"] == "products2"
    assert (report["events"], report["valid"], report["other_tables"], report["ddl"],
            report["malformed"]) == (11, 10, 1, 0, 0)
    t = FileSystemCatalog(sh.subst["/data/wh"]).get_table(f["--table"])
    assert sorted(r["id"] for r in rows_of(t)) == [101, *range(104, 111)]
    assert fsck(t).ok


#: the MySQL inventory database as canal emits it, batch 1 and 2
#: (tests/pipelines/cdc_corpus/database/SOURCES.md)
CANAL_DATABASE = [REPO / f"tests/pipelines/cdc_corpus/database/canal_inventory_{n}.jsonl"
                  for n in (1, 2)]


def _land_database(sh: Shell, command: str, batches: int) -> str:
    landing = Path(sh.prepare(flags(command)["--landing"])[0])
    landing.mkdir(parents=True)
    for n, src in enumerate(CANAL_DATABASE[:batches], 1):
        shutil.copy(src, landing / f"batch-{n:06d}.jsonl")
    return sh.subst["/data/wh"]


def cdc_sync_database(sh: Shell, command: str) -> None:
    wh = _land_database(sh, command, 2)
    r1, r2 = sh.json_lines(command)
    assert r1["excluded"] == {"inventory.orders": 2} and r2["excluded"] == {}
    assert [(t["target"], t["created"]) for t in r2["tables"]] == [
        ("ods.src_addresses", True), ("ods.src_customers", False),
        ("ods.src_products", False)]
    cat = FileSystemCatalog(wh)
    assert cat.list_tables("ods") == ["src_addresses", "src_customers", "src_products"]
    products = cat.get_table("ods.src_products")
    assert products.schema.options == {"bucket": "2"}
    rows = products.to_arrow().to_pylist()  # (op_ts: datetimes, not through rows_of's JSON)
    assert sorted((r["id"], r["weight"] == 8.5, r["database_name"], r["table_name"])
                  for r in rows) == [(102, True, "inventory", "products"),
                                     (103, False, "inventory", "products")]
    # op_ts: the time of each row's last change, canal's es (1589373519000, 1589373526000)
    utc = datetime.UTC
    assert {r["id"]: r["op_ts"] for r in rows} == {
        102: datetime.datetime(2020, 5, 13, 12, 38, 39, tzinfo=utc),
        103: datetime.datetime(2020, 5, 13, 12, 38, 46, tzinfo=utc)}

    def arrow_rows(name: str) -> list[dict[str, Any]]:
        return cat.get_table(name).to_arrow().to_pylist()

    assert [(r["id"], r["email"]) for r in arrow_rows("ods.src_customers")] == [
        (1001, "sally@example.com")]
    assert sorted((r["id"], r["is_default"]) for r in arrow_rows("ods.src_addresses")) == [
        (10, True), (11, True)]
    assert fsck(products).ok


def cdc_sync_database_staging(sh: Shell, command: str) -> None:
    wh = _land_database(sh, command, 1)
    landing = Path(sh.prepare(flags(command)["--landing"])[0])
    (report,) = sh.json_lines(command)
    assert [(t["target"], t["created"]) for t in report["tables"]] == [
        ("ods.addresses", False), ("ods.customers", True), ("ods.orders", True),
        ("ods.products", True)]
    assert [r["id"] for r in rows_of(FileSystemCatalog(wh).get_table("ods.products"))] == [102]
    # the landing is only read: the batch is noted done under --staging-dir
    assert sorted(p.name for p in landing.iterdir()) == ["batch-000001.jsonl"]
    staging = Path(sh.prepare(flags(command)["--staging-dir"])[0])
    assert sorted(p.name for p in staging.iterdir()) == ["batch-000001.done.json"]


def cdc_ingest_database(sh: Shell, command: str) -> None:
    wh = _land_database(sh, command, 1)
    (report,) = sh.json_lines(command)
    assert [(t["target"], t["created"]) for t in report["tables"]] == [
        ("ods.addresses", False), ("ods.customers", True), ("ods.orders", True),
        ("ods.products", True)]
    cat = FileSystemCatalog(wh)
    orders = cat.get_table("ods.orders").to_arrow()  # DATE values: not through rows_of's JSON
    assert sorted(orders.column("order_number").to_pylist()) == [10001, 10002]
    assert [r["id"] for r in rows_of(cat.get_table("ods.products"))] == [102]


#: the orders table's Debezium Connect schema (Postgres, ``decimal.handling.mode=precise``:
#: ``amount`` as Kafka Connect Decimal bytes of scale 2)
_ORDER_VALUE: dict[str, Any] = {
    "type": "struct", "optional": True, "name": "pg.shop.orders.Value", "fields": [
        {"field": "order_id", "type": "int64", "optional": False},
        {"field": "customer", "type": "string", "optional": True},
        {"field": "amount", "type": "bytes", "optional": True, "version": 1,
         "name": "org.apache.kafka.connect.data.Decimal",
         "parameters": {"scale": "2", "connect.decimal.precision": "12"}},
        {"field": "_seq", "type": "int64", "optional": True}]}
_ORDER_ENVELOPE: dict[str, Any] = {
    "type": "struct", "optional": False, "name": "pg.shop.orders.Envelope", "fields": [
        {**_ORDER_VALUE, "field": "before"}, {**_ORDER_VALUE, "field": "after"},
        {"field": "source", "type": "struct", "optional": False,
         "name": "io.debezium.connector.postgresql.Source", "fields": [
             {"field": "connector", "type": "string", "optional": False},
             {"field": "lsn", "type": "int64", "optional": True}]},
        {"field": "op", "type": "string", "optional": False},
        {"field": "ts_ms", "type": "int64", "optional": True}]}


def _connect_amount(image: dict[str, Any] | None) -> dict[str, Any] | None:
    """``image`` with ``amount`` as Connect's JSON converter writes a Decimal: base64 of the
    unscaled value's big-endian two's complement bytes."""
    if image is None:
        return None
    unscaled = int(decimal.Decimal(image["amount"]).scaleb(2))
    raw = unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)
    return {**image, "amount": base64.b64encode(raw).decode()}


def cdc_ingest_avro(sh: Shell, command: str) -> None:
    f = flags(command)
    assert f["--format"] == "debezium-avro"
    landing = Path(sh.prepare(f["--landing"])[0])
    for offset, (name, lines) in enumerate(CDC_BATCHES.items()):
        events = []
        for line in lines:
            e = json.loads(line)
            payload = {**e, "before": _connect_amount(e["before"]),
                       "after": _connect_amount(e["after"]),
                       "source": {"connector": "postgresql", **e["source"]}}
            events.append({"schema": _ORDER_ENVELOPE, "payload": payload})
        # as Kafka Connect's S3 sink names its files: <topic>+<partition>+<startOffset>.avro
        path = landing / name.split("/")[0] / f"pg.shop.orders+0+{offset * 4:010d}.avro"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(envelope_file(events))
    FileSystemCatalog(sh.subst["/data/wh"]).create_table(f["--table"],
                                                         Schema.from_json(CDC_SCHEMA))
    reports = sh.json_lines(command)
    assert [(r["batch"], r["events"], r["valid"], r["malformed"], r["snapshot_ids"])
            for r in reports] == [(1, 4, 4, 0, [1]), (2, 4, 4, 0, [2])]
    t = FileSystemCatalog(sh.subst["/data/wh"]).get_table(f["--table"])
    # the late update (lsn 4) loses to the newer one (lsn 5) by the sequence field
    assert norm([{k: v for k, v in r.items() if k != "_seq"} for r in rows_of(t)]) == norm(
        [_order(1, "ann", "12.00"), _order(3, "cid", "8.75"), _order(4, "dan", "1.00")])
    assert fsck(t).ok


def _sales(sh: Shell, commits: int, identifier: str = "sales.orders") -> FileStoreTable:
    return make_table(Path(sh.subst["/data/wh"]), identifier, commits)


def overwrite_partition(sh: Shell, command: str) -> None:
    t = _sales(sh, 2)
    f = flags(command)
    dt = f["--partition"].split("=", 1)[1]
    assert f["--format"] == "parquet"
    day = [{"order_id": 7, "amount": "70.00"}, {"order_id": 8, "amount": "80.00"}]
    path = Path(sh.prepare(f["--input"])[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(arrow_rows(day), path)  # without the partition column: taken from --partition
    out = sh.json_lines(command)[0]
    assert (out["rows"], out["snapshot_ids"]) == (2, [3])
    assert latest_kind(t) is CommitKind.OVERWRITE
    assert rows_of(t) == norm([r for r in sales_rows(2) if r["dt"] != dt]
                              + [{"dt": dt, **r} for r in day])


def overwrite_from_table(sh: Shell, command: str) -> None:
    t = _sales(sh, 2)
    staging = _sales(sh, 0, flags(command)["--source-table"])
    new = [{"dt": "2024-01-03", "order_id": i, "amount": f"{i}.50"} for i in (1, 2)]
    commit_rows(staging, new, 1)
    assert sh.json_lines(command)[0]["snapshot_ids"] == [3]
    assert rows_of(t) == norm(new)  # the whole table replaced


def compact_job(sh: Shell, command: str) -> None:
    # six level-0 runs per bucket: the picker's trigger (5) and a full compaction agree
    t = _sales(sh, 6)
    before = live_files(t)
    out = sh.json_lines(command)[-1]
    assert out["snapshot_id"] == 7 and latest_kind(t) is CommitKind.COMPACT
    assert len(out["buckets"]) == len(before) and out["files_before"] == 6 * len(before)
    assert all(len(files) < 6 for files in live_files(t).values())
    assert rows_of(t) == sales_rows(6) and fsck(fresh(t)).ok


def register_pools(sh: Shell, command: str) -> None:
    # the line before it (skipped here) makes a Dagster home with the repository's dagster.yaml
    home = sh.work / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    p = dataclasses.replace(sh, env={**sh.env, "DAGSTER_HOME": str(home)}).run(command)
    assert p.stdout.splitlines() == ["pool paimon-derived: 1 run(s) at a time",
                                     "pool paimon-spark: 2 run(s) at a time"], p.stdout


def expire_job(sh: Shell, command: str) -> None:
    keep = int(flags(command)["--retain-max"])
    t = _sales(sh, keep + 3)
    orphan = old_orphan(t, "dt=2024-01-01")
    out = sh.json_lines(command)[-1]
    assert out["expire"]["expired_ids"] == [1, 2, 3]
    assert (out["orphans"], out["orphans_deleted"]) == (1, 1) and not orphan.exists()
    assert rows_of(t) == sales_rows(keep + 3) and fsck(fresh(t)).ok


SCENARIOS: dict[str, Callable[[Shell, str], None]] = {
    "paimon incremental --warehouse wh --table db.orders --from 3 --to 7 --mode between":
        incremental,
    "paimon stream --warehouse wh --table db.orders --consumer-id etl --max-snapshots 10 "
    "--headers": stream_consumer,
    "paimon stream --warehouse wh --table db.orders --snapshot 5 --follow --poll-interval 2":
        stream_follow,
    "paimon compact --warehouse wh --table db.orders": compact_picker,
    "paimon compact --warehouse wh --table db.orders --strategy minor": compact_picker,
    "paimon compact --warehouse wh --table db.orders --partition region=emea --bucket 0":
        compact_one_bucket,
    "paimon compact --warehouse wh --table db.orders --full --partition region=emea --bucket 0":
        compact_one_bucket,
    "paimon create --warehouse wh --table db.orders --schema schema.json": create,
    "paimon write --warehouse wh --table db.orders --input rows.jsonl --kind _k": write_kinds,
    "paimon write --warehouse wh --table db.orders --input day.parquet --overwrite region=emea":
        write_overwrite,
    "paimon read --warehouse wh --table db.orders --filter amount > 10 --snapshot 3": read,
    "paimon snapshots --warehouse wh --table db.orders --verbose": snapshots,
    "paimon incremental --warehouse wh --table db.orders --from 1 --to 3": incremental,
    "paimon stream --warehouse wh --table db.orders --consumer-id etl --max-snapshots 10":
        stream_consumer,
    "paimon describe --warehouse wh --table db.orders": describe,
    "paimon alter --warehouse wh --table db.orders --add-column channel STRING "
    "--rename-column amount=total": alter,
    "paimon alter --warehouse wh --table db.orders --column-comment amount=order total "
    "--not-null amount --move-column amount AFTER region": alter_columns,
    "paimon tag create month-end --warehouse wh --table db.orders": tag_create,
    "paimon fsck --warehouse wh --table db.orders --deep": fsck_deep,
    "paimon inspect --warehouse wh --table db.orders buckets": inspect_buckets,
    "paimon expire --warehouse wh --table db.orders --retain-min 5 --time-retained 30 min":
        expire,
    "paimon expire --warehouse wh --table db.orders --retain-max 3 --older-than-ms "
    "1718000000000": expire,
    "paimon remove-orphans --warehouse wh --table db.orders --dry-run": remove_orphans,
    "paimon consumer list --warehouse wh --table db.orders": consumer_list,
    "paimon consumer reset etl --next-snapshot 42 --warehouse wh --table db.orders":
        consumer_reset,
    "paimon consumer delete etl --warehouse wh --table db.orders": consumer_delete,
    "python -m pipelines.jobs.cdc_ingest --warehouse /data/wh --table shop.orders --landing "
    "s3://bucket/cdc/orders --schema orders.json --max-error-ratio 0.01 --storage-option "
    "s3.endpoint=http://127.0.0.1:9000": cdc_ingest,
    "python -m pipelines.jobs.cdc_ingest --warehouse /data/wh --table shop.orders --landing "
    "/data/landing/orders-avro --format debezium-avro": cdc_ingest_avro,
    "python -m pipelines.jobs.cdc_ingest --warehouse /data/wh --table shop.products --landing "
    "/data/landing/products --format canal-json --source-table products2": cdc_ingest_format,
    "python -m pipelines.jobs.cdc_sync_database --warehouse /data/wh --database ods --landing "
    "/data/landing/inventory --format canal-json --excluding-tables orders --table-prefix src_ "
    "--metadata-column database_name,table_name,op_ts --table-conf bucket=2": cdc_sync_database,
    "python -m pipelines.jobs.cdc_ingest --warehouse /data/wh --database ods --landing "
    "/data/landing/inventory --format canal-json": cdc_ingest_database,
    "python -m pipelines.jobs.cdc_sync_database --warehouse /data/wh --database ods --landing "
    "/data/landing/inventory --format canal-json --staging-dir /data/staging/inventory":
        cdc_sync_database_staging,
    "python -m pipelines.jobs.batch_overwrite --warehouse /data/wh --table sales.orders --input "
    "/exports/2024-01-02.parquet --format parquet --partition dt=2024-01-02":
        overwrite_partition,
    "python -m pipelines.jobs.batch_overwrite --warehouse /data/wh --table sales.orders "
    "--source-table staging.orders --whole-table": overwrite_from_table,
    "python -m pipelines.jobs.compact --warehouse /data/wh --table sales.orders": compact_job,
    "python -m pipelines.jobs.expire --warehouse /data/wh --table sales.orders --retain-max 50 "
    "--remove-orphans": expire_job,
    "SPARK_HOME=.venv/lib/python3.11/site-packages/pyspark PYSPARK_PYTHON=$PWD/.venv/bin/python "
    "PYTHONPATH=$PWD .venv/bin/spark-submit --master local[2] pipelines/jobs/compact.py "
    "--warehouse /data/wh --table sales.orders --full": compact_job,
    "SPARK_HOME=.venv/lib/python3.11/site-packages/pyspark PYSPARK_PYTHON=$PWD/.venv/bin/python "
    "PYTHONPATH=$PWD .venv/bin/spark-submit --master local[2] pipelines/jobs/cdc_ingest.py "
    "--warehouse /data/wh --table shop.orders --landing /data/landing/orders": cdc_ingest,
    ".venv/bin/python -m assets.pools": register_pools,
}


# ------------------------------------------------------------------------------ the tests

COMMANDS = readme_commands(README.read_text(encoding="utf-8"))


def _params() -> list[Any]:
    first: dict[str, tuple[int, str]] = {}
    for no, command in COMMANDS:
        first.setdefault(command_key(command), (no, command))
    params = []
    for key, (no, command) in first.items():
        marks = []
        if "pipelines" in key:  # a Spark driver of its own: 10-20 s each
            marks += [pytest.mark.spark, pytest.mark.slow]
        if "s3://" in key:
            marks.append(pytest.mark.s3)
        prog, *args = [w for w in key.split() if not re.match(r"^[A-Z_]+=", w)]
        words = [prog.rsplit("/", 1)[-1]] + [  # the program's name, then no flags or paths
            w.rsplit("/", 1)[-1] for w in args if not w.startswith("-") and "=" not in w
            and ("/" not in w or w.endswith(".py"))]
        name = re.sub(r"[^\w.]+", "-", " ".join(words[:3]))
        params.append(pytest.param(command, id=f"L{no}-{name}", marks=marks))
    return params


@pytest.mark.parametrize("command", _params())
def test_readme_command_runs_as_written(command: str, tmp_path: Path,
                                        request: pytest.FixtureRequest) -> None:
    key = command_key(command)
    if key in NOT_RUN:
        pytest.skip(f"README command not run here: {NOT_RUN[key]}")
    scenario = SCENARIOS.get(key)
    assert scenario is not None, (
        f"README.md has a command no test runs: {key!r}; add a scenario to "
        f"{Path(__file__).name} (or, if it cannot run here, to NOT_RUN with the reason)")
    if ".venv/" in command and (REPO / ".venv").resolve() != VENV_BIN.parent.resolve():
        pytest.skip(f"the README's .venv is not this interpreter's ({sys.executable})")
    work = tmp_path / "work"
    work.mkdir()
    sh = Shell(work, venv_env(), {"/data/wh": str(tmp_path / "data" / "wh"),
                                  "/data/landing/": f"{tmp_path / 'data' / 'landing'}/",
                                  "/data/staging/": f"{tmp_path / 'data' / 'staging'}/",
                                  "/exports/": f"{tmp_path / 'exports'}/"})

    def s3() -> str:  # moto on loopback; its credentials in the environment, as AWS users do
        endpoint: str = request.getfixturevalue("s3_server")["endpoint"]
        sh.env.update({k: v for k, v in os.environ.items() if k.startswith("AWS_")})
        return endpoint

    sh.s3 = s3
    scenario(sh, command)


def test_every_scenario_and_exception_is_a_readme_command() -> None:
    keys = {command_key(c) for _, c in COMMANDS}
    assert sorted(set(SCENARIOS) - keys) == [], "scenarios of commands README.md lacks"
    assert sorted(set(NOT_RUN) - keys) == [], "NOT_RUN entries README.md lacks"
