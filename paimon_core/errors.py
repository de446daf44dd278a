"""The one exception hierarchy of paimon_core.

Every failure raised by this package is a :class:`PaimonError`. Errors coming from fsspec,
pyarrow or fastavro are translated at the edges (``io/`` and the codecs) with ``raise ... from``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class PaimonError(Exception):
    """Root of every error raised by paimon_core."""


class InvalidIdentifierError(PaimonError, ValueError):
    """A database, table, tag or partition name that is not allowed (checked before any IO)."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"invalid identifier {name!r}: {reason}")
        self.name = name
        self.reason = reason


class NotFoundError(PaimonError):
    """Base of the *-does-not-exist errors."""


class DatabaseNotExistError(NotFoundError):
    def __init__(self, database: str) -> None:
        super().__init__(f"database {database!r} does not exist")
        self.database = database


class DatabaseAlreadyExistError(PaimonError):
    def __init__(self, database: str) -> None:
        super().__init__(f"database {database!r} already exists")
        self.database = database


class DatabaseNotEmptyError(PaimonError):
    def __init__(self, database: str) -> None:
        super().__init__(f"database {database!r} is not empty (use cascade=True)")
        self.database = database


class TableNotExistError(NotFoundError):
    def __init__(self, identifier: str, message: str | None = None) -> None:
        super().__init__(message or f"table {identifier!r} does not exist")
        self.identifier = identifier


class WarehouseNotExistError(TableNotExistError):
    """A table looked up in a warehouse path where nothing exists (a wrong ``--warehouse``)."""

    def __init__(self, warehouse: str, identifier: str) -> None:
        super().__init__(identifier, f"warehouse {warehouse!r} does not exist (looking for "
                                     f"table {identifier!r}); check --warehouse / "
                                     "PAIMON_WAREHOUSE")
        self.warehouse = warehouse


class NotAWarehouseError(TableNotExistError):
    """A table looked up in a directory that holds no Paimon warehouse (no ``<db>.db``)."""

    def __init__(self, warehouse: str, identifier: str, detail: str) -> None:
        super().__init__(identifier, f"{warehouse!r} is not a Paimon warehouse ({detail}; "
                                     f"looking for table {identifier!r}); check --warehouse / "
                                     "PAIMON_WAREHOUSE")
        self.warehouse = warehouse


class TableAlreadyExistError(PaimonError):
    def __init__(self, identifier: str) -> None:
        super().__init__(f"table {identifier!r} already exists")
        self.identifier = identifier


class SnapshotNotExistError(NotFoundError):
    """A snapshot, tag or time-travel target that is not (or no longer) there."""


class SnapshotExpiredError(SnapshotNotExistError):
    """A snapshot that existed but has been expired."""


class TagNotExistError(NotFoundError):
    def __init__(self, tag: str) -> None:
        super().__init__(f"tag {tag!r} does not exist")
        self.tag = tag


class FileNotFoundInTableError(NotFoundError):
    """A file referenced by metadata is missing from storage."""

    def __init__(self, path: str) -> None:
        super().__init__(f"file not found: {path}")
        self.path = path


class CorruptMetadataError(PaimonError):
    """A schema, snapshot, manifest, manifest list, hint or data file that cannot be decoded."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"corrupt metadata in {path}: {reason}")
        self.path = path
        self.reason = reason


class SchemaError(PaimonError, ValueError):
    """A schema, data type, option or value that does not fit the table's schema."""


class ImmutableOptionError(SchemaError):
    """A dynamic option (:meth:`FileStoreTable.copy`, a Spark ``df.write`` option), or an
    option a component declares for an existing table, that would change an option fixed for
    the table's life (``bucket``, the keys, ``merge-engine``, ...); ``refused`` says which."""

    def __init__(self, key: str, table_value: str | None, given: str,
                 refused: str = "cannot be overlaid for one job") -> None:
        super().__init__(f"option {key!r} {refused}: the table has {key}={table_value!r}, "
                         f"given {key}={given!r} (it is fixed for the table's life)")
        self.key = key
        self.table_value = table_value
        self.given = given


class CastError(PaimonError, ValueError):
    """A stored value that cannot be read as its column's current type after a type change
    (Paimon Java fails the same read); names the value and both types. ``path`` and
    ``column`` are filled in by the reader that knows them."""

    def __init__(self, value: object, source: str, target: str, reason: str,
                 path: str | None = None, column: str | None = None) -> None:
        where = f"{path}: column {column!r}: " if path is not None else ""
        super().__init__(f"{where}value {value!r} of type {source} cannot be read as "
                         f"{target}: {reason}")
        self.value = value
        self.source = source
        self.target = target
        self.reason = reason
        self.path = path
        self.column = column


class ConfigError(PaimonError, ValueError):
    """A deployment setting (an environment variable, a flag) that is missing or malformed;
    the message names the setting."""

    def __init__(self, setting: str, reason: str) -> None:
        super().__init__(f"{setting}: {reason}")
        self.setting = setting
        self.reason = reason


class UnsupportedError(PaimonError, NotImplementedError):
    """A feature of the format that this implementation does not handle (yet)."""


class FilterError(PaimonError, ValueError):
    """A filter expression that cannot be parsed or applied."""


class StorageError(PaimonError, OSError):
    """A storage operation failed (permission, network, disk full...)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"storage error on {path}: {reason}")
        self.path = path
        self.reason = reason


class CommitConflictError(PaimonError):
    """A commit that cannot be applied on top of the latest snapshot (a file it deletes is no
    longer live, overlapping LSM levels, a bucket count that changed...), or whose retry budget
    ran out. Nothing of it is visible; it may be re-planned from fresh state."""


class CommitStateUnknownError(PaimonError):
    """The commit's outcome cannot be determined (the snapshot write failed in a way that may
    or may not have landed). Nothing was cleaned up: resolve with ``filter_committed`` before
    retrying."""


def did_you_mean(name: str, known: Iterable[str]) -> str | None:
    """The entry of ``known`` closest to ``name`` (difflib's ratio of at least 0.6), which an
    error about a misspelt name suggests; None when none is close."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return close[0] if close else None
