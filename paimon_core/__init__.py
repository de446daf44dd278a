"""Apache Paimon, in pure Python: the public API.

What an application needs is importable from here (as ``deltalake/__init__.py`` does for
delta-rs); the submodules are the implementation and may move, except the public families named
below. ``import paimon_core`` loads only the error types: every other name is imported on first
use, and a process that only reads never loads the write, compaction, expiry or inspection code,
fsspec (local tables) or pandas before its first scan (never pyspark or dagster);
``tests/test_startup_cost.py`` guards this.

Example:
    >>> import tempfile
    >>> import pyarrow as pa
    >>> from paimon_core import FileSystemCatalog, Schema
    >>> catalog = FileSystemCatalog(tempfile.mkdtemp())
    >>> data = pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]})
    >>> table = catalog.create_table("db.t", Schema.from_arrow(data.schema))
    >>> builder = table.new_batch_write_builder()      # one commit user for both phases
    >>> with builder.new_write() as write:
    ...     write.write_arrow(data)
    ...     messages = write.prepare_commit()
    >>> builder.new_commit().commit(messages)
    [1]
    >>> table.to_arrow().num_rows
    2

The names, by concept (the README's "The front door" lists them too):

* **catalog and table**: :class:`FileSystemCatalog`, :class:`Identifier`,
  :class:`FileStoreTable`, :class:`Snapshot`, :class:`CommitKind`, :class:`CoreOptions`
  (option keys are its constants).
* **reading**: :class:`ReadBuilder` -> :class:`TableScan` -> :class:`Plan` of
  :class:`DataSplit` -> :class:`TableRead`; streaming: :class:`StreamTableScan`,
  :func:`read_stream_plan`; :class:`RowKind` (``+I``/``-U``/``+U``/``-D``).
* **writing**: :class:`BatchWriteBuilder` (one commit user for both phases) ->
  :class:`TableWrite` -> :class:`CommitMessage` -> :class:`BatchTableCommit` /
  :class:`TableCommit`; per-commit settings: :class:`CommitOptions`.
* **schema and types**: :class:`Schema` (builder), :class:`TableSchema`, :data:`SchemaChange`
  (its changes, :class:`~paimon_core.schema_change.AddColumn` ..., live in
  :mod:`paimon_core.schema_change`), :class:`DataField`, :data:`DataType`, :class:`RowType`,
  :func:`parse_sql_type`.
* **predicates**: :data:`Predicate`, :func:`parse_filters` (the oracle's filter syntax).
* **maintenance**: :func:`compact_table`, :func:`compact_bucket` over
  :func:`live_bucket_files`; :class:`ExpireSnapshots` with :class:`ExpireConfig`;
  :func:`remove_orphan_files`; :class:`Consumer` / :class:`ConsumerManager`.
* **errors**: :class:`PaimonError` is the root of every error raised; the leaves a caller
  usually catches are here, all of them in :mod:`paimon_core.errors`.

The engine helpers our Spark jobs and Dagster assets use (bucket hashing, compaction planning,
manifest rows, type roots, predicate builders, ...) live in :mod:`paimon_core.integration`, a
less stable surface. A name that left this module in that move still resolves here for one
release, with a :class:`DeprecationWarning` naming its new module.

One declaration: the ``Name as Name`` imports below (the eager error types and the
``TYPE_CHECKING`` block) are what type checkers see, and :func:`_read_exports` reads the same
lines back with :mod:`ast` for the lazy ``__getattr__`` and ``__all__`` (the idea of Scientific
Python's ``lazy_loader.attach_stub``, without a stub file); :mod:`paimon_core.integration` is
declared the same way. A ``TYPE_CHECKING`` import not written ``Name as Name`` is refused.
"""

import ast
import importlib
import warnings
from typing import TYPE_CHECKING, Any, NamedTuple

from paimon_core.errors import (
    CommitConflictError as CommitConflictError,
    CommitStateUnknownError as CommitStateUnknownError,
    ConfigError as ConfigError,
    ImmutableOptionError as ImmutableOptionError,
    PaimonError as PaimonError,
    SchemaError as SchemaError,
    TableNotExistError as TableNotExistError,
    UnsupportedError as UnsupportedError,
)

# Every other name is imported on first use (PEP 562): ``import paimon_core`` stays cheap for a
# process that only reads (a CLI call, a Spark task, a Dagster step) and never loads the write,
# compaction, expiry or inspection code, nor fsspec. Type checkers see the imports below.
if TYPE_CHECKING:
    from paimon_core.catalog import (
        FileSystemCatalog as FileSystemCatalog,
    )
    from paimon_core.commit.options import (
        CommitOptions as CommitOptions,
    )
    from paimon_core.commit.table_commit import (
        TableCommit as TableCommit,
    )
    from paimon_core.commit_message import (
        CommitMessage as CommitMessage,
    )
    from paimon_core.compact import (
        compact_bucket as compact_bucket,
        compact_table as compact_table,
        live_bucket_files as live_bucket_files,
    )
    from paimon_core.consumer import (
        Consumer as Consumer,
        ConsumerManager as ConsumerManager,
    )
    from paimon_core.expire import (
        ExpireSnapshots as ExpireSnapshots,
    )
    from paimon_core.expire_config import (
        ExpireConfig as ExpireConfig,
    )
    from paimon_core.identifier import (
        Identifier as Identifier,
    )
    from paimon_core.options import (
        CoreOptions as CoreOptions,
    )
    from paimon_core.orphans import (
        remove_orphan_files as remove_orphan_files,
    )
    from paimon_core.read.stream import (
        read_stream_plan as read_stream_plan,
    )
    from paimon_core.read.table_read import (
        TableRead as TableRead,
    )
    from paimon_core.scan.predicate import (
        Predicate as Predicate,
        parse_filters as parse_filters,
    )
    from paimon_core.scan.split import (
        DataSplit as DataSplit,
        Plan as Plan,
    )
    from paimon_core.scan.streaming import (
        StreamTableScan as StreamTableScan,
    )
    from paimon_core.schema_builder import (
        Schema as Schema,
    )
    from paimon_core.schema_change import (
        SchemaChange as SchemaChange,
    )
    from paimon_core.spec.row_kind import (
        RowKind as RowKind,
    )
    from paimon_core.spec.schema import (
        TableSchema as TableSchema,
    )
    from paimon_core.spec.snapshot import (
        CommitKind as CommitKind,
        Snapshot as Snapshot,
    )
    from paimon_core.table import (
        FileStoreTable as FileStoreTable,
        ReadBuilder as ReadBuilder,
        TableScan as TableScan,
    )
    from paimon_core.types import (
        DataField as DataField,
        DataType as DataType,
        RowType as RowType,
        parse_sql_type as parse_sql_type,
    )
    from paimon_core.write.builder import (
        BatchTableCommit as BatchTableCommit,
        BatchWriteBuilder as BatchWriteBuilder,
    )
    from paimon_core.write.table_write import (
        TableWrite as TableWrite,
    )



