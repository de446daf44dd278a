"""What a run may run beside, and when the instance retries it.

The limits live where every launch path meets them — the asset definitions and the instance
(``dagster.yaml``), never a job's or a schedule's tags, which the UI's "Materialize", its
backfills and re-executions of the implicit asset job do not carry:

* **Spark**: every asset that starts Spark is in the pool
  :data:`~assets.resources.SPARK_POOL`; the instance counts pools per run
  (``concurrency.pools.granularity: run``), so at most ``default_limit`` runs that hold it
  are in flight, whatever launched them.
* **One derived run at a time**: the derived table's asset is in the pool
  :data:`DERIVED_POOL`, limit 1 (:data:`FIXED_POOL_LIMITS`, a property of the code, set by
  :func:`register_pools`); the sensor's runs also carry ``paimon/derived``.
* **One compaction per bucket**: a compaction partition key names its bucket in full
  (:func:`assets.maintenance.partition_key_of`), every run of one partition carries it as
  ``dagster/partition`` (launched from a job, a schedule, the asset graph, a backfill, or a
  re-execution of any of those), and ``dagster.yaml`` admits one run per value of that tag.
  A run over a partition *range* carries no ``dagster/partition`` (only range tags): the
  compaction asset refuses it (:func:`non_retryable`) before any work, and has no backfill
  policy, so that its backfills run one partition per run (any ``BackfillPolicy``, even
  ``multi_run(1)``, makes range runs).

**Before the first run**: Dagster's run queue learns a pool when a queued run first needs it,
and does not apply the pool's limit in that very pass: a burst of Spark runs queued on a fresh
instance (a backfill) went out ``max_concurrent_runs`` at once. :func:`register_pools` gives
the instance the pools first (the Spark pool at the configured ``default_limit``, the derived
pool at 1): ``python -m assets.pools`` (``make demo`` / ``make ui``, the docker deployment and
the README's by-hand steps run it). Without it the derived pool would get ``default_limit``.

**Retries**: the instance retries a failed run (``run_retries``) unless the run's
``dagster/retry_on_asset_or_op_failure`` tag says otherwise when it fails;
``dg.Failure(allow_retries=False)`` only bypasses op retry policies and never reaches that
decision. :func:`non_retryable` does both, for failures no retry can fix (input that has
not landed, too many malformed events, a range run where one partition is needed).
"""

from typing import Any

import dagster as dg

from assets.resources import SPARK_POOL
from assets.tables import TableSpec
from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import ImmutableOptionError
from paimon_core.table import FileStoreTable

__all__ = [
    "DERIVED_POOL",
    "FIXED_POOL_LIMITS",
    "NO_RUN_RETRY_TAG",
    "OPTIONS_ALTERED",
    "POOLS",
    "ensure_table",
    "non_retryable",
    "not_retried",
    "register_pools",
]

#: the run tag Dagster reads, when a run fails on a step, to decide whether to retry it
NO_RUN_RETRY_TAG = "dagster/retry_on_asset_or_op_failure"
#: the pool of the derived table's asset: it applies snapshot ranges one run at a time
DERIVED_POOL = "paimon-derived"
#: pools whose limit is part of the code's correctness, not a deployment setting
FIXED_POOL_LIMITS = {DERIVED_POOL: 1}
#: the pools the code location's assets use
POOLS = (SPARK_POOL, DERIVED_POOL)
#: materialization metadata: the options a run ALTERed to its component's declared values
OPTIONS_ALTERED = "paimon/options_altered"


def register_pools(instance: dg.DagsterInstance) -> dict[str, int]:
    """Register :data:`POOLS` with ``instance``: at its ``concurrency.pools.default_limit``
    (kept in step with that setting by Dagster afterwards), or at their
    :data:`FIXED_POOL_LIMITS`; returns every pool's limit."""
    if instance.global_op_concurrency_default_limit is None:
        raise dg.DagsterInvariantViolationError(
            "the instance has no concurrency.pools.default_limit: copy the repository's "
            "dagster.yaml to $DAGSTER_HOME")
    for pool in POOLS:
        if pool in FIXED_POOL_LIMITS:
            instance.event_log_storage.set_concurrency_slots(pool, FIXED_POOL_LIMITS[pool])
        else:
            instance.event_log_storage.initialize_concurrency_limit_to_default(pool)
    return {p.name: p.limit for p in instance.event_log_storage.get_pool_limits()}


def not_retried(context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext,
                description: str) -> None:
    """Tag the running run so that the instance's run retries leave it alone when it fails
    (one run, not 1 + max_retries, each starting a JVM). A manual re-execution inherits the
    tag (it is the user's call)."""
    context.instance.add_run_tags(context.run.run_id, {NO_RUN_RETRY_TAG: "false"})
    context.log.info(f"not retried: {description}")


def non_retryable(context: dg.AssetExecutionContext, description: str,
                  metadata: dict[str, Any] | None = None) -> dg.Failure:
    """The failure to raise when retrying cannot help: the step fails at once, and the run is
    not retried (:func:`not_retried`)."""
    not_retried(context, description)
    return dg.Failure(description=description, metadata=metadata, allow_retries=False)



def ensure_table(context: dg.AssetExecutionContext, spec: TableSpec, catalog: FileSystemCatalog
                 ) -> tuple[FileStoreTable, dict[str, Any]]:
    """The run's table (:meth:`TableSpec.ensure_declared`: created when missing, the options
    its component declares with another value ALTERed, logged) and the materialization
    metadata saying so (:data:`OPTIONS_ALTERED`: ``{key: "old -> new"}``; nothing when no
    option changed). An option fixed for the table's life that differs fails the run, not
    retried, naming the option and both values."""
    try:
        ensured = spec.ensure_declared(catalog)
    except ImmutableOptionError as e:
        raise non_retryable(context, str(e)) from e
    if not ensured.altered:
        return ensured.table, {}
    changes = ", ".join(f"{k}: {v}" for k, v in ensured.altered.items())
    context.log.info(f"{spec.identifier}: options altered to the declared values ({changes})")
    return ensured.table, {OPTIONS_ALTERED: dg.MetadataValue.json(dict(ensured.altered))}
