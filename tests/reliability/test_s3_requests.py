"""S3 requests per operation, counted on the wire (moto behind the counting proxy).

The table: primary keys, two partitions, one bucket each, 20 commits of one data file each
(the writers compact as they go, as a streaming job's do). Every count below is
deterministic (no timing), so it is asserted exactly or against a bound; a failure lists
every request of the operation by kind. The README's "S3 requests" table quotes these.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.schema_builder import Schema
from paimon_core.table import FileStoreTable
from tests.reliability.s3proxy import FaultProxy, RequestCount

pytestmark = pytest.mark.s3

SNAPSHOTS = 20


@dataclass
class Lake:
    root: str
    options: dict[str, str]
    proxy: FaultProxy

    def table(self) -> FileStoreTable:
        """A fresh handle (own caches), as a new process opens the table."""
        return FileSystemCatalog(self.root, self.options).get_table("db.t")


def _rows(keys: list[int], pt: str, tag: str) -> pa.Table:
    return pa.table({"k": pa.array(keys, pa.int32()), "pt": [pt] * len(keys),
                     "v": [f"{tag}{k}" for k in keys]})


def _commit(t: FileStoreTable, ident: int, data: pa.Table) -> None:
    w = t.new_write("writer")
    w.write_arrow(data)
    t.new_commit("writer").commit(w.prepare_commit(), ident)


@pytest.fixture(scope="module")
def lake(s3_server: dict[str, str]) -> Iterator[Lake]:
    import boto3

    bucket = f"req-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_server["endpoint"], region_name="us-east-1",
                 aws_access_key_id="testing", aws_secret_access_key="testing"
                 ).create_bucket(Bucket=bucket)
    proxy = FaultProxy(s3_server["endpoint"]).start()
    opts = {"s3.endpoint": proxy.endpoint, "s3.access-key": "testing",
            "s3.secret-key": "testing", "s3.region": "us-east-1"}
    lake = Lake(f"s3://{bucket}/wh", opts, proxy)
    schema = Schema.of([("k", "INT NOT NULL"), ("pt", "STRING NOT NULL"), ("v", "STRING")],
                       primary_keys=["pt", "k"], partition_keys=["pt"],
                       options={"bucket": "1"})
    t = FileSystemCatalog(lake.root, opts).create_table("db.t", schema)
    for i in range(SNAPSHOTS):
        _commit(t, i, _rows([i, 1000 + i], f"p{i % 2}", "v"))
    try:
        yield lake
    finally:
        proxy.stop()


def _data(n: RequestCount) -> list[str]:
    return [e.path for e in n.exchanges if "/bucket-" in e.path]


def _metadata_kinds(n: RequestCount) -> Counter[str]:
    return Counter(e.kind for e in n.exchanges if "/bucket-" not in e.path)


def _repeated(n: RequestCount) -> list[str]:
    """Files read more than once (the LATEST / EARLIEST hints excepted: they are re-read on
    purpose, before an id is chosen and before the fence is raised)."""
    seen = Counter(e.path for e in n.exchanges if e.kind in ("GET", "GET range")
                   and not e.path.endswith(("/snapshot/LATEST", "/snapshot/EARLIEST")))
    return sorted(p for p, c in seen.items() if c > 1)


def _probes_only(n: RequestCount) -> bool:
    """The only HEADs are probes for the snapshot after the latest (Java's ``findLatest``)."""
    return all("/snapshot/snapshot-" in e.path for e in n.exchanges if e.kind == "HEAD")


def test_read_is_one_get_per_data_file(lake: Lake) -> None:
    """A full read: one GET per data file (its size comes from the manifest: no HEAD; a
    small file's footer and data in one request), every metadata file read once, no
    listing."""
    t = lake.table()
    files = sum(len(s.files) for s in t.new_read_builder().new_scan().plan().splits)
    t = lake.table()
    with lake.proxy.counting("full read") as n:
        out = t.to_arrow()
    assert out.num_rows == 2 * SNAPSHOTS
    data = _data(n)
    assert len(data) == files and len(set(data)) == files, n.describe()
    assert all(e.kind in ("GET", "GET range") for e in n.exchanges
               if "/bucket-" in e.path), n.describe()
    assert _repeated(n) == [], n.describe()
    assert _probes_only(n) and n.count("HEAD") == 1, n.describe()
    assert n.count("LIST") == 0, n.describe()


def test_one_partition_plan_reads_metadata_only(lake: Lake) -> None:
    """Planning one partition: the latest snapshot through its hint (no listing), each
    manifest list and manifest at most once, no data file touched."""
    t = lake.table()
    with lake.proxy.counting("one-partition plan") as n:
        plan = t.new_read_builder().with_filter("pt = 'p1'").new_scan().plan()
    assert plan.splits, "the partition has files"
    assert _data(n) == [], n.describe()
    assert _repeated(n) == [], n.describe()
    assert _probes_only(n) and n.count("HEAD") == 1, n.describe()
    assert n.count("LIST") == 0, n.describe()
    # the latest snapshot costs four requests: LATEST, snapshot-N, HEAD snapshot-N+1, EARLIEST
    manifest_reads = sum(1 for e in n.exchanges if "/manifest/" in e.path)
    assert n.total == 4 + manifest_reads, n.describe()


def test_one_file_commit(lake: Lake) -> None:
    """Write and commit one data file: one PUT for it, one manifest, two manifest lists, the
    snapshot (conditional create) and the LATEST hint; the manifests the writer read to
    restore its bucket are not read again by the commit; no HEAD but the latest-snapshot
    probes; no DELETE."""
    t = lake.table()
    with lake.proxy.counting("write") as nw:
        w = t.new_write("writer")
        w.write_arrow(_rows([5000], "p0", "new"))
        messages = w.prepare_commit()
    with lake.proxy.counting("commit") as nc:
        t.new_commit("writer").commit(messages, 10_000)
    both = RequestCount("write + commit", nw.exchanges + nc.exchanges)
    puts = [e.path for e in both.exchanges if e.kind == "PUT"]
    assert sum("/bucket-" in p for p in puts) == 1, both.describe()
    assert sum("/manifest/manifest-list-" in p for p in puts) == 2, both.describe()
    assert sum(p.endswith("/snapshot/LATEST") for p in puts) == 1, both.describe()
    assert sum("/snapshot/snapshot-" in p for p in puts) == 1, both.describe()
    assert len(puts) == 6, both.describe()
    manifest_gets = [e.path for e in both.exchanges
                     if e.kind == "GET" and "/manifest/manifest-" in e.path]
    assert len(manifest_gets) == len(set(manifest_gets)), both.describe()
    assert both.count("DELETE", "DeleteObjects") == 0, both.describe()
    assert _probes_only(both), both.describe()
    # everything but the manifest lists and manifests the writer restores its bucket from
    # (their number is the table's manifest count: pruning and merging bound it)
    assert nw.total - len(manifest_gets) <= 5, nw.describe()
    # the commit: the latest schema (a LIST: the table's own schema file is not read again),
    # the latest snapshot through its hint (4), one manifest and two manifest lists, the
    # snapshot with its fence checks (EARLIEST before, EARLIEST + a listing after: a stale
    # writer's create in an expired slot is withdrawn), LATEST; no manifest read (an APPEND of
    # new files checks no live file)
    assert nc.total <= 13, nc.describe()
    assert nc.count("LIST") == 2 and not any("/schema/schema-" in e.path
                                             for e in nc.exchanges), nc.describe()
    assert not any("/manifest/" in e.path for e in nc.exchanges if e.kind != "PUT"), \
        nc.describe()


def test_expiry_of_ten_snapshots(lake: Lake) -> None:
    """Expiring 10 snapshots: one listing of snapshot/, every snapshot and manifest list read
    once, a delta manifest only when it can matter (its list says it deletes files, or a
    delta before it did), no HEAD, the deletions in DeleteObjects batches (one per stage:
    data, manifests, manifest lists, snapshot files) and no single DELETE."""
    t = lake.table()
    before = t.snapshot_manager.list_snapshot_ids()
    # the deltas of snapshots 2..11 decide what 1..10 free
    deltas = [t.manifest_io.manifest_list(t.snapshot_manager.snapshot(i).delta_manifest_list)
              for i in before[1:11]]
    first = next(i for i, d in enumerate(deltas) if any(m.num_deleted_files for m in d))
    needed = {m.file_name for d in deltas[first:] for m in d}
    assert first > 0 and len(needed) < 10  # the table has add-only deltas before a delete
    t = lake.table()
    with lake.proxy.counting("expire 10 snapshots") as n:
        r = t.expire_snapshots(retain_max=len(before) - 10, retain_min=1)
    assert r.expired_ids == tuple(before[:10]), r
    assert t.snapshot_manager.list_snapshot_ids() == before[10:]
    assert _repeated(n) == [], n.describe()
    assert n.count("HEAD", "DELETE") == 0, n.describe()
    assert 1 <= n.count("DeleteObjects") <= 4, n.describe()
    lists = sum(1 for e in n.exchanges if "manifest-list-" in e.path)
    # 2 lists per expired snapshot and the first retained one's
    assert lists == 2 * 10 + 2, n.describe()
    # the delta manifests read: from the first one that deletes files on
    manifests = {e.path.rsplit("/", 1)[-1] for e in n.exchanges
                 if "/manifest/manifest-" in e.path and "manifest-list-" not in e.path}
    assert manifests == needed, n.describe()
    # 11 snapshots, 22 lists, those manifests; listings of snapshot/, tag/, consumer/ (before
    # and after planning) and schema/ (the table's options, as they are now); the fence
    # (EARLIEST: the table's first expiry, so the listing shows none and it is not read)
    # raised: read, then written
    assert [e.kind for e in n.exchanges if e.path.endswith("/snapshot/EARLIEST")] == \
        ["GET", "PUT"], n.describe()
    assert n.total - n.count("DeleteObjects") == 11 + 22 + len(needed) + 5 + 2, n.describe()
    assert lake.table().to_arrow().num_rows >= 2 * SNAPSHOTS
