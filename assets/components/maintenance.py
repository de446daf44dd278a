"""The maintenance component of :mod:`assets.components`: per-bucket compaction, snapshot
expiry and orphan removal of any table (:mod:`assets.maintenance`), with its checks unless
the table's own component builds them."""

import warnings
from typing import Any

import dagster as dg
from pydantic import Field

from assets.components.project import TableDecl, field_location, project_tables
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
from assets.tables import DAILY_START, BucketLayout, TableSpec

__all__ = ["CompactionAttributes", "ExpiryAttributes", "PaimonTableMaintenance"]


class CompactionAttributes(dg.Model):
    """Per-bucket compaction: one asset partition per bucket of the table (per day x bucket
    for a day-partitioned table); one run per bucket at a time (``dagster.yaml``). The
    buckets: those the table's own component in the project declares (fixed: ``0..N-1``;
    an append table's ``-1``: bucket 0), else the table's, added to dynamic partitions by a
    sensor and by the schedule (a dynamic-bucket table's live buckets, as they appear)."""

    cron: str = Field(default="0 * * * *", description="when to ask which buckets need it")
    buckets_interval: int = Field(
        default=60, description="seconds between two looks of the buckets sensor at the "
        "table's buckets (dynamic partitions: a dynamic-bucket table, or one no component of "
        "the project creates)")
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
    buckets: int | None = Field(default=None, description="deprecated: the compaction "
                                "reads the table's bucket layout; when given, it must be the "
                                "table's 'bucket' option")
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
        options: dict[str, str] = {}
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

    def _owner(self, context: dg.ComponentLoadContext) -> TableDecl | None:
        """The table as another component of the project declares it (None: none does)."""
        me = field_location(context, "table")
        return next((t for t in project_tables(context) or ()
                     if t.identifier == self.table and t.where != me), None)

    def _checks(self, context: dg.ComponentLoadContext,
                owner: TableDecl | None) -> ChecksAttributes | None:
        """The checks to build: none when the table's own component in the project builds
        them (``checks`` unset).

        Raises:
            SettingsError: ``external: true`` for a table a component of the project writes,
                or ``checks:`` set here for a table whose component builds its checks.
        """
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

    def _layout(self, context: dg.ComponentLoadContext,
                owner: TableDecl | None) -> tuple[BucketLayout | None, str]:
        """The table's bucket layout known when the code loads, and who says it: the
        component of the project that creates the table (its ``options:``), else the
        deprecated ``buckets:`` here; (None, "") when neither (the compaction schedule reads
        the table's buckets).

        Raises:
            SettingsError: ``buckets:`` disagrees with the table's component, or is not a
                bucket count.
        """
        declared: tuple[BucketLayout | None, str] = (None, "")
        if owner is not None and owner.bucket is not None:
            source = f"its {owner.component} ({owner.where})"
            declared = (BucketLayout.of_option(owner.bucket, owner.primary_key, source),
                        source)
        if self.buckets is None:
            return declared
        here = f"buckets: {self.buckets} ({field_location(context, 'buckets')})"
        layout, source = declared
        if layout is not None and layout.bucket != self.buckets:
            raise SettingsError(f"{here}: {self.table} has bucket = {layout.bucket} from "
                                f"{source}: remove buckets: here (the compaction reads the "
                                "table's bucket layout)")
        warnings.warn(f"{here}: deprecated, the compaction reads {self.table}'s bucket "
                      "layout: remove it", FutureWarning, stacklevel=2)
        if layout is not None:
            return declared
        # a table no component of the project creates: whether it has a primary key is
        # not known here (bucket -1: dynamic partitions)
        return BucketLayout.of_option(str(self.buckets), None, here), here

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        spec = self.spec()
        owner = self._owner(context)
        checks = self._checks(context, owner)
        layout, layout_source = self._layout(context, owner)
        assets: list[Any] = []
        jobs: list[Any] = []
        schedules: list[Any] = []
        sensors: list[Any] = []
        if self.external:
            assets.append(dg.AssetSpec(spec.key_path, kinds={"paimon"}, metadata={
                TABLE: spec.identifier}, description=f"{spec.identifier} (written "
                "outside this code location; maintained here)"))
        if self.compaction is not None:
            c = self.compaction
            if c.buckets_interval < 1:
                raise SettingsError(f"{field_location(context, 'compaction')}: compaction: "
                                    f"buckets_interval {c.buckets_interval} is not a number "
                                    "of seconds (>= 1)")
            compaction = build_compaction(
                spec, cron=c.cron, day_start=c.day_start, labels=c.asset.labels(),
                layout=layout, layout_source=layout_source,
                buckets_interval=c.buckets_interval,
                schedule_status=(dg.DefaultScheduleStatus.RUNNING if c.running
                                 else dg.DefaultScheduleStatus.STOPPED))
            assets.append(compaction.asset)
            jobs.append(compaction.job)
            schedules.append(compaction.schedule)
            if compaction.sensor is not None:
                sensors.append(compaction.sensor)
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
            dg.Definitions(assets=assets, jobs=jobs, schedules=schedules, sensors=sensors))
