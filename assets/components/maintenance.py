"""The maintenance component of :mod:`assets.components`: per-bucket compaction, snapshot
expiry and orphan removal of any table (:mod:`assets.maintenance`), with its checks unless
the table's own component builds them."""

from typing import Any

import dagster as dg
from pydantic import Field

from assets.components.project import field_location, project_tables
from assets.components.tables import (
    AssetAttributes,
    ChecksAttributes,
    SensorAttributes,
    _identifier,
    _Template,
    check_defs,
    state_sensor_defs,
)
from assets.labels import SettingsError
from assets.maintenance import ExpiryConfig, build_compaction, build_expiry_asset
from assets.metadata import TABLE
from assets.tables import DAILY_START, TableSpec

__all__ = ["CompactionAttributes", "ExpiryAttributes", "PaimonTableMaintenance"]


class CompactionAttributes(dg.Model):
    """Per-bucket compaction: one asset partition per bucket (per day x bucket for a
    day-partitioned table); one run per bucket at a time (``dagster.yaml``)."""

    cron: str = Field(default="0 * * * *", description="when to ask which buckets need it")
    running: bool = False
    day_start: str = Field(default=DAILY_START, description="first day (day-partitioned table)")
    asset: AssetAttributes = Field(default_factory=AssetAttributes)


class ExpiryAttributes(dg.Model):
    """Snapshot expiry and orphan removal (unset retention: the table's ``snapshot.*``
    options)."""

    cron: str | None = Field(default="30 2 * * *", description="null: no job / schedule "
                             "(the asset only)")
    running: bool = Field(default=True, description="the schedule ships running (false: "
                          "stopped, start it from the UI)")
    retain_min: int | None = None
    retain_max: int | None = None
    older_than_minutes: float | None = None
    remove_orphans: bool = True
    orphans_older_than_hours: float = 24.0
    asset: AssetAttributes = Field(default_factory=AssetAttributes)


@dg.scaffold_with(_Template)
class PaimonTableMaintenance(dg.Component, dg.Model, dg.Resolvable):
    """Maintenance of any Paimon table — ours, or one another engine (Paimon Java, Flink,
    Spark) writes: per-bucket compaction with its schedule, snapshot expiry and orphan
    removal with theirs, and the table's asset checks."""

    table: str = Field(description="database.table")
    buckets: int = Field(description="the table's 'bucket' option (compaction partitions)")
    day_partition: str | None = Field(default=None, description="the table's day partition "
                                      "column (YYYY-MM-DD values), if partitioned by day")
    table_asset_key: list[str] | None = Field(default=None, description="default [db, table]")
    external: bool = Field(default=False, description="declare the table as an asset here "
                           "(written outside this code location)")
    retain_max: int | None = Field(default=None, description="snapshot retention check bound "
                                   "(default: the table's snapshot.num-retained.max)")
    checks: ChecksAttributes | None = Field(
        default_factory=ChecksAttributes, description="the table's checks; unset, none when "
        "the table's own component in this project builds them; null: none")
    compaction: CompactionAttributes | None = Field(default_factory=CompactionAttributes)
    expiry: ExpiryAttributes | None = Field(default_factory=ExpiryAttributes)
    state_sensor: SensorAttributes | None = Field(
        default=None, description="the table's state sensor (see the table components); "
        "default: one when external (the table is declared here), none otherwise (the "
        "table's own component has it); give it to observe a table declared elsewhere")

    def spec(self) -> TableSpec:
        if self.buckets == 0 or self.buckets < -1:
            raise SettingsError(f"{self.table}: buckets must be positive (or -1), got "
                                f"{self.buckets}")
        options = {"bucket": str(self.buckets)}
        if self.retain_max is not None:
            options["snapshot.num-retained.max"] = str(self.retain_max)
        checks = self.checks or ChecksAttributes()
        return TableSpec(
            identifier=_identifier(self.table),
            schema={"partition_keys": [self.day_partition] if self.day_partition else [],
                    "options": options},
            small_file_bytes=checks.small_file_bytes, max_small_files=checks.max_small_files,
            freshness_hours=checks.freshness_hours,
            asset_key=tuple(self.table_asset_key) if self.table_asset_key else None)

    def _checks(self, context: dg.ComponentLoadContext) -> ChecksAttributes | None:
        """The checks to build: none when the table's own component in the project builds
        them (``checks`` unset).

        Raises:
            SettingsError: ``external: true`` for a table a component of the project writes,
                or ``checks:`` set here for a table whose component builds its checks.
        """
        me = field_location(context, "table")
        owner = next((t for t in project_tables(context) or ()
                      if t.identifier == self.table and t.where != me), None)
        if owner is None:
            return self.checks
        if self.external:
            raise SettingsError(
                f"{field_location(context, 'external')}: external: true, but {self.table} is "
                f"the asset of its {owner.component} ({owner.where}): remove external here")
        if owner.checks and self.checks is not None:
            if "checks" in self.model_fields_set:
                raise SettingsError(
                    f"{field_location(context, 'checks')}: checks: {self.table} has its checks "
                    f"from its {owner.component} ({owner.where}): set them there, or "
                    "checks: null here")
            return None
        return self.checks

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        spec = self.spec()
        checks = self._checks(context)
        assets: list[Any] = []
        jobs: list[Any] = []
        schedules: list[Any] = []
        if self.external:
            assets.append(dg.AssetSpec(spec.key_path, kinds={"paimon"}, metadata={
                TABLE: spec.identifier}, description=f"{spec.identifier} (written "
                "outside this code location; maintained here)"))
        if self.compaction is not None:
            c = self.compaction
            compaction = build_compaction(
                spec, cron=c.cron, day_start=c.day_start, labels=c.asset.labels(),
                schedule_status=(dg.DefaultScheduleStatus.RUNNING if c.running
                                 else dg.DefaultScheduleStatus.STOPPED))
            assets.append(compaction.asset)
            jobs.append(compaction.job)
            schedules.append(compaction.schedule)
        if self.expiry is not None:
            e = self.expiry
            expiry = build_expiry_asset(spec, labels=e.asset.labels(), defaults=ExpiryConfig(
                retain_min=e.retain_min, retain_max=e.retain_max,
                older_than_minutes=e.older_than_minutes, remove_orphans=e.remove_orphans,
                orphans_older_than_hours=e.orphans_older_than_hours))
            assets.append(expiry)
            if e.cron is not None:
                job = dg.define_asset_job(f"{spec.slug}_expiry_job", selection=[expiry],
                                          description=f"Expire snapshots of {spec.identifier} "
                                          "and remove its orphan files.")
                jobs.append(job)
                schedules.append(dg.ScheduleDefinition(
                    name=f"{spec.slug}_expiry_schedule", cron_schedule=e.cron, job=job,
                    default_status=(dg.DefaultScheduleStatus.RUNNING if e.running
                                    else dg.DefaultScheduleStatus.STOPPED)))
        sensor = self.state_sensor or (SensorAttributes() if self.external else None)
        return dg.Definitions.merge(
            check_defs(spec, checks), state_sensor_defs(spec, sensor),
            dg.Definitions(assets=assets, jobs=jobs, schedules=schedules))