class _Exports(NamedTuple):  # not a dataclass: dataclasses imports inspect (start-up cost)
    """What a module re-exports: ``lazy`` name -> defining module, ``eager`` names."""

    lazy: dict[str, str]
    eager: tuple[str, ...]

    @property
    def names(self) -> list[str]:
        """The module's ``__all__``: every re-exported name, sorted."""
        return sorted({*self.lazy, *self.eager})

    def load(self, name: str) -> Any:
        """The value of lazily exported ``name`` (imports its module)."""
        return getattr(importlib.import_module(self.lazy[name]), name)


def _explicit(node: ast.ImportFrom) -> list[str]:
    """The ``Name as Name`` (explicit re-export) aliases of one import."""
    return [a.name for a in node.names if a.asname == a.name]


def _declared(node: ast.ImportFrom, source_file: str) -> list[str]:
    """The names of one ``TYPE_CHECKING`` import, every one of them a ``Name as Name``: a plain
    or renamed import there would be seen by type checkers and missing at run time."""
    bad = [a.name for a in node.names if a.asname != a.name]
    if bad:
        raise ImportError(f"{source_file}:{node.lineno}: lazy re-export {bad[0]!r} of "
                          f"{node.module} must be written '{bad[0]} as {bad[0]}'")
    return _explicit(node)


def _is_type_checking(node: ast.If) -> bool:
    """Whether ``node`` is the ``if TYPE_CHECKING:`` block."""
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _read_exports(source_file: str) -> _Exports:
    """The re-exports a module declares in its head, the source before its first top-level
    ``def`` or ``class`` (the module docstring: one declaration); only the head is parsed,
    which keeps ``import paimon_core`` as cheap as a hand-written map."""
    with open(source_file, encoding="utf-8") as f:
        head = f.read()
    for first_code in ("\ndef ", "\nclass "):
        head = head.split(first_code, 1)[0]
    tree = ast.parse(head, source_file)
    lazy: dict[str, str] = {}
    eager: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            eager.extend(_explicit(node))
        elif isinstance(node, ast.If) and _is_type_checking(node):
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.module:
                    lazy.update(dict.fromkeys(_declared(stmt, source_file), stmt.module))
    return _Exports(lazy, tuple(eager))


_EXPORTS = _read_exports(__file__)
__all__ = _EXPORTS.names

# Names that left the front door (issue 29) and their new module, beyond
# ``paimon_core.integration`` (whose own declaration lists its names): warn and forward for one
# release, then they go.
_MOVED: dict[str, tuple[str, ...]] = {
    "paimon_core.errors": (
        "CorruptMetadataError", "DatabaseAlreadyExistError", "DatabaseNotEmptyError",
        "DatabaseNotExistError", "FileNotFoundInTableError", "FilterError",
        "InvalidIdentifierError", "NotAWarehouseError", "NotFoundError", "SnapshotExpiredError",
        "SnapshotNotExistError", "StorageError", "TableAlreadyExistError", "TagNotExistError",
        "WarehouseNotExistError",
    ),
    "paimon_core.schema_change": (
        "AddColumn", "DropColumn", "Move", "MoveType", "RemoveOption", "RenameColumn",
        "SetOption", "UpdateColumnComment", "UpdateColumnNullability", "UpdateColumnPosition",
        "UpdateColumnType", "UpdateComment",
    ),
}


def _moved_to(name: str) -> str | None:
    """The module a name that left the front door lives in now, or None."""
    for module, names in _MOVED.items():
        if name in names:
            return module
    integration = importlib.import_module("paimon_core.integration")  # cheap: lazy as well
    if name in integration.__all__:
        return "paimon_core.integration"
    return None


def __getattr__(name: str) -> Any:
    """Import a public name (or a submodule, e.g. ``paimon_core.fsck``) on first access; a name
    that moved out warns (``DeprecationWarning``) and forwards to its new module."""
    if name in _EXPORTS.lazy:
        value: Any = _EXPORTS.load(name)
        globals()[name] = value
        return value
    moved = _moved_to(name)
    if moved is not None:
        warnings.warn(
            f"paimon_core.{name} moved to {moved}: import it from there "
            f"(the alias in paimon_core goes in the next release)",
            DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(moved), name)
    try:
        value = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
