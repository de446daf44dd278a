"""The table components of :mod:`assets.components`: YAML attributes -> the builders'
settings (the maintenance component: :mod:`assets.components.maintenance`)."""

from __future__ import annotations

from typing import Any, Literal

import dagster as dg
from pydantic import Field

from assets.cdc import (
    DEFAULT_LAYOUT,
    CdcSource,
    build_cdc_asset,
    build_landed_partitions_sensor,
    build_landing_sensor,
)
from assets.checks import CheckPolicy, build_check_schedule, build_table_checks
from assets.components.project import field_location, project_tables, suggestion
from assets.derived import Derivation, build_derived, load_transform
from assets.labels import AssetLabels, SettingsError
from assets.observations import build_table_state_sensor
from assets.overwrite import OverwritePartitions, build_overwrite_asset
from assets.resources import resources_for
from assets.tables import DAILY_START, TableSpec
from pipelines.cdc.formats import DEFAULT_FORMAT

__all__ = [
    "AssetAttributes",
    "ChecksAttributes",
    "Column",
    "PaimonCdcTable",
    "PaimonDerivedTable",
    "PaimonOverwriteTable",
    "PaimonResources",
    "ScheduleAttributes",
    "TableAttributes",
    "check_defs",
]

OptionValue = str | int | float | bool


class _Template(dg.Scaffolder[Any]):
    """``dg scaffold defs <component> <path>``: a ``defs.yaml`` with the component's
    required attributes filled with an example to edit (:data:`TEMPLATES`)."""

    def scaffold(self, request: dg.ScaffoldRequest[Any]) -> None:
        name = request.type_name.rsplit(".", 1)[-1]
        dg.scaffold_component(request, TEMPLATES.get(name, {}))


_COLUMNS = [{"name": "id", "type": "BIGINT"}, {"name": "status", "type": "STRING"},
            {"name": "lsn", "type": "BIGINT"}]
#: the example attributes ``dg scaffold defs`` writes, per component
TEMPLATES: dict[str, dict[str, Any]] = {
    "PaimonCdcTable": {
        "table": "shop.orders", "columns": _COLUMNS, "primary_key": ["id"],
        "options": {"bucket": 2, "sequence.field": "lsn"},
        "source": {"connector": "postgresql", "start": DAILY_START,
                   "partition_keys": "landed"},
        "landing_sensor": {}},
    "PaimonOverwriteTable": {
        "table": "ref.rates", "columns": [{"name": "dt", "type": "STRING"},
                                          {"name": "rate", "type": "DOUBLE"}],
        "partition_by": ["dt"], "partitions": {"kind": "daily", "start": DAILY_START}},
    "PaimonDerivedTable": {
        "table": "mart.orders_flags", "columns": [{"name": "id", "type": "BIGINT"},
                                                  {"name": "is_open", "type": "BOOLEAN"}],
        "primary_key": ["id"], "source": "shop.orders", "transform": "my_project.transforms:fn"},
    "PaimonTableMaintenance": {"table": "shop.orders"},
    "PaimonCdcDatabase": {"database": "ods", "landing": "inventory", "format": "canal-json",
                          "landing_sensor": {}},
    "PaimonResources": {"deployment": "local"},
}


# ------------------------------------------------------------------------------ shared parts
class AssetAttributes(dg.Model):
    """How the asset shows in Dagster (unset: the component's default)."""

    key: list[str] | None = Field(default=None, description="asset key path, e.g. [shop, orders]")
    group: str | None = Field(default=None, description="asset group")
    owners: list[str] = Field(default_factory=list, description="team:x or e-mail addresses")
    tags: dict[str, str] = Field(default_factory=dict, description="asset tags")
    kinds: list[str] | None = Field(default=None, description="kinds shown in the UI")
    description: str | None = None

    def labels(self, *, with_key: bool = True) -> AssetLabels:
        return AssetLabels(key=self.key if with_key else None, group=self.group,
                           owners=tuple(self.owners), tags=dict(self.tags),
                           kinds=None if self.kinds is None else tuple(self.kinds),
                           description=self.description)


class Column(dg.Model):
    """One column: a Paimon type name (``BIGINT``, ``STRING``, ``DECIMAL(12, 2)``,
    ``TIMESTAMP(3)``...)."""

    name: str
    type: str


class ChecksScheduleAttributes(dg.Model):
    """Checks evaluated on a cron by a schedule of their own (``<db>_<table>_checks_job``),
    without a run of the table (the freshness of a table nobody materializes shows in the
    UI)."""

    cron: str = Field(default="*/15 * * * *", description="UTC cron")
    checks: list[str] = Field(default_factory=lambda: ["freshness"],
                              description="fsck_clean, small_files, snapshot_retention, "
                              "freshness")
    running: bool = True


