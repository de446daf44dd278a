"""Paimon in Spark SQL: the ``paimon`` source bound to the session's warehouse, system tables
and procedures as Python UDTFs, and ``df.write.format("paimon")``'s default save mode.

:func:`register_sql` (called by :func:`pipelines.session.get_session`) registers, with the
``spark.paimon.*`` session conf of the moment (``spark.paimon.warehouse``, storage options such
as ``spark.paimon.s3.endpoint``) bound in, because the Python workers that run data sources and
UDTFs never see the session conf:

* the ``paimon`` data source (:class:`~pipelines.spark_source.source.PaimonDataSource`), so that
  ``CREATE TABLE t USING paimon OPTIONS (table 'db.t')`` and ``load("db.t")`` need no
  ``warehouse`` option (see :mod:`pipelines.spark_source.tables` for how a catalog table finds its
  Paimon table);
* one table function per system table of ``table.inspect``: ``paimon_snapshots('db.t')``,
  ``paimon_schemas``, ``paimon_options``, ``paimon_files``, ``paimon_manifests``,
  ``paimon_partitions``, ``paimon_buckets``, ``paimon_tags``, ``paimon_consumers``,
  ``paimon_audit_log``, ``paimon_ro`` (an optional second argument time-travels those that
  allow it: a snapshot id, or a tag name);
* procedures, called as ``SELECT * FROM paimon_compact('db.t')``:
  ``paimon_compact(table [, strategy 'full'|'minor'])``,
  ``paimon_expire_snapshots(table [, retain_max [, retain_min [, older_than_millis]]])``,
  ``paimon_create_tag(table, tag [, snapshot_id])``,
  ``paimon_rollback(table, snapshot_id | tag)`` (``FileStoreTable.rollback_to``: a number is a
  snapshot id, any other text a tag). Each returns one row.

Change ``spark.paimon.*`` after the session started? Call :func:`register_sql` again.

Spark refuses every Python data source in its default ``ErrorIfExists`` save mode before the
source is asked; paimon-spark users write ``df.write.format("paimon").save("db.t")`` and expect
an append, so :func:`register_sql` also makes ``append`` the default save mode of a
``DataFrameWriter`` whose format is ``paimon`` (a mode set explicitly, before or after
``format``, still wins), and its ``save`` shuffles the rows of a primary-key table first (one
task per bucket, or per assigner channel of a dynamic bucket table:
:func:`pipelines.spark_source.sink.bucketed_input`), as paimon-spark's writer does; a Paimon error
raised in its tasks reaches the caller as that typed error
(:func:`pipelines.spark_errors.typed_error`; Spark's exception is its ``__cause__``).
``writeStream.format("paimon")...start()`` shuffles the same way (the calls made on the
``DataStreamWriter`` are replayed on one of the shuffled stream), and ``spark.sql`` runs the
statements Spark never hands a Python data source (``CREATE TABLE`` with columns, ``INSERT``
through ``df.write``, ``VERSION AS OF``, ``t$snapshots``: :mod:`pipelines.spark_source.statements`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from paimon_core import FileStoreTable, SchemaError, UnsupportedError
from paimon_core.inspect import SYSTEM_TABLES
from pipelines.config import TableHandle
from pipelines.spark_errors import raising_typed
from pipelines.spark_source.options import check_options
from pipelines.spark_source.sink import bucketed_input
from pipelines.spark_source.source import FORMAT, PaimonDataSource, options_settings, write_target
from pipelines.spark_source.statements import (
    catalog_options,
    insert_into,
    install_sql_hook,
    table_parts,
)
from pipelines.spark_source.tables import SESSION_PREFIX
from pipelines.spark_types import spark_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["PROCEDURES", "SYSTEM_TABLE_FUNCTIONS", "bound_source", "register_sql",
           "session_defaults"]

#: SQL name -> system table
SYSTEM_TABLE_FUNCTIONS: dict[str, str] = {f"paimon_{n}": n for n in SYSTEM_TABLES}
#: SQL names of the procedures
PROCEDURES = ("paimon_compact", "paimon_expire_snapshots", "paimon_create_tag",
              "paimon_rollback")
_MODE_SET = "_paimon_mode_set"  # on a DataFrameWriter: a mode was set explicitly
_INSTALLED = "_paimon_writer_patch"  # on the DataFrameWriter class: the patch is in place
_DEFAULTS = "_paimon_session_defaults"  # on the DataFrameWriter class: spark.paimon.* conf
_GIVEN = "_paimon_given"  # on a DataFrameWriter: the format, mode and options set on it


def session_defaults(spark: SparkSession) -> dict[str, str]:
    """The ``spark.paimon.*`` conf of ``spark`` with the prefix stripped."""
    from pipelines.session import is_connect

    # a Spark Connect session has no SparkContext: its conf holds the server's conf already
    conf = [] if is_connect(spark) else spark.sparkContext.getConf().getAll()
    out = {k[len(SESSION_PREFIX):]: v for k, v in conf if k.startswith(SESSION_PREFIX)}
    for k, v in spark.conf.getAll.items():
        if k.startswith(SESSION_PREFIX):
            out[k[len(SESSION_PREFIX):]] = v
    return out


def bound_source(defaults: Mapping[str, str]) -> type[PaimonDataSource]:
    """A :class:`PaimonDataSource` subclass with ``defaults`` bound (pickled by value with the
    class when Spark ships it to its workers)."""
    cls = type("PaimonDataSource", (PaimonDataSource,),
               {"session_defaults": dict(defaults), "__module__": __name__,
                "__qualname__": "bound_source.<locals>.PaimonDataSource"})
    return cls


def _open(defaults: Mapping[str, str], identifier: Any) -> FileStoreTable:
    if not isinstance(identifier, str) or not identifier:
        raise SchemaError(f"the first argument must name a table ('db.t'), got {identifier!r}")
    options = {str(k).lower(): str(v) for k, v in defaults.items()}
    return TableHandle.load(options_settings(options), identifier).open()


def _const(arg: Any) -> Any:
    """The value of a constant UDTF argument at analysis (None when not constant)."""
    return getattr(arg, "value", None)


def _time_travel(arg: Any) -> tuple[int | None, str | None]:
    if arg is None:
        return None, None
    if isinstance(arg, int) or (isinstance(arg, str) and arg.isdigit()):
        return int(arg), None
    return None, str(arg)


def _system_table_udtf(name: str, defaults: Mapping[str, str]) -> type:
    from pyspark.sql.udtf import AnalyzeResult

    class SystemTableFunction:
        @staticmethod
        def analyze(table: Any, at: Any = None) -> AnalyzeResult:
            t = _open(defaults, _const(table))
            snapshot_id, tag = _time_travel(_const(at))
            return AnalyzeResult(spark_schema(
                t.inspect.fields(name, snapshot_id=snapshot_id, tag=tag)))

        def eval(self, table: str, at: Any = None) -> Iterator[tuple[Any, ...]]:
            t = _open(defaults, table)
            snapshot_id, tag = _time_travel(at)
            data = t.inspect.system_table(name, snapshot_id=snapshot_id, tag=tag)
            cols = [_py_column(data.column(i)) for i in range(data.num_columns)]
            yield from zip(*cols)

    return SystemTableFunction


def _py_column(col: Any) -> list[Any]:
    """A column as Python values for Spark (maps as dicts)."""
    import pyarrow as pa

    values = col.to_pylist()
    if pa.types.is_map(col.type):
        return [dict(v) if v is not None else None for v in values]
    return list(values)


def _compact_udtf(defaults: Mapping[str, str]) -> type:
    class Compact:
        def eval(self, table: str, strategy: str = "full") -> Iterator[tuple[Any, ...]]:
            if strategy not in ("full", "minor"):
                raise SchemaError(f"compact strategy must be 'full' or 'minor', got {strategy!r}")
            snap = _open(defaults, table).compact(strategy=strategy)  # type: ignore[arg-type]
            yield snap is not None, snap

    return Compact


def _expire_udtf(defaults: Mapping[str, str]) -> type:
    class Expire:
        def eval(self, table: str, retain_max: int | None = None, retain_min: int | None = None,
                 older_than_millis: int | None = None) -> Iterator[tuple[Any, ...]]:
            res = _open(defaults, table).expire_snapshots(
                retain_max=retain_max, retain_min=retain_min,
                older_than_millis=older_than_millis)
            yield len(res.expired_ids), res.deleted_files

    return Expire


def _create_tag_udtf(defaults: Mapping[str, str]) -> type:
    class CreateTag:
        def eval(self, table: str, tag: str, snapshot_id: int | None = None
                 ) -> Iterator[tuple[Any, ...]]:
            snap = _open(defaults, table).create_tag(tag, snapshot_id)
            yield True, snap.id

    return CreateTag


def _rollback_udtf(defaults: Mapping[str, str]) -> type:
    class Rollback:
        def eval(self, table: str, target: Any) -> Iterator[tuple[Any, ...]]:
            snapshot_id, tag = _time_travel(target)
            if snapshot_id is None and tag is None:
                raise SchemaError("paimon_rollback needs a snapshot id or a tag name")
            res = _open(defaults, table).rollback_to(
                snapshot_id if snapshot_id is not None else str(tag))
            yield res.snapshot_id, len(res.removed_snapshots), len(res.removed_tags), \
                res.deleted_files

    return Rollback


def _writer_classes(kind: str) -> list[Any]:
    """The ``DataFrameWriter`` (``kind="batch"``) or ``DataStreamWriter`` classes to patch:
    the classic one, and Spark Connect's once this process uses a Connect client (a Dagster
    run's session is a Connect one: :mod:`pipelines.connect`; :func:`register_sql` runs for
    that session too). A classic-only process does not import the Connect client (~0.4 s)."""
    modules = (["pyspark.sql.readwriter", "pyspark.sql.connect.readwriter"] if kind == "batch"
               else ["pyspark.sql.streaming.readwriter",
                     "pyspark.sql.connect.streaming.readwriter"])
    if "pyspark.sql.connect.session" not in sys.modules:
        modules = modules[:1]
    name = "DataFrameWriter" if kind == "batch" else "DataStreamWriter"
    return [getattr(importlib.import_module(m), name) for m in modules]


def _frame_of(writer: Any) -> DataFrame:
    """The DataFrame a ``DataFrameWriter`` / ``DataStreamWriter`` writes: a classic writer
    holds it, a Spark Connect writer its plan and session."""
    df = getattr(writer, "_df", None)
    if df is not None and hasattr(df, "sparkSession"):
        return cast("DataFrame", df)
    from pyspark.sql.connect.dataframe import DataFrame as ConnectFrame

    if df is not None:  # Connect's DataFrameWriter: the plan
        return cast("DataFrame", ConnectFrame(df, writer._spark))
    return cast("DataFrame", ConnectFrame(writer._write_stream._child, writer._session))


def _install_writer_patch(defaults: Mapping[str, str]) -> None:
    """``DataFrameWriter`` with the format ``paimon`` (classic and Spark Connect): ``append``
    when no mode was set, and a primary-key table's rows shuffled before ``save``
    (:func:`pipelines.spark_source.sink.bucketed_input`); a Paimon error from the write raised as
    itself
    (:func:`pipelines.spark_errors.typed_error`). ``defaults``: the session's
    ``spark.paimon.*`` (the latest :func:`register_sql` call's)."""
    for cls in _writer_classes("batch"):
        setattr(cls, _DEFAULTS, dict(defaults))
        if not getattr(cls, _INSTALLED, False):
            _patch_writer(cls)


def _patch_writer(DataFrameWriter: Any) -> None:
    """:func:`_install_writer_patch` on one ``DataFrameWriter`` class."""
    orig_mode, orig_format = DataFrameWriter.mode, DataFrameWriter.format
    orig_option, orig_options = DataFrameWriter.option, DataFrameWriter.options
    orig_save = DataFrameWriter.save
    if DataFrameWriter.__module__ == "pyspark.sql.readwriter":
        _install_table_writes(DataFrameWriter)  # SQL INSERT: classic sessions (the parser)

    def given(self: Any) -> dict[str, Any]:
        if _GIVEN not in self.__dict__:
            self.__dict__[_GIVEN] = {}
        out: dict[str, Any] = self.__dict__[_GIVEN]
        return out

    def mode(self: Any, saveMode: str | None) -> Any:
        if saveMode is not None:
            setattr(self, _MODE_SET, True)
            given(self)["mode"] = saveMode
        return orig_mode(self, saveMode)

    def format(self: Any, source: str) -> Any:
        out = orig_format(self, source)
        given(self)["format"] = str(source)
        if str(source).lower() == FORMAT and not getattr(self, _MODE_SET, False):
            orig_mode(self, "append")
        return out

    def option(self: Any, key: str, value: Any) -> Any:
        given(self).setdefault("options", {})[key] = value
        return orig_option(self, key, value)

    def options(self: Any, **opts: Any) -> Any:
        given(self).setdefault("options", {}).update(opts)
        return orig_options(self, **opts)

    def save(self: Any, path: str | None = None, format: str | None = None,
             mode: str | None = None, partitionBy: Any = None, **opts: Any) -> None:
        g = given(self)
        fmt = format or g.get("format")
        if fmt is None or str(fmt).lower() != FORMAT:
            return orig_save(self, path, format, mode, partitionBy, **opts)
        with raising_typed():
            return paimon_save(self, g, path, mode, partitionBy, opts)

    def paimon_save(self: Any, g: dict[str, Any], path: str | None, mode: str | None,
                    partitionBy: Any, opts: dict[str, Any]) -> None:
        write_opts = {str(k): str(v) for k, v in {**g.get("options", {}), **opts}.items()
                      if v is not None}
        if path is not None:
            write_opts["path"] = path
        check_options(write_opts)  # a typo fails before a table is created from the options
        shuffled = bucketed_input(_frame_of(self), write_opts,
                                  getattr(DataFrameWriter, _DEFAULTS, {}), write_target)
        mode = mode or g.get("mode") or "append"
        if shuffled is None:
            return orig_save(self, path, FORMAT, mode, partitionBy, **opts)
        df, extra = shuffled
        w = df.write
        orig_options(w, **g.get("options", {}), **extra)
        return orig_save(w, path, FORMAT, mode, partitionBy, **opts)

    for fn, orig in ((mode, orig_mode), (format, orig_format), (option, orig_option),
                     (options, orig_options), (save, orig_save)):
        fn.__doc__ = orig.__doc__
    DataFrameWriter.mode = mode
    DataFrameWriter.format = format
    DataFrameWriter.option = option
    DataFrameWriter.options = options
    DataFrameWriter.save = save
    setattr(DataFrameWriter, _INSTALLED, True)


def _install_table_writes(cls: Any) -> None:
    """``DataFrameWriter.insertInto`` / ``saveAsTable`` on a ``USING paimon`` catalog table:
    ``insertInto`` runs the SQL ``INSERT`` of :mod:`pipelines.spark_source.statements` (by
    position);
    ``saveAsTable`` with the format ``paimon`` saves into the table the name maps to (by
    column name, with the writer's options; ``append`` or ``ignore`` on an existing table,
    ``overwrite`` refused: Spark would replace the table), or, for a new name, creates Paimon
    table ``<database>.<name>`` from the DataFrame (``save``) and maps the name to it."""
    orig_insert, orig_save_as = cls.insertInto, cls.saveAsTable

    def insertInto(self: Any, tableName: str, overwrite: bool | None = None) -> None:
        spark = self._df.sparkSession
        if catalog_options(spark, table_parts(spark, tableName)) is None:
            orig_insert(self, tableName, overwrite)
        else:
            insert_into(self._df, tableName, bool(overwrite))

    def saveAsTable(self: Any, name: str, format: str | None = None, mode: str | None = None,
                    partitionBy: Any = None, **options: Any) -> None:
        g = self.__dict__.get(_GIVEN, {})
        if str(format or g.get("format") or "").lower() != FORMAT:
            orig_save_as(self, name, format, mode, partitionBy, **options)
            return
        spark = self._df.sparkSession
        parts = table_parts(spark, name)
        mode = str(mode or g.get("mode") or "append").lower()
        quoted = ".".join(f"`{p}`" for p in parts)
        if partitionBy:
            raise UnsupportedError("saveAsTable(..., partitionBy=...) into paimon: give the "
                                   "write option 'partition' (as for save)")
        if spark.catalog.tableExists(".".join(parts)):
            identity = catalog_options(spark, parts)
            if identity is None or mode in ("error", "errorifexists"):
                orig_save_as(self, name, format, mode, partitionBy, **options)
                return
            if mode == "overwrite":
                raise UnsupportedError(
                    f"saveAsTable({name!r}) with mode 'overwrite' would replace the table: not "
                    "supported for paimon; overwrite its rows with .mode('overwrite')"
                    f".save('{identity.get('table')}') or INSERT OVERWRITE")
            if mode != "ignore":
                self.options(**identity, **options).mode(mode).save()
            return
        database = parts[-2] if len(parts) > 1 else spark.catalog.currentDatabase()
        ident = str({**g.get("options", {}), **options}.get("table") or
                    f"{database}.{parts[-1]}")
        self.options(**options, table=ident).mode("append" if mode != "overwrite"
                                                  else "overwrite").save()
        spark.sql(f"CREATE TABLE {quoted} USING {FORMAT} OPTIONS (table '{ident}')")

    insertInto.__doc__, saveAsTable.__doc__ = orig_insert.__doc__, orig_save_as.__doc__
    cls.insertInto = insertInto
    cls.saveAsTable = saveAsTable


#: the ``DataStreamWriter`` calls recorded (replayed on the shuffled stream by ``start``)
_STREAM_CALLS = ("outputMode", "format", "option", "options", "partitionBy", "clusterBy",
                 "queryName", "trigger")
_CALLS = "_paimon_calls"  # on a DataStreamWriter: the calls made on it, in order


def _recorded_options(calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]]
                      ) -> tuple[str | None, dict[str, str]]:
    """The format and options set by the recorded ``DataStreamWriter`` calls."""
    fmt: str | None = None
    opts: dict[str, str] = {}
    for name, args, kwargs in calls:
        if name == "format":
            fmt = str(args[0] if args else kwargs.get("source"))
        elif name == "option":
            key, value = args if len(args) == 2 else (kwargs["key"], kwargs["value"])
            if value is not None:
                opts[str(key)] = str(value)
        elif name == "options":
            opts.update({str(k): str(v) for k, v in kwargs.items() if v is not None})
    return fmt, opts


