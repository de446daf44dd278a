"""The schema of a table a database sync creates from its first events (Paimon's
``kafka_sync_database``: ``CdcActionCommonUtils.buildPaimonSchema``).

Columns, in the order the events first name them:

* typed by the event where it says the type: canal's ``mysqlType`` (MySQL's spelling,
  :func:`mysql_type`), Debezium's schema envelope (the ``after`` struct's Kafka Connect types
  and logical names, :func:`connect_type`);
* else inferred from the JSON values as a new column of an existing table is
  (:func:`pipelines.cdc.events.infer_column_type`);

then the ``--type-mapping`` modes (Paimon's ``TypeMapping``: ``to-string``,
``tinyint1-not-bool``, ``char-to-string``, ``longtext-to-bytes``, ``to-nullable``, and
``bigint-unsigned-to-bigint`` of later Paimon versions; any other name is refused).

Primary keys: ``--primary-keys`` when the table has every one of those columns, else the
event's own (canal ``pkNames``, maxwell ``primary_key_columns`` -- with Maxwell's
``output_primary_key_columns`` --, OGG ``primary_keys``; Debezium's and DMS's values carry
none), else the table is refused by name (:class:`NoPrimaryKeyError`). ``--partition-keys``
apply when the table has every one of those columns (else none, as Paimon's database sync).
``--table-conf`` options are the table's options. ``--metadata-column`` ``database_name``,
``table_name``, ``op_ts`` (Paimon's ``CdcMetadataConverter`` names; ``STRING`` and
``TIMESTAMP_LTZ(3)``, nullable where Paimon says NOT NULL: the decoders check them before
the values are filled) are appended to the columns: ``database_name`` / ``table_name`` filled
on every row with the event's database and table
(:attr:`pipelines.cdc.ingest.CdcOptions.constant_columns`), ``op_ts`` with each event's time
of change in the source database (:attr:`pipelines.cdc.ingest.CdcOptions.op_ts_column`,
:mod:`pipelines.cdc.values.event_time`, where each format's field is said).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from paimon_core import Schema, SchemaError
from paimon_core.errors import ConfigError
from pipelines.cdc.formats import sample_values
from pipelines.cdc.schema import infer_column_type
from pipelines.cdc.values.event_time import OP_TS, OP_TS_TYPE

__all__ = ["METADATA_COLUMNS", "TYPE_MAPPINGS", "CreateOptions", "NoColumnsYet",
           "NoPrimaryKeyError", "connect_type", "mysql_type", "new_table_schema"]

#: the ``--type-mapping`` modes taken (Paimon's ``TypeMapping.TypeMappingMode`` names)
TYPE_MAPPINGS = ("to-string", "tinyint1-not-bool", "char-to-string", "longtext-to-bytes",
                 "to-nullable", "bigint-unsigned-to-bigint")

#: the ``--metadata-column`` names taken (Paimon's ``CdcMetadataConverter.columnName``) and
#: their types
METADATA_COLUMNS = {"database_name": "STRING", "table_name": "STRING", OP_TS: OP_TS_TYPE}


class NoColumnsYet(SchemaError):
    """A table to create whose events of the batch name no column (DDL only): it is created
    by the first batch with a row of it."""

    def __init__(self, identifier: str) -> None:
        super().__init__(f"table {identifier} not created yet: its events of the batch carry "
                         "no row (DDL / control events only)")
        self.identifier = identifier


class NoPrimaryKeyError(SchemaError):
    """A table to create whose primary key is neither given nor in its events."""

    def __init__(self, identifier: str, columns: Sequence[str],
                 specified: Sequence[str]) -> None:
        given = (f"--primary-keys {','.join(specified)} are not all among its columns "
                 f"{', '.join(columns)}" if specified else "no --primary-keys given")
        super().__init__(f"cannot create table {identifier}: its events carry no primary key "
                         f"and {given}")
        self.identifier = identifier


@dataclass(frozen=True)
class CreateOptions:
    """How a database sync creates its tables (see the module docs)."""

    primary_keys: tuple[str, ...] = ()
    partition_keys: tuple[str, ...] = ()
    type_mapping: tuple[str, ...] = ()
    table_conf: Mapping[str, str] = field(default_factory=dict)
    metadata_columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in self.metadata_columns:
            if name not in METADATA_COLUMNS:
                raise ConfigError("metadata-column", f"{name!r} is not supported; one of "
                                                     f"{', '.join(METADATA_COLUMNS)}")
        for mode in self.type_mapping:
            if mode not in TYPE_MAPPINGS:
                raise ConfigError("type-mapping", f"{mode!r} is not supported; one of "
                                                  f"{', '.join(TYPE_MAPPINGS)}")


# ---------------------------------------------------------------------------- MySQL types

_MYSQL = re.compile(r"^\s*([a-z ]+?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*"
                    r"(unsigned)?\s*(zerofill)?\s*$", re.IGNORECASE)
_PLAIN = {"smallint": ("SMALLINT", "INT"), "mediumint": ("INT", "INT"),
          "int": ("INT", "BIGINT"), "integer": ("INT", "BIGINT"),
          "bigint": ("BIGINT", "DECIMAL(20, 0)"), "float": ("FLOAT", "FLOAT"),
          "double": ("DOUBLE", "DOUBLE"), "real": ("DOUBLE", "DOUBLE"),
          "double precision": ("DOUBLE", "DOUBLE"), "date": ("DATE", "DATE"),
          "year": ("INT", "INT"), "bool": ("BOOLEAN", "BOOLEAN"),
          "boolean": ("BOOLEAN", "BOOLEAN")}
_TEXT = ("tinytext", "text", "mediumtext", "json", "enum", "set", "geometry", "point",
         "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
         "geometrycollection")
_BYTES = ("tinyblob", "blob", "mediumblob", "longblob")


def mysql_type(spelled: str, modes: Sequence[str] = ()) -> str:
    """The Paimon type of a MySQL column type as canal spells it (``int(11) unsigned``,
    ``VARCHAR(255)``, ``tinyint(1)``, ``decimal(10,2)``, ``datetime(3)``), under the
    ``--type-mapping`` ``modes`` (Paimon's ``MySqlTypeUtils``; a type it does not know:
    STRING)."""
    if "to-string" in modes:
        return "STRING"
    m = _MYSQL.match(spelled)
    if m is None:
        return "STRING"
    name, p, s, unsigned = m.group(1).lower(), m.group(2), m.group(3), bool(m.group(4))
    if name == "tinyint":
        if p == "1" and "tinyint1-not-bool" not in modes:
            return "BOOLEAN"
        return "SMALLINT" if unsigned else "TINYINT"
    if name == "bigint" and unsigned and "bigint-unsigned-to-bigint" in modes:
        return "BIGINT"
    if name in _PLAIN:
        return _PLAIN[name][1 if unsigned else 0]
    return _sized(name, p, s, modes)


def _sized(name: str, p: str | None, s: str | None, modes: Sequence[str]) -> str:
    if name in ("decimal", "numeric", "dec", "fixed"):
        precision, scale = int(p or 10), int(s or 0)
        return f"DECIMAL({precision}, {scale})" if precision <= 38 else "STRING"
    if name in ("char", "varchar"):
        if "char-to-string" in modes or p is None:
            return "STRING"
        return f"{name.upper()}({max(int(p), 1)})"
    if name == "longtext":
        return "BYTES" if "longtext-to-bytes" in modes else "STRING"
    if name in _TEXT:
        return "STRING"
    if name in ("binary", "varbinary"):
        return f"{name.upper()}({max(int(p or 1), 1)})"
    if name in _BYTES:
        return "BYTES"
    if name == "bit":
        return "BOOLEAN" if p in (None, "1") else "BINARY(" + str((int(p) + 7) // 8) + ")"
    if name == "datetime":
        return f"TIMESTAMP({int(p or 0)})"
    if name == "timestamp":
        return f"TIMESTAMP_LTZ({int(p or 0)})"
    if name == "time":
        return f"TIME({int(p or 0)})"
    return "STRING"


# ---------------------------------------------------------------------------- Kafka Connect

_CONNECT_PLAIN = {"int8": "TINYINT", "int16": "SMALLINT", "int32": "INT", "int64": "BIGINT",
                  "float32": "FLOAT", "float64": "DOUBLE", "boolean": "BOOLEAN",
                  "string": "STRING", "bytes": "BYTES"}
_CONNECT_LOGICAL = {"io.debezium.time.Date": "DATE", "org.apache.kafka.connect.data.Date":
                    "DATE", "io.debezium.time.Timestamp": "TIMESTAMP(3)",
                    "org.apache.kafka.connect.data.Timestamp": "TIMESTAMP(3)",
                    "io.debezium.time.MicroTimestamp": "TIMESTAMP(6)",
                    "io.debezium.time.NanoTimestamp": "TIMESTAMP(9)",
                    "io.debezium.time.ZonedTimestamp": "TIMESTAMP_LTZ(6)",
                    "io.debezium.time.Time": "TIME(3)", "io.debezium.time.MicroTime": "TIME(6)",
                    "io.debezium.time.Year": "INT", "io.debezium.data.Json": "STRING"}


def connect_type(f: Mapping[str, Any], modes: Sequence[str] = ()) -> str:
    """The Paimon type of a Kafka Connect field schema of Debezium's envelope (its ``type``,
    logical ``name`` and ``parameters``); ``tinyint1-not-bool`` does not apply (Debezium
    says BOOLEAN itself)."""
    if "to-string" in modes:
        return "STRING"
    name = f.get("name")
    if name == "org.apache.kafka.connect.data.Decimal":
        params = f.get("parameters") or {}
        scale = int(params.get("scale", 0))
        precision = int(params.get("connect.decimal.precision", 38))
        return f"DECIMAL({precision}, {scale})" if precision <= 38 else "STRING"
    if isinstance(name, str) and name in _CONNECT_LOGICAL:
        return _CONNECT_LOGICAL[name]
    return _CONNECT_PLAIN.get(str(f.get("type")), "STRING")


# ---------------------------------------------------------------------------- events


def _events(lines: Sequence[str]) -> list[dict[str, Any]]:
    out = []
    for line in lines:
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict):
            out.append(ev)
    return out


def _declared(fmt: str, ev: dict[str, Any], modes: Sequence[str]
              ) -> tuple[dict[str, str], list[str]]:
    """The columns an event types itself, and its primary key (see the module docs)."""
    if fmt == "canal-json":
        spelled = ev.get("mysqlType")
        pks = ev.get("pkNames") or []
        return ({str(k): mysql_type(str(v), modes) for k, v in spelled.items()}
                if isinstance(spelled, dict) else {}), list(pks)
    if fmt == "maxwell-json":
        return {}, list(ev.get("primary_key_columns") or [])
    if fmt == "ogg-json":
        return {}, list(ev.get("primary_keys") or [])
    if fmt == "debezium-json":
        schema = ev.get("schema")
        typed: dict[str, str] = {}
        if isinstance(schema, dict):
            for part in schema.get("fields") or []:
                if isinstance(part, dict) and part.get("field") in ("after", "before"):
                    for f in part.get("fields") or []:
                        if isinstance(f, dict) and "field" in f:
                            typed.setdefault(str(f["field"]), connect_type(f, modes))
        return typed, []
    return {}, []


def _image_columns(fmt: str, ev: dict[str, Any]) -> list[str]:
    """The column names of an event's images, in their order."""
    from pipelines.cdc.formats import FORMATS

    images = FORMATS[fmt].images
    names: list[str] = []
    for image in images(ev) if images is not None else []:
        if isinstance(image, dict):
            names.extend(k for k in image if k not in names)
    return names


