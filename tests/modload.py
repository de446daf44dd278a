"""Loading a Python file that is not an importable module of the test tree (a script of
``scripts/`` or ``bench/``, the shared oracle) as a module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_module(path: Path, name: str, *, register: bool = True) -> ModuleType:
    """The module ``name`` executed from ``path``; ``register`` puts it in ``sys.modules``
    first (dataclasses and pickling look a module up there)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
