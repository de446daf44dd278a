"""CDC ingestion assets: one per source table, partitioned by landing day.

Each partition runs the Spark job :func:`pipelines.cdc.ingest.ingest_batch` on the change
events that landed that day (``<landing>/<db>.<table>/dt=<day>/``). Exactly once:

* the commit identifier derives from the partition (``2025-01-06`` -> ``20250106``) and the
  commit user is the table's and the day's (``dagster-cdc.orders@2025-01-06``), so a
  re-executed run, a run retry after "commit state unknown", or a backfill run twice finds its
  commit and applies nothing; a day is never filtered out because a *later* day landed first
  (one user per day, not one per table);
* the order between days is the table's ``sequence.field`` (``src_lsn`` = the source log
  position): a backfill of an old day after newer ones cannot override newer versions. A
  re-ingest of a day whose snapshot has since expired is a new commit of the same versions,
  which change nothing, except that a row the day inserts and a later day deleted comes back
  once a full compaction has dropped that delete (the deduplicate engine keeps no tombstone;
  Java 0.9 does the same: see the README, "A re-run of a day whose snapshot has expired").

A backfill over a date range is one run (``BackfillPolicy.single_run``) that ingests the days
in order, one commit each. Spark starts only for a day with events that is not committed yet:
a run whose days are all empty or committed starts no JVM. A day that has not landed, or too
many malformed events, fails the run without a run retry (:func:`assets.runs.non_retryable`).
"""

import dataclasses
import hashlib
import time
from dataclasses import dataclass
from typing import Any, Literal

import dagster as dg
from pydantic import Field

from assets.labels import AssetLabels, SettingsError
from assets.metadata import TABLE, accepts_properties, context_properties, snapshot_metadata
from assets.resources import SPARK_POOL, LandingZone, PaimonCatalog, SparkResource
from assets.runs import ensure_table, non_retryable
from assets.tables import DAILY_START, TableSpec
from paimon_core.errors import ConfigError
from pipelines.cdc.events import CONNECTOR_POSITIONS
from pipelines.cdc.formats import DEFAULT_FORMAT, FORMATS
from pipelines.cdc.ingest import BatchReport, CdcOptions, ErrorRatioExceeded, ingest_batch
from pipelines.cdc.source_tables import TableFilter

__all__ = [
    "CDC_PARTITIONS",
    "DEFAULT_LAYOUT",
    "CdcConfig",
    "CdcSource",
    "build_cdc_asset",
    "build_landed_partitions_sensor",
    "build_landing_sensor",
    "cdc_commit_user",
    "cdc_identifier",
]

#: landing days
CDC_PARTITIONS = dg.DailyPartitionsDefinition(start_date=DAILY_START)
#: where a table's events land under the landing root (``{partition}``: the run partition)
DEFAULT_LAYOUT = "{table}/dt={partition}"
Partitioning = Literal["daily", "hourly", "none"]
#: which partition keys exist: every day / hour from ``start`` (``calendar``), or only those
#: whose events have landed, added by the landing sensor (``landed``)
PartitionKeys = Literal["calendar", "landed"]


