"""``make demo``'s directory rule (scripts/demo.py): a previous demo's directory is replaced,
anything else is left alone unless ``--reset``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from tests.modload import load_module

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "scripts" / "demo.py"


def _demo_module() -> ModuleType:
    return load_module(DEMO, "paimon_demo_script", register=False)


def _old_demo(root: Path) -> Path:
    """The layout a demo made before the marker file existed."""
    for name in ("dagster_home", "warehouse", "landing"):
        (root / name).mkdir(parents=True)
    (root / "dagster_home" / "dagster.yaml").write_text("storage: {}\n")
    return root


def test_marked_and_older_demo_directories_are_previous_demos(tmp_path: Path) -> None:
    demo = _demo_module()
    marked = tmp_path / "marked"
    marked.mkdir()
    (marked / demo.MARKER).write_text("x")
    (marked / "anything").write_text("x")
    assert demo.is_previous_demo(marked)
    assert demo.is_previous_demo(_old_demo(tmp_path / "old"))
    # the old layout plus a file of the user's, or without the demo's instance: not a demo
    extra = _old_demo(tmp_path / "extra")
    (extra / "notes.txt").write_text("mine")
    assert not demo.is_previous_demo(extra)
    bare = tmp_path / "bare"
    (bare / "warehouse").mkdir(parents=True)
    assert not demo.is_previous_demo(bare)


def test_demo_command_leaves_a_foreign_directory_alone(tmp_path: Path) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "keep.txt").write_text("precious")
    env = {**os.environ, "PAIMON_DEMO_DIR": str(target)}
    env.pop("PAIMON_DEMO_RESET", None)
    res = subprocess.run([sys.executable, str(DEMO)], env=env, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert "not a previous demo's directory" in res.stderr
    assert (target / "keep.txt").read_text() == "precious"
    assert sorted(p.name for p in target.iterdir()) == ["keep.txt"]
