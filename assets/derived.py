"""A derived table fed by incremental reads, and the sensor that drives it.

``mart.orders_enriched`` mirrors ``cdc.orders`` with derived columns. It never re-reads the
whole source: each run reads the changes of a snapshot range ``(start, end]``
(``FileStoreTable.read_merged_changes``) for the keys they touch, then the source's **merged**
rows of those keys at ``end`` (a keyed read, the key filter pushed down to the scan), and
upserts what changed / deletes what the source no longer holds.

**Late data**: the source resolves versions by its ``sequence.field`` (``src_lsn``), not by
arrival: a landing day ingested late, a duplicate, or an insert arriving after the newer delete
that deletes it change nothing there. The range's changes only say *which* keys to look at;
their values come from the source's merged state, so after every run the derived table equals
:func:`enrich_orders` of a full read of the source at ``end``, for any arrival order (including
what the source does itself when a full compaction has dropped a delete and an older insert
arrives after it: the row is live again in the source, so it is in the derived table).
``source_snapshot`` is the source snapshot (a range end, or a rebuild's snapshot) at which the
derived table first saw the row's current value: a stale change rewrites nothing and keeps it
(:func:`stamp`), and so does a rebuild for unchanged rows.

**The sensor** (:func:`assets.derived_sensor.build_snapshot_sensor`, a factory) watches the
source's snapshots; its cursor is the last snapshot id it handed out. A tick with new snapshots
emits one run request for ``(cursor, latest]`` with ``run_key`` = that range (a re-evaluated
tick cannot launch the same range twice) and moves the cursor; a tick with nothing new skips.
On its first tick it registers the consumer ``consumer/consumer-<id>`` of the source table, so
snapshot expiry keeps every snapshot the derived table has not read yet.

**Exactly once** (:func:`apply_range`): progress lives in the source's consumer
(``nextSnapshot`` = first unread snapshot) and every commit to the derived table uses one
commit user with ``commit identifier = end``. A run reads from the actual progress (the consumer
position or the derived table's last committed identifier, whichever is later; the range
start of the sensor in the normal flow), so

* a re-executed run (retry, re-launch) finds its range already applied and only makes sure
  the consumer moved (a crash between the commit and the consumer update is healed);
* a run launched before an earlier range was applied reads from the consumer position (a
  superset of its range); the earlier range's run then finds it applied: nothing is skipped,
  nothing regresses;
* the commit is skipped when another run committed a later range meanwhile (checked just
  before committing; runs of the sensor's job are serialised by the ``paimon/derived`` run
  tag limit in ``dagster.yaml``).

When the needed snapshots have expired anyway (no consumer at first, or one removed), or the
range holds an OVERWRITE, the run rebuilds the derived table from the source's full state at
``end`` (an OVERWRITE commit, same identifier rule). When ``end`` itself has expired (a
re-executed old run while the derived table is behind it), the state at ``end`` is gone: the
run rebuilds from the latest snapshot instead (the derived table moves forward, never back).
"""

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from assets.derived_sensor import (
    RANGE_TAG,
    advance_consumer,
    build_snapshot_sensor,
    consumer_position,
    kinds_in,
    register_consumer,
)
from assets.labels import AssetLabels, SettingsError, load_function
from assets.metadata import TABLE, context_properties, snapshot_metadata
from assets.resources import PaimonCatalog
from assets.runs import DERIVED_POOL, ensure_table
from assets.tables import TableSpec
from paimon_core import CommitKind, CommitOptions, FileStoreTable, Predicate
from paimon_core.commit.users import stable_commit_user
from paimon_core.integration import and_, greater_or_equal, is_in, less_or_equal

__all__ = [
    "DERIVED_COMMIT_USER",
    "DERIVED_CONSUMER_ID",
    "ORDERS_DERIVATION",
    "RANGE_TAG",
    "Derivation",
    "Derived",
    "DerivedResult",
    "RangeConfig",
    "advance_consumer",
    "apply_range",
    "build_derived",
    "build_snapshot_sensor",
    "consumer_position",
    "enrich_orders",
    "load_transform",
    "lookup",
    "register_consumer",
    "stamp",
]

log = logging.getLogger(__name__)

