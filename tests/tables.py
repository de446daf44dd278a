"""Table helpers shared by the test suites: one way to create a table in a temporary
warehouse and one way to commit rows to it.

The fixtures built on these (``warehouse``, ``catalog``) live in ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from paimon_core.catalog import FileSystemCatalog
from paimon_core.schema_builder import Schema
from paimon_core.table import FileStoreTable
from paimon_core.types import DataType

Columns = Sequence[tuple[str, DataType | str]]

#: the commit user of :func:`write_rows` unless told otherwise
USER = "u"


def make_catalog(warehouse: str | Path, storage: Mapping[str, str] | None = None
                 ) -> FileSystemCatalog:
    """A catalog over ``warehouse`` (a local path or a URL) with storage/catalog ``options``."""
    return FileSystemCatalog(str(warehouse), storage)


def make_table(
    where: str | Path | FileSystemCatalog,
    columns: Columns,
    *,
    name: str = "db.t",
    primary_keys: Sequence[str] = (),
    partition_keys: Sequence[str] = (),
    options: Mapping[str, str] | None = None,
    storage: Mapping[str, str] | None = None,
) -> FileStoreTable:
    """Create table ``name`` (``db.table``) with ``columns`` (``(name, SQL type)`` pairs) in
    ``where``: a warehouse path / URL (a new catalog, with ``storage`` options) or a catalog.

    Only the options given are set: a test that wants ``bucket`` or ``write-only`` says so.
    """
    catalog = where if isinstance(where, FileSystemCatalog) else make_catalog(where, storage)
    return catalog.create_table(name, Schema.of(
        columns, partition_keys=partition_keys, primary_keys=primary_keys, options=options))


#: the small partitioned table of the scan, maintenance and change tests
PT_ID_V: list[tuple[str, str]] = [("pt", "STRING"), ("id", "INT"), ("v", "STRING")]


def pk_table(where: str | Path | FileSystemCatalog, name: str = "db.pk", *,
             storage: Mapping[str, str] | None = None, **options: str) -> FileStoreTable:
    """The :data:`PT_ID_V` primary-key table (partition ``pt``, key ``(pt, id)``),
    ``bucket=2`` and ``write-only`` unless told otherwise: no inline compaction, so every
    commit makes exactly the snapshots and files a test declares (pass
    ``**{"write-only": "false"}`` for a writer that compacts like Java's)."""
    return make_table(where, PT_ID_V, name=name, partition_keys=["pt"],
                      primary_keys=["pt", "id"], storage=storage,
                      options={"bucket": "2", "write-only": "true", **options})


def append_table(where: str | Path | FileSystemCatalog, name: str = "db.ap", *,
                 storage: Mapping[str, str] | None = None, **options: str) -> FileStoreTable:
    """The :data:`PT_ID_V` append table (partition ``pt``, unaware bucket unless told
    otherwise), ``write-only`` unless told otherwise."""
    return make_table(where, PT_ID_V, name=name, partition_keys=["pt"], storage=storage,
                      options={"write-only": "true", **options})


def write_rows(
    table: FileStoreTable,
    data: pa.Table,
    identifier: int | None = None,
    *,
    user: str = USER,
    row_kind_column: str | None = None,
) -> list[int]:
    """One write + commit of ``data`` by ``user`` (with ``identifier`` when given, else a
    batch commit); returns the ids of the snapshots created."""
    with table.new_write(user) as w:
        w.write_arrow(data, row_kind_column=row_kind_column)
        messages = w.prepare_commit()
    commit = table.new_commit(user)
    if identifier is None:
        return commit.commit(messages)
    return commit.commit(messages, identifier)


def two_commit_pk_table(where: str | Path | FileSystemCatalog) -> FileStoreTable:
    """``db.t`` (dt, id, v), key ``(dt, id)``, partitioned by ``dt``, one bucket, with two
    batch commits: ``(a, 1, x), (b, 2, y)``, then ``(a, 1, x2)`` (the system-table tests)."""
    t = make_table(where, [("dt", "STRING"), ("id", "INT"), ("v", "STRING")],
                   partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "1"})
    for rows in ({"dt": ["a", "b"], "id": [1, 2], "v": ["x", "y"]},
                 {"dt": ["a"], "id": [1], "v": ["x2"]}):
        write_rows(t, pa.table(rows))
    return t


def sorted_rows(table: FileStoreTable, *columns: str, **travel: Any) -> list[tuple[Any, ...]]:
    """The table's rows as tuples of ``columns``, sorted; ``travel`` (``snapshot_id``,
    ``tag``, ``timestamp_millis``) reads a past version."""
    got = table.to_arrow(**travel).to_pylist()
    return sorted(tuple(r[c] for c in columns) for r in got)


def spy_manifest_reads(monkeypatch: Any) -> list[str]:
    """The names of the manifests read from storage from now on (not those served whole
    from the manifest cache), in order; ``monkeypatch`` undoes the spy."""
    from paimon_core.manifest_io import ManifestIO

    reads: list[str] = []
    real = ManifestIO._read

    def spy(self: ManifestIO, name: str, what: str, size: int | None) -> bytes:
        if what == "manifest":
            reads.append(name)
        return real(self, name, what, size)

    monkeypatch.setattr(ManifestIO, "_read", spy)
    return reads
