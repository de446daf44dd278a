"""``PaimonTable``: delta-spark's ``DeltaTable`` for Paimon tables, in Python.

::

    t = PaimonTable.forName(spark, "db.t")          # warehouse: spark.paimon.warehouse
    t.update("v < 0", {"v": "0"})                   # one commit
    t.delete(F.col("id") == 3)
    (t.alias("t").merge(updates.alias("s"), "t.id = s.id")
        .whenMatchedUpdate(set={"v": "s.v"})
        .whenNotMatchedInsertAll()
        .execute())
    t.history().show()                              # newest first
    t.restoreToVersion(3)                           # FileStoreTable.rollback_to

Conditions and values are SQL expression strings or Columns, as delta-spark takes them.
``update`` / ``delete`` / ``execute`` return a :class:`~pipelines.rowlevel.apply.RowLevelResult`
(delta-spark returns None, or a metrics DataFrame for MERGE); how each is written is in
:mod:`pipelines.rowlevel.apply`. Every operation takes ``commit_identifier`` (with the
table's ``commit_user``) to be exactly once across re-runs.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from paimon_core import ConfigError, Identifier, SchemaError
from paimon_core.errors import SnapshotNotExistError
from paimon_core.integration import RollbackResult
from pipelines.config import CatalogSettings, TableHandle
from pipelines.rowlevel.apply import OPERATION_PROPERTY, RowLevelResult, check_supported, run
from pipelines.rowlevel.plan import Clause, Values, check_single_match, merge_plan, target_plan
from pipelines.rowlevel.target import TargetSnapshot

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["PaimonMergeBuilder", "PaimonTable"]


def _session_settings(spark: SparkSession, warehouse: str | None,
                      storage_options: Mapping[str, str] | None) -> CatalogSettings:
    from pipelines.spark_source.source import options_settings
    from pipelines.spark_source.sql import session_defaults

    options = {k.lower(): v for k, v in session_defaults(spark).items()}
    if warehouse is not None:
        options["warehouse"] = warehouse
    if not options.get("warehouse"):
        raise ConfigError("spark.paimon.warehouse", "not set on the session: set it, or pass "
                          "warehouse= (no warehouse to find the table in)")
    settings = options_settings(options)
    if storage_options:
        settings = CatalogSettings(settings.warehouse,
                                   {**settings.storage_options, **storage_options})
    return settings


class PaimonTable:
    """A Paimon table for row-level changes from PySpark (see the module docs).

    Args:
        spark: the session (its ``paimon`` source is registered by ``get_session``).
        settings: the warehouse.
        identifier: ``db.name``.
        commit_user: the identity of the operations given a ``commit_identifier`` (the
            pair makes a re-run apply nothing); operations without one commit as a fresh
            random user, as a batch commit (identifier Long.MAX) would make every later
            identifier of the user look committed.
        alias: the name the target's columns are qualified with in conditions.
    """

    def __init__(self, spark: SparkSession, settings: CatalogSettings, identifier: str, *,
                 commit_user: str | None = None, alias: str | None = None) -> None:
        self._spark = spark
        self._settings = settings
        self._handle = TableHandle.load(settings, identifier)  # TableNotExistError
        self._identifier = self._handle.identifier
        self._commit_user = commit_user
        self._alias = alias

    @classmethod
    def forName(cls, sparkSession: SparkSession, tableOrViewName: str, *,
                warehouse: str | None = None, storage_options: Mapping[str, str] | None = None,
                commit_user: str | None = None) -> PaimonTable:
        """The table ``db.name`` of the session's warehouse (``spark.paimon.warehouse`` and
        ``spark.paimon.*`` storage options, as the ``paimon`` source), or of ``warehouse``.

        Raises:
            ConfigError: no warehouse. TableNotExistError: no such table.
        """
        settings = _session_settings(sparkSession, warehouse, storage_options)
        return cls(sparkSession, settings, tableOrViewName, commit_user=commit_user)

    @classmethod
    def forPath(cls, sparkSession: SparkSession, path: str, *,
                storage_options: Mapping[str, str] | None = None,
                commit_user: str | None = None) -> PaimonTable:
        """The table at ``<warehouse>/<db>.db/<name>`` (a local path or a URL).

        Raises:
            SchemaError: the path is not ``.../<db>.db/<name>``. TableNotExistError: no table.
        """
        clean = path.rstrip("/")
        db_dir, name = posixpath.split(clean)
        warehouse, db = posixpath.split(db_dir)
        if not db.endswith(".db") or not name or not warehouse:
            raise SchemaError(f"{path!r} is not a table path <warehouse>/<database>.db/<table>")
        ident = str(Identifier(db[: -len(".db")], name))
        settings = _session_settings(sparkSession, warehouse, storage_options)
        return cls(sparkSession, settings, ident, commit_user=commit_user)

    def alias(self, aliasName: str) -> PaimonTable:
        """This table, its columns qualified as ``aliasName`` in conditions and values."""
        return PaimonTable(self._spark, self._settings, self._identifier,
                           commit_user=self._commit_user, alias=aliasName)

    @property
    def identifier(self) -> str:
        return self._identifier

    def toDF(self) -> DataFrame:
        """The latest snapshot, read by the ``paimon`` source."""
        reader = self._spark.read.format("paimon").option("warehouse", self._settings.warehouse)
        for k, v in self._settings.storage_options.items():
            reader = reader.option(f"storage.{k}", v)
        df = reader.load(self._identifier)
        return df.alias(self._alias) if self._alias else df

    # ------------------------------------------------------------------ row-level changes

    def update(self, condition: str | Column | None = None, set: Values | None = None, *,
               commit_identifier: int | None = None) -> RowLevelResult:
        """``UPDATE t SET ... WHERE condition`` (no condition: every row), one commit.

        Raises:
            SchemaError: no ``set``, a key that is not a column, or (in the job) an update
                of a primary key. UnsupportedError: the table cannot take it.
        """
        if not set:
            raise SchemaError("update needs set={column: expression, ...}")
        check_supported(self._handle, "UPDATE", updates=True, deletes=False)
        unknown = [k for k in set if k not in self._handle.schema.field_names]
        if unknown:
            raise SchemaError(f"update of {self._identifier}: {unknown} are not columns")

        def build(target: TargetSnapshot) -> DataFrame:
            return target_plan(self._target(target), target.handle.schema, "update",
                               condition, set)

        return self._run("UPDATE", build, commit_identifier)

    def delete(self, condition: str | Column | None = None, *,
               commit_identifier: int | None = None) -> RowLevelResult:
        """``DELETE FROM t WHERE condition`` (no condition: every row), one commit."""
        check_supported(self._handle, "DELETE", updates=False, deletes=True)

        def build(target: TargetSnapshot) -> DataFrame:
            return target_plan(self._target(target), target.handle.schema, "delete",
                               condition, None)

        return self._run("DELETE", build, commit_identifier)

    def merge(self, source: DataFrame, condition: str | Column) -> PaimonMergeBuilder:
        """``MERGE INTO t USING source ON condition``: add clauses, then ``execute()``."""
        from pyspark.sql import DataFrame

        if not isinstance(source, DataFrame):
            raise SchemaError(f"merge source must be a DataFrame, not {type(source).__name__}")
        if condition is None:
            raise SchemaError("merge needs a condition")
        return PaimonMergeBuilder(self, source, condition)

    def _target(self, target: TargetSnapshot) -> DataFrame:
        df = target.frame(self._spark)
        return df.alias(self._alias) if self._alias else df

    def _run(self, operation: Any, build: Any, commit_identifier: int | None) -> RowLevelResult:
        return run(operation, self._settings, self._identifier, build,
                   commit_user=self._commit_user, commit_identifier=commit_identifier)

    # ------------------------------------------------------------------ history

    def history(self, limit: int | None = None) -> DataFrame:
        """The snapshots, newest first (Paimon's ``$snapshots`` columns, plus ``operation``:
        the row-level operation that wrote the snapshot, else its commit kind)."""
        import pyarrow as pa

        table = self._handle.open()
        snaps = table.inspect.snapshots()
        ops = {s.id: (s.properties or {}).get(OPERATION_PROPERTY, s.commit_kind.value)
               for s in table.snapshot_manager.snapshots()}
        ids = snaps.column("snapshot_id").to_pylist()
        snaps = snaps.append_column("operation", pa.array([ops.get(i) for i in ids],
                                                          pa.string()))
        snaps = snaps.sort_by([("snapshot_id", "descending")])
        if limit is not None:
            snaps = snaps.slice(0, limit)
        return self._spark.createDataFrame(snaps)

    def restoreToVersion(self, version: int) -> RollbackResult:
        """Roll the table back to snapshot ``version`` (``FileStoreTable.rollback_to``, as
        Paimon's ``rollbackTo``: later snapshots and tags go; not a new commit, unlike Delta's
        RESTORE). Restoring to the latest snapshot again changes nothing."""
        return self._handle.open().rollback_to(int(version))

    def restoreToTimestamp(self, timestamp_millis: int) -> RollbackResult:
        """Roll back to the latest snapshot committed at or before ``timestamp_millis``."""
        table = self._handle.open()
        snap = table.snapshot_manager.earlier_or_equal_time_millis(int(timestamp_millis))
        if snap is None:
            raise SnapshotNotExistError(f"{self._identifier} has no snapshot at or before "
                                        f"{timestamp_millis}")
        return table.rollback_to(snap.id)


class PaimonMergeBuilder:
    """The clauses of one MERGE (delta-spark's ``DeltaMergeBuilder``): matched clauses update
    or delete, not-matched clauses insert; the first clause whose condition holds applies."""

    def __init__(self, table: PaimonTable, source: DataFrame, condition: str | Column) -> None:
        self._table = table
        self._source = source
        self._condition = condition
        self._matched: list[Clause] = []
        self._not_matched: list[Clause] = []

    def whenMatchedUpdate(self, condition: str | Column | None = None,
                          set: Values | None = None) -> PaimonMergeBuilder:
        if not set:
            raise SchemaError("whenMatchedUpdate needs set={column: expression, ...}")
        self._matched.append(Clause("update", condition, dict(set)))
        return self

    def whenMatchedUpdateAll(self, condition: str | Column | None = None
                             ) -> PaimonMergeBuilder:
        self._matched.append(Clause("update", condition, None))
        return self

    def whenMatchedDelete(self, condition: str | Column | None = None) -> PaimonMergeBuilder:
        self._matched.append(Clause("delete", condition, None))
        return self

    def whenNotMatchedInsert(self, condition: str | Column | None = None,
                             values: Values | None = None) -> PaimonMergeBuilder:
        if not values:
            raise SchemaError("whenNotMatchedInsert needs values={column: expression, ...}")
        self._not_matched.append(Clause("insert", condition, dict(values)))
        return self

    def whenNotMatchedInsertAll(self, condition: str | Column | None = None
                                ) -> PaimonMergeBuilder:
        self._not_matched.append(Clause("insert", condition, None))
        return self

    def execute(self, *, commit_identifier: int | None = None) -> RowLevelResult:
        """Run the MERGE: one commit (see :mod:`pipelines.rowlevel.apply`).

        Raises:
            MergeMatchError: a target row matches several source rows (with matched clauses).
            SchemaError / UnsupportedError: clauses the table cannot take.
        """
        t = self._table
        if not self._matched and not self._not_matched:
            raise SchemaError("merge needs at least one whenMatched... or whenNotMatched... "
                              "clause")
        check_supported(t._handle, "MERGE",
                        updates=any(c.kind == "update" for c in self._matched),
                        deletes=any(c.kind == "delete" for c in self._matched))

        def build(target: TargetSnapshot) -> DataFrame:
            frame = t._target(target)
            if self._matched:
                check_single_match(self._source, frame, self._condition,
                                   target.handle.schema, target.handle.identifier)
            return merge_plan(self._source, frame, target.handle.schema, self._condition,
                              self._matched, self._not_matched,
                              copy_on_write=target.copy_on_write)

        return t._run("MERGE", build, commit_identifier)
