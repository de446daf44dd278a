"""``paimon create`` / ``write`` against the oracle: the same command sequence run through our
CLI and through the oracle with Paimon Java 0.9 gives the same canonical reads at every snapshot
and the same snapshot listing; Java and pypaimon read our table as we do (and vice versa)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.fsck import fsck
from tests.interop.oracle import ensure_ready, run_batches
from tests.interop.ours import cli

pytestmark = pytest.mark.oracle

PK_SCHEMA = {
    "fields": [
        {"name": "pt", "type": "STRING"},
        {"name": "id", "type": "INT"},
        {"name": "amt", "type": "DECIMAL(10, 2)"},
        {"name": "big", "type": "DECIMAL(38, 6)"},
        {"name": "f", "type": "FLOAT"},
        {"name": "dbl", "type": "DOUBLE"},
        {"name": "ok", "type": "BOOLEAN"},
        {"name": "bin", "type": "BYTES"},
        {"name": "d", "type": "DATE"},
        {"name": "ts", "type": "TIMESTAMP(3)"},
        {"name": "ltz", "type": "TIMESTAMP(6) WITH LOCAL TIME ZONE"},
        {"name": "tags", "type": "ARRAY<STRING>"},
        {"name": "m", "type": "MAP<STRING, BIGINT>"},
        {"name": "r", "type": "ROW<a INT, b STRING>"},
    ],
    "partition_keys": ["pt"],
    "primary_keys": ["pt", "id"],
    "options": {"bucket": "2"},
}
APPEND_SCHEMA = {
    "fields": [{"name": "pt", "type": "INT"}, {"name": "id", "type": "BIGINT"},
               {"name": "s", "type": "STRING"}],
    "partition_keys": ["pt"],
    "options": {"bucket": "-1"},
}


def _pk_row(pt: str, i: int, k: int) -> dict[str, Any]:
    return {"pt": pt, "id": i, "amt": f"{i * 1.005 + k:.3f}", "big": f"{i}123456789.5",
            "f": i / 3, "dbl": -i / 7, "ok": i % 2 == 0, "bin": "AAEC/w==",
            "d": f"2024-0{1 + i % 9}-1{i % 10}", "ts": f"2024-01-01 10:0{i % 10}:00.12345",
            "ltz": f"2024-03-01T0{i % 10}:00:00+01:00", "tags": [f"t{i}", None],
            "m": {"a": i, "b": None}, "r": {"a": k, "b": f"r{i}"}}


def _steps() -> list[tuple[str, list[dict[str, Any]], dict[str, Any]]]:
    """(table, rows, write options) of each write."""
    s1 = [_pk_row(pt, i, 1) for pt in ("a", "b") for i in range(8)]
    s2 = [dict(_pk_row("a", i, 2), _k="-D") for i in range(0, 4)]
    s2 += [dict(_pk_row("b", i, 2), _k="+U") for i in range(2, 6)]
    s2 += [dict(_pk_row("c", i, 2), _k=None) for i in range(3)]
    s2 += [dict(_pk_row("a", 99, 2), _k="-D")]  # delete of a key that does not exist
    s3 = [_pk_row("b", i, 3) for i in range(20, 23)]  # dynamic overwrite of partition b
    s4 = [_pk_row("c", 7, 4)]  # static overwrite of partition c
    a1 = [{"pt": p, "id": i, "s": f"x{i}"} for p in (1, 2) for i in range(5)]
    a2 = [{"pt": 2, "id": 100, "s": None}]
    return [
        ("db.pk", s1, {}), ("db.pk", s2, {"kind": "_k"}), ("db.pk", s3, {"overwrite": ""}),
        ("db.pk", s4, {"overwrite": "pt=c"}),
        ("db.ap", a1, {}), ("db.ap", a2, {"overwrite": "pt=2"}),
    ]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ensure_ready()
    w = tmp_path_factory.mktemp("cli-write")
    (w / "pk.json").write_text(json.dumps(PK_SCHEMA))
    (w / "ap.json").write_text(json.dumps(APPEND_SCHEMA))
    for k, (_, rows, _) in enumerate(_steps()):
        (w / f"step{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return w


def _reads(wh: Path, out: Path, engine: str) -> list[dict[str, Any]]:
    cmds: list[dict[str, Any]] = []
    for table, snaps in (("db.pk", 4), ("db.ap", 2)):
        for s in range(1, snaps + 1):
            cmd: dict[str, Any] = {"cmd": "read", "warehouse": str(wh), "table": table,
                                   "engine": engine, "snapshot": s,
                                   "output": str(out / f"{engine}-{table}-{s}.jsonl")}
            if engine == "pypaimon":
                cmd["pypaimon_compat"] = True
            cmds.append(cmd)
        cmds.append({"cmd": "snapshots", "warehouse": str(wh), "table": table, "engine": engine,
                     "output": str(out / f"{engine}-{table}-snapshots.jsonl")})
    return cmds


def test_cli_sequence_equals_java(work: Path) -> None:
    ours, javas = work / "wh-ours", work / "wh-java"
    # the same sequence through the oracle with Java ...
    cmds: list[dict[str, Any]] = [
        {"cmd": "create", "warehouse": str(javas), "table": "db.pk",
         "schema": str(work / "pk.json")},
        {"cmd": "create", "warehouse": str(javas), "table": "db.ap",
         "schema": str(work / "ap.json")},
    ]
    for k, (table, _, opts) in enumerate(_steps()):
        cmds.append({"cmd": "write", "warehouse": str(javas), "table": table,
                     "input": str(work / f"step{k}.jsonl"), **opts})
    # ... and through our CLI
    for table, schema in (("db.pk", "pk.json"), ("db.ap", "ap.json")):
        cli(["create", "--warehouse", str(ours), "--table", table,
              "--schema", str(work / schema)])
    for k, (table, _, opts) in enumerate(_steps()):
        args = ["write", "--warehouse", str(ours), "--table", table,
                "--input", str(work / f"step{k}.jsonl")]
        if "kind" in opts:
            args += ["--kind", opts["kind"]]
        if "overwrite" in opts:
            args += ["--overwrite", opts["overwrite"]] if opts["overwrite"] else ["--overwrite"]
        result = json.loads(cli(args)[0])
        assert result["op"] == "write" and result["snapshot"] is not None
    out = work / "out"
    out.mkdir()
    # Java reads both warehouses; pypaimon reads ours
    for d in ("jj", "jo", "po"):
        (out / d).mkdir()
    cmds += _reads(javas, out / "jj", "java")
    cmds += _reads(ours, out / "jo", "java")
    cmds += _reads(ours, out / "po", "pypaimon")
    results = run_batches({"cli-write": cmds}, work)
    assert not results["cli-write"].failures(), results["cli-write"].failures()
    compared = 0
    for table, snaps in (("db.pk", 4), ("db.ap", 2)):
        for s in range(1, snaps + 1):
            name = f"{table}-{s}.jsonl"
            java_java = (out / "jj" / f"java-{name}").read_text().splitlines()
            java_ours = (out / "jo" / f"java-{name}").read_text().splitlines()
            pypaimon_ours = (out / "po" / f"pypaimon-{name}").read_text().splitlines()
            mine = cli(["read", "--warehouse", str(ours), "--table", table,
                         "--snapshot", str(s)])
            assert java_ours == java_java, f"{table} snapshot {s}: Java reads our table"
            assert mine == java_java, f"{table} snapshot {s}: our read of our table"
            assert pypaimon_ours == java_java, f"{table} snapshot {s}: pypaimon reads ours"
            compared += len(mine)
        snaps_java = [json.loads(x) for x in
                      (out / "jj" / f"java-{table}-snapshots.jsonl").read_text().splitlines()]
        snaps_ours = [json.loads(x) for x in
                      (out / "jo" / f"java-{table}-snapshots.jsonl").read_text().splitlines()]
        assert snaps_ours == snaps_java
    assert compared > 40
    # the -D of snapshot 2 removed keys, the overwrites replaced partitions
    last = cli(["read", "--warehouse", str(ours), "--table", "db.pk"])
    assert {json.loads(x)["pt"] for x in last} == {"a", "b", "c"}
    assert [json.loads(x)["id"] for x in last if json.loads(x)["pt"] != "a"] == [20, 21, 22, 7]
    for table in ("db.pk", "db.ap"):
        for wh in (ours, javas):
            assert fsck(FileSystemCatalog(str(wh)).get_table(table), deep=True).ok
