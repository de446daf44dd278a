"""The metadata scale step of ``make bench`` (``bench/metadata_scale.py``) at a tiny size (200
data-file entries over 20 partitions), run as ``make bench`` runs it (a subprocess writing its
JSON), so it cannot rot; and its checks fail on a wrong table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.modload import load_module

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
SHARED = Path(os.environ.get("PAIMON_SHARED") or REPO.parent / "shared")
TINY = ["--sizes", "200", "--partitions", "20", "--rounds", "1"]
STEPS = ("plan_full", "plan_one", "commit1", "expire", "day")


def run_bench(tmp: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    out = tmp / "metadata.json"
    p = subprocess.run([sys.executable, str(BENCH / "metadata_scale.py"), *TINY, *args,
                        "--cache", str(tmp / "cache"), "--json", str(out)],
                       capture_output=True, text=True, timeout=900, cwd=REPO)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p, json.loads(out.read_text())


@pytest.fixture(scope="module")
def steps() -> ModuleType:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return load_module(BENCH / "metadata_steps.py", "metadata_steps")


def test_tiny_run_measures_and_checks_every_step(tmp_path: Path) -> None:
    p, res = run_bench(tmp_path, "--no-peers", "--no-java", "--no-s3")
    size = res["sizes"]["200"]
    commits = size["build"]["commits"]
    assert [c["files"] for c in commits] == [20] * 10  # 10 commits of 20 one-row files
    assert all(c["check"][0] for c in commits)
    for step in STEPS:
        run = size["steps"][step]["ours"]["runs"][0]
        assert run["check"][0], (step, run["check"])
        assert run["cpu_s"] > 0 and run["peak_reset"], step
    assert size["steps"]["plan_full"]["ours"]["runs"][0]["files"] == 200
    assert size["steps"]["plan_one"]["ours"]["runs"][0]["files"] == 10
    assert size["steps"]["expire"]["ours"]["runs"][0]["deleted_files"] > 0
    day = size["steps"]["day"]["ours"]["runs"][0]
    assert [c["step"] for c in day["commits"]] == [
        "cdc write", "cdc commit", "compact bucket 0", "compact bucket 1"]
    names = [t["target"] for t in res["targets"]]
    assert any("1-file commit CPU" in n for n in names)
    assert any("build commit 10 CPU" in n for n in names)
    assert "PASS" in p.stdout or "MISS" in p.stdout
    # the second run reuses the cached table: no build
    p2, res2 = run_bench(tmp_path, "--no-peers", "--no-java", "--no-s3", "--steps", "plan_one")
    assert "building" not in p2.stdout
    assert res2["sizes"]["200"]["build"]["commits"] == commits


def test_a_wrong_table_fails_the_checks(tmp_path: Path, steps: ModuleType) -> None:
    wh = tmp_path / "wh"
    lay = steps.Layout(200, 20)
    for k in range(steps.COMMITS):
        assert steps.build_commit(wh, lay, k)["check"][0]
    assert steps.step_plan(wh, lay, one=False)["check"][0]
    # the same table taken for a bigger one: too few files planned
    bigger = steps.Layout(400, 20)
    got = steps.step_plan(wh, bigger, one=False)
    assert not got["check"][0] and "400 expected" in got["check"][1]
    assert not steps.step_plan(wh, bigger, one=True)["check"][0]
    # a commit that lands elsewhere than the snapshot the layout expects
    wh2 = tmp_path / "wh2"
    steps.copy_table(wh, wh2)
    table = steps.catalog(wh2).get_table(steps.TABLE)
    steps.one_file_commit(table, lay, steps.ONE_FILE_ID + 1)
    assert not steps.step_commit1(wh2, lay)["check"][0]


@pytest.mark.oracle
def test_tiny_run_against_pypaimon_and_java(tmp_path: Path) -> None:
    from tests.interop.oracle import ensure_ready

    ensure_ready()
    # pypaimon-rust only where its venv exists (making it is pip's minute, not this test's)
    rust = [] if (BENCH / "results" / "venv-rust" / ".bench-ok").exists() else ["--no-rust"]
    _, res = run_bench(tmp_path, "--no-s3", *rust, "--steps", "plan_full", "plan_one",
                       "commit1")
    size = res["sizes"]["200"]
    for step in ("plan_full", "plan_one", "commit1"):
        r = size["steps"][step]["pypaimon"]["runs"][0]
        assert r["check"][0], (step, r["check"])
    assert size["steps"]["plan_one"]["pypaimon"]["runs"][0]["files"] == 10
    if not rust:
        assert size["steps"]["plan_one"]["pypaimon_rust"]["runs"][0]["native_planned"]
    java = size["java_spot_check"]
    assert java["ok"], java["message"]
    assert java["rows_java"] == java["rows_pypaimon"] == 5 * 10


@pytest.mark.s3
def test_s3_counts_on_the_wire() -> None:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    s3 = load_module(BENCH / "metadata_s3.py", "metadata_s3")
    res = s3.run_s3(12)
    assert res["failures"] == [], res
    st = res["steps"]
    assert set(st) >= {"commit1", "read", "plan_one", "expire", "day"}
    # every step talks to S3, and what it must do is on the wire
    assert st["commit1"]["by_method"].get("PUT", 0) >= 3  # data file, manifest, snapshot
    assert st["read"]["data_files"] == 13 and st["read"]["rows"] == 13
    assert st["read"]["data_file_requests"] >= 13  # each data file read at least once
    assert st["expire"]["expired"] == 10 and st["expire"]["deletes"] >= 1
    assert st["plan_one"]["by_method"].get("PUT", 0) == 0
    assert all(c["total"] == sum(c["by_method"].values()) for c in st.values())