DERIVED_CONSUMER_ID = "mart-orders-enriched"
DERIVED_COMMIT_USER = stable_commit_user("dagster", "mart-orders-enriched")
DERIVED_TAG = "paimon/derived"
ORDER_KEY = "order_id"
STAMP = "source_snapshot"
#: the columns of ``cdc.orders`` that :func:`enrich_orders` reads
SOURCE_COLUMNS = ("order_id", "customer_id", "status", "amount", "currency", "updated_at")
#: key lookups of up to this many keys are pushed down as ``order_id IN (...)`` (bucket and
#: per-file pruning); larger ones as the keys' range (planning an IN costs O(literals) a file)
LOOKUP_IN_MAX = 256
CLOSED_STATUSES = ("delivered", "cancelled", "refunded")


class RangeConfig(dg.Config):
    """The source snapshot range ``(start_snapshot, end_snapshot]`` of a run (set by the
    sensor). The defaults (-1) mean: from the consumer's position to the latest snapshot."""

    start_snapshot: int = Field(default=-1, description="exclusive; -1 = consumer position")
    end_snapshot: int = Field(default=-1, description="inclusive; -1 = latest snapshot")


@dataclass(frozen=True)
class DerivedResult:
    """What :func:`apply_range` did.

    Attributes:
        mode: ``incremental``, ``full`` (rebuilt from the source state) or ``skipped``
            (the range was already applied, or the source has no snapshot).
        start / end: the range actually read ``(start, end]``.
        rows_read: change rows read from the source (a rebuild: the source rows).
        upserts / deletes: rows written / keys deleted in the derived table (a changed key
            whose merged source row equals the derived row is not rewritten).
        snapshot_ids: snapshots committed to the derived table.
        keys: distinct keys the range changed (each looked up in the source).
    """

    mode: str
    start: int
    end: int
    rows_read: int = 0
    upserts: int = 0
    deletes: int = 0
    snapshot_ids: tuple[int, ...] = ()
    keys: int = 0


#: a derived table's transform: source rows (the source columns) and the snapshot they were
#: read at -> derived rows (the key column, and the stamp column when the table has one)
Transform = Callable[[pa.Table, int], pa.Table]


@dataclass(frozen=True)
class Derivation:
    """How a derived table follows its source.

    Attributes:
        transform: source rows -> derived rows (vectorised: pyarrow in, pyarrow out).
        key: the key column, shared by source and derived table (their primary key).
        columns: the source columns the transform reads (``None``: all).
        stamp: the derived column holding the source snapshot that first gave the row its
            current value (kept for unchanged rows by :func:`stamp`); ``None``: no stamp.
    """

    transform: Transform
    key: str = "order_id"
    columns: tuple[str, ...] | None = None
    stamp: str | None = "source_snapshot"


def load_transform(reference: str) -> Transform:
    """The function named ``pkg.mod:fn`` (or ``pkg.mod.fn``)."""
    return load_function(reference, what="transform")


# ------------------------------------------------------------------------------- transform
def enrich_orders(orders: pa.Table, source_snapshot: int) -> pa.Table:
    """``cdc.orders`` rows -> ``mart.orders_enriched`` rows (vectorised): an open flag, an
    amount band, and ``source_snapshot`` set to ``source_snapshot`` (the snapshot the rows were
    read at; :func:`stamp` keeps an older stamp for a row whose value did not change)."""
    status = orders.column("status")
    closed = pc.is_in(status, value_set=pa.array(CLOSED_STATUSES, pa.string()))
    is_open = pc.invert(pc.fill_null(closed, False))
    amount = orders.column("amount")
    as_float = pc.cast(amount, pa.float64())
    band = pc.if_else(
        pc.less(as_float, 50.0), "small", pc.if_else(pc.less(as_float, 500.0), "medium", "large")
    )
    n = orders.num_rows
    return pa.table({
        "order_id": orders.column("order_id"),
        "customer_id": orders.column("customer_id"),
        "status": status,
        "is_open": is_open,
        "amount": amount,
        "currency": orders.column("currency"),
        "amount_band": band,
        "updated_at": orders.column("updated_at"),
        "source_snapshot": pa.array([source_snapshot] * n, pa.int64()),
    })


#: the demo's derivation: ``cdc.orders`` -> ``mart.orders_enriched``
ORDERS_DERIVATION = Derivation(enrich_orders, ORDER_KEY, SOURCE_COLUMNS, STAMP)


