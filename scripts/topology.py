"""The compose deployment (``docker/compose.yaml``) as local processes on 127.0.0.1.

Each service of the compose file runs here as a process in its own process group, on a free
loopback port, logging to ``<root>/logs/<service>.log``:

========================  ==============================================================
compose service           here
========================  ==============================================================
``postgres``              Debian PostgreSQL (``initdb`` in ``<root>/pg``, password auth)
``minio`` (+ init)        ``moto_server`` with the fault proxy of ``scripts/s3proxy.py`` in
                          front (the endpoint every service uses); the buckets of the lake,
                          the landing zone and the compute logs are created
``spark-master``          ``spark-class ...Master`` from pyspark's own distribution
``spark-worker``          ``PAIMON_SPARK_WORKERS`` (2) ``spark-class ...Worker`` (compose's cores,
                          1 GiB each here: ``SPARK_WORKER_MEMORY`` overridden)
``spark-connect``         ``python -m pipelines.connect serve`` on the master (the runs' shared
                          driver)
``code-location``         ``dagster code-server start -m assets.production``
``dagster-init``          ``python -m assets.pools``
``dagster-webserver``     ``dagster-webserver`` on the workspace (``docker/workspace.yaml``'s
                          shape, the code server's host and port)
``dagster-daemon``        ``dagster-daemon run`` on the same workspace
========================  ==============================================================

**One configuration with compose.** The environment is the compose file's ``env_file``\\ s
(``docker/paimon.env``, and an operator's secrets file when it exists), the instance is
``docker/dagster-postgres.yaml`` copied verbatim, the workspace is ``docker/workspace.yaml``
with the host and port of the code server. Only what differs on loopback is overridden
(:meth:`Topology.overrides`): host names, ports, the S3 endpoint, the Spark master and Spark
Connect addresses, the driver's address and the JVM sizes in ``PAIMON_SPARK_CONF``. The secrets
(``DAGSTER_PG_PASSWORD``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``) are generated
here, never taken from the files.

**What the deployment ships.** The project is installed as the Dockerfile copies it (its
``COPY ... ./`` lines), non-editable (``pip install --no-deps --target <root>/deploy/site``),
and every service, the Spark workers' Python included, runs with that copy first on
``PYTHONPATH`` and ``<root>/run`` as working directory (outside the repository).

Hooks for fault tests: :meth:`Topology.kill_spark_worker` / :meth:`start_spark_worker`,
:meth:`restart_code_server`, :meth:`restart_postgres`, :meth:`s3_outage` /
:meth:`s3_unavailable` (S3 answers 503 SlowDown), ``proxy`` (the :class:`FaultProxy`, for
finer rules), :meth:`check_alive`, :meth:`wait_daemon` / :meth:`wait_webserver`,
:meth:`graphql` / :attr:`graphql_url` / :attr:`ui_url`, :attr:`spark_master_ui` /
:meth:`alive_workers`, :meth:`s3_options` (paimon_core FileIO) / :meth:`s3_client` (boto3),
``env`` (the services' environment). ``scripts/prod_demo.py`` has the GraphQL steps
(``launch``, ``sensor``, ``wait_run(s)``, ``materializations``, ``captured_logs``).

Used by ``scripts/prod_demo.py`` (``make prod-demo``) and ``tests/prod`` (``make
test-prod``); tests load it with ``tests/modload.load_module``.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DOCKER = REPO / "docker"
VENV_BIN = Path(sys.executable).parent
#: the secrets an operator provides to compose (a secrets file): generated here
SECRETS = ("DAGSTER_PG_PASSWORD", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
#: the location name of the code server (docker/workspace.yaml)
LOCATION = "paimon"
#: JVM sizes on this machine (2 cores shared by every service): the master's and workers' own
#: heaps, and the memory each worker offers. The workers' cores are compose's own
#: (SPARK_WORKER_CORES of docker/paimon.env, PAIMON_SPARK_WORKERS of them), so the rule that
#: shares the cluster between the pool's concurrent runs (pipelines.cluster.run_share) sees
#: the shape Docker would run; a core is a scheduling slot, not a CPU.
DAEMON_MEMORY = "256m"
WORKER_SIZE = {"SPARK_WORKER_MEMORY": "1g"}
SPARK_LOOPBACK_CONF = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.memory": "512m",
    "spark.executor.memory": "512m",
}


#: the webserver's view of its code locations (what the UI polls while they load)
WORKSPACE = ("{ workspaceOrError { ... on Workspace { locationEntries {"
             " name loadStatus locationOrLoadError { __typename"
             " ... on PythonError { className message stack } } } } } }")
#: a location error the webserver clears by itself (``dagster._grpc.server_watcher``)
TRANSIENT_LOAD_ERROR = "DagsterUserCodeUnreachableError"


def workspace_loaded(data: Mapping[str, Any]) -> bool:
    """Whether every code location of a :data:`WORKSPACE` answer has loaded.

    A location whose code server was unreachable a while (:data:`TRANSIENT_LOAD_ERROR`: it
    restarted) is still loading: the webserver's watch thread refreshes it once it answers.
    Any other load error raises RuntimeError (with its message).
    """
    entries = data["workspaceOrError"]["locationEntries"]
    if not entries or any(e["loadStatus"] != "LOADED" for e in entries):
        return False
    errors = [e for e in entries if e["locationOrLoadError"]["__typename"] != "RepositoryLocation"]
    if any(e["locationOrLoadError"].get("className") != TRANSIENT_LOAD_ERROR for e in errors):
        raise RuntimeError(f"code location failed to load: {errors}")
    return not errors


def _sibling(name: str) -> ModuleType:
    """A module of ``scripts/`` (registered as ``paimon_<name>``: one class identity per
    process, whoever loads it first)."""
    key = f"paimon_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[key] = mod
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------------------ processes
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_group(proc: subprocess.Popen[bytes], grace: float = 5.0,
               sig: signal.Signals = signal.SIGTERM) -> None:
    """``sig`` to the process group, then SIGKILL what is left (``dagster dev`` ignores
    SIGTERM for ~40 s)."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


