"""ALTER TABLE: schema changes and their atomic commit.

Mirrors ``org.apache.paimon.schema.SchemaChange`` and ``SchemaManager.commitChanges`` of Paimon
0.9 (``generateTableSchema`` + ``commit``): the changes are applied in order on top of the latest
schema ``schema-N`` and the result is published as ``schema-<N+1>`` with one atomic
create-if-absent (:meth:`FileIO.try_create`). When another writer published ``schema-<N+1>``
first, the changes are re-applied on top of the new latest schema (bounded retries), so two
concurrent ALTERs both land, in some order, with unique field ids.

Rules (Java 0.9 unless marked *stricter*):

* New columns get ids ``highestFieldId + 1, ...`` (the column first, then its nested ROW fields
  depth-first, as ``ReassignFieldId``); ids are never reused, ``highestFieldId`` never shrinks.
  Added columns must be nullable.
* Partition and primary-key columns cannot be renamed or dropped; partition columns cannot be
  retyped; *stricter:* primary-key columns cannot be retyped either (Java 0.9 allows it, which
  would change the key's BinaryRow layout under old files; later Java versions forbid it).
* Type changes are limited to widenings every reader evaluates identically (*stricter* than Java
  0.9, whose explicit casts also allow narrowing and string/number conversions):
  TINYINT -> SMALLINT -> INT -> BIGINT, integers and FLOAT -> DOUBLE, CHAR/VARCHAR(n) ->
  VARCHAR(m >= n), BINARY/VARBINARY(n) -> VARBINARY(m >= n), DECIMAL(p, s) -> DECIMAL(q >= p, s).
  CHAR and BINARY targets are refused because Java pads old values to the new length on read.
* Nullability: a primary-key column cannot become nullable (Java); *stricter:* a column of a table
  with snapshots becomes NOT NULL only if the latest snapshot holds no null in it (``null_free``,
  an ``IS NULL`` read by ``FileStoreTable.alter``; Java 0.9 never checks, >= 1.0 refuses).
* *Stricter:* once the table has snapshots, the nullability or comment of a field nested in a
  ROW cannot change: it changes the column's type, and Java 0.9 then fails to read every older
  file ("Only support column type evolution in atomic data type"; it accepts the ALTER).
* Options, when the table has snapshots: the immutable options of 0.9 (``bucket-key``,
  ``merge-engine``, ``sequence.field``, ...) cannot change; ``bucket`` cannot be reset, changed
  from or to -1 (a fixed N -> M change is allowed, as in 0.9: existing partitions must then be
  rescaled with INSERT OVERWRITE, and the committer refuses writes that would mix counts).
  Option values are validated (numbers, booleans, durations, enums, referenced columns) and the
  whole resulting schema goes through :func:`validate_table_schema`.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from paimon_core.errors import CommitConflictError, PaimonError, SchemaError, TableNotExistError
from paimon_core.io.file_io import FileIO
from paimon_core.option_validation import check_alter_option, validate_options
from paimon_core.options import CoreOptions
from paimon_core.schema_builder import validate_table_schema
from paimon_core.schema_manager import SchemaManager
from paimon_core.snapshot_manager import SnapshotManager
from paimon_core.spec.schema import CURRENT_VERSION, TableSchema, encode_schema
from paimon_core.spec.system_fields import is_system_field
from paimon_core.types import (
    INTEGER_ROOTS,
    ArrayType,
    AtomicType,
    DataField,
    DataType,
    MapType,
    MultisetType,
    RowType,
    TypeRoot,
    highest_field_id,
    parse_sql_type,
    reassign_field_ids,
)

__all__ = [
    "AddColumn",
    "DropColumn",
    "Move",
    "MoveType",
    "RemoveOption",
    "RenameColumn",
    "SchemaChange",
    "SetOption",
    "UpdateColumnComment",
    "UpdateColumnNullability",
    "UpdateColumnPosition",
    "UpdateColumnType",
    "UpdateComment",
    "apply_changes",
    "check_type_change",
    "commit_changes",
    "null_candidates",
    "publish_schema",
    "publish_schema_file",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_RETRIES = 50


def _type(t: DataType | str) -> DataType:
    return parse_sql_type(t) if isinstance(t, str) else t


def _path(names: str | Sequence[str]) -> tuple[str, ...]:
    out = (names,) if isinstance(names, str) else tuple(names)
    if not out or any(not isinstance(n, str) or not n for n in out):
        raise SchemaError(f"invalid column path {names!r}")
    return out


class MoveType(enum.Enum):
    """``SchemaChange.Move.MoveType``."""

    FIRST = "FIRST"
    AFTER = "AFTER"
    BEFORE = "BEFORE"
    LAST = "LAST"


@dataclass(frozen=True, slots=True)
class Move:
    """``SchemaChange.Move``: where to put ``field_name`` (relative to ``reference``)."""

    field_name: str
    type: MoveType
    reference: str | None = None


@dataclass(frozen=True, slots=True)
class SetOption:
    key: str
    value: str


@dataclass(frozen=True, slots=True)
class RemoveOption:
    key: str


@dataclass(frozen=True, slots=True)
class UpdateComment:
    """Set (or with None remove) the table comment."""

    comment: str | None


@dataclass(frozen=True, slots=True)
class AddColumn:
    """Add a top-level column (nullable), at the end, ``first`` or ``after`` a column."""

    name: str
    type: DataType | str
    description: str | None = None
    first: bool = False
    after: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", _type(self.type))
        if self.first and self.after is not None:
            raise SchemaError("give at most one of first / after")


@dataclass(frozen=True, slots=True)
class RenameColumn:
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class DropColumn:
    name: str


@dataclass(frozen=True, slots=True)
class UpdateColumnType:
    """Change a top-level column's type (widening only, see the module docs).

    ``keep_nullability``: keep the column's nullability instead of ``new_type``'s (Java's
    ``updateColumnType(name, type, keepNullability)``; default False as in Java).
    """

    name: str
    new_type: DataType | str
    keep_nullability: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "new_type", _type(self.new_type))


@dataclass(frozen=True, slots=True)
class UpdateColumnNullability:
    """Make a (possibly nested: a path of names) column nullable or NOT NULL."""

    field_names: str | tuple[str, ...]
    nullable: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "field_names", _path(self.field_names))


@dataclass(frozen=True, slots=True)
class UpdateColumnComment:
    """Set the description of a (possibly nested) column."""

    field_names: str | tuple[str, ...]
    description: str | None

    def __post_init__(self) -> None:
        object.__setattr__(self, "field_names", _path(self.field_names))


@dataclass(frozen=True, slots=True)
class UpdateColumnPosition:
    move: Move


SchemaChange = (
    SetOption | RemoveOption | UpdateComment | AddColumn | RenameColumn | DropColumn
    | UpdateColumnType | UpdateColumnNullability | UpdateColumnComment | UpdateColumnPosition
)


# ---------------------------------------------------------------------------------------------
# type changes


def _order(root: TypeRoot) -> int:
    return [TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT].index(root)


def check_type_change(name: str, old: DataType, new: DataType) -> None:
    """Raise :class:`SchemaError` unless ``old -> new`` is an allowed widening (nullability is
    checked separately)."""
    if old.with_nullable(True) == new.with_nullable(True):
        return
    bad = SchemaError(
        f"column {name!r}: type {old.sql()} cannot be changed to {new.sql()} (only widening "
        "changes are allowed: TINYINT->SMALLINT->INT->BIGINT, integers/FLOAT->DOUBLE, "
        "CHAR/VARCHAR(n)->VARCHAR(m>=n), BINARY/VARBINARY(n)->VARBINARY(m>=n), "
        "DECIMAL(p,s)->DECIMAL(q>=p,s))"
    )
    if not isinstance(old, AtomicType) or not isinstance(new, AtomicType):
        raise bad
    o, n = old.root, new.root
    if o in INTEGER_ROOTS and n in INTEGER_ROOTS:
        if _order(o) < _order(n):
            return
        raise bad
    if n is TypeRoot.DOUBLE and (o in INTEGER_ROOTS or o is TypeRoot.FLOAT):
        return
    if n is TypeRoot.VARCHAR and o in (TypeRoot.CHAR, TypeRoot.VARCHAR):
        if (new.length or 0) >= (old.length or 0):
            return
        raise bad
    if n is TypeRoot.VARBINARY and o in (TypeRoot.BINARY, TypeRoot.VARBINARY):
        if (new.length or 0) >= (old.length or 0):
            return
        raise bad
    if o is TypeRoot.DECIMAL and n is TypeRoot.DECIMAL:
        if new.scale == old.scale and (new.precision or 0) >= (old.precision or 0):
            return
        raise bad
    raise bad


# ---------------------------------------------------------------------------------------------
# applying changes (pure)


def _index(fields: list[DataField], name: str) -> int:
    for i, f in enumerate(fields):
        if f.name == name:
            return i
    raise SchemaError(f"column {name!r} does not exist (columns: {[f.name for f in fields]})")


def _update_nested(
    fields: list[DataField], path: tuple[str, ...], fn: Callable[[DataField], DataField]
) -> list[DataField]:
    i = _index(fields, path[0])
    f = fields[i]
    out = list(fields)
    if len(path) == 1:
        out[i] = fn(f)
        return out
    if not isinstance(f.type, RowType):
        raise SchemaError(f"column {f.name!r} of type {f.type.sql()} has no nested fields")
    inner = _update_nested(list(f.type.fields), path[1:], fn)
    out[i] = replace(f, type=RowType(tuple(inner), f.type.nullable))
    return out


def _field_at(fields: Sequence[DataField], path: tuple[str, ...]) -> DataField:
    f = fields[_index(list(fields), path[0])]
    if len(path) == 1:
        return f
    if not isinstance(f.type, RowType):
        raise SchemaError(f"column {f.name!r} of type {f.type.sql()} has no nested fields")
    return _field_at(f.type.fields, path[1:])


def _move(fields: list[DataField], move: Move) -> list[DataField]:
    """``SchemaManager.applyMove`` (0.9)."""
    out = list(fields)
    idx = _index(out, move.field_name)
    if move.type in (MoveType.FIRST, MoveType.LAST):
        target = 0 if move.type is MoveType.FIRST else len(out) - 1
        if target == idx:
            raise SchemaError(f"cannot move column {move.field_name!r} onto itself")
        out.insert(target, out.pop(idx))
        return out
    if move.reference is None:
        raise SchemaError(f"move {move.type.value} needs a reference column")
    ref = _index(out, move.reference)
    if ref == idx:
        raise SchemaError(f"cannot move column {move.field_name!r} relative to itself")
    target = ref
    if move.type is MoveType.AFTER and idx > ref:
        target += 1
    if move.type is MoveType.BEFORE and idx < ref:
        target -= 1
    target = min(target, len(out) - 1)
    out.insert(target, out.pop(idx))
    return out


def _check_nested_path(path: tuple[str, ...], has_snapshots: bool, what: str) -> None:
    """Paimon 0.9 reads a file column as is only when its type equals the table's ignoring
    the *outer* nullability (``SchemaEvolutionUtil``); any other difference in a ROW/ARRAY/MAP
    column fails with "Only support column type evolution in atomic data type". A nested
    field's nullability or comment is part of the type, so changing it would make every
    existing file unreadable by Java 0.9 (checked with the oracle)."""
    if len(path) > 1 and has_snapshots:
        raise SchemaError(
            f"cannot change the {what} of nested field {'.'.join(path)!r} of a table with "
            "snapshots: Paimon 0.9 could no longer read its existing files"
        )


def _check_not_null(path: tuple[str, ...], has_snapshots: bool, null_free: Collection[str]) -> None:
    if has_snapshots and not (len(path) == 1 and path[0] in null_free):
        raise SchemaError(
            f"column {'.'.join(path)!r}: a nullable column cannot become NOT NULL while the "
            "table may hold a null in it (its latest snapshot has one, or it is nested)"
        )


def null_candidates(schema: TableSchema, changes: Sequence[SchemaChange]) -> list[str]:
    """Top-level columns ``changes`` make NOT NULL (``null_free`` of :func:`apply_changes`)."""
    out = []
    for c in changes:
        name = (c.field_names[0] if isinstance(c, UpdateColumnNullability) and not c.nullable
                and len(c.field_names) == 1 else
                c.name if isinstance(c, UpdateColumnType) and not c.keep_nullability
                and not _type(c.new_type).nullable else None)
        if name in schema.field_names and schema.field(str(name)).type.nullable:
            out.append(str(name))
    return out


def _with_nullable(nullable: bool) -> Callable[[DataField], DataField]:
    return lambda f: replace(f, type=f.type.with_nullable(nullable))


def _with_description(description: str | None) -> Callable[[DataField], DataField]:
    return lambda f: replace(f, description=description)


def _check_key_column(schema: TableSchema, name: str, what: str) -> None:
    if name in schema.partition_keys:
        raise SchemaError(f"cannot {what} partition key column {name!r}")
    if name in schema.primary_keys:
        raise SchemaError(f"cannot {what} primary key column {name!r}")


def _check_new_name(fields: list[DataField], name: str) -> None:
    if not isinstance(name, str) or not name or name.strip() != name:
        raise SchemaError(f"invalid column name {name!r}")
    if is_system_field(name):
        raise SchemaError(f"column name {name!r} is reserved by Paimon")
    if any(f.name == name for f in fields):
        raise SchemaError(f"column {name!r} already exists")


def _upgrade_options(old: TableSchema) -> dict[str, str]:
    """Options of ``old`` with the version-dependent defaults made explicit, so that writing
    the new schema as version 3 does not change their meaning (§2: version <= 1 without
    ``bucket`` means bucket 1; version <= 2 without ``file.format`` means orc)."""
    options = dict(old.options)
    if old.version <= 1 and CoreOptions.BUCKET not in options:
        options[CoreOptions.BUCKET] = "1"
    if old.version <= 2 and CoreOptions.FILE_FORMAT not in options:
        options[CoreOptions.FILE_FORMAT] = "orc"
    return options


def apply_changes(
    old: TableSchema, changes: Sequence[SchemaChange], *, has_snapshots: bool,
    null_free: Collection[str] = (),
) -> TableSchema:
    """The schema ``old.id + 1`` that results from applying ``changes`` in order
    (``SchemaManager.generateTableSchema``). ``null_free``: top-level columns known to hold no
    null in the latest snapshot (they may become NOT NULL). Pure; raises
    :class:`SchemaError`."""
    old_options = _upgrade_options(old)
    options = dict(old_options)
    fields = list(old.fields)
    highest = max(old.highest_field_id, highest_field_id(old.fields))
    comment = old.comment
    for change in changes:
        if isinstance(change, SetOption):
            if not isinstance(change.key, str) or not isinstance(change.value, str):
                raise SchemaError(f"option {change.key!r}={change.value!r} must be strings")
            if has_snapshots:
                check_alter_option(change.key, old_options.get(change.key), change.value)
            if change.key in (CoreOptions.PRIMARY_KEY, CoreOptions.PARTITION):
                raise SchemaError(f"option {change.key!r} cannot be altered")
            options[change.key] = change.value
        elif isinstance(change, RemoveOption):
            if has_snapshots:
                check_alter_option(change.key, old_options.get(change.key), None)
            options.pop(change.key, None)
        elif isinstance(change, UpdateComment):
            comment = change.comment
        elif isinstance(change, AddColumn):
            _check_new_name(fields, change.name)
            t = change.type
            assert not isinstance(t, str)
            if not t.nullable:
                raise SchemaError(f"added column {change.name!r} cannot be NOT NULL")
            counter = [highest + 1]
            new_field = DataField(counter[0], change.name, reassign_field_ids(t, counter),
                                  change.description)
            highest = counter[0]
            if change.first:
                fields.insert(0, new_field)
            elif change.after is not None:
                fields.insert(_index(fields, change.after) + 1, new_field)
            else:
                fields.append(new_field)
        elif isinstance(change, RenameColumn):
            _check_key_column(old, change.old, "rename")
            i = _index(fields, change.old)
            _check_new_name(fields, change.new)
            fields[i] = replace(fields[i], name=change.new)
        elif isinstance(change, DropColumn):
            _check_key_column(old, change.name, "drop")
            fields.pop(_index(fields, change.name))
            if not fields:
                raise SchemaError("cannot drop all columns of a table")
        elif isinstance(change, UpdateColumnType):
            _check_key_column(old, change.name, "change the type of")
            i = _index(fields, change.name)
            cur = fields[i]
            target = change.new_type
            assert not isinstance(target, str)
            if change.keep_nullability:
                target = target.with_nullable(cur.type.nullable)
            check_type_change(cur.name, cur.type, target)
            if cur.type.nullable and not target.nullable:
                _check_not_null((cur.name,), has_snapshots, null_free)
            fields[i] = replace(cur, type=target)
        elif isinstance(change, UpdateColumnNullability):
            path = change.field_names
            assert isinstance(path, tuple)
            _check_nested_path(path, has_snapshots, "nullability")
            if len(path) == 1 and change.nullable and path[0] in old.primary_keys:
                raise SchemaError(f"cannot make primary key column {path[0]!r} nullable")
            target_field = _field_at(fields, path)
            if target_field.type.nullable and not change.nullable:
                _check_not_null(path, has_snapshots, null_free)
            fields = _update_nested(fields, path, _with_nullable(change.nullable))
        elif isinstance(change, UpdateColumnComment):
            path = change.field_names
            assert isinstance(path, tuple)
            _check_nested_path(path, has_snapshots, "comment")
            fields = _update_nested(fields, path, _with_description(change.description))
        elif isinstance(change, UpdateColumnPosition):
            fields = _move(fields, change.move)
        else:
            raise SchemaError(f"unsupported schema change {change!r}")
    new = TableSchema(
        id=old.id + 1, fields=tuple(fields), partition_keys=old.partition_keys,
        primary_keys=old.primary_keys, options=options, comment=comment,
        time_millis=int(time.time() * 1000), version=CURRENT_VERSION,
        highest_field_id=max(highest, highest_field_id(fields)),
    )
    _validate_ids(new)
    validate_table_schema(new)
    validate_options(new)
    return new


def _validate_ids(schema: TableSchema) -> None:
    seen: set[int] = set()

    def visit(t: DataType) -> None:
        if isinstance(t, RowType):
            for f in t.fields:
                add(f)
        elif isinstance(t, (ArrayType, MultisetType)):
            visit(t.element)
        elif isinstance(t, MapType):
            visit(t.key)
            visit(t.value)

    def add(f: DataField) -> None:
        if f.id in seen:  # pragma: no cover - guards the invariant
            raise SchemaError(f"field id {f.id} used twice in schema {schema.id}")
        seen.add(f.id)
        visit(f.type)

    for f in schema.fields:
        add(f)


# ---------------------------------------------------------------------------------------------
# committing


def commit_changes(
    file_io: FileIO,
    table_path: str,
    changes: Sequence[SchemaChange],
    *,
    max_retries: int = DEFAULT_MAX_RETRIES,
    sleep: Callable[[float], None] = time.sleep,
    null_free: Collection[str] = (),
) -> TableSchema:
    """Apply ``changes`` to the latest schema and publish ``schema-<N+1>`` atomically
    (``SchemaManager.commitChanges``).

    Args:
        file_io: storage.
        table_path: the table directory.
        changes: the changes, applied in order.
        max_retries: how often to re-apply after losing the race for the next schema id.
        sleep: back-off between attempts (injectable for tests).
        null_free: columns proven to hold no null (see :func:`apply_changes`).

    Returns:
        The new latest schema.

    Raises:
        TableNotExistError: no schema at ``table_path``.
        SchemaError: a change is not allowed (nothing is written).
        PaimonError: storage failures, or the retry budget ran out.
    """
    if not changes:
        raise SchemaError("no schema changes given")
    schemas = SchemaManager(file_io, table_path)
    snapshots = SnapshotManager(file_io, table_path)
    lost: list[int] = []
    while True:
        old = schemas.latest()
        if old is None:
            raise TableNotExistError(table_path)
        has_snapshots = snapshots.latest_snapshot_id() is not None
        new = apply_changes(old, changes, has_snapshots=has_snapshots, null_free=null_free)
        if publish_schema_file(file_io, schemas.schema_path(new.id), encode_schema(new)):
            return new
        lost.append(new.id)
        if len(lost) > max_retries:
            raise PaimonError(
                f"ALTER TABLE gave up after {len(lost)} attempts: other schema changes kept "
                f"winning the race for schema ids {lost}"
            )
        log.info("schema %s was created concurrently; re-applying the changes", new.id)
        sleep(min(0.005 * 2 ** min(len(lost), 8), 1.0))


def publish_schema(file_io: FileIO, table_path: str, schema: TableSchema) -> None:
    """Publish ``schema`` (made by :func:`apply_changes` from schema ``schema.id - 1``) as
    ``schema-<id>``, exactly as computed: data files may already carry its id and field ids,
    so it is not re-applied on top of a newer schema (as :func:`commit_changes` does). A
    schema file already holding exactly ``schema`` counts as published (a retry).

    Raises:
        CommitConflictError: another schema change took id ``schema.id`` first.
    """
    path = SchemaManager(file_io, table_path).schema_path(schema.id)
    if not publish_schema_file(file_io, path, encode_schema(schema)):
        raise CommitConflictError(
            f"schema {schema.id} of {table_path} was created by another writer first: the "
            "schema change and the rows written for it are not committed; retry the write")


def publish_schema_file(file_io: FileIO, path: str, data: bytes) -> bool:
    """Create ``path`` only if absent. A refusal or an error proves nothing (a retried request
    may have created it for us): the file is read back and compared (reliability rule 2)."""
    error: PaimonError | None = None
    try:
        if file_io.try_create(path, data):
            return True
    except PaimonError as e:
        error = e
    file_io.invalidate(path)
    try:
        existing = file_io.read_bytes(path)
    except PaimonError:
        if error is not None:
            raise error from None
        return False
    return existing == data
