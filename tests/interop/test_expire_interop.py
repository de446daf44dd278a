"""Snapshot expiry against Paimon Java 0.9.

* Tables written by Java (PK with changelog-producer=input, -U/-D rows, compactions and an
  overwrite; a PK table with deletion vectors, which has index files; an append table) and by us
  (with a tag and a consumer) are expired by us: Java then reads every retained snapshot exactly
  as it read it before, and reads our tag of an expired snapshot.
* Java expires copies of the same tables (``ExpireSnapshots`` with retain-max 2): we read every
  retained snapshot as Java did before, and our expiry with the same settings leaves exactly the
  same files as Java's.
* After our expiry Java appends and expires further (and honours our consumer file); we read the
  result as Java does, and ``fsck`` is clean.

Two JVMs for the whole module (one oracle batch to build, one to check) plus one for tags.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.canonical import canonical_lines
from paimon_core.consumer import Consumer, ConsumerManager
from paimon_core.expire import INT_MAX, ExpireConfig, ExpireSnapshots
from paimon_core.fsck import fsck, orphan_files
from paimon_core.table import FileStoreTable
from tests.interop.oracle import ensure_ready, run_batches
from tests.interop.schema_tag_java import SchemaTagJava
from tests.maintenance.helpers import FAR_FUTURE, pk_table, tree, write

pytestmark = pytest.mark.oracle

SCHEMAS: dict[str, dict[str, Any]] = {
    "db.pk": {"fields": [{"name": "pt", "type": "STRING"}, {"name": "id", "type": "INT"},
                         {"name": "v", "type": "STRING"}, {"name": "n", "type": "BIGINT"}],
              "partition_keys": ["pt"], "primary_keys": ["pt", "id"],
              "options": {"bucket": "2", "changelog-producer": "input"}},
    "db.dv": {"fields": [{"name": "id", "type": "INT"}, {"name": "v", "type": "STRING"}],
              "primary_keys": ["id"],
              "options": {"bucket": "2", "deletion-vectors.enabled": "true"}},
    "db.ap": {"fields": [{"name": "pt", "type": "INT"}, {"name": "id", "type": "BIGINT"},
                         {"name": "s", "type": "STRING"}],
              "partition_keys": ["pt"], "options": {"bucket": "-1"}},
}
JAVA_TABLES = tuple(SCHEMAS)
OURS = "db.pk"  # our table lives in its own warehouse


def _pk_rows(k: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [{"pt": "ab"[i % 2], "id": i, "v": f"v{k}-{i}", "n": k * 100 + i}
                                  for i in range(k, k + 8)]
    if k % 2 == 0:
        rows[0]["_k"] = "-D"
        rows[1]["_k"] = "-U"
        rows[2]["_k"] = "+U"
    return rows


def _steps() -> list[tuple[str, str, Any]]:
    """(table, op, rows / overwrite spec) of the Java writer."""
    out: list[tuple[str, str, Any]] = []
    for k in range(1, 4):
        out.append(("db.pk", "write", _pk_rows(k)))
    out.append(("db.pk", "compact", None))
    out.append(("db.pk", "write", _pk_rows(4)))
    out.append(("db.pk", "overwrite", [{"pt": "b", "id": 50, "v": "ow", "n": 1}]))
    out.append(("db.pk", "compact", None))
    out.append(("db.pk", "write", _pk_rows(6)))
    for k in range(4):
        out.append(("db.dv", "write", [{"id": i, "v": f"d{k}-{i}"}
                                       for i in range(k * 3, k * 3 + 6)]))
        if k % 2:
            out.append(("db.dv", "compact", None))
    out.append(("db.dv", "write", [{"id": 1, "v": "last"}]))
    for k in range(3):
        out.append(("db.ap", "write", [{"pt": k % 2, "id": k * 10 + i, "s": f"a{k}"}
                                       for i in range(4)]))
    out.append(("db.ap", "overwrite", [{"pt": 0, "id": 99, "s": "ow"}]))
    out.append(("db.ap", "compact", None))
    out.append(("db.ap", "write", [{"pt": 1, "id": 77, "s": "last"}]))
    return out


def _cmd(cmd: str, wh: Path, table: str, **kw: Any) -> dict[str, Any]:
    return {"cmd": cmd, "warehouse": str(wh), "table": table, "engine": "java", **kw}


def _our_lines(t: FileStoreTable, **travel: Any) -> list[str]:
    data = t.to_arrow(**travel)
    return sorted(canonical_lines(data, [t.schema.field(c) for c in data.column_names]))


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _ids(path: Path) -> list[int]:
    return [json.loads(x)["id"] for x in _lines(path)]


def _table(wh: Path, name: str) -> FileStoreTable:
    return FileSystemCatalog(str(wh)).get_table(name)


def _our_expire(t: FileStoreTable, **kw: int) -> Any:
    cfg = ExpireConfig(**{"retain_min": 1, "retain_max": INT_MAX, "max_deletes": INT_MAX, **kw})
    # Java's ExpireConfig default keeps snapshots of any age: an older_than before them all
    return ExpireSnapshots(t.file_io, t.path, t.schema, config=cfg,
                           older_than_millis=-(2**62)).expire()


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    ensure_ready()
    work = tmp_path_factory.mktemp("expire-interop")
    orig = work / "java-orig"
    cmds: list[dict[str, Any]] = []
    for name, schema in SCHEMAS.items():
        path = work / f"{name}.schema.json"
        path.write_text(json.dumps(schema))
        cmds.append(_cmd("create", orig, name, schema=str(path)))
    for k, (name, op, data) in enumerate(_steps()):
        if op == "compact":
            cmds.append(_cmd("compact", orig, name))
            continue
        path = work / f"step{k}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in data))
        extra: dict[str, Any] = {"kind": "_k"} if name == "db.pk" and op == "write" else {}
        if op == "overwrite":
            extra["overwrite"] = ""
        cmds.append(_cmd("write", orig, name, input=str(path), **extra))
    for name in JAVA_TABLES:
        cmds.append(_cmd("snapshots", orig, name, output=str(work / f"snaps-{name}")))
    # our table: a tag on snapshot 2, a consumer at 4
    ours = work / "ours-orig"
    t = pk_table(str(ours), **{"changelog-producer": "input"})
    for k in range(6):
        write(t, range(k * 2, k * 2 + 5), f"o{k}", "ab"[k % 2], overwrite=k == 3)
    t.create_tag("t2", 2)
    ConsumerManager(t.file_io, t.path).reset_consumer("c", Consumer(4))
    res = run_batches({"build": cmds}, work)
    assert not res["build"].failures(), res["build"].failures()
    return {"work": work, "orig": orig, "ours": ours,
            "ids": {name: _ids(work / f"snaps-{name}") for name in JAVA_TABLES}}


@pytest.fixture(scope="module")
def checked(env: dict[str, Any]) -> dict[str, Any]:
    """Copies expired by us (A), left for Java to expire (B, and B' expired by us the same
    way), then one oracle batch: Java reads the originals at every snapshot, reads the A copies
    at every retained snapshot, expires B, writes to and expires A further."""
    work: Path = env["work"]
    out = work / "out"
    out.mkdir()
    a, b, b2 = work / "A", work / "B", work / "B-ours"
    for d in (a, b, b2):
        shutil.copytree(env["orig"], d)
    shutil.copytree(env["ours"], work / "A-ours")
    ids: dict[str, list[int]] = dict(env["ids"])
    ids[OURS + "@ours"] = _table(env["ours"], OURS).snapshot_manager.list_snapshot_ids()
    ours_result = {}
    for name in JAVA_TABLES:
        ours_result[name] = _our_expire(_table(a, name), retain_max=2)
        ours_result[name + "@B"] = _our_expire(_table(b2, name), retain_max=2)
    ours_result["ours"] = _table(work / "A-ours", OURS).expire_snapshots(
        retain_min=1, older_than_millis=FAR_FUTURE)
    cmds: list[dict[str, Any]] = []
    targets = [(name, env["orig"], a, ids[name]) for name in JAVA_TABLES]
    targets.append((OURS, env["ours"], work / "A-ours", ids[OURS + "@ours"]))
    for name, src, copy, sids in targets:
        tag = "ours" if copy == work / "A-ours" else "java"
        for sid in sids:
            cmds.append(_cmd("read", src, name, snapshot=sid,
                             output=str(out / f"orig-{tag}-{name}-{sid}")))
        for sid in _table(copy, name).snapshot_manager.list_snapshot_ids():
            cmds.append(_cmd("read", copy, name, snapshot=sid,
                             output=str(out / f"A-{tag}-{name}-{sid}")))
    for name in JAVA_TABLES:
        cmds.append(_cmd("expire", b, name, retain_max=2))
        cmds.append(_cmd("snapshots", b, name, output=str(out / f"B-snaps-{name}")))
    # Java extends our expiry: one more commit, then an expiry down to 1 snapshot
    extra = work / "extra.jsonl"
    extra.write_text(json.dumps({"pt": "a", "id": 1000, "v": "java", "n": 7}) + "\n")
    extra_ours = work / "extra-ours.jsonl"
    extra_ours.write_text(json.dumps({"pt": "a", "id": 1000, "v": "java"}) + "\n")
    for name, wh, rows in (("db.pk", a, extra), (OURS, work / "A-ours", extra_ours)):
        cmds.append(_cmd("write", wh, name, input=str(rows)))
        cmds.append(_cmd("expire", wh, name, retain_max=1))
        cmds.append(_cmd("snapshots", wh, name, output=str(out / f"C-snaps-{wh.name}")))
        cmds.append(_cmd("read", wh, name, output=str(out / f"C-read-{wh.name}")))
    res = run_batches({"check": cmds}, work)
    assert not res["check"].failures(), res["check"].failures()
    expired = {r["table"] + "@" + Path(cmds[r["i"] - 1]["warehouse"]).name: r["expired"]
               for r in res["check"].records if r.get("op") == "expire"}
    return {**env, "out": out, "A": a, "B": b, "B-ours": b2, "A-ours": work / "A-ours",
            "all_ids": ids, "ours_result": ours_result, "java_expired": expired}


def test_java_reads_what_we_expired(checked: dict[str, Any]) -> None:
    out: Path = checked["out"]
    compared = 0
    for name in JAVA_TABLES:
        r = checked["ours_result"][name]
        sids = checked["all_ids"][name]
        assert len(sids) >= 4 and r.expired_ids == tuple(sids[:-2])
        for sid in sids[-2:]:
            before = _lines(out / f"orig-java-{name}-{sid}")
            assert _lines(out / f"A-java-{name}-{sid}") == before, (name, sid)
            compared += len(before)
    # our own table: the consumer at 4 kept 4..6
    r = checked["ours_result"]["ours"]
    assert r.expired_ids == (1, 2, 3)
    for sid in (4, 5, 6):
        before = _lines(out / f"orig-ours-{OURS}-{sid}")
        assert _lines(out / f"A-ours-{OURS}-{sid}") == before
        assert _our_lines(_table(checked["A-ours"], OURS), snapshot_id=sid) == before
        compared += len(before)
    assert compared > 30
    # the deletion-vector table had index files, the PK table changelog files: some went
    res = checked["ours_result"]
    assert res["db.pk"].changelog_files > 0 and res["db.pk"].data_files > 0
    assert res["db.ap"].data_files > 0
    fio = _table(checked["A"], "db.dv").file_io
    index_before = [p for p in tree(fio, str(checked["orig"] / "db.db" / "dv"))
                    if p.startswith("index/")]
    index_after = [p for p in tree(fio, str(checked["A"] / "db.db" / "dv"))
                   if p.startswith("index/")]
    # deletion-vector files of expired snapshots went, the retained ones' stayed
    assert index_after and len(index_after) < len(index_before)


def test_java_reads_our_tag_of_an_expired_snapshot(checked: dict[str, Any],
                                                   tmp_path: Path) -> None:
    java = SchemaTagJava(tmp_path)
    wh = checked["work"] / "A-ours-tag"
    shutil.copytree(checked["ours"], wh)
    t = _table(wh, OURS)
    t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE, max_deletes=100)
    ConsumerManager(t.file_io, t.path).delete_consumer("c")
    t.expire_snapshots(retain_min=1, older_than_millis=FAR_FUTURE, max_deletes=100)
    assert t.snapshot_manager.list_snapshot_ids() == [6]
    answers = java.run([["READ", str(wh), OURS, "scan.tag-name", "t2"],
                        ["READ", str(checked["ours"]), OURS, "scan.snapshot-id", "2"]])
    assert all(a.ok for a in answers), [a.text for a in answers]
    assert answers[0].rows == answers[1].rows and len(answers[0].rows) >= 5
    assert _our_lines(t, tag="t2") == _lines(checked["out"] / f"orig-ours-{OURS}-2")


def test_we_read_what_java_expired_and_expire_the_same_files(checked: dict[str, Any]) -> None:
    out: Path = checked["out"]
    for name in JAVA_TABLES:
        sids = checked["all_ids"][name]
        java_left = _ids(out / f"B-snaps-{name}")
        assert java_left == sids[-2:]
        assert checked["java_expired"][f"{name}@B"] == len(sids) - 2
        t = _table(checked["B"], name)
        for sid in java_left:
            assert _our_lines(t, snapshot_id=sid) == _lines(out / f"orig-java-{name}-{sid}")
        report = fsck(t, deep=True)
        assert report.ok, [f.to_json() for f in report.errors]
        # the same settings through our expiry leave exactly the same files as Java's
        java_files = tree(t.file_io, t.path)
        ours = _table(checked["B-ours"], name)
        assert tree(ours.file_io, ours.path).keys() == java_files.keys(), name
        # no file Java's expiry left behind is unreferenced (but what was so before: the
        # changelog files of Java's overwrite writer, which the overwrite does not commit)
        before = {p.rsplit("/", 1)[-1]
                  for p in orphan_files(_table(checked["orig"], name), FAR_FUTURE)}
        assert {p.rsplit("/", 1)[-1] for p in orphan_files(t, FAR_FUTURE)} == before


def test_java_extends_and_expires_after_us(checked: dict[str, Any]) -> None:
    out: Path = checked["out"]
    # the Java table we expired: Java commits and expires everything but its last snapshot
    last = checked["all_ids"]["db.pk"][-1] + 1
    assert _ids(out / "C-snaps-A") == [last]
    t = _table(checked["A"], "db.pk")
    assert _our_lines(t) == _lines(out / "C-read-A")
    assert any('"java"' in x for x in _lines(out / "C-read-A"))
    assert fsck(t, deep=True).ok
    # our table: Java's expiry honours our consumer file (nextSnapshot 4)
    assert _ids(out / "C-snaps-A-ours") == [4, 5, 6, 7]
    assert checked["java_expired"][f"{OURS}@A-ours"] == 0
    o = _table(checked["A-ours"], OURS)
    assert _our_lines(o) == _lines(out / "C-read-A-ours")
    report = fsck(o, deep=True)
    assert report.ok, [f.to_json() for f in report.errors]