def stamp(fresh: pa.Table, current: pa.Table, *, key: str = ORDER_KEY,
          stamp_column: str | None = STAMP) -> tuple[pa.Table, pa.ChunkedArray]:
    """Compare freshly derived rows with the derived table's current rows of the same keys.

    A fresh row whose columns all equal its current row (nulls equal) is no change: it keeps
    the current ``source_snapshot``. So ``source_snapshot`` is the source snapshot at which the
    derived table first saw the row's current value (a range end, or a rebuild's snapshot), a
    stale or repeated version never moves it, and a rebuild keeps it for unchanged rows.

    Args:
        fresh: :func:`enrich_orders` output, stamped with the snapshot it was read at.
        current: rows of ``mart.orders_enriched`` (any superset of the keys of ``fresh``).

    Returns:
        ``fresh`` with the kept stamps, and the mask of its rows that changed (new or different).
        ``stamp_column`` (absent from ``fresh`` or None): every column is compared.
    """
    idx = pc.index_in(fresh.column(key), value_set=current.column(key).combine_chunks())
    old = current.take(idx)  # null rows where the key is new
    same = pc.is_valid(idx)
    if stamp_column not in fresh.column_names:
        stamp_column = None
    for name in fresh.column_names:
        if name in (key, stamp_column):
            continue
        a, b = fresh.column(name), old.column(name)
        equal = pc.fill_null(pc.equal(a, b), False)
        same = pc.and_(same, pc.or_(equal, pc.and_(pc.is_null(a), pc.is_null(b))))
    if stamp_column is None:
        return fresh, pc.invert(same)
    stamps = pc.if_else(same, old.column(stamp_column), fresh.column(stamp_column))
    at = fresh.schema.get_field_index(stamp_column)
    return fresh.set_column(at, fresh.schema.field(at), stamps), pc.invert(same)


def lookup(
    table: FileStoreTable, keys: pa.Array, *, snapshot_id: int | None = None,
    columns: Sequence[str] | None = None, in_max: int = LOOKUP_IN_MAX, key: str = ORDER_KEY,
) -> pa.Table:
    """The merged rows of ``keys`` (``order_id`` values) in ``table`` at ``snapshot_id``
    (default latest): a keyed read, the filter pushed down to the scan (``IN`` up to
    ``in_max`` keys, else their range; the rows are then selected exactly)."""
    if len(keys) <= in_max:
        pushed: Predicate = is_in(key, keys.to_pylist())
    else:
        low, high = pc.min_max(keys).values()
        pushed = and_(greater_or_equal(key, low.as_py()), less_or_equal(key, high.as_py()))
    if columns is not None and key not in columns:
        columns = [key, *columns]
    rows = table.to_arrow(snapshot_id=snapshot_id, columns=columns, filter=pushed)
    return rows.filter(pc.is_in(rows.column(key), value_set=keys))


# ------------------------------------------------------------------------------- one run
def apply_range(
    source: FileStoreTable,
    target: FileStoreTable,
    start: int,
    end: int,
    *,
    consumer_id: str = DERIVED_CONSUMER_ID,
    commit_user: str = DERIVED_COMMIT_USER,
    properties: dict[str, str] | None = None,
    derivation: Derivation | None = None,
) -> DerivedResult:
    """Apply the source changes of ``(start, end]`` to the derived table, exactly once.

    Args:
        source: ``cdc.orders``.
        target: ``mart.orders_enriched``.
        start: the requested exclusive start (the sensor's view). The run reads from the
            actual progress (the consumer position, else the last committed identifier, else
            0), which equals ``start`` in the normal flow and is earlier when an earlier range
            is still unapplied (read as a superset: the ranges never skip a snapshot).
        end: inclusive end; negative = the latest source snapshot (also used when ``end``
            has expired and the derived table is behind it: its state is gone).
        properties: snapshot properties of the commit (the Dagster run id...).
        derivation: the transform, key and columns (default: the demo's
            :func:`enrich_orders` on ``order_id``).

    Returns:
        What was done (see :class:`DerivedResult`).
    """
    latest = source.snapshot_manager.latest_snapshot_id()
    if latest is None:
        return DerivedResult("skipped", 0, 0)
    end = latest if end < 0 else min(end, latest)
    # read from the true progress, not from the requested start: the same range in the
    # normal flow; a superset when an earlier range has not been applied yet
    position = consumer_position(source, consumer_id)
    last = target.new_commit(commit_user).latest_committed_identifier()
    begin = position if position is not None else (last if last is not None else 0)
    if last is not None:
        begin = max(begin, last)  # committed, consumer not moved yet (crash in between)
    if start >= 0 and begin != start:
        log.info("range (%d, %d] requested, progress is at %d: reading (%d, %d]",
                 start, end, begin, begin, end)
    if begin >= end:
        advance_consumer(source, consumer_id, end)
        return DerivedResult("skipped", begin, end)

    earliest = source.snapshot_manager.earliest_snapshot_id() or 1
    if end < earliest:
        log.warning("source snapshot %d has expired: rebuilding from the latest, %d", end, latest)
        end = latest
    kinds = kinds_in(source, begin, end) if begin >= earliest - 1 else None
    how = derivation or ORDERS_DERIVATION
    if kinds is None or CommitKind.OVERWRITE in kinds:
        result = _rebuild(source, target, begin, end, commit_user, properties, how)
    else:
        result = _incremental(source, target, begin, end, commit_user, properties, kinds, how)
    advance_consumer(source, consumer_id, end)
    return result


