"""Assembling the code location: the demo's components (``assets/demo/*/defs.yaml``, the dg
project's defs folder) and the resources of one deployment (``local`` = the embedded
defaults, ``production`` = docker/compose.yaml).

The builder modules' demo names (``assets.cdc.cdc_orders``, ``assets.maintenance.compactions``
...) are the objects these components built (:func:`demo_object`): the YAML is their one
home."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal

import dagster as dg

from assets.resources import resources_for
from assets.tables import ALL_TABLES, DEMO_DEFS

__all__ = ["build_defs", "demo_definitions", "demo_object"]


@functools.cache
def demo_definitions() -> dg.Definitions:
    """The demo's definitions as its ``defs.yaml`` components build them (no resources).

    Loaded from the package itself (``assets.demo``), so an install without the
    repository's ``pyproject.toml`` (a wheel) loads the same; ``dg`` finds the same folder
    through ``[tool.dg]``."""
    import assets.demo

    return dg.ComponentTree.from_module(
        defs_module=assets.demo, project_root=DEMO_DEFS.parent.parent).build_defs()


def build_defs(deployment: Literal["local", "production"] = "local") -> dg.Definitions:
    """The whole code location with the resource set of ``deployment``.

    Every run executes its steps in one process (``in_process_executor``): the Spark-backed
    steps then share one Spark session per run instead of one JVM per step.
    """
    return dg.Definitions.merge(demo_definitions(), dg.Definitions(
        resources=dict(resources_for(deployment)), executor=dg.in_process_executor))


def _asset(*key: str) -> Callable[[dg.Definitions], Any]:
    def get(d: dg.Definitions) -> Any:
        wanted = dg.AssetKey(list(key))
        return next(a for a in d.assets or () if isinstance(a, dg.AssetsDefinition)
                    and wanted in a.keys)
    return get


def _named(kind: str, name: str) -> Callable[[dg.Definitions], Any]:
    def get(d: dg.Definitions) -> Any:
        return next(o for o in getattr(d, kind) or () if o.name == name)
    return get


def _compactions(d: dg.Definitions) -> list[Any]:
    from assets.maintenance import Compaction

    return [Compaction(_asset("maintenance", f"{t.slug}_compaction")(d),
                       _named("jobs", f"{t.slug}_compaction_job")(d),
                       _named("schedules", f"{t.slug}_compaction_schedule")(d))
            for t in ALL_TABLES]


_DEMO: dict[str, dict[str, Callable[[dg.Definitions], Any]]] = {
    "assets.cdc": {
        "cdc_customers": _asset("cdc", "customers"),
        "cdc_orders": _asset("cdc", "orders"),
        "cdc_assets": lambda d: [_asset("cdc", "customers")(d), _asset("cdc", "orders")(d)],
        "cdc_job": _named("jobs", "cdc_ingest_job"),
        "cdc_schedule": _named("schedules", "cdc_ingest_job_schedule"),
    },
    "assets.overwrite": {
        "fx_rates": _asset("ref", "fx_rates"),
        "overwrite_job": _named("jobs", "fx_rates_overwrite_job"),
        "overwrite_schedule": _named("schedules", "fx_rates_overwrite_job_schedule"),
    },
    "assets.derived": {
        "orders_enriched": _asset("mart", "orders_enriched"),
        "orders_enriched_job": _named("jobs", "mart_orders_enriched_job"),
        "orders_snapshot_sensor": _named("sensors", "cdc_orders_snapshot_sensor"),
    },
    "assets.maintenance": {
        "compactions": _compactions,
        "compaction_assets": lambda d: [c.asset for c in _compactions(d)],
        "expiry_assets": lambda d: [_asset("maintenance", f"{t.slug}_expiry")(d)
                                    for t in ALL_TABLES],
        "expiry_job": _named("jobs", "expiry_job"),
        "expiry_schedule": _named("schedules", "expiry_schedule"),
    },
}


def demo_object(module: str, name: str) -> Any:
    """The demo's object ``module.name`` (e.g. ``assets.cdc.cdc_orders``)."""
    getter = _DEMO.get(module, {}).get(name)
    if getter is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    return getter(demo_definitions())
