"""Database sync: one landing of change events of many tables, one Paimon table each
(:mod:`pipelines.cdc.database.sync`; routing: :mod:`pipelines.cdc.database.staging`; tables
created from their events: :mod:`pipelines.cdc.database.create`)."""

from pipelines.cdc.database.create import TYPE_MAPPINGS, CreateOptions, NoPrimaryKeyError
from pipelines.cdc.database.sync import (
    DatabaseBatchReport,
    DatabaseOptions,
    SourceTable,
    TableReport,
    discover_tables,
    sync_database,
    target_identifier,
)

__all__ = ["TYPE_MAPPINGS", "CreateOptions", "DatabaseBatchReport", "DatabaseOptions",
           "NoPrimaryKeyError", "SourceTable", "TableReport", "discover_tables",
           "sync_database", "target_identifier"]
