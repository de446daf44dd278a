"""docker/: Docker cannot run here, so check statically that the compose file parses, every file
it (and the Dockerfile) references exists, the image installs the repository's exact pins,
and the instance files are valid Dagster instance config."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
SECRETS_ENV = "secrets.env"
#: what only the operator's secrets.env may give a value to
SECRET_KEYS = {"POSTGRES_PASSWORD", "DAGSTER_PG_PASSWORD", "MINIO_ROOT_USER",
               "MINIO_ROOT_PASSWORD", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}


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


def _env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of an env file (comments and blanks dropped)."""
    return dict(
        line.split("=", 1) for line in path.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    )


def _workers(services: dict[str, Any]) -> list[str]:
    return sorted(n for n in services if n.startswith("spark-worker"))


def test_compose_has_the_whole_deployment(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"postgres", "minio", "spark-master", "code-location",
            "dagster-webserver", "dagster-daemon"} <= set(services)
    app = ["spark-master", *_workers(services), "spark-connect", "code-location",
           "dagster-webserver", "dagster-daemon"]
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
    env = _env_file(DOCKER / "paimon.env")
    assert env["PAIMON_SPARK_MASTER"] == "spark://spark-master:7077"
    assert env["PAIMON_S3_ENDPOINT"] == "http://minio:9000"
    assert env["PAIMON_WAREHOUSE"].startswith("s3://lake/")
    # the runs' driver is the shared Spark Connect server (pipelines/connect.py): the client
    # address is the service's, its command serves that port on the master of the environment
    assert "spark.driver.host=spark-connect" in env["PAIMON_SPARK_CONF"]
    connect = services["spark-connect"]["command"]
    assert connect[:4] == ["python", "-m", "pipelines.connect", "serve"]
    assert connect[connect.index("--master") + 1] == env["PAIMON_SPARK_MASTER"]
    assert env["PAIMON_SPARK_CONNECT"] == (f"sc://{connect[connect.index('--advertise') + 1]}:"
                                           f"{connect[connect.index('--port') + 1]}")
    assert services["spark-connect"]["hostname"] == "spark-connect"
    assert services["code-location"]["depends_on"]["spark-connect"] == {
        "condition": "service_healthy"}


def test_every_referenced_file_exists(compose: dict[str, Any]) -> None:
    for name, svc in compose["services"].items():
        build = svc.get("build")
        if build:
            context = (DOCKER / build["context"]).resolve()
            assert context == REPO, name
            assert (context / build["dockerfile"]).is_file(), name
        for env_file in svc.get("env_file", []):
            # the operator's secrets are not in the repository: their template is
            committed = ("secrets.env.example" if env_file == SECRETS_ENV else env_file)
            assert (DOCKER / committed).is_file(), (name, env_file)
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


