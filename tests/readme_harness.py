"""The harness of ``tests/test_readme_commands.py``: README.md's commands, a shell that runs
them as written (placeholders substituted), and the small tables the scenarios start from."""

from __future__ import annotations

import decimal
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from paimon_core.catalog import FileSystemCatalog
from paimon_core.compact import live_bucket_files
from paimon_core.schema_builder import Schema
from paimon_core.spec.snapshot import CommitKind
from paimon_core.table import FileStoreTable
from tests.tables import write_rows

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
VENV_BIN = Path(sys.executable).parent
#: the S3 endpoint of the README's examples (replaced by moto_server's)
S3_PLACEHOLDER = "http://127.0.0.1:9000"


# ------------------------------------------------------------------------------ the README


def readme_commands(text: str) -> list[tuple[int, str]]:
    """``(line number, command)`` of every command in the shell blocks of ``text``:
    continuation lines joined, comment-only and blank lines dropped."""
    out: list[tuple[int, str]] = []
    in_block = False
    pending: list[str] = []
    start = 0
    for no, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            in_block = line.strip() in ("```bash", "```sh", "```shell")
            continue
        if not in_block:
            continue
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not pending:
            start = no
        pending.append(line)
        if not line.rstrip().endswith("\\"):
            out.append((start, "\n".join(pending)))
            pending = []
    return out


def command_key(command: str) -> str:
    """The command's words (shell quoting and comments removed), space-separated."""
    return " ".join(shlex.split(command.replace("\\\n", " "), comments=True))


# ------------------------------------------------------------------------------ running


@dataclass
class Shell:
    """Runs README commands: ``work`` is the working directory of commands that name no
    repository path (their relative names live there), ``env`` the activated virtualenv's."""

    work: Path
    env: dict[str, str]
    subst: dict[str, str] = field(default_factory=dict)
    s3: Callable[[], str] = lambda: S3_PLACEHOLDER  # the S3 endpoint (started lazily)

    def prepare(self, command: str) -> tuple[str, Path]:
        """The command with its placeholders substituted, and where it runs."""
        text = command
        for placeholder, value in self.subst.items():
            text = text.replace(placeholder, value)
        if S3_PLACEHOLDER in text:
            text = text.replace(S3_PLACEHOLDER, self.s3())
        uses_repo = ".venv/" in text or "$PWD" in text
        return text, (REPO if uses_repo else self.work)

    def run(self, command: str, *, expect_rc: int = 0) -> subprocess.CompletedProcess[str]:
        text, cwd = self.prepare(command)
        p = subprocess.run(["bash", "-c", text], cwd=cwd, env=self.env, capture_output=True,
                           text=True, timeout=900, check=False)
        assert p.returncode == expect_rc, (
            f"{text}\nexit {p.returncode} (expected {expect_rc})\nstdout:\n{p.stdout[-3000:]}"
            f"\nstderr:\n{p.stderr[-6000:]}")
        return p

    def json_lines(self, command: str) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.run(command).stdout.splitlines()
                if x.strip() and not x.startswith("#")]


