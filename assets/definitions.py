"""Assembling the code location: assets, checks, jobs, schedules, sensors and the resources of
one deployment (``local`` = the embedded defaults, ``production`` = docker/compose.yaml)."""

from typing import Literal

import dagster as dg

from assets import cdc, derived, maintenance, overwrite
from assets.checks import build_table_checks
from assets.resources import resources_for
from assets.tables import ALL_TABLES

__all__ = ["build_defs"]


def build_defs(deployment: Literal["local", "production"] = "local") -> dg.Definitions:
    """The whole code location with the resource set of ``deployment``.

    Every run executes its steps in one process (``in_process_executor``): the Spark-backed
    steps then share one Spark session per run instead of one JVM per step.
    """
    checks = [c for spec in ALL_TABLES for c in build_table_checks(spec)]
    return dg.Definitions(
        assets=[
            *cdc.cdc_assets,
            overwrite.fx_rates,
            derived.orders_enriched,
            *maintenance.compaction_assets,
            *maintenance.expiry_assets,
        ],
        asset_checks=checks,
        jobs=[
            cdc.cdc_job,
            overwrite.overwrite_job,
            derived.orders_enriched_job,
            *[c.job for c in maintenance.compactions],
            maintenance.expiry_job,
        ],
        schedules=[
            cdc.cdc_schedule,
            overwrite.overwrite_schedule,
            *[c.schedule for c in maintenance.compactions],
            maintenance.expiry_schedule,
        ],
        sensors=[derived.orders_snapshot_sensor],
        resources=dict(resources_for(deployment)),
        executor=dg.in_process_executor,
    )