def _install_stream_patch() -> None:
    """``writeStream.format("paimon")...start()`` (classic and Spark Connect): a primary-key
    table's rows shuffled first, as ``save`` does
    (:func:`pipelines.spark_source.sink.bucketed_input`): the
    calls made on the writer are recorded and replayed on a writer of the shuffled stream. The
    session defaults are the ``DataFrameWriter`` patch's (:func:`_install_writer_patch`)."""
    for cls in _writer_classes("stream"):
        if not getattr(cls, _INSTALLED, False):
            _patch_stream_writer(cls)


def _patch_stream_writer(DataStreamWriter: Any) -> None:
    """:func:`_install_stream_patch` on one ``DataStreamWriter`` class."""
    from pyspark.sql.readwriter import DataFrameWriter

    originals = {n: getattr(DataStreamWriter, n) for n in _STREAM_CALLS
                 if hasattr(DataStreamWriter, n)}
    orig_start = DataStreamWriter.start

    def recorder(name: str, orig: Any) -> Any:
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            self.__dict__.setdefault(_CALLS, []).append((name, args, kwargs))
            return orig(self, *args, **kwargs)

        call.__doc__, call.__name__ = orig.__doc__, name
        return call

    def start(self: Any, path: str | None = None, format: str | None = None,
              outputMode: str | None = None, partitionBy: Any = None,
              queryName: str | None = None, **options: Any) -> Any:
        calls = self.__dict__.get(_CALLS, [])
        fmt, given = _recorded_options(calls)
        fmt = format or fmt
        if fmt is None or str(fmt).lower() != FORMAT:
            return orig_start(self, path, format, outputMode, partitionBy, queryName, **options)
        write_opts = {**given, **{str(k): str(v) for k, v in options.items() if v is not None}}
        if path is not None:
            write_opts["path"] = path
        check_options(write_opts)
        shuffled = bucketed_input(_frame_of(self), write_opts,
                                  getattr(DataFrameWriter, _DEFAULTS, {}), write_target)
        if shuffled is None:
            return orig_start(self, path, format, outputMode, partitionBy, queryName, **options)
        df, extra = shuffled
        w = df.writeStream
        for name, args, kwargs in calls:
            originals[name](w, *args, **kwargs)
        if extra:
            originals["options"](w, **extra)
        return orig_start(w, path, format, outputMode, partitionBy, queryName, **options)

    for name, orig in originals.items():
        setattr(DataStreamWriter, name, recorder(name, orig))
    start.__doc__ = orig_start.__doc__
    DataStreamWriter.start = start
    setattr(DataStreamWriter, _INSTALLED, True)


