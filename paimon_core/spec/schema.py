"""Table schema files (``schema/schema-<N>``): ``org.apache.paimon.schema.TableSchema``.

A pure codec: :func:`decode_schema` turns the JSON bytes into a frozen :class:`TableSchema`
(tolerating unknown keys and every version's optional keys), :func:`encode_schema` writes the
form Java 0.9 and pypaimon read (``version`` 3, no null ``comment``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from paimon_core.errors import CorruptMetadataError, SchemaError
from paimon_core.options import CoreOptions
from paimon_core.spec.option_enums import BucketMode, parse_bucket
from paimon_core.types import DataField, RowType, highest_field_id, parse_field_json

CURRENT_VERSION = 3


@dataclass(frozen=True, slots=True)
class TableSchema:
    """One version of a table's schema."""

    id: int
    fields: tuple[DataField, ...]
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    time_millis: int = 0
    version: int = CURRENT_VERSION
    highest_field_id: int = -1

    # ---- derived views
    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    @property
    def row_type(self) -> RowType:
        return RowType(self.fields, False)

    def field(self, name: str) -> DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise SchemaError(f"no column {name!r} in schema {self.id} (columns: {self.field_names})")

    def field_by_id(self) -> dict[int, DataField]:
        return {f.id: f for f in self.fields}

    @property
    def trimmed_primary_keys(self) -> tuple[str, ...]:
        """Primary key minus partition keys (``TableSchema.trimmedPrimaryKeys``)."""
        pks = tuple(k for k in self.primary_keys if k not in self.partition_keys)
        if self.primary_keys and not pks:
            raise SchemaError(
                f"primary key {list(self.primary_keys)} must contain columns that are not "
                f"partition keys {list(self.partition_keys)}"
            )
        return pks

    @property
    def bucket_keys(self) -> tuple[str, ...]:
        """``bucket-key`` option, else the trimmed primary key (``TableSchema.bucketKeys``)."""
        bk = self.options.get(CoreOptions.BUCKET_KEY)
        if bk:
            return tuple(k.strip() for k in bk.split(",") if k.strip())
        return self.trimmed_primary_keys

    @property
    def num_buckets(self) -> int:
        """The ``bucket`` option (:func:`~paimon_core.spec.option_enums.parse_bucket`; unset:
        -1, or 1 for version-1 schemas). SchemaError naming a bad value."""
        raw = self.options.get(CoreOptions.BUCKET)
        if raw is None:
            return 1 if self.version <= 1 else -1
        return parse_bucket(raw)

    @property
    def bucket_mode(self) -> BucketMode:
        """What :attr:`num_buckets` means for this table (:meth:`BucketMode.of`)."""
        return BucketMode.of(self.num_buckets, bool(self.primary_keys),
                             cross_partition=self.cross_partition_update)

    @property
    def cross_partition_update(self) -> bool:
        """A primary key without every partition key: a key may change partition
        (``TableSchema.crossPartitionUpdate``)."""
        return bool(self.primary_keys) and not set(self.partition_keys) <= set(self.primary_keys)

    @property
    def file_format(self) -> str:
        fmt = self.options.get(CoreOptions.FILE_FORMAT)
        if fmt is None:
            return "orc" if self.version <= 2 else "parquet"
        return fmt.lower()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": self.version,
            "id": self.id,
            "fields": [f.to_json() for f in self.fields],
            "highestFieldId": max(self.highest_field_id, highest_field_id(self.fields)),
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
        }
        if self.comment is not None:
            out["comment"] = self.comment
        out["timeMillis"] = self.time_millis
        return out


def decode_schema(data: bytes, path: str) -> TableSchema:
    """Decode a schema file; any malformation raises :class:`CorruptMetadataError` naming it."""
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CorruptMetadataError(path, f"not valid JSON: {e}") from e
    if not isinstance(obj, dict):
        raise CorruptMetadataError(path, "schema JSON is not an object")
    try:
        fields = tuple(parse_field_json(f) for f in obj["fields"])
        sid = obj["id"]
        if not isinstance(sid, int):
            raise CorruptMetadataError(path, f"schema id {sid!r} is not an integer")
        options = obj.get("options") or {}
        if not isinstance(options, dict):
            raise CorruptMetadataError(path, "options is not an object")
        comment = obj.get("comment")
        return TableSchema(
            id=sid,
            fields=fields,
            partition_keys=tuple(obj.get("partitionKeys") or ()),
            primary_keys=tuple(obj.get("primaryKeys") or ()),
            options={str(k): str(v) for k, v in options.items()},
            comment=comment if isinstance(comment, str) else None,
            time_millis=int(obj.get("timeMillis") or 0),
            version=int(obj.get("version", 1)),
            highest_field_id=int(obj.get("highestFieldId", highest_field_id(fields))),
        )
    except CorruptMetadataError:
        raise
    except (KeyError, TypeError, ValueError, SchemaError) as e:
        raise CorruptMetadataError(path, f"invalid schema: {e!r}") from e


def encode_schema(schema: TableSchema) -> bytes:
    return json.dumps(schema.to_json(), indent=2).encode("utf-8")
