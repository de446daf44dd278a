"""Removing orphan files (``org.apache.paimon.operation.OrphanFilesClean``, Paimon 0.9).

An orphan is a file under the table directory that no snapshot, tag or changelog of the table
(or of its branches) references: leftovers of failed or crashed writes and commits, of aborted
compactions, files of snapshots whose expiry was interrupted, changelog files of deleted tags.
Listing is :func:`paimon_core.fsck_orphans.orphan_statuses`; this module deletes.

Guards:

* only files last modified before ``older_than_millis`` (default: now - 1 day, Java's default)
  are candidates, so files of writes and commits in flight are never touched;
* snapshot, schema, tag, consumer, changelog and branch metadata is never a candidate, except
  hidden temp files of atomic writes (``.<name>.<uuid>.tmp``) older than the cutoff;
* nothing outside ``<table>/`` is ever deleted (every path is checked again before deletion);
* when the referenced set cannot be known (unreadable metadata of a live snapshot or tag, an
  incomplete snapshot listing) nothing is deleted: the error is raised.

Example:
    >>> remove_orphan_files(table, dry_run=True).paths        # doctest: +SKIP
    ('/wh/db.db/t/bucket-0/data-....parquet',)
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from paimon_core.fsck_orphans import METADATA_DIRS, is_temp_file, orphan_statuses
from paimon_core.io.file_io import FileStatus
from paimon_core.table import FileStoreTable

__all__ = ["DEFAULT_OLDER_THAN_MILLIS", "OrphanResult", "remove_orphan_files"]

#: How old a file must be to be removed by default (``OrphanFilesClean``: 1 day).
DEFAULT_OLDER_THAN_MILLIS = 86_400_000


@dataclass(frozen=True)
class OrphanResult:
    """What :func:`remove_orphan_files` removed (or, with ``dry_run``, would remove).

    Attributes:
        paths: the orphan files, sorted.
        bytes: their total size.
        dry_run: nothing was deleted.
        older_than_millis: the cutoff used (epoch millis).
    """

    paths: tuple[str, ...]
    bytes: int
    dry_run: bool
    older_than_millis: int

    @property
    def count(self) -> int:
        return len(self.paths)

    def to_json(self) -> dict[str, Any]:
        return {"op": "remove-orphans", "files": self.count, "bytes": self.bytes,
                "dry_run": self.dry_run, "older_than_ms": self.older_than_millis}


def _deletable(table_path: str, path: str) -> bool:
    """Inside the table, no dot segments, and not live metadata (defence in depth: the
    listing already guarantees it)."""
    prefix = table_path.rstrip("/") + "/"
    if not path.startswith(prefix):
        return False
    parts = path[len(prefix):].split("/")
    if any(p in ("", ".", "..") for p in parts):
        return False
    return not (len(parts) > 1 and parts[0] in METADATA_DIRS and not is_temp_file(parts[-1]))


def remove_orphan_files(
    table: FileStoreTable,
    older_than_millis: int | None = None,
    *,
    dry_run: bool = False,
    now_millis: int | None = None,
) -> OrphanResult:
    """Delete the table's orphan files older than ``older_than_millis``.

    Args:
        table: the table (local or object storage).
        older_than_millis: epoch-millis cutoff; files modified at or after it are kept.
            Default: now - 1 day.
        dry_run: only list.
        now_millis: the clock for the default cutoff (tests).

    Returns:
        The orphans removed (or found, with ``dry_run``) and their total size.

    Raises:
        CorruptMetadataError: a live snapshot or tag references a missing or undecodable
            metadata file (nothing is deleted).
        StorageError: the snapshot listing is incomplete, or a deletion failed.
    """
    if older_than_millis is None:
        now = int(time.time() * 1000) if now_millis is None else now_millis
        older_than_millis = now - DEFAULT_OLDER_THAN_MILLIS
    orphans = [s for s in orphan_statuses(table, older_than_millis)
               if _deletable(table.path, s.path)]
    if not dry_run:
        file_io = table.file_io

        def delete(st: FileStatus) -> bool:
            return file_io.delete(st.path)

        if file_io.is_local or len(orphans) < 2:
            done = [delete(st) for st in orphans]
        else:
            with ThreadPoolExecutor(min(8, len(orphans))) as pool:
                done = list(pool.map(delete, orphans))
        orphans = [st for st, ok in zip(orphans, done) if ok]
    return OrphanResult(tuple(s.path for s in orphans), sum(s.size for s in orphans), dry_run,
                        older_than_millis)