class ChecksAttributes(dg.Model):
    """The table's asset checks (fsck, small files, snapshot retention, freshness)."""

    enabled: bool = True
    small_file_bytes: int = 64 * 1024
    max_small_files: int = 40
    freshness_hours: float = 26.0
    blocking: list[str] = Field(
        default_factory=lambda: ["fsck_clean"], description="checks whose failure stops the "
        "table's downstream assets in the same run (fsck_clean: a corrupt table feeds "
        "nothing)")
    schedule: ChecksScheduleAttributes | None = Field(
        default_factory=ChecksScheduleAttributes, description="null: the checks run only in "
        "runs that include them")

    def policy(self) -> CheckPolicy:
        sched = self.schedule
        return CheckPolicy(
            blocking=tuple(self.blocking), cron=sched.cron if sched else None,
            evaluated=tuple(sched.checks) if sched else (),
            schedule_running=sched.running if sched else False)


def check_defs(spec: TableSpec, checks: ChecksAttributes | None) -> dg.Definitions:
    """The table's checks, and the job and schedule evaluating the scheduled ones (none
    when ``checks`` is None or disabled)."""
    if checks is None or not checks.enabled:
        return dg.Definitions()
    policy = checks.policy()
    scheduled = build_check_schedule(spec, policy)
    return dg.Definitions(asset_checks=build_table_checks(spec, policy),
                          jobs=[scheduled[0]] if scheduled else [],
                          schedules=[scheduled[1]] if scheduled else [])


class ScheduleAttributes(dg.Model):
    """A schedule: a cron expression (UTC), stopped unless ``running``."""

    cron: str
    running: bool = False

    def status(self) -> dg.DefaultScheduleStatus:
        return (dg.DefaultScheduleStatus.RUNNING if self.running
                else dg.DefaultScheduleStatus.STOPPED)


def _identifier(table: str) -> str:
    db, dot, name = table.partition(".")
    if not dot or not db or not name or "." in name:
        raise SettingsError(f"table {table!r} is not a 'database.table' identifier")
    return table


class SensorAttributes(dg.Model):
    """A sensor of the component (a derived table's snapshot sensor, a landing sensor, a
    table's state sensor): its name, interval, and whether it starts running."""

    name: str | None = None
    minimum_interval_seconds: int = 30
    running: bool = True


#: the ``state_sensor`` attribute of the table components
STATE_SENSOR_DOC = ("the sensor reporting the table's state on its asset after a commit no "
                    "run of ours reported (another engine); default name "
                    "<db>_<table>_state_sensor; null: none")


def state_sensor_defs(spec: TableSpec, sensor: SensorAttributes | None) -> dg.Definitions:
    """The table's state sensor (:func:`assets.observations.build_table_state_sensor`) on
    its asset, or nothing when ``sensor`` is None."""
    if sensor is None:
        return dg.Definitions()
    return dg.Definitions(sensors=[build_table_state_sensor(
        sensor.name or f"{spec.slug}_state_sensor",
        {dg.AssetKey(spec.key_path): spec.identifier},
        minimum_interval_seconds=sensor.minimum_interval_seconds,
        default_status=(dg.DefaultSensorStatus.RUNNING if sensor.running
                        else dg.DefaultSensorStatus.STOPPED))])


class TableAttributes(dg.Model):
    """The attributes every table component shares (as Dagster's own components share
    resolved attribute models): the table it writes -- identifier, schema and options
    (Paimon's names) --, its asset, its checks and its state sensor. An existing table whose
    options differ from ``options`` gets the listed ones ALTERed at its next run
    (:meth:`assets.tables.TableSpec.ensure_declared`)."""

    table: str = Field(description="database.table")
    columns: list[Column] = Field(description="the table's columns")
    primary_key: list[str] = Field(default_factory=list)
    partition_by: list[str] = Field(default_factory=list)
    options: dict[str, OptionValue] = Field(
        default_factory=dict, description="Paimon table options (bucket, sequence.field, "
        "snapshot.num-retained.max...); on an existing table a listed option with another "
        "value is ALTERed at the next run (one fixed for the table's life fails it), an "
        "unlisted one is kept")
    asset: AssetAttributes = Field(default_factory=AssetAttributes)
    checks: ChecksAttributes = Field(default_factory=ChecksAttributes)
    state_sensor: SensorAttributes | None = Field(default_factory=SensorAttributes,
                                                  description=STATE_SENSOR_DOC)

    def spec(self) -> TableSpec:
        _identifier(self.table)
        spec = TableSpec.from_attributes(self.model_dump(include=set(_TABLE_FIELDS)))
        ident = spec.identifier
        try:  # the schema and every option value, checked as CREATE checks them
            spec.table_schema().to_table_schema()
        except Exception as e:  # the schema's own error, named for the table
            raise SettingsError(f"{ident}: invalid schema: {e}") from e
        return spec

    def table_defs(self, spec: TableSpec) -> dg.Definitions:
        """The table's checks and its state sensor."""
        return dg.Definitions.merge(check_defs(spec, self.checks),
                                    state_sensor_defs(spec, self.state_sensor))


