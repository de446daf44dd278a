"""Table maintenance: per-bucket compaction and snapshot expiry, with their schedules.

**Compaction** — one asset per table, partitioned by bucket (and by day for a daily-partitioned
table: ``dt x bucket``); a partition runs the Spark job :func:`pipelines.compact.compact` on
that one bucket, and starts Spark only when the planner (metadata only) finds work. A
partition key names its bucket in full (``cdc.orders/bucket-3``,
``ref.fx_rates/bucket-1|2025-01-06``), so the ``dagster/partition`` tag of its runs, however
they are launched, is the bucket's, and ``dagster.yaml`` admits one run per value of that
tag: the same bucket never compacts twice at once (see :mod:`assets.runs`; two compactions
that raced anyway would conflict on the files they delete: the second re-plans from the fresh
snapshot). The buckets are the table's (:class:`BucketLayout`): ``0..N-1`` of a fixed-bucket
table, bucket 0 of an unaware-bucket append table (per partition), and the live buckets of a
dynamic-bucket primary-key table (``bucket = -1``), dynamic partitions a sensor and the
schedule add as the table grows. A run compacts its bucket fully (one sorted run on the last
level), as
``python -m pipelines.jobs.compact`` and ``paimon compact`` do (one default,
:data:`paimon_core.DEFAULT_COMPACT_STRATEGY`), unless its config says ``strategy: minor``
(what the universal picker asks for, what writers do; may be nothing). The hourly schedule
asks the planner which buckets the picker would compact and requests a ``strategy: minor``
run for each of them only. Metadata: files and sorted runs before / after, bytes rewritten
and written.

**Expiry** — one asset per table, daily schedule: :func:`pipelines.expire.expire` expires
snapshots by the table's ``snapshot.*`` retention (consumers and tags keep what they need)
and removes orphan files older than a day; Spark starts only when there are files for its
tasks to delete. Metadata: snapshots expired, bytes freed.

Compaction and overwrite commits use a commit user per run (``dagster-run-<run id>``): they
commit with the batch identifier, where a shared user would let one run mistake another's
snapshot for its own after losing a publish race; the per-run user also names the run in the
snapshot.
"""

import functools
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg
import pyarrow.compute as pc
from pydantic import Field

from assets.labels import AssetLabels, SettingsError
from assets.metadata import (
    COMMIT_KIND,
    SNAPSHOT_ID,
    TABLE,
    accepts_properties,
    context_properties,
    id_text,
    run_commit_user,
    snapshot_metadata,
)
from assets.observations import report_table_state
from assets.resources import SPARK_POOL, PaimonCatalog, SparkResource
from assets.runs import non_retryable
from assets.tables import (
    DAILY_START,
    DAY_DIM,
    BucketLayout,
    TableSpec,
    bucket_partitions,
    check_bucket_layout,
    dynamic_buckets_name,
    missing_buckets,
    partition_key_of,
    split_key,
)
from paimon_core import FileStoreTable
from paimon_core.integration import (
    DEFAULT_COMPACT_STRATEGY,
    CompactStrategy,
    DataFileMeta,
    TableLayout,
    sorted_runs,
)
from pipelines.compact import compact, list_buckets, pick_buckets, plan_compaction
from pipelines.config import TableHandle
from pipelines.expire import expire

__all__ = [
    "BucketState",
    "CompactConfig",
    "ExpiryConfig",
    "bucket_partitions",
    "bucket_state",
    "build_compaction",
    "build_expiry_asset",
    "files_state",
    "partition_key_of",  # their home: assets.tables
    "split_key",
]

EXPIRE_TAG = "paimon/expire"


# ------------------------------------------------------------------------------ buckets
@dataclass(frozen=True)
class BucketState:
    """One bucket's live files (metadata only)."""

    files: int
    sorted_runs: int
    bytes: int
    levels: dict[int, int]


def bucket_state(table: FileStoreTable, partition: dict[str, str] | None,
                 bucket: int) -> BucketState:
    """Files, sorted runs and bytes of one (partition, bucket) at the latest snapshot
    (``table.inspect``: metadata only, one listing)."""
    files = table.inspect.files(partition=partition, bucket=bucket)
    levels = files.column("level").to_pylist()
    return BucketState(files.num_rows, sorted_runs(levels, bool(table.schema.primary_keys)),
                       int(pc.sum(files.column("file_size_in_bytes")).as_py() or 0),
                       dict(Counter(levels)))


