"""The batch write builder: one commit user and one :class:`CommitOptions` for both phases.

Mirrors pypaimon's ``BatchWriteBuilder`` (Java ``org.apache.paimon.table.sink.BatchWriteBuilder``):
the builder picks the commit user once (a random uuid unless one is given), so the
:class:`TableWrite` of phase one and the committer of phase two cannot disagree about it.

Example:
    >>> builder = table.new_batch_write_builder("orders-ingest")      # doctest: +SKIP
    >>> with builder.new_write() as write:                             # doctest: +SKIP
    ...     write.write_arrow(data)
    ...     messages = write.prepare_commit()
    >>> builder.new_commit().commit(messages)                          # doctest: +SKIP
    >>> builder.overwrite({"dt": "2024-01-02"}).new_commit()           # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from paimon_core.commit.options import CommitOptions
from paimon_core.commit.table_commit import TableCommit
from paimon_core.commit_message import CommitMessage
from paimon_core.spec.snapshot import BATCH_COMMIT_IDENTIFIER
from paimon_core.write.table_write import TableWrite

if TYPE_CHECKING:
    from paimon_core.table import FileStoreTable

__all__ = ["BatchTableCommit", "BatchWriteBuilder"]


@dataclass(frozen=True)
class BatchWriteBuilder:
    """Builds the writer and the committer of one batch write with the same commit user.

    Made by :meth:`FileStoreTable.new_batch_write_builder`.

    Attributes:
        table: the table written.
        commit_user: the identity both phases use (exactly-once is per commit user).
        options: the settings of the commit (snapshot properties, retries, ...).
        static_partition: None for an append; for INSERT OVERWRITE (:meth:`overwrite`) the
            partition spec replaced (``{}`` = the whole table).
    """

    table: FileStoreTable
    commit_user: str
    options: CommitOptions = field(default_factory=CommitOptions)
    static_partition: Mapping[str, Any] | None = None

    def overwrite(self, static_partition: Mapping[str, Any] | None = None) -> BatchWriteBuilder:
        """A builder whose commit is an INSERT OVERWRITE of ``static_partition`` (None or
        ``{}``: the whole table; with ``dynamic-partition-overwrite`` only the partitions
        receiving rows are replaced), as pypaimon's ``overwrite(static_partition)``."""
        return replace(self, static_partition=dict(static_partition or {}))

    def with_options(self, options: CommitOptions) -> BatchWriteBuilder:
        """A builder committing with ``options``."""
        return replace(self, options=options)

    def new_write(self) -> TableWrite:
        """Phase one: a :class:`TableWrite` for :attr:`commit_user`."""
        return self.table.new_write(self.commit_user,
                                    overwrite=self.static_partition is not None)

    def new_commit(self) -> BatchTableCommit:
        """Phase two: the committer for :attr:`commit_user` with :attr:`options`."""
        return BatchTableCommit(
            self.table.new_commit(self.commit_user, options=self.options), self.static_partition
        )


class BatchTableCommit:
    """Commits (or overwrites with) the messages of a :class:`BatchWriteBuilder`'s writers.

    Args:
        table_commit: the table's committer for the builder's commit user.
        static_partition: None to append, else the spec an overwrite replaces.
    """

    def __init__(
        self, table_commit: TableCommit, static_partition: Mapping[str, Any] | None = None
    ) -> None:
        self.table_commit = table_commit
        self.static_partition = static_partition

    @property
    def commit_user(self) -> str:
        return self.table_commit.commit_user

    def commit(
        self,
        messages: Sequence[CommitMessage],
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
    ) -> list[int]:
        """One APPEND (and COMPACT) snapshot, or one OVERWRITE snapshot after
        :meth:`BatchWriteBuilder.overwrite`; see :meth:`TableCommit.commit` /
        :meth:`TableCommit.overwrite`. Returns the snapshot ids created or already committed
        with ``commit_identifier``."""
        if self.static_partition is not None:
            return self.table_commit.overwrite(messages, self.static_partition, commit_identifier)
        return self.table_commit.commit(messages, commit_identifier)

    def filter_committed(self, identifiers: Sequence[int]) -> list[int]:
        """The identifiers not committed by this commit user yet."""
        return self.table_commit.filter_committed(identifiers)

    def abort(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the files of messages that will not be committed."""
        self.table_commit.abort(messages)
