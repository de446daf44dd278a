"""The SparkSession factory of every job and test.

Local mode (``local[*]``, the default) needs three things on this kind of machine (see
``shared/stack-notes.md``):

* ``PYSPARK_PYTHON`` = this interpreter, set *before* the JVM starts: otherwise the Python
  workers run the system ``python3``, which lacks pyarrow (``spark.pyspark.python`` is ignored
  for in-process sessions);
* loopback binding: ``SPARK_LOCAL_IP=127.0.0.1`` and ``spark.driver.bindAddress=127.0.0.1``;
* the workers must import ``pipelines`` and ``paimon_core``: their source root is put on
  ``PYTHONPATH`` (inherited by the JVM and its workers), so it works from a checkout
  whether or not the project is installed.

On a cluster (``master`` not ``local...``) nothing is bound to loopback and the master/conf come
from :class:`~pipelines.config.SparkSettings` (flags, ``PAIMON_SPARK_MASTER``,
``PAIMON_SPARK_CONF``). Under ``spark-submit`` the master given to ``spark-submit`` wins.
The session is registered with the ``paimon`` data source (:mod:`pipelines.spark_source.source`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from paimon_core import ConfigError
from pipelines.config import SparkSettings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["LOCAL_DEFAULTS", "SparkApplication", "application_of", "default_parallelism",
           "get_session", "is_connect", "known_partitions", "source_root"]

#: Conf applied to local sessions unless overridden (small shuffles, no UI, UTC).
LOCAL_DEFAULTS: dict[str, str] = {
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
}
#: where a Spark Connect server this project started publishes its driver UI (unset: no UI;
#: :func:`pipelines.connect.serve`)
UI_URL_CONF = "spark.pipelines.connect.uiUrl"
#: Conf applied to every session unless overridden.
COMMON_DEFAULTS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # the paimon source pushes filters into its scan (off by default in Spark 4.1+)
    "spark.sql.python.filterPushdown.enabled": "true",
}


@dataclass(frozen=True)
class SparkApplication:
    """The Spark application behind a session, as a run reports it.

    Attributes:
        application_id: ``app-...`` on a standalone cluster, ``local-...`` in local mode.
        ui_url: the driver's web UI (None when ``spark.ui.enabled`` is false, as in local mode).
        master: the master URL.
    """

    application_id: str
    ui_url: str | None
    master: str


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect client session (no SparkContext, no RDDs)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def application_of(spark: SparkSession) -> SparkApplication:
    """The application of ``spark``: asked of its SparkContext, or of a Spark Connect
    server's conf (``spark.app.id``, ``spark.master``; no job runs)."""
    if is_connect(spark):
        ui = spark.conf.get(UI_URL_CONF, None)
        return SparkApplication(application_id=str(spark.conf.get("spark.app.id")),
                                ui_url=ui or None, master=str(spark.conf.get("spark.master")))
    sc = spark.sparkContext
    return SparkApplication(application_id=sc.applicationId, ui_url=sc.uiWebUrl or None,
                            master=sc.master)


def default_parallelism(spark: SparkSession) -> int:
    """The number of tasks a job spreads small inputs over: ``defaultParallelism`` of the
    SparkContext, or on Spark Connect the server's ``spark.default.parallelism`` (the server
    this project starts always sets it, :func:`pipelines.connect.server_conf`), else the
    cores of a ``local[N]`` master, else 2 (Spark's own floor)."""
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    value = spark.conf.get("spark.default.parallelism", None)
    if value:
        return int(value)
    return local_cores(str(spark.conf.get("spark.master", "")) or "") or 2


def known_partitions(df: DataFrame) -> int | None:
    """The partitions of ``df`` (``df.rdd.getNumPartitions()``; None on Spark Connect, which
    does not tell without running a job)."""
    if is_connect(df.sparkSession):
        return None
    return int(df.rdd.getNumPartitions())


def local_cores(master: str) -> int | None:
    """The cores of a ``local``, ``local[N]``, ``local[N,F]`` or ``local[*]`` master (None for
    another master)."""
    if master == "local":
        return 1
    if not master.startswith("local["):
        return None
    first = master[len("local["):].rstrip("]").split(",")[0].strip()
    return os.cpu_count() or 1 if first == "*" else int(first)


def source_root() -> str:
    """The directory holding the ``pipelines`` and ``paimon_core`` packages."""
    return str(Path(__file__).resolve().parent.parent)


