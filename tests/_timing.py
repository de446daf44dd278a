"""A pytest plugin that sums the time of each test (setup + call + teardown) per top-level
folder of the test tree and prints the table in the terminal summary; with
``PAIMON_TEST_TIMES=path`` it also writes the table to that file.

Registered by ``tests/conftest.py``; the folder of a test is the first directory of its file
below the tests root (modules directly in the root count as ``.``).
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from pathlib import Path

import pytest

ENV = "PAIMON_TEST_TIMES"
TOP = "."


class FolderTimes:
    """Durations per top-level folder of ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.seconds: dict[str, float] = defaultdict(float)
        self.tests: dict[str, set[str]] = defaultdict(set)
        self.started = time.monotonic()

    def folder(self, report: pytest.TestReport) -> str:
        path = Path(str(report.fspath)).resolve()
        try:
            parts = path.relative_to(self.root).parts
        except ValueError:  # a test file outside the root: name it by its own folder
            return path.parent.name
        return parts[0] if len(parts) > 1 else TOP

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        key = self.folder(report)
        self.seconds[key] += report.duration
        self.tests[key].add(report.nodeid)

    def table(self) -> str:
        wall = time.monotonic() - self.started
        total = sum(self.seconds.values())
        rows = sorted(self.seconds.items(), key=lambda kv: (-kv[1], kv[0]))
        width = max([len("folder"), *(len(k) for k, _ in rows)])
        lines = [f"{'folder':<{width}}  {'tests':>6}  {'seconds':>9}  {'share':>6}"]
        for key, secs in rows:
            share = secs / total if total else 0.0
            lines.append(f"{key:<{width}}  {len(self.tests[key]):>6}  {secs:>9.1f}  "
                         f"{share:>6.1%}")
        n = sum(len(v) for v in self.tests.values())
        lines.append(f"{'total':<{width}}  {n:>6}  {total:>9.1f}  (wall {wall:.1f} s)")
        return "\n".join(lines)

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.seconds:
            return
        text = self.table()
        terminalreporter.write_sep("=", "test time per folder (setup + call + teardown)")
        terminalreporter.write_line(text)
        out = os.environ.get(ENV)
        if out:
            Path(out).write_text(text + "\n", encoding="utf-8")