@dataclass(frozen=True)
class CdcSource:
    """Where and how a table's change events land, and how runs are partitioned.

    Attributes:
        layout: the directory of one batch under the landing root; ``{table}`` = the table
            identifier, ``{partition}`` = the run's partition key (required unless
            ``partitioning`` is ``none``: the directory then holds the files of one batch).
        landing_root: another root than the ``landing`` resource's (same storage).
        format: the events' format, a name of :data:`pipelines.cdc.formats.FORMATS`.
        source_table: which source table's events are the table's (a
            :class:`~pipelines.cdc.source_tables.TableFilter` pattern, as ``--source-table``);
            ``None``: the table's own name in any database. Events of other tables are
            skipped and counted.
        connector: the Debezium connector whose source position orders the events (a key
            of :data:`pipelines.cdc.events.CONNECTOR_POSITIONS`); ``None`` = the events'
            ``source.connector``.
        position_fields: explicit position fields (wins over ``connector``).
        max_error_ratio: fail the batch above this share of malformed events.
        partitioning: ``daily`` / ``hourly`` run partitions from ``start``, or ``none``.
        start: first partition (``YYYY-MM-DD``, or ``YYYY-MM-DD-HH:MM`` for hourly).
        partition_keys: ``calendar``: every day (hour) from ``start`` is a partition, so each
            one without landed events shows "Missing" in the UI forever; ``landed``: a Dagster
            dynamic partitions definition (``partitions_name``) to which the landing sensor
            adds each day (hour) once its events have landed, so "Missing" counts the landed
            batches not ingested yet. Backfills from the UI select among the landed keys.
        partitions_name: the dynamic partitions' name (``landed``; default
            ``<db>_<table>_landed``). Tables that share a job must share it.
    """

    layout: str = DEFAULT_LAYOUT
    landing_root: str | None = None
    format: str = DEFAULT_FORMAT
    source_table: str | None = None
    connector: str | None = None
    position_fields: tuple[str, ...] = ()
    max_error_ratio: float = 0.05
    partitioning: Partitioning = "daily"
    start: str = DAILY_START
    partition_keys: PartitionKeys = "calendar"
    partitions_name: str | None = None

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise SettingsError(f"unknown CDC format {self.format!r}: expected one of "
                             f"{', '.join(sorted(FORMATS))}")
        if self.source_table is not None:
            try:
                TableFilter(self.source_table)
            except ConfigError as e:
                raise SettingsError(f"source_table: {e.reason}") from e
        if self.connector is not None and self.connector not in CONNECTOR_POSITIONS:
            raise SettingsError(f"unknown CDC connector {self.connector!r}: expected one of "
                             f"{', '.join(sorted(CONNECTOR_POSITIONS))}")
        if self.partitioning not in ("daily", "hourly", "none"):
            raise SettingsError(f"unknown partitioning {self.partitioning!r}: expected daily, "
                             "hourly or none")
        if self.partition_keys not in ("calendar", "landed"):
            raise SettingsError(f"unknown partition_keys {self.partition_keys!r}: expected "
                                "calendar or landed")
        if self.partition_keys == "landed" and self.partitioning == "none":
            raise SettingsError("partition_keys 'landed' needs daily or hourly partitioning")
        if self.partitioning != "none" and "{partition}" not in self.layout:
            raise SettingsError(f"layout {self.layout!r} has no {{partition}} placeholder "
                             f"(partitioning {self.partitioning})")

    def partitions_def(self, slug: str) -> dg.PartitionsDefinition | None:
        """The run partitions of the table whose :attr:`TableSpec.slug` is ``slug``
        (``None``: unpartitioned runs): the calendar's, or the dynamic partitions of its
        landed keys (``partitions_name``, default ``<slug>_landed``)."""
        if self.partition_keys == "landed":
            return dg.DynamicPartitionsDefinition(name=self.partitions_name or f"{slug}_landed")
        return self.calendar()

    def calendar(self) -> dg.TimeWindowPartitionsDefinition | None:
        """Every day / hour from ``start`` (the keys a landed directory may name)."""
        if self.partitioning == "daily":
            if self.start == DAILY_START:
                return CDC_PARTITIONS
            return dg.DailyPartitionsDefinition(start_date=self.start)
        if self.partitioning == "hourly":
            start = self.start if len(self.start) > 10 else f"{self.start}-00:00"
            return dg.HourlyPartitionsDefinition(start_date=start)
        return None

    def positions(self) -> tuple[str, ...] | None:
        if self.position_fields:
            return tuple(self.position_fields)
        if self.connector is not None:
            return CONNECTOR_POSITIONS[self.connector]
        return None

    def zone(self, landing: LandingZone) -> LandingZone:
        return landing if self.landing_root is None else LandingZone(
            root=self.landing_root, storage=landing.storage)

    def directory(self, landing: LandingZone, identifier: str, partition: str) -> str:
        """The landing directory of one batch."""
        relative = self.layout.format(table=identifier, partition=partition).strip("/")
        return self.zone(landing).path(*relative.split("/"))

    def landed(self, landing: LandingZone, identifier: str) -> list[str]:
        """The partition keys whose landing directory holds at least one file (one listing
        of the directory above the partition's, then one per candidate)."""
        segments = self.layout.strip("/").split("/")
        at = next(i for i, seg in enumerate(segments) if "{partition}" in seg)
        parent = [seg.format(table=identifier) for seg in segments[:at]]
        head, _, tail = segments[at].partition("{partition}")
        zone = self.zone(landing)
        fio = zone.file_io()
        out = []
        for st in fio.list_status(zone.path(*parent)):
            name = st.path.rstrip("/").rsplit("/", 1)[-1]
            if st.is_dir and name.startswith(head) and name.endswith(tail) and len(name) > len(
                    head) + len(tail):
                key = name[len(head):len(name) - len(tail)]
                if zone.has_files(self.directory(landing, identifier, key)):
                    out.append(key)
        return sorted(out)


