"""Database sync: one landing of change events of many tables, one Paimon table each
(:mod:`pipelines.cdc.database.sync`; routing: :mod:`pipelines.cdc.database.staging`; tables
created from their events: :mod:`pipelines.cdc.database.create`)."""

from pipelines.cdc.database.create import (
    METADATA_COLUMNS,
    TYPE_MAPPINGS,
    CreateOptions,
    NoPrimaryKeyError,
)
from pipelines.cdc.database.sync import (
    DatabaseBatchReport,
    DatabaseOptions,
    SourceTable,
    TableReport,
    check_staging,
    discover_tables,
    sync_database,
    target_identifier,
)

__all__ = ["METADATA_COLUMNS", "TYPE_MAPPINGS", "CreateOptions", "DatabaseBatchReport",
           "DatabaseOptions", "NoPrimaryKeyError", "SourceTable", "TableReport",
           "check_staging", "discover_tables", "sync_database", "target_identifier"]
