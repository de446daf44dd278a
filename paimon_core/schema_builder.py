"""Declaring a new table: :class:`Schema` and its validation (``SchemaValidation``).

Example:
    >>> s = Schema.of(
    ...     [("dt", "STRING"), ("id", "BIGINT"), ("amount", "DECIMAL(10, 2)")],
    ...     partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "4"})
    >>> ts = s.to_table_schema(0)
    >>> [f.type.sql() for f in ts.fields]
    ['STRING NOT NULL', 'BIGINT NOT NULL', 'DECIMAL(10, 2)']
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from paimon_core.datafile.avro_layout import TOP_RECORD, avro_schema
from paimon_core.errors import SchemaError
from paimon_core.option_validation import validate_options
from paimon_core.options import CoreOptions
from paimon_core.spec.option_enums import BucketMode
from paimon_core.spec.schema import CURRENT_VERSION, TableSchema
from paimon_core.spec.system_fields import is_system_field
from paimon_core.types import (
    AtomicType,
    DataField,
    DataType,
    TypeRoot,
    assign_field_ids,
    from_arrow_type,
    parse_sql_type,
    parse_type_json,
)


def _column_type(name: str, t: DataType | str | Mapping[str, Any], where: str = "") -> DataType:
    """Column ``name``'s type: a SQL string, Paimon's type JSON or a type; an error names the
    column (and ``where``, the file it came from)."""
    if not isinstance(t, (str, Mapping)):
        return t
    try:
        return parse_sql_type(t) if isinstance(t, str) else parse_type_json(t)
    except SchemaError as e:
        raise SchemaError(f"{where}column {name!r}: {e}") from e


@dataclass(frozen=True)
class Schema:
    """A table definition before ids are assigned (``org.apache.paimon.schema.Schema``)."""

    fields: tuple[DataField, ...]
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    comment: str | None = None

    @classmethod
    def of(
        cls,
        columns: Sequence[tuple[str, DataType | str]],
        *,
        partition_keys: Sequence[str] = (),
        primary_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
        comment: str | None = None,
    ) -> Schema:
        fields = tuple(DataField(-1, name, _column_type(name, t)) for name, t in columns)
        return cls(fields, tuple(partition_keys), tuple(primary_keys),
                   {str(k): str(v) for k, v in (options or {}).items()}, comment)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], *, source: str | None = None) -> Schema:
        """The oracle's ``schema.json`` form: ``fields`` [{name, type}], ``partition_keys`` /
        ``partitionKeys``, ``primary_keys`` / ``primaryKeys``, ``options``, ``comment``.
        ``source`` (the file or setting it came from) prefixes the errors."""
        where = f"{source}: " if source else ""
        try:
            fields = []
            for f in obj["fields"]:
                fields.append(DataField(-1, f["name"], _column_type(f["name"], f["type"], where),
                                        f.get("description")))
        except (KeyError, TypeError) as e:
            raise SchemaError(f"{where}schema JSON needs fields with name and type: "
                              f"{e!r}") from e
        opts = obj.get("options") or {}
        return cls(
            tuple(fields),
            tuple(obj.get("partition_keys", obj.get("partitionKeys", ())) or ()),
            tuple(obj.get("primary_keys", obj.get("primaryKeys", ())) or ()),
            {str(k): str(v) for k, v in opts.items()},
            obj.get("comment"),
        )

    @classmethod
    def from_arrow(
        cls,
        schema: pa.Schema,
        *,
        partition_keys: Sequence[str] = (),
        primary_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
        comment: str | None = None,
    ) -> Schema:
        cols = [(f.name, from_arrow_type(f.type, f.nullable)) for f in schema]
        return cls.of(cols, partition_keys=partition_keys, primary_keys=primary_keys,
                      options=options, comment=comment)

    def to_table_schema(self, schema_id: int = 0) -> TableSchema:
        options = dict(self.options)
        pks = list(self.primary_keys)
        parts = list(self.partition_keys)
        # options 'primary-key' / 'partition' move into the arrays (as Java does)
        if CoreOptions.PRIMARY_KEY in options:
            if pks:
                raise SchemaError("give primary keys either as primary_keys or as an option")
            pks = [k.strip() for k in options.pop(CoreOptions.PRIMARY_KEY).split(",") if k.strip()]
        if CoreOptions.PARTITION in options:
            if parts:
                raise SchemaError("give partition keys either as partition_keys or as an option")
            parts = [k.strip() for k in options.pop(CoreOptions.PARTITION).split(",") if k.strip()]
        fields = list(self.fields)
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            raise SchemaError(f"duplicate column names in {names}")
        for n in names:
            if not n or is_system_field(n):
                raise SchemaError(f"column name {n!r} is reserved or empty")
        # primary-key columns are NOT NULL
        fields = [
            DataField(f.id, f.name, f.type.with_nullable(False) if f.name in pks else f.type,
                      f.description)
            for f in fields
        ]
        numbered, highest = assign_field_ids(fields)
        ts = TableSchema(
            id=schema_id, fields=tuple(numbered), partition_keys=tuple(parts),
            primary_keys=tuple(pks), options=options, comment=self.comment,
            time_millis=int(time.time() * 1000), version=CURRENT_VERSION,
            highest_field_id=highest,
        )
        validate_table_schema(ts)
        # every option value a user hands us is checked at CREATE, as ALTER checks it
        # (unknown keys pass through, as in Java and ALTER)
        validate_options(ts)
        return ts


def validate_table_schema(s: TableSchema) -> None:
    """Reject what Paimon's ``SchemaValidation`` rejects (plus what we cannot write)."""
    names = set(s.field_names)
    for what, declared in (("partition", s.partition_keys), ("primary", s.primary_keys)):
        missing = [k for k in declared if k not in names]
        if missing:
            raise SchemaError(f"{what} keys {missing} are not columns of {sorted(names)}")
        if len(set(declared)) != len(declared):
            raise SchemaError(f"duplicate {what} keys {list(declared)}")
    if s.primary_keys:
        s.trimmed_primary_keys  # noqa: B018 - raises when the PK is only partition keys
    if len(s.partition_keys) == len(s.fields) and s.fields:
        raise SchemaError("a table needs at least one column that is not a partition key")
    bucket = s.num_buckets  # parse_bucket: an integer, -1, -2 or 1..2^31-1
    # a primary key without all partition keys (cross-partition update) needs bucket = -1
    if s.bucket_mode is BucketMode.POSTPONE:
        raise SchemaError("option bucket=-2 (postpone) is not supported by Paimon 0.9")
    bucket_key = s.options.get(CoreOptions.BUCKET_KEY)
    if bucket_key is not None:
        keys = [k.strip() for k in bucket_key.split(",") if k.strip()]
        if not keys:
            raise SchemaError("option bucket-key is empty")
        missing = [k for k in keys if k not in names]
        if missing:
            raise SchemaError(f"bucket-key {missing} are not columns")
        if set(keys) & set(s.partition_keys):
            raise SchemaError(f"bucket-key {keys} must not contain partition keys")
        if s.primary_keys and not set(keys) <= set(s.primary_keys):
            raise SchemaError(f"bucket-key {keys} must be a subset of the primary key")
    if not s.primary_keys and s.bucket_mode is BucketMode.HASH_FIXED and bucket_key is None:
        raise SchemaError(
            f"append table with bucket={bucket} needs the option 'bucket-key' "
            "(as Paimon requires)"
        )
    for key in s.partition_keys:
        t = s.field(key).type
        if not isinstance(t, AtomicType) or t.root in (TypeRoot.BINARY, TypeRoot.VARBINARY):
            raise SchemaError(f"partition key {key!r} of type {t.sql()} is not supported")
    for key in s.primary_keys:
        if not isinstance(s.field(key).type, AtomicType):
            raise SchemaError(f"primary key column {key!r} must have an atomic type")
    fmt = s.options.get(CoreOptions.FILE_FORMAT, "parquet").lower()
    if fmt not in ("parquet", "orc", "avro"):
        raise SchemaError(f"option file.format={fmt!r} is not a Paimon file format")
    if s.file_format == "avro":  # AvroFileFormat.validateDataFields: types Avro cannot hold
        for f in s.fields:
            avro_schema(f.type, TOP_RECORD, {}, f.name)
