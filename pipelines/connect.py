"""The long-lived Spark Connect server that Dagster runs share, so that a run reaches its first
Spark task in seconds instead of starting a JVM of its own.

A run (``assets.resources.SparkResource``) opens a Spark Connect *session* of its own on the
server (its own SQL conf, temporary views and registered ``paimon`` source); the server's one
Spark application runs the jobs of every run, its FAIR scheduler interleaving their tasks.

Which server (``PAIMON_SPARK_CONNECT``, or the Spark resource's ``connect`` field):

================  ==============================================================================
``auto``          the server of this checkout, interpreter, master and conf: found through its
                  state directory, or started detached on first use (a lock makes concurrent
                  runs start one); it stops after ``PAIMON_SPARK_CONNECT_IDLE`` seconds (1800)
                  without a client
``sc://host:port``  a server someone else runs (docker/compose.yaml's ``spark-connect``)
``off``           no server: the classic in-process session (tests, ``python -m pipelines.*``)
================  ==============================================================================

State directory (``PAIMON_SPARK_CONNECT_DIR``, default ``$TMPDIR/paimon-spark-connect-<uid>``):
one folder per server key holding ``lock``, ``server.json`` (address, pids, master, start
time), ``server.log`` (the server's own log) and ``leases/<pid>`` (one per client process).

``python -m pipelines.connect serve --master M [--host H --port P --idle-timeout S]`` runs a
server in the foreground (the supervisor process: it starts the JVM, publishes
``server.json`` once the server answers, and stops the JVM on SIGTERM or when idle);
``start`` starts (or finds) the ``auto`` server and prints its address; ``stop`` stops it.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from paimon_core import ConfigError

__all__ = [
    "CONNECT_ENV",
    "ServerInfo",
    "connect_mode",
    "current_server",
    "ensure_server",
    "release",
    "server_conf",
    "server_dir",
    "stop_server",
]

log = logging.getLogger(__name__)

CONNECT_ENV = "PAIMON_SPARK_CONNECT"
DIR_ENV = "PAIMON_SPARK_CONNECT_DIR"
IDLE_ENV = "PAIMON_SPARK_CONNECT_IDLE"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: seconds without a client after which an ``auto`` server stops
DEFAULT_IDLE = 1800.0
#: seconds a server may take to answer after its start (a JVM on a loaded machine: ~45 s)
START_TIMEOUT = 300.0
_OFF = ("", "off", "false", "0", "no", "classic")
_INFO = "server.json"
_LOG = "server.log"
#: the server this process connected to (:func:`current_server`), and whether it started it
_CURRENT: dict[str, tuple[ServerInfo, bool]] = {}


def connect_mode(value: str | None) -> str | None:
    """``auto``, an ``sc://`` address, or None (classic in-process session) from a setting.

    Raises:
        ConfigError: anything else.
    """
    text = (value or "").strip()
    if text.lower() in _OFF:
        return None
    if text.lower() == "auto":
        return "auto"
    if text.startswith("sc://"):
        return text
    raise ConfigError(CONNECT_ENV, f"{text!r}: expected auto, off or sc://host:port")


@dataclass(frozen=True)
class ServerInfo:
    """A running server as its ``server.json`` describes it."""

    url: str
    pid: int  # the supervisor (``serve``); the JVM is its child
    jvm_pid: int
    master: str
    log: str
    started: float  # unix time the server answered

    def alive(self) -> bool:
        """The supervisor runs and the server's port accepts connections."""
        try:
            os.kill(self.pid, 0)
        except OSError:
            return False
        host, port = self.url[len("sc://"):].split("/")[0].rsplit(":", 1)
        with contextlib.suppress(OSError), socket.create_connection((host, int(port)), 2):
            return True
        return False


def _source_fingerprint(root: Path) -> str:
    """The newest modification time of the packages the server's Python workers import: a
    changed source starts a fresh server (reused workers would keep the old code)."""
    newest = 0.0
    for pkg in ("pipelines", "paimon_core"):
        for path in (root / pkg).rglob("*.py"):
            newest = max(newest, path.stat().st_mtime)
    return f"{newest:.3f}"


