"""The SQL statements paimon-spark users write that Spark never hands a Python data source,
run by ``spark.sql`` itself (installed by :func:`pipelines.spark_source.sql.register_sql`).

Measured on Spark 4.3 (``tests/pipelines/test_spark_sql_statements.py``), without this hook:

* ``CREATE TABLE t (cols) USING paimon [PARTITIONED BY] [TBLPROPERTIES] [OPTIONS]`` stores the
  column list in the session catalog, *drops* PARTITIONED BY, TBLPROPERTIES and OPTIONS, and
  never calls the source: OK, and no Paimon table. ``CREATE TABLE ... AS SELECT`` fails in the
  writer (no table named).
* ``INSERT INTO t SELECT ...`` hands the writer the query's columns; the table's identity (kept
  in the stored schema's field metadata) reaches it only on columns Spark renamed or cast, so
  the INSERT works or fails with the columns' names, types and nullability; and its rows reach
  the writer partitioned as the query left them (no shuffle by bucket: refused for a
  primary-key table unless from one task).
* ``SELECT ... FROM t VERSION AS OF n`` / ``TIMESTAMP AS OF ts``: refused by Spark's analyzer
  (``UNSUPPORTED_FEATURE.TIME_TRAVEL``: the session catalog never time-travels) before a
  source is asked; ``t$snapshots`` is a syntax error unquoted and a missing table quoted;
  ``paimon.`db.t``` (SQL on files) is refused for Python data sources
  (``UNSUPPORTED_DATASOURCE_FOR_DIRECT_QUERY``).

So ``spark.sql`` (classic sessions; the text is parsed by Spark's own parser, through the JVM)
runs them itself:

* ``CREATE TABLE [IF NOT EXISTS] t (cols) USING paimon ...``: creates the Paimon table
  (columns with NOT NULL and COMMENT, PARTITIONED BY identity columns as partition keys,
  TBLPROPERTIES and OPTIONS as Paimon table options, ``'primary-key'``; every key checked
  against :class:`paimon_core.CoreOptions`) named by ``OPTIONS (table 'db.t')`` or else by
  the statement's name (``db.t``, or the current database), then maps the session-catalog
  name to it (``CREATE TABLE t USING paimon OPTIONS (table 'db.t')``). ``... AS SELECT``:
  the same table from the query's columns, then the rows (``df.write``). ``REPLACE TABLE``
  with ``USING paimon`` is refused.
* ``INSERT INTO`` / ``INSERT OVERWRITE`` a ``USING paimon`` table: Spark analyzes it (column
  order, ``BY NAME``, column lists, casts, NOT NULL checks: a NULL bound for a NOT NULL column
  fails with Spark's ``NOT_NULL_ASSERT_VIOLATION`` naming the column), and the analyzed
  query is written with ``df.write.format("paimon")`` (``append`` / ``overwrite``): shuffled
  by bucket as ``save`` does, whatever the columns' names or nullability. Its options
  (``INSERT INTO t WITH ('file.compression' = 'gzip') ...``) are that write's options.
* ``FROM t VERSION AS OF <snapshot id | 'tag'>``, ``FROM t TIMESTAMP AS OF <expr>`` and
  ``FROM t$snapshots`` (any system table of ``table.inspect``; quoted or not): each such
  relation is replaced by a temporary view over ``spark.read.format("paimon")`` with
  ``scan.snapshot-id`` / ``scan.tag-name`` / ``scan.timestamp-millis`` (or the system table),
  then the statement runs (the views are dropped once it is analyzed). ``t`` is a
  ``USING paimon`` session-catalog table, or else a Paimon table ``db.t`` of the session's
  warehouse. Relations inside subquery expressions are not rewritten (Spark's error stays).

``SET spark.paimon.<key> = <value>`` (and ``RESET``) registers the source again with the new
conf: a Paimon table option set so applies to the session's later reads and writes (the
source's Python workers never see the session conf; ``spark.conf.set`` from Python needs
:func:`pipelines.sql.register_sql` called again).

Statements with parameters (``args``; a ``CREATE TABLE ... USING paimon`` with parameters is
refused), other statements, and Spark Connect sessions go to Spark unchanged: a parameterized
``INSERT`` reaches the source as Spark plans it (see :mod:`pipelines.spark_source.tables`).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from paimon_core import CoreOptions, DataField, Schema, SchemaError, UnsupportedError
from paimon_core.errors import TableAlreadyExistError, did_you_mean
from paimon_core.inspect import SYSTEM_TABLES
from pipelines.spark_source.source import FORMAT, options_settings
from pipelines.spark_source.tables import effective_options, table_identity
from pipelines.spark_types import paimon_type

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["catalog_options", "insert_into", "install_sql_hook", "refuse_parameterized_create",
           "run_statement", "table_parts"]

_HOOKED = "_paimon_sql_hook"
#: statements worth parsing (others go to Spark untouched)
_CANDIDATE = re.compile(r"(?is)\b(using\s+paimon|insert|as\s+of)\b|\$")
_DOLLAR = re.compile(r"(?<![\w`$.])((?:[A-Za-z_]\w*\.)?[A-Za-z_]\w*\$(?:"
                     + "|".join(SYSTEM_TABLES) + r"))(?![\w`])")
#: statements that change the session's ``spark.paimon.*`` conf
_SET_PAIMON = re.compile(r"(?is)^\s*(?:set\s+.*\bspark\.paimon\.|reset\b)")
_CREATE_PAIMON = re.compile(r"(?is)^\s*(create|replace)\b.*\busing\s+paimon\b")
#: keys of a CREATE TABLE's OPTIONS that name the table, not options of it
_IDENTITY_KEYS = ("table", "warehouse")
_STORAGE_PREFIXES = ("storage.", "s3.", "fs.")


def install_sql_hook(on_conf: Callable[[SparkSession], None]) -> None:
    """Make ``SparkSession.sql`` run the statements of the module docs itself (once);
    ``on_conf`` is called after a ``SET spark.paimon.<key>`` / ``RESET`` (the source's
    ``spark.paimon.*`` defaults are bound at registration: it registers them again)."""
    from pyspark.sql.session import SparkSession

    if getattr(SparkSession, _HOOKED, False):
        return
    orig = SparkSession.sql

    def sql(self: Any, sqlQuery: str, args: Any = None, **kwargs: Any) -> Any:
        if isinstance(sqlQuery, str) and _SET_PAIMON.search(sqlQuery):
            out = orig(self, sqlQuery, args, **kwargs)
            on_conf(self)
            return out
        if isinstance(sqlQuery, str) and _CANDIDATE.search(sqlQuery):
            if args is None and not kwargs:
                done = run_statement(self, sqlQuery, lambda text: orig(self, text))
                if done is not None:
                    return done
            else:
                refuse_parameterized_create(self, sqlQuery)
        return orig(self, sqlQuery, args, **kwargs)

    sql.__doc__ = orig.__doc__
    SparkSession.sql = sql  # type: ignore[method-assign]
    setattr(SparkSession, _HOOKED, True)


def _creates_paimon(plan: Any) -> bool:
    if str(plan.nodeName()) not in ("CreateTable", "CreateTableAsSelect", "ReplaceTable",
                                    "ReplaceTableAsSelect"):
        return False
    provider = plan.tableSpec().provider()
    return bool(provider.isDefined() and str(provider.get()).lower() == FORMAT)


def refuse_parameterized_create(spark: SparkSession, text: str) -> None:
    """A ``CREATE TABLE ... USING paimon`` with parameters (``spark.sql(text, args)``) is not
    run here (the parameters are Spark's to bind): refused rather than left to Spark, which
    would answer OK and create no Paimon table."""
    try:
        creates = _creates_paimon(spark._jsparkSession.sessionState().sqlParser().parsePlan(
            text))
    except Exception:  # a marker where Spark's parser takes only literals: by its text
        creates = bool(_CREATE_PAIMON.search(text))
    if creates:
        raise UnsupportedError("CREATE TABLE ... USING paimon with parameters (args) is not "
                               "supported: spark.sql runs it only as literal text")


def run_statement(spark: SparkSession, text: str, run: Any) -> DataFrame | None:
    """Run ``text`` when it is one of the statements of the module docs (``run``: Spark's own
    ``sql``); None: not one of them."""
    parser = spark._jsparkSession.sessionState().sqlParser()
    try:
        plan = parser.parsePlan(text)
    except Exception:
        fixed = _DOLLAR.sub(lambda m: f"`{m.group(1)}`", text)
        if fixed == text:
            return None  # Spark raises its own syntax error
        plan, text = parser.parsePlan(fixed), fixed
    kind = str(plan.nodeName())
    if kind in ("CreateTable", "CreateTableAsSelect", "ReplaceTable", "ReplaceTableAsSelect"):
        if not _creates_paimon(plan):
            return None
        if kind.startswith("Replace"):
            raise UnsupportedError("REPLACE TABLE ... USING paimon is not supported: DROP the "
                                   "catalog table and CREATE it again, or write with "
                                   "df.write.format('paimon').mode('overwrite')")
        if kind == "CreateTable" and plan.tableSchema().length() == 0:
            return None  # CREATE TABLE t USING paimon OPTIONS (table ...): the source maps it
        return _create(spark, plan, run, as_select=kind == "CreateTableAsSelect")
    if kind == "InsertIntoStatement":
        return _insert(spark, plan)
    return _time_travel(spark, plan, text, run)


# ---------------------------------------------------------------------------- py4j helpers


def _seq(seq: Any) -> list[Any]:
    return [seq.apply(i) for i in range(seq.length())]


def _map(scala_map: Any, jvm: Any) -> dict[str, str]:
    java = jvm.scala.jdk.javaapi.CollectionConverters.asJava(scala_map)
    return {str(k): str(v) for k, v in dict(java).items()}


def _empty(spark: SparkSession) -> DataFrame:
    from pyspark.sql.types import StructType

    return spark.createDataFrame([], StructType([]))


def _frame(spark: SparkSession, logical_plan: Any) -> DataFrame:
    from pyspark.sql import DataFrame

    jvm = spark._jvm
    assert jvm is not None
    jdf = jvm.org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, logical_plan)
    return DataFrame(jdf, spark)


def _struct(json_text: str) -> StructType:
    from pyspark.sql.types import StructType

    return StructType.fromJson(json.loads(json_text))


def _defaults(spark: SparkSession) -> dict[str, str]:
    from pipelines.spark_source.sql import session_defaults

    return session_defaults(spark)


# ---------------------------------------------------------------------------- CREATE TABLE


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _table_options(given: Mapping[str, str]) -> dict[str, str]:
    """The Paimon table options among a CREATE TABLE's TBLPROPERTIES and OPTIONS (the table's
    identity and storage options excluded); an unknown key is refused, naming the closest."""
    known = CoreOptions.declared_keys()
    out: dict[str, str] = {}
    for key, value in given.items():
        if key in _IDENTITY_KEYS or key.startswith(_STORAGE_PREFIXES):
            continue
        if key not in known and not key.startswith("fields."):
            close = did_you_mean(key, sorted(known))
            hint = f"; did you mean {close!r}?" if close else ""
            raise SchemaError(f"CREATE TABLE ... USING paimon: unknown table option {key!r}"
                              f"{hint} (Paimon table options are the keys of "
                              "paimon_core.CoreOptions)")
        out[key] = value
    return out


def _partition_keys(plan: Any) -> list[str]:
    keys: list[str] = []
    for t in _seq(plan.partitioning()):
        refs = list(t.references())
        if str(t.name()) != "identity" or len(refs) != 1:
            raise UnsupportedError(
                f"CREATE TABLE ... USING paimon: PARTITIONED BY {t.describe()} is not "
                "supported: partition by columns, and give TBLPROPERTIES ('bucket' = 'N', "
                "'bucket-key' = 'col') for buckets")
        keys.append(".".join(str(p) for p in refs[0].fieldNames()))
    return keys


def _create(spark: SparkSession, plan: Any, run: Any, *, as_select: bool) -> DataFrame:
    jvm = spark._jvm
    spec = plan.tableSpec()
    parts = [str(p) for p in _seq(plan.name().nameParts())]
    options = {str(t._1()): str(t._2().toString())
               for t in _seq(spec.optionExpression().options())}
    given = {**_map(spec.properties(), jvm), **options}
    if spec.location().isDefined():
        raise UnsupportedError("CREATE TABLE ... USING paimon: LOCATION is not supported (the "
                               "table lives in the warehouse; OPTIONS (warehouse '...'))")
    database = parts[-2] if len(parts) > 1 else spark.catalog.currentDatabase()
    ident = options.get("table") or f"{database}.{parts[-1]}"
    spark_name = ".".join(_quote(p) for p in parts)
    if spark.catalog.tableExists(".".join(parts)):
        if plan.ignoreIfExists():
            return _empty(spark)
        raise TableAlreadyExistError(".".join(parts))
    pks = [c.strip() for c in given.pop(CoreOptions.PRIMARY_KEY, "").split(",") if c.strip()]
    partitions = _partition_keys(plan)
    table_opts = _table_options(given)
    identity = {k: v for k, v in {**given, "table": ident}.items()
                if k in _IDENTITY_KEYS or k.startswith(_STORAGE_PREFIXES)}
    settings = options_settings(effective_options(identity, None, _defaults(spark)))
    if as_select:
        df = _frame(spark, plan.query())
        _write_new(df, identity, pks, partitions, table_opts, settings, ident,
                   plan.ignoreIfExists())
    else:
        _create_table(_struct(plan.tableSchema().json()), pks, partitions, table_opts,
                      spec, settings, ident, plan.ignoreIfExists())
    listed = ", ".join(f"{_literal(k)} {_literal(v)}" for k, v in identity.items())
    run(f"CREATE TABLE {spark_name} USING {FORMAT} OPTIONS ({listed})")
    return _empty(spark)


def _create_table(schema: StructType, pks: list[str], partitions: list[str],
                  table_opts: dict[str, str], spec: Any, settings: Any, ident: str,
                  if_not_exists: bool) -> None:
    names = [f.name for f in schema.fields]
    missing = [c for c in [*pks, *partitions] if c not in names]
    if missing:
        raise SchemaError(f"CREATE TABLE {ident}: key column(s) {missing} are not among the "
                          f"columns {names}")
    fields = tuple(
        DataField(-1, f.name, paimon_type(f.dataType, f.nullable and f.name not in pks),
                  (f.metadata or {}).get("comment"))
        for f in schema.fields)
    comment = str(spec.comment().get()) if spec.comment().isDefined() else None
    catalog = settings.catalog()
    if catalog.table_exists(ident) and not if_not_exists:
        raise SchemaError(f"table {ident} already exists in the warehouse: map it with "
                          f"CREATE TABLE <name> USING paimon OPTIONS (table '{ident}')")
    catalog.create_table(ident, Schema(fields, tuple(partitions), tuple(pks), table_opts,
                                       comment), ignore_if_exists=if_not_exists)


def _write_new(df: DataFrame, identity: Mapping[str, str], pks: list[str],
               partitions: list[str], table_opts: Mapping[str, str], settings: Any,
               ident: str, if_not_exists: bool) -> None:
    if settings.catalog().table_exists(ident):
        if if_not_exists:
            return
        raise SchemaError(f"table {ident} already exists in the warehouse: map it with "
                          f"CREATE TABLE <name> USING paimon OPTIONS (table '{ident}')")
    opts = {**identity, **table_opts}
    if pks:
        opts[CoreOptions.PRIMARY_KEY] = ",".join(pks)
    if partitions:
        opts[CoreOptions.PARTITION] = ",".join(partitions)
    df.write.format(FORMAT).options(**opts).save()


# ---------------------------------------------------------------------------- INSERT


def _command_mode(jvm: Any) -> Any:
    return getattr(getattr(jvm.org.apache.spark.sql.execution, "CommandExecutionMode$"),
                   "MODULE$").SKIP()


def _insert(spark: SparkSession, plan: Any) -> DataFrame | None:
    jss, jvm = spark._jsparkSession, spark._jvm
    analyzed = jss.sessionState().executePlan(plan, _command_mode(jvm)).analyzed()
    kind = str(analyzed.nodeName())
    if kind not in ("AppendData", "OverwriteByExpression", "OverwritePartitionsDynamic"):
        return None
    identity = table_identity(_struct(analyzed.table().schema().json()))
    if not identity:
        return None  # not a table of this source (or created outside this hook)
    df = _frame(spark, analyzed.query())
    mode = "append" if kind == "AppendData" else "overwrite"
    # INSERT INTO t WITH ('k' = 'v') ...: this write's options (Spark keeps them on the
    # relation; checked by the source, Paimon table options applied through the table's copy);
    # the table's identity is the catalog's. Spark's own entries start with "__".
    given = {str(k): str(v) for k, v in dict(analyzed.table().options()).items()
             if not str(k).startswith("__")}
    given.update(_map(analyzed.writeOptions(), jvm))
    df.write.format(FORMAT).options(**{**given, **identity}).mode(mode).save()
    return _empty(spark)


def table_parts(spark: SparkSession, name: str) -> list[str]:
    """A table name's parts, as Spark's parser splits them (backticks honoured)."""
    parser = spark._jsparkSession.sessionState().sqlParser()
    return [str(p) for p in _seq(parser.parseMultipartIdentifier(name))]


def insert_into(df: DataFrame, name: str, overwrite: bool) -> None:
    """``df.write.insertInto(name, overwrite)`` into a ``USING paimon`` table: the SQL
    ``INSERT`` of :func:`run_statement` over ``df`` (by position, as ``insertInto``)."""
    view = f"paimon_insert_{uuid.uuid4().hex[:12]}"
    df.createOrReplaceTempView(view)
    try:
        target = ".".join(_quote(p) for p in table_parts(df.sparkSession, name))
        verb = "OVERWRITE" if overwrite else "INTO"
        df.sparkSession.sql(f"INSERT {verb} {target} SELECT * FROM {view}")
    finally:
        df.sparkSession.catalog.dropTempView(view)


# ---------------------------------------------------------------------------- time travel


def _walk(node: Any) -> Iterator[Any]:
    yield node
    for child in (*_seq(node.children()), *_seq(node.innerChildren())):
        if hasattr(child, "children"):
            yield from _walk(child)


def catalog_options(spark: SparkSession, parts: list[str]) -> dict[str, str] | None:
    """The OPTIONS of session-catalog table ``parts`` when it is a ``USING paimon`` table;
    else, with a session warehouse, Paimon table ``db.t`` itself; else None."""
    jvm = spark._jvm
    assert jvm is not None
    catalog = spark._jsparkSession.sessionState().catalog()
    db = jvm.scala.Option.apply(parts[-2] if len(parts) > 1 else None)
    ti = jvm.org.apache.spark.sql.catalyst.TableIdentifier(parts[-1], db)
    if len(parts) <= 2 and catalog.tableExists(ti):
        meta = catalog.getTableMetadata(ti)
        if not (meta.provider().isDefined() and str(meta.provider().get()).lower() == FORMAT):
            return None
        opts = _map(meta.storage().properties(), jvm)
        if "path" in opts and "table" not in opts:
            opts["table"] = opts.pop("path")
        return opts
    if len(parts) == 2 and _defaults(spark).get("warehouse"):
        return {"table": ".".join(parts)}
    return None


def _travel_options(spark: SparkSession, node: Any) -> dict[str, str]:
    if node.version().isDefined():
        v = str(node.version().get())
        return {"scan.snapshot-id" if v.isdigit() else "scan.tag-name": v}
    expr = node.timestamp().get().sql()
    millis = spark.sql(f"SELECT CAST(unix_micros(CAST({expr} AS TIMESTAMP)) DIV 1000 AS BIGINT)"
                       ).first()
    assert millis is not None
    return {"scan.timestamp-millis": str(millis[0])}


def _reads(spark: SparkSession, plan: Any) -> list[tuple[int, int, dict[str, str]]]:
    """(start, stop, read options) of every relation to rewrite."""
    out: list[tuple[int, int, dict[str, str]]] = []
    for node in _walk(plan):
        name = str(node.nodeName())
        if name == "RelationTimeTravel" and str(node.relation().nodeName()) == \
                "UnresolvedRelation":
            rel = node.relation()
            opts = catalog_options(spark, [str(p) for p in _seq(rel.multipartIdentifier())])
            start, stop = rel.origin().startIndex(), node.origin().stopIndex()
            if opts is not None and start.isDefined() and stop.isDefined():
                out.append((int(start.get()), int(stop.get()),
                            {**opts, **_travel_options(spark, node)}))
        elif name == "UnresolvedRelation":
            parts = [str(p) for p in _seq(node.multipartIdentifier())]
            full = ".".join(parts)
            base, _, system = full.rpartition("$")
            if not base or system not in SYSTEM_TABLES:
                continue
            opts = catalog_options(spark, base.split("."))
            start, stop = node.origin().startIndex(), node.origin().stopIndex()
            if opts is not None and start.isDefined() and stop.isDefined():
                opts["table"] = f"{opts['table']}${system}"
                out.append((int(start.get()), int(stop.get()), opts))
    return out


def _time_travel(spark: SparkSession, plan: Any, text: str, run: Any) -> DataFrame | None:
    reads = _reads(spark, plan)
    if not reads:
        return None
    views: list[str] = []
    try:
        for start, stop, opts in sorted(reads, key=lambda r: -r[0]):
            view = f"paimon_read_{uuid.uuid4().hex[:12]}"
            spark.read.format(FORMAT).options(**opts).load().createOrReplaceTempView(view)
            views.append(view)
            text = f"{text[:start]}{view}{text[stop + 1:]}"
        result: DataFrame = run(text)
        return result
    finally:
        for view in views:
            spark.catalog.dropTempView(view)