def new_table_schema(identifier: str, fmt: str, lines: Sequence[str],
                     options: CreateOptions) -> Schema:
    """The schema of table ``identifier`` created from the sample event ``lines`` of format
    ``fmt`` (see the module docs).

    Raises:
        NoPrimaryKeyError: no primary key given that the table has, none in the events.
        NoColumnsYet: the events name no column.
    """
    modes = options.type_mapping
    typed: dict[str, str] = {}
    columns: list[str] = []
    pks: list[str] = []
    for ev in _events(lines):
        types, keys = _declared(fmt, ev, modes)
        for k, v in types.items():
            typed.setdefault(k, v)
        for name in [*types, *_image_columns(fmt, ev)]:
            if name not in columns:
                columns.append(name)
        pks = pks or [str(k) for k in keys]
    if not columns:
        raise NoColumnsYet(identifier)
    untyped = [c for c in columns if c not in typed]
    if untyped:
        values = sample_values(fmt, lines, untyped)
        for c in untyped:
            typed[c] = "STRING" if "to-string" in modes else infer_column_type(values[c])
    clash = [c for c in options.metadata_columns if c in columns]
    if clash:
        raise SchemaError(f"cannot create table {identifier}: its events have the columns "
                          f"{', '.join(clash)} that --metadata-column also adds")
    keys = list(options.primary_keys)
    if not keys or not set(keys) <= set(columns):
        keys = pks if pks and set(pks) <= set(columns) else []
    if not keys:
        raise NoPrimaryKeyError(identifier, columns, options.primary_keys)
    partitions = (list(options.partition_keys)
                  if options.partition_keys and set(options.partition_keys) <= set(columns)
                  else [])
    metadata = [(c, METADATA_COLUMNS[c]) for c in options.metadata_columns]
    return Schema.of([*((c, typed[c]) for c in columns), *metadata], primary_keys=keys,
                     partition_keys=partitions, options=dict(options.table_conf))
