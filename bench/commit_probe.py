"""Probe: what a commit costs on a table of many manifest entries (issue 28, scope 2).

    .venv/bin/python bench/commit_probe.py --entries 100000      # 10 commits of 10k entries
    .venv/bin/python bench/commit_probe.py --entries 1000000     # 10 commits of 100k entries

Builds an append table partitioned by ``pt INT`` over ``--partitions`` partitions (default
10,000) in 10 APPEND commits of ``entries / 10`` data-file entries each (every commit gives
every partition the same number of files), through :class:`TableCommit` with synthetic
:class:`DataFileMeta` (no data files are written: the committer never opens them), then
commits ONE data file. Every commit goes through a fresh catalog (a cold manifest cache, as a
commit job in a process of its own meets it). Prints, per commit: CPU (user + sys of this
process), wall, peak RSS (VmHWM, reset through ``/proc/self/clear_refs`` before each commit)
and its growth above the RSS right before the commit, and how many manifests were decoded
(cache misses). One JSON line per commit on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from paimon_core.catalog import FileSystemCatalog  # noqa: E402
from paimon_core.commit_message import CommitMessage  # noqa: E402
from paimon_core.schema_builder import Schema  # noqa: E402
from paimon_core.spec.binary_row import EMPTY_ROW_SERIALIZED, serialize_binary_row  # noqa: E402
from paimon_core.spec.manifest import DataFileMeta, FileSource  # noqa: E402
from paimon_core.spec.stats import EMPTY_STATS, SimpleStats  # noqa: E402
from paimon_core.types import parse_sql_type  # noqa: E402

INT = parse_sql_type("INT")


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


VALUE_TYPES = [parse_sql_type(t) for t in ("INT", "BIGINT", "BIGINT", "STRING", "DOUBLE")]


def _file(n: int, rng: random.Random) -> DataFileMeta:
    """A data file entry shaped like a real one: a unique name, value stats of 5 columns with
    distinct values (what makes a manifest entry take ~100-200 bytes compressed)."""
    lo = rng.randrange(1 << 40)
    mins = [n % 10_000, lo, rng.randrange(1 << 30), f"k{lo:x}", rng.random()]
    maxs = [n % 10_000, lo + rng.randrange(1 << 20), rng.randrange(1 << 31),
            f"k{lo + 999:x}", 1 + rng.random()]
    stats = SimpleStats(serialize_binary_row(mins, VALUE_TYPES),
                        serialize_binary_row(maxs, VALUE_TYPES), (0, 0, rng.randrange(9), 0, 0))
    rows = rng.randrange(1000, 100_000)
    return DataFileMeta(
        f"data-{uuid.UUID(int=rng.getrandbits(128))}-0.parquet", rows * 40 + rng.randrange(4096),
        rows, EMPTY_ROW_SERIALIZED, EMPTY_ROW_SERIALIZED, EMPTY_STATS, stats, 0, rows - 1, 0, 0,
        (), 1_764_000_000_000 + n, 0, None, FileSource.APPEND, None, None, None, None,
    )


def _messages(path: str, parts: list[bytes], per_partition: int, start: int,
              rng: random.Random) -> tuple[list[CommitMessage], int]:
    msgs = []
    n = start
    for p in parts:
        files = tuple(_file(n + i, rng) for i in range(per_partition))
        n += per_partition
        msgs.append(CommitMessage(p, 0, -1, new_files=files, table_path=path, schema_id=0))
    return msgs, n


def _measure(label: str, fn: Any, reads: list[int]) -> dict[str, Any]:
    before_rss = _status("VmRSS")
    _reset_peak()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    w0 = time.perf_counter()
    n0 = reads[0]
    fn()
    w1 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    peak = _status("VmHWM")
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    row = {"step": label, "cpu_s": round(cpu, 3), "wall_s": round(w1 - w0, 3),
           "peak_rss_mb": round(peak / 2**20, 1),
           "growth_mb": round((peak - before_rss) / 2**20, 1),
           "manifests_decoded": reads[0] - n0, "load": round(os.getloadavg()[0], 2)}
    print(json.dumps(row), flush=True)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--dir", default=None, help="warehouse (default: a temporary directory)")
    args = ap.parse_args()
    per_commit = args.entries // args.commits
    per_partition = max(1, per_commit // args.partitions)
    with tempfile.TemporaryDirectory(dir=args.dir) as wh:
        t = FileSystemCatalog(wh).create_table(
            "db.t", Schema.of([("pt", "INT"), ("a", "BIGINT"), ("b", "BIGINT"), ("c", "STRING"),
                              ("d", "DOUBLE")], partition_keys=["pt"]))

        def commit(msgs: list[CommitMessage], identifier: int) -> None:
            # a fresh catalog per commit: a cold manifest cache, as a commit job in a process
            # of its own meets it
            FileSystemCatalog(wh).get_table("db.t").new_commit("probe").commit(msgs, identifier)

        # count decodes (cache misses) of manifests
        reads = [0]
        import paimon_core.manifest_io as mio
        real = mio.decode_manifest

        def counting(data: bytes, path: str) -> Any:
            reads[0] += 1
            return real(data, path)

        mio.decode_manifest = counting  # type: ignore[assignment]
        rng = random.Random(28)
        parts = [serialize_binary_row([i], [INT]) for i in range(args.partitions)]
        n = 0
        rows = []
        for c in range(args.commits):
            msgs, n = _messages(t.path, parts, per_partition, n, rng)
            rows.append(_measure(f"commit {c + 1} ({len(msgs) * per_partition} entries)",
                                 lambda msgs=msgs, c=c: commit(msgs, c + 1), reads))
        one, n = _messages(t.path, parts[:1], 1, n, rng)
        rows.append(_measure("1-file commit", lambda: commit(one, args.commits + 1),
                             reads))
        table = FileSystemCatalog(wh).get_table("db.t")
        metas = table.manifest_io.data_manifests(table.latest_snapshot())
        print(json.dumps({"data_manifests": len(metas),
                          "sizes_kb": [m.file_size // 1024 for m in metas]}))
        first, last = rows[0]["cpu_s"], rows[args.commits - 1]["cpu_s"]
        print(json.dumps({"entries": n, "last_over_first_cpu": round(last / max(first, 1e-9), 2),
                          "max_peak_rss_mb": max(r["peak_rss_mb"] for r in rows)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
