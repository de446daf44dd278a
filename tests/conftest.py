"""Shared fixtures: a moto S3 server on loopback, temporary warehouses."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

os.environ.setdefault("TZ", "UTC")


@pytest.fixture(scope="session")
def s3_server() -> Iterator[dict[str, str]]:
    """A real S3 endpoint (moto_server) on 127.0.0.1, with one bucket."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    creds = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    old = {k: os.environ.get(k) for k in creds}
    os.environ.update(creds)
    import boto3

    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(
        Bucket="warehouse"
    )
    try:
        yield {"endpoint": endpoint, "bucket": "warehouse"}
    finally:
        server.stop()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def s3_root(s3_server: dict[str, str]) -> tuple[str, dict[str, str]]:
    """A fresh prefix in the moto bucket and the storage options to reach it."""
    root = f"s3://{s3_server['bucket']}/{uuid.uuid4().hex}"
    return root, {
        "s3.endpoint": s3_server["endpoint"],
        "s3.access-key": "testing",
        "s3.secret-key": "testing",
        "s3.region": "us-east-1",
    }