def _repo_files(under: str) -> list[Path]:
    """The files git would commit under ``under`` (tracked or new, not ignored)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                          under], cwd=REPO, capture_output=True, text=True, check=True)
    return [REPO / line for line in out.stdout.splitlines() if (REPO / line).is_file()]


def test_no_secret_in_committed_files(compose: dict[str, Any]) -> None:
    # the operator's file is ignored by git (and by the image's build context)
    assert subprocess.run(["git", "check-ignore", "-q", f"docker/{SECRETS_ENV}"],
                          cwd=REPO).returncode == 0
    assert f"docker/{SECRETS_ENV}" in (DOCKER / "Dockerfile.dockerignore").read_text()
    # its template lists every secret, with no value
    assert _env_file(DOCKER / "secrets.env.example") == dict.fromkeys(SECRET_KEYS, "")
    files = [*_repo_files("docker"), REPO / "dagster.yaml", REPO / "Makefile"]
    assert DOCKER / "paimon.env" in files and DOCKER / "compose.yaml" in files
    assignment = re.compile(r"^\s*(?:export\s+)?([A-Z_]+)\s*[=:]\s*(\S.*)?$")
    for path in files:
        for line in path.read_text().splitlines():
            m = assignment.match(line)
            if m and m.group(1) in SECRET_KEYS:  # no value, or one made when it runs ($...)
                assert not m.group(2) or "$" in m.group(2), (
                    f"{path.name}: a value for {m.group(1)}: {line!r}")
    # the demo credentials once committed are gone from every file
    for path in files:
        assert "paimon-secret" not in path.read_text(), path
    for name, svc in compose["services"].items():
        assert not SECRET_KEYS & set(svc.get("environment") or {}), name
    # who gets the secrets: the services that use one; the Spark cluster does not
    services = compose["services"]
    for name in ("postgres", "minio", "minio-init", "code-location", "dagster-init",
                 "dagster-webserver", "dagster-daemon"):
        assert SECRETS_ENV in services[name]["env_file"], name
    for name in ("spark-master", *_workers(services), "spark-connect"):
        assert SECRETS_ENV not in services[name]["env_file"], name
    pg = yaml.safe_load((DOCKER / "dagster-postgres.yaml").read_text())
    assert pg["storage"]["postgres"]["postgres_db"]["password"] == {"env": "DAGSTER_PG_PASSWORD"}


def test_make_prod_secrets_writes_random_secrets(tmp_path: Path) -> None:
    assert "sh docker/make-secrets.sh" in (REPO / "Makefile").read_text()
    made = []
    for name in ("a.env", "b.env"):
        out = tmp_path / name
        subprocess.run(["sh", str(DOCKER / "make-secrets.sh"), str(out)], check=True,
                       capture_output=True)
        assert out.stat().st_mode & 0o077 == 0  # readable by its owner only
        env = _env_file(out)
        assert set(env) == SECRET_KEYS
        assert all(len(v) >= 12 and re.fullmatch(r"[A-Za-z0-9-]+", v) for v in env.values())
        assert env["POSTGRES_PASSWORD"] == env["DAGSTER_PG_PASSWORD"]
        assert env["MINIO_ROOT_USER"] != env["AWS_ACCESS_KEY_ID"]  # the app is not root
        made.append(env)
    assert all(made[0][k] != made[1][k] for k in SECRET_KEYS)
    # an existing file is kept (the volumes hold the credentials they started with)
    before = (tmp_path / "a.env").read_text()
    subprocess.run(["sh", str(DOCKER / "make-secrets.sh"), str(tmp_path / "a.env")],
                   check=True, capture_output=True)
    assert (tmp_path / "a.env").read_text() == before


def test_ports_are_published_on_loopback_only(compose: dict[str, Any]) -> None:
    published = 0
    for name, svc in compose["services"].items():
        for port in svc.get("ports", []):
            published += 1
            if isinstance(port, dict):
                assert port.get("host_ip") == "127.0.0.1", (name, port)
            else:
                assert str(port).startswith("127.0.0.1:"), (name, port)
    assert published >= 4  # the UI, the master's UI, MinIO and its console at least


def test_containers_run_unprivileged(compose: dict[str, Any]) -> None:
    instructions = _dockerfile_instructions(DOCKER / "Dockerfile")
    users = [(i, a) for i, (instr, a) in enumerate(instructions) if instr == "USER"]
    assert users, "the image runs as root"
    last_user_at, user = users[-1]
    assert user.split(":")[0] not in {"root", "0"}
    env = {k: v for instr, a in instructions if instr == "ENV"
           for k, v in (item.split("=", 1) for item in shlex.split(a))}
    runs = [a for instr, a in instructions[:last_user_at] if instr == "RUN"]
    # the user exists, and owns what it writes: the instance dir and the worker's work dir
    assert any(re.search(rf"useradd\b.*\b{user}$", cmd.strip())
               for run in runs for cmd in run.split("&&")), user
    chowns = [cmd for run in runs for cmd in run.split("&&") if "chown" in cmd]
    for var in ("DAGSTER_HOME", "SPARK_WORKER_DIR"):
        assert any(f"{user}:{user}" in c and env[var] in c.split() for c in chowns), var
    for name, svc in compose["services"].items():
        if svc.get("image") == "paimon-pipelines:latest":
            assert str(svc.get("user", user)).split(":")[0] not in {"root", "0"}, name


def test_health_checks_gate_the_start_order(compose: dict[str, Any]) -> None:
    services = compose["services"]
    # whatever waits for a service's health has a health check to wait for
    for name, svc in services.items():
        deps = svc.get("depends_on") or {}
        assert isinstance(deps, dict), f"{name}: depends_on without conditions"
        for dep, cond in deps.items():
            if cond["condition"] == "service_healthy":
                assert "healthcheck" in services[dep], (name, dep)
    # the code location is healthy when its gRPC server answers, on the port it serves
    code = services["code-location"]
    check = code["healthcheck"]["test"]
    port = code["command"][code["command"].index("-p") + 1]
    assert check[1:] == ["dagster", "api", "grpc-health-check", "-p", port]
    for name in ("dagster-webserver", "dagster-daemon"):
        assert services[name]["depends_on"]["code-location"] == {"condition": "service_healthy"}
        assert "healthcheck" in services[name]
    # the code location starts once every Spark worker has registered with the master:
    # the master's health check asks its /json/ for PAIMON_SPARK_WORKERS alive workers
    assert code["depends_on"]["spark-master"] == {"condition": "service_healthy"}
    master = services["spark-master"]
    ui_port = master["command"][master["command"].index("--webui-port") + 1]
    assert master["healthcheck"]["test"][1:] == [
        "python", "-m", "pipelines.cluster", "--ui", f"http://localhost:{ui_port}"]
    env = _env_file(DOCKER / "paimon.env")
    workers = _workers(services)
    assert len(workers) == int(env["PAIMON_SPARK_WORKERS"]) >= 2
    for name in workers:
        assert services[name]["command"][-1] == env["PAIMON_SPARK_MASTER"]
        assert "spark-master" in services[name]["depends_on"]


def test_minio_init_creates_the_buckets_and_the_app_user(tmp_path: Path) -> None:
    """minio-init.sh, run against a recording ``mc``: the lake's, the landing zone's and the
    compute logs' buckets (names from paimon.env), and the application's user."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "mc.log"
    (bin_dir / "mc").write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    (bin_dir / "mc").chmod(0o755)
    secrets = tmp_path / "secrets.env"
    subprocess.run(["sh", str(DOCKER / "make-secrets.sh"), str(secrets)], check=True,
                   capture_output=True)
    env = {**_env_file(DOCKER / "paimon.env"), **_env_file(secrets),
           "PATH": f"{bin_dir}:/usr/bin:/bin"}
    subprocess.run(["sh", str(DOCKER / "minio-init.sh")], env=env, check=True,
                   capture_output=True)
    calls = log.read_text().splitlines()
    assert calls[0] == (f"alias set store http://minio:9000 {env['MINIO_ROOT_USER']} "
                        f"{env['MINIO_ROOT_PASSWORD']}")
    buckets = {c.split("store/")[1] for c in calls if c.startswith("mb ")}
    assert buckets == {env["PAIMON_WAREHOUSE"][5:].split("/")[0],
                       env["PAIMON_LANDING"][5:].split("/")[0],
                       env["DAGSTER_COMPUTE_LOGS_BUCKET"]}
    assert env["DAGSTER_COMPUTE_LOGS_PREFIX"].strip("/")
    assert (f"admin user add store {env['AWS_ACCESS_KEY_ID']} "
            f"{env['AWS_SECRET_ACCESS_KEY']}") in calls
    assert f"admin policy attach store readwrite --user {env['AWS_ACCESS_KEY_ID']}" in calls


