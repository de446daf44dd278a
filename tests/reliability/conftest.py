"""Fixtures of the reliability suite: a private S3 bucket per test, the fault proxy."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.reliability.harness import WorkerPool, set_worker_pool
from tests.reliability.s3proxy import FaultProxy


def _client(endpoint: str):  # type: ignore[no-untyped-def]
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


@pytest.fixture
def s3_bucket(s3_server: dict[str, str]) -> tuple[str, dict[str, str]]:
    """A fresh, empty bucket (moto lists are O(keys in the bucket); containment checks list
    the whole bucket) and the storage options to reach it."""
    bucket = f"rel-{uuid.uuid4().hex[:12]}"
    _client(s3_server["endpoint"]).create_bucket(Bucket=bucket)
    return f"s3://{bucket}/wh", {
        "s3.endpoint": s3_server["endpoint"],
        "s3.access-key": "testing",
        "s3.secret-key": "testing",
        "s3.region": "us-east-1",
    }


@pytest.fixture
def fault_proxy(s3_server: dict[str, str]) -> Iterator[FaultProxy]:
    proxy = FaultProxy(s3_server["endpoint"]).start()
    try:
        yield proxy
    finally:
        proxy.stop()


@pytest.fixture
def proxied_bucket(s3_bucket: tuple[str, dict[str, str]], fault_proxy: FaultProxy
                   ) -> tuple[str, dict[str, str], FaultProxy]:
    """``s3_bucket`` reached through the fault proxy."""
    root, opts = s3_bucket
    return root, {**opts, "s3.endpoint": fault_proxy.endpoint}, fault_proxy


@pytest.fixture(autouse=True, scope="session")
def _quiet_moto() -> None:
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)


@pytest.fixture(scope="session", autouse=True)
def _worker_pool() -> Iterator[None]:
    """16 spawned workers shared by the race scenarios (started lazily by the first one)."""
    holder: list[WorkerPool] = []

    class Lazy(WorkerPool):
        def __init__(self) -> None:  # no processes until first use
            pass

        def run(self, *a: object, **kw: object):  # type: ignore[no-untyped-def,override]
            if not holder:
                holder.append(WorkerPool(16))
            return holder[0].run(*a, **kw)  # type: ignore[arg-type]

    set_worker_pool(Lazy())
    try:
        yield
    finally:
        set_worker_pool(None)
        if holder:
            holder[0].close()
