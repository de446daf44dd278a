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

from paimon_core import (
    FileStoreTable,
    FileSystemCatalog,
    Schema,
)

__all__ = [
    "ALL_TABLES",
    "CUSTOMERS",
    "DAILY_START",
    "FX_RATES",
    "ORDERS",
    "ORDERS_ENRICHED",
    "TableSpec",
]

#: first landing day of the daily partitions (the demo feed starts on 2025-01-06)
DAILY_START = "2025-01-01"

# Retention for every table (demo scale: a production table keeps far more): the last 2
# snapshots are always kept, at most 4 (older ones go regardless of age), and between the two
# bounds snapshots younger than an hour are kept. Consumers and tags keep what they need.
_MAINTENANCE = {
    "snapshot.num-retained.min": "2",
    "snapshot.num-retained.max": "4",
    "snapshot.time-retained": "1 h",
    # compact a bucket once it has 3 sorted runs (Paimon's default is 5)
    "num-sorted-run.compaction-trigger": "3",
    "write-only": "true",
    "file.format": "parquet",
}

# CDC tables: the source position (Debezium ``source.lsn``) is the sequence field, so the
# version with the highest position wins whatever order the landing days are ingested in (a
# backfill of an old day after newer ones changes nothing it should not).
_CDC = {**_MAINTENANCE, "sequence.field": "src_lsn"}


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

    @property
    def database(self) -> str:
        return self.identifier.split(".", 1)[0]

    @property
    def name(self) -> str:
        return self.identifier.split(".", 1)[1]

    @property
    def key_path(self) -> list[str]:
        """The asset key of the table (``["cdc", "orders"]``)."""
        return [self.database, self.name]

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

    def table_schema(self) -> Schema:
        return Schema.from_json(self.schema)

    def write_schema_file(self, directory: str | Path) -> Path:
        """Write the schema as ``<directory>/<db>.<table>.schema.json`` (for the Spark jobs)."""
        path = Path(directory) / f"{self.identifier}.schema.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.schema, indent=2))
        return path

    def ensure(self, catalog: FileSystemCatalog) -> FileStoreTable:
        """The table, created from :attr:`schema` when missing."""
        return catalog.create_table(self.identifier, self.table_schema(), ignore_if_exists=True)


CUSTOMERS = TableSpec(
    identifier="cdc.customers",
    description="Customers, replicated from the shop database by CDC (Debezium events).",
    schema={
        "fields": [
            {"name": "customer_id", "type": "BIGINT"},
            {"name": "name", "type": "STRING"},
            {"name": "email", "type": "STRING"},
            {"name": "country", "type": "STRING"},
            {"name": "tier", "type": "STRING"},
            {"name": "updated_at", "type": "TIMESTAMP(3)"},
            {"name": "src_lsn", "type": "BIGINT"},
        ],
        "primary_keys": ["customer_id"],
        "options": {"bucket": "2", **_CDC},
    },
)

ORDERS = TableSpec(
    identifier="cdc.orders",
    description="Orders, replicated from the shop database by CDC (Debezium events).",
    schema={
        "fields": [
            {"name": "order_id", "type": "BIGINT"},
            {"name": "customer_id", "type": "BIGINT"},
            {"name": "status", "type": "STRING"},
            {"name": "amount", "type": "DECIMAL(12, 2)"},
            {"name": "currency", "type": "STRING"},
            {"name": "created_at", "type": "TIMESTAMP(3)"},
            {"name": "updated_at", "type": "TIMESTAMP(3)"},
            {"name": "src_lsn", "type": "BIGINT"},
        ],
        "primary_keys": ["order_id"],
        "options": {"bucket": "4", **_CDC},
    },
)

FX_RATES = TableSpec(
    identifier="ref.fx_rates",
    description="Daily reference exchange rates (one partition per day, replaced whole).",
    schema={
        "fields": [
            {"name": "dt", "type": "STRING"},
            {"name": "currency", "type": "STRING"},
            {"name": "rate_to_eur", "type": "DECIMAL(18, 6)"},
            {"name": "source", "type": "STRING"},
        ],
        "partition_keys": ["dt"],
        "primary_keys": ["dt", "currency"],
        "options": {"bucket": "2", **_MAINTENANCE},
    },
)

ORDERS_ENRICHED = TableSpec(
    identifier="mart.orders_enriched",
    description=(
        "cdc.orders with derived columns (open flag, amount band), maintained from the "
        "source's incremental changes, exactly once per snapshot range."
    ),
    schema={
        "fields": [
            {"name": "order_id", "type": "BIGINT"},
            {"name": "customer_id", "type": "BIGINT"},
            {"name": "status", "type": "STRING"},
            {"name": "is_open", "type": "BOOLEAN"},
            {"name": "amount", "type": "DECIMAL(12, 2)"},
            {"name": "currency", "type": "STRING"},
            {"name": "amount_band", "type": "STRING"},
            {"name": "updated_at", "type": "TIMESTAMP(3)"},
            {"name": "source_snapshot", "type": "BIGINT"},
        ],
        "primary_keys": ["order_id"],
        "options": {"bucket": "2", **_MAINTENANCE},
    },
)

ALL_TABLES: tuple[TableSpec, ...] = (CUSTOMERS, ORDERS, FX_RATES, ORDERS_ENRICHED)
