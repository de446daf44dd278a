"""Whole-database CDC assets: one landing, one warehouse database, one asset per table.

A feed that carries a whole database (canal, maxwell, Debezium topics of many tables...)
lands as ``batch-<n>`` directories (or files) under one landing directory, as
``python -m pipelines.jobs.cdc_sync_database`` reads it. :func:`build_cdc_database_asset`
turns it into ONE multi-asset with one asset per synced table: a run is one call of
:func:`pipelines.cdc.database.sync_database` (one Spark pass over the batches not committed
yet, one commit per table per batch, exactly once per table and batch), and each table's
asset gets its own materialization: rows written, events, skipped and quarantined events, the
batches applied, the snapshot id and the table's state (row count, column schema...), as a
:class:`~assets.components.PaimonCdcTable` run reports.

Which tables are assets (:class:`DatabaseTables`) is decided when the code location loads
(:mod:`assets.components.database`): the tables the landing's events name (filtered by the
including / excluding patterns) plus the tables of the warehouse database the sync created
earlier. A run still syncs every table the landing holds: a table first seen after the load
is written all the same, its materialization recorded under its asset key, and the run's log
says to reload the code location for it to show as an asset (nothing is dropped silently).

Selecting some of the assets (the UI's "Materialize selected") syncs only their tables.
"""

import hashlib
import json
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from assets.labels import AssetLabels, SettingsError
from assets.metadata import TABLE, commit_properties, snapshot_metadata
from assets.resources import SPARK_POOL, LandingZone, PaimonCatalog, SparkResource
from assets.runs import non_retryable
from paimon_core import FileSystemCatalog
from paimon_core.errors import ConfigError
from pipelines.cdc.database import (
    CreateOptions,
    DatabaseBatchReport,
    DatabaseOptions,
    discover_tables,
    sync_database,
    target_identifier,
)
from pipelines.cdc.formats import FORMATS
from pipelines.cdc.ingest import CdcOptions, list_batches
from pipelines.cdc.source_tables import TableFilter

__all__ = [
    "DatabaseSource",
    "DatabaseTables",
    "SyncedTable",
    "build_cdc_database_asset",
    "build_database_landing_sensor",
    "discover_database_tables",
    "table_asset_key",
]


#: the component's attribute of each setting the sync job names in its errors
_ATTRIBUTE = {"including-tables": "including_tables", "excluding-tables": "excluding_tables",
              "type-mapping": "type_mapping", "metadata-column": "metadata_columns",
              "table-conf": "table_options", "primary-keys": "primary_keys",
              "partition-keys": "partition_keys"}