def files_state(table: FileStoreTable, files: Sequence[DataFileMeta]) -> BucketState:
    """Files, sorted runs and bytes of one bucket's live ``files`` (what :func:`bucket_state`
    says of a bucket listed already)."""
    levels = [f.level for f in files]
    return BucketState(len(files), sorted_runs(levels, bool(table.schema.primary_keys)),
                       sum(f.file_size for f in files), dict(Counter(levels)))


def _rewritten_bytes(table: FileStoreTable, snapshot_id: int) -> tuple[int, int]:
    """(bytes of the input files rewritten, bytes of the new files) of a COMPACT snapshot;
    files only moved to another level (upgrades) count in neither."""
    delta = table.inspect.delta_files(snapshot_id).to_pylist()
    added = {r["file_path"]: r["file_size_in_bytes"] for r in delta if r["kind"] == "ADD"}
    deleted = {r["file_path"]: r["file_size_in_bytes"] for r in delta if r["kind"] == "DELETE"}
    moved = added.keys() & deleted.keys()
    return (sum(v for k, v in deleted.items() if k not in moved),
            sum(v for k, v in added.items() if k not in moved))


# ------------------------------------------------------------------------------ compaction
class CompactConfig(dg.Config):
    """Knobs of a compaction run: the strategy, full unless told otherwise, as
    ``python -m pipelines.jobs.compact`` and ``paimon compact``
    (:data:`paimon_core.DEFAULT_COMPACT_STRATEGY`, one home)."""

    strategy: CompactStrategy = Field(
        default=DEFAULT_COMPACT_STRATEGY, description="full: the bucket becomes one sorted "
        "run on the last level; minor: what the universal picker asks for (may be nothing)")
    full: bool | None = Field(default=None, description="the older spelling: true = "
                              "strategy full, false = strategy minor")

    def chosen(self) -> CompactStrategy:
        """The strategy of the run: ``full`` when set, else ``strategy``.

        Raises:
            SettingsError: ``full`` and an explicit ``strategy`` disagree.
        """
        if self.full is None:
            return self.strategy
        spelled: CompactStrategy = "full" if self.full else "minor"
        if "strategy" in self.model_fields_set and self.strategy != spelled:
            raise SettingsError(f"compaction config: full: {str(self.full).lower()} "
                                f"contradicts strategy: {self.strategy}")
        return spelled


@dataclass(frozen=True)
class Compaction:
    """The compaction asset, job and schedule of one table, and the sensor bringing its
    dynamic partitions up to the table's buckets (None: static partitions)."""

    asset: dg.AssetsDefinition
    job: Any
    schedule: dg.ScheduleDefinition
    sensor: dg.SensorDefinition | None = None