class CdcConfig(dg.Config):
    """Knobs of a CDC ingestion run (unset: the table's :class:`CdcSource` settings)."""

    max_error_ratio: float | None = Field(
        default=None, description="fail the day above this share of malformed events "
        "(default: the table's setting, 0.05 unless set)")
    position_fields: list[str] = Field(
        default_factory=list,
        description="fields of 'source' ordering the events (empty: the table's connector, "
                    "else those of the events' source.connector)")


def cdc_identifier(day: str) -> int:
    """The commit identifier of a landing day (``2025-01-06`` -> ``20250106``) or hour
    (``2025-01-06-03:00`` -> ``202501060300``)."""
    return int("".join(c for c in day if c.isdigit()))


def files_batch_key(files: list[str]) -> str:
    """The batch key of an unpartitioned table's landed files: a digest of their names, so
    that a retry of the same files finds its commit (commit user per batch key)."""
    digest = hashlib.sha256("\n".join(sorted(files)).encode()).hexdigest()[:16]
    return f"files-{digest}"


def cdc_commit_user(spec: TableSpec, day: str) -> str:
    """The commit user of one table and landing day."""
    return f"dagster-{spec.identifier}@{day}"


def _day_files(landing: LandingZone, directory: str) -> list[str] | None:
    """The event files of one batch directory (sorted; hidden files ignored), None if the
    directory does not exist (nothing has landed)."""
    fio = landing.file_io()
    if not fio.exists(directory) and not fio.list_status(directory):
        return None
    return sorted(
        st.path for st in fio.list_status(directory)
        if not st.is_dir and not st.path.rsplit("/", 1)[-1].startswith((".", "_"))
    )


def _options(config: CdcConfig, source: CdcSource, user: str,
             props: dict[str, str]) -> CdcOptions:
    kw: dict[str, Any] = {
        "position_fields": tuple(config.position_fields) or source.positions(),
        "max_error_ratio": (source.max_error_ratio if config.max_error_ratio is None
                            else config.max_error_ratio),
        "commit_user": user,
        "format": source.format,
        "source_table": source.source_table,
    }
    # snapshot properties of the commit (run id -> lineage), where the job supports them
    if "properties" in {f.name for f in dataclasses.fields(CdcOptions)}:
        kw["properties"] = props
    return CdcOptions(**kw)


def _landed_keys(spec: TableSpec, source: CdcSource
                 ) -> tuple[dg.TimeWindowPartitionsDefinition, dg.PartitionsDefinition]:
    """(the calendar of keys a landed directory may name, the run partitions) of a table
    whose runs are partitioned."""
    calendar = source.calendar()
    parts = source.partitions_def(spec.slug)
    if calendar is None or parts is None:
        raise SettingsError(f"{spec.identifier}: a landing sensor needs partitioned runs "
                            "(partitioning daily or hourly)")
    return calendar, parts


def _add_landed(context: dg.SensorEvaluationContext, parts: dg.PartitionsDefinition,
                keys: list[str]) -> list[dg.AddDynamicPartitionsRequest]:
    """The request adding those of ``keys`` the dynamic ``parts`` do not have yet (none for
    calendar partitions)."""
    if not isinstance(parts, dg.DynamicPartitionsDefinition) or parts.name is None:
        return []
    known = set(context.instance.get_dynamic_partitions(parts.name))
    new = [k for k in keys if k not in known]
    return [parts.build_add_request(new)] if new else []


