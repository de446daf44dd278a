"""Configuration shared by the Spark jobs: where the warehouse is, how to reach its storage,
and which Spark master / conf to use.

Everything can come from command-line flags, and falls back to the environment so that a
cluster deployment (``spark-submit``, a Dagster step, a container) sets it once:

========================  ===================================================================
``PAIMON_WAREHOUSE``       warehouse root (local path, ``memory://`` or ``s3://bucket/prefix``)
``PAIMON_STORAGE_OPTIONS`` storage options as ``k=v`` pairs separated by ``;`` or a JSON object
                           (``s3.endpoint``, ``s3.access-key``, ...; see ``paimon_core.io``)
``PAIMON_SPARK_MASTER``    Spark master (default ``local[*]``)
``PAIMON_SPARK_CONF``      extra Spark conf, ``k=v`` pairs separated by ``;`` or a JSON object
``PAIMON_SPARK_CONNECT``   ``off`` (default here: an in-process session), ``auto`` or
                           ``sc://host:port``: a Spark Connect session (:mod:`pipelines.connect`)
========================  ===================================================================

On a standalone cluster, a run's share of the cores (``spark.cores.max``,
``spark.executor.cores``) follows from the cluster's shape and the number of concurrent runs
(:mod:`pipelines.cluster`: ``PAIMON_SPARK_WORKERS``, ``SPARK_WORKER_CORES``,
``PAIMON_SPARK_CONCURRENT_RUNS``).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from paimon_core import (
    FileStoreTable,
    FileSystemCatalog,
    Identifier,
    Schema,
    SchemaError,
    TableSchema,
)
from paimon_core.cli.args import key_values, storage_options
from paimon_core.integration import FileIO, limit_threads
from pipelines.cluster import CONCURRENT_RUNS_ENV, SHARE_KEYS, ClusterShape, positive_int, run_share
from pipelines.connect import CONNECT_ENV, connect_mode

_CATALOG = "_catalog"  # CatalogSettings' catalog, built once
_TABLE = "_table"  # TableHandle's table, opened once

__all__ = [
    "CatalogSettings",
    "SparkSettings",
    "TableHandle",
    "limit_task_threads",
    "load_schema_file",
    "parse_pairs",
]


def parse_pairs(text: str | None, *, what: str = "option") -> dict[str, str]:
    """``"a=1;b=2"`` or ``'{"a": "1"}'`` -> ``{"a": "1", "b": "2"}`` (empty for None/blank).

    Raises:
        ValueError: an item without ``=``, or invalid JSON.
    """
    if text is None or not text.strip():
        return {}
    s = text.strip()
    if s.startswith("{"):
        obj = json.loads(s)  # starts with "{": an object or a JSONDecodeError (ValueError)
        return {str(k): str(v) for k, v in obj.items()}
    out: dict[str, str] = {}
    for item in s.split(";"):
        if not item.strip():
            continue
        if "=" not in item:
            raise ValueError(f"{what} {item!r} is not KEY=VALUE")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


@dataclass(frozen=True)
class CatalogSettings:
    """A warehouse and the storage options to reach it (picklable; shipped to tasks).

    :meth:`catalog` is built once per settings object (and so per job run on the driver, and
    per task on an executor, which unpickles its own copy): one catalog, one FileIO and one
    manifest cache however many times a job asks for them.
    """

    warehouse: str
    storage_options: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_args(cls, args: argparse.Namespace, env: Mapping[str, str] | None = None
                  ) -> CatalogSettings:
        """From ``--warehouse`` / ``--storage-option`` (repeatable), else the environment.

        Raises:
            ValueError: no warehouse given anywhere; ``ConfigError`` (a ``ValueError``): a
                malformed ``--storage-option``.
        """
        env = os.environ if env is None else env
        warehouse = getattr(args, "warehouse", None) or env.get("PAIMON_WAREHOUSE")
        if not warehouse:
            raise ValueError("no warehouse: pass --warehouse or set PAIMON_WAREHOUSE")
        opts = parse_pairs(env.get("PAIMON_STORAGE_OPTIONS"), what="storage option")
        opts.update(storage_options(args))
        return cls(warehouse, opts)

    def catalog(self) -> FileSystemCatalog:
        """The catalog of the warehouse, built on the first call."""
        cat: FileSystemCatalog | None = self.__dict__.get(_CATALOG)
        if cat is None:
            cat = FileSystemCatalog(self.warehouse, dict(self.storage_options))
            object.__setattr__(self, _CATALOG, cat)
        return cat

    def file_io(self) -> FileIO:
        """The catalog's FileIO (storage of the warehouse)."""
        return self.catalog().file_io

    def __getstate__(self) -> dict[str, object]:
        # ship the settings, not the catalog (its manifest cache holds locks)
        return {k: v for k, v in self.__dict__.items() if k != _CATALOG}


