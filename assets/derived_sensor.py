"""The snapshot sensor that drives a derived table (:mod:`assets.derived`), and the derived
table's progress in its source: the source's consumer ``consumer/consumer-<id>``, whose
position (``nextSnapshot - 1``) is the last source snapshot the derived table has read.

The sensor's cursor is the last snapshot id it handed out; each tick with new snapshots asks
for one run of the derived table's job per range ``(cursor, latest]`` (``run_key`` = that
range); see :mod:`assets.derived` for how a run applies it exactly once.
"""

from typing import Any

import dagster as dg

from assets.labels import SettingsError
from assets.resources import PaimonCatalog
from assets.tables import TableSpec
from paimon_core import CommitKind, Consumer, ConsumerManager, FileStoreTable
from paimon_core.errors import SnapshotNotExistError

__all__ = ["RANGE_TAG", "advance_consumer", "build_snapshot_sensor", "consumer_position",
           "initial_cursor", "kinds_in", "register_consumer"]

#: the run tag naming the source snapshot range a derived-table run applies
RANGE_TAG = "paimon/source-range"


def consumer_position(source: FileStoreTable, consumer_id: str) -> int | None:
    """The last snapshot the consumer has read (its ``nextSnapshot - 1``), None if absent."""
    c = ConsumerManager(source.file_io, source.path).consumer(consumer_id)
    return None if c is None else c.next_snapshot - 1


def advance_consumer(source: FileStoreTable, consumer_id: str, read_up_to: int) -> None:
    """Move the consumer to ``read_up_to + 1`` (never backwards)."""
    mgr = ConsumerManager(source.file_io, source.path)
    current = mgr.consumer(consumer_id)
    if current is None or current.next_snapshot <= read_up_to:
        mgr.reset_consumer(consumer_id, Consumer(read_up_to + 1))


def register_consumer(source: FileStoreTable, consumer_id: str, read_up_to: int) -> None:
    """Create the consumer at ``read_up_to + 1`` if it does not exist yet."""
    mgr = ConsumerManager(source.file_io, source.path)
    if mgr.consumer(consumer_id) is None:
        mgr.reset_consumer(consumer_id, Consumer(read_up_to + 1))


def kinds_in(source: FileStoreTable, start: int, end: int) -> list[CommitKind] | None:
    """Commit kinds of ``(start, end]``; None when one of them is gone (expired)."""
    out = []
    for sid in range(start + 1, end + 1):
        try:
            out.append(source.snapshot_manager.snapshot(sid).commit_kind)
        except SnapshotNotExistError:
            return None
    return out


def initial_cursor(source: FileStoreTable, target: FileStoreTable | None,
                   consumer_id: str, commit_user: str) -> int:
    """Where a sensor without a stored cursor starts: the consumer's position, else the
    derived table's last committed identifier, else 0 (everything)."""
    position = consumer_position(source, consumer_id)
    if position is not None:
        return position
    if target is not None:
        last = target.new_commit(commit_user).latest_committed_identifier()
        if last is not None:
            return last
    return 0


def build_snapshot_sensor(
    *,
    name: str,
    source: TableSpec,
    target: TableSpec,
    job: Any,
    op_name: str,
    consumer_id: str,
    commit_user: str,
    minimum_interval_seconds: int = 30,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.RUNNING,
    source_required: bool = False,
) -> dg.SensorDefinition:
    """A sensor on new snapshots of ``source`` that requests one run of ``job`` per snapshot
    range; cursor = the last snapshot id handed out. A missing source skips the tick ("does
    not exist yet"), or fails it when ``source_required`` (no component of the code location
    writes it: a missing table is a wrong name, not one to wait for).

    Ranges of COMPACT snapshots only are not worth a run: when nothing is pending (the
    consumer is at the cursor) the sensor moves the consumer past them itself, so expiry is
    never held back by maintenance commits.
    """

    @dg.sensor(
        name=name,
        job=job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=f"New snapshots of {source.identifier} -> one {target.identifier} run per "
        "snapshot range (cursor = last snapshot id handed out).",
    )
    def _sensor(context: dg.SensorEvaluationContext, catalog: PaimonCatalog) -> dg.SensorResult:
        cat = catalog.load()
        if not cat.table_exists(source.identifier):
            if source_required:
                raise SettingsError(
                    f"source table {source.identifier} of {target.identifier} does not exist "
                    f"in the warehouse {catalog.warehouse}: its defs.yaml says "
                    "source_external (written by another engine): is the name right?")
            return dg.SensorResult(skip_reason=f"{source.identifier} does not exist yet",
                                   cursor=context.cursor)
        src = cat.get_table(source.identifier)
        tgt = cat.get_table(target.identifier) if cat.table_exists(target.identifier) else None
        if context.cursor:
            cursor = int(context.cursor)
        else:
            cursor = initial_cursor(src, tgt, consumer_id, commit_user)
        register_consumer(src, consumer_id, cursor)
        latest = src.snapshot_manager.latest_snapshot_id()
        if latest is None or latest <= cursor:
            return dg.SensorResult(
                skip_reason=f"no new snapshot of {source.identifier} after {cursor}",
                cursor=str(cursor),
            )
        kinds = kinds_in(src, cursor, latest)
        if kinds is not None and all(k is CommitKind.COMPACT for k in kinds) and (
            consumer_position(src, consumer_id) == cursor
        ):
            advance_consumer(src, consumer_id, latest)
            return dg.SensorResult(
                skip_reason=f"snapshots {cursor + 1}..{latest} are compactions only",
                cursor=str(latest),
            )
        request = dg.RunRequest(
            run_key=f"{source.identifier}:{cursor}-{latest}",
            run_config={"ops": {op_name: {"config": {
                "start_snapshot": cursor, "end_snapshot": latest}}}},
            tags={RANGE_TAG: f"({cursor}, {latest}]"},
        )
        return dg.SensorResult(run_requests=[request], cursor=str(latest))

    return _sensor
