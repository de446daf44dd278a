"""Dagster resources: the Paimon catalog, the landing zone and the Spark session.

Each resource is thin typed config with one way in (``load()`` / ``session()``); the storage
of the catalog and of the landing zone is a discriminated union (``kind: local | s3``). Two
resource sets come ready: :func:`local_resources` (the embedded defaults: a local warehouse,
Spark ``local[2]``) and :func:`production_resources` (S3-compatible storage, a Spark cluster),
both read their values from the environment *when a run starts* (``dg.EnvVar``), never at
import time.

Example:
    >>> catalog = PaimonCatalog(warehouse="/data/wh")                 # doctest: +SKIP
    >>> catalog.load().get_table("cdc.orders").latest_snapshot()      # doctest: +SKIP
    >>> PaimonCatalog(warehouse="s3://lake/wh", storage=S3Storage(endpoint="http://minio:9000"))
    ... # doctest: +SKIP
"""

import dataclasses
import os
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import dagster as dg
from pydantic import Field, PrivateAttr

from paimon_core import FileStoreTable, FileSystemCatalog, Identifier
from paimon_core.integration import FileIO, join
from pipelines.cluster import CONCURRENT_RUNS_ENV, ClusterShape, positive_int
from pipelines.config import CatalogSettings, SparkSettings, parse_pairs
from pipelines.connect import CONNECT_ENV, connect_mode

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "S3_ENV",
    "SPARK_POOL",
    "SPARK_STARTED",
    "LandingZone",
    "LocalStorage",
    "PaimonCatalog",
    "S3Storage",
    "SparkResource",
    "local_resources",
    "production_resources",
    "resources_for",
    "spark_pool_limit",
]

#: the environment variable of each :class:`S3Storage` field in production (docker/paimon.env)
S3_ENV = {"endpoint": "PAIMON_S3_ENDPOINT", "region": "PAIMON_S3_REGION",
          "access_key": "AWS_ACCESS_KEY_ID", "secret_key": "AWS_SECRET_ACCESS_KEY"}

#: the pool of every asset that runs Spark: ``dagster.yaml`` limits how many runs hold it
SPARK_POOL = "paimon-spark"
#: what the run's log says when a step opens the Spark session of its run
SPARK_STARTED = "Spark session started"


class LocalStorage(dg.Config):
    """Local disk (or ``memory://``): no options."""

    kind: Literal["local"] = "local"

    def options(self) -> dict[str, str]:
        return {}


class S3Storage(dg.Config):
    """An S3-compatible object store (AWS S3, MinIO, ...), reached through paimon_core's FileIO.

    Unset credentials fall back to the usual AWS environment variables / instance profile.
    """

    kind: Literal["s3"] = "s3"
    endpoint: str | None = Field(default=None, description="e.g. http://minio:9000")
    region: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    session_token: str | None = None
    max_attempts: int | None = Field(default=None, description="botocore attempts/request")

    def options(self) -> dict[str, str]:
        """The storage options of :class:`paimon_core.io.file_io.FileIO` (``s3.*``)."""
        pairs = {
            "s3.endpoint": self.endpoint,
            "s3.region": self.region,
            "s3.access-key": self.access_key,
            "s3.secret-key": self.secret_key,
            "s3.session-token": self.session_token,
            "s3.max-attempts": None if self.max_attempts is None else str(self.max_attempts),
        }
        return {k: v for k, v in pairs.items() if v}


Storage = LocalStorage | S3Storage


class PaimonCatalog(dg.ConfigurableResource):
    """The filesystem catalog of one warehouse (``<warehouse>/<db>.db/<table>/``).

    Attributes:
        warehouse: local path, ``memory://...`` or ``s3://bucket/prefix``.
        storage: how to reach it: ``{"kind": "local"}`` or ``{"kind": "s3", "endpoint": ...}``.
    """

    warehouse: str = Field(description="warehouse root: a local path or s3://bucket/prefix")
    storage: Storage = Field(default_factory=LocalStorage, discriminator="kind")

    def storage_options(self) -> dict[str, str]:
        return self.storage.options()

    def load(self) -> FileSystemCatalog:
        """A fresh catalog (a new FileIO each call: no listing cached across sensor ticks)."""
        return FileSystemCatalog(self.warehouse, self.storage_options())

    def table(self, identifier: str | Identifier) -> FileStoreTable:
        """Load a table (``TableNotExistError`` when absent)."""
        return self.load().get_table(identifier)

    def settings(self) -> CatalogSettings:
        """The same warehouse for the Spark jobs (:mod:`pipelines.config`)."""
        return CatalogSettings(self.warehouse, self.storage_options())