def _still_ours(target: FileStoreTable, commit_user: str, end: int) -> bool:
    last = target.new_commit(commit_user).latest_committed_identifier()
    return last is None or last < end


def _incremental(
    source: FileStoreTable, target: FileStoreTable, begin: int, end: int, commit_user: str,
    properties: dict[str, str] | None, kinds: Sequence[CommitKind], how: Derivation,
) -> DerivedResult:
    if CommitKind.APPEND not in kinds:  # compaction only: nothing changed
        return DerivedResult("incremental", begin, end)
    # the keys the range touched (any version, stale or not) ...
    changes = source.read_merged_changes(begin, end, mode="delta", columns=[how.key])
    keys = pc.unique(changes.column(how.key).combine_chunks())
    if len(keys) == 0:
        return DerivedResult("incremental", begin, end)
    # ... and the source's merged state of those keys at ``end``: what the source resolved
    # (sequence.field, deletes), not the order the versions arrived in
    state = lookup(source, keys, snapshot_id=end, columns=how.columns, key=how.key)
    fresh, changed = stamp(how.transform(state, end), lookup(target, keys, key=how.key),
                           key=how.key, stamp_column=how.stamp)
    upserts = fresh.filter(changed)
    gone = pc.invert(pc.is_in(keys, value_set=state.column(how.key).combine_chunks()))
    deletes = pa.table({how.key: keys.filter(gone)})
    if upserts.num_rows == 0 and deletes.num_rows == 0:  # stale or repeated versions only
        return DerivedResult("incremental", begin, end, changes.num_rows, keys=len(keys))
    builder = target.new_batch_write_builder(
        commit_user, options=CommitOptions(properties=properties or {}))
    with builder.new_write() as write:
        if upserts.num_rows:
            write.write_arrow(upserts)
        if deletes.num_rows:
            write.delete_arrow(deletes)
        messages = write.prepare_commit()
    commit = builder.new_commit()
    if not _still_ours(target, commit_user, end):
        commit.abort(messages)
        return DerivedResult("skipped", begin, end, changes.num_rows, keys=len(keys))
    ids = commit.commit(messages, commit_identifier=end)
    return DerivedResult("incremental", begin, end, changes.num_rows, upserts.num_rows,
                         deletes.num_rows, tuple(ids), len(keys))


def _rebuild(
    source: FileStoreTable, target: FileStoreTable, begin: int, end: int, commit_user: str,
    properties: dict[str, str] | None, how: Derivation,
) -> DerivedResult:
    rows = source.to_arrow(snapshot_id=end, columns=how.columns)
    upserts, _ = stamp(how.transform(rows, end), target.to_arrow(), key=how.key,
                       stamp_column=how.stamp)
    builder = target.new_batch_write_builder(commit_user, options=CommitOptions(
        properties=properties or {}, dynamic_partition_overwrite=False)).overwrite({})
    with builder.new_write() as write:
        write.write_arrow(upserts)
        messages = write.prepare_commit()
    commit = builder.new_commit()
    if not _still_ours(target, commit_user, end):
        commit.abort(messages)
        return DerivedResult("skipped", begin, end, rows_read=rows.num_rows)
    ids = commit.commit(messages, commit_identifier=end)
    return DerivedResult("full", begin, end, rows.num_rows, upserts.num_rows, 0, tuple(ids))


# ------------------------------------------------------------------------------- Dagster
@dataclass(frozen=True)
class Derived:
    """The asset, job and sensor of one derived table."""

    asset: dg.AssetsDefinition
    job: Any
    sensor: dg.SensorDefinition