def _prepend_pythonpath(path: str) -> None:
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if path not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([path, *parts])


def get_session(
    settings: SparkSettings | None = None,
    *,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str | None = None,
    register_source: bool = True,
) -> SparkSession:
    """The active SparkSession, created if needed, with the ``paimon`` data source registered.

    Args:
        settings: master / app name / conf (default: :meth:`SparkSettings.from_env`).
        master: overrides ``settings.master``.
        conf: extra conf, applied over ``settings.conf``.
        app_name: overrides ``settings.app_name``.
        register_source: register the ``paimon`` data source (:func:`register`); a job that
            never reads or writes through it (``pipelines.compact``) passes False and spares
            the session Spark's lookup of Python data sources (a Python worker, ~1 s CPU).

    Returns:
        The session. If one is already running in this process it is reused (its master and
        static conf cannot change then).
    """
    from pyspark.sql import SparkSession

    settings = settings or SparkSettings.from_env()
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # launched by spark-submit
    chosen_master = master or settings.master
    if settings.connect is not None and not under_submit:
        return connect_session(settings.connect, chosen_master,
                               {**settings.connect_conf(), **(conf or {})},
                               register_source=register_source)
    local = chosen_master.startswith("local")
    if local and not under_submit:
        # the workers are started by the JVM from this process's environment
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    _prepend_pythonpath(source_root())
    # the driver-side Python runners (a stream reader's offsets) honour only this variable,
    # not the hideTraceback conf set by register(): a Paimon error's message comes first
    os.environ.setdefault("SPARK_HIDE_TRACEBACK", "1")

    merged: dict[str, str] = dict(COMMON_DEFAULTS)
    if local and not under_submit:
        merged.update(LOCAL_DEFAULTS)
    merged.update(settings.session_conf())
    merged.update(conf or {})
    builder = SparkSession.builder.appName(app_name or settings.app_name)
    if not under_submit or master is not None:
        builder = builder.master(chosen_master)
    for k, v in merged.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    if register_source:
        register(spark)
    return spark


def connect_session(connect: str, master: str, conf: Mapping[str, str], *,
                    register_source: bool = True) -> SparkSession:
    """A Spark Connect session of this process (the same one on every call until stopped).

    ``connect="auto"``: on the server of ``master`` and ``conf`` that
    :func:`pipelines.connect.ensure_server` finds or starts (``conf`` is the server's); an
    ``sc://`` address: on that server, with ``conf`` set on the session.

    Raises:
        ConfigError: a conf key the server does not let a session set (a static one, such as
            ``spark.executor.memory``: it belongs to the server's own conf).
    """
    from pyspark.sql import SparkSession

    from pipelines.connect import ensure_server

    session_conf = dict(COMMON_DEFAULTS)
    if connect == "auto":
        url = ensure_server(master, conf)[0].url
    else:
        url = connect
        session_conf.update(conf)
    spark = SparkSession.builder.remote(url).getOrCreate()
    for key, value in session_conf.items():
        if spark.conf.get(key, None) == value:
            continue
        try:
            spark.conf.set(key, value)
        except Exception as e:  # pyspark's AnalysisException: CANNOT_MODIFY_CONFIG
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ConfigError(key, f"cannot be set on a session of the Spark Connect server "
                                   f"{url} ({first}); set it in the server's conf") from e
    if register_source:
        register(spark)
    return spark


_HIDE_TRACEBACK = "spark.sql.execution.pyspark.udf.hideTraceback.enabled"


def register(spark: SparkSession) -> None:
    """Register the ``paimon`` format (``spark.read.format("paimon")``) and the Paimon SQL
    functions on ``spark`` (:func:`pipelines.spark_source.sql.register_sql`, with the session's
    ``spark.paimon.*`` conf, e.g. ``spark.paimon.warehouse``)."""
    from pipelines.spark_source.sql import register_sql

    # a Paimon error from the source reaches the user as its typed message (the first line of
    # Spark's AnalysisException), without the Python traceback before it -- unless the user set
    # this conf (it applies to every Python UDF of the session)
    if spark.conf.get(_HIDE_TRACEBACK, None) is None:
        spark.conf.set(_HIDE_TRACEBACK, "true")
    # the source pushes filters into its scan; Spark refuses such a source unless this is on
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    register_sql(spark)
