"""CDC ingestion assets: one per source table, partitioned by landing day.

Each partition runs the Spark job :func:`pipelines.cdc_ingest.ingest_batch` on the change
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
import time
from typing import Any

import dagster as dg
from pydantic import Field

from assets.metadata import accepts_properties, context_properties, snapshot_metadata
from assets.resources import SPARK_POOL, LandingZone, PaimonCatalog, SparkResource
from assets.runs import non_retryable
from assets.tables import CUSTOMERS, DAILY_START, ORDERS, TableSpec
from pipelines.cdc_ingest import BatchReport, CdcOptions, ErrorRatioExceeded, ingest_batch

__all__ = [
    "CDC_PARTITIONS",
    "CdcConfig",
    "build_cdc_asset",
    "cdc_assets",
    "cdc_commit_user",
    "cdc_identifier",
]

#: landing days
CDC_PARTITIONS = dg.DailyPartitionsDefinition(start_date=DAILY_START)


class CdcConfig(dg.Config):
    """Knobs of a CDC ingestion run."""

    max_error_ratio: float = Field(
        default=0.05, description="fail the day above this share of malformed events")
    position_fields: list[str] = Field(
        default_factory=list,
        description="fields of 'source' ordering the events (empty: those of the events' "
                    "source.connector)")


def cdc_identifier(day: str) -> int:
    """The commit identifier of a landing day: ``2025-01-06`` -> ``20250106``."""
    return int(day.replace("-", ""))


def cdc_commit_user(spec: TableSpec, day: str) -> str:
    """The commit user of one table and landing day."""
    return f"dagster-{spec.identifier}@{day}"


def _day_files(landing: LandingZone, spec: TableSpec, day: str) -> list[str] | None:
    """The event files of one day (sorted; hidden files ignored), None if the day's directory
    does not exist (nothing has landed)."""
    fio = landing.file_io()
    directory = landing.day_dir(spec.identifier, day)
    if not fio.exists(directory) and not fio.list_status(directory):
        return None
    return sorted(
        st.path for st in fio.list_status(directory)
        if not st.is_dir and not st.path.rsplit("/", 1)[-1].startswith((".", "_"))
    )


def _options(config: CdcConfig, user: str, props: dict[str, str]) -> CdcOptions:
    kw: dict[str, Any] = {
        "position_fields": tuple(config.position_fields) or None,
        "max_error_ratio": config.max_error_ratio,
        "commit_user": user,
    }
    # snapshot properties of the commit (run id -> lineage), where the job supports them
    if "properties" in {f.name for f in dataclasses.fields(CdcOptions)}:
        kw["properties"] = props
    return CdcOptions(**kw)


def build_cdc_asset(spec: TableSpec) -> dg.AssetsDefinition:
    """The CDC ingestion asset of one source table."""

    @dg.asset(
        name=spec.name,
        key_prefix=[spec.database],
        partitions_def=CDC_PARTITIONS,
        backfill_policy=dg.BackfillPolicy.single_run(),
        pool=SPARK_POOL,
        group_name="ingestion",
        kinds={"spark", "paimon"},
        description=f"{spec.description} Partition = landing day; runs pipelines.cdc_ingest.",
        metadata={"paimon/table": spec.identifier},
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
        table = spec.ensure(cat)
        fio = landing.file_io()
        quarantine = landing.path(spec.identifier, "_quarantine")
        started = time.monotonic()
        created: list[int] = []
        reports: list[BatchReport] = []
        already: list[str] = []
        for day in sorted(context.partition_keys):
            files = _day_files(landing, spec, day)
            if files is None:
                raise non_retryable(
                    context, f"no change events have landed for {spec.identifier} on {day} "
                    f"({landing.day_dir(spec.identifier, day)} does not exist)")
            user, ident = cdc_commit_user(spec, day), cdc_identifier(day)
            if not files:
                context.log.info(f"{day}: the landing directory is empty, nothing to ingest")
                continue
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
                    _options(config, user, props), landing_io=fio, quarantine_root=quarantine,
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
        return dg.MaterializeResult(metadata=snapshot_metadata(table, created, **{
            "cdc/days": dg.MetadataValue.json(sorted(context.partition_keys)),
            "cdc/already_committed_days": dg.MetadataValue.json(already),
            "cdc/events": dg.MetadataValue.int(sum(r.events for r in reports)),
            "cdc/valid_events": dg.MetadataValue.int(sum(r.valid for r in reports)),
            "cdc/quarantined": dg.MetadataValue.int(sum(r.malformed for r in reports)),
            "cdc/rows_written": dg.MetadataValue.int(sum(r.rows_written for r in reports)),
            "cdc/new_columns": dg.MetadataValue.json(
                {k: v for r in reports for k, v in r.new_columns.items()}),
            "cdc/quarantine": quarantine,
            "paimon/seconds": dg.MetadataValue.float(round(time.monotonic() - started, 3)),
        }))

    return _cdc


cdc_customers = build_cdc_asset(CUSTOMERS)
cdc_orders = build_cdc_asset(ORDERS)
cdc_assets = [cdc_customers, cdc_orders]

cdc_job = dg.define_asset_job(
    "cdc_ingest_job",
    selection=dg.AssetSelection.assets(*cdc_assets),
    description="Ingest one landing day of change events into every CDC table.",
)
cdc_schedule = dg.build_schedule_from_partitioned_job(
    cdc_job, hour_of_day=1, minute_of_hour=15,
    default_status=dg.DefaultScheduleStatus.STOPPED,
)