def wait_until(what: str, probe: Callable[[], bool], timeout: float,
               log: Path | None = None, interval: float = 0.5) -> float:
    """Poll ``probe`` until it is true; the seconds it took. Raises TimeoutError with the
    log's tail."""
    start = time.monotonic()
    while True:
        with contextlib.suppress(OSError, urllib.error.URLError, ConnectionError,
                                 TimeoutError, ValueError, KeyError, TypeError):
            if probe():
                return time.monotonic() - start
        if time.monotonic() - start > timeout:
            tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
            raise TimeoutError(f"{what} not ready after {timeout:.0f} s\n{tail}")
        time.sleep(interval)


def http_json(url: str, timeout: float = 10) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.load(resp)


@dataclass
class Service:
    """One long-running process of the topology, in its own process group."""

    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert not self.alive, f"{self.name} is already running"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            out.write(f"\n=== {time.strftime('%H:%M:%S')} start {self.argv}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(self.argv, env=self.env, cwd=self.cwd, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def stop(self, grace: float = 10.0) -> None:
        if self.proc is not None:
            stop_group(self.proc, grace)

    def kill(self) -> None:
        """SIGKILL the whole group (a container that dies)."""
        if self.proc is not None:
            stop_group(self.proc, 0.0, signal.SIGKILL)


# ------------------------------------------------------------------------------ PostgreSQL
def pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


@dataclass
class Postgres:
    host: str
    port: int
    user: str
    db: str
    password: str | None = None


def _as_postgres_user() -> tuple[tuple[int, int] | None, Callable[[], None] | None]:
    """initdb refuses to run as root: drop to the ``postgres`` user then."""
    if os.geteuid() != 0:
        return None, None
    pw = pwd.getpwnam("postgres")

    def demote() -> None:
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)

    return (pw.pw_uid, pw.pw_gid), demote


