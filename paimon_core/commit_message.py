"""Commit messages: what phase one (writers, possibly Spark tasks) hands to phase two (the
single committer). Mirrors ``org.apache.paimon.table.sink.CommitMessageImpl``.

Messages are frozen and picklable, and carry only metadata; the files they name live in the
bucket directory of their partition. :func:`validate_messages` is run by the committer on every
message it receives (reliability rule 8): a message may only reference plain file names (no
separators, no ``..``) for the committing table's partition arity and bucket range.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from paimon_core.errors import PaimonError
from paimon_core.spec.binary_row import binary_row_arity
from paimon_core.spec.index_manifest import DELETION_VECTORS_INDEX, HASH_INDEX, IndexFileMeta
from paimon_core.spec.manifest import DataFileMeta


class InvalidCommitMessageError(PaimonError, ValueError):
    """A commit message that does not belong to this table or names files outside it."""


@dataclass(frozen=True, slots=True)
class CommitMessage:
    """The files one writer produced for one (partition, bucket).

    Attributes:
        partition: serialized partition BinaryRow (with the 4-byte arity prefix).
        bucket: bucket number (0 for unaware-bucket append tables).
        total_buckets: the bucket count the files were written with (table option ``bucket``,
            -1 for unaware/dynamic).
        new_files: new data files (ADD, level 0 for PK tables).
        deleted_files: data files removed by the writer (DELETE; append-table rewrites).
        changelog_files: changelog files (``changelog-producer=input``).
        compact_before / compact_after / compact_changelog: compaction inputs (DELETE),
            outputs (ADD) and changelog.
        table_path: the table the files were written for (checked by the committer).
        schema_id: the schema the writer used.
        index_files: new HASH index files of the bucket (dynamic bucket tables; the APPEND
            snapshot replaces the bucket's previous index entry), in ``<table>/index/``.
        replaces_index: the index file the writer extended (``""``: the bucket had none);
            the commit refuses the message when the bucket's entry is no longer that file
            (another writer changed the bucket's keys meanwhile). None: not checked
            (overwrites replace everything).
        dv_index_added / dv_index_deleted: the bucket's new DELETION_VECTORS index file of a
            compaction and the ones it replaces (they go with the COMPACT snapshot; the commit
            refuses them when the bucket's DV index is no longer ``dv_index_deleted``).
    """

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...] = ()
    deleted_files: tuple[DataFileMeta, ...] = ()
    changelog_files: tuple[DataFileMeta, ...] = ()
    compact_before: tuple[DataFileMeta, ...] = ()
    compact_after: tuple[DataFileMeta, ...] = ()
    compact_changelog: tuple[DataFileMeta, ...] = ()
    table_path: str = ""
    schema_id: int = 0
    index_files: tuple[IndexFileMeta, ...] = ()
    replaces_index: str | None = None
    dv_index_added: tuple[IndexFileMeta, ...] = ()
    dv_index_deleted: tuple[IndexFileMeta, ...] = ()

    def is_empty(self) -> bool:
        return not (
            self.new_files or self.deleted_files or self.changelog_files
            or self.compact_before or self.compact_after or self.compact_changelog
            or self.index_files or self.dv_index_added or self.dv_index_deleted
        )

    def all_files(self) -> tuple[DataFileMeta, ...]:
        return (
            self.new_files + self.deleted_files + self.changelog_files
            + self.compact_before + self.compact_after + self.compact_changelog
        )

    def written_files(self) -> tuple[DataFileMeta, ...]:
        """Files this message created (what ``abort()`` deletes). A compaction output that is
        also one of its inputs is an *upgrade* (the same live file moved to another level),
        not a new file, and is never listed."""
        upgraded = {f.file_name for f in self.compact_before}
        after = tuple(f for f in self.compact_after if f.file_name not in upgraded)
        return self.new_files + self.changelog_files + after + self.compact_changelog


def _check_name(name: str, what: str) -> None:
    if (
        not name
        or "/" in name
        or "\\" in name
        or name in (".", "..")
        or any(ord(c) < 0x20 for c in name)
    ):
        raise InvalidCommitMessageError(f"{what} {name!r} is not a plain file name")


def validate_messages(
    messages: Sequence[CommitMessage],
    *,
    table_path: str,
    partition_arity: int,
    num_buckets: int,
    latest_schema_id: int,
) -> None:
    """Check messages before committing them (raises :class:`InvalidCommitMessageError`)."""
    for m in messages:
        if not isinstance(m, CommitMessage):
            raise InvalidCommitMessageError(f"not a CommitMessage: {type(m).__name__}")
        if m.table_path and m.table_path.rstrip("/") != table_path.rstrip("/"):
            raise InvalidCommitMessageError(
                f"message written for table {m.table_path!r}, not {table_path!r}"
            )
        try:
            arity = binary_row_arity(m.partition)
        except PaimonError as e:
            raise InvalidCommitMessageError(f"bad partition bytes: {e}") from e
        if arity != partition_arity:
            raise InvalidCommitMessageError(
                f"partition of arity {arity}, the table has {partition_arity} partition keys"
            )
        if num_buckets > 0 and not 0 <= m.bucket < num_buckets:
            raise InvalidCommitMessageError(
                f"bucket {m.bucket} out of range for bucket={num_buckets}"
            )
        if num_buckets <= 0 and m.bucket < 0:
            raise InvalidCommitMessageError(f"bucket {m.bucket} is negative")
        if m.schema_id > latest_schema_id:
            raise InvalidCommitMessageError(
                f"message uses schema {m.schema_id}, newer than the table's {latest_schema_id}"
            )
        for f in m.all_files():
            _check_name(f.file_name, "data file")
            for extra in f.extra_files:
                _check_name(extra, "extra file")
            if f.external_path is not None:
                raise InvalidCommitMessageError(
                    f"file {f.file_name} has an external path; only files under the table "
                    "are accepted"
                )
        for ix in m.index_files:
            _check_name(ix.file_name, "index file")
            if ix.index_type != HASH_INDEX:
                raise InvalidCommitMessageError(
                    f"index file {ix.file_name} of type {ix.index_type!r}: only {HASH_INDEX} "
                    "index files are committed from messages")
            if num_buckets != -1:
                raise InvalidCommitMessageError(
                    f"hash index file {ix.file_name} for a table with bucket={num_buckets} "
                    "(only dynamic bucket tables, bucket=-1, have one)")
        for ix in m.dv_index_added + m.dv_index_deleted:
            _check_name(ix.file_name, "index file")
            if ix.index_type != DELETION_VECTORS_INDEX:
                raise InvalidCommitMessageError(
                    f"index file {ix.file_name} of type {ix.index_type!r} given as a deletion "
                    f"vector index ({DELETION_VECTORS_INDEX})")