def server_conf(master: str, conf: Mapping[str, str]) -> dict[str, str]:
    """The Spark conf of a server for ``master``: the session defaults of
    :func:`pipelines.session.get_session` (loopback binding in local mode), the FAIR scheduler
    (the runs' jobs share the cores instead of queueing behind the first; :func:`serve` makes
    its default pool, where every session's jobs land, FAIR within), a known
    ``spark.default.parallelism`` (:func:`pipelines.session.default_parallelism`), then
    ``conf``."""
    from pipelines.session import COMMON_DEFAULTS, LOCAL_DEFAULTS, local_cores

    out = dict(COMMON_DEFAULTS)
    cores = local_cores(master)
    if cores is not None:
        out.update(LOCAL_DEFAULTS)
        out["spark.default.parallelism"] = str(max(cores, 1))
    out.update({"spark.scheduler.mode": "FAIR",
                # a client gone without closing its session: its operations end after this
                "spark.connect.execute.manager.detachedTimeout": "60s"})
    out.update(conf)
    return out


def server_dir(master: str, conf: Mapping[str, str]) -> Path:
    """The state directory of the ``auto`` server of this checkout, environment (its prefix
    and ``PYTHONPATH``), source version, master and conf."""
    from pipelines.session import source_root

    root = Path(source_root())
    base = Path(os.environ.get(DIR_ENV) or
                Path(tempfile.gettempdir()) / f"paimon-spark-connect-{os.getuid()}")
    # the server's Python workers import what the starting process's PYTHONPATH holds (the
    # source root, always first, aside)
    path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if p and p != str(root)]
    key = json.dumps([str(root), sys.prefix, path, _source_fingerprint(root), master,
                      sorted(conf.items())])
    return base / hashlib.sha1(key.encode()).hexdigest()[:16]


def read_info(directory: Path) -> ServerInfo | None:
    try:
        return ServerInfo(**json.loads((directory / _INFO).read_text()))
    except (OSError, ValueError, TypeError):
        return None


@contextlib.contextmanager
def _locked(directory: Path, *, blocking: bool = True) -> Iterator[bool]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "lock", "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _lease(directory: Path, pid: int) -> Path:
    return directory / "leases" / str(pid)


def ensure_server(master: str, conf: Mapping[str, str] | None = None, *,
                  idle_timeout: float | None = None,
                  timeout: float = START_TIMEOUT) -> tuple[ServerInfo, bool]:
    """The ``auto`` server for ``master`` and ``conf`` (:func:`server_conf`), started detached
    unless one runs; this process holds a lease on it until :func:`release`. Returns the
    server and whether this call started it.

    Raises:
        RuntimeError: the server did not answer within ``timeout`` seconds or exited (the
            message ends with its log).
    """
    full = server_conf(master, conf or {})
    directory = server_dir(master, full)
    with _locked(directory):
        info = read_info(directory)
        started = info is None or not info.alive()
        if started:
            info = _start_detached(directory, master, full, idle_timeout, timeout)
        assert info is not None
        _lease(directory, os.getpid()).parent.mkdir(exist_ok=True)
        _lease(directory, os.getpid()).touch()
    _CURRENT["server"] = (info, started)
    return info, started


def current_server() -> tuple[ServerInfo, bool] | None:
    """The server :func:`ensure_server` gave this process, and whether it started it."""
    return _CURRENT.get("server")


def release(info: ServerInfo | None = None) -> None:
    """Drop this process's lease on ``info``'s server (default: :func:`current_server`)."""
    current = current_server()
    info = info or (current[0] if current else None)
    if info is not None:
        with contextlib.suppress(OSError):
            _lease(Path(info.log).parent, os.getpid()).unlink()


