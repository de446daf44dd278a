"""The whole-database CDC component: :class:`PaimonCdcDatabase` -- one landing, one warehouse
database, one asset per table (:mod:`assets.components.database_sync`).

**Which tables are assets** is the component's state (Dagster's state-backed components,
``dg.StateBackedComponent``): the tables the landing's events name, filtered by
``including_tables`` / ``excluding_tables``, plus those the sync created earlier in the
warehouse database. The state is refreshed whenever the code location loads (management type
``LEGACY_CODE_SERVER_SNAPSHOTS``, the default here: no ``dg utils refresh-defs-state`` step,
no state storage to set up), so a table that appears in the feed becomes an asset at the next
load -- the UI's "Reload" of the code location, a restart, a deployment -- without a code
change. Until then a run syncs it all the same and records its materialization under its
asset key (:mod:`assets.components.database_sync`). Set ``defs_state: {management_type:
VERSIONED_STATE_STORAGE}`` to refresh with ``dg utils refresh-defs-state`` instead.

The refresh reads the landing and the warehouse through the resources of ``deployment``
(:func:`assets.resources.resources_for`: ``PAIMON_LANDING`` / ``PAIMON_WAREHOUSE``...), the
same that :class:`~assets.components.PaimonResources` gives the runs.
"""

import dataclasses
import re
from pathlib import Path
from typing import Any, Literal

import dagster as dg
from dagster.components import DefsStateConfig, DefsStateConfigArgs, ResolvedDefsStateConfig
from pydantic import Field

from assets.checks import build_group_check_schedule, build_table_checks
from assets.components.database_sync import (
    DatabaseSource,
    DatabaseTables,
    build_cdc_database_asset,
    build_database_landing_sensor,
    discover_database_tables,
    table_asset_key,
)
from assets.components.project import project_tables
from assets.components.tables import (
    AssetAttributes,
    ChecksAttributes,
    OptionValue,
    ScheduleAttributes,
    SensorAttributes,
    _table_job,
    _Template,
)
from assets.labels import SettingsError
from assets.observations import build_table_state_sensor
from assets.resources import LandingZone, PaimonCatalog, resources_for
from assets.tables import TableSpec

__all__ = ["PaimonCdcDatabase"]


def _resolved(resource: Any, what: str) -> Any:
    """A resource of :func:`resources_for` with its ``EnvVar`` fields read now.

    Raises:
        SettingsError: one line naming the variable that is not set (or Dagster's error).
    """
    try:
        return resource.process_config_and_initialize()
    except dg.DagsterInvalidConfigError as e:
        unset = re.search(r'environment variable "(\w+)" which is not set', str(e))
        reason = (f"environment variable {unset.group(1)} is not set" if unset
                  else str(e).splitlines()[0])
        raise SettingsError(f"PaimonCdcDatabase: the tables' refresh reads the {what}: "
                            f"{reason}") from e