def build_compaction(
    spec: TableSpec, *, cron: str = "0 * * * *", day_start: str = DAILY_START,
    labels: AssetLabels | None = None, table_key: Sequence[str] | None = None,
    schedule_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.STOPPED,
    layout: BucketLayout | None = None, layout_source: str = "", buckets_interval: int = 60,
) -> Compaction:
    """Per-bucket compaction of one table: the asset, its job (per-partition run tags) and
    a schedule (``cron``, hourly by default) requesting runs only for the buckets that need
    compaction. ``table_key``: the table's asset key (default ``spec.key_path``).
    ``layout``: as ``layout_source`` declares it (static partitions, checked by runs and
    ticks); unset or dynamic: dynamic partitions (:func:`_buckets_sensor`)."""
    labels = labels or AssetLabels()
    table_asset = dg.AssetKey(list(table_key or spec.key_path))
    parts = bucket_partitions(spec, day_start, layout)
    dynamic = layout is None or layout.known_buckets() is None
    check_layout = functools.partial(check_bucket_layout, spec.identifier, layout, layout_source)
    mapping: dg.PartitionMapping = (
        dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name=DAY_DIM)
        if spec.partition_keys else dg.AllPartitionMapping())

    @dg.asset(
        **labels.asset_kwargs(
            key=["maintenance", f"{spec.slug}_compaction"], group="maintenance",
            kinds=("spark", "paimon"),
            description=f"Compact one bucket of {spec.identifier} (pipelines.compact); "
            "partition = " + ("day x bucket." if spec.partition_keys else "bucket.")),
        deps=[dg.AssetDep(table_asset, partition_mapping=mapping)],
        partitions_def=parts,
        # no backfill policy: a backfill then runs one partition per run, tagged with it (a
        # policy, even multi_run(1), makes range runs, which carry no dagster/partition)
        pool=SPARK_POOL,
        metadata={TABLE: spec.identifier},
    )
    def _compact(
        context: dg.AssetExecutionContext,
        config: CompactConfig,
        catalog: PaimonCatalog,
        spark: SparkResource,
    ) -> dg.MaterializeResult:
        if not context.has_partition_key:
            raise non_retryable(
                context, f"a {spec.identifier} compaction run compacts one bucket: launch one "
                "run per partition (a partition-range run escapes the one-compaction-per-"
                "bucket limit)")
        partition, bucket = split_key(spec, context.partition_key)
        # one catalog (one FileIO) and one table for the run, shared with the Spark job
        settings = catalog.settings()
        cat = settings.catalog()
        if not cat.table_exists(spec.identifier):
            return dg.MaterializeResult(metadata={"compact/status": "no table yet"})
        table = cat.get_table(spec.identifier)
        try:
            check_layout(table)
            strategy = config.chosen()
        except SettingsError as e:
            raise non_retryable(context, str(e)) from e
        started = time.monotonic()
        handle = TableHandle.of(settings, table)
        parts_arg = [partition] if partition else None
        # the bucket's live files, listed once: its state before and the job's first plan
        _, groups = list_buckets(handle, partitions=parts_arg, buckets=[bucket])
        before = files_state(table, [f for _, fs in groups.values() for f in fs])
        todo = pick_buckets(handle, groups, strategy=strategy)
        snapshot_ids: list[int] = []
        status = "nothing to compact"
        if todo:  # only now start Spark
            kwargs: dict[str, Any] = {}
            if accepts_properties(compact):
                kwargs["properties"] = context_properties(context)
            report = compact(spark.session(), settings, spec.identifier,
                             strategy=strategy, partitions=parts_arg,
                             buckets=[bucket],
                             commit_user=run_commit_user(context.run.run_id),
                             table=table, planned=todo, **kwargs)
            if report.snapshot_id is not None:
                snapshot_ids = [report.snapshot_id]
                status = "compacted"
        after = bucket_state(table, partition, bucket)  # the compacted snapshot's files
        if snapshot_ids:  # the table's own asset shows the compacted table
            report_table_state(context, table, table_asset)
        rewritten, written = (_rewritten_bytes(table, snapshot_ids[-1]) if snapshot_ids
                              else (0, 0))
        context.log.info(
            f"{context.partition_key}: {status}; files {before.files} -> "
            f"{after.files}, sorted runs {before.sorted_runs} -> {after.sorted_runs}, "
            f"{rewritten} bytes rewritten")
        return dg.MaterializeResult(metadata=snapshot_metadata(
            table, snapshot_ids, table_state=False, **{
            "compact/status": status,
            "compact/bucket": dg.MetadataValue.int(bucket),
            "compact/partition": ",".join(f"{k}={v}" for k, v in (partition or {}).items())
            or "-",
            "compact/files_before": dg.MetadataValue.int(before.files),
            "compact/files_after": dg.MetadataValue.int(after.files),
            "compact/sorted_runs_before": dg.MetadataValue.int(before.sorted_runs),
            "compact/sorted_runs_after": dg.MetadataValue.int(after.sorted_runs),
            "compact/bytes_before": dg.MetadataValue.int(before.bytes),
            "compact/bytes_after": dg.MetadataValue.int(after.bytes),
            "compact/bytes_rewritten": dg.MetadataValue.int(rewritten),
            "compact/bytes_written": dg.MetadataValue.int(written),
            "compact/levels_after": dg.MetadataValue.json(
                {str(k): v for k, v in sorted(after.levels.items())}),
            "paimon/seconds": dg.MetadataValue.float(round(time.monotonic() - started, 3)),
            **spark.run_metadata(),
        }))

    job = dg.define_asset_job(
        f"{spec.slug}_compaction_job",
        selection=[_compact],
        description=f"Compact one bucket of {spec.identifier}.",
    )

    @dg.schedule(
        name=f"{spec.slug}_compaction_schedule",
        cron_schedule=cron,
        job=job,
        default_status=schedule_status,
        description=f"Compact the buckets of {spec.identifier} that need it (one run each).",
    )
    def _schedule(context: dg.ScheduleEvaluationContext,
                  catalog: PaimonCatalog) -> dg.SkipReason | list[dg.RunRequest]:
        settings = catalog.settings()
        cat = settings.catalog()
        if not cat.table_exists(spec.identifier):
            return dg.SkipReason(f"{spec.identifier} does not exist yet")
        table = cat.get_table(spec.identifier)
        check_layout(table)
        if dynamic:
            _add_buckets(context.instance, spec, table)
        requests = _minor_requests(context, spec, parts, TableHandle.of(settings, table),
                                   _compact.op.name, dynamic)
        return requests or dg.SkipReason(f"no bucket of {spec.identifier} needs compaction")

    return Compaction(_compact, job, _schedule, _buckets_sensor(
        spec, check_layout, buckets_interval) if dynamic else None)


