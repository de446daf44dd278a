"""Applying a change plan (:mod:`pipelines.rowlevel.plan`) to the table in ONE commit.

As paimon-spark writes them (``UpdatePaimonTableCommand``, ``DeleteFromPaimonTableCommand``,
``MergeIntoPaimonTable``):

* **primary-key tables**: the changed rows only, each with its row kind: ``+U`` for an
  update (the whole new row), ``-D`` for a delete (the target row's values), ``+I`` for an
  insert; written by :func:`pipelines.writer.write_dataframe` (one task per bucket) and
  committed in one APPEND snapshot. The merge engine does the rest at read and compaction.
* **append tables** (copy-on-write): the data files holding a row to update or delete are
  read, rewritten without the deleted rows and with the updated ones, and one APPEND
  snapshot deletes the old files and adds the new ones (with the inserted rows). The
  commit's conflict check refuses it when another commit removed one of those files
  meanwhile (a compaction, an overwrite, another row-level change): the whole operation is
  then planned again on the new latest snapshot, up to ``max_attempts`` times.

Exactly once: with a ``commit_identifier``, an operation whose (commit user, identifier)
already landed writes nothing and reports ``skipped`` (reliability.md rule 3); the commit
itself never applies an identifier twice either.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from paimon_core import (
    CommitConflictError,
    CommitOptions,
    ConfigError,
    CoreOptions,
    UnsupportedError,
)
from paimon_core.commit.users import WriteSpec, new_commit_user
from paimon_core.integration import BATCH_COMMIT_IDENTIFIER, MergeEngine
from pipelines.config import CatalogSettings, TableHandle
from pipelines.rowlevel.plan import ACTION_COLUMN
from pipelines.rowlevel.target import FILE_COLUMN, TargetSnapshot
from pipelines.spark_errors import raising_typed
from pipelines.writer import write_dataframe

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["OPERATION_PROPERTY", "Operation", "RowLevelResult", "check_supported", "run"]

log = logging.getLogger(__name__)

Operation = Literal["UPDATE", "DELETE", "MERGE"]
#: snapshot property naming the row-level operation that wrote the snapshot
OPERATION_PROPERTY = "paimon-pipelines.operation"
KIND_COLUMN = "_row_kind"
_KINDS = {"update": "+U", "delete": "-D", "insert": "+I"}
DEFAULT_MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class RowLevelResult:
    """What one UPDATE / DELETE / MERGE did.

    Attributes:
        operation: ``UPDATE``, ``DELETE`` or ``MERGE``.
        table: ``db.name``.
        read_snapshot: the snapshot the change was computed on (None: empty table).
        snapshot_ids: the snapshot committed (empty: nothing changed, or skipped).
        updated / deleted / inserted: rows.
        rewritten_files: data files rewritten and removed (append tables).
        commit_user / commit_identifier: the commit's identity.
        skipped: the identifier had already been committed by this user: nothing was done.
        attempts: plans computed (more than one after a lost copy-on-write conflict).
    """

    operation: Operation
    table: str
    read_snapshot: int | None
    snapshot_ids: tuple[int, ...]
    updated: int
    deleted: int
    inserted: int
    rewritten_files: int
    commit_user: str
    commit_identifier: int | None
    skipped: bool = False
    attempts: int = 1


def check_supported(handle: TableHandle, operation: Operation, *, updates: bool,
                    deletes: bool) -> None:
    """Refuse, by name, what the table cannot take right (see the README's table).

    Raises:
        UnsupportedError: the merge engine or an option of the table.
    """
    schema = handle.schema
    opts = CoreOptions(schema.options)
    what = f"{operation} on {handle.identifier}"
    if not schema.primary_keys:
        if opts.deletion_vectors_enabled and (updates or deletes):
            raise UnsupportedError(
                f"{what}: an append table with 'deletion-vectors.enabled' = 'true' is not "
                "rewritten here (the rewritten files' deletion vectors would stay behind)")
        return
    engine = opts.merge_engine
    if opts.rowkind_field:
        raise UnsupportedError(f"{what}: the table takes row kinds from column "
                               f"'rowkind.field' = {opts.rowkind_field!r}, not from the write")
    if engine is MergeEngine.FIRST_ROW and (updates or deletes):
        raise UnsupportedError(f"{what}: merge-engine 'first-row' keeps the first version of "
                               "a key and ignores later updates and deletes")
    if engine is MergeEngine.AGGREGATE and (updates or deletes):
        raise UnsupportedError(f"{what}: merge-engine 'aggregation' would aggregate an "
                               "updated row into the stored one, and cannot remove a row")
    if engine is MergeEngine.PARTIAL_UPDATE and updates and opts.sequence_groups():
        raise UnsupportedError(f"{what}: a partial-update table with 'fields.*.sequence-group'"
                               " options updates each group by its own sequence field")
    if deletes and opts.ignore_delete():
        raise UnsupportedError(f"{what}: the table ignores deletes ('ignore-delete')")
    if (deletes and engine is MergeEngine.PARTIAL_UPDATE
            and not opts.partial_update_remove_record_on_delete):
        raise UnsupportedError(
            f"{what}: a partial-update table removes rows only with "
            "'partial-update.remove-record-on-delete' = 'true' (as paimon-spark requires)")


@dataclass(frozen=True)
class _Counts:
    updated: int
    deleted: int
    inserted: int
    touched: tuple[int, ...]


def _count(plan: DataFrame) -> _Counts:
    """One Spark job: rows per action and the data files holding an updated or deleted row.
    """
    from pyspark.sql import functions as F

    rows = (plan.filter(F.col(ACTION_COLUMN).isin("update", "delete", "insert"))
            .groupBy(ACTION_COLUMN, FILE_COLUMN).count().collect())
    by: dict[str, int] = {"update": 0, "delete": 0, "insert": 0}
    touched: set[int] = set()
    for r in rows:
        by[r[ACTION_COLUMN]] += int(r["count"])
        if r[ACTION_COLUMN] != "insert" and r[FILE_COLUMN] is not None:
            touched.add(int(r[FILE_COLUMN]))
    return _Counts(by["update"], by["delete"], by["insert"], tuple(sorted(touched)))


def _rows_to_write(plan: DataFrame, target: TargetSnapshot, touched: tuple[int, ...]
                   ) -> DataFrame:
    from pyspark.sql import functions as F

    action = F.col(ACTION_COLUMN)
    if not target.copy_on_write:
        kind = F.when(action == "update", F.lit(_KINDS["update"])).when(
            action == "delete", F.lit(_KINDS["delete"])).otherwise(F.lit(_KINDS["insert"]))
        return plan.filter(action.isin("update", "delete", "insert")).withColumn(
            KIND_COLUMN, kind)
    rewritten = F.col(FILE_COLUMN).isin(list(touched)) & action.isin("keep", "update")
    return plan.filter(rewritten | (action == "insert"))


def run(operation: Operation, settings: CatalogSettings, identifier: str,
        build: Callable[[TargetSnapshot], DataFrame], *, commit_user: str | None,
        commit_identifier: int | None, properties: dict[str, str] | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> RowLevelResult:
    """Plan ``operation`` on the latest snapshot with ``build`` and commit it once (see the
    module docs); Paimon errors raised in Spark tasks are raised as themselves."""
    # the commit user is for identified commits: a batch commit (identifier Long.MAX) by it
    # would make every later identifier look committed
    user = (commit_user if commit_identifier is not None and commit_user
            else new_commit_user("spark"))
    for attempt in range(1, max_attempts + 1):
        handle = TableHandle.load(settings, identifier)
        if commit_identifier is not None and _committed(handle, user, commit_identifier):
            log.info("%s of %s: %s/%s already committed: nothing to do", operation,
                     identifier, user, commit_identifier)
            return RowLevelResult(operation, handle.identifier, None, (), 0, 0, 0, 0, user,
                                  commit_identifier, skipped=True, attempts=attempt)
        target = TargetSnapshot.plan(handle)
        try:
            return _once(operation, target, build, user, commit_identifier,
                         properties or {}, attempt)
        except CommitConflictError as e:
            if not target.copy_on_write or attempt == max_attempts:
                raise
            log.warning("%s of %s lost a conflict (%s): planning again on the latest "
                        "snapshot (attempt %d of %d)", operation, identifier, e, attempt + 1,
                        max_attempts)
    raise AssertionError("unreachable")  # pragma: no cover


def _committed(handle: TableHandle, user: str, ident: int) -> bool:
    """Whether ``user`` already committed ``ident`` (exactly once).

    Raises:
        ConfigError: ``user``'s last commit is a batch commit (identifier Long.MAX), after
            which no identifier can be told apart from a re-run.
    """
    commit = handle.open().new_commit(user)
    if commit.filter_committed([ident]):
        return False
    if commit.latest_committed_identifier() == BATCH_COMMIT_IDENTIFIER and not commit.landed(
            ident):
        raise ConfigError("commit_user", f"{user!r} last committed to {handle.identifier} "
                          "without an identifier (a batch commit), so identifier "
                          f"{ident} cannot be told from a re-run: give identified "
                          "operations a commit user of their own")
    return True


def _once(operation: Operation, target: TargetSnapshot,
          build: Callable[[TargetSnapshot], DataFrame], user: str, ident: int | None,
          properties: dict[str, str], attempt: int) -> RowLevelResult:
    handle = target.handle
    with raising_typed():
        plan = build(target)
        counts = _count(plan)
        ids: tuple[int, ...] = ()
        if counts.updated or counts.deleted or counts.inserted:
            options = CommitOptions(properties={OPERATION_PROPERTY: operation, **properties})
            deletions = target.deletions(counts.touched) if target.copy_on_write else []
            written = write_dataframe(
                _rows_to_write(plan, target, counts.touched), handle.settings,
                handle.identifier, spec=WriteSpec(user, ident, options),
                row_kind_column=None if target.copy_on_write else KIND_COLUMN,
                handle=handle, extra_messages=deletions)
            ids = written.snapshot_ids
    return RowLevelResult(operation, handle.identifier, target.snapshot_id, ids,
                          counts.updated, counts.deleted, counts.inserted,
                          len(counts.touched) if target.copy_on_write else 0, user, ident,
                          attempts=attempt)
