"""Asset checks of every table: ``fsck`` clean, small-file count, snapshot count within
retention, freshness.

Each check loads the table fresh (metadata only; ``fsck`` also lists the data directories)
and reports its figures as metadata, so a check's history shows the trend.

How they run besides the runs that include them (:class:`CheckPolicy`):

* **Blocking** (default ``fsck_clean``): in a run that materializes the table and runs the
  check, a failure (severity ERROR) stops every asset downstream of the table in that run —
  a derived table is not fed from a corrupt source. The failed run is not retried
  (:func:`assets.runs.not_retried`): a missing file does not come back by retrying.
* **Evaluated on a schedule** (default ``freshness``, every 15 min): a job of the table's
  checks alone (``<slug>_checks_job``) and its schedule (running by default; the daemon
  launches it), so the table's freshness shows passing / failing in the UI without anyone
  launching a run — also for a table another engine writes (the check reads the latest
  snapshot's commit time, not Dagster's events). Not an automation condition on the checks:
  Dagster 1.13's automation sensor requests no run for an unpartitioned check of a
  partitioned asset (its partition keys are those of the asset, and the check has none).
"""

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from assets.labels import SettingsError
from assets.metadata import id_text, table_stats
from assets.resources import PaimonCatalog
from assets.runs import not_retried
from assets.tables import TableSpec
from paimon_core import CoreOptions
from paimon_core.fsck import fsck  # the public submodule (the root keeps its name for it)

__all__ = ["CheckPolicy", "build_check_schedule", "build_group_check_schedule",
           "build_table_checks", "check_names"]

CHECK_NAMES = ("fsck_clean", "small_files", "snapshot_retention", "freshness")


def check_names() -> tuple[str, ...]:
    return CHECK_NAMES


def _names(names: Iterable[str], setting: str) -> tuple[str, ...]:
    out = tuple(names)
    unknown = sorted(set(out) - set(CHECK_NAMES))
    if unknown:
        raise SettingsError(f"checks.{setting}: unknown check(s) {unknown}; the checks are "
                            f"{list(CHECK_NAMES)}")
    return out


@dataclass(frozen=True)
class CheckPolicy:
    """How a table's checks run besides the runs that include them.

    Attributes:
        blocking: checks whose failure stops the table's downstream assets in the same run
            (and marks the run not to be retried).
        cron: when the ``evaluated`` checks run by themselves (UTC cron); ``None``: only
            when a run includes them.
        evaluated: the checks the ``cron`` schedule evaluates.
        schedule_running: the schedule's default status (running unless set otherwise).
    """

    blocking: tuple[str, ...] = ("fsck_clean",)
    cron: str | None = "*/15 * * * *"
    evaluated: tuple[str, ...] = ("freshness",)
    schedule_running: bool = True

    def __post_init__(self) -> None:
        _names(self.blocking, "blocking")
        _names(self.evaluated, "evaluated")

    def severity(self, name: str) -> dg.AssetCheckSeverity:
        """A failing check's severity: ERROR when it blocks (only ERROR stops downstream
        assets), else WARN (fsck_clean is always ERROR)."""
        return (dg.AssetCheckSeverity.ERROR if name in self.blocking
                else dg.AssetCheckSeverity.WARN)


def _missing(spec: TableSpec) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        passed=False, severity=dg.AssetCheckSeverity.WARN,
        description=f"{spec.identifier} does not exist yet (never materialized)",
    )


def build_check_schedule(spec: TableSpec, policy: CheckPolicy
                         ) -> tuple[Any, dg.ScheduleDefinition] | None:
    """The job running the table's ``policy.evaluated`` checks alone (``<slug>_checks_job``)
    and its schedule on ``policy.cron`` (UTC); ``None`` without a cron."""
    return build_group_check_schedule(spec.slug, [spec], policy)


def build_group_check_schedule(slug: str, specs: Sequence[TableSpec], policy: CheckPolicy
                               ) -> tuple[Any, dg.ScheduleDefinition] | None:
    """One job running the ``policy.evaluated`` checks of every table of ``specs`` alone
    (``<slug>_checks_job``: a component of many tables has one) and its schedule on
    ``policy.cron`` (UTC); ``None`` without a cron or a table."""
    if policy.cron is None or not policy.evaluated or not specs:
        return None
    what = ", ".join(s.identifier for s in specs)
    job = dg.define_asset_job(
        f"{slug}_checks_job",
        selection=dg.AssetSelection.checks(*(dg.AssetCheckKey(dg.AssetKey(s.key_path), n)
                                             for s in specs for n in policy.evaluated)),
        description=f"Evaluate {', '.join(policy.evaluated)} of {what} (no run of the "
        "table).")
    try:
        schedule = dg.ScheduleDefinition(
            name=f"{slug}_checks_schedule", cron_schedule=policy.cron, job=job,
            execution_timezone="UTC",
            default_status=(dg.DefaultScheduleStatus.RUNNING if policy.schedule_running
                            else dg.DefaultScheduleStatus.STOPPED),
            description=f"Evaluate {', '.join(policy.evaluated)} of {what} on "
            f"'{policy.cron}' (UTC).")
    except dg.DagsterInvalidDefinitionError as e:
        raise SettingsError(f"{what}: checks.schedule.cron {policy.cron!r}: {e}") from e
    return job, schedule


