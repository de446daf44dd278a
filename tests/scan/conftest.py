"""Fixtures of the scan tests: the primary-key table with the recorded six-commit history."""

from __future__ import annotations

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.table import FileStoreTable
from tests.scan.change_tables import build_history, pk_table


@pytest.fixture
def pk(catalog: FileSystemCatalog) -> FileStoreTable:
    """``db.pk`` after :func:`~tests.scan.change_tables.build_history` (snapshots 1..6)."""
    t = pk_table(catalog, "db.pk")
    build_history(t)
    return t