class PostgresServer:
    """A PostgreSQL cluster of its own in ``root`` on 127.0.0.1 (``pg_ctl``): password
    authentication when ``password`` is given, else trust."""

    def __init__(self, root: Path, *, user: str = "dagster", db: str = "dagster",
                 password: str | None = None, port: int | None = None) -> None:
        bindir = pg_bin()
        if bindir is None:
            raise RuntimeError("PostgreSQL is not installed (apt-get install -y postgresql)")
        self.bindir, self.root = bindir, root
        self.info = Postgres("127.0.0.1", port or free_port(), user, db, password)
        self.data, self.log = root / "data", root / "server.log"
        self.owner, self.demote = _as_postgres_user()

    def _run(self, *args: str, env: Mapping[str, str] | None = None) -> None:
        subprocess.run([str(self.bindir / args[0]), *args[1:]], check=True,
                       capture_output=True, preexec_fn=self.demote, timeout=120,
                       env={**os.environ, **(env or {})})

    def init(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if self.owner:
            os.chown(self.root, *self.owner)
        auth = ["--auth=trust"]
        if self.info.password is not None:
            pwfile = self.root / "pwfile"
            pwfile.write_text(self.info.password + "\n")
            pwfile.chmod(0o600)
            if self.owner:
                os.chown(pwfile, *self.owner)
            auth = ["--auth=scram-sha-256", f"--pwfile={pwfile}"]
        try:
            self._run("initdb", "-D", str(self.data), "-U", self.info.user, "-E", "UTF8",
                      *auth)
        finally:
            (self.root / "pwfile").unlink(missing_ok=True)
        self.start()
        env = {"PGPASSWORD": self.info.password} if self.info.password else None
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.info.port), "-U",
                  self.info.user, self.info.db, env=env)

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-o",
                  f"-h 127.0.0.1 -p {self.info.port} -k {self.root}", "start")

    def stop(self, mode: str = "fast") -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self) -> None:
        self.stop()
        self.start()


@contextmanager
def postgres(password: str | None = None) -> Iterator[Postgres]:
    """A throwaway PostgreSQL cluster on 127.0.0.1, database ``dagster`` (trust auth unless
    ``password``)."""
    # not under pytest's tmp_path: its parents are private to root, and the server may run
    # as the postgres user
    root = Path(tempfile.mkdtemp(prefix="paimon-pg-"))
    server = PostgresServer(root, password=password)
    try:
        server.init()
        yield server.info
    finally:
        server.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)


