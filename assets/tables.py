"""The tables of the code location: their schemas (the oracle's ``schema.json`` form, which the
Spark jobs read too) and the maintenance settings the assets and checks use.

Sources (``cdc.customers``, ``cdc.orders``) are primary-key tables fed by CDC ingestion (ordered
by ``sequence.field = src_lsn``, the source log position); writers
are ``write-only`` (no inline compaction): compaction is the per-bucket maintenance asset's job,
so writers and the compactor never conflict. ``ref.fx_rates`` is a daily-partitioned table
replaced one partition at a time (INSERT OVERWRITE). ``mart.orders_enriched`` is derived from
``cdc.orders`` by incremental reads.

The compaction partitions of a table come from its bucket layout (:class:`BucketLayout`,
:func:`table_bucket_layout`: the one place that asks an open table for it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

from assets.labels import SettingsError
from paimon_core import (
    FileStoreTable,
    FileSystemCatalog,
    Schema,
)
from paimon_core.errors import SchemaError
from paimon_core.option_validation import checked_overlay
from paimon_core.options import CoreOptions
from paimon_core.schema_change import SetOption
from paimon_core.spec.option_enums import BucketMode, parse_bucket

__all__ = [
    "ALL_TABLES",
    "BUCKET_DIM",
    "CUSTOMERS",
    "DAILY_START",
    "DAY_DIM",
    "DEMO_DEFS",
    "FX_RATES",
    "ORDERS",
    "ORDERS_ENRICHED",
    "BucketLayout",
    "EnsuredTable",
    "TableSpec",
    "bucket_partitions",
    "check_bucket_layout",
    "demo_table",
    "dynamic_buckets_name",
    "live_buckets",
    "missing_buckets",
    "partition_key_of",
    "split_key",
    "table_bucket_layout",
    "table_buckets",
]

#: first landing day of the daily partitions (the demo feed starts on 2025-01-06)
DAILY_START = "2025-01-01"
#: the demo's code location: defs.yaml files declaring its tables (:mod:`assets.components`)
DEMO_DEFS = Path(__file__).resolve().parent / "demo"


#: the old value of an option a table did not have, in :attr:`EnsuredTable.altered`
UNSET = "(unset)"


@dataclass(frozen=True)
class EnsuredTable:
    """:meth:`TableSpec.ensure_declared`'s table, and the options it ALTERed to the
    declared values (``{key: "old -> new"}``, old = :data:`UNSET` for a key the table did
    not have; empty when nothing changed)."""

    table: FileStoreTable
    altered: Mapping[str, str]


@dataclass(frozen=True)
class TableSpec:
    """One table of the code location.

    Attributes:
        identifier: ``db.table``.
        schema: the oracle ``schema.json`` form (fields, partition_keys, primary_keys, options).
        small_file_bytes: files below this size count as small (asset check).
        max_small_files: the small-file check fails above this count.
        freshness_hours: the freshness check fails when the latest snapshot is older.
    """

    identifier: str
    schema: Mapping[str, Any]
    small_file_bytes: int = 64 * 1024
    max_small_files: int = 40
    freshness_hours: float = 26.0
    description: str = ""
    extra: Mapping[str, str] = field(default_factory=dict)
    #: the table's asset key (default ``[db, table]``)
    asset_key: tuple[str, ...] | None = None

    @property
    def database(self) -> str:
        return self.identifier.split(".", 1)[0]

    @property
    def name(self) -> str:
        return self.identifier.split(".", 1)[1]

    @property
    def key_path(self) -> list[str]:
        """The asset key of the table (``["cdc", "orders"]`` unless set)."""
        return list(self.asset_key) if self.asset_key else [self.database, self.name]

    @property
    def slug(self) -> str:
        """``cdc_orders``: for op, job and check names."""
        return f"{self.database}_{self.name}"

    @property
    def partition_keys(self) -> list[str]:
        return list(self.schema.get("partition_keys", []))

    @property
    def retain_max(self) -> int:
        return int(self.schema.get("options", {}).get("snapshot.num-retained.max", "2147483647"))

    @classmethod
    def from_attributes(cls, attrs: Mapping[str, Any]) -> TableSpec:
        """The spec of a table component's YAML attributes (``table``, ``columns``,
        ``primary_key``, ``partition_by``, ``options``, ``asset``, ``checks``)."""
        asset = attrs.get("asset") or {}
        checks = attrs.get("checks") or {}
        options = {k: str(v).lower() if isinstance(v, bool) else str(v)
                   for k, v in (attrs.get("options") or {}).items()}
        return cls(
            identifier=attrs["table"],
            schema={
                "fields": [{"name": c["name"], "type": c["type"]} for c in attrs["columns"]],
                "primary_keys": list(attrs.get("primary_key") or []),
                "partition_keys": list(attrs.get("partition_by") or []),
                "options": options,
            },
            description=asset.get("description") or "",
            small_file_bytes=checks.get("small_file_bytes", 64 * 1024),
            max_small_files=checks.get("max_small_files", 40),
            freshness_hours=checks.get("freshness_hours", 26.0),
            asset_key=tuple(asset["key"]) if asset.get("key") else None,
        )

    def table_schema(self) -> Schema:
        return Schema.from_json(self.schema)

    def write_schema_file(self, directory: str | Path) -> Path:
        """Write the schema as ``<directory>/<db>.<table>.schema.json`` (for the Spark jobs)."""
        path = Path(directory) / f"{self.identifier}.schema.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.schema, indent=2))
        return path

    def ensure(self, catalog: FileSystemCatalog) -> FileStoreTable:
        """The table, created from :attr:`schema` when missing (its options as declared:
        :meth:`ensure_declared`)."""
        return self.ensure_declared(catalog).table

    def ensure_declared(self, catalog: FileSystemCatalog) -> EnsuredTable:
        """The table, created from :attr:`schema` when missing; when it exists, the options
        :attr:`schema` lists with another value than the table's are ALTERed to the listed
        value (``SET``). The declaration is the state of the keys it lists only: an option the
        table has that the declaration does not list is kept (removing a key from the YAML
        does not reset it). An option fixed for the table's life (``bucket``, ``primary-key``
        / ``partition`` = the declared keys, ``merge-engine``, ... -- the set of
        :func:`paimon_core.option_validation.checked_overlay`) that differs raises
        :class:`~paimon_core.errors.ImmutableOptionError` naming it; nothing is altered then."""
        table = catalog.create_table(self.identifier, self.table_schema(), ignore_if_exists=True)
        declared = {
            **self.schema.get("options", {}),
            CoreOptions.PRIMARY_KEY: ",".join(self.schema.get("primary_keys", [])),
            CoreOptions.PARTITION: ",".join(self.partition_keys),
        }
        changed = checked_overlay(
            table.schema, declared,
            refused=f"of {self.identifier} cannot be changed by the options its component "
            "declares")
        if not changed:
            return EnsuredTable(table, {})
        old = table.schema.options
        catalog.alter_table(self.identifier, [SetOption(k, v) for k, v in changed.items()])
        return EnsuredTable(catalog.get_table(self.identifier),
                            {k: f"{old.get(k, UNSET)} -> {v}" for k, v in sorted(changed.items())})


def demo_table(identifier: str) -> TableSpec:
    """The demo's table ``identifier`` as its ``defs.yaml`` declares it (:data:`DEMO_DEFS`)."""
    for path in sorted(DEMO_DEFS.rglob("defs.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            attrs = (doc or {}).get("attributes") or {}
            if attrs.get("table") == identifier and "columns" in attrs:
                return TableSpec.from_attributes(attrs)
    raise KeyError(f"no table {identifier} in the demo's defs ({DEMO_DEFS})")


CUSTOMERS = demo_table("cdc.customers")
ORDERS = demo_table("cdc.orders")
FX_RATES = demo_table("ref.fx_rates")
ORDERS_ENRICHED = demo_table("mart.orders_enriched")

ALL_TABLES: tuple[TableSpec, ...] = (CUSTOMERS, ORDERS, FX_RATES, ORDERS_ENRICHED)


# ------------------------------------------------------------------------------ compaction
# The compaction partitions of a table: one per bucket (``cdc.orders/bucket-3``), per day x
# bucket for a table partitioned by day (``ref.fx_rates/bucket-1|2025-01-06``), and the bucket
# layout they come from.
DAY_DIM, BUCKET_DIM = "dt", "bucket"


def _bucket_key(spec: TableSpec, bucket: int) -> str:
    return f"{spec.identifier}/bucket-{bucket}"


@dataclass(frozen=True)
class BucketLayout:
    """How a table spreads its rows over buckets, as its compaction sees it: the ``bucket``
    option and whether the table has a primary key. ``bucket > 0``: fixed buckets
    ``0..N-1``; ``-1`` with a primary key: dynamic buckets (a hash index assigns keys to
    buckets, new buckets appear as the table grows); ``-1`` without: an unaware-bucket append
    table (its files in bucket 0 of each partition, compacted there, as Paimon Java's
    ``BUCKET_UNAWARE`` compaction does); ``-2``: postponed buckets (not supported here).
    ``primary_key`` None: not known (a count restated for a table declared elsewhere)."""

    bucket: int
    primary_key: bool | None

    @classmethod
    def of_option(cls, text: str, primary_key: bool | None, where: str) -> BucketLayout:
        """The layout of a ``bucket`` option's text (``where``: who declares it), by
        :func:`~paimon_core.spec.option_enums.parse_bucket` (the one rule).

        Raises:
            SettingsError: not a bucket count (N > 0, -1 or -2), naming ``where``.
        """
        try:
            bucket = parse_bucket(text)
        except SchemaError as e:
            raise SettingsError(f"{where}: {e}") from e
        return cls(bucket, primary_key)

    @property
    def mode(self) -> str:
        """The table's :class:`~paimon_core.spec.option_enums.BucketMode` (when whether it has
        a primary key is known); ``dynamic or unaware`` for ``-1`` when it is not."""
        if self.primary_key is None and self.bucket == -1:
            return "dynamic or unaware"
        return str(BucketMode.of(self.bucket, bool(self.primary_key)))

    def __str__(self) -> str:
        return f"bucket = {self.bucket} ({self.mode})"

    def known_buckets(self) -> list[int] | None:
        """The buckets the layout alone names: ``0..N-1`` (fixed), ``[0]`` (unaware); None
        for dynamic buckets (the table's live buckets say).

        Raises:
            SettingsError: postponed buckets (``bucket = -2``).
        """
        if self.mode == BucketMode.POSTPONE:
            raise SettingsError(
                f"{self}: compaction of postponed buckets (they are rescaled into real "
                "buckets by Paimon Java's compact action) is not supported here")
        if self.bucket > 0:
            return list(range(self.bucket))
        return [0] if self.mode == BucketMode.BUCKET_UNAWARE else None


def table_bucket_layout(table: FileStoreTable) -> BucketLayout:
    """The bucket layout of an open table (its schema's ``bucket``, Paimon's rule for an
    unset one; whether it has a primary key): the one place that asks the table."""
    return BucketLayout(table.num_buckets, bool(table.schema.primary_keys))


def check_bucket_layout(identifier: str, layout: BucketLayout | None, source: str,
                        table: FileStoreTable) -> None:
    """Refuse a table whose ``bucket`` is not the one ``source`` declares (``layout``), or
    whose buckets are postponed.

    Raises:
        SettingsError: naming both layouts, or the postponed buckets.
    """
    actual = table_bucket_layout(table)
    if layout is not None and actual.bucket != layout.bucket:
        raise SettingsError(f"{identifier}: {source} says {layout}, the table has {actual}")
    actual.known_buckets()


def live_buckets(table: FileStoreTable) -> list[int]:
    """The buckets that hold files in the latest snapshot (any partition), ascending
    (metadata only)."""
    return sorted({int(b) for b in table.inspect.buckets().column("bucket").to_pylist()})


def table_buckets(table: FileStoreTable) -> list[int]:
    """The buckets of a table to compact: its layout's, or the live ones of a dynamic-bucket
    table."""
    known = table_bucket_layout(table).known_buckets()
    return live_buckets(table) if known is None else known


def dynamic_buckets_name(spec: TableSpec) -> str:
    """The name of the dynamic partitions of a table's compaction buckets."""
    return f"{spec.slug}_compaction_buckets"


def bucket_partitions(spec: TableSpec, day_start: str = DAILY_START,
                      layout: BucketLayout | None = None) -> dg.PartitionsDefinition:
    """The table's buckets (``cdc.orders/bucket-0`` ...), or ``dt x bucket`` for a table
    partitioned by day (days from ``day_start``): every key names the table, so no two
    compaction assets share one. The buckets: those ``layout`` names (fixed or unaware),
    else dynamic partitions (:func:`dynamic_buckets_name`) the compaction schedule fills
    from the table (dynamic buckets, or a layout not known when the code loads)."""
    known = layout.known_buckets() if layout is not None else None
    buckets: dg.PartitionsDefinition = (
        dg.DynamicPartitionsDefinition(name=dynamic_buckets_name(spec)) if known is None
        else dg.StaticPartitionsDefinition([_bucket_key(spec, b) for b in known]))
    if not spec.partition_keys:
        return buckets
    return dg.MultiPartitionsDefinition({
        DAY_DIM: dg.DailyPartitionsDefinition(start_date=day_start), BUCKET_DIM: buckets})


def split_key(spec: TableSpec, key: str) -> tuple[dict[str, str] | None, int]:
    """(table partition spec, bucket) of a compaction partition key (``cdc.orders/bucket-3``,
    or the multi-partition key ``ref.fx_rates/bucket-1|2025-01-06`` = bucket x day)."""
    if spec.partition_keys:
        mk = key if isinstance(key, dg.MultiPartitionKey) else dg.MultiPartitionKey(
            dict(zip(sorted((BUCKET_DIM, DAY_DIM)), str(key).split("|"))))
        dims = mk.keys_by_dimension
        partition: dict[str, str] | None = {spec.partition_keys[0]: dims[DAY_DIM]}
        bucket_key = dims[BUCKET_DIM]
    else:
        partition, bucket_key = None, str(key)
    table, _, bucket = bucket_key.rpartition("/bucket-")
    if table != spec.identifier or not bucket.isdigit():
        raise ValueError(f"{key!r} is not a compaction partition of {spec.identifier}")
    return partition, int(bucket)


def partition_key_of(spec: TableSpec, partition: dict[str, str] | None, bucket: int) -> str:
    """The compaction partition key of one bucket (the inverse of :func:`split_key`): the
    ``dagster/partition`` tag value its runs are limited by."""
    if partition:
        return str(dg.MultiPartitionKey({DAY_DIM: next(iter(partition.values())),
                                         BUCKET_DIM: _bucket_key(spec, bucket)}))
    return _bucket_key(spec, bucket)


def missing_buckets(instance: dg.DagsterInstance, spec: TableSpec,
                    table: FileStoreTable) -> list[str]:
    """The keys of the table's buckets (:func:`table_buckets`) its dynamic compaction
    partitions lack."""
    have = set(instance.get_dynamic_partitions(dynamic_buckets_name(spec)))
    return [k for k in (_bucket_key(spec, b) for b in table_buckets(table)) if k not in have]