def register_sql(spark: SparkSession) -> None:
    """Register the ``paimon`` source, the system table functions and the procedures on
    ``spark`` with its current ``spark.paimon.*`` conf (see the module docs)."""
    from pyspark.sql.functions import udtf as make_udtf

    udtf: Any = make_udtf  # the stubs' overloads do not cover a class with returnType
    defaults = session_defaults(spark)
    spark.dataSource.register(bound_source(defaults))
    for sql_name, system in SYSTEM_TABLE_FUNCTIONS.items():
        spark.udtf.register(sql_name, udtf(_system_table_udtf(system, defaults)))
    spark.udtf.register("paimon_compact", udtf(
        _compact_udtf(defaults), returnType="result boolean, snapshot_id bigint"))
    spark.udtf.register("paimon_expire_snapshots", udtf(
        _expire_udtf(defaults), returnType="expired_snapshots int, deleted_files int"))
    spark.udtf.register("paimon_create_tag", udtf(
        _create_tag_udtf(defaults), returnType="result boolean, snapshot_id bigint"))
    spark.udtf.register("paimon_rollback", udtf(
        _rollback_udtf(defaults), returnType="snapshot_id bigint, removed_snapshots int, "
        "removed_tags int, deleted_files int"))
    _install_writer_patch(defaults)
    _install_stream_patch()
    install_sql_hook(register_sql)
