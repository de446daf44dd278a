"""Observations of a table's state, whoever wrote it (Spark, Flink, Paimon Java, a script).

Two shapes, both reporting :func:`assets.metadata.table_state_metadata` (live rows, column
schema, table name / URI, snapshot, live files and bytes, sorted runs, retained snapshots):

* :func:`build_table_observation`: an observable source asset for a table Dagster does not
  write; its data version is the latest snapshot id, so downstream assets see it change.
* :func:`build_table_state_sensor`: a sensor that emits an ``AssetObservation`` for assets that
  Dagster does materialize (e.g. through the IO managers of :mod:`assets.io_managers`) whenever
  something else committed (another engine, a compaction run): the cursor keeps the last
  snapshot id seen per table, so an unchanged table emits nothing, and a snapshot the asset's
  own materialization committed (its key in the snapshot's ``dagster.asset-key``) is not
  reported twice.

Example:
    >>> orders = build_table_observation(["sales", "orders"])         # doctest: +SKIP
    >>> sensor = build_table_state_sensor(
    ...     "sales_state", {dg.AssetKey(["sales", "orders"]): "sales.orders"})  # doctest: +SKIP
"""

import json
from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg

from assets.metadata import ASSET_PROPERTY, SNAPSHOT_ID, TABLE_NAME, table_state_metadata
from assets.resources import PaimonCatalog
from paimon_core import Identifier, TableNotExistError

__all__ = ["build_table_observation", "build_table_state_sensor", "observe_table"]


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


def build_table_state_sensor(
    name: str,
    tables: Mapping[dg.AssetKey, str],
    *,
    minimum_interval_seconds: int = 60,
    count_rows: bool = True,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
) -> dg.SensorDefinition:
    """A sensor emitting an ``AssetObservation`` of each table (asset key -> ``db.table``)
    whose latest snapshot changed since its last tick (cursor: JSON ``{table: snapshot id}``)
    unless the asset's own materialization committed it (and so reported that state),
    needing the ``catalog`` resource."""

    @dg.sensor(name=name, minimum_interval_seconds=minimum_interval_seconds,
               default_status=default_status,
               description="Observes the state of Paimon tables whoever wrote them")
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
            if (snap.properties or {}).get(ASSET_PROPERTY) == key.to_user_string():
                continue  # the asset's materialization reported this state
            events.append(dg.AssetObservation(
                asset_key=key, metadata=table_state_metadata(table, count_rows=count_rows)))
        return dg.SensorResult(asset_events=events, cursor=json.dumps(seen, sort_keys=True))

    return _sensor
