"""Conflict detection (``FileStoreCommitImpl.noConflictsOrFail``), pure functions.

Run on every commit attempt against the snapshot the commit is about to follow (rule 4):

1. Every file the commit deletes must still be live, and no file it adds may be live already.
2. Primary-key tables: within a (partition, bucket), files of one level >= 1 must not overlap
   in key range.
3. Within a partition, every file must have been written for the same bucket count.

Ignoring a conflict corrupts every later commit, so each check raises
:class:`CommitConflictError` with what it found.

**Which commits read the live files** (:func:`needs_live_files`). The checks above need the
live ``ManifestEntry`` rows of the touched partitions, i.e. decoding every manifest whose
``_PARTITION_STATS`` may hold one of them: for an APPEND that touches every partition, the
whole table. Paimon 0.9 (``FileStoreCommitImpl.commit``) commits an APPEND of new files with
``noConflictCheck()`` ("as these files are just newly written, they should not conflict with
existing files") and only checks (``mustConflictCheck()``) when the APPEND also deletes files
or carries deletion vectors (then it is committed as an OVERWRITE), and for COMPACT and
OVERWRITE commits. We do the same, and keep every invariant:

* an APPEND whose entries are all ADDs of level-0 files (what a writer flushes) deletes
  nothing (check 1's first half is empty) and adds no file of a level >= 1 (check 2 compares
  files of levels >= 1 only, and the live ones did not overlap before);
* check 3 can only fail when a partition already holds files of another bucket count than
  the commit's ``_TOTAL_BUCKETS``. Every commit is refused unless its files were written for
  the ``bucket`` option of the latest schema (``TableCommit._validate``), so that needs a
  schema with another ``bucket`` (a rescale: ``ALTER TABLE .. SET ('bucket')`` then INSERT
  OVERWRITE). The APPEND is checked in full when any schema of the table has another bucket
  count than the one its files were written for (files of ``bucket = -1`` tables are not
  counted by check 3 at all);
* "no file added twice" within the commit is checked from the commit's own entries
  (:func:`check_new_files`). Against the live files it holds by construction: data file names
  are unique per writer (``data-<uuid>-<n>``) and a commit identifier lands once per commit
  user (``TableCommit.landed``). Handing the same messages to a second commit user or a new
  identifier is not detected for such an APPEND (as in Java); ``fsck`` reports it.

Everything else (APPENDs with deletes or compacted files, COMPACT, OVERWRITE) reads the live
files of the touched partitions and runs :func:`check_conflicts`.
"""

from __future__ import annotations

import functools
import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from paimon_core.errors import CommitConflictError, CorruptMetadataError
from paimon_core.scan.predicate_literal import java_compare
from paimon_core.spec.file_entries import merge_entries
from paimon_core.spec.manifest import FileKind, ManifestEntry

DecodeKey = Callable[[bytes], Sequence[Any]]


def _cmp_keys(a: Sequence[Any], b: Sequence[Any]) -> int:
    for x, y in zip(a, b):
        c = java_compare(x, y) or 0
        if c:
            return c
    return 0


def check_conflicts(
    live: Iterable[ManifestEntry],
    changes: Sequence[ManifestEntry],
    *,
    decode_key: DecodeKey | None,
    check_bucket_counts: bool = True,
) -> list[ManifestEntry]:
    """Apply ``changes`` to the ``live`` entries of the touched partitions; raise on conflict.

    Args:
        live: live (ADD) entries of the latest snapshot, at least for every (partition,
            bucket) the changes touch.
        changes: the commit's entries (ADD and DELETE).
        decode_key: decodes ``_MIN_KEY``/``_MAX_KEY`` for PK tables (None for append tables).
        check_bucket_counts: False for OVERWRITE commits (they may change the bucket count of
            the partitions they replace).

    Returns:
        The live entries after the commit (for the touched partitions).
    """
    try:
        merged = merge_entries([*live, *changes], source="commit")
    except CorruptMetadataError as e:
        raise CommitConflictError(
            f"commit adds a file that is already live: {e.reason}"
        ) from e
    missing = [e for e in merged.values() if e.kind is FileKind.DELETE]
    if missing:
        names = ", ".join(sorted(e.file.file_name for e in missing)[:5])
        raise CommitConflictError(
            f"trying to delete {len(missing)} file(s) that are no longer live ({names}): "
            "another commit (compaction, overwrite or expiry) removed them first"
        )
    after = list(merged.values())
    if decode_key is not None:
        _check_levels(after, changes, decode_key)
    if check_bucket_counts:
        _check_bucket_counts(after, changes)
    return after


def _check_levels(
    after: Sequence[ManifestEntry], changes: Sequence[ManifestEntry], decode_key: DecodeKey
) -> None:
    touched = {(c.partition, c.bucket) for c in changes}
    groups: dict[tuple[bytes, int, int], list[ManifestEntry]] = defaultdict(list)
    for e in after:
        if e.file.level >= 1 and (e.partition, e.bucket) in touched:
            groups[(e.partition, e.bucket, e.file.level)].append(e)
    cache: dict[bytes, Sequence[Any]] = {}

    def key(b: bytes) -> Sequence[Any]:
        k = cache.get(b)
        if k is None:
            k = decode_key(b)
            cache[b] = k
        return k

    for (_, bucket, level), files in groups.items():
        if len(files) < 2:
            continue
        files.sort(key=functools.cmp_to_key(
            lambda a, b: _cmp_keys(key(a.file.min_key), key(b.file.min_key))))
        for a, b in itertools.pairwise(files):
            if _cmp_keys(key(a.file.max_key), key(b.file.min_key)) >= 0:
                raise CommitConflictError(
                    f"LSM conflict in bucket {bucket}, level {level}: files "
                    f"{a.file.file_name} and {b.file.file_name} overlap in key range "
                    "(two compactions of the same bucket?)"
                )


def _check_bucket_counts(after: Sequence[ManifestEntry], changes: Sequence[ManifestEntry]) -> None:
    touched = {c.partition for c in changes if c.kind is FileKind.ADD}
    counts: dict[bytes, set[int]] = defaultdict(set)
    for e in after:
        if e.partition in touched and e.total_buckets > 0:
            counts[e.partition].add(e.total_buckets)
    for seen in counts.values():
        if len(seen) > 1:
            raise CommitConflictError(
                f"a partition would mix files written for different bucket counts {sorted(seen)} "
                "(a writer with a stale bucket count?)"
            )


def needs_live_files(changes: Sequence[ManifestEntry], *, bucket_counts_agree: bool) -> bool:
    """Whether an APPEND of ``changes`` must be checked against the live files (see the
    module docs). ``bucket_counts_agree``: every schema of the table has the bucket count the
    commit's files were written for."""
    for e in changes:
        if e.kind is not FileKind.ADD or e.file.level != 0:
            return True
        if e.total_buckets > 0 and not bucket_counts_agree:
            return True
    return False


def check_new_files(changes: Sequence[ManifestEntry]) -> None:
    """The check that holds without the live files: no file added twice by the commit."""
    try:
        merge_entries(changes, source="commit")
    except CorruptMetadataError as e:
        raise CommitConflictError(f"commit adds the same file twice: {e.reason}") from e