class LandingZone(dg.ConfigurableResource):
    """Where upstream systems drop files: CDC change events per table and landing day
    (``<root>/<db>.<table>/dt=<YYYY-MM-DD>/*.json``) and daily batch extracts."""

    root: str = Field(description="landing root: a local path or s3://bucket/prefix")
    storage: Storage = Field(default_factory=LocalStorage, discriminator="kind")

    def storage_options(self) -> dict[str, str]:
        return self.storage.options()

    def path(self, *parts: str) -> str:
        return join(self.root.rstrip("/"), *parts) if parts else self.root.rstrip("/")

    def day_dir(self, table: str, day: str) -> str:
        """The landing directory of one table and day."""
        return self.path(table, f"dt={day}")

    def file_io(self) -> FileIO:
        return FileIO(self.root, self.storage_options())

    def has_files(self, directory: str) -> bool:
        """Whether ``directory`` holds at least one non-hidden file."""
        fio = self.file_io()
        return any(
            not st.is_dir and not st.path.rsplit("/", 1)[-1].startswith((".", "_"))
            for st in fio.list_status(directory)
        )


def spark_pool_limit(instance: dg.DagsterInstance | None) -> int | None:
    """How many runs may hold :data:`SPARK_POOL` at once on ``instance``: the pool's limit
    (``python -m assets.pools`` registers it), else ``concurrency.pools.default_limit``; None
    without an instance or a limit."""
    if instance is None:
        return None
    try:
        limits = {p.name: p.limit for p in instance.event_log_storage.get_pool_limits()}
    except NotImplementedError:  # a storage without concurrency support
        limits = {}
    limit = limits.get(SPARK_POOL) or instance.global_op_concurrency_default_limit
    return int(limit) if limit else None


class SparkResource(dg.ConfigurableResource):
    """The Spark session of a run (:func:`pipelines.session.get_session`), created on first
    use and reused by the run's steps in the same process.

    By default (``connect: auto``) the session is a Spark Connect session of its own on the
    long-lived server that the runs share (:mod:`pipelines.connect`: found, or started on first
    use), so a run reaches its first Spark task in seconds, not after a JVM's start; the run's
    end closes the session and interrupts whatever it still runs there (a terminated run stops
    its Spark work). ``connect: sc://host:port`` uses a server the deployment runs
    (docker/compose.yaml); ``connect: off`` starts a classic session in the run's process (a
    JVM per run), as does any process that already runs a classic session (tests).

    A classic session on a standalone cluster takes its share of the cores
    (:func:`pipelines.cluster.run_share`): the cluster's shape from the environment
    (``PAIMON_SPARK_WORKERS``, ``SPARK_WORKER_CORES``), the number of runs at once from the
    instance's :data:`SPARK_POOL` limit (:func:`spark_pool_limit`). On a shared server the
    runs' jobs share the server application's cores through its FAIR scheduler.

    Attributes:
        master: ``local[2]`` (embedded) or ``spark://host:7077``.
        connect: ``auto``, ``off`` or ``sc://host:port`` (default: ``PAIMON_SPARK_CONNECT``,
            else ``auto``).
        conf: extra Spark conf (with ``connect: auto``: the conf of the server it starts).
        conf_pairs: more conf as ``k=v;k=v`` or a JSON object (e.g. from an env var).
    """

    master: str = "local[2]"
    app_name: str = "paimon-dagster"
    connect: str | None = None
    conf: dict[str, str] = Field(default_factory=dict)
    conf_pairs: str | None = None
    _concurrent_runs: int | None = PrivateAttr(default=None)
    _session: Any = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._concurrent_runs = spark_pool_limit(context.instance)

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        """A Spark Connect session: interrupt what it still runs (a failed or terminated run
        leaves nothing running on the shared server), close it, drop the server lease."""
        from pipelines.connect import release
        from pipelines.session import is_connect

        session, self._session = self._session, None
        if session is None or not is_connect(session):
            return
        for step in (session.interruptAll, session.stop):
            try:
                step()
            except Exception as e:  # the server gone: nothing of this run runs there
                dg.get_dagster_logger().warning(f"Spark Connect session: {step.__name__}: {e}")
        release()

    def settings(self) -> SparkSettings:
        conf = dict(self.conf)
        conf.update(parse_pairs(self.conf_pairs, what="spark conf"))
        runs = self._concurrent_runs or positive_int(os.environ, CONCURRENT_RUNS_ENV)
        connect = connect_mode(self.connect or os.environ.get(CONNECT_ENV) or "auto")
        return SparkSettings(master=self.master, app_name=self.app_name, conf=conf,
                             shape=ClusterShape.from_env(), concurrent_runs=runs,
                             connect=connect)

    def session(self) -> "SparkSession":
        """The session of this run; the first call starts it (a Spark Connect session: 1-3 s;
        a classic one: a JVM, 5-60 s), which the run's log records (:data:`SPARK_STARTED`)."""
        from pipelines.session import get_session

        if self._session is not None:
            return self._session  # type: ignore[no-any-return]
        settings = self.settings()
        classic = _classic_session()
        if classic is not None:  # this process runs a classic session already: reuse it
            self._session = get_session(dataclasses.replace(settings, connect=None))
            return self._session  # type: ignore[no-any-return]
        started = time.monotonic()
        self._session = get_session(settings)
        dg.get_dagster_logger().info(
            f"{SPARK_STARTED} ({_describe(self._session, settings.connect)}) in "
            f"{time.monotonic() - started:.1f} s")
        return self._session  # type: ignore[no-any-return]

    def run_metadata(self) -> dict[str, Any]:
        """The materialization metadata of the Spark application behind this run's session
        (its id, master, driver UI, core cap); empty when no Spark session was started."""
        active = self._session if self._session is not None else _classic_session()
        if active is None:
            return {}
        from pipelines.session import application_of

        app = application_of(active)
        meta: dict[str, Any] = {
            "spark/application_id": dg.MetadataValue.text(app.application_id),
            "spark/master": dg.MetadataValue.text(app.master),
        }
        if app.ui_url:
            meta["spark/ui_url"] = dg.MetadataValue.url(app.ui_url)
        cores = active.conf.get("spark.cores.max", None)
        if cores:
            meta["spark/cores_max"] = dg.MetadataValue.int(int(cores))
        return meta


