"""docker/: Docker cannot run here, so check statically that the compose file parses, every file
it (and the Dockerfile) references exists, the image installs the repository's exact pins,
and the instance files are valid Dagster instance config."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    assert isinstance(data, dict)
    return data


def _dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    lines: list[str] = []
    buf = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        lines.append(buf + line)
        buf = ""
    return [(ln.split(None, 1)[0].upper(), ln.split(None, 1)[1]) for ln in lines]


def test_compose_has_the_whole_deployment(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"postgres", "minio", "spark-master", "spark-worker", "code-location",
            "dagster-webserver", "dagster-daemon"} <= set(services)
    app = ["spark-master", "spark-worker", "code-location", "dagster-webserver",
           "dagster-daemon"]
    # the Spark master/worker run the same image (the same Python environment) as the code
    for name in app:
        assert services[name]["image"] == "paimon-pipelines:latest", name
        assert services[name]["build"]["dockerfile"] == "docker/Dockerfile", name
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["minio"]["image"].startswith("minio/minio:")
    # the code location serves gRPC on the port the webserver/daemon workspace names
    ws = yaml.safe_load((DOCKER / "workspace.yaml").read_text())
    grpc = ws["load_from"][0]["grpc_server"]
    cmd = services["code-location"]["command"]
    assert (grpc["host"], str(grpc["port"])) == ("code-location", cmd[cmd.index("-p") + 1])
    assert cmd[cmd.index("-m") + 1] == "assets.production"
    for name in ("dagster-webserver", "dagster-daemon"):
        assert "/opt/dagster/workspace.yaml" in services[name]["command"]
        # the pools are registered before either of them queues a run (assets/runs.py)
        assert services[name]["depends_on"]["dagster-init"] == {
            "condition": "service_completed_successfully"}
    assert services["dagster-init"]["command"] == ["python", "-m", "assets.pools"]
    # the Spark master URL of the environment is the master service
    env = dict(
        line.split("=", 1) for line in (DOCKER / "paimon.env").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    )
    assert env["PAIMON_SPARK_MASTER"] == "spark://spark-master:7077"
    assert env["PAIMON_S3_ENDPOINT"] == "http://minio:9000"
    assert env["PAIMON_WAREHOUSE"].startswith("s3://lake/")
    assert "spark.driver.host=code-location" in env["PAIMON_SPARK_CONF"]


def test_every_referenced_file_exists(compose: dict[str, Any]) -> None:
    for name, svc in compose["services"].items():
        build = svc.get("build")
        if build:
            context = (DOCKER / build["context"]).resolve()
            assert context == REPO, name
            assert (context / build["dockerfile"]).is_file(), name
        for env_file in svc.get("env_file", []):
            assert (DOCKER / env_file).is_file(), (name, env_file)
        for vol in svc.get("volumes", []):
            host = vol.split(":", 1)[0]
            if host.startswith((".", "/")):
                assert (DOCKER / host).exists(), (name, host)
            else:
                assert host in compose["volumes"], (name, host)
    # what the Dockerfile copies exists in the build context (the repository root)
    for instr, args in _dockerfile_instructions(DOCKER / "Dockerfile"):
        if instr == "COPY":
            *sources, _dest = shlex.split(args)
            for src in sources:
                assert (REPO / src).exists(), src


def test_image_installs_the_same_pins() -> None:
    runs = [a for i, a in _dockerfile_instructions(DOCKER / "Dockerfile") if i == "RUN"]
    installs = [cmd.strip() for run in runs for cmd in run.split("&&") if "pip install" in cmd]
    assert installs == [
        "pip install --no-cache-dir -r requirements-build.txt",
        "pip install --no-cache-dir -r requirements.lock",
        "pip install --no-cache-dir --no-deps --no-build-isolation -e .",
    ]
    # and those are the files `make install` uses
    makefile = (REPO / "Makefile").read_text()
    assert "$(PIP) install -q -r requirements-build.txt" in makefile
    assert "$(PIP) install -q -r requirements.lock" in makefile
    # every line of the lock is an exact pin (so the image cannot drift)
    for line in (REPO / "requirements.lock").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            assert re.fullmatch(r"[A-Za-z0-9_.\-\[\],]+==[A-Za-z0-9_.+\-]+", line), line
    # the base image is the Python of pyproject's requires-python
    base = next(a for i, a in _dockerfile_instructions(DOCKER / "Dockerfile") if i == "FROM")
    assert base.startswith("python:3.11-")
    assert 'requires-python = ">=3.11,<3.12"' in (REPO / "pyproject.toml").read_text()


@pytest.mark.parametrize("path", ["dagster.yaml", "docker/dagster-postgres.yaml"])
def test_instance_files_are_valid_dagster_config(path: str, tmp_path: Path) -> None:
    from dagster._core.instance.config import dagster_instance_config

    (tmp_path / "dagster.yaml").write_text((REPO / path).read_text())
    config, _ = dagster_instance_config(str(tmp_path))
    limits = config["concurrency"]["runs"]["tag_concurrency_limits"]
    # one compaction per bucket: its partition key names the bucket (assets/runs.py)
    per_partition = next(x for x in limits if x["key"] == "dagster/partition")
    assert per_partition == {"key": "dagster/partition",
                             "value": {"applyLimitPerUniqueValue": True}, "limit": 1}
    assert {x["key"] for x in limits} == {"dagster/partition", "paimon/derived", "paimon/expire"}
    # Spark runs: the pool of the Spark assets, counted per run
    pools = config["concurrency"]["pools"]
    assert pools["granularity"] == "run"
    assert pools["default_limit"] == (4 if "postgres" in path else 2)
    assert config["run_retries"]["enabled"] is True
    if "postgres" in path:
        assert config["storage"]["postgres"]["postgres_db"]["scheme"] == "postgresql+psycopg2"
    else:
        assert "storage" not in config  # SQLite under $DAGSTER_HOME