@dg.scaffold_with(_Template)
class PaimonCdcDatabase(dg.StateBackedComponent, dg.Model, dg.Resolvable):
    """Every table of one CDC feed of a whole database (canal, maxwell, Debezium...): one
    asset per table, synced in one Spark pass per run (``pipelines.cdc.database``), tables
    that appear in the feed becoming assets at the code location's next load; with each
    table's checks, a sync job, its schedule and a landing sensor."""

    database: str = Field(description="the warehouse database the tables are written to")
    landing: str | None = Field(default=None, description="the feed's directory under the "
                                "landing root, holding batch-<n> (default: database)")
    landing_root: str | None = Field(default=None, description="instead of the landing "
                                     "resource's root")
    format: str = Field(default="canal-json", description="canal-json, maxwell-json, "
                        "debezium-json, ogg-json, aws-dms-json")
    including_tables: str = Field(default=".*", description="regex of the source tables "
                                  "synced (table name or database.table)")
    excluding_tables: str | None = Field(default=None, description="regex of the source "
                                         "tables left out")
    table_prefix: str = ""
    table_suffix: str = ""
    primary_keys: list[str] = Field(default_factory=list, description="primary keys of the "
                                    "tables the sync creates (default: the events' keys)")
    partition_keys: list[str] = Field(default_factory=list)
    type_mapping: list[str] = Field(default_factory=list, description="Paimon's type mapping "
                                    "options: to-string, tinyint1-not-bool, char-to-string...")
    metadata_columns: list[str] = Field(default_factory=list, description="database_name, "
                                        "table_name, op_ts")
    table_options: dict[str, OptionValue] = Field(default_factory=dict, description="options "
                                                  "of the tables the sync creates")
    max_error_ratio: float = 0.05
    commit_user: str | None = None
    staging_dir: str | None = Field(default=None, description="where the sync stages routed "
                                    "lines, done markers and the default quarantine "
                                    "(default: <landing>/_staging; a read-only landing "
                                    "needs one)")
    key_prefix: list[str] | None = Field(default=None, description="asset key prefix of the "
                                         "tables (default: [database])")
    asset: AssetAttributes = Field(default_factory=AssetAttributes, description="group, "
                                   "owners, tags, kinds, description of every table's asset")
    checks: ChecksAttributes = Field(default_factory=ChecksAttributes)
    state_sensor: SensorAttributes | None = Field(default_factory=SensorAttributes)
    job_name: str | None = Field(default=None, description="default <database>_sync_job; '' = "
                                 "no job (and no schedule, no landing sensor)")
    schedule: ScheduleAttributes | None = None
    landing_sensor: SensorAttributes | None = Field(
        default=None, description="a sensor requesting a sync run when batches land")
    deployment: Literal["local", "production"] = Field(
        default="local", description="the resources the tables' refresh reads the landing "
        "and the warehouse with (as PaimonResources' deployment)")
    defs_state: ResolvedDefsStateConfig = Field(
        default_factory=DefsStateConfigArgs.legacy_code_server_snapshots,
        description="where the known tables are kept (default: refreshed at every load of "
        "the code location)")

    # ------------------------------------------------------------------ state
    @property
    def defs_state_config(self) -> DefsStateConfig:
        return DefsStateConfig.from_args(self.defs_state,
                                         default_key=f"PaimonCdcDatabase[{self.database}]")

    def source(self) -> DatabaseSource:
        return DatabaseSource(
            database=self.database, landing=self.landing, landing_root=self.landing_root,
            format=self.format, including_tables=self.including_tables,
            excluding_tables=self.excluding_tables, table_prefix=self.table_prefix,
            table_suffix=self.table_suffix, primary_keys=tuple(self.primary_keys),
            partition_keys=tuple(self.partition_keys), type_mapping=tuple(self.type_mapping),
            metadata_columns=tuple(self.metadata_columns),
            table_options={k: str(v).lower() if isinstance(v, bool) else str(v)
                           for k, v in self.table_options.items()},
            max_error_ratio=self.max_error_ratio, commit_user=self.commit_user,
            staging_dir=self.staging_dir)

    def write_state_to_path(self, state_path: Path) -> None:
        """The feed's tables now (:func:`discover_database_tables`), as JSON."""
        resources = resources_for(self.deployment)
        landing: LandingZone = _resolved(resources["landing"], "landing zone")
        catalog: PaimonCatalog = _resolved(resources["catalog"], "catalog")
        tables = discover_database_tables(self.source(), landing, catalog.load())
        state_path.write_text(tables.to_json())

    # ------------------------------------------------------------------ definitions
    def build_defs_from_state(self, context: dg.ComponentLoadContext,
                              state_path: Path | None) -> dg.Definitions:
        source = self.source()
        tables = (DatabaseTables.from_json(state_path.read_text()) if state_path
                  else DatabaseTables(()))
        tables = self._own(context, tables)
        asset = build_cdc_database_asset(
            source, tables, name=f"{self.database}_database_sync",
            labels=self.asset.labels(), key_prefix=self.key_prefix)
        specs = [TableSpec(identifier=t.target, schema={},
                           asset_key=tuple(table_asset_key(self.key_prefix, t).path),
                           small_file_bytes=self.checks.small_file_bytes,
                           max_small_files=self.checks.max_small_files,
                           freshness_hours=self.checks.freshness_hours)
                 for t in tables.tables]
        defs = [self._checks(specs), self._state_sensor(specs)]
        if not tables.tables:
            return dg.Definitions.merge(*defs)
        jobs, schedules = _table_job(asset, self.job_name, f"{self.database}_sync_job",
                                    f"Sync every table of the {self.database} feed.",
                                    self.schedule)
        sensors = []
        if self.landing_sensor is not None:
            if not jobs:
                raise SettingsError(f"{self.database}: a landing sensor needs the sync job "
                                    "(job_name is '')")
            ls = self.landing_sensor
            sensors.append(build_database_landing_sensor(
                source, jobs[0], name=ls.name or f"{self.database}_database_landing_sensor",
                minimum_interval_seconds=ls.minimum_interval_seconds,
                default_status=(dg.DefaultSensorStatus.RUNNING if ls.running
                                else dg.DefaultSensorStatus.STOPPED)))
        return dg.Definitions.merge(*defs, dg.Definitions(
            assets=[asset], jobs=jobs, schedules=schedules, sensors=sensors))

    def _own(self, context: dg.ComponentLoadContext, tables: DatabaseTables) -> DatabaseTables:
        """``tables`` without those another component of the project declares (their own
        component owns their asset)."""
        others = {t.identifier for t in project_tables(context) or ()}
        return dataclasses.replace(tables, tables=tuple(
            t for t in tables.tables if t.target not in others))

    def _checks(self, specs: list[TableSpec]) -> dg.Definitions:
        if not self.checks.enabled or not specs:
            return dg.Definitions()
        policy = self.checks.policy()
        scheduled = build_group_check_schedule(f"{self.database}_database", specs, policy)
        return dg.Definitions(
            asset_checks=[c for s in specs for c in build_table_checks(s, policy)],
            jobs=[scheduled[0]] if scheduled else [],
            schedules=[scheduled[1]] if scheduled else [])

    def _state_sensor(self, specs: list[TableSpec]) -> dg.Definitions:
        sensor = self.state_sensor
        if sensor is None or not specs:
            return dg.Definitions()
        return dg.Definitions(sensors=[build_table_state_sensor(
            sensor.name or f"{self.database}_database_state_sensor",
            {dg.AssetKey(s.key_path): s.identifier for s in specs},
            minimum_interval_seconds=sensor.minimum_interval_seconds,
            default_status=(dg.DefaultSensorStatus.RUNNING if sensor.running
                            else dg.DefaultSensorStatus.STOPPED))])