def _start_detached(directory: Path, master: str, conf: Mapping[str, str],
                    idle_timeout: float | None, timeout: float) -> ServerInfo:
    (directory / _INFO).unlink(missing_ok=True)
    args = [sys.executable, "-m", "pipelines.connect", "serve", "--dir", str(directory),
            "--master", master, "--exact-conf"]
    if idle_timeout is not None:
        args += ["--idle-timeout", str(idle_timeout)]
    for k, v in conf.items():
        args += ["--conf", f"{k}={v}"]
    from pipelines.session import source_root

    env = _classic_env()
    env["PYTHONPATH"] = os.pathsep.join(
        [source_root(), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
    with open(directory / _LOG, "ab") as out:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                env=env, cwd=str(directory), start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = read_info(directory)
        if info is not None and info.alive():
            return info
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    tail = (directory / _LOG).read_text(errors="replace")[-3000:]
    raise RuntimeError(f"the Spark Connect server for {master} did not start within "
                       f"{timeout:.0f} s (log {directory / _LOG}):\n{tail}")


def stop_server(directory: Path, *, timeout: float = 30.0) -> bool:
    """Stop the server of ``directory`` (SIGTERM to its supervisor, which stops the JVM);
    whether one was running."""
    info = read_info(directory)
    if info is None:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(info.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _pid_alive(info.pid):
        time.sleep(0.2)
    return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a child of ours that exited but was not reaped yet
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def server_command(master: str, host: str, port: int, conf: Mapping[str, str]) -> list[str]:
    """``spark-submit`` of pyspark's own distribution running the Connect server."""
    import pyspark

    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    cmd = [str(submit), "--class", SERVER_CLASS, "--name", "paimon-spark-connect",
           "--master", master,
           "--conf", f"spark.connect.grpc.binding.address={host}",
           "--conf", f"spark.connect.grpc.binding.port={port}",
           "--conf", "spark.connect.grpc.port.maxRetries=0"]
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    return cmd


#: what pyspark sets in a process that opened a Spark Connect session: inherited by a server
#: started from there, it would turn the server's Python workers into Connect clients
_CLIENT_ENV = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")


def _classic_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in _CLIENT_ENV}


def _server_env(master: str, conf: Mapping[str, str]) -> dict[str, str]:
    import pyspark

    from pipelines.session import local_cores, source_root

    env = _classic_env()
    # spark-submit sizes the Connect server's JVM as a daemon's (SPARK_DAEMON_MEMORY, e.g.
    # the 256m of a loopback cluster's master and workers) unless told its driver memory
    env.pop("SPARK_DAEMON_MEMORY", None)
    if conf.get("spark.driver.memory"):
        env["SPARK_DAEMON_MEMORY"] = conf["spark.driver.memory"]
    env["SPARK_HOME"] = str(Path(pyspark.__file__).parent)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("SPARK_HIDE_TRACEBACK", "1")
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if source_root() not in parts:
        env["PYTHONPATH"] = os.pathsep.join([source_root(), *parts])
    if local_cores(master) is not None:
        env["PYSPARK_PYTHON"] = sys.executable
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


def serve(directory: Path, master: str, conf: Mapping[str, str], *, host: str = "127.0.0.1",
          port: int = 0, idle_timeout: float = DEFAULT_IDLE, advertise: str | None = None
          ) -> int:
    """Run the server in the foreground until SIGTERM/SIGINT, the JVM's exit, or
    ``idle_timeout`` seconds (0: never) without a lease of a live client process."""
    directory.mkdir(parents=True, exist_ok=True)
    port = port or _free_port(host)
    address = advertise or ("127.0.0.1" if host in ("0.0.0.0", "") else host)
    conf = _with_ui_url(_with_fair_default_pool(directory, conf), host, address)
    jvm = subprocess.Popen(server_command(master, host, port, conf),
                           env=_server_env(master, conf),
                           stdin=subprocess.DEVNULL)
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda sig, _f: stopping.append(sig))
    signal.signal(signal.SIGINT, lambda sig, _f: stopping.append(sig))
    info = ServerInfo(url=f"sc://{address}:{port}", pid=os.getpid(), jvm_pid=jvm.pid,
                      master=master, log=str(directory / _LOG), started=0.0)
    published = False
    last_client = time.monotonic()
    try:
        while not stopping and jvm.poll() is None:
            if not published and _answers(address, port):
                last_client = time.monotonic()  # the idle time counts from here
                info = ServerInfo(**{**asdict(info), "started": time.time()})
                tmp = directory / f".{_INFO}.{os.getpid()}"
                tmp.write_text(json.dumps(asdict(info)))
                tmp.replace(directory / _INFO)
                published = True
                print(f"Spark Connect server for {master} at {info.url}", flush=True)
            if _live_leases(directory):
                last_client = time.monotonic()
            elif (published and idle_timeout > 0
                  and time.monotonic() - last_client > idle_timeout
                  and _retire(directory, info)):
                print(f"no client for {idle_timeout:.0f} s: stopping", flush=True)
                break
            time.sleep(1.0)
    finally:
        if read_info(directory) == info:
            (directory / _INFO).unlink(missing_ok=True)
        if jvm.poll() is None:
            jvm.terminate()
            try:
                jvm.wait(30)
            except subprocess.TimeoutExpired:
                jvm.kill()
    return 0 if stopping or jvm.returncode in (0, None, -signal.SIGTERM) else 1


#: the FAIR scheduler's default pool, FAIR within: every run's jobs land in it (a Connect
#: session cannot choose a pool), and Spark's own default pool is FIFO inside
_FAIR_POOLS = """<?xml version="1.0"?>
<allocations>
  <pool name="default">
    <schedulingMode>FAIR</schedulingMode>
    <weight>1</weight>
    <minShare>0</minShare>
  </pool>
</allocations>
"""


def _with_fair_default_pool(directory: Path, conf: Mapping[str, str]) -> dict[str, str]:
    """``conf`` with an allocation file whose default pool shares fairly between jobs (unless
    the conf has its own, or is not FAIR)."""
    out = dict(conf)
    if out.get("spark.scheduler.mode") != "FAIR" or "spark.scheduler.allocation.file" in out:
        return out
    path = directory / "fairscheduler.xml"
    path.write_text(_FAIR_POOLS)
    out["spark.scheduler.allocation.file"] = str(path)
    return out


def _with_ui_url(conf: Mapping[str, str], host: str, address: str) -> dict[str, str]:
    """``conf`` with the driver UI on a known port (``spark.ui.port``, else a free one) and
    its address published to the sessions (:data:`pipelines.session.UI_URL_CONF`: a run's
    ``spark/ui_url``); unchanged when the UI is off."""
    from pipelines.session import UI_URL_CONF

    out = dict(conf)
    if out.get("spark.ui.enabled", "true").lower() == "false":
        return out
    port = out.get("spark.ui.port") or str(_free_port("" if host == "0.0.0.0" else host))
    out["spark.ui.port"] = port
    out.setdefault(UI_URL_CONF, f"http://{os.environ.get('SPARK_PUBLIC_DNS') or address}:{port}")
    return out


def _answers(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), 1):
        return True
    return False


