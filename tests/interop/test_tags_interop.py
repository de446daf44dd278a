"""Tags against Paimon Java 0.9 and pypaimon 2.1.

* Java lists our tags (with and without retention metadata) and reads the table at our tag
  (``scan.tag-name``) exactly as at the tagged snapshot; its ``snapshots`` / ``read --snapshot``
  are unaffected by our tags.
* The tag file Java writes for a snapshot is the JSON object we write; with a retention the two
  extra keys have the same shape (LocalDateTime array, decimal seconds); we read Java's tags.
* pypaimon reads the table at our tag as we do.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.main import main as paimon_main
from tests.interop.java_harness import oracle_home
from tests.interop.oracle import ORACLE_PY, ensure_ready, oracle_env, run_batches
from tests.interop.schema_tag_java import SchemaTagJava

pytestmark = pytest.mark.oracle

TABLE = "db.t"
SCHEMA = {"fields": [{"name": "id", "type": "INT"}, {"name": "v", "type": "STRING"},
                     {"name": "n", "type": "BIGINT"}],
          "primary_keys": ["id"], "options": {"bucket": "2"}}


def _rows(k: int) -> list[dict[str, Any]]:
    return [{"id": i, "v": f"v{k}-{i}", "n": k * 100 + i if i % 3 else None}
            for i in range(k * 3, k * 3 + 6)]


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> SchemaTagJava:
    return SchemaTagJava(tmp_path_factory.mktemp("java-tags"))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Java-written PK table with 3 snapshots (updates overlapping keys)."""
    ensure_ready()
    work = tmp_path_factory.mktemp("tags-base")
    (work / "schema.json").write_text(json.dumps(SCHEMA))
    wh = work / "wh"
    cmds: list[dict[str, Any]] = [{"cmd": "create", "warehouse": str(wh), "table": TABLE,
                                   "schema": str(work / "schema.json")}]
    for k in range(3):
        path = work / f"rows{k}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in _rows(k)))
        cmds.append({"cmd": "write", "warehouse": str(wh), "table": TABLE, "input": str(path)})
    run_batches({"tags-base": cmds}, work)
    return wh


def _java_rows(answer_rows: list[str]) -> list[tuple[Any, ...]]:
    out = []
    for r in answer_rows:
        i, v, n = r.split("\t")
        out.append((int(i), v, None if n == "null" else int(n)))
    return sorted(out)


def _our_rows(wh: Path, **travel: Any) -> list[tuple[Any, ...]]:
    t = FileSystemCatalog(str(wh)).get_table(TABLE)
    return sorted((r["id"], r["v"], r["n"]) for r in t.to_arrow(**travel).to_pylist())