def build_table_checks(spec: TableSpec, policy: CheckPolicy | None = None
                       ) -> list[dg.AssetChecksDefinition]:
    """The four checks of one table asset (key ``spec.key_path``), blocking and evaluated
    on a schedule as ``policy`` says (default :class:`CheckPolicy`)."""
    key = dg.AssetKey(spec.key_path)
    policy = policy or CheckPolicy()
    fsck_blocks = "fsck_clean" in policy.blocking

    def _settled(context: dg.AssetCheckExecutionContext, name: str,
                 result: dg.AssetCheckResult) -> dg.AssetCheckResult:
        """``result``; a failing blocking check fails its run, which no retry can fix (the
        table stays as it is): the run is marked not to be retried."""
        if not result.passed and name in policy.blocking:
            not_retried(context, f"{name} of {spec.identifier} failed: downstream assets of "
                        "the run are not materialized")
        return result

    @dg.asset_check(
        asset=key, name="fsck_clean", blocking=fsck_blocks,
        description="paimon fsck: contiguous snapshots, every referenced file present, no "
        "file added twice, no overlapping LSM levels, one bucket count per partition."
        + (" Blocking: a failure stops the table's downstream assets in the run." if
           fsck_blocks else ""),
    )
    def fsck_clean(context: dg.AssetCheckExecutionContext,
                   catalog: PaimonCatalog) -> dg.AssetCheckResult:
        cat = catalog.load()
        if not cat.table_exists(spec.identifier):
            return _missing(spec)
        report = fsck(cat.get_table(spec.identifier))
        return _settled(context, "fsck_clean", dg.AssetCheckResult(
            passed=report.ok,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata={
                "errors": dg.MetadataValue.int(len(report.errors)),
                "warnings": dg.MetadataValue.int(len(report.warnings)),
                "snapshots_checked": dg.MetadataValue.int(len(report.snapshot_ids)),
                "findings": dg.MetadataValue.json([f.to_json() for f in report.findings[:20]]),
            },
        ))

    @dg.asset_check(
        asset=key, name="small_files", blocking="small_files" in policy.blocking,
        description=f"At most {spec.max_small_files} live files smaller than "
        f"{spec.small_file_bytes} bytes (else compaction is falling behind).",
    )
    def small_files(context: dg.AssetCheckExecutionContext,
                   catalog: PaimonCatalog) -> dg.AssetCheckResult:
        cat = catalog.load()
        if not cat.table_exists(spec.identifier):
            return _missing(spec)
        stats = table_stats(cat.get_table(spec.identifier), small_file_bytes=spec.small_file_bytes)
        return _settled(context, "small_files", dg.AssetCheckResult(
            passed=stats.small_files <= spec.max_small_files,
            severity=policy.severity("small_files"),
            metadata={
                "small_files": dg.MetadataValue.int(stats.small_files),
                "live_files": dg.MetadataValue.int(stats.files),
                "live_bytes": dg.MetadataValue.int(stats.bytes),
                "threshold_bytes": dg.MetadataValue.int(spec.small_file_bytes),
                "max_small_files": dg.MetadataValue.int(spec.max_small_files),
            },
        ))

    @dg.asset_check(
        asset=key, name="snapshot_retention",
        blocking="snapshot_retention" in policy.blocking,
        description="Retained snapshots within 'snapshot.num-retained.max' (else expiry is not "
        "running, or a consumer holds snapshots back).",
    )
    def snapshot_retention(context: dg.AssetCheckExecutionContext,
                          catalog: PaimonCatalog) -> dg.AssetCheckResult:
        cat = catalog.load()
        if not cat.table_exists(spec.identifier):
            return _missing(spec)
        table = cat.get_table(spec.identifier)
        sm = table.snapshot_manager
        earliest, latest = sm.earliest_snapshot_id(), sm.latest_snapshot_id()
        count = 0 if earliest is None or latest is None else latest - earliest + 1
        limit = int(table.options.get(CoreOptions.SNAPSHOT_NUM_RETAINED_MAX) or spec.retain_max)
        return _settled(context, "snapshot_retention", dg.AssetCheckResult(
            passed=count <= limit,
            severity=policy.severity("snapshot_retention"),
            metadata={
                "retained_snapshots": dg.MetadataValue.int(count),
                "earliest": id_text(earliest),
                "latest": id_text(latest),
                "retain_max": dg.MetadataValue.int(limit),
            },
        ))

    @dg.asset_check(
        asset=key, name="freshness", blocking="freshness" in policy.blocking,
        description=f"The latest snapshot is at most {spec.freshness_hours} h old.",
    )
    def freshness(context: dg.AssetCheckExecutionContext,
                 catalog: PaimonCatalog) -> dg.AssetCheckResult:
        cat = catalog.load()
        if not cat.table_exists(spec.identifier):
            return _missing(spec)
        snap = cat.get_table(spec.identifier).latest_snapshot()
        if snap is None:
            return _settled(context, "freshness", dg.AssetCheckResult(
                passed=False, severity=policy.severity("freshness"),
                description="no snapshot yet"))
        lag_s = max(0.0, time.time() - snap.time_millis / 1000)
        return _settled(context, "freshness", dg.AssetCheckResult(
            passed=lag_s <= spec.freshness_hours * 3600,
            severity=policy.severity("freshness"),
            metadata={
                "latest_snapshot": dg.MetadataValue.int(snap.id),
                "lag_minutes": dg.MetadataValue.float(round(lag_s / 60, 2)),
                "max_lag_hours": dg.MetadataValue.float(spec.freshness_hours),
            },
        ))

    return [fsck_clean, small_files, snapshot_retention, freshness]