@dataclass(frozen=True)
class SyncedTable:
    """One table of the feed: its source name (``database.table`` as the events name it, or
    just ``table`` for a table known only from the warehouse) and its target identifier."""

    source: str
    target: str

    @property
    def name(self) -> str:
        """The source table's own name (the last part of :attr:`source`)."""
        return self.source.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class DatabaseSource:
    """One feed of a whole database and how it is synced (the options of
    ``pipelines.jobs.cdc_sync_database``, Paimon's ``kafka_sync_database`` names).

    Attributes:
        database: the warehouse database the tables are written to.
        landing: the feed's directory under the landing root (default: :attr:`database`).
        landing_root: another root than the ``landing`` resource's (same storage).
        format: the events' format (:data:`pipelines.cdc.formats.FORMATS`).
        including_tables / excluding_tables: regexes of the source tables taken / left.
        table_prefix / table_suffix: around the source table's name in the target's.
        primary_keys / partition_keys: of the tables the sync creates (when the table has
            the columns; else the events' own keys).
        type_mapping: Paimon's type mapping options (``to-string``, ``tinyint1-not-bool``...).
        metadata_columns: ``database_name``, ``table_name``, ``op_ts`` as columns.
        table_options: options of the tables the sync creates (``bucket``...).
        max_error_ratio: fail a table's batch above this share of malformed events.
        commit_user: the commit users' prefix (default: the sync job's).
        staging_dir: where the sync stages routed lines, done markers and the default
            quarantine (a path or URI on the landing's storage; default: the feed's
            directory's ``_staging``; a read-only landing needs one).
    """

    database: str
    landing: str | None = None
    landing_root: str | None = None
    format: str = "canal-json"
    including_tables: str = ".*"
    excluding_tables: str | None = None
    table_prefix: str = ""
    table_suffix: str = ""
    primary_keys: tuple[str, ...] = ()
    partition_keys: tuple[str, ...] = ()
    type_mapping: tuple[str, ...] = ()
    metadata_columns: tuple[str, ...] = ()
    table_options: Mapping[str, str] = field(default_factory=dict)
    max_error_ratio: float = 0.05
    commit_user: str | None = None
    staging_dir: str | None = None

    def __post_init__(self) -> None:
        if not self.database or "." in self.database:
            raise SettingsError(f"database {self.database!r}: one warehouse database name "
                                "(no dot)")
        if self.format not in FORMATS or self.format == "debezium-avro":
            names = sorted(f for f in FORMATS if f != "debezium-avro")
            raise SettingsError(f"format {self.format!r}: a database feed is one of "
                                f"{', '.join(names)}")
        self.options()

    def options(self, *, including: str | None = None) -> DatabaseOptions:
        """The sync job's options (``including``: instead of :attr:`including_tables`).

        Raises:
            SettingsError: an option the job refuses, named as the component names it.
        """
        try:
            create = CreateOptions(
                primary_keys=self.primary_keys, partition_keys=self.partition_keys,
                type_mapping=self.type_mapping, table_conf=dict(self.table_options),
                metadata_columns=self.metadata_columns)
            cdc = CdcOptions(format=self.format, max_error_ratio=self.max_error_ratio,
                             commit_user=self.commit_user)
            return DatabaseOptions(
                cdc=cdc, including_tables=including or self.including_tables,
                excluding_tables=self.excluding_tables, table_prefix=self.table_prefix,
                table_suffix=self.table_suffix, create=create, staging=self.staging_dir)
        except ConfigError as e:
            raise SettingsError(f"{_ATTRIBUTE.get(e.setting, e.setting)}: {e.reason}") from e

    def table_filter(self) -> TableFilter:
        return self.options().table_filter()

    def target(self, name: str) -> str:
        """The target identifier of source table ``name`` (``products`` ->
        ``ods.products`` / ``ods.<prefix>products<suffix>``), as the sync job names it."""
        return target_identifier(self.database, name, self.options())

    def source_of(self, target_name: str) -> str | None:
        """The source table name a target table name stands for (None: the name does not
        have the prefix and suffix)."""
        pre, suf = self.table_prefix, self.table_suffix
        if not (target_name.startswith(pre) and target_name.endswith(suf)):
            return None
        name = target_name[len(pre):len(target_name) - len(suf)]
        return name or None

    def zone(self, landing: LandingZone) -> LandingZone:
        return landing if self.landing_root is None else LandingZone(
            root=self.landing_root, storage=landing.storage)

    def directory(self, landing: LandingZone) -> str:
        """The feed's landing directory."""
        return self.zone(landing).path(*(self.landing or self.database).strip("/").split("/"))


@dataclass(frozen=True)
class DatabaseTables:
    """The tables of one feed, as the component's state holds them (JSON)."""

    tables: tuple[SyncedTable, ...]

    def to_json(self) -> str:
        return json.dumps({"tables": [{"source": t.source, "target": t.target}
                                      for t in self.tables]}, indent=1)

    @classmethod
    def from_json(cls, text: str) -> "DatabaseTables":
        data = json.loads(text)
        return cls(tuple(SyncedTable(t["source"], t["target"]) for t in data["tables"]))


def discover_database_tables(source: DatabaseSource, landing: LandingZone,
                             catalog: FileSystemCatalog) -> DatabaseTables:
    """The feed's tables now: those its landing's events name that the patterns take
    (:func:`pipelines.cdc.database.discover_tables`), and the tables of the warehouse
    database whose names carry the prefix and suffix and whose source name the patterns take
    (created by earlier syncs; the landing may have been cleaned since). One entry per
    target, sorted."""
    filt = source.table_filter()
    found: dict[str, SyncedTable] = {}
    zone = source.zone(landing)
    directory = source.directory(landing)
    if zone.file_io().exists(directory):
        for st in discover_tables(directory, source.format,
                                  storage_options=zone.storage_options(), table_filter=filt,
                                  staging=source.staging_dir):
            t = SyncedTable(st.name, source.target(st.table))
            found.setdefault(t.target, t)
    if catalog.database_exists(source.database):
        for ident in catalog.list_tables(source.database):
            name = source.source_of(str(ident).split(".", 1)[-1])
            if name is not None and filt.takes(None, name):
                found.setdefault(source.target(name), SyncedTable(name, source.target(name)))
    return DatabaseTables(tuple(found[k] for k in sorted(found)))


