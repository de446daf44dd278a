"""Our side of an interop test: the ``paimon`` CLI in-process, fed the same files as the
oracle (the one copy of these helpers for the interop modules)."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from paimon_core.cli.main import main as paimon_main
from tests.interop.oracle import OracleError


class CliError(OracleError):
    """``paimon ...`` exited non-zero (a harness or implementation problem, never a skip)."""


def cli(argv: Sequence[str]) -> list[str]:
    """``paimon ARGV`` in-process; its stdout lines. Raises :class:`CliError` on a non-zero
    exit, with the end of stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = paimon_main(list(argv))
    if rc != 0:
        raise CliError(f"`paimon {' '.join(argv)}` exited with {rc}: {err.getvalue()[-3000:]}")
    return out.getvalue().splitlines()


def jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> str:
    """Write ``rows`` as JSON lines (the oracle's and our CLI's input); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return str(path)
