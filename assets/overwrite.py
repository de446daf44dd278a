"""Batch overwrite: a daily-partitioned asset that replaces the matching table partition.

``ref.fx_rates`` partition ``dt=<day>`` is loaded from the day's extract
(``<landing>/ref.fx_rates/dt=<day>/*.csv``) by the Spark job
:func:`pipelines.batch_overwrite.overwrite` as a **static** INSERT OVERWRITE of that partition:
one OVERWRITE snapshot replacing exactly ``dt=<day>`` (static: ``dynamic-partition-overwrite``
does not apply, so an extract with no rows empties the day); rows of another day in the
extract fail the commit. Re-running a day (a corrected extract, a retry, a backfill) replaces
the partition again with what landed: the table ends up as after one run. The commit user is
the run's (``dagster-run-<run id>``, see :func:`paimon_core.commit.users.run_commit_user`).
"""

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from assets.labels import AssetLabels, SettingsError
from assets.metadata import (
    TABLE,
    context_properties,
    run_commit_user,
    snapshot_metadata,
)
from assets.resources import SPARK_POOL, LandingZone, PaimonCatalog, SparkResource
from assets.runs import ensure_table, non_retryable
from assets.tables import DAILY_START, TableSpec
from paimon_core import CommitOptions
from pipelines.batch_overwrite import FORMATS, load_files, overwrite
from pipelines.config import CatalogSettings
from pipelines.writer import WriteSpec

__all__ = [
    "OverwriteConfig",
    "OverwritePartitions",
    "build_overwrite_asset",
]

FX_PARTITIONS = dg.DailyPartitionsDefinition(start_date=DAILY_START)


@dataclass(frozen=True)
class OverwritePartitions:
    """The run partitions of an overwrite table, one per table partition value.

    Attributes:
        kind: ``daily`` (from ``start``), ``static`` (the listed ``values``) or ``dynamic``
            (values added at run time to the Dagster dynamic partitions ``name``).
        layout: the extract's directory under the landing root (``{table}``, ``{column}``,
            ``{partition}`` placeholders).
        format: the extract's format (one of :data:`pipelines.batch_overwrite.FORMATS`).
    """

    kind: str = "daily"
    start: str = DAILY_START
    values: tuple[str, ...] = ()
    name: str | None = None
    layout: str = "{table}/{column}={partition}"
    format: str = "csv"

    def __post_init__(self) -> None:
        if self.kind not in ("daily", "static", "dynamic"):
            raise SettingsError(f"unknown partitions kind {self.kind!r}: expected daily, "
                                "static or dynamic")
        if self.kind == "static" and not self.values:
            raise SettingsError("static partitions need 'values'")
        if self.kind == "dynamic" and not self.name:
            raise SettingsError("dynamic partitions need a 'name'")
        if self.format not in FORMATS:
            raise SettingsError(f"unknown extract format {self.format!r}: expected one of "
                                f"{', '.join(FORMATS)}")

    def partitions_def(self) -> dg.PartitionsDefinition:
        if self.kind == "static":
            return dg.StaticPartitionsDefinition(list(self.values))
        if self.kind == "dynamic":
            return dg.DynamicPartitionsDefinition(name=self.name)
        if self.start == DAILY_START:
            return FX_PARTITIONS
        return dg.DailyPartitionsDefinition(start_date=self.start)


class OverwriteConfig(dg.Config):
    """Knobs of a batch overwrite run."""

    format: str | None = Field(default=None, description=f"input format: one of {FORMATS} "
                               "(default: the table's, csv unless set)")