#: the fields of :class:`TableAttributes` (what :meth:`TableAttributes.spec` reads)
_TABLE_FIELDS = tuple(TableAttributes.model_fields)


# ------------------------------------------------------------------------------ CDC
class CdcSourceAttributes(dg.Model):
    """Where the change events land and how they are read (``pipelines.cdc.ingest``)."""

    layout: str = Field(default=DEFAULT_LAYOUT, description="batch directory under the "
                        "landing root: {table} = db.table, {partition} = the run partition")
    landing_root: str | None = Field(default=None, description="instead of the landing "
                                     "resource's root")
    format: str = Field(default=DEFAULT_FORMAT, description="debezium-json, debezium-avro...")
    source_table: str | None = Field(
        default=None, description="the source table whose events the landing's files hold "
        "for this table (a regex, full match against the table name or database.table, as "
        "--source-table); events of other tables are skipped and counted; unset: the "
        "table's own name, any database")
    connector: str | None = Field(default=None, description="Debezium connector ordering the "
                                  "events (postgresql, mysql, sqlserver...); unset: the "
                                  "events' source.connector")
    position_fields: list[str] = Field(default_factory=list)
    max_error_ratio: float = 0.05
    partitioning: Literal["daily", "hourly", "none"] = "daily"
    start: str = Field(default=DAILY_START, description="first partition (YYYY-MM-DD)")
    partition_keys: Literal["calendar", "landed"] = Field(
        default="calendar", description="calendar: every day / hour from start is a "
        "partition (each one without events shows Missing); landed: dynamic partitions the "
        "landing sensor adds as batches land (Missing = landed, not ingested)")
    partitions_name: str | None = Field(default=None, description="the dynamic partitions' "
                                        "name (landed; default <db>_<table>_landed)")


@dg.scaffold_with(_Template)
class PaimonCdcTable(dg.Component, TableAttributes, dg.Resolvable):
    """A Paimon primary-key table fed by CDC change events (Debezium), one run per landing
    day / hour (or per landed batch), exactly once per batch; with its asset checks, an
    ingestion job and its schedule."""

    primary_key: list[str]
    source: CdcSourceAttributes = Field(default_factory=CdcSourceAttributes)
    job_name: str | None = Field(default=None, description="default <db>_<table>_ingest_job; "
                                 "'' = no job (and no schedule)")
    schedule: ScheduleAttributes | None = Field(
        default=None, description="cron of the ingestion schedule (each tick ingests the "
        "partition that just ended); unset: none")
    landing_sensor: SensorAttributes | None = Field(
        default=None, description="a sensor requesting a run per landed partition; unset: "
        "none")

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        spec = self.spec()
        src = self.source
        source = CdcSource(layout=src.layout, landing_root=src.landing_root, format=src.format,
                           source_table=src.source_table,
                           connector=src.connector, position_fields=tuple(src.position_fields),
                           max_error_ratio=src.max_error_ratio,
                           partitioning=src.partitioning, start=src.start,
                           partition_keys=src.partition_keys,
                           partitions_name=src.partitions_name)
        asset = build_cdc_asset(spec, source, self.asset.labels(with_key=False))
        sensors: list[Any] = []
        if self.job_name == "" and self.landing_sensor is not None:
            raise SettingsError(f"{spec.identifier}: a landing sensor needs the table's job "
                                "(job_name is '')")
        if src.partition_keys == "landed" and (
                self.landing_sensor is None or self.schedule is not None):
            raise SettingsError(
                f"{spec.identifier}: with partition_keys 'landed' the landing sensor adds the "
                "landed keys and requests their runs: declare landing_sensor (running: false "
                "to start it from the UI), and no schedule (its ticks would name calendar "
                "days)")
        jobs, schedules = _table_job(asset, self.job_name, f"{spec.slug}_ingest_job",
                                     f"Ingest change events into {spec.identifier}.",
                                     self.schedule)
        if jobs and self.landing_sensor is not None:
            ls = self.landing_sensor
            sensors.append(build_landing_sensor(
                spec, source, jobs[0], name=ls.name or f"{spec.slug}_landing_sensor",
                minimum_interval_seconds=ls.minimum_interval_seconds,
                default_status=(dg.DefaultSensorStatus.RUNNING if ls.running
                                else dg.DefaultSensorStatus.STOPPED)))
            if src.partition_keys == "landed":  # landed days are partitions, sensor or not
                sensors.append(build_landed_partitions_sensor(
                    spec, source, name=f"{spec.slug}_landed_partitions_sensor",
                    minimum_interval_seconds=ls.minimum_interval_seconds))
        return dg.Definitions.merge(
            self.table_defs(spec),
            dg.Definitions(assets=[asset], jobs=jobs, schedules=schedules, sensors=sensors))


