"""Fixtures of the assets tests: a temporary warehouse + landing zone and the resources."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assets.resources import LandingZone, PaimonCatalog, SparkResource


@pytest.fixture
def lake(tmp_path: Path) -> dict[str, Path]:
    """A warehouse and a landing zone in a temporary directory."""
    out = {"warehouse": tmp_path / "warehouse", "landing": tmp_path / "landing"}
    for p in out.values():
        p.mkdir()
    return out


@pytest.fixture
def resources(lake: dict[str, Path]) -> dict[str, Any]:
    """The local resource set pointing at the temporary lake."""
    return {
        "catalog": PaimonCatalog(warehouse=str(lake["warehouse"])),
        "landing": LandingZone(root=str(lake["landing"])),
        "spark": SparkResource(master="local[2]"),
    }

