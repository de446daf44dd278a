"""Planning probe: CPU and peak RSS of a one-partition plan and a full plan on a table of N
data-file entries over P partitions, built FAST (manifests written directly through
:class:`ManifestWriter` with synthetic DataFileMetas, no data files: planning never opens one).

The table is built like our writer builds it: ``--commits`` commits, each adding
``N / commits`` entries spread over every partition (writer order: partitions shuffled, as
hash-distributed writers hand them to the committer), manifests rolled at the default
``manifest.target-file-size``, the base list = every earlier manifest (no merging, as for
manifests above the merge threshold).

Usage::

    python -m bench.plan_probe build /tmp/probe --entries 100000 --partitions 10000
    python -m bench.plan_probe plan /tmp/probe one      # one partition (pt = 4242)
    python -m bench.plan_probe plan /tmp/probe full
    python -m bench.plan_probe live /tmp/probe          # a commit's live read, one partition

``plan`` runs in a process of its own per measurement and prints one JSON line: CPU seconds
of the plan, RSS growth (peak over the plan minus RSS before it) and the number of splits.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
import uuid
from pathlib import Path

from paimon_core.catalog import FileSystemCatalog
from paimon_core.commit.manifest_writer import ManifestWriter
from paimon_core.io.file_io import join
from paimon_core.schema_builder import Schema
from paimon_core.spec.binary_row import serialize_binary_row
from paimon_core.spec.manifest import DataFileMeta, FileKind, FileSource, ManifestEntry
from paimon_core.spec.manifest_list import ManifestFileMeta
from paimon_core.spec.snapshot import CommitKind, Snapshot
from paimon_core.spec.stats import EMPTY_STATS, SimpleStats
from paimon_core.types import parse_sql_type

TABLE = "db.t"
ONE_PARTITION = 4242
_INT = parse_sql_type("INT")


_VALUE_TYPES = [_INT, parse_sql_type("BIGINT"), parse_sql_type("STRING")]


def _entry(pt: int, n: int) -> ManifestEntry:
    """An append-table file entry as our writer makes it (value stats of 3 columns)."""
    stats = SimpleStats(
        serialize_binary_row([pt, n * 100, f"v-{n:08d}-a"], _VALUE_TYPES),
        serialize_binary_row([pt, n * 100 + 99, f"v-{n:08d}-z"], _VALUE_TYPES),
        (0, 0, 3),
    )
    f = DataFileMeta(
        f"data-{uuid.UUID(int=n)}-0.parquet", 2000 + n % 997, 100, b"", b"", EMPTY_STATS,
        stats, 0, 99, 0, 0, (), 1_700_000_000_000 + n, 0, None, FileSource.APPEND, None, None,
        None, None,
    )
    return ManifestEntry(FileKind.ADD, serialize_binary_row([pt], [_INT]), 0, -1, f)


def build(warehouse: str, entries: int, partitions: int, commits: int) -> None:
    catalog = FileSystemCatalog(warehouse)
    schema = Schema.of([("pt", "INT"), ("id", "BIGINT"), ("v", "STRING")],
                       partition_keys=["pt"], options={"bucket": "-1"})
    table = catalog.create_table(TABLE, schema)
    writer = ManifestWriter(table.file_io, table.path, [_INT], dict(table.schema.options), 0)
    rng = random.Random(28)
    per_commit = entries // commits
    base: list[ManifestFileMeta] = []
    delta: list[ManifestFileMeta] = []
    n = 0
    for c in range(1, commits + 1):
        order = list(range(partitions))
        rng.shuffle(order)
        batch = [_entry(order[i % partitions], n + i) for i in range(per_commit)]
        n += per_commit
        base = base + delta
        delta = writer.write_manifests(batch)
        base_name, base_size = writer.write_manifest_list(base)
        delta_name, delta_size = writer.write_manifest_list(delta)
        snap = Snapshot(
            id=c, schema_id=0, base_manifest_list=base_name, delta_manifest_list=delta_name,
            commit_user="probe", commit_identifier=c, commit_kind=CommitKind.APPEND,
            time_millis=int(time.time() * 1000), total_record_count=100 * n,
            delta_record_count=100 * per_commit, base_manifest_list_size=base_size,
            delta_manifest_list_size=delta_size,
        )
        table.file_io.write_bytes(join(table.path, f"snapshot/snapshot-{c}"), snap.to_json_bytes())
        table.file_io.write_bytes(join(table.path, "snapshot/LATEST"), str(c).encode())
    print(json.dumps({"entries": n, "partitions": partitions, "commits": commits,
                      "manifests": len(base) + len(delta)}))


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def plan(warehouse: str, which: str) -> None:
    table = FileSystemCatalog(warehouse).get_table(TABLE)
    table.latest_snapshot()
    before = _rss_mb()
    cpu = time.process_time()
    rb = table.new_read_builder()
    if which == "one":
        rb = rb.with_filter(f"pt = {ONE_PARTITION}")
    splits = rb.new_scan().plan().splits
    cpu = time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    files = sum(len(s.files) for s in splits)
    print(json.dumps({"plan": which, "cpu_s": round(cpu, 3), "rss_growth_mb": round(peak - before),
                      "splits": len(splits), "files": files}))


def live(warehouse: str) -> None:
    """The commit's read of the live files of one touched partition (its conflict check's
    input): ``TableCommit._live`` on the latest snapshot, as a 1-file commit to partition
    ``ONE_PARTITION`` makes it (manifest merging, the rest of that commit, is not measured)."""
    table = FileSystemCatalog(warehouse).get_table(TABLE)
    commit = table.new_commit("probe-live")
    metas = table.manifest_io.data_manifests(table.latest_snapshot())
    touched = {serialize_binary_row([ONE_PARTITION], [_INT])}
    before = _rss_mb()
    cpu = time.process_time()
    entries = commit._live(metas, touched)
    cpu = time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"live": "one partition", "cpu_s": round(cpu, 3),
                      "rss_growth_mb": round(peak - before), "entries": len(entries)}))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.plan_probe")
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("warehouse")
    b.add_argument("--entries", type=int, default=100_000)
    b.add_argument("--partitions", type=int, default=10_000)
    b.add_argument("--commits", type=int, default=10)
    q = sub.add_parser("plan")
    q.add_argument("warehouse")
    q.add_argument("which", choices=["one", "full"])
    lv = sub.add_parser("live")
    lv.add_argument("warehouse")
    a = p.parse_args(argv)
    if a.cmd == "build":
        build(a.warehouse, a.entries, a.partitions, a.commits)
    elif a.cmd == "live":
        live(a.warehouse)
    else:
        plan(a.warehouse, a.which)
    return 0


if __name__ == "__main__":
    sys.exit(main())