# ------------------------------------------------------------------------------ configuration
def read_env_file(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines of a compose ``env_file`` (``#`` comments, optional quotes)."""
    out: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise ValueError(f"{path}: {raw!r} is not KEY=VALUE")
        key, value = line.split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key.strip()] = value
    return out


def compose() -> dict[str, Any]:
    import yaml

    out: dict[str, Any] = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    return out


def compose_env(service: str = "code-location") -> dict[str, str]:
    """The environment ``service`` gets from its ``env_file``\\ s (a missing file whose
    entry is ``required: false`` — an operator's secrets — is skipped)."""
    svc = compose()["services"][service]
    files = svc.get("env_file") or []
    env: dict[str, str] = {}
    for entry in [files] if isinstance(files, str | dict) else files:
        path = DOCKER / (entry if isinstance(entry, str) else entry["path"])
        required = entry.get("required", True) if isinstance(entry, dict) else True
        if path.is_file():
            env.update(read_env_file(path))
        elif required and path.name == "paimon.env":
            raise FileNotFoundError(path)
    env.update({str(k): str(v) for k, v in (svc.get("environment") or {}).items()}
               if isinstance(svc.get("environment"), dict) else {})
    return env


def parse_spark_conf(text: str | None) -> dict[str, str]:
    """``PAIMON_SPARK_CONF`` (``k=v;k=v``), as the Spark resource reads it."""
    from pipelines.config import parse_pairs

    return parse_pairs(text, what="spark conf")


def bucket_of(url: str) -> str:
    m = re.match(r"s3a?://([^/]+)", url)
    if not m:
        raise ValueError(f"{url!r} is not an s3:// URL")
    return m.group(1)


# ------------------------------------------------------------------------------ the topology
@dataclass
class Topology:
    """Start with :meth:`start` (or ``with topology(root) as topo``), stop with
    :meth:`stop`. ``root`` holds every file of the run (logs, data, the deployed copy)."""

    root: Path
    workers: int | None = None
    base_env: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    services: dict[str, Service] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    pg: PostgresServer | None = None
    proxy: Any = None
    _outage: list[Any] = field(default_factory=list)

    # -------------------------------------------------------------- paths and URLs
    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def site(self) -> Path:
        return self.root / "deploy" / "site"

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster_home"

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['webserver']}"

    @property
    def graphql_url(self) -> str:
        return f"{self.ui_url}/graphql"

    @property
    def spark_master_url(self) -> str:
        return f"spark://127.0.0.1:{self.ports['spark-master']}"

    @property
    def spark_master_ui(self) -> str:
        return f"http://127.0.0.1:{self.ports['spark-master-ui']}"

    def spark_worker_ui(self, i: int) -> str:
        return f"http://127.0.0.1:{self.ports[f'spark-worker-{i}-ui']}"

    @property
    def s3_endpoint(self) -> str:
        """The endpoint every service uses: the fault proxy in front of moto."""
        return str(self.proxy.endpoint)

    # -------------------------------------------------------------- configuration
    def overrides(self) -> dict[str, str]:
        """What differs from ``docker/paimon.env`` on loopback (and the generated secrets)."""
        file_env = compose_env()
        conf = parse_spark_conf(file_env.get("PAIMON_SPARK_CONF"))
        conf.update(SPARK_LOOPBACK_CONF)
        return {
            "DAGSTER_PG_HOST": "127.0.0.1",
            "DAGSTER_PG_PORT": str(self.ports["postgres"]),
            "PAIMON_S3_ENDPOINT": self.s3_endpoint,
            "PAIMON_SPARK_MASTER": self.spark_master_url,
            "PAIMON_SPARK_CONNECT": f"sc://127.0.0.1:{self.ports['spark-connect']}",
            "PAIMON_SPARK_CONF": ";".join(f"{k}={v}" for k, v in conf.items()),
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            **WORKER_SIZE,
        }

    def _make_env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items()
                if not k.startswith(("PAIMON_", "DAGSTER_", "AWS_", "SPARK_", "PYSPARK_"))
                and k not in ("PYTHONPATH", "PYTHONHOME")}
        gen = {name: secrets.token_hex(16) for name in SECRETS}
        gen["AWS_ACCESS_KEY_ID"] = "AK" + secrets.token_hex(9).upper()
        return {**keep, **compose_env(), **gen, **self.overrides(),
               "DAGSTER_HOME": str(self.dagster_home),
               "PYTHONPATH": str(self.site),
               "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_HOME": str(self._spark_home()),
               "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
               "PYTHONUNBUFFERED": "1"}

    @staticmethod
    def _spark_home() -> Path:
        import pyspark

        return Path(pyspark.__file__).parent

    def _write_instance(self) -> None:
        """The instance and the workspace, as the Dockerfile copies them."""
        import yaml

        self.dagster_home.mkdir(parents=True, exist_ok=True)
        shutil.copy(DOCKER / "dagster-postgres.yaml", self.dagster_home / "dagster.yaml")
        ws = yaml.safe_load((DOCKER / "workspace.yaml").read_text())
        for entry in ws["load_from"]:
            grpc = entry["grpc_server"]
            grpc.update(host="127.0.0.1", port=self.ports["code-server"])
        (self.root / "workspace.yaml").write_text(yaml.safe_dump(ws, sort_keys=False))

    def deploy(self) -> float:
        """Install the project as the Dockerfile does (its ``COPY <src> ./<dst>`` lines),
        non-editable, into :attr:`site`; the seconds it took."""
        started = time.monotonic()
        src = self.root / "deploy" / "src"
        shutil.rmtree(self.root / "deploy", ignore_errors=True)
        src.mkdir(parents=True)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        for line in (DOCKER / "Dockerfile").read_text().splitlines():
            parts = [p for p in line.split() if not p.startswith("--")]  # --chown=...
            if len(parts) < 3 or parts[0] != "COPY":
                continue
            *sources, dest = parts[1:]
            if not dest.startswith("./"):
                continue  # the instance and the workspace: written by _write_instance
            for s in sources:
                target = src / dest[2:] if len(sources) == 1 and dest != "./" else src / s
                if (REPO / s).is_dir():
                    shutil.copytree(REPO / s, target, ignore=ignore)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(REPO / s, target)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                        "--no-build-isolation", "--no-compile", "--target", str(self.site),
                        str(src)], check=True, capture_output=True, timeout=300,
                       cwd=self.root)
        shutil.rmtree(src, ignore_errors=True)
        return time.monotonic() - started

    # -------------------------------------------------------------- services
    def _service(self, name: str, argv: list[str], env: Mapping[str, str] | None = None
                 ) -> Service:
        svc = Service(name, argv, {**self.env, **(env or {})}, self.run_dir,
                      self.logs / f"{name}.log")
        self.services[name] = svc
        return svc

    def _spark_class(self, *args: str) -> list[str]:
        return [str(self._spark_home() / "bin" / "spark-class"), *args]

    def _worker(self, i: int) -> Service:
        work = self.root / f"spark-work-{i}"
        work.mkdir(parents=True, exist_ok=True)
        return self._service(f"spark-worker-{i}", self._spark_class(
            "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
            "--port", str(self.ports[f"spark-worker-{i}"]),
            "--webui-port", str(self.ports[f"spark-worker-{i}-ui"]),
            "--work-dir", str(work), self.spark_master_url))

    def _spark_connect(self) -> Service:
        """compose's ``spark-connect``: the Spark Connect server the runs share."""
        return self._service("spark-connect", [
            sys.executable, "-m", "pipelines.connect", "serve",
            "--master", self.spark_master_url, "--host", "127.0.0.1",
            "--port", str(self.ports["spark-connect"]), "--idle-timeout", "0",
            "--dir", str(self.root / "spark-connect")])

    @staticmethod
    def _answers(port: int) -> bool:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 2):
            return True
        return False

    def start(self) -> Topology:
        t0 = time.monotonic()
        self.root.mkdir(parents=True, exist_ok=True)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        if self.workers is None:
            self.workers = int(compose_env().get("PAIMON_SPARK_WORKERS", "2"))
        names = ["postgres", "moto", "spark-master", "spark-master-ui", "spark-connect",
                 "code-server", "webserver"] + [f"spark-worker-{i}{s}" for i in range(self.workers)
                                 for s in ("", "-ui")]
        self.ports = {n: free_port() for n in names}
        self.timings["deploy"] = self.deploy()

        # S3: moto behind the fault proxy (the endpoint of every service)
        moto = Service("moto", [str(VENV_BIN / "moto_server"), "-H", "127.0.0.1", "-p",
                                str(self.ports["moto"])], dict(os.environ), self.run_dir,
                       self.logs / "moto.log")
        self.services["moto"] = moto
        moto.start()
        self.proxy = _sibling("s3proxy").FaultProxy(
            f"http://127.0.0.1:{self.ports['moto']}").start()
        self.env = self._make_env()
        self._write_instance()

        master = self._service("spark-master", self._spark_class(
            "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
            "--port", str(self.ports["spark-master"]),
            "--webui-port", str(self.ports["spark-master-ui"])))
        master.start()

        # Postgres with the generated password
        self.pg = PostgresServer(self.root / "pg", user=self.env["DAGSTER_PG_USERNAME"],
                                 db=self.env["DAGSTER_PG_DB"],
                                 password=self.env["DAGSTER_PG_PASSWORD"],
                                 port=self.ports["postgres"])
        self.pg.init()
        self.timings["postgres"] = time.monotonic() - t0

        wait_until("moto_server", lambda: self._s3_ready(), 60, moto.log)
        self.create_buckets()
        self.timings["s3"] = time.monotonic() - t0

        # dagster-init, then the code location (compose: after postgres and the buckets)
        init = subprocess.run([sys.executable, "-m", "assets.pools"], env=self.env,
                              cwd=self.run_dir, capture_output=True, text=True, timeout=180)
        (self.logs / "dagster-init.log").write_text(init.stdout + init.stderr)
        if init.returncode:
            raise RuntimeError(f"python -m assets.pools failed:\n{init.stderr[-3000:]}")
        code = self._service("code-server", [
            str(VENV_BIN / "dagster"), "code-server", "start", "-h", "127.0.0.1",
            "-p", str(self.ports["code-server"]), "-m", "assets.production",
            "--location-name", LOCATION])
        code.start()

        wait_until("spark master", lambda: http_json(f"{self.spark_master_ui}/json/")
                   ["status"] == "ALIVE", 90, master.log)
        for i in range(self.workers):
            self._worker(i).start()
        connect = self._spark_connect()
        connect.start()

        self.wait_code_server()
        self.timings["code-server"] = time.monotonic() - t0
        ws = str(self.root / "workspace.yaml")
        self._service("webserver", [
            str(VENV_BIN / "dagster-webserver"), "-h", "127.0.0.1",
            "-p", str(self.ports["webserver"]), "-w", ws]).start()
        self._service("daemon", [str(VENV_BIN / "dagster-daemon"), "run", "-w", ws]).start()

        self.wait_spark_workers()
        self.timings["spark"] = time.monotonic() - t0
        wait_until("spark connect server", lambda: self._answers(self.ports["spark-connect"]),
                   240, connect.log)
        self.timings["spark-connect"] = time.monotonic() - t0
        self.wait_webserver()
        self.timings["webserver"] = time.monotonic() - t0
        self.wait_daemon()
        self.timings["daemon"] = time.monotonic() - t0
        return self

    def stop(self) -> None:
        """Everything down (reverse order); the proxy too. Keeps ``root``."""
        for name in reversed(list(self.services)):
            self.services[name].stop()
        if self.pg is not None:
            self.pg.stop("immediate")
        if self.proxy is not None:
            self.proxy.stop()

    def check_alive(self) -> None:
        """Raise if a service process has exited."""
        dead = [n for n, s in self.services.items() if not s.alive]
        if dead:
            raise RuntimeError(f"services not running: {dead}")

    # -------------------------------------------------------------- readiness
    def _s3_ready(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.ports["moto"]), timeout=2):
            return True

    def wait_code_server(self, timeout: float = 180) -> float:
        svc = self.services["code-server"]

        def healthy() -> bool:
            if not svc.alive:
                raise RuntimeError(f"code server exited:\n{svc.log.read_text()[-3000:]}")
            out = subprocess.run([str(VENV_BIN / "dagster"), "api", "grpc-health-check",
                                  "-h", "127.0.0.1", "-p", str(self.ports["code-server"])],
                                 env=self.env, cwd=self.run_dir, capture_output=True,
                                 timeout=60)
            return out.returncode == 0

        return wait_until("code server", healthy, timeout, svc.log, interval=1.0)

    def alive_workers(self) -> list[dict[str, Any]]:
        workers = http_json(f"{self.spark_master_ui}/json/")["workers"]
        return [w for w in workers if w["state"] == "ALIVE"]

    def wait_spark_workers(self, count: int | None = None, timeout: float = 120) -> float:
        want = self.workers if count is None else count
        return wait_until(f"{want} Spark workers", lambda: len(self.alive_workers()) >= want,
                          timeout, self.services["spark-master"].log)

    def wait_webserver(self, timeout: float = 180) -> float:
        def loaded() -> bool:
            return workspace_loaded(self.graphql(WORKSPACE, timeout=10))

        return wait_until("dagster-webserver", loaded, timeout,
                          self.services["webserver"].log, interval=1.0)

    def daemon_statuses(self) -> dict[str, bool]:
        data = self.graphql("{ instance { daemonHealth { allDaemonStatuses {"
                            " daemonType required healthy } } } }")
        return {d["daemonType"]: bool(d["healthy"])
                for d in data["instance"]["daemonHealth"]["allDaemonStatuses"] if d["required"]}

    def wait_daemon(self, timeout: float = 180) -> float:
        def healthy() -> bool:
            statuses = self.daemon_statuses()
            return bool(statuses) and all(statuses.values())

        return wait_until("dagster-daemon", healthy, timeout, self.services["daemon"].log,
                          interval=2.0)

    # -------------------------------------------------------------- GraphQL and S3
    def graphql(self, query: str, variables: Mapping[str, Any] | None = None,
                timeout: float = 60) -> dict[str, Any]:
        body = json.dumps({"query": query, "variables": dict(variables or {})}).encode()
        req = urllib.request.Request(self.graphql_url, data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            out: dict[str, Any] = json.load(resp)
        if out.get("errors"):
            raise RuntimeError(f"GraphQL errors: {out['errors']}")
        return out["data"]

    def s3_options(self) -> dict[str, str]:
        """The ``s3.*`` options of paimon_core's FileIO for this S3 (the services' env)."""
        from assets.resources import S3_ENV, S3Storage

        return S3Storage(**{f: self.env[v] for f, v in S3_ENV.items()}).options()

    def s3_client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.s3_endpoint,
                            region_name=self.env["PAIMON_S3_REGION"],
                            aws_access_key_id=self.env["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=self.env["AWS_SECRET_ACCESS_KEY"])

    def buckets(self) -> list[str]:
        """The lake, the landing zone and the compute logs' buckets (from the env)."""
        names = {bucket_of(self.env["PAIMON_WAREHOUSE"]), bucket_of(self.env["PAIMON_LANDING"])}
        if self.env.get("DAGSTER_COMPUTE_LOGS_BUCKET"):
            names.add(self.env["DAGSTER_COMPUTE_LOGS_BUCKET"])
        return sorted(names)

    def create_buckets(self) -> None:
        for name in self.buckets():
            self.s3_client().create_bucket(Bucket=name)

    def s3_bytes(self, url: str) -> tuple[int, int]:
        """(objects, bytes) under ``s3://bucket/prefix``."""
        bucket, prefix = bucket_of(url), url.split("://", 1)[1].partition("/")[2]
        client, count, size = self.s3_client(), 0, 0
        for page in client.get_paginator("list_objects_v2").paginate(
                Bucket=bucket, Prefix=prefix.rstrip("/") + "/"):
            for obj in page.get("Contents", ()):
                count, size = count + 1, size + int(obj["Size"])
        return count, size

    # -------------------------------------------------------------- fault hooks
    def kill_spark_worker(self, i: int = 0, timeout: float = 60) -> None:
        """SIGKILL worker ``i`` and its executors (a container that dies), then wait until
        the master no longer counts it."""
        self.services[f"spark-worker-{i}"].kill()
        port = self.ports[f"spark-worker-{i}"]
        wait_until("the master to drop the killed worker",
                   lambda: all(int(w.get("port", -1)) != port for w in self.alive_workers()),
                   timeout, self.services["spark-master"].log)

    def start_spark_worker(self, i: int = 0, timeout: float = 120) -> None:
        """Start worker ``i`` again (fresh ports) and wait until the master counts it."""
        self.ports[f"spark-worker-{i}"] = free_port()
        self.ports[f"spark-worker-{i}-ui"] = free_port()
        self._worker(i).start()
        self.wait_spark_workers(timeout=timeout)

    def restart_code_server(self, timeout: float = 180) -> None:
        """Stop and start the code server (same port; its runs in flight die with it, as in a
        container restart), then wait until the webserver serves it (it refreshes by itself)."""
        svc = self.services["code-server"]
        svc.stop()
        svc.start()
        self.wait_code_server(timeout)
        if "webserver" in self.services:
            self.wait_webserver(timeout)
            self.wait_served(timeout)

    def wait_served(self, timeout: float = 180, streak: int = 3) -> float:
        """Until ``streak`` GraphQL reads in a row that need the code location succeed (a
        webserver still holding a restarted server's address answers 500 meanwhile)."""
        ok = [0]

        def served() -> bool:
            try:
                # the location's repositories, and rows of the runs and event-log storage
                self.graphql("{ repositoriesOrError { ... on RepositoryConnection { nodes {"
                             " name jobs { name } } } } runsOrError(limit: 5) { ... on Runs {"
                             " results { runId status tags { key value } } } }"
                             " instance { daemonHealth { allDaemonStatuses { healthy } } } }",
                             timeout=20)
            except (OSError, RuntimeError):
                ok[0] = 0
                return False
            ok[0] += 1
            return ok[0] >= streak

        return wait_until("the webserver serving the code location", served, timeout,
                          self.services["webserver"].log, interval=1.0)

    def restart_postgres(self, timeout: float = 120) -> None:
        """Restart the database (fast shutdown), then wait until the webserver answers
        again: measured here, its first reads after a restart answer 500 ("server closed
        the connection unexpectedly": stale pooled connections). ``pg.restart()`` alone
        leaves that to the caller."""
        assert self.pg is not None
        self.pg.restart()
        if "webserver" in self.services:
            self.wait_served(timeout, streak=5)

    def s3_unavailable(self, on: bool = True) -> None:
        """Every S3 request answers 503 SlowDown while on."""
        rule_cls = _sibling("s3proxy").Rule
        if on and not self._outage:
            self._outage.append(self.proxy.add(rule_cls("*", "", "status", count=10**9,
                                                        status=503)))
        elif not on:
            while self._outage:
                self.proxy.remove(self._outage.pop())

    @contextmanager
    def s3_outage(self) -> Iterator[None]:
        self.s3_unavailable(True)
        try:
            yield
        finally:
            self.s3_unavailable(False)

    # -------------------------------------------------------------- measurements
    def process_tree_rss(self) -> int:
        """Resident bytes of every service's process tree (and of the Postgres server)."""
        pids: set[int] = set()
        for svc in self.services.values():
            if svc.alive and svc.pid:
                pids |= _tree(svc.pid)
        total = 0
        for pid in pids:
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        return total


def _tree(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            text = Path(stat).read_text()
            ppid = int(text.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(Path(stat).parent.name))
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo.extend(children.get(pid, ()))
    return out


@contextmanager
def topology(root: Path, *, keep: bool = False, **kw: Any) -> Iterator[Topology]:
    """The whole topology under ``root`` (removed afterwards unless ``keep``)."""
    topo = Topology(root, **kw)
    try:
        topo.start()
        yield topo
    finally:
        topo.stop()
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