def _add_buckets(instance: dg.DagsterInstance, spec: TableSpec, table: FileStoreTable) -> None:
    """Add the table's buckets missing from its dynamic compaction partitions."""
    new = missing_buckets(instance, spec, table)
    if new:
        instance.add_dynamic_partitions(dynamic_buckets_name(spec), new)


def _minor_requests(context: dg.ScheduleEvaluationContext, spec: TableSpec,
                    parts: dg.PartitionsDefinition, handle: TableHandle,
                    op_name: str, dynamic: bool) -> list[dg.RunRequest]:
    """A ``strategy: minor`` run request for each bucket the universal picker would compact
    (among the partitions of ``parts``: the instance's, when ``dynamic``)."""
    _, todo = plan_compaction(handle, strategy="minor")
    table = handle.open()
    stamp = context.scheduled_execution_time.isoformat()
    requests = []
    for part_bytes, bucket, _total, _files in todo:
        key = partition_key_of(spec, _partition_spec(table, part_bytes), bucket)
        with dg.partition_loading_context(
                dynamic_partitions_store=context.instance if dynamic else None):
            if not parts.has_partition_key(key):
                continue  # a day outside the partitions definition
        requests.append(dg.RunRequest(  # the picker's choice, not a full rewrite
            run_key=f"{stamp}:{key}", partition_key=key,
            run_config={"ops": {op_name: {"config": {"strategy": "minor"}}}}))
    return requests


def _buckets_sensor(spec: TableSpec, check_layout: Callable[[FileStoreTable], None],
                    interval: int) -> dg.SensorDefinition:
    """The sensor bringing the table's dynamic compaction partitions up to its buckets
    (:func:`assets.tables.table_buckets`: ``0..N-1``, or the live buckets of a dynamic-bucket
    table) every ``interval`` seconds, as the schedule's ticks do too; running from the
    start: the partitions are there to launch from the UI before the schedule's first
    tick."""

    @dg.sensor(
        name=f"{spec.slug}_compaction_buckets_sensor", minimum_interval_seconds=interval,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=f"Add the buckets of {spec.identifier} to its compaction partitions "
        "(metadata only).")
    def _buckets(context: dg.SensorEvaluationContext,
                 catalog: PaimonCatalog) -> dg.SensorResult | dg.SkipReason:
        cat = catalog.settings().catalog()
        if not cat.table_exists(spec.identifier):
            return dg.SkipReason(f"{spec.identifier} does not exist yet")
        table = cat.get_table(spec.identifier)
        check_layout(table)
        new = missing_buckets(context.instance, spec, table)
        if not new:
            return dg.SkipReason(f"no new bucket in {spec.identifier}")
        return dg.SensorResult(dynamic_partitions_requests=[
            dg.AddDynamicPartitionsRequest(dynamic_buckets_name(spec), new)])

    return _buckets


def _partition_spec(table: FileStoreTable, partition: bytes) -> dict[str, str] | None:
    layout = TableLayout.of(table.path, table.schema)
    if not layout.partition_keys:
        return None
    values = layout.decode_partition(partition)
    return {k: str(v) for k, v in zip(layout.partition_keys, values)}


# ------------------------------------------------------------------------------ expiry
class ExpiryConfig(dg.Config):
    """Knobs of an expiry run (defaults: the table's ``snapshot.*`` options)."""

    retain_min: int | None = Field(default=None, description="snapshot.num-retained.min")
    retain_max: int | None = Field(default=None, description="snapshot.num-retained.max")
    older_than_minutes: float | None = Field(
        default=None, description="expire snapshots older than this (default: "
        "snapshot.time-retained)")
    remove_orphans: bool | None = Field(default=None, description="remove orphan files "
                                        "(default: yes)")
    orphans_older_than_hours: float | None = Field(
        default=None, description="only orphan files last modified before now - this "
        "(default: 24)")

    def over(self, base: "ExpiryConfig") -> "ExpiryConfig":
        """These settings, the unset ones taken from ``base`` (the table's)."""
        mine = self.model_dump(exclude_none=True)
        return ExpiryConfig(**{**base.model_dump(exclude_none=True), **mine})


