"""Batch overwrite: a daily-partitioned asset that replaces the matching table partition.

``ref.fx_rates`` partition ``dt=<day>`` is loaded from the day's extract
(``<landing>/ref.fx_rates/dt=<day>/*.csv``) by the Spark job
:func:`pipelines.batch_overwrite.overwrite` as a **static** INSERT OVERWRITE of that partition:
one OVERWRITE snapshot replacing exactly ``dt=<day>`` (static: ``dynamic-partition-overwrite``
does not apply, so an extract with no rows empties the day); rows of another day in the
extract fail the commit. Re-running a day (a corrected extract, a retry, a backfill) replaces
the partition again with what landed: the table ends up as after one run. The commit user is
the run's (``dagster:<run id>``, see :func:`assets.metadata.run_commit_user`).
"""

import time
from typing import Any

import dagster as dg
from pydantic import Field

from assets.metadata import (
    accepts_properties,
    context_properties,
    run_commit_user,
    snapshot_metadata,
)
from assets.resources import SPARK_POOL, LandingZone, PaimonCatalog, SparkResource
from assets.runs import non_retryable
from assets.tables import DAILY_START, FX_RATES, TableSpec
from pipelines.batch_overwrite import FORMATS, load_files, overwrite
from pipelines.config import CatalogSettings

__all__ = ["OverwriteConfig", "build_overwrite_asset", "fx_rates", "overwrite_job"]

FX_PARTITIONS = dg.DailyPartitionsDefinition(start_date=DAILY_START)


class OverwriteConfig(dg.Config):
    """Knobs of a batch overwrite run."""

    format: str = Field(default="csv", description=f"input format: one of {FORMATS}")


def build_overwrite_asset(spec: TableSpec, partition_key: str) -> dg.AssetsDefinition:
    """The daily INSERT OVERWRITE asset of a table partitioned by ``partition_key``."""

    @dg.asset(
        name=spec.name,
        key_prefix=[spec.database],
        partitions_def=FX_PARTITIONS,
        pool=SPARK_POOL,
        group_name="ingestion",
        kinds={"spark", "paimon"},
        description=f"{spec.description} Partition = {partition_key}; runs "
        "pipelines.batch_overwrite (static INSERT OVERWRITE of that partition).",
        metadata={"paimon/table": spec.identifier},
    )
    def _overwrite(
        context: dg.AssetExecutionContext,
        config: OverwriteConfig,
        catalog: PaimonCatalog,
        landing: LandingZone,
        spark: SparkResource,
    ) -> dg.MaterializeResult:
        day = context.partition_key
        source = landing.day_dir(spec.identifier, day)
        if not landing.has_files(source):
            raise non_retryable(context, f"no extract has landed for {spec.identifier} on "
                                f"{day} ({source})")
        cat = catalog.load()
        table = spec.ensure(cat)
        started = time.monotonic()
        session = spark.session()
        landing_settings = CatalogSettings(landing.root, landing.storage_options())
        df = load_files(session, source, config.format, table.schema, landing_settings)
        kwargs: dict[str, Any] = {}
        if accepts_properties(overwrite):
            kwargs["properties"] = context_properties(context)
        result = overwrite(session, catalog.settings(), spec.identifier, df,
                           partition={partition_key: day}, static=True,
                           commit_user=run_commit_user(context.run.run_id), **kwargs)
        context.log.info(f"{partition_key}={day}: {result.rows} rows in {result.files} files "
                         f"-> snapshots {list(result.snapshot_ids)}")
        table = cat.get_table(spec.identifier)
        return dg.MaterializeResult(metadata=snapshot_metadata(
            table, list(result.snapshot_ids), **{
                "overwrite/partition": f"{partition_key}={day}",
                "overwrite/rows": dg.MetadataValue.int(result.rows),
                "overwrite/files": dg.MetadataValue.int(result.files),
                "overwrite/source": source,
                "paimon/seconds": dg.MetadataValue.float(round(time.monotonic() - started, 3)),
            }))

    return _overwrite


fx_rates = build_overwrite_asset(FX_RATES, "dt")

overwrite_job = dg.define_asset_job(
    "fx_rates_overwrite_job",
    selection=[fx_rates],
    description="Replace one day of ref.fx_rates with that day's extract.",
)
overwrite_schedule = dg.build_schedule_from_partitioned_job(
    overwrite_job, hour_of_day=6, minute_of_hour=0,
    default_status=dg.DefaultScheduleStatus.STOPPED,
)
