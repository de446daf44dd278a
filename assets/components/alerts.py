"""The run-failure alerts component of :mod:`assets.components` (:mod:`assets.alerts`)."""

from typing import Any

import dagster as dg
from pydantic import Field

from assets.alerts import build_failure_alert_sensor
from assets.components.tables import TEMPLATES, _Template

__all__ = ["PaimonRunAlerts"]

TEMPLATES["PaimonRunAlerts"] = {"webhook_url": "https://alerts.example.com/dagster",
                                "ui_url": "http://127.0.0.1:3000"}


@dg.scaffold_with(_Template)
class PaimonRunAlerts(dg.Component, dg.Model, dg.Resolvable):
    """An alert for every failed run of the code location (the daemon's run-failure
    sensor): a JSON POST to ``webhook_url`` and / or a call of ``function`` (``pkg.mod:fn``,
    given the alert as a dict) with the run id, job, asset keys, partition, error, whether
    a retry follows, and a link to the run in the UI (``ui_url``)."""

    webhook_url: str | None = Field(default=None, description="POST the alert as JSON here")
    function: str | None = Field(default=None, description="package.module:function called "
                                 "with the alert (a dict)")
    ui_url: str = Field(default="http://127.0.0.1:3000", description="the Dagster UI's "
                        "address, for the run's link")
    jobs: list[str] | None = Field(default=None, description="only these jobs' runs "
                                   "(default: every job; __ASSET_JOB = the UI's Materialize)")
    name: str = Field(default="paimon_run_failure_alerts", description="the sensor's name")
    minimum_interval_seconds: int = 30
    timeout_seconds: float = 10.0
    running: bool = True

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        sensor: Any = build_failure_alert_sensor(
            self.name, webhook_url=self.webhook_url, function=self.function,
            ui_url=self.ui_url, monitored_jobs=self.jobs,
            minimum_interval_seconds=self.minimum_interval_seconds,
            timeout_seconds=self.timeout_seconds,
            default_status=(dg.DefaultSensorStatus.RUNNING if self.running
                            else dg.DefaultSensorStatus.STOPPED))
        return dg.Definitions(sensors=[sensor])
