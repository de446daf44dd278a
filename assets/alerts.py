"""Run-failure alerts of a code location: a ``run_failure_sensor`` (run by the daemon) whose
action is a Python function (``pkg.mod:fn``, called with the alert) and / or a webhook (the
alert POSTed as JSON).

The alert (:func:`failure_alert`) is one JSON object::

    {"run_id": ..., "job": ..., "status": "FAILURE", "asset_keys": ["shop/orders"],
     "partition": "2025-01-06" | null, "error": "...", "step_errors": [...],
     "retried": false, "url": "<ui_url>/runs/<run id>", "location": ..., "tags": {...}}

``retried`` says whether the instance's run retries will launch another run (false for the
failures :func:`assets.runs.non_retryable` marks). A webhook that fails (connection refused,
a status other than 2xx) fails the sensor's tick: the tick's cursor does not move, so the
alert is sent again at the next tick — at least once, never silently lost.
"""

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

import dagster as dg

from assets.labels import SettingsError, load_function
from assets.runs import NO_RUN_RETRY_TAG
from paimon_core import PaimonError

__all__ = ["AlertDeliveryError", "build_failure_alert_sensor", "failure_alert"]

#: the tags an alert carries over from the run (what it was doing)
_KEPT_TAGS = ("dagster/partition", "dagster/schedule_name", "dagster/sensor_name",
              "dagster/backfill", "dagster/parent_run_id", "dagster/retry_number")


class AlertDeliveryError(PaimonError):
    """The webhook did not take the alert (the message names the URL and the answer)."""


def _asset_keys(context: dg.RunFailureSensorContext) -> list[str]:
    run = context.dagster_run
    keys: set[dg.AssetKey] = set(run.asset_selection or ())
    if not keys:  # a named asset job's run: the materializations it planned
        records = context.instance.get_records_for_run(
            run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED).records
        keys = {r.event_log_entry.dagster_event.asset_key for r in records
                if r.event_log_entry.dagster_event is not None
                and r.event_log_entry.dagster_event.asset_key is not None}
    return sorted(k.to_user_string() for k in keys)


def failure_alert(context: dg.RunFailureSensorContext, ui_url: str) -> dict[str, Any]:
    """The alert of the failed run of ``context`` (see the module's docstring)."""
    run = context.dagster_run
    steps = []
    for event in context.get_step_failure_events():
        error = getattr(event.event_specific_data, "error", None)
        if error is not None:
            steps.append(f"{event.step_key}: {error.message.strip()}")
    origin = run.remote_job_origin
    return {
        "run_id": run.run_id,
        "job": run.job_name,
        "status": run.status.value,
        "asset_keys": _asset_keys(context),
        "partition": run.tags.get("dagster/partition"),
        "error": context.failure_event.message or "",
        "step_errors": steps,
        "retried": run.tags.get(NO_RUN_RETRY_TAG) != "false"
        and context.instance.run_retries_enabled
        and int(run.tags.get("dagster/retry_number", "0")) < _max_retries(context, run),
        "url": f"{ui_url.rstrip('/')}/runs/{run.run_id}",
        "location": origin.location_name if origin is not None else None,
        "tags": {k: run.tags[k] for k in _KEPT_TAGS if k in run.tags},
    }


def _max_retries(context: dg.RunFailureSensorContext, run: dg.DagsterRun) -> int:
    return int(run.tags.get("dagster/max_retries", context.instance.run_retries_max_retries))


def _post(url: str, alert: dict[str, Any], timeout: float) -> None:
    body = json.dumps(alert).encode()
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status = resp.status
    except (urllib.error.URLError, OSError) as e:
        raise AlertDeliveryError(f"alert webhook {url}: {e}") from e
    if not 200 <= status < 300:
        raise AlertDeliveryError(f"alert webhook {url} answered {status}")


def build_failure_alert_sensor(
    name: str, *, webhook_url: str | None = None, function: str | None = None,
    ui_url: str = "http://127.0.0.1:3000", monitored_jobs: Sequence[str] | None = None,
    minimum_interval_seconds: int = 30, timeout_seconds: float = 10.0,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.RUNNING,
) -> dg.SensorDefinition:
    """A ``run_failure_sensor`` of the code location (every job of it, or those named in
    ``monitored_jobs``; ``__ASSET_JOB`` is the UI's "Materialize") that POSTs each failed
    run's alert to ``webhook_url`` and / or calls ``function`` (``pkg.mod:fn``, one
    argument: the alert dict).

    Raises:
        SettingsError: neither action is given, or ``function`` cannot be loaded.
    """
    if not webhook_url and not function:
        raise SettingsError(f"alerts {name}: set webhook_url and / or function")
    if webhook_url and not webhook_url.startswith(("http://", "https://")):
        raise SettingsError(f"alerts {name}: webhook_url {webhook_url!r} is not an http(s) URL")
    call: Callable[[dict[str, Any]], Any] | None = (
        load_function(function, what="alert function") if function else None)
    jobs = None if monitored_jobs is None else frozenset(monitored_jobs)

    @dg.run_failure_sensor(
        name=name, minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description="Alert on every failed run: "
        + " and ".join(a for a in (webhook_url and f"POST to {webhook_url}",
                                   function and f"call {function}") if a),
    )
    def _alert(context: dg.RunFailureSensorContext) -> None:
        if jobs is not None and context.dagster_run.job_name not in jobs:
            return
        alert = failure_alert(context, ui_url)
        if webhook_url:
            _post(webhook_url, alert, timeout_seconds)
        if call is not None:
            call(alert)
        context.log.info(f"alerted: run {alert['run_id']} of {alert['job']}")

    return _alert