def _live_leases(directory: Path) -> int:
    """Leases of live processes (a dead client's lease is removed)."""
    live = 0
    for lease in (directory / "leases").glob("*") if (directory / "leases").is_dir() else ():
        try:
            os.kill(int(lease.name), 0)
            live += 1
        except (OSError, ValueError):
            lease.unlink(missing_ok=True)
    return live


def _retire(directory: Path, info: ServerInfo) -> bool:
    """Withdraw ``server.json`` unless a client is starting to use the server right now."""
    with _locked(directory, blocking=False) as got:
        if not got or _live_leases(directory):
            return False
        if read_info(directory) == info:
            (directory / _INFO).unlink(missing_ok=True)
        return True


def _conf_pairs(items: Sequence[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        if "=" not in item:
            raise SystemExit(f"--conf {item!r} is not KEY=VALUE")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from pipelines.config import SparkSettings

    p = argparse.ArgumentParser(prog="python -m pipelines.connect",
                                description="The Spark Connect server that runs share.")
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("serve", "start", "stop"):
        s = sub.add_parser(name)
        s.add_argument("--master", help="Spark master (default: $PAIMON_SPARK_MASTER or "
                                        "local[2])")
        s.add_argument("--conf", action="append", metavar="KEY=VALUE")
        s.add_argument("--dir", type=Path, help="state directory (default: the auto "
                                                "server's, under $PAIMON_SPARK_CONNECT_DIR)")
    serve_p = sub.choices["serve"]
    serve_p.add_argument("--host", default="127.0.0.1", help="address to bind")
    serve_p.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    serve_p.add_argument("--advertise", help="host clients use (default: --host)")
    serve_p.add_argument("--exact-conf", action="store_true",
                         help="the --conf pairs are the whole conf (no defaults, no "
                              "PAIMON_SPARK_CONF)")
    serve_p.add_argument("--idle-timeout", type=float,
                         default=float(os.environ.get(IDLE_ENV) or DEFAULT_IDLE),
                         help="seconds without a client before stopping (0: never)")
    args = p.parse_args(argv)
    env_master = os.environ.get("PAIMON_SPARK_MASTER")
    master = args.master or env_master or "local[2]"
    conf = _conf_pairs(args.conf)
    if args.command == "serve":  # a deployment's server takes PAIMON_SPARK_CONF too
        full = conf if args.exact_conf else server_conf(
            master, {**SparkSettings.from_env().conf, **conf})
        return serve(args.dir or server_dir(master, full), master, full, host=args.host,
                     port=args.port, idle_timeout=args.idle_timeout, advertise=args.advertise)
    # start / stop: the auto server of the embedded resource (SparkResource(master=...))
    directory = args.dir or server_dir(master, server_conf(master, conf))
    if args.command == "start":
        info, started = ensure_server(master, conf)
        release(info)
        print(f"{'started' if started else 'running'}: {info.url} (log {info.log})")
        return 0
    print("stopped" if stop_server(directory) else f"no server in {directory}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    logging.basicConfig(level=logging.INFO)
    raise SystemExit(main())
