"""A table's state on its asset, whoever committed (Spark, Flink, Paimon Java, a compaction
or expiry run, a script).

All report :func:`assets.metadata.table_state_metadata` (live rows, column schema, table name /
URI, snapshot, live files and bytes, sorted runs, retained snapshots):

* :func:`build_table_observation`: an observable source asset for a table Dagster does not
  write; its data version is the latest snapshot id, so downstream assets see it change.
* :func:`report_table_state`: a maintenance run (compaction, expiry) reports the table it
  changed on the TABLE's asset, not only on its own.
* :func:`build_table_state_sensor` (on by default; every table component adds one): the
  commits no run of ours reported (another engine, a run that failed after its commit). The
  cursor keeps the last snapshot id seen per table, so an unchanged table costs one read of
  its latest snapshot and emits nothing; a snapshot the asset's latest materialization already
  reports is not reported twice.

The events on the table's asset are materializations (:func:`assets.metadata.table_state_event`
says why: the asset Overview shows the latest materialization's metadata only).

Example:
    >>> orders = build_table_observation(["sales", "orders"])         # doctest: +SKIP
    >>> sensor = build_table_state_sensor(
    ...     "sales_state", {dg.AssetKey(["sales", "orders"]): "sales.orders"})  # doctest: +SKIP
"""

import json
from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

from assets.metadata import SNAPSHOT_ID, TABLE_NAME, table_state_event, table_state_metadata
from assets.resources import PaimonCatalog
from paimon_core import FileStoreTable, Identifier, TableNotExistError

__all__ = ["build_table_observation", "build_table_state_sensor", "observe_table",
           "report_table_state", "reported_snapshot"]


def observe_table(catalog: PaimonCatalog, identifier: str | Identifier,
                  *, count_rows: bool = True) -> tuple[dict[str, Any], int | None]:
    """The table-state metadata of a table and its latest snapshot id (None: no snapshot;
    a table that does not exist yet reports only its name)."""
    try:
        table = catalog.table(identifier)
    except TableNotExistError:
        return {TABLE_NAME: str(Identifier.parse(identifier)),
                SNAPSHOT_ID: dg.MetadataValue.text("no table")}, None
    snap = table.latest_snapshot()
    return table_state_metadata(table, count_rows=count_rows), None if snap is None else snap.id


def _identifier(key: dg.AssetKey) -> str:
    if len(key.path) < 2:
        raise ValueError(f"asset key {key.to_user_string()} has no database prefix: give the "
                         "table's identifier")
    return f"{key.path[-2]}.{key.path[-1]}"


def build_table_observation(
    key: str | Sequence[str] | dg.AssetKey,
    *,
    identifier: str | None = None,
    group_name: str | None = None,
    description: str | None = None,
    count_rows: bool = True,
) -> dg.SourceAsset:
    """An observable source asset for one table (default identifier: the key's last two
    elements, ``db.table``), needing the ``catalog`` resource."""
    asset_key = dg.AssetKey.from_coercible(key)
    ident = identifier or _identifier(asset_key)

    @dg.observable_source_asset(
        key=asset_key, group_name=group_name,
        description=description or f"Paimon table {ident}, observed (any engine may write it)",
        metadata={TABLE_NAME: ident},
    )
    def _observe(catalog: PaimonCatalog) -> dg.ObserveResult:
        md, snapshot_id = observe_table(catalog, ident, count_rows=count_rows)
        version = dg.DataVersion(str(snapshot_id) if snapshot_id is not None else "empty")
        return dg.ObserveResult(metadata=md, data_version=version)

    return _observe


def reported_snapshot(instance: dg.DagsterInstance, key: dg.AssetKey) -> str | None:
    """The snapshot id (text) the asset's latest materialization reported as the table's:
    its own run's, a maintenance run's or the state sensor's (None: none yet)."""
    entry = instance.get_latest_materialization_event(key)
    mat = entry.asset_materialization if entry is not None else None
    value = mat.metadata.get(SNAPSHOT_ID) if mat is not None else None
    return None if value is None else str(getattr(value, "value", value))


def report_table_state(context: dg.AssetExecutionContext, table: FileStoreTable,
                       key: dg.AssetKey, *, count_rows: bool = True) -> None:
    """From a run that committed to (or expired) a table it is not the asset of (compaction,
    expiry): the table's state on the TABLE's asset (:func:`table_state_event`), so its
    Overview shows the table as the run left it."""
    context.log_event(table_state_event(
        table, key, f"{context.asset_key.to_user_string()} (run {context.run.run_id})",
        count_rows=count_rows))


def build_table_state_sensor(
    name: str,
    tables: Mapping[dg.AssetKey, str],
    *,
    minimum_interval_seconds: int = 30,
    count_rows: bool = True,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.RUNNING,
) -> dg.SensorDefinition:
    """A sensor reporting the state of each table (asset key -> ``db.table``) on its asset
    (:func:`table_state_event`) when its latest snapshot changed since the last tick (cursor:
    JSON ``{table: last seen snapshot id}``) and no materialization of the asset reported that
    snapshot yet (:func:`reported_snapshot`: a run of ours did, or this sensor's own earlier
    event): the commits of other engines, or of a run that failed before reporting. Needs the
    ``catalog`` resource. On by default."""

    @dg.sensor(name=name, minimum_interval_seconds=minimum_interval_seconds,
               default_status=default_status,
               description="Reports the state of Paimon tables after commits no run of this "
               "code location reported (other engines)")
    def _sensor(context: dg.SensorEvaluationContext, catalog: PaimonCatalog) -> dg.SensorResult:
        seen: dict[str, int] = json.loads(context.cursor) if context.cursor else {}
        events = []
        for key, ident in tables.items():
            try:
                table = catalog.table(ident)
            except TableNotExistError:
                continue
            snap = table.latest_snapshot()  # the cheap question first: anything new?
            if snap is None or seen.get(ident) == snap.id:
                continue
            seen[ident] = snap.id
            if reported_snapshot(context.instance, key) == str(snap.id):
                continue  # a run of ours reported this state
            by = f"{snap.commit_user} ({snap.commit_kind.value}), seen by sensor {name}"
            events.append(table_state_event(table, key, by, count_rows=count_rows))
        return dg.SensorResult(asset_events=events, cursor=json.dumps(seen, sort_keys=True))

    return _sensor
