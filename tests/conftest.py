"""Shared fixtures: temporary warehouses and catalogs, the one local SparkSession, a moto S3
server on loopback; the Hypothesis profiles (``tests/profiles.py``) and the per-folder timing
plugin (``tests/_timing.py``)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from tests._timing import FolderTimes
from tests.interop.oracle import ORACLE_PY
from tests.modload import load_module
from tests.profiles import register_profiles
from tests.tables import make_catalog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

os.environ.setdefault("TZ", "UTC")
HYPOTHESIS_PROFILE = register_profiles()


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(FolderTimes(Path(__file__).parent), "paimon-folder-times")


#: folders whose tests share session-scoped resources too costly to build once per worker:
#: the interop oracle batches (tests/interop/conftest.py), the 16-process race pool
#: (tests/reliability/conftest.py), the SparkSession most of tests/pipelines uses
_SESSION_FOLDERS = ("interop", "reliability", "pipelines")


def xdist_unit(nodeid: str) -> str:
    """The unit of work of ``make test``'s pytest-xdist run that ``nodeid`` belongs to: its
    folder for :data:`_SESSION_FOLDERS`, else its module (its module-scoped fixtures: a
    ``dagster dev``, a Postgres, an oracle batch)."""
    path = nodeid.split("::", 1)[0]
    parts = path.split("/")
    if len(parts) > 2 and parts[0] == "tests" and parts[1] in _SESSION_FOLDERS:
        return parts[1]
    return path


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` (``make test``) schedules whole :func:`xdist_unit` units, each on
    one worker. (xdist's own ``xdist_group`` marks do not reach its scheduler under pytest 9:
    they rename ``Item._nodeid``, which pytest 9 no longer reads.)"""
    if config.getoption("dist", default="no") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_unit(nodeid)

    return GroupScheduling(config, log)


def pytest_report_header() -> str:
    return f"hypothesis profile: {HYPOTHESIS_PROFILE}"


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """A temporary warehouse directory (``tmp_path / "wh"``, created by the first table)."""
    return tmp_path / "wh"


@pytest.fixture
def catalog(warehouse: Path) -> FileSystemCatalog:
    """A catalog over :func:`warehouse`."""
    return make_catalog(warehouse)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The one local SparkSession of the test session (``local[2,2]``: two cores, and one
    retry per task so that the task-retry tests can kill an attempt)."""
    pytest.importorskip("pyspark")
    # pyspark is optional for the paimon_core suites: imported only when a test asks for Spark
    from pipelines.config import SparkSettings
    from pipelines.connect import connect_mode
    from pipelines.session import get_session, is_connect

    # PAIMON_TEST_SPARK_CONNECT=auto (or sc://host:port): the same tests over Spark Connect
    connect = connect_mode(os.environ.get("PAIMON_TEST_SPARK_CONNECT"))
    session = get_session(
        SparkSettings(connect=connect),
        master="local[2,2]",
        app_name="paimon-pipelines-tests",
        conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
              "spark.sql.adaptive.enabled": "false"},
    )
    if not is_connect(session):
        session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def oracle() -> ModuleType:
    """The oracle's Python module (``shared/oracle/paimon_oracle.py``: stdlib-only at import),
    loaded by path, one instance per test module. Skipped when shared/ is not beside the repo
    (fails under ``CI=true``)."""
    if not ORACLE_PY.is_file():
        msg = f"oracle module not found at {ORACLE_PY}"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return load_module(ORACLE_PY, "paimon_oracle", register=False)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[dict[str, str]]:
    """A real S3 endpoint (moto_server) on 127.0.0.1, with one bucket."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    creds = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    old = {k: os.environ.get(k) for k in creds}
    os.environ.update(creds)
    import boto3

    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(
        Bucket="warehouse"
    )
    try:
        yield {"endpoint": endpoint, "bucket": "warehouse"}
    finally:
        server.stop()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def s3_root(s3_server: dict[str, str]) -> tuple[str, dict[str, str]]:
    """A fresh prefix in the moto bucket and the storage options to reach it."""
    root = f"s3://{s3_server['bucket']}/{uuid.uuid4().hex}"
    return root, {
        "s3.endpoint": s3_server["endpoint"],
        "s3.access-key": "testing",
        "s3.secret-key": "testing",
        "s3.region": "us-east-1",
    }
