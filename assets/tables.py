"""The tables of the code location: their schemas (the oracle's ``schema.json`` form, which the
Spark jobs read too) and the maintenance settings the assets and checks use.

Sources (``cdc.customers``, ``cdc.orders``) are primary-key tables fed by CDC ingestion (ordered
by ``sequence.field = src_lsn``, the source log position); writers
are ``write-only`` (no inline compaction): compaction is the per-bucket maintenance asset's job,
so writers and the compactor never conflict. ``ref.fx_rates`` is a daily-partitioned table
replaced one partition at a time (INSERT OVERWRITE). ``mart.orders_enriched`` is derived from
``cdc.orders`` by incremental reads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from paimon_core import (
    FileStoreTable,
    FileSystemCatalog,
    Schema,
)
from paimon_core.option_validation import checked_overlay
from paimon_core.options import CoreOptions
from paimon_core.schema_change import SetOption

__all__ = [
    "ALL_TABLES",
    "CUSTOMERS",
    "DAILY_START",
    "DEMO_DEFS",
    "FX_RATES",
    "ORDERS",
    "ORDERS_ENRICHED",
    "EnsuredTable",
    "TableSpec",
    "demo_table",
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
    def buckets(self) -> int:
        return int(self.schema.get("options", {}).get("bucket", "-1"))

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
