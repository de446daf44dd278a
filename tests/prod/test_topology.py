"""The production deployment run for real (issue 19): the compose topology as loopback
processes (``scripts/topology.py``), the demo's story driven only through the daemon and
GraphQL (``scripts/prod_demo.py``), checked against independent references: the feed's own
expected state (``assets.demo_data.generate`` into memory), the Spark master's and workers'
JSON, the S3 bucket listed directly, ``fsck`` on every table."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.prod.conftest import REPO

DAYS = ("2025-01-06", "2025-01-07", "2025-01-08")
SERVICES = {"moto", "spark-master", "spark-worker-0", "spark-worker-1", "spark-connect",
            "code-server", "webserver", "daemon"}


@pytest.fixture(scope="module")
def story(topo: Any, prod_demo: ModuleType) -> dict[str, Any]:
    """The whole story, once per module (each test checks one part of it)."""
    # the derived table's snapshot sensor ships running: stopped here to keep the run short
    # (its runs are the sensor tests' subject, tests/assets); the landing sensor drives this
    prod_demo.sensor(topo, "cdc_orders_snapshot_sensor", start=False)
    # two buckets compacted (one batch), and the expiry run keeps 2 snapshots of cdc.orders
    # (launchpad config) so the compacted-away files go: 3 ingestion + 2 compaction snapshots
    return dict(prod_demo.story(topo, buckets=range(2), retain_max=2, timeout=600))


def test_every_service_is_up(topo: Any) -> None:
    assert set(topo.services) == SERVICES
    topo.check_alive()
    assert topo.pg is not None and topo.pg.info.password  # generated, password auth
    assert len(topo.alive_workers()) == 2
    statuses = topo.daemon_statuses()
    assert {"SENSOR", "SCHEDULER", "QUEUED_RUN_COORDINATOR"} <= set(statuses)
    assert all(statuses.values()), statuses


def test_one_configuration_with_compose(topo: Any, topology_module: ModuleType) -> None:
    """The services' env = docker/paimon.env + loopback overrides + generated secrets; the
    instance is docker/dagster-postgres.yaml as is."""
    file_env = topology_module.compose_env()
    overrides = topo.overrides()
    for key, value in file_env.items():
        if key in overrides or key in topology_module.SECRETS:
            continue
        assert topo.env[key] == value, key
    for key in topology_module.SECRETS:
        assert topo.env[key] and topo.env[key] != file_env.get(key), key
    conf = topology_module.parse_spark_conf(topo.env["PAIMON_SPARK_CONF"])
    file_conf = topology_module.parse_spark_conf(file_env["PAIMON_SPARK_CONF"])
    assert conf["spark.driver.host"] == "127.0.0.1"
    assert {k: v for k, v in conf.items() if k not in topology_module.SPARK_LOOPBACK_CONF} \
        == {k: v for k, v in file_conf.items() if k not in topology_module.SPARK_LOOPBACK_CONF}
    assert (topo.dagster_home / "dagster.yaml").read_bytes() == \
        (REPO / "docker" / "dagster-postgres.yaml").read_bytes()


def test_deployed_copy_is_what_runs(topo: Any, story: dict[str, Any]) -> None:
    """Driver and executors import paimon_core from the non-editable install, not from the
    repository; the executors run outside the repository, in the workers' work dirs."""
    probe = story["probe"]
    site = str(topo.site)
    assert probe["driver"].startswith(site + "/")
    assert probe["executors"]
    for e in probe["executors"]:
        assert e["file"].startswith(site + "/"), e
        assert not Path(e["cwd"]).is_relative_to(REPO), e
        assert Path(e["cwd"]).is_relative_to(topo.root), e
    assert not Path(probe["cwd"]).is_relative_to(REPO)


def test_landing_sensor_ingests_every_day(topo: Any, story: dict[str, Any]) -> None:
    from assets.demo_data import generate
    from paimon_core import FileSystemCatalog
    from paimon_core.fsck import fsck
    from paimon_core.integration import FileIO

    runs = story["ingest_runs"]
    tags = [{t["key"]: t["value"] for t in r["tags"]} for r in runs]
    assert sorted(t["dagster/partition"] for t in tags) == list(DAYS)
    assert {t.get("dagster/sensor_name") for t in tags} == {"cdc_landing_sensor"}
    assert {r["status"] for r in runs} == {"SUCCESS"}
    # the tables on S3 equal the feed's expected state (generated again, into memory)
    expected = generate(FileIO("memory://prod-feed"), "memory://prod-feed/landing")
    cat = FileSystemCatalog(topo.env["PAIMON_WAREHOUSE"], topo.s3_options())
    for identifier, want, key in (("cdc.orders", expected.orders, "order_id"),
                                  ("cdc.customers", expected.customers, "customer_id")):
        table = cat.get_table(identifier)
        got = {r[key]: r for r in table.to_arrow().to_pylist()}
        assert sorted(got) == sorted(want), identifier
        if identifier == "cdc.orders":
            assert {k: r["status"] for k, r in got.items()} == \
                {k: r["status"] for k, r in want.items()}
        report = fsck(table, deep=True)
        assert report.ok, report.errors


