"""The production instance (docker/dagster-postgres.yaml) on a real PostgreSQL: Debian's
PostgreSQL server started on loopback by the test, a materialization run against it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from assets.derived import orders_enriched
from assets.metadata import RUN_ID_PROPERTY
from assets.tables import ORDERS, ORDERS_ENRICHED
from paimon_core.catalog import FileSystemCatalog
from tests.assets.helpers import commit_orders, order_rows
from tests.assets.processes import REPO, pg_bin, postgres

pytestmark = pytest.mark.skipif(pg_bin() is None, reason="needs Debian's postgresql package")


def test_postgres_instance_runs_a_materialization(
    tmp_path: Path, lake: dict[str, Path], resources: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch, s3_server: dict[str, str],
) -> None:
    cat = FileSystemCatalog(str(lake["warehouse"]))
    commit_orders(ORDERS.ensure(cat), order_rows([1, 2, 3], "new"), 1)
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "docker" / "dagster-postgres.yaml", home / "dagster.yaml")
    with postgres() as pg:
        for k, v in {"DAGSTER_PG_HOST": pg.host, "DAGSTER_PG_PORT": str(pg.port),
                     "DAGSTER_PG_USERNAME": pg.user, "DAGSTER_PG_PASSWORD": "",
                     "DAGSTER_PG_DB": pg.db,
                     # the instance's compute logs (S3ComputeLogManager) on moto
                     "DAGSTER_COMPUTE_LOGS_BUCKET": s3_server["bucket"],
                     "DAGSTER_COMPUTE_LOGS_PREFIX": "compute-logs",
                     "PAIMON_S3_ENDPOINT": s3_server["endpoint"],
                     "PAIMON_S3_REGION": "us-east-1"}.items():
            monkeypatch.setenv(k, v)
        with dg.DagsterInstance.from_config(str(home)) as instance:
            from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage

            assert isinstance(instance.run_storage, PostgresRunStorage)
            assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
            result = dg.materialize([orders_enriched], instance=instance,
                                    resources={"catalog": resources["catalog"]})
            assert result.success
            [run] = instance.get_runs()
            assert run.run_id == result.run_id and run.is_success
            event = instance.get_latest_materialization_event(dg.AssetKey(["mart",
                                                                           "orders_enriched"]))
            assert event is not None and event.run_id == result.run_id
            md = event.asset_materialization.metadata
            target = cat.get_table(ORDERS_ENRICHED.identifier)
            assert md["paimon/snapshot_id"].value == target.latest_snapshot().id
            assert target.latest_snapshot().properties[RUN_ID_PROPERTY] == result.run_id
        # the rows are in PostgreSQL, not in a local SQLite file
        import psycopg2

        conn = psycopg2.connect(host=pg.host, port=pg.port, user=pg.user, dbname=pg.db)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT run_id, status FROM runs")
                assert cur.fetchall() == [(result.run_id, "SUCCESS")]
        finally:
            conn.close()
        assert not list(home.glob("**/*.db"))
        # the step's stdout/stderr went to the compute logs' bucket, not a local directory
        import boto3

        listed = boto3.client("s3", endpoint_url=s3_server["endpoint"]).list_objects_v2(
            Bucket=s3_server["bucket"], Prefix="compute-logs/")
        keys = [o["Key"] for o in listed.get("Contents", ())]
        assert any(result.run_id in k for k in keys), keys