def venv_env() -> dict[str, str]:
    """This process's environment as a fresh shell after ``. .venv/bin/activate`` has it:
    nothing of a SparkSession this test process may have started."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYSPARK_", "SPARK_")) and k not in ("PYTHONPATH", "PWD")}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(VENV_BIN.parent)
    env["TZ"] = "UTC"
    return env


# ------------------------------------------------------------------------------ data


def keyed_rows(part: str, parts: tuple[str, ...], ids: range, commit: int
               ) -> list[dict[str, Any]]:
    """Every key of ``parts`` x ``ids`` with its amount after commit ``commit`` (every commit
    updates every key), as ``paimon read`` prints rows."""
    keys = [(p, i) for p in parts for i in ids]
    return norm([{part: p, "order_id": i, "amount": f"{commit * (k + 1)}.00"}
                 for k, (p, i) in enumerate(keys)])


def orders_rows(commit: int) -> list[dict[str, Any]]:
    """``db.orders`` (the ``paimon`` examples) after commit ``commit``."""
    return keyed_rows("region", ("emea", "amer"), range(1, 5), commit)


def sales_rows(commit: int) -> list[dict[str, Any]]:
    """``sales.orders`` (the Spark job examples) after commit ``commit``."""
    return keyed_rows("dt", ("2024-01-01", "2024-01-02"), range(1, 4), commit)


def norm(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


def schema_json(part: str, options: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "fields": [{"name": part, "type": "STRING"}, {"name": "order_id", "type": "BIGINT"},
                   {"name": "amount", "type": "DECIMAL(12, 2)"}],
        "partition_keys": [part], "primary_keys": [part, "order_id"],
        "options": {"bucket": "2", **(options or {})},
    }


def arrow_rows(rows: list[dict[str, Any]]) -> pa.Table:
    cols: dict[str, pa.Array] = {}
    for name in rows[0]:
        values = [r[name] for r in rows]
        if name == "order_id":
            cols[name] = pa.array(values, pa.int64())
        elif name == "amount":
            cols[name] = pa.array([None if v is None else decimal.Decimal(v) for v in values],
                                  pa.decimal128(12, 2))
        else:
            cols[name] = pa.array(values, pa.string())
    return pa.table(cols)


def commit_rows(table: FileStoreTable, rows: list[dict[str, Any]], identifier: int) -> None:
    write_rows(table, arrow_rows(rows), identifier, user="prep")


def make_table(wh: Path, identifier: str, commits: int) -> FileStoreTable:
    """``db.orders`` (partitioned by region) or ``sales.orders`` / ``staging.orders``
    (partitioned by dt) with ``commits`` snapshots; ``write-only``, so that every bucket keeps
    one level-0 file per commit for the compactions to find."""
    part, rows = ("region", orders_rows) if identifier == "db.orders" else ("dt", sales_rows)
    schema = Schema.from_json(schema_json(part, {"write-only": "true"}))
    table = FileSystemCatalog(str(wh)).create_table(identifier, schema)
    for c in range(1, commits + 1):
        commit_rows(table, rows(c), c)
    return table


def fresh(table: FileStoreTable) -> FileStoreTable:
    return FileSystemCatalog(str(Path(table.path).parent.parent)).get_table(
        str(table.identifier))


def rows_of(table: FileStoreTable, **kw: Any) -> list[dict[str, Any]]:
    """The table's rows now (or at ``snapshot_id`` / ``tag``), decimals as strings."""
    rows = fresh(table).to_arrow(**kw).to_pylist()
    return norm([{k: (f"{v:.2f}" if isinstance(v, decimal.Decimal) else v)
                  for k, v in r.items()} for r in rows])


def kinds(rows: list[dict[str, Any]], kind: str = "+I") -> list[dict[str, Any]]:
    return norm([{"_kind": kind, **r} for r in rows])


def age_snapshots(table: FileStoreTable, upto: int, millis: int) -> None:
    """Make snapshots ``1..upto`` look ``millis`` old (their ``timeMillis``)."""
    now = int(time.time() * 1000)
    for n in range(1, upto + 1):
        path = Path(table.path) / "snapshot" / f"snapshot-{n}"
        snap = json.loads(path.read_text())
        snap["timeMillis"] = now - millis
        path.write_text(json.dumps(snap))


def old_orphan(table: FileStoreTable, partition: str) -> Path:
    """A file no snapshot references, modified two days ago."""
    orphan = Path(table.path) / partition / "bucket-0" / "data-orphan-0.parquet"
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(b"not referenced by any snapshot")
    two_days_ago = time.time() - 2 * 86400
    os.utime(orphan, (two_days_ago, two_days_ago))
    return orphan


def live_files(table: FileStoreTable) -> dict[tuple[bytes, int], list[str]]:
    """The latest snapshot's data files per (partition, bucket)."""
    t = fresh(table)
    groups = live_bucket_files(t.manifest_io, t.latest_snapshot())
    return {k: sorted(f.file_name for f in files) for k, (_, files) in groups.items()}


def latest_kind(table: FileStoreTable) -> CommitKind:
    snap = fresh(table).latest_snapshot()
    assert snap is not None
    return snap.commit_kind


def flags(command: str) -> dict[str, str]:
    """``--name value`` pairs of ``command`` (a flag without a value maps to "")."""
    toks = shlex.split(command, comments=True)
    out: dict[str, str] = {}
    for i, t in enumerate(toks):
        if t.startswith("--"):
            nxt = toks[i + 1] if i + 1 < len(toks) else "--"
            out[t] = "" if nxt.startswith("--") else nxt
    return out