def _classic_session() -> "SparkSession | None":
    """The classic (in-process) session this process runs, if any (no JVM is started)."""
    if "pyspark" not in sys.modules:
        return None
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is None:
        return None
    return SparkSession.getActiveSession()


def _describe(session: "SparkSession", connect: str | None) -> str:
    """What the run's log says of its session: the server it shares (and whether this run
    started it) or the master, the application, the core cap, the UI."""
    from pipelines.connect import current_server
    from pipelines.session import application_of, is_connect

    app = application_of(session)
    parts = [f"master {app.master}", f"application {app.application_id}"]
    if is_connect(session):
        server = current_server()
        if connect != "auto" or server is None:  # a server the deployment runs
            parts.insert(0, f"Spark Connect {connect}: connected to the deployment's server")
        else:
            info, started = server
            since = time.strftime("%H:%M:%S", time.gmtime(info.started))
            parts.insert(0, f"Spark Connect {info.url}: "
                            + ("started a server" if started else
                               f"connected to the existing server (up since {since} UTC)"))
    cores = session.conf.get("spark.cores.max", None)
    if cores:
        parts.append(f"{cores} cores at most")
    if app.ui_url:
        parts.append(f"UI {app.ui_url}")
    return ", ".join(parts)


def local_resources() -> dict[str, Any]:
    """The embedded defaults: warehouse and landing zone on local disk, Spark ``local[2]``.

    Environment (read when a run starts): ``PAIMON_WAREHOUSE``, ``PAIMON_LANDING``.
    """
    return {
        "catalog": PaimonCatalog(warehouse=dg.EnvVar("PAIMON_WAREHOUSE")),
        "landing": LandingZone(root=dg.EnvVar("PAIMON_LANDING")),
        "spark": SparkResource(master="local[2]"),
    }


def production_resources() -> dict[str, Any]:
    """S3-compatible storage and a Spark cluster (``docker/compose.yaml``).

    Environment (read when a run starts): ``PAIMON_WAREHOUSE`` / ``PAIMON_LANDING``
    (``s3://...``), ``PAIMON_S3_ENDPOINT``, ``PAIMON_S3_REGION``, ``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``, ``PAIMON_SPARK_MASTER``, ``PAIMON_SPARK_CONF``.
    """
    s3 = S3Storage(**{f: dg.EnvVar(v) for f, v in S3_ENV.items()})
    return {
        "catalog": PaimonCatalog(warehouse=dg.EnvVar("PAIMON_WAREHOUSE"), storage=s3),
        "landing": LandingZone(root=dg.EnvVar("PAIMON_LANDING"), storage=s3),
        "spark": SparkResource(
            master=dg.EnvVar("PAIMON_SPARK_MASTER"), conf_pairs=dg.EnvVar("PAIMON_SPARK_CONF")
        ),
    }


def resources_for(deployment: Literal["local", "production"]) -> Mapping[str, Any]:
    """The resource set of a deployment."""
    if deployment == "local":
        return local_resources()
    if deployment == "production":
        return production_resources()
    raise ValueError(f"unknown deployment {deployment!r}: expected local or production")
