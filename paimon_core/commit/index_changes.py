"""The index manifest side of a commit (dynamic bucket HASH index files).

Mirrors the index parts of ``org.apache.paimon.operation.FileStoreCommitImpl``: new HASH
index files of the messages go with the APPEND snapshot as ADD entries, an overwrite deletes
the index entries of the partitions it replaces (``tryOverwrite``), and the new index manifest
is the previous one combined with these changes
(:func:`paimon_core.spec.index_manifest.combine_index_entries`).

Added here (Java has no such check): a message names the index file its writer extended, and
the commit refuses it when another writer replaced that bucket's index meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TypeVar

from paimon_core.commit_message import CommitMessage
from paimon_core.errors import CommitConflictError
from paimon_core.spec.index_manifest import (
    DELETION_VECTORS_INDEX,
    HASH_INDEX,
    IndexManifestEntry,
)
from paimon_core.spec.manifest import FileKind, ManifestEntry
from paimon_core.spec.snapshot import Snapshot

__all__ = ["check_dv_bases", "check_index_bases", "dv_index_changes", "index_adds",
           "index_deletes", "with_index_checks"]

T = TypeVar("T")
#: builds one snapshot's changes from the snapshot it follows and the live entries
Builder = Callable[[Snapshot | None, list[ManifestEntry]], T]


def index_adds(messages: Sequence[CommitMessage]) -> list[IndexManifestEntry]:
    """ADD entries of the messages' new index files."""
    return [ix.entry(FileKind.ADD, m.partition, m.bucket) for m in messages
            for ix in m.index_files]


def dv_index_changes(messages: Sequence[CommitMessage]) -> list[IndexManifestEntry]:
    """DELETE entries of the DV index files the messages' compactions replaced, then ADD
    entries of their new ones (``FileStoreCommitImpl.collectChanges``: both go with the
    COMPACT snapshot)."""
    return ([ix.entry(FileKind.DELETE, m.partition, m.bucket) for m in messages
             for ix in m.dv_index_deleted]
            + [ix.entry(FileKind.ADD, m.partition, m.bucket) for m in messages
               for ix in m.dv_index_added])


def check_dv_bases(messages: Sequence[CommitMessage],
                   current: Iterable[IndexManifestEntry]) -> None:
    """Refuse messages whose bucket's DV index files are no longer the ones their compaction
    started from (``dv_index_deleted``; none: the bucket had none): another commit changed the
    bucket's deletion vectors meanwhile, and replacing its file would drop its deletions.

    Raises:
        CommitConflictError: naming the bucket.
    """
    now: dict[tuple[bytes, int], set[str]] = {}
    for e in current:
        if e.index_type == DELETION_VECTORS_INDEX and e.kind is FileKind.ADD:
            now.setdefault((e.partition, e.bucket), set()).add(e.file_name)
    for m in messages:
        if not (m.dv_index_added or m.dv_index_deleted):
            continue
        base = {ix.file_name for ix in m.dv_index_deleted}
        have = now.get((m.partition, m.bucket), set())
        if have != base:
            raise CommitConflictError(
                f"the deletion vectors of bucket {m.bucket} (partition {m.partition.hex()}) "
                f"were changed by another commit since this compaction read them (index files "
                f"{sorted(have)}, expected {sorted(base)}); compact again")


def index_deletes(entries: Iterable[IndexManifestEntry],
                  replaced: Callable[[bytes], bool]) -> list[IndexManifestEntry]:
    """DELETE entries for the index files of the partitions ``replaced`` says go."""
    return [replace(e, kind=FileKind.DELETE) for e in entries if replaced(e.partition)]


def check_index_bases(messages: Sequence[CommitMessage],
                      current: Iterable[IndexManifestEntry]) -> None:
    """Refuse messages whose bucket's HASH index is no longer the file their writer extended
    (``CommitMessage.replaces_index``; ``current``: the index entries of the snapshot the
    commit follows): two writers adding keys to one partition at once would otherwise drop
    one's keys from the index, and a later writer could put such a key in a second bucket.

    Raises:
        CommitConflictError: naming the bucket.
    """
    expect = {(m.partition, m.bucket): m.replaces_index for m in messages
              if m.index_files and m.replaces_index is not None}
    if not expect:
        return
    now = {(e.partition, e.bucket): e.file_name for e in current
           if e.index_type == HASH_INDEX and e.kind is FileKind.ADD}
    for (partition, bucket), base in expect.items():
        if now.get((partition, bucket), "") != base:
            raise CommitConflictError(
                f"the hash index of dynamic bucket {bucket} (partition {partition.hex()}) was "
                "changed by another writer since this writer loaded it: keys could land in two "
                "buckets; write each partition of a dynamic bucket table from one writer at a "
                "time, and retry")


def with_index_checks(
    build: Builder[T], messages: Sequence[CommitMessage],
    index_entries: Callable[[Snapshot | None], list[IndexManifestEntry]], *, hash_bases: bool,
) -> Builder[T]:
    """``build``, after :func:`check_index_bases` (``hash_bases``: the APPEND) and
    :func:`check_dv_bases` against the index entries of the snapshot followed, on every
    attempt. Deletion vectors are checked before the APPEND too, so that a conflict leaves
    nothing committed."""
    hashes = hash_bases and any(m.index_files and m.replaces_index is not None
                                for m in messages)
    dvs = any(m.dv_index_added or m.dv_index_deleted for m in messages)
    if not (hashes or dvs):
        return build

    def checked(latest: Snapshot | None, live: list[ManifestEntry]) -> T:
        entries = index_entries(latest)
        if hashes:
            check_index_bases(messages, entries)
        if dvs:
            check_dv_bases(messages, entries)
        return build(latest, live)

    return checked
