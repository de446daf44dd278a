"""Fixtures of the assets tests: a temporary warehouse + landing zone, the resources, a
catalog over the warehouse and the ``cdc.orders`` / derived tables in it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assets.resources import LandingZone, PaimonCatalog, SparkResource
from assets.tables import ORDERS, ORDERS_ENRICHED
from paimon_core.catalog import FileSystemCatalog
from paimon_core.table import FileStoreTable
from tests.tables import make_catalog


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


@pytest.fixture
def lake_catalog(lake: dict[str, Path]) -> FileSystemCatalog:
    """A catalog over the temporary lake's warehouse."""
    return make_catalog(lake["warehouse"])


@pytest.fixture
def orders(lake_catalog: FileSystemCatalog) -> FileStoreTable:
    """``cdc.orders``, created empty."""
    return ORDERS.ensure(lake_catalog)


@pytest.fixture
def tables(lake_catalog: FileSystemCatalog) -> tuple[FileStoreTable, FileStoreTable]:
    """``cdc.orders`` and its derived table, created empty."""
    return ORDERS.ensure(lake_catalog), ORDERS_ENRICHED.ensure(lake_catalog)