def build_derived(
    source: TableSpec,
    target: TableSpec,
    derivation: Derivation,
    *,
    source_key: Sequence[str] | None = None,
    consumer_id: str | None = None,
    commit_user: str | None = None,
    job_name: str | None = None,
    sensor_name: str | None = None,
    minimum_interval_seconds: int = 30,
    sensor_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.RUNNING,
    labels: AssetLabels | None = None,
    source_required: bool = False,
) -> Derived:
    """A derived table following ``source`` by snapshot ranges (:func:`apply_range`): its
    asset (pool :data:`~assets.runs.DERIVED_POOL`: one run at a time), its job and the
    sensor requesting one run per new snapshot range.

    Args:
        source_key: the source's asset key (default ``source.key_path``).
        consumer_id / commit_user: default from the target's identifier
            (``mart-orders-enriched``, ``dagster-mart-orders-enriched``).
        source_required: the source is no table of this code location (another engine
            writes it): a sensor tick fails while it does not exist, instead of skipping
            (a table of the code location may just not have been written yet).
    """
    labels = labels or AssetLabels()
    slug = target.identifier.replace(".", "-").replace("_", "-")
    consumer = consumer_id or slug
    user = commit_user or stable_commit_user("dagster", slug)
    if derivation.key not in target.table_schema().primary_keys:
        raise SettingsError(f"{target.identifier}: the derivation key {derivation.key!r} is "
                            "not a primary key column of the derived table")

    @dg.asset(
        **labels.asset_kwargs(key=target.key_path, group="derived", kinds=("paimon",),
                              description=target.description),
        deps=[dg.AssetKey(list(source_key or source.key_path))],
        pool=DERIVED_POOL,  # one run at a time, however launched (assets/runs.py)
        metadata={TABLE: target.identifier, "paimon/source": source.identifier},
    )
    def _derived(
        context: dg.AssetExecutionContext, config: RangeConfig, catalog: PaimonCatalog
    ) -> dg.MaterializeResult:
        """Apply one snapshot range of the source to the derived table."""
        cat = catalog.load()
        src = cat.get_table(source.identifier)
        tgt, altered = ensure_table(context, target, cat)
        started = time.monotonic()
        result = apply_range(
            src, tgt, config.start_snapshot, config.end_snapshot,
            consumer_id=consumer, commit_user=user, derivation=derivation,
            properties=context_properties(context, **{
                "paimon.source-table": source.identifier,
                "paimon.source-range": f"{config.start_snapshot},{config.end_snapshot}",
            }),
        )
        context.log.info(
            f"{result.mode}: source snapshots ({result.start}, {result.end}] -> "
            f"{result.upserts} upserts, {result.deletes} deletes, snapshots "
            f"{result.snapshot_ids}")
        return dg.MaterializeResult(metadata=snapshot_metadata(
            tgt, result.snapshot_ids, **altered,
            **{
                "paimon/mode": result.mode,
                "paimon/source_range": f"({result.start}, {result.end}]",
                "paimon/source_rows_read": dg.MetadataValue.int(result.rows_read),
                "paimon/source_keys": dg.MetadataValue.int(result.keys),
                "paimon/upserts": dg.MetadataValue.int(result.upserts),
                "paimon/deletes": dg.MetadataValue.int(result.deletes),
                "paimon/seconds": dg.MetadataValue.float(round(time.monotonic() - started, 3)),
            },
        ))

    job = dg.define_asset_job(
        job_name or f"{target.slug}_job",
        selection=[_derived],
        tags={DERIVED_TAG: target.identifier},
        description=f"Apply a snapshot range of {source.identifier} to {target.identifier} "
        "(sensor-driven).",
    )
    sensor = build_snapshot_sensor(
        name=sensor_name or f"{source.slug}_snapshot_sensor",
        source=source, target=target, job=job, op_name=_derived.op.name,
        consumer_id=consumer, commit_user=user,
        minimum_interval_seconds=minimum_interval_seconds, default_status=sensor_status,
        source_required=source_required)
    return Derived(_derived, job, sensor)


def __getattr__(name: str) -> Any:
    """The demo's objects, built by its ``defs.yaml`` components
    (:func:`assets.definitions.demo_object`):
    ``orders_enriched``, ``orders_enriched_job``, ``orders_snapshot_sensor``."""
    from assets.definitions import demo_object

    return demo_object(__name__, name)