def test_java_reads_our_tags(java: SchemaTagJava, base: Path, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    shutil.copytree(base, wh)
    t = FileSystemCatalog(str(wh)).get_table(TABLE)
    t.create_tag("plain", 2)
    t.create_tag("retained", 1, time_retained=dt.timedelta(days=1, seconds=1.5))
    snaps_before = run_batches({"s0": [{"cmd": "snapshots", "warehouse": str(base),
                                        "table": TABLE, "output": str(tmp_path / "s0")}]},
                               tmp_path)
    assert not snaps_before["s0"].failures()
    answers = java.run([
        ["TAGS", str(wh), TABLE],
        ["READ", str(wh), TABLE, "scan.tag-name", "plain"],
        ["READ", str(wh), TABLE, "scan.snapshot-id", "2"],
        ["READ", str(wh), TABLE, "scan.tag-name", "retained"],
        ["READ", str(wh), TABLE, "scan.snapshot-id", "1"],
    ])
    assert all(a.ok for a in answers), [a.text for a in answers]
    assert answers[0].text == "plain=2,retained=1"
    assert answers[1].rows == answers[2].rows and len(answers[1].rows) == 9
    assert answers[3].rows == answers[4].rows and len(answers[3].rows) == 6
    assert answers[1].rows != answers[3].rows
    assert _java_rows(answers[1].rows) == _our_rows(wh, tag="plain") == _our_rows(
        wh, snapshot_id=2)
    assert _java_rows(answers[3].rows) == _our_rows(wh, tag="retained")
    # the oracle's snapshots / time travel are unaffected by the tags
    res = run_batches({"s1": [
        {"cmd": "snapshots", "warehouse": str(wh), "table": TABLE, "output": str(tmp_path / "s1")},
        {"cmd": "read", "warehouse": str(wh), "table": TABLE, "snapshot": 2,
         "output": str(tmp_path / "r2-ours")},
        {"cmd": "read", "warehouse": str(base), "table": TABLE, "snapshot": 2,
         "output": str(tmp_path / "r2-base")},
    ]}, tmp_path)
    assert not res["s1"].failures()
    assert (tmp_path / "s1").read_text() == (tmp_path / "s0").read_text()
    assert (tmp_path / "r2-ours").read_text() == (tmp_path / "r2-base").read_text() != ""


def test_java_tag_files_equal_ours(java: SchemaTagJava, base: Path, tmp_path: Path) -> None:
    wj = tmp_path / "java"
    wp = tmp_path / "ours"
    shutil.copytree(base, wj)
    shutil.copytree(base, wp)
    answers = java.run([["TAG", str(wj), TABLE, "t3", "3"],
                        ["TAG", str(wj), TABLE, "t1r", "1", str(86_400_000)],
                        ["TAG", str(wj), TABLE, "t3", "2"]])
    assert answers[0].ok and answers[1].ok
    assert not answers[2].ok and "already exists" in answers[2].text
    ours = FileSystemCatalog(str(wp)).get_table(TABLE)
    ours.create_tag("t3", 3)
    ours.create_tag("t1r", 1, time_retained=dt.timedelta(days=1))
    tag_dir = Path("db.db") / "t" / "tag"
    java_t3 = json.loads((wj / tag_dir / "tag-t3").read_text())
    assert json.loads((wp / tag_dir / "tag-t3").read_text()) == java_t3
    java_text = (wj / tag_dir / "tag-t1r").read_text()
    our_text = (wp / tag_dir / "tag-t1r").read_text()
    java_obj, our_obj = json.loads(java_text), json.loads(our_text)
    assert re.search(r'"tagTimeRetained"\s*:\s*86400\.000000000\b', java_text)
    assert re.search(r'"tagTimeRetained"\s*:\s*86400\.000000000\b', our_text)
    for obj in (java_obj, our_obj):
        created = obj.pop("tagCreateTime")
        assert isinstance(created, list) and 5 <= len(created) <= 7
        assert all(isinstance(x, int) for x in created)
    assert our_obj == java_obj
    # we read Java's tags
    java_table = FileSystemCatalog(str(wj)).get_table(TABLE)
    assert java_table.list_tags() == [("t1r", 1), ("t3", 3)]
    assert _our_rows(wj, tag="t1r") == _our_rows(wj, snapshot_id=1)


def test_pypaimon_reads_our_tag(base: Path, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    wh = tmp_path / "wh"
    shutil.copytree(base, wh)
    FileSystemCatalog(str(wh)).get_table(TABLE).create_tag("mid", 2,
                                                           time_retained=dt.timedelta(hours=1))
    python = oracle_home() / "venv" / "bin" / "python"
    script = Path(__file__).with_name("pypaimon_tag_read.py")
    proc = subprocess.run([str(python), str(script), str(ORACLE_PY), str(wh), TABLE, "mid"],
                          capture_output=True, text=True, env=oracle_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    capsys.readouterr()
    assert paimon_main(["read", "--warehouse", str(wh), "--table", TABLE, "--tag", "mid"]) == 0
    ours = capsys.readouterr().out.splitlines()
    assert len(ours) == 9 and proc.stdout.splitlines() == ours
