"""The asset checks: fsck clean, small files, snapshot retention, freshness."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import dagster as dg

from assets.checks import build_table_checks
from assets.tables import ORDERS
from paimon_core.table import FileStoreTable
from tests.assets.helpers import commit_orders, order_rows


def _run(spec: Any, resources: dict[str, Any], *, ok: bool = True
         ) -> dict[str, dg.AssetCheckEvaluation]:
    """The checks' evaluations; ``ok``: whether the run succeeds (a failing fsck_clean, a
    blocking check, fails its step)."""
    checks = build_table_checks(spec)
    result = dg.materialize(
        [*checks, dg.AssetSpec(spec.key_path)],
        resources={"catalog": resources["catalog"]},
        selection=dg.AssetSelection.checks(*checks),
        raise_on_error=False,
    )
    assert result.success is ok
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_checks_on_a_healthy_table(orders: FileStoreTable, resources: dict[str, Any]) -> None:
    for i in range(1, 4):
        commit_orders(orders, order_rows([i, i + 10], "new"), i)
    ev = _run(ORDERS, resources)
    assert sorted(ev) == ["freshness", "fsck_clean", "small_files", "snapshot_retention"]
    assert all(e.passed for e in ev.values()), {k: e.metadata for k, e in ev.items()}
    assert ev["fsck_clean"].metadata["errors"].value == 0
    assert ev["fsck_clean"].metadata["snapshots_checked"].value == 3
    assert ev["snapshot_retention"].metadata["retained_snapshots"].value == 3
    assert ev["snapshot_retention"].metadata["retain_max"].value == 4
    # 3 commits x 1-2 buckets: every file is tiny
    live = ev["small_files"].metadata["live_files"].value
    assert ev["small_files"].metadata["small_files"].value == live >= 3
    assert ev["freshness"].metadata["latest_snapshot"].value == 3


def test_checks_fail_on_a_broken_table(orders: FileStoreTable, resources: dict) -> None:
    for i in range(1, 11):
        commit_orders(orders, order_rows([i], "new"), i)
    # a data file vanishes behind the table's back
    victim = next(p for p in Path(orders.path).rglob("data-*.parquet"))
    os.remove(victim)
    strict = dataclasses.replace(ORDERS, max_small_files=5, freshness_hours=0.0)
    ev = _run(strict, resources, ok=False)  # fsck_clean blocks: its step fails
    assert not ev["fsck_clean"].passed
    assert ev["fsck_clean"].severity is dg.AssetCheckSeverity.ERROR
    assert ev["fsck_clean"].metadata["errors"].value >= 1
    kinds = {f["kind"] for f in ev["fsck_clean"].metadata["findings"].value}
    assert "missing_data_file" in kinds
    # 10 snapshots > snapshot.num-retained.max = 4 (expiry has not run)
    assert not ev["snapshot_retention"].passed
    assert ev["snapshot_retention"].metadata["retained_snapshots"].value == 10
    assert not ev["small_files"].passed  # 9 tiny files left > 5
    assert not ev["freshness"].passed
    assert ev["freshness"].severity is dg.AssetCheckSeverity.WARN


def test_checks_before_the_table_exists(resources: dict[str, Any]) -> None:
    ev = _run(ORDERS, resources)
    assert not any(e.passed for e in ev.values())
    assert all(e.severity is dg.AssetCheckSeverity.WARN for e in ev.values())
