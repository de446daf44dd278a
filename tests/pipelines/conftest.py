"""One local SparkSession for the whole test session (``local[2,2]``: two cores, and one
retry per task so that the task-retry tests can kill an attempt)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    pytest.importorskip("pyspark")
    from pipelines.session import get_session

    session = get_session(
        master="local[2,2]",
        app_name="paimon-pipelines-tests",
        conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
              "spark.sql.adaptive.enabled": "false"},
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
