"""The per-folder timing plugin (``tests/_timing.py``) on a tiny suite run in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CONFTEST = '''
from pathlib import Path

from tests._timing import FolderTimes


def pytest_configure(config):
    config.pluginmanager.register(FolderTimes(Path(__file__).parent), "folder-times")
'''

SLOW_FIXTURE = '''
import time

import pytest


@pytest.fixture
def slow_setup():
    time.sleep(0.3)
    yield
    time.sleep(0.3)


def test_sleeps(slow_setup):
    time.sleep(0.3)


def test_fast():
    pass
'''


def _suite(root: Path) -> Path:
    suite = root / "suite"
    (suite / "alpha").mkdir(parents=True)
    (suite / "beta" / "deep").mkdir(parents=True)
    (suite / "conftest.py").write_text(CONFTEST)
    (suite / "alpha" / "test_a.py").write_text(SLOW_FIXTURE)
    (suite / "beta" / "deep" / "test_b.py").write_text("def test_b():\n    pass\n")
    (suite / "test_top.py").write_text("def test_top():\n    pass\n")
    return suite


def _run(suite: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), **env_extra}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
         str(suite), str(suite)],
        cwd=suite, env=env, capture_output=True, text=True, timeout=120)


def _rows(text: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split()[1:] for line in text.splitlines() if line.strip()}


def test_times_per_top_level_folder_printed_and_written(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    out = tmp_path / "times.txt"
    run = _run(suite, {"PAIMON_TEST_TIMES": str(out)})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "test time per folder (setup + call + teardown)" in run.stdout
    rows = _rows(out.read_text())
    assert set(rows) == {"folder", "alpha", "beta", ".", "total"}
    assert rows["alpha"][0] == "2" and rows["beta"][0] == "1" and rows["."][0] == "1"
    assert rows["total"][0] == "4"
    # setup + call + teardown of test_sleeps: 3 x 0.3 s, all counted to alpha
    assert float(rows["alpha"][1]) >= 0.85
    assert float(rows["beta"][1]) < 0.85
    # the slowest folder comes first, and the printed table is the written one
    assert list(rows)[1] == "alpha"
    assert out.read_text().strip() in run.stdout


def test_no_file_without_the_variable(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    run = _run(suite, {"PAIMON_TEST_TIMES": ""})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "test time per folder" in run.stdout
    assert not list(tmp_path.glob("*.txt"))
