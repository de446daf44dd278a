"""The production topology (``scripts/topology.py``): one per test module, started once by
the module-scoped ``topo`` fixture, under ``/tmp/paimon-prod-<module>`` (removed after).

``make test-prod`` runs this folder; ``make test`` does not collect it (pyproject's
``norecursedirs``). A service that cannot start fails the test (no skip)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.modload import load_module

REPO = Path(__file__).resolve().parents[2]


def _script(name: str) -> ModuleType:
    import sys

    key = f"paimon_{name}"
    return sys.modules.get(key) or load_module(REPO / "scripts" / f"{name}.py", key)


@pytest.fixture(scope="module")
def topology_module() -> ModuleType:
    return _script("topology")


@pytest.fixture(scope="module")
def prod_demo() -> ModuleType:
    return _script("prod_demo")


@pytest.fixture(scope="module")
def topo(request: pytest.FixtureRequest, topology_module: ModuleType) -> Iterator[Any]:
    """The whole topology, up (every service answering)."""
    root = Path("/tmp") / f"paimon-prod-{request.module.__name__.rsplit('.', 1)[-1]}"
    shutil.rmtree(root, ignore_errors=True)
    topo = topology_module.Topology(root)
    try:
        topo.start()
        yield topo
    finally:
        topo.stop()
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        if request.session.testsfailed and reporter is not None:  # for the CI log
            for log in sorted(topo.logs.glob("*.log")):
                reporter.write_line(f"===== {log.name} (tail)\n"
                                    f"{log.read_text(errors='replace')[-3000:]}")
        shutil.rmtree(root, ignore_errors=True)