def build_landing_sensor(spec: TableSpec, source: CdcSource, job: Any, *, name: str,
                         minimum_interval_seconds: int = 60,
                         default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
                         ) -> dg.SensorDefinition:
    """A sensor requesting one run of ``job`` per landed partition of ``spec`` (its
    directory holds a file; ``run_key`` = the partition: each partition is requested once,
    and a re-run finds its commit anyway). With ``partition_keys: landed`` it first adds the
    landed keys the dynamic partitions do not have yet (a directory whose name is no
    day / hour of the calendar from ``start`` is ignored); so does
    :func:`build_landed_partitions_sensor` while this one is stopped."""
    calendar, parts = _landed_keys(spec, source)

    @dg.sensor(name=name, job=job, minimum_interval_seconds=minimum_interval_seconds,
               default_status=default_status,
               description=f"Change events landed for {spec.identifier} -> one run per "
               "landing partition.")
    def _landed(context: dg.SensorEvaluationContext, landing: LandingZone) -> dg.SensorResult:
        keys = [k for k in source.landed(landing, spec.identifier)
                if calendar.has_partition_key(k)]
        if not keys:
            return dg.SensorResult(skip_reason=f"nothing has landed for {spec.identifier}")
        return dg.SensorResult(run_requests=[dg.RunRequest(run_key=k, partition_key=k)
                                             for k in keys],
                               dynamic_partitions_requests=_add_landed(context, parts, keys))

    return _landed


def build_landed_partitions_sensor(
    spec: TableSpec, source: CdcSource, *, name: str, minimum_interval_seconds: int = 60,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.RUNNING,
) -> dg.SensorDefinition:
    """A sensor adding each landed day (hour) of ``spec`` to its dynamic partitions
    (``partition_keys: landed``) without requesting runs: a day that lands while the landing
    sensor is stopped is a partition all the same, "Missing" in the UI and backfillable from
    it. Ships running."""
    calendar, parts = _landed_keys(spec, source)
    if not isinstance(parts, dg.DynamicPartitionsDefinition):
        raise SettingsError(f"{spec.identifier}: partitions of landed days need "
                            "partition_keys 'landed'")

    @dg.sensor(name=name, minimum_interval_seconds=minimum_interval_seconds,
               default_status=default_status,
               description=f"Days (hours) landed for {spec.identifier} -> its partitions "
               f"({parts.name}); requests no run (the landing sensor does).")
    def _register(context: dg.SensorEvaluationContext, landing: LandingZone
                  ) -> dg.SensorResult:
        keys = [k for k in source.landed(landing, spec.identifier)
                if calendar.has_partition_key(k)]
        adds = _add_landed(context, parts, keys)
        if not adds:
            return dg.SensorResult(skip_reason=f"no new landed partition of {spec.identifier}")
        return dg.SensorResult(dynamic_partitions_requests=adds)

    return _register