# ------------------------------------------------------------------------------ the run
@dataclass
class _Totals:
    """One table's figures over the run's batches."""

    batches: list[int] = field(default_factory=list)
    already: list[int] = field(default_factory=list)
    events: int = 0
    valid: int = 0
    skipped: int = 0
    quarantined: int = 0
    rows_written: int = 0
    snapshot_ids: list[int] = field(default_factory=list)
    new_columns: dict[str, str] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)

    def metadata(self) -> dict[str, Any]:
        return {
            "cdc/batches": dg.MetadataValue.json(self.batches),
            "cdc/already_committed_batches": dg.MetadataValue.json(self.already),
            "cdc/events": dg.MetadataValue.int(self.events),
            "cdc/valid_events": dg.MetadataValue.int(self.valid),
            "cdc/skipped_events": dg.MetadataValue.int(self.skipped),
            "cdc/quarantined": dg.MetadataValue.int(self.quarantined),
            "cdc/rows_written": dg.MetadataValue.int(self.rows_written),
            "cdc/new_columns": dg.MetadataValue.json(self.new_columns),
        }


def table_asset_key(prefix: Sequence[str] | None, table: SyncedTable) -> dg.AssetKey:
    """The asset key of a synced table: ``[*prefix, name]`` (default ``[database, name]``)."""
    db, name = table.target.split(".", 1)
    return dg.AssetKey([*(prefix if prefix is not None else [db]), name])


def _selection(tables: Sequence[SyncedTable]) -> str:
    """The including pattern that takes exactly ``tables`` (by their source names)."""
    return "|".join(re.escape(t.source) for t in tables)


def build_cdc_database_asset(source: DatabaseSource, tables: DatabaseTables, *,
                             name: str, labels: AssetLabels | None = None,
                             key_prefix: Sequence[str] | None = None) -> dg.AssetsDefinition:
    """The multi-asset of one database feed: one asset per table of ``tables`` (key
    ``[*key_prefix, table]``, default ``[database, table]``), one op ``name`` syncing them
    in one Spark pass; in the Spark pool (:data:`~assets.resources.SPARK_POOL`) as every
    Spark asset."""
    labels = labels or AssetLabels()
    if labels.key:
        raise SettingsError(f"{source.database}: asset.key names one asset; the tables' keys "
                            "are [key_prefix..., table] (set key_prefix)")
    by_key = {table_asset_key(key_prefix, t): t for t in tables.tables}
    if len(by_key) < len(tables.tables):
        raise SettingsError(f"{source.database}: two source tables map to one asset key "
                            f"({[t.source for t in tables.tables]})")
    specs = [dg.AssetSpec(
        key, skippable=True, metadata={TABLE: t.target, "cdc/source_table": t.source},
        **{k: v for k, v in labels.asset_kwargs(
            key=list(key.path), group="ingestion", kinds=("spark", "paimon"),
            description=f"{t.target}: the events of source table {t.source} in the feed "
            f"{source.landing or source.database} ({source.format}); synced with the "
            "database's other tables in one run (pipelines.cdc.database).").items()
           if k != "key"}) for key, t in by_key.items()]

    @dg.multi_asset(name=name, specs=specs, can_subset=True, pool=SPARK_POOL)
    def _sync(context: dg.AssetExecutionContext, catalog: PaimonCatalog,
              landing: LandingZone, spark: SparkResource) -> Iterator[Any]:
        started = time.monotonic()
        selected = [by_key[k] for k in sorted(context.selected_asset_keys, key=str)]
        whole = len(selected) == len(by_key)
        totals = _run_sync(context, source, selected, whole, catalog, landing, spark)
        cat = catalog.load()
        extra = {"paimon/seconds": dg.MetadataValue.float(round(time.monotonic() - started,
                                                                  3)), **spark.run_metadata()}
        refused = []
        for t in selected:
            tot = totals.pop(t.target, _Totals())
            refused += [f"{t.target}: {r}" for r in tot.refused]
            if not cat.table_exists(t.target):
                context.log.warning(f"{t.target}: not created (no event of {t.source} was "
                                    "synced)")
                continue
            yield dg.MaterializeResult(asset_key=table_asset_key(key_prefix, t), metadata=(
                snapshot_metadata(cat.get_table(t.target), tot.snapshot_ids,
                                  **tot.metadata(), **extra)))
        for target, tot in sorted(totals.items()):  # synced, but not an asset (yet)
            refused += [f"{target}: {r}" for r in tot.refused]
            if not cat.table_exists(target):
                continue
            key = table_asset_key(key_prefix, SyncedTable(target, target))
            context.log.warning(
                f"{target} was synced but is no asset of this code location yet: reload the "
                f"code location to see it as {key.to_user_string()} (its materialization is "
                "recorded)")
            context.log_event(dg.AssetMaterialization(asset_key=key, metadata=(
                snapshot_metadata(cat.get_table(target), tot.snapshot_ids, **tot.metadata(),
                                  **extra))))
        if refused:
            raise non_retryable(context, "tables refused by the sync: " + "; ".join(refused))

    return _sync