def test_each_spark_run_gets_its_share_of_the_cluster() -> None:
    """N = the paimon-spark pool limit runs at once on the compose cluster: every one gets a
    core cap, and all N fit on the workers together (pipelines.cluster.run_share)."""
    from pipelines.cluster import ClusterShape, run_share

    shape = ClusterShape.from_env(_env_file(DOCKER / "paimon.env"))
    assert shape is not None
    runs = yaml.safe_load((DOCKER / "dagster-postgres.yaml").read_text())[
        "concurrency"]["pools"]["default_limit"]
    share = run_share(shape, runs)
    cores_max, executor = int(share["spark.cores.max"]), int(share["spark.executor.cores"])
    assert cores_max >= 1 and runs * cores_max <= shape.cores
    assert shape.worker_cores % executor == 0 and cores_max % executor == 0


def test_readme_gives_the_operator_steps() -> None:
    readme = (DOCKER / "README.md").read_text()
    # the secrets step, and the one-command feed (a CLI of assets.demo_data)
    assert "make prod-secrets" in readme and "secrets.env.example" in readme
    assert ("docker compose -f docker/compose.yaml exec code-location \\\n"
            "    python -m assets.demo_data --landing s3://lake/landing") in readme
    assert '"--landing"' in (REPO / "assets" / "demo_data.py").read_text()
    assert "python -c" not in readme  # the pasted snippet is gone
    # the sizing rule is documented with the settings it reads
    for word in ("spark.cores.max", "spark.executor.cores", "PAIMON_SPARK_WORKERS",
                 "SPARK_WORKER_CORES", "PAIMON_SPARK_CONCURRENT_RUNS", "paimon-spark"):
        assert word in readme, word
