"""Driver for the cross-implementation oracle (``<repo>/../shared/oracle/oracle``).

The oracle runs Apache Paimon Java 0.9 (one JVM per process) and pypaimon 2.1 behind one CLI;
the interop fixture feeds it ``--batch`` files (one process, one JVM, many operations).

Availability policy: when the oracle is missing or its installation fails, tests FAIL under
``CI=true`` (a CI run must not pass by skipping the interop suite) and are skipped locally.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

REPO = Path(__file__).resolve().parents[2]
# the shared/ directory beside the repo; PAIMON_SHARED names another one (a git worktree
# checked out elsewhere)
SHARED = Path(os.environ.get("PAIMON_SHARED") or REPO.parent / "shared")
ORACLE = SHARED / "oracle" / "oracle"
ORACLE_PY = SHARED / "oracle" / "paimon_oracle.py"

SETUP_TIMEOUT_S = 900
BATCH_TIMEOUT_S = 1200


def write_rows(path: Path, rows: Sequence[Mapping[str, Any]]) -> str:
    """``rows`` as an oracle input file (JSON lines, UTF-8) at ``path``; its path."""
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return str(path)


def command_output(root: Path, records: Mapping[str, Mapping[str, Any]], key: str
                   ) -> list[str]:
    """The output lines of the batch command ``key`` (``<root>/out/<key>.jsonl``); the test
    fails naming the command and its error when it did not succeed."""
    import pytest

    rec = records.get(key)
    if rec is None or rec.get("status") != "ok":
        pytest.fail(f"oracle command {key}: {(rec or {}).get('status')}: "
                    f"{(rec or {}).get('error')}", pytrace=False)
    return (root / "out" / f"{key}.jsonl").read_text("utf-8").splitlines()


class OracleError(RuntimeError):
    """The oracle ran but a command failed (a harness or engine problem, never a skip)."""


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def unavailable(msg: str) -> NoReturn:
    """Oracle missing / not installable: fail in CI, skip locally."""
    if in_ci():
        pytest.fail(f"interop oracle unavailable (CI=true, so this is a failure): {msg}",
                    pytrace=False)
    pytest.skip(f"interop oracle unavailable: {msg}")


def spark_jars() -> Path | None:
    """``pyspark/jars`` of the running interpreter's pyspark (not imported), if installed."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        return None
    jars = Path(spec.origin).parent / "jars"
    return jars if jars.is_dir() else None


def oracle_env() -> dict[str, str]:
    env = dict(os.environ)
    env["TZ"] = "UTC"
    jars = spark_jars()
    if jars is not None:
        env["PAIMON_ORACLE_SPARK_JARS"] = str(jars)
    return env


def ensure_ready() -> Path:
    """Checks the oracle is there and installed (``oracle setup``, idempotent, ~0.5 s when
    done; the first run installs for ~40 s). Calls :func:`unavailable` otherwise."""
    if not ORACLE.is_file():
        unavailable(f"{ORACLE} not found (CI checks shared/ out beside the repo)")
    if not os.access(ORACLE, os.X_OK):
        unavailable(f"{ORACLE} is not executable")
    try:
        p = subprocess.run([str(ORACLE), "setup", "-q"], env=oracle_env(), capture_output=True,
                           text=True, timeout=SETUP_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        unavailable(f"`oracle setup` could not run: {e}")
    if p.returncode != 0:
        tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-25:])
        unavailable(f"`oracle setup` failed with exit code {p.returncode}:\n{tail}")
    return ORACLE


@dataclass
class BatchResult:
    name: str
    returncode: int
    records: list[dict[str, Any]]  # the per-command "# batch {...}" status records
    stdout: str
    stderr: str
    seconds: float

    def failures(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("status") != "ok"]


class Batch:
    """An oracle ``--batch`` process started in the background."""

    def __init__(self, name: str, commands: Sequence[dict[str, Any]], workdir: Path) -> None:
        self.name = name
        self.n_commands = len(commands)
        self.file = workdir / f"batch-{name}.jsonl"
        self.file.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in commands),
                             encoding="utf-8")
        self.out = open(workdir / f"batch-{name}.stdout", "w+", encoding="utf-8")  # noqa: SIM115
        self.err = open(workdir / f"batch-{name}.stderr", "w+", encoding="utf-8")  # noqa: SIM115
        self.t0 = time.monotonic()
        self.t1: float | None = None
        self.proc = subprocess.Popen([str(ORACLE), "--batch", str(self.file)], cwd=workdir,
                                     env=oracle_env(), stdout=self.out, stderr=self.err)

    def poll(self) -> bool:
        """Whether the process has ended (records its wall time when it has)."""
        if self.t1 is None and self.proc.poll() is not None:
            self.t1 = time.monotonic()
        return self.t1 is not None

    def wait(self) -> BatchResult:
        try:
            rc = self.proc.wait(timeout=max(1.0, BATCH_TIMEOUT_S - (time.monotonic() - self.t0)))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.poll()
        seconds = (self.t1 or time.monotonic()) - self.t0
        self.out.seek(0)
        self.err.seek(0)
        stdout, stderr = self.out.read(), self.err.read()
        self.out.close()
        self.err.close()
        records = []
        for line in stderr.splitlines():
            if line.startswith("# batch "):
                records.append(json.loads(line[len("# batch "):]))
        return BatchResult(self.name, rc, records, stdout, stderr, seconds)


def run_batches(
    batches: Mapping[str, Sequence[dict[str, Any]]], workdir: Path
) -> dict[str, BatchResult]:
    """Runs several batch files concurrently (each one process / one JVM) and waits for all."""
    started = [Batch(name, cmds, workdir) for name, cmds in batches.items()]
    deadline = time.monotonic() + BATCH_TIMEOUT_S
    while not all([b.poll() for b in started]) and time.monotonic() < deadline:
        time.sleep(0.2)
    results = {b.name: b.wait() for b in started}
    problems = []
    for b in started:
        r = results[b.name]
        if len(r.records) != b.n_commands:
            tail = "\n".join(r.stderr.strip().splitlines()[-20:])
            problems.append(f"batch {b.name!r}: exit code {r.returncode}, "
                            f"{len(r.records)}/{b.n_commands} commands ran; stderr tail:\n{tail}")
    if problems:
        raise OracleError("\n".join(problems))
    return results