def _run_sync(context: dg.AssetExecutionContext, source: DatabaseSource,
              selected: Sequence[SyncedTable], whole: bool, catalog: PaimonCatalog,
              landing: LandingZone, spark: SparkResource) -> dict[str, _Totals]:
    """One call of the sync job over the feed; each table's figures (by target)."""
    directory = source.directory(landing)
    fio = source.zone(landing).file_io()
    if not fio.exists(directory) or not list_batches(fio, directory):
        raise non_retryable(context, f"no batch has landed for {source.database} "
                            f"({directory} holds no batch-<n>)")
    # one sync commits every table: the snapshots name the run and the multi-asset
    props = commit_properties(context.run.run_id, context.op_def.name)
    options = source.options(including=None if whole else _selection(selected))
    reports = sync_database(spark.session(), catalog.settings(), source.database, directory,
                            options, properties=props)
    for r in reports:
        for name, count in sorted(r.excluded.items()):
            context.log.info(f"batch {r.batch}: {count} events of {name} not synced "
                             "(including / excluding tables)")
        for reason, count in sorted(r.unrouted.items()):
            context.log.warning(f"batch {r.batch}: {count} events name no table ({reason}); "
                                f"quarantined in {r.quarantine}")
    return _totals(reports)


def _totals(reports: Sequence[DatabaseBatchReport]) -> dict[str, _Totals]:
    """Each table's figures over the batches of ``reports`` (by target identifier)."""
    out: dict[str, _Totals] = {}
    for batch in reports:
        for t in batch.tables:
            tot = out.setdefault(t.target, _Totals())
            if t.error is not None:
                tot.refused.append(f"batch {batch.batch}: {t.error}")
            rep = t.report
            if rep is None:
                continue
            tot.batches.append(batch.batch)
            if rep.skipped:
                tot.already.append(batch.batch)
            tot.events += rep.events
            tot.valid += rep.valid
            tot.skipped += rep.skipped_events
            tot.quarantined += rep.malformed
            tot.rows_written += rep.rows_written
            tot.snapshot_ids += list(rep.snapshot_ids)
            tot.new_columns.update(rep.new_columns)
    return out


# ------------------------------------------------------------------------------ sensor
def build_database_landing_sensor(source: DatabaseSource, job: Any, *, name: str,
                                  minimum_interval_seconds: int = 60,
                                  default_status: dg.DefaultSensorStatus = (
                                      dg.DefaultSensorStatus.STOPPED)) -> dg.SensorDefinition:
    """A sensor requesting one run of ``job`` when the feed's landed batches change (run key
    = a digest of the batch names: each new batch is requested once; a run syncs every batch
    not committed yet, so a missed tick loses nothing)."""

    @dg.sensor(name=name, job=job, minimum_interval_seconds=minimum_interval_seconds,
               default_status=default_status,
               description=f"Batches landed in the {source.database} feed -> one sync run.")
    def _landed(context: dg.SensorEvaluationContext, landing: LandingZone) -> dg.SensorResult:
        directory = source.directory(landing)
        fio = source.zone(landing).file_io()
        batches = list_batches(fio, directory) if fio.exists(directory) else []
        if not batches:
            return dg.SensorResult(skip_reason=f"no batch has landed in {directory}")
        names = "\n".join(f"{b}:{','.join(files)}" for b, files in batches)
        key = hashlib.sha256(names.encode()).hexdigest()[:16]
        return dg.SensorResult(run_requests=[dg.RunRequest(
            run_key=f"batches-{batches[-1][0]}-{key}")])

    return _landed