def build_expiry_asset(spec: TableSpec, *, labels: AssetLabels | None = None,
                       table_key: Sequence[str] | None = None,
                       defaults: "ExpiryConfig | None" = None) -> dg.AssetsDefinition:
    """Snapshot expiry (and orphan removal) of one table; ``defaults``: the retention and
    orphan settings a run uses where its own config leaves them unset."""
    labels = labels or AssetLabels()
    base = defaults or ExpiryConfig()
    table_asset = dg.AssetKey(list(table_key or spec.key_path))

    @dg.asset(
        **labels.asset_kwargs(
            key=["maintenance", f"{spec.slug}_expiry"], group="maintenance",
            kinds=("spark", "paimon"),
            description=f"Expire old snapshots of {spec.identifier} and remove orphan files "
            "(pipelines.expire)."),
        deps=[table_asset],
        pool=SPARK_POOL,
        metadata={TABLE: spec.identifier},
    )
    def _expire(
        context: dg.AssetExecutionContext,
        config: ExpiryConfig,
        catalog: PaimonCatalog,
        spark: SparkResource,
    ) -> dg.MaterializeResult:
        cat = catalog.load()
        if not cat.table_exists(spec.identifier):  # the figures are those of no table: 0
            return dg.MaterializeResult(metadata={
                TABLE: spec.identifier, "expire/status": "no table yet",
                **{k: dg.MetadataValue.int(0) for k in (
                    "expire/snapshots_expired", "expire/files_deleted", "expire/bytes_freed",
                    "expire/orphans_removed", "expire/total_bytes_freed")}})
        sm = cat.get_table(spec.identifier).snapshot_manager
        retained_before = _retained(sm)
        config = config.over(base)
        now_ms = int(time.time() * 1000)
        orphan_hours = 24.0 if config.orphans_older_than_hours is None else (
            config.orphans_older_than_hours)
        older = (None if config.older_than_minutes is None
                 else now_ms - int(config.older_than_minutes * 60_000))
        started = time.monotonic()
        report = expire(  # Spark starts only if there are files for its tasks to delete
            spark.session, catalog.settings(), spec.identifier,
            retain_min=config.retain_min, retain_max=config.retain_max,
            older_than_millis=older, remove_orphans=config.remove_orphans is not False,
            orphans_older_than_millis=now_ms - int(orphan_hours * 3.6e6),
        )
        ex = report.expire
        table = cat.get_table(spec.identifier)
        sm = table.snapshot_manager
        if int(ex.get("expired", 0)):  # the table's own asset shows what expiry left
            report_table_state(context, table, table_asset)
        freed = int(ex.get("bytes_freed", 0)) + (report.orphan_bytes if report.orphans_deleted
                                                else 0)
        context.log.info(
            f"{spec.identifier}: {ex.get('expired', 0)} snapshots expired "
            f"{ex.get('expired_ids', [])}, {ex.get('deleted_files', 0)} files / "
            f"{ex.get('bytes_freed', 0)} bytes freed; {report.orphans_deleted} orphans removed")
        return dg.MaterializeResult(metadata={
            TABLE: spec.identifier,
            "expire/status": "expired" if ex.get("expired") else "nothing to expire",
            SNAPSHOT_ID: id_text(sm.latest_snapshot_id()),
            COMMIT_KIND: "NONE",
            "expire/snapshots_expired": dg.MetadataValue.int(int(ex.get("expired", 0))),
            "expire/expired_ids": dg.MetadataValue.json(list(ex.get("expired_ids", []))),
            "expire/earliest": id_text(ex.get("earliest")),
            "expire/retained_before": dg.MetadataValue.int(retained_before),
            "expire/retained_after": dg.MetadataValue.int(_retained(sm)),
            "expire/files_deleted": dg.MetadataValue.int(int(ex.get("deleted_files", 0))),
            "expire/data_files_deleted": dg.MetadataValue.int(int(ex.get("data_files", 0))),
            "expire/bytes_freed": dg.MetadataValue.int(int(ex.get("bytes_freed", 0))),
            "expire/orphans_removed": dg.MetadataValue.int(report.orphans_deleted),
            "expire/orphan_bytes": dg.MetadataValue.int(report.orphan_bytes),
            "expire/total_bytes_freed": dg.MetadataValue.int(freed),
            "paimon/seconds": dg.MetadataValue.float(round(time.monotonic() - started, 3)),
            **spark.run_metadata(),
        })

    return _expire


def _retained(sm: Any) -> int:
    earliest, latest = sm.earliest_snapshot_id(), sm.latest_snapshot_id()
    return 0 if earliest is None or latest is None else latest - earliest + 1


def __getattr__(name: str) -> Any:
    """The demo's objects, built by its ``defs.yaml`` components
    (:func:`assets.definitions.demo_object`):
    ``compactions``, ``compaction_assets``, ``expiry_assets``, ``expiry_job``,
    ``expiry_schedule``."""
    from assets.definitions import demo_object

    return demo_object(__name__, name)