def _table_job(asset: dg.AssetsDefinition, job_name: str | None, default_name: str,
               description: str, schedule: ScheduleAttributes | None
               ) -> tuple[list[Any], list[Any]]:
    """([the asset's job], [its schedule]) of a table component: no job when ``job_name`` is
    ``""``, ``default_name`` when it is None; a schedule when ``schedule`` is given."""
    if job_name == "":
        return [], []
    job = dg.define_asset_job(job_name or default_name, selection=[asset],
                              description=description)
    schedules = [] if schedule is None else [_partitioned_schedule(job, asset, schedule)]
    return [job], schedules


def _partitioned_schedule(job: Any, asset: dg.AssetsDefinition,
                          schedule: ScheduleAttributes) -> dg.ScheduleDefinition:
    """A schedule of ``job`` on ``schedule.cron``: partitioned assets get the last complete
    partition of each tick; unpartitioned ones a plain run."""
    parts = asset.partitions_def
    if not isinstance(parts, dg.TimeWindowPartitionsDefinition):
        return dg.ScheduleDefinition(name=f"{job.name}_schedule", cron_schedule=schedule.cron,
                                     job=job, default_status=schedule.status())

    @dg.schedule(name=f"{job.name}_schedule", cron_schedule=schedule.cron, job=job,
                 default_status=schedule.status(),
                 description=f"Run {job.name} for the last complete partition.")
    def _tick(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
        window = parts.get_prev_partition_window(context.scheduled_execution_time)
        if window is None:
            return dg.SkipReason("no complete partition yet")
        key = parts.get_partition_key_for_timestamp(window.start.timestamp())
        return dg.RunRequest(run_key=key, partition_key=key)

    return _tick


# ------------------------------------------------------------------------------ overwrite
class OverwritePartitionsAttributes(dg.Model):
    """The run partitions: one per value of the table's partition column."""

    kind: Literal["daily", "static", "dynamic"] = "daily"
    start: str = DAILY_START
    values: list[str] = Field(default_factory=list, description="static partitions")
    name: str | None = Field(default=None, description="dynamic partitions' name")


@dg.scaffold_with(_Template)
class PaimonOverwriteTable(dg.Component, TableAttributes, dg.Resolvable):
    """A partitioned Paimon table whose partitions are replaced whole (static INSERT
    OVERWRITE) by the extract landed for them; with its checks, job and schedule."""

    partition_by: list[str] = Field(description="the partition column first")
    partitions: OverwritePartitionsAttributes = Field(
        default_factory=OverwritePartitionsAttributes)
    upstream: list[str] | None = Field(
        default=None, description="an asset whose output (pyarrow / pandas / polars, same "
        "partitions) replaces the partition, instead of landed files")
    layout: str = Field(default="{table}/{column}={partition}",
                        description="the extract's directory under the landing root")
    format: Literal["csv", "parquet", "json"] = "csv"
    job_name: str | None = None
    schedule: ScheduleAttributes | None = None

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        spec = self.spec()
        p = self.partitions
        asset = build_overwrite_asset(
            spec, self.partition_by[0],
            OverwritePartitions(kind=p.kind, start=p.start, values=tuple(p.values),
                                name=p.name, layout=self.layout, format=self.format),
            self.asset.labels(with_key=False), upstream=self.upstream)
        jobs, schedules = _table_job(asset, self.job_name, f"{spec.slug}_overwrite_job",
                                     f"Replace one partition of {spec.identifier}.",
                                     self.schedule)
        return dg.Definitions.merge(
            self.table_defs(spec), dg.Definitions(assets=[asset], jobs=jobs,
                                                  schedules=schedules))


# ------------------------------------------------------------------------------ derived
@dg.scaffold_with(_Template)
class PaimonDerivedTable(dg.Component, TableAttributes, dg.Resolvable):
    """A Paimon table derived from a source table by a Python transform, applied snapshot
    range by snapshot range, exactly once and correct for any arrival order
    (:func:`assets.derived.apply_range`); a sensor requests one run per new range.

    The transform ``pkg.mod:fn`` takes ``(rows: pyarrow.Table, source_snapshot: int)`` — the
    source's current rows of the keys a range touched — and returns the derived rows
    (pyarrow): the key column, the derived columns, and ``stamp_column`` if the table has one.
    """

    primary_key: list[str] = Field(description="one column, also the source's key")
    source: str = Field(description="the source table, database.table: a table a component "
                        "of this code location writes (else source_external)")
    source_asset_key: list[str] | None = Field(default=None, description="default: the "
                                               "source component's asset key, or [db, table]")
    source_external: bool = Field(
        default=False, description="the source is written outside this code location "
        "(another engine, a Python asset): not checked at load; the sensor's tick fails "
        "while it does not exist")
    transform: str = Field(description="package.module:function")
    source_columns: list[str] | None = Field(default=None, description="the source columns "
                                             "the transform reads (default: all)")
    stamp_column: str | None = Field(default=None, description="a BIGINT column set to the "
                                     "source snapshot that gave the row its current value")
    consumer_id: str | None = None
    commit_user: str | None = None
    job_name: str | None = None
    sensor: SensorAttributes = Field(default_factory=SensorAttributes)

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        spec = self.spec()
        if len(self.primary_key) != 1:
            raise SettingsError(f"{spec.identifier}: a derived table needs a one-column "
                                f"primary key (got {self.primary_key})")
        source_key, source_known = self._source(context)
        source = TableSpec(identifier=self.source, schema={},
                           asset_key=tuple(source_key or ()) or None)
        derivation = Derivation(
            load_transform(self.transform), self.primary_key[0],
            None if self.source_columns is None else tuple(self.source_columns),
            self.stamp_column)
        derived = build_derived(
            source, spec, derivation, consumer_id=self.consumer_id,
            commit_user=self.commit_user, job_name=self.job_name,
            sensor_name=self.sensor.name,
            minimum_interval_seconds=self.sensor.minimum_interval_seconds,
            sensor_status=(dg.DefaultSensorStatus.RUNNING if self.sensor.running
                           else dg.DefaultSensorStatus.STOPPED),
            labels=self.asset.labels(with_key=False), source_required=not source_known)
        return dg.Definitions.merge(
            self.table_defs(spec),
            dg.Definitions(assets=[derived.asset], jobs=[derived.job], sensors=[derived.sensor]))

    def _source(self, context: dg.ComponentLoadContext) -> tuple[list[str] | None, bool]:
        """(the source's asset key, whether a component of the project writes it).

        Raises:
            SettingsError: ``source`` is no table of the project's components (and not
                ``source_external``): the file, the field, the value and the closest name.
        """
        ident = _identifier(self.source)
        tables = None if self.source_external else project_tables(context)
        if tables is None:  # external, or built outside a dg project
            return self.source_asset_key, False
        owner = next((t for t in tables if t.identifier == ident), None)
        if owner is None:
            names = sorted({t.identifier for t in tables} - {self.table})
            raise SettingsError(
                f"{field_location(context, 'source')}: source: {ident!r} is no table of this "
                f"code location{suggestion(ident, names)}; its components write "
                f"{', '.join(names) or 'none'} (a table only another engine writes: add "
                "source_external: true)")
        return self.source_asset_key or list(owner.key), True


# ------------------------------------------------------------------------------ resources
@dg.scaffold_with(_Template)
class PaimonResources(dg.Component, dg.Model, dg.Resolvable):
    """The resources the Paimon components need (``catalog``, ``landing``, ``spark``), read
    from the environment when a run starts: ``local`` = ``PAIMON_WAREHOUSE`` /
    ``PAIMON_LANDING`` on local disk and Spark ``local[2]``; ``production`` = S3 and a Spark
    cluster (:func:`assets.resources.production_resources`)."""

    deployment: Literal["local", "production"] = "local"
    in_process: bool = Field(default=True, description="run each run's steps in one process "
                             "(one Spark session per run)")

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        return dg.Definitions(resources=dict(resources_for(self.deployment)),
                              executor=dg.in_process_executor if self.in_process else None)