def build_overwrite_asset(spec: TableSpec, partition_key: str,
                          partitions: OverwritePartitions | None = None,
                          labels: AssetLabels | None = None,
                          upstream: Sequence[str] | None = None) -> dg.AssetsDefinition:
    """The INSERT OVERWRITE asset of a table partitioned by ``partition_key``: one run
    replaces the table partition of its run partition with the landed extract, or, given
    ``upstream`` (an asset key), with that asset's output for the same partition."""
    parts = partitions or OverwritePartitions()
    labels = labels or AssetLabels()
    if partition_key not in spec.partition_keys:
        raise SettingsError(f"{spec.identifier}: {partition_key!r} is not a partition key of "
                            f"the table (partition keys: {spec.partition_keys})")
    if upstream:
        return _from_upstream(spec, partition_key, parts, labels, upstream)

    @dg.asset(
        **labels.asset_kwargs(
            key=spec.key_path, group="ingestion", kinds=("spark", "paimon"),
            description=f"{spec.description} Partition = {partition_key}; runs "
            "pipelines.batch_overwrite (static INSERT OVERWRITE of that partition).".strip()),
        partitions_def=parts.partitions_def(),
        pool=SPARK_POOL,
        metadata={TABLE: spec.identifier},
    )
    def _overwrite(
        context: dg.AssetExecutionContext,
        config: OverwriteConfig,
        catalog: PaimonCatalog,
        landing: LandingZone,
        spark: SparkResource,
    ) -> dg.MaterializeResult:
        day = context.partition_key
        relative = parts.layout.format(table=spec.identifier, column=partition_key,
                                       partition=day).strip("/")
        source = landing.path(*relative.split("/"))
        if not landing.has_files(source):
            raise non_retryable(context, f"no extract has landed for {spec.identifier} on "
                                f"{day} ({source})")
        cat = catalog.load()
        table, altered = ensure_table(context, spec, cat)
        started = time.monotonic()
        session = spark.session()
        landing_settings = CatalogSettings(landing.root, landing.storage_options())
        df = load_files(session, source, config.format or parts.format, table.schema,
                        landing_settings)
        result = overwrite(session, catalog.settings(), spec.identifier, df,
                           partition={partition_key: day}, static=True,
                           write=WriteSpec(run_commit_user(context.run.run_id), options=(
                               CommitOptions(properties=context_properties(context)))))
        context.log.info(f"{partition_key}={day}: {result.rows} rows in {result.files} files "
                         f"-> snapshots {list(result.snapshot_ids)}")
        table = cat.get_table(spec.identifier)
        return dg.MaterializeResult(metadata=snapshot_metadata(
            table, list(result.snapshot_ids), **altered, **{
                "overwrite/partition": f"{partition_key}={day}",
                "overwrite/rows": dg.MetadataValue.int(result.rows),
                "overwrite/files": dg.MetadataValue.int(result.files),
                "overwrite/source": source,
                "paimon/seconds": dg.MetadataValue.float(round(time.monotonic() - started, 3)),
                **spark.run_metadata(),
            }))

    return _overwrite


def _from_upstream(spec: TableSpec, partition_key: str, parts: OverwritePartitions,
                   labels: AssetLabels, upstream: Sequence[str]) -> dg.AssetsDefinition:
    """The overwrite asset fed by an upstream asset's output (a pyarrow Table or a pandas /
    polars DataFrame, loaded by that asset's IO manager): written by paimon_core as one
    static INSERT OVERWRITE of the run's partition (no Spark)."""

    @dg.asset(
        **labels.asset_kwargs(
            key=spec.key_path, group="ingestion", kinds=("paimon",),
            description=f"{spec.description} Partition = {partition_key}; the partition "
            f"replaced by {'/'.join(upstream)}'s output (static INSERT OVERWRITE).".strip()),
        partitions_def=parts.partitions_def(),
        ins={"rows": dg.AssetIn(key=dg.AssetKey(list(upstream)))},
        metadata={TABLE: spec.identifier},
    )
    def _overwrite(context: dg.AssetExecutionContext, catalog: PaimonCatalog,
                   rows: Any) -> dg.MaterializeResult:
        day = context.partition_key
        data = _arrow(rows)
        if partition_key not in data.column_names:  # the partition's rows, without its column
            data = data.append_column(partition_key, pa.array([day] * data.num_rows))
        if data.num_rows and not pc.all(pc.equal(
                pc.cast(data.column(partition_key), pa.string()), day)).as_py():
            raise non_retryable(context, f"{'/'.join(upstream)} gave rows outside "
                                f"{partition_key}={day}: refusing to overwrite")
        started = time.monotonic()
        table, altered = ensure_table(context, spec, catalog.load())
        builder = table.new_batch_write_builder(
            run_commit_user(context.run.run_id), options=CommitOptions(
                properties=context_properties(context), dynamic_partition_overwrite=False),
        ).overwrite({partition_key: day})
        with builder.new_write() as write:
            write.write_arrow(data)
            messages = write.prepare_commit()
        ids = builder.new_commit().commit(messages)
        return dg.MaterializeResult(metadata=snapshot_metadata(table, list(ids), **altered, **{
            "overwrite/partition": f"{partition_key}={day}",
            "overwrite/rows": dg.MetadataValue.int(data.num_rows),
            "overwrite/source": "/".join(upstream),
            "paimon/seconds": dg.MetadataValue.float(round(time.monotonic() - started, 3)),
        }))

    return _overwrite


def _arrow(rows: Any) -> pa.Table:
    """An upstream output as a pyarrow Table (pyarrow, pandas or polars)."""
    if isinstance(rows, pa.Table):
        return rows
    if hasattr(rows, "to_arrow"):  # polars
        return rows.to_arrow()
    if type(rows).__module__.startswith("pandas"):
        return pa.Table.from_pandas(rows, preserve_index=False)
    raise TypeError(f"an overwrite table takes a pyarrow Table or a pandas / polars DataFrame, "
                    f"got {type(rows).__name__}")


def __getattr__(name: str) -> Any:
    """The demo's objects, built by its ``defs.yaml`` components
    (:func:`assets.definitions.demo_object`):
    ``fx_rates``, ``overwrite_job``, ``overwrite_schedule``."""
    from assets.definitions import demo_object

    return demo_object(__name__, name)
