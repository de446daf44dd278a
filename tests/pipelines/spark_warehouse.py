"""A warehouse bound to the test session's SparkSession as ``spark.paimon.warehouse`` (the
one home of the SQL modules' ``wh`` fixture)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest


def session_warehouse(spark: Any, tmp_path_factory: pytest.TempPathFactory, name: str,
                      drop: Sequence[str] = ()) -> Iterator[Path]:
    """Yield a fresh warehouse set as ``spark.paimon.warehouse`` (registered with
    :func:`pipelines.spark_source.sql.register_sql`); afterwards the catalog tables ``drop`` are
    dropped
    and the conf unset."""
    from pipelines.spark_source.sql import register_sql

    path = tmp_path_factory.mktemp(name) / "wh"
    spark.conf.set("spark.paimon.warehouse", str(path))
    register_sql(spark)
    yield path
    for table in drop:
        spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.conf.unset("spark.paimon.warehouse")
    register_sql(spark)
