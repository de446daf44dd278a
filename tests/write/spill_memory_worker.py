"""Run in a fresh process by ``test_write_spill``: write ``--batches`` x ``--rows`` rows with
``write-buffer-size = --buffer`` through the public API and print, as one JSON line, the peak
RSS growth over the process's RSS just before writing, the CPU seconds and the files made.

Layouts: ``one-bucket`` (every row in one bucket, random keys: every spill sorts and merges);
``skewed`` (two partitions, each one bucket: each batch has one row for the small partition,
so a buffer that kept rows by reference into the inputs would keep every input alive);
``one-call`` (one bucket, all batches concatenated into one ``write_arrow`` call, built before
the baseline: the caller holds the input, the writer must not sort it all at once).
Otherwise each batch is built and dropped in turn: the writer alone can hold the data.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time

import numpy as np
import pyarrow as pa

from paimon_core import FileSystemCatalog, Schema


def _status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> None:
    """Reset the process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0)."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layout", choices=["one-bucket", "skewed", "one-call"], required=True)
    ap.add_argument("--batches", type=int, default=100)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--buffer", default="64 mb")
    ap.add_argument("--write-only", default="true")
    args = ap.parse_args()
    n, nb = args.rows, args.batches
    with tempfile.TemporaryDirectory(prefix="spill-mem-") as wh:
        table = FileSystemCatalog(wh).create_table("db.t", Schema.of(
            [("pt", "STRING"), ("id", "BIGINT"), ("v", "BIGINT"), ("s", "STRING"),
             ("i", "INT"), ("f", "DOUBLE"), ("ts", "TIMESTAMP(6)"), ("t", "STRING")],
            partition_keys=["pt"], primary_keys=["pt", "id"],
            options={"bucket": "1", "write-buffer-size": args.buffer,
                     "write-only": args.write_only}))
        rng = np.random.default_rng(7)
        words = pa.array([f"value-{i:014d}" for i in range(1000)])
        small = np.zeros(n, dtype=bool)
        if args.layout == "skewed":
            small[0] = True
        part = pa.array(np.where(small, "small", "big"))

        def batch(i: int) -> pa.Table:
            ids = rng.integers(0, n * nb, size=n)
            return pa.table({"pt": part, "id": pa.array(ids, pa.int64()),
                             "v": pa.array(np.full(n, i), pa.int64()),
                             "s": words.take(pa.array(ids % 1000)),
                             "i": pa.array((ids % 7919).astype(np.int32)),
                             "f": pa.array(ids * 0.5),
                             "ts": pa.array(ids * 1000, pa.timestamp("us")),
                             "t": words.take(pa.array(ids % 997))})
        batches = (batch(i) for i in range(nb))
        whole = pa.concat_tables(list(batches)) if args.layout == "one-call" else None
        _reset_peak()
        base = _status_kib("VmRSS")
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.monotonic()
        w = table.new_write("u")
        if whole is not None:
            w.write_arrow(whole)
        else:
            for b in batches:
                w.write_arrow(b)
        write_peak = _status_kib("VmHWM")
        msgs = w.prepare_commit()
        table.new_commit("u").commit(msgs, 1)
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({
            "write_peak_growth_mb": (write_peak - base) / 1024,
            "peak_growth_mb": (_status_kib("VmHWM") - base) / 1024,
            "base_mb": base / 1024,
            "cpu_s": (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime),
            "wall_s": time.monotonic() - t0,
            "files": sum(len(m.new_files) for m in msgs),
        }))


if __name__ == "__main__":
    main()
