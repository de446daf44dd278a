"""Tables changed by ``PaimonTable`` (UPDATE / DELETE / MERGE through Spark) read by Paimon
Java 0.9: the same rows as ours and as the hand-written expectation (primary-key tables with
fixed and dynamic buckets, an append table rewritten by copy-on-write), and each operation's
snapshot of the fixed-bucket table streamed by Java with the row kinds paimon-spark writes
(``+U`` updates, ``-D`` deletes, ``+I`` inserts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pipelines.rowlevel import PaimonTable
from tests.interop.oracle import ensure_ready, run_batches
from tests.interop.ours import cli
from tests.tables import make_catalog, write_rows

pytestmark = [pytest.mark.oracle, pytest.mark.spark]

SCHEMA = pa.schema([("pt", pa.string()), ("id", pa.int32()), ("v", pa.string())])
BASE = [("a", 1, "x"), ("a", 2, "y"), ("b", 3, "z"), ("b", 4, None)]
#: after update(v = v || '!' where id >= 2), delete(id = 3), merge of SOURCE
#: (matched: update v, not matched: insert)
SOURCE = [("a", 1, "m"), ("c", 5, "new")]
EXPECTED = sorted([("a", 1, "m"), ("a", 2, "y!"), ("b", 4, None), ("c", 5, "new")],
                  key=lambda r: (r[0], r[1]))


def _rows(lines: list[str]) -> list[tuple[Any, ...]]:
    return sorted((tuple(json.loads(x).values()) for x in lines),
                  key=lambda r: (r[0], r[1]))


def _change(spark: Any, wh: Path, name: str) -> None:
    pt = PaimonTable.forName(spark, f"db.{name}", warehouse=str(wh))
    pt.update("id >= 2", {"v": "v || '!'"})
    pt.delete("id = 3")
    src = spark.createDataFrame(SOURCE, "pt STRING, id INT, v STRING")
    (pt.alias("t").merge(src.alias("s"), "t.pt = s.pt AND t.id = s.id")
     .whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsertAll().execute())


def test_java_reads_row_level_changes(spark: Any, tmp_path: Path) -> None:
    ensure_ready()
    wh = tmp_path / "wh"
    cat = make_catalog(wh)
    from paimon_core import Schema

    shapes = {"pk": dict(primary_keys=["pt", "id"], partition_keys=["pt"],
                         options={"bucket": "2"}),
              # dynamic bucket (Paimon's default bucket = -1): rows routed by the hash index
              "pkd": dict(primary_keys=["pt", "id"], partition_keys=["pt"], options={}),
              "ap": dict(partition_keys=["pt"], options={})}
    for name, kw in shapes.items():
        t = cat.create_table(f"db.{name}", Schema.of(
            [("pt", "STRING"), ("id", "INT"), ("v", "STRING")], **kw))  # type: ignore[arg-type]
        write_rows(t, pa.Table.from_pylist(
            [dict(zip(SCHEMA.names, r)) for r in BASE], schema=SCHEMA))
        _change(spark, wh, name)
    out = tmp_path / "out"
    out.mkdir()
    cmds: list[dict[str, Any]] = []
    for name in shapes:
        cmds.append({"cmd": "read", "warehouse": str(wh), "table": f"db.{name}",
                     "output": str(out / f"{name}.jsonl")})
    for sid in (2, 3, 4):  # update, delete, merge
        cmds.append({"cmd": "incremental", "warehouse": str(wh), "table": "db.pk",
                     "from": sid - 1, "to": sid, "output": str(out / f"pk-{sid}.jsonl")})
    res = run_batches({"rowlevel": cmds}, tmp_path)["rowlevel"]
    assert not res.failures(), res.failures()[:2]
    for name in shapes:
        java = (out / f"{name}.jsonl").read_text().splitlines()
        ours = cli(["read", "--warehouse", str(wh), "--table", f"db.{name}"])
        assert java == ours, name
        assert _rows(java) == EXPECTED, name
    kinds = {sid: sorted((json.loads(x)["_kind"], json.loads(x)["id"])
                         for x in (out / f"pk-{sid}.jsonl").read_text().splitlines())
             for sid in (2, 3, 4)}
    assert kinds[2] == [("+U", 2), ("+U", 3), ("+U", 4)]
    assert kinds[3] == [("-D", 3)]
    assert kinds[4] == [("+I", 5), ("+U", 1)]
