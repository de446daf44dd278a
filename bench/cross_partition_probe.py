"""Probe: what the cross-partition index costs (``bucket = -1``, a primary key without the
partition key; issue 30).

    .venv/bin/python bench/cross_partition_probe.py --keys 1000000

Builds (once per ``--warehouse``) a table of ``--keys`` keys (``id BIGINT``) over two
partitions, then times, in this process: loading the index of a new writer (its bootstrap from
the latest snapshot) and routing ``2 * keys`` rows through it, half of them keys moving to
another partition (each gets a ``-D`` in its old one), half new keys. Prints one JSON line:
CPU (user + sys of this process), wall, load average, peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time

import numpy as np
import pyarrow as pa

from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import TableNotExistError
from paimon_core.schema_builder import Schema
from paimon_core.table import FileStoreTable


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _table(warehouse: str, n: int) -> FileStoreTable:
    catalog = FileSystemCatalog(warehouse)
    catalog.create_database("db", ignore_if_exists=True)
    name = f"db.xpart_{n}"
    try:
        return catalog.get_table(name)
    except TableNotExistError:
        pass
    t = catalog.create_table(name, Schema.of(
        [("pt", "STRING"), ("id", "BIGINT NOT NULL"), ("v", "STRING")], partition_keys=["pt"],
        primary_keys=["id"], options={"bucket": "-1", "write-only": "true",
                                      "dynamic-bucket.target-row-num": "200000"}))
    ids = np.arange(n, dtype=np.int64)
    with t.new_write("probe") as w:
        w.write_arrow(pa.table({"pt": pa.array(np.where(ids % 2 == 0, "a", "b")), "id": ids,
                                "v": pa.array(["x"] * n)}))
        t.new_commit("probe").commit(w.prepare_commit(), 1)
    return t


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--keys", type=int, default=1_000_000)
    p.add_argument("--warehouse", default=os.path.join(tempfile.gettempdir(), "xpart-probe"))
    args = p.parse_args()
    n = args.keys
    t = _table(args.warehouse, n)
    moving = np.concatenate([np.arange(0, n, 2), np.arange(1, n, 2)]).astype(np.int64)
    ids = np.concatenate([moving, np.arange(n, 2 * n, dtype=np.int64)])
    pts = np.concatenate([np.where(moving % 2 == 0, "c", "d"), np.full(n, "a")])
    rows = pa.table({"pt": pa.array(pts), "id": ids, "v": pa.array(["z"] * len(ids))})
    out: dict[str, object] = {"keys": n}
    with t.new_write("probe-2") as w:
        cross = w._cross
        assert cross is not None
        c0, t0 = _cpu(), time.perf_counter()
        cross.route(rows.slice(0, 0), None)  # the bootstrap alone
        out["load_cpu_s"], out["load_wall_s"] = _cpu() - c0, time.perf_counter() - t0
        c0, t0 = _cpu(), time.perf_counter()
        routed, _, _ = cross.route(rows, None)
        out["route_cpu_s"], out["route_wall_s"] = _cpu() - c0, time.perf_counter() - t0
        out["rows_out"] = routed.num_rows
    out["load_avg"] = os.getloadavg()[0]
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in out.items()}))


if __name__ == "__main__":
    main()