def build_cdc_asset(spec: TableSpec, source: CdcSource | None = None,
                    labels: AssetLabels | None = None) -> dg.AssetsDefinition:
    """The CDC ingestion asset of one source table (``source``: where its events land and
    how runs are partitioned; ``labels``: key, group... default the demo's)."""
    src = source or CdcSource()
    labels = labels or AssetLabels()
    partitions_def = src.partitions_def(spec.slug)
    unit = {"daily": "landing day", "hourly": "landing hour", "none": "none"}[src.partitioning]

    @dg.asset(
        **labels.asset_kwargs(
            key=spec.key_path, group="ingestion", kinds=("spark", "paimon"),
            description=f"{spec.description} Partition = {unit}; runs "
            "pipelines.cdc.ingest.".strip()),
        partitions_def=partitions_def,
        backfill_policy=dg.BackfillPolicy.single_run() if partitions_def else None,
        pool=SPARK_POOL,
        metadata={TABLE: spec.identifier},
    )
    def _cdc(
        context: dg.AssetExecutionContext,
        config: CdcConfig,
        catalog: PaimonCatalog,
        landing: LandingZone,
        spark: SparkResource,
    ) -> dg.MaterializeResult:
        # one catalog (one FileIO) and one table for the whole run, shared with the Spark job
        settings = catalog.settings()
        cat = settings.catalog()
        table, altered = ensure_table(context, spec, cat)
        fio = landing.file_io()
        quarantine = landing.path(spec.identifier, "_quarantine")
        started = time.monotonic()
        created: list[int] = []
        reports: list[BatchReport] = []
        already: list[str] = []
        batches = sorted(context.partition_keys) if partitions_def else [""]
        for day in batches:
            directory = src.directory(landing, spec.identifier, day)
            files = _day_files(landing, directory)
            if files is None:
                raise non_retryable(
                    context, f"no change events have landed for {spec.identifier}"
                    f"{' on ' + day if day else ''} ({directory} does not exist)")
            if not files:
                context.log.info(f"{day or directory}: the landing directory is empty, "
                                 "nothing to ingest")
                continue
            if day:
                user, ident = cdc_commit_user(spec, day), cdc_identifier(day)
            else:  # unpartitioned: one batch per set of landed files
                day = files_batch_key(files)
                user, ident = cdc_commit_user(spec, day), 1
            # "already committed?" asked once per day, here; the job is told (checked=True)
            landed = table.new_commit(user).landed(ident)  # metadata only
            if landed:
                already.append(day)
                sid = landed[-1]
                context.log.info(f"{day}: already committed (snapshot {sid}); nothing applied")
                continue
            props = context_properties(context, **{"dagster.landing-day": day})
            extra: dict[str, Any] = {}
            if accepts_properties(ingest_batch):
                extra["properties"] = props
            try:
                report = ingest_batch(
                    spark.session(), settings, spec.identifier, ident, files,
                    _options(config, src, user, props), landing_io=fio, quarantine_root=quarantine,
                    table=table, checked=True, **extra,
                )
            except ErrorRatioExceeded as e:
                raise non_retryable(context, str(e), metadata={
                    "reasons": dg.MetadataValue.json(e.report.reasons),
                    "quarantine": str(e.report.quarantine)}) from e
            reports.append(report)
            if report.skipped:  # committed since the check above
                already.append(day)
                ids = table.new_commit(user).landed(ident)
                sid = ids[-1] if ids else None
                context.log.info(f"{day}: already committed (snapshot {sid}); nothing applied")
            else:
                created.extend(report.snapshot_ids)
                context.log.info(
                    f"{day}: {report.events} events, {report.valid} valid, "
                    f"{report.malformed} quarantined -> {report.rows_written} rows, "
                    f"snapshots {report.snapshot_ids}"
                )
        return dg.MaterializeResult(metadata=snapshot_metadata(table, created, **altered, **{
            "cdc/days": dg.MetadataValue.json(batches),
            "cdc/already_committed_days": dg.MetadataValue.json(already),
            "cdc/events": dg.MetadataValue.int(sum(r.events for r in reports)),
            "cdc/valid_events": dg.MetadataValue.int(sum(r.valid for r in reports)),
            "cdc/quarantined": dg.MetadataValue.int(sum(r.malformed for r in reports)),
            "cdc/rows_written": dg.MetadataValue.int(sum(r.rows_written for r in reports)),
            "cdc/new_columns": dg.MetadataValue.json(
                {k: v for r in reports for k, v in r.new_columns.items()}),
            "cdc/quarantine": quarantine,
            "paimon/seconds": dg.MetadataValue.float(round(time.monotonic() - started, 3)),
            **spark.run_metadata(),
        }))

    return _cdc


def __getattr__(name: str) -> Any:
    """The demo's objects, built by its ``defs.yaml`` components
    (:func:`assets.definitions.demo_object`):
    ``cdc_customers``, ``cdc_orders``, ``cdc_assets``, ``cdc_job``, ``cdc_schedule``."""
    from assets.definitions import demo_object

    return demo_object(__name__, name)
