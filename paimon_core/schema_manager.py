"""Reading table schemas (``schema/schema-<N>``): ``org.apache.paimon.schema.SchemaManager``."""

from __future__ import annotations

from paimon_core.errors import CorruptMetadataError, FileNotFoundInTableError, SchemaError
from paimon_core.io.file_io import FileIO, join
from paimon_core.layout import TableLayout
from paimon_core.spec.schema import TableSchema, decode_schema

SCHEMA_PREFIX = "schema-"


class SchemaManager:
    def __init__(self, file_io: FileIO, table_path: str) -> None:
        self.file_io = file_io
        self.table_path = table_path
        self.schema_dir = TableLayout(table_path).schema_dir
        self._cache: dict[int, TableSchema] = {}

    def schema_path(self, schema_id: int) -> str:
        return join(self.schema_dir, f"{SCHEMA_PREFIX}{schema_id}")

    def list_schema_ids(self) -> list[int]:
        ids = []
        for name in self.file_io.list_names(self.schema_dir):
            rest = name[len(SCHEMA_PREFIX) :] if name.startswith(SCHEMA_PREFIX) else ""
            if rest.isdigit():
                ids.append(int(rest))
        return sorted(ids)

    def schema(self, schema_id: int) -> TableSchema:
        cached = self._cache.get(schema_id)
        if cached is not None:
            return cached
        path = self.schema_path(schema_id)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundInTableError as e:
            raise SchemaError(f"schema {schema_id} does not exist ({path})") from e
        schema = decode_schema(data, path)
        if schema.id != schema_id:
            raise CorruptMetadataError(
                path, f"schema id {schema.id} inside the file differs from its name"
            )
        self._cache[schema_id] = schema
        return schema

    def remember(self, schema: TableSchema) -> None:
        """Keep a schema read elsewhere (schema files are immutable): the table's own, so that
        :meth:`latest` on an unchanged table is one listing."""
        self._cache.setdefault(schema.id, schema)

    def latest(self) -> TableSchema | None:
        ids = self.list_schema_ids()
        return self.schema(ids[-1]) if ids else None