@dataclass(frozen=True)
class TableHandle:
    """A picklable handle on one table with its schema pinned: made on the driver, opened in
    Spark tasks without touching storage (every task then writes / reads with the same schema).

    :meth:`open` returns one table object per handle (on the driver, the table the handle was
    made from): a job opens its table once and passes the handle down. A handle on a
    :meth:`~paimon_core.FileStoreTable.copy` carries its dynamic options: ``schema`` is the
    copy's (its options overlaid) and every task opens the same copy.
    """

    settings: CatalogSettings
    identifier: str
    path: str
    schema: TableSchema
    dynamic_options: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, settings: CatalogSettings, table: FileStoreTable) -> TableHandle:
        """A handle on ``table`` (already open: :meth:`open` returns it)."""
        handle = cls(settings, str(table.identifier), table.path, table.schema,
                     tuple(sorted(table.dynamic_options.items())))
        object.__setattr__(handle, _TABLE, table)
        return handle

    @classmethod
    def load(cls, settings: CatalogSettings, identifier: str) -> TableHandle:
        """Load the table's latest schema (raises ``TableNotExistError``)."""
        return cls.of(settings, settings.catalog().get_table(identifier))

    def open(self) -> FileStoreTable:
        """The table with the pinned schema, made on the first call (none of storage read)."""
        table: FileStoreTable | None = self.__dict__.get(_TABLE)
        if table is None or table.schema.id != self.schema.id:  # altered since: a fresh one
            cat = self.settings.catalog()
            table = FileStoreTable(cat.file_io, self.path, Identifier.parse(self.identifier),
                                   self.schema, cat.manifest_cache, dict(self.dynamic_options))
            object.__setattr__(self, _TABLE, table)
        return table

    def __getstate__(self) -> dict[str, object]:
        # a task opens its own table from the settings
        return {k: v for k, v in self.__dict__.items() if k != _TABLE}


@dataclass(frozen=True)
class SparkSettings:
    """Spark master, application name and extra conf for :func:`pipelines.session.get_session`.

    ``shape`` and ``concurrent_runs`` (both known, on a cluster master) size the run:
    :meth:`session_conf` adds :func:`pipelines.cluster.run_share` under the explicit ``conf``.
    """

    master: str = "local[*]"
    app_name: str = "paimon-pipelines"
    conf: Mapping[str, str] = field(default_factory=dict)
    shape: ClusterShape | None = None
    concurrent_runs: int | None = None
    #: None: a classic in-process session; ``auto`` / ``sc://host:port``: a Spark Connect
    #: session (:mod:`pipelines.connect`)
    connect: str | None = None

    @property
    def is_local(self) -> bool:
        return self.master.startswith("local")

    def share_conf(self) -> dict[str, str]:
        """This run's share of the cluster (empty in local mode, or when the cluster's shape or
        the number of concurrent runs is unknown)."""
        if self.is_local or self.shape is None or self.concurrent_runs is None:
            return {}
        return run_share(self.shape, self.concurrent_runs)

    def session_conf(self) -> dict[str, str]:
        """:meth:`share_conf` overlaid with ``conf`` (an explicit ``spark.cores.max`` /
        ``spark.executor.cores`` wins, and then the rule is not applied at all)."""
        explicit = dict(self.conf)
        if any(k in explicit for k in SHARE_KEYS):
            return explicit
        return {**self.share_conf(), **explicit}

    def connect_conf(self) -> dict[str, str]:
        """The conf of a Spark Connect session: ``conf`` only. The runs share the server's
        one application, whose FAIR scheduler shares its cores between their jobs: a per-run
        share (``spark.cores.max``) is the server's to set, not a session's."""
        return dict(self.conf)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, app_name: str | None = None
                 ) -> SparkSettings:
        env = os.environ if env is None else env
        return cls(
            master=env.get("PAIMON_SPARK_MASTER") or "local[*]",
            app_name=app_name or "paimon-pipelines",
            conf=parse_pairs(env.get("PAIMON_SPARK_CONF"), what="spark conf"),
            shape=ClusterShape.from_env(env),
            concurrent_runs=positive_int(env, CONCURRENT_RUNS_ENV),
            connect=connect_mode(env.get(CONNECT_ENV)),
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace, env: Mapping[str, str] | None = None,
                  *, app_name: str | None = None) -> SparkSettings:
        """``--master`` / ``--conf k=v`` (repeatable) over :meth:`from_env`."""
        base = cls.from_env(env, app_name=app_name)
        conf = dict(base.conf)
        conf.update(key_values(getattr(args, "conf", None), "--conf"))
        return replace(base, master=getattr(args, "master", None) or base.master, conf=conf)


def limit_task_threads() -> None:
    """In a Spark task: paimon_core's pools and Arrow's to the task's cores
    (``spark.task.cpus``, usually 1), as the other tasks of the executor use the other cores
    (no pool of cores-many threads per task; :mod:`paimon_core.threads`). No-op elsewhere."""
    from pyspark import TaskContext

    tc = TaskContext.get()
    if tc is not None:
        limit_threads(tc.cpus())


def load_schema_file(path: str) -> Schema:
    """The table schema of a job's ``--schema`` JSON file; every error names the file (and
    the column: ``orders.json: column 'id': unknown type 'BIGNT' ... (did you mean
    'BIGINT'?)``).

    Raises:
        SchemaError: unreadable, not JSON, or not a schema.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            obj = json.load(fh)
    except (OSError, ValueError) as e:
        raise SchemaError(f"--schema {path}: {e}") from e
    if not isinstance(obj, dict):
        raise SchemaError(f"--schema {path}: not a JSON object")
    return Schema.from_json(obj, source=path)
