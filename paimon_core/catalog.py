"""The filesystem catalog: ``<warehouse>/<db>.db/<table>/``.

Example:
    >>> from paimon_core.catalog import FileSystemCatalog
    >>> catalog = FileSystemCatalog("/tmp/warehouse")          # doctest: +SKIP
    >>> table = catalog.get_table("db.orders")                  # doctest: +SKIP
    >>> table.to_arrow(filter="amount > 10")                    # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from paimon_core.errors import (
    DatabaseAlreadyExistError,
    DatabaseNotEmptyError,
    DatabaseNotExistError,
    NotAWarehouseError,
    PaimonError,
    TableAlreadyExistError,
    TableNotExistError,
    WarehouseNotExistError,
    did_you_mean,
)
from paimon_core.identifier import Identifier, validate_name
from paimon_core.io.file_io import FileIO, join
from paimon_core.layout import TableLayout
from paimon_core.manifest_io import ManifestCache
from paimon_core.options import parse_bool, parse_memory_size
from paimon_core.schema_builder import Schema
from paimon_core.schema_manager import SchemaManager
from paimon_core.spec.schema import TableSchema, encode_schema
from paimon_core.table import FileStoreTable

if TYPE_CHECKING:
    from paimon_core.schema_change import SchemaChange

DB_SUFFIX = ".db"


def _did_you_mean(name: str, known: Sequence[str], prefix: str = "") -> str:
    close = did_you_mean(name, known)
    if close:
        return f" (did you mean {prefix + close!r}?)"
    return f" (it has: {', '.join(prefix + k for k in known[:10])})" if known else ""


class FileSystemCatalog:
    """Catalog over a warehouse directory (local path, ``memory://`` or ``s3://``).

    Args:
        warehouse: the warehouse root.
        options: storage options passed to :class:`FileIO` (e.g. ``s3.endpoint``), and the
            manifest cache shared by the catalog's tables, as in Java's ``CachingCatalog``:
            ``cache-enabled`` (default true), ``cache.manifest.small-file-memory`` (default
            128 mb), ``cache.manifest.small-file-threshold`` (default 1 mb).
    """

    def __init__(self, warehouse: str, options: Mapping[str, str] | None = None) -> None:
        self.warehouse = warehouse.rstrip("/") if warehouse not in ("/",) else warehouse
        self.file_io = FileIO(self.warehouse, options)
        opts = dict(options or {})
        self.manifest_cache: ManifestCache | None = None
        if parse_bool("cache-enabled", opts.get("cache-enabled", "true")):
            self.manifest_cache = ManifestCache(
                parse_memory_size(
                    "cache.manifest.small-file-memory",
                    opts.get("cache.manifest.small-file-memory", "128 mb"),
                ),
                parse_memory_size(
                    "cache.manifest.small-file-threshold",
                    opts.get("cache.manifest.small-file-threshold", "1 mb"),
                ),
            )

    # ---- paths
    def database_path(self, database: str) -> str:
        validate_name(database, "database")
        return join(self.warehouse, database + DB_SUFFIX)

    def table_path(self, identifier: Identifier) -> str:
        return join(self.database_path(identifier.database), identifier.table)

    # ---- databases
    def list_databases(self) -> list[str]:
        out = []
        for st in self.file_io.list_status(self.warehouse):
            name = st.path.rsplit("/", 1)[-1]
            if st.is_dir and name.endswith(DB_SUFFIX) and len(name) > len(DB_SUFFIX):
                out.append(name[: -len(DB_SUFFIX)])
        return sorted(out)

    def database_exists(self, database: str) -> bool:
        return self.file_io.is_dir(self.database_path(database)) or (
            not self.file_io.is_local and database in self.list_databases()
        )

    def create_database(self, database: str, ignore_if_exists: bool = False) -> None:
        path = self.database_path(database)
        if self.database_exists(database):
            if ignore_if_exists:
                return
            raise DatabaseAlreadyExistError(database)
        self.file_io.mkdirs(path)

    def drop_database(
        self, database: str, ignore_if_not_exists: bool = False, cascade: bool = False
    ) -> None:
        if not self.database_exists(database):
            if ignore_if_not_exists:
                return
            raise DatabaseNotExistError(database)
        if not cascade and self.list_tables(database):
            raise DatabaseNotEmptyError(database)
        self.file_io.delete_dir(self.database_path(database))

    # ---- tables
    def list_tables(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise DatabaseNotExistError(database)
        out = []
        for st in self.file_io.list_status(self.database_path(database)):
            name = st.path.rsplit("/", 1)[-1]
            if st.is_dir and self.file_io.exists(TableLayout(st.path).schema_dir):
                out.append(name)
        return sorted(out)

    def table_exists(self, identifier: str | Identifier) -> bool:
        ident = Identifier.parse(identifier)
        return bool(self.file_io.list_names(TableLayout(self.table_path(ident)).schema_dir))

    def get_table(self, identifier: str | Identifier) -> FileStoreTable:
        ident = Identifier.parse(identifier)
        path = self.table_path(ident)
        table = FileStoreTable.load(self.file_io, path, ident, self.manifest_cache)
        if table is None:
            try:
                error = self._missing_table(ident)
            except PaimonError:  # the diagnosis needs listings storage may deny
                error = TableNotExistError(str(ident))
            raise error
        return table

    def _missing_table(self, ident: Identifier) -> TableNotExistError:
        """Why ``ident`` is not there, named: the warehouse does not exist, is no Paimon
        warehouse (a table or database directory given as the warehouse, or any other
        directory), lacks the database, or the database lacks the table (did you mean)."""
        entries = self.file_io.list_status(self.warehouse)
        if not entries and not self.file_io.is_dir(self.warehouse):
            return WarehouseNotExistError(self.warehouse, str(ident))
        names = {st.path.rsplit("/", 1)[-1] for st in entries if st.is_dir}
        databases = sorted(n[: -len(DB_SUFFIX)] for n in names
                           if n.endswith(DB_SUFFIX) and len(n) > len(DB_SUFFIX))
        if not databases:
            if "schema" in names:
                detail = "it is a table directory: the warehouse is two levels up"
            elif self.warehouse.endswith(DB_SUFFIX):
                detail = "it looks like a database directory: the warehouse is its parent"
            else:
                detail = f"no <database>{DB_SUFFIX} directory in it"
            return NotAWarehouseError(self.warehouse, str(ident), detail)
        if ident.database not in databases:
            return TableNotExistError(str(ident), (
                f"table {str(ident)!r} does not exist: warehouse {self.warehouse!r} has no "
                f"database {ident.database!r}{_did_you_mean(ident.database, databases)}"))
        tables = self.list_tables(ident.database)
        return TableNotExistError(str(ident), (
            f"table {str(ident)!r} does not exist in warehouse {self.warehouse!r}"
            f"{_did_you_mean(ident.table, tables, prefix=ident.database + '.')}"))

    def create_table(
        self, identifier: str | Identifier, schema: Schema, ignore_if_exists: bool = False
    ) -> FileStoreTable:
        """Create a table (its ``schema/schema-0``, written atomically). The database is
        created when missing."""
        ident = Identifier.parse(identifier)
        table_schema = schema.to_table_schema(0)
        path = self.table_path(ident)
        if self.table_exists(ident):
            if ignore_if_exists:
                return self.get_table(ident)
            raise TableAlreadyExistError(str(ident))
        self.create_database(ident.database, ignore_if_exists=True)
        manager = SchemaManager(self.file_io, path)
        if not self.file_io.try_create(manager.schema_path(0), encode_schema(table_schema)):
            if ignore_if_exists:
                return self.get_table(ident)
            raise TableAlreadyExistError(str(ident))
        return self.get_table(ident)

    def alter_table(
        self,
        identifier: str | Identifier,
        changes: Sequence[SchemaChange],
        ignore_if_not_exists: bool = False,
    ) -> TableSchema | None:
        """ALTER TABLE (``Catalog.alterTable``): returns the new schema (None when the table
        does not exist and ``ignore_if_not_exists``)."""
        ident = Identifier.parse(identifier)
        if not self.table_exists(ident):
            if ignore_if_not_exists:
                return None
            raise TableNotExistError(str(ident))
        # through the table: a NOT NULL change needs its null check (FileStoreTable.alter)
        return self.get_table(ident).alter(changes)

    def drop_table(self, identifier: str | Identifier, ignore_if_not_exists: bool = False) -> None:
        ident = Identifier.parse(identifier)
        if not self.table_exists(ident):
            if ignore_if_not_exists:
                return
            raise TableNotExistError(str(ident))
        self.file_io.delete_dir(self.table_path(ident))
