"""The command-line arguments that reach a table and its storage, one home for ``paimon``'s
commands and for the Spark jobs of ``pipelines`` (``--storage-option`` / ``--option``
``KEY=VALUE``, repeatable): parsed once, a malformed item refused with a
:class:`~paimon_core.errors.ConfigError` naming the flag and the item."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import ConfigError
from paimon_core.table import FileStoreTable

__all__ = [
    "STORAGE_OPTION",
    "add_storage_option_arg",
    "key_values",
    "open_catalog",
    "open_table",
    "storage_options",
]

#: the flag of a storage option (``s3.endpoint=...``; :mod:`paimon_core.io`)
STORAGE_OPTION = "--storage-option"


def key_values(items: Iterable[str] | None, flag: str) -> dict[str, str]:
    """The ``KEY=VALUE`` items of a repeatable ``flag`` as a dict (key and value stripped,
    the value may hold ``=``; a later key wins).

    Raises:
        ConfigError: an item without ``=`` or with an empty key, named with its flag.
    """
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(flag, f"expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def add_storage_option_arg(parser: argparse.ArgumentParser, **kwargs: Any) -> None:
    """Add the repeatable ``--storage-option KEY=VALUE`` (``kwargs``: e.g. ``default``)."""
    parser.add_argument(STORAGE_OPTION, action="append", metavar="KEY=VALUE",
                        help="storage option, e.g. s3.endpoint=http://127.0.0.1:9000 "
                             "(repeatable)", **kwargs)


def storage_options(args: argparse.Namespace) -> dict[str, str]:
    """The ``--storage-option`` items of ``args`` (none given: empty)."""
    return key_values(getattr(args, "storage_option", None), STORAGE_OPTION)


def open_catalog(args: argparse.Namespace) -> FileSystemCatalog:
    """The catalog of ``--warehouse`` with the ``--storage-option`` items."""
    return FileSystemCatalog(args.warehouse, storage_options(args))


def open_table(args: argparse.Namespace) -> FileStoreTable:
    """The ``--table`` of :func:`open_catalog` (raises ``TableNotExistError``)."""
    return open_catalog(args).get_table(args.table)
