"""S3 request counts of the metadata scale step (``bench/metadata_scale.py``): the same
operations on S3, counted on the wire.

In a fresh process: moto_server (in-process, a free port on 127.0.0.1) behind the counting
proxy of ``scripts/s3proxy.py`` (``FaultProxy`` without rules: every exchange is logged as
(method, path, status, action)); our catalog reaches S3 through the proxy. The table is the
step's layout (:mod:`metadata_steps`) at S3 size: :data:`SNAPSHOTS` commits of one 1-row data
file each over :data:`PARTITIONS` partitions. Then, each counted on its own (the log cleared
before): ``commit1`` (one row written and committed: ``write`` and ``commit`` requests
apart), ``read`` (``table.to_arrow()``: requests on data files against the planned data
files), ``plan_one``, ``expire`` (the 10 oldest snapshots; deletes = ``DELETE`` requests and
``POST ?delete`` batches) and ``day`` (the Dagster-style day of :func:`metadata_steps.day`).

    .venv/bin/python bench/metadata_s3.py [--snapshots 20]   # the counts as one JSON line
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

SNAPSHOTS = 20
PARTITIONS = 4
EXPIRED = 10
BUCKET = "bench-meta"
CHILD_TIMEOUT_S = 900
_DATA = re.compile(r"/part(=|%3D)[^/]+/bucket-\d+/data-")  # botocore quotes "="


def load_proxy() -> Any:
    """``scripts/s3proxy.py``'s module (its one home)."""
    import importlib.util

    name = "paimon_s3proxy"  # the name the tests' loader registers too
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / "s3proxy.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def counts(log: list[tuple[str, str, int, str]]) -> dict[str, Any]:
    by = Counter(m for m, _, _, _ in log)
    return {"total": len(log), "by_method": dict(by),
            "data_file_requests": sum(1 for _, p, _, _ in log if _DATA.search(p)),
            "deletes": sum(1 for m, p, _, _ in log
                           if m == "DELETE" or (m == "POST" and "delete" in p)),
            "errors": sum(1 for _, _, s, _ in log if s >= 400)}


def start_s3() -> tuple[Any, Any, dict[str, str]]:
    """moto_server and the proxy in front of it; the storage options reaching it."""
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request on stderr

    for k, v in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                 ("AWS_DEFAULT_REGION", "us-east-1")):
        os.environ[k] = v
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(
        Bucket=BUCKET)
    proxy = load_proxy().FaultProxy(endpoint).start()
    return server, proxy, {"s3.endpoint": proxy.endpoint, "s3.access-key": "testing",
                           "s3.secret-key": "testing", "s3.region": "us-east-1"}


def s3_child(snapshots: int = SNAPSHOTS) -> dict[str, Any]:
    import numpy as np
    from metadata_steps import (
        ONE_FILE_ID,
        TABLE,
        Layout,
        catalog,
        create_table,
        day,
        plan_files,
        rows,
        write_messages,
    )

    server, proxy, opts = start_s3()
    wh = f"s3://{BUCKET}/wh"
    if snapshots <= EXPIRED:
        raise SystemExit(f"the S3 table needs more than {EXPIRED} snapshots, not {snapshots}")
    lay = Layout(snapshots, PARTITIONS)

    def table() -> Any:
        return catalog(wh, opts).get_table(TABLE)

    try:
        create_table(catalog(wh, opts))
        for i in range(snapshots):
            t = table()
            msgs = write_messages(t, "bench-s3", [rows(
                np.array([i % PARTITIONS], np.int32), np.array([i // PARTITIONS], np.int64),
                i, f"c{i}")])
            t.new_commit("bench-s3").commit(msgs)
        steps: dict[str, dict[str, Any]] = {}

        def counted(name: str, fn: Callable[[], Any]) -> Any:
            proxy.clear()
            r = fn()
            steps[name] = counts(list(proxy.log))
            return r

        # every operation on a table opened before (as Java's catalog.getTable opens it:
        # the schema listed and read), counted apart as "open"
        counted("open", table)

        def commit1(t: Any) -> None:
            msgs = write_messages(t, "bench-s3-one", [rows(
                np.array([0], np.int32), np.array([ONE_FILE_ID], np.int64), -1, "one")])
            steps["commit1_write_only"] = counts(list(proxy.log))
            t.new_commit("bench-s3-one").commit(msgs)

        t = table()
        counted("commit1", lambda: commit1(t))
        files = plan_files(table(), None)[0]
        t = table()
        got = counted("read", t.to_arrow)
        steps["read"]["data_files"] = files
        steps["read"]["rows"] = got.num_rows
        t = table()
        counted("plan_one", lambda: plan_files(t, 0))
        t = table()
        res = counted("expire", lambda: t.expire_snapshots(
            retain_min=1, retain_max=snapshots + 1 - EXPIRED))
        steps["expire"]["expired"] = len(res.expired_ids)
        steps["expire"]["deleted_objects"] = res.deleted_files
        counted("day", lambda: day(table, lay))
    finally:
        proxy.stop()
        server.stop()
    failures = []
    if steps["read"]["rows"] != snapshots + 1:
        failures.append(f"S3 read: {steps['read']['rows']} rows, {snapshots + 1} expected")
    if steps["expire"]["expired"] != EXPIRED:
        failures.append(f"S3 expire: {steps['expire']['expired']} snapshots expired, "
                        f"{EXPIRED} expected")
    return {"table": f"primary-key table, {PARTITIONS} partitions, {snapshots} snapshots of "
                     "1 file each (moto_server behind scripts/s3proxy.py)",
            "steps": steps, "failures": failures}


def run_s3(snapshots: int | None = None) -> dict[str, Any]:
    """The S3 counts, measured in a fresh process (this module as a script)."""
    more = [] if snapshots is None else ["--snapshots", str(snapshots)]
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    try:
        p = subprocess.run([sys.executable, str(Path(__file__).resolve()), *more],
                           capture_output=True,
                           text=True, timeout=CHILD_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired as e:
        return {"failures": [f"S3 counts timed out: {e}"]}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"failures": [f"S3 counts failed (exit {p.returncode}): "
                             + (p.stderr.strip().splitlines() or ["?"])[-1]],
                "stderr": p.stderr[-3000:]}
    return dict(json.loads(lines[-1]))


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="S3 request counts of the metadata scale step")
    ap.add_argument("--snapshots", type=int, default=SNAPSHOTS)
    out = s3_child(ap.parse_args().snapshots)
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    os._exit(0)