def test_compaction_runs_on_the_cluster(topo: Any, story: dict[str, Any],
                                        prod_demo: ModuleType) -> None:
    runs = story["compaction_runs"]
    assert {r["status"] for r in runs} == {"SUCCESS"}
    statuses = [prod_demo.materializations(r)["maintenance/cdc_orders_compaction"]
                ["compact/status"] for r in runs]
    assert statuses.count("compacted") >= 1, statuses
    apps = story["compaction_apps"]
    # the runs share one Spark application, the Spark Connect server's (compose's
    # spark-connect, pipelines/connect.py), with executors in the workers' JVMs
    assert len(apps) == 1, apps
    [(app, workers)] = apps.items()
    assert workers, apps
    master = prod_demo.spark_apps(topo)
    assert master[app]["name"] == "paimon-spark-connect", master[app]
    # every compacting run names it in its metadata; no run caps its cores (the server's FAIR
    # scheduler shares them between the runs' jobs)
    compacted = [md for md in (prod_demo.materializations(r)["maintenance/cdc_orders_compaction"]
                               for r in runs) if md["compact/status"] == "compacted"]
    assert {md["spark/application_id"] for md in compacted} == {app}, (compacted, apps)
    assert all(md.get("spark/cores_max") is None for md in compacted), compacted


def test_expiry_frees_bytes_on_s3(topo: Any, story: dict[str, Any],
                                  prod_demo: ModuleType) -> None:
    assert story["expiry_run"]["status"] == "SUCCESS"
    (_, before), (_, after) = story["warehouse_before"], story["warehouse_after"]
    freed = sum(md.get("expire/bytes_freed") or 0
                for md in prod_demo.materializations(story["expiry_run"]).values())
    # the table reports the data files it freed; the bucket listed directly shrank (by the
    # freed files and the expired metadata, less the hint files expiry rewrites)
    assert freed > 0
    assert after < before


def test_every_run_log_is_served_by_the_webserver(topo: Any, story: dict[str, Any]) -> None:
    runs = [*story["ingest_runs"], *story["compaction_runs"], story["expiry_run"]]
    for r in runs:
        captures = story["logs"][r["runId"]]
        assert captures, r["runId"]
        text = "".join(c["stdout"] + c["stderr"] for c in captures.values())
        assert text.strip(), r["runId"]
    # a compaction run's captured log names the Spark Connect server its Spark work ran on;
    # Spark's own output (the driver JVM's) is that server's log (compose: its service log)
    spark_run = story["compaction_runs"][0]["runId"]
    stderr = "".join(c["stderr"] for c in story["logs"][spark_run].values())
    assert "Spark session started (Spark Connect sc://" in stderr, stderr[-2000:]
    assert "log4j" in topo.services["spark-connect"].log.read_text()
    objects, _ = story["compute_logs_on_s3"]
    assert objects >= len(runs)


def test_fault_hooks_leave_a_working_topology(topo: Any, prod_demo: ModuleType) -> None:
    """The hooks of the fault tests (tests/prod/test_faults.py): each one takes its service
    down and back, and the topology answers again afterwards. Runs last (after the story)."""
    import botocore.exceptions

    bucket = topo.buckets()[0]
    client = topo.s3_client()
    with topo.s3_outage():
        with pytest.raises(botocore.exceptions.ClientError) as err:
            client.head_bucket(Bucket=bucket)
        assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    client.head_bucket(Bucket=bucket)

    topo.kill_spark_worker(1)
    assert not topo.services["spark-worker-1"].alive
    topo.start_spark_worker(1)
    assert len(topo.alive_workers()) == topo.workers

    topo.restart_postgres()
    topo.restart_code_server()
    topo.wait_webserver()
    # the webserver and the daemon still serve the instance (runs from Postgres)
    assert prod_demo.runs(topo, "cdc_ingest_job") is not None
    topo.wait_daemon()
    topo.check_alive()
