"""The Hypothesis profiles (``tests/profiles.py``): which one the environment selects and how a
test's example count scales with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from tests.profiles import BASE_EXAMPLES, CI, DEV, examples

REPO = Path(__file__).resolve().parent.parent
PROBE = ("from hypothesis import settings; from tests.profiles import register_profiles, examples;"
         " name = register_profiles(); d = settings.default;"
         " print(name, d.max_examples, d.deadline, d.derandomize, examples(60))")


@pytest.mark.parametrize(("env", "expected"), [
    ({}, f"{DEV} 25 None False 15"),
    ({"CI": "true"}, f"{CI} 200 None True 120"),
    ({"CI": "false"}, f"{DEV} 25 None False 15"),
    ({"CI": "true", "HYPOTHESIS_PROFILE": DEV}, f"{DEV} 25 None False 15"),
    ({"HYPOTHESIS_PROFILE": CI}, f"{CI} 200 None True 120"),
])
def test_the_environment_selects_the_profile(env: dict[str, str], expected: str) -> None:
    base = {k: v for k, v in os.environ.items() if k not in ("CI", "HYPOTHESIS_PROFILE")}
    out = subprocess.run([sys.executable, "-c", PROBE], env={**base, "PYTHONPATH": str(REPO),
                                                                   **env},
                         capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split("\n")[0] == expected


def test_examples_scale_with_the_loaded_profile() -> None:
    current = settings.default
    assert current is not None and current.max_examples in BASE_EXAMPLES.values()
    assert examples(100) == current.max_examples
    assert examples(300) == 3 * current.max_examples
    assert examples(1) == 2  # never fewer than two
