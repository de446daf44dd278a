"""The pypaimon 2.1 side of the benchmark (runs in the oracle venv, NOT in ours).

pypaimon 2.1 pins pyarrow < 20, so ``bench/run.py`` runs this script with the oracle venv's
python (``$PAIMON_ORACLE_HOME/venv/bin/python``) in a subprocess. Two commands:

``prepare --warehouse WH --gen GEN``
    Writes the benchmark tables with pypaimon's catalog/table API and prints one JSON line
    with the write times (seconds):
    ``db.w1`` append table partitioned by ``dt``, 2,000,000 rows in one commit;
    ``db.w2`` primary-key table (``id``+``dt``, partitioned by ``dt``, ``bucket=4``) written
    by the 7 commits of ``gen.w2_batches()``.

``read --warehouse WH --gen GEN --step STEP [--reps N] [--check]``
    Timed reads in this fresh process (STEP: ``w1_all``, ``w1_day``, ``w2_merged``): the
    first one (cold) and ``N - 1`` more (warm: the fastest of them). Prints one JSON line:
    warm and cold seconds, CPU seconds, rows, peak RSS (MB) after the first read and the
    RSS before it. ``--check`` verifies the result against gen.py afterwards (not timed).

``write --warehouse WH --gen GEN --step STEP [--native] [--check]``
    One timed write in this fresh process into a new warehouse ``WH`` (STEP: ``w1_write``:
    the 2M rows of ``gen.w1()`` into a new append table partitioned by ``dt``, one commit;
    ``w2_write``: the 7 commits of ``gen.w2_batches()`` into a new primary-key table, each
    timed). The input is generated before timing. ``--native`` sets the table options
    ``write.native.enabled`` and ``commit.native.enabled`` (pypaimon's opt-in switches for the
    ``pypaimon_rust`` extension); the JSON line then names the writer class pypaimon picked
    (``NativeTableWrite`` when Rust writes) and whether ``pypaimon_rust`` was imported.
    ``--check`` reads the table back afterwards (not timed) and checks it against gen.py.

``gen.py`` is imported by path (``--gen``), never copied.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from proctree import cpu_s, status_mb


def load_gen(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("bench_gen", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def dir_bytes(path: Path) -> int:
    """Bytes of every file under ``path`` (a table or Parquet directory on disk)."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def rss_mb() -> float:
    """Current resident set size (VmRSS) of this process in MB."""
    return status_mb("VmRSS")


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MB: VmHWM, the high-water mark of this
    process's own address space. (``ru_maxrss`` is not used: across ``exec`` Linux carries
    over the parent's high-water mark, so a child spawned by a big parent would report the
    parent's peak.)"""
    hwm = status_mb("VmHWM")
    if hwm == hwm:  # not NaN
        return hwm
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _commit(table: Any, data: Any) -> str:
    """One batch commit of ``data``; returns the writer's class name."""
    wb = table.new_batch_write_builder()
    tw = wb.new_write()
    tc = wb.new_commit()
    try:
        tw.write_arrow(data)
        tc.commit(tw.prepare_commit())
    finally:
        tc.close()
        tw.close()
    return type(tw).__name__


def prepare(warehouse: str, gen: Any) -> dict[str, Any]:
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    out: dict[str, Any] = {"pypaimon": _version("pypaimon"), "pyarrow": _version("pyarrow")}

    # W1: append table, partitioned by dt, one commit.
    catalog.create_table(
        "db.w1", Schema.from_pyarrow_schema(gen.SCHEMA, partition_keys=["dt"]), False
    )
    data = gen.w1()
    t0 = time.perf_counter()
    _commit(catalog.get_table("db.w1"), data)
    out["w1_write"] = time.perf_counter() - t0
    del data

    # W2: primary-key table, 7 commits.
    catalog.create_table(
        "db.w2",
        Schema.from_pyarrow_schema(
            gen.SCHEMA, partition_keys=["dt"], primary_keys=["id", "dt"],
            options={"bucket": "4"},
        ),
        False,
    )
    w2: dict[str, float] = {}
    for name, batch in gen.w2_batches():
        table = catalog.get_table("db.w2")  # fresh handle: sees the latest snapshot
        t0 = time.perf_counter()
        _commit(table, batch)
        w2[name] = time.perf_counter() - t0
    out["w2_write"] = w2
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def write(warehouse: str, gen: Any, step: str, native: bool, check: bool) -> dict[str, Any]:
    """One timed write (see the module docstring); input generated before timing."""
    import pyarrow  # loaded up front: not timed
    from pypaimon import CatalogFactory, Schema

    # read.native only speeds up the (untimed) --check read-back
    opts = ({"write.native.enabled": "true", "commit.native.enabled": "true",
             "read.native.enabled": "true"} if native else {})
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("db", True)
    out: dict[str, Any] = {"pypaimon": _version("pypaimon"), "pyarrow": _version("pyarrow")}
    parts: dict[str, float] = {}
    writers: set[str] = set()
    c0 = cpu_s()
    if step == "w1_write":
        catalog.create_table("db.w1", Schema.from_pyarrow_schema(
            gen.SCHEMA, partition_keys=["dt"], options=dict(opts)), False)
        data = gen.w1()
        table = catalog.get_table("db.w1")
        out["base_rss_mb"] = rss_mb()
        c0 = cpu_s()
        t0 = time.perf_counter()
        writers.add(_commit(table, data))
        parts["w1"] = time.perf_counter() - t0
    else:
        catalog.create_table("db.w2", Schema.from_pyarrow_schema(
            gen.SCHEMA, partition_keys=["dt"], primary_keys=["id", "dt"],
            options={"bucket": "4", **opts}), False)
        batches = list(gen.w2_batches())
        out["base_rss_mb"] = rss_mb()
        c0 = cpu_s()
        for name, batch in batches:
            table = catalog.get_table("db.w2")  # fresh handle: sees the latest snapshot
            t0 = time.perf_counter()
            writers.add(_commit(table, batch))
            parts[name] = time.perf_counter() - t0
    out["cpu_s"] = cpu_s() - c0
    out["peak_rss_mb"] = peak_rss_mb()
    out["parts"] = parts
    out["seconds"] = sum(parts.values())
    out["writer_classes"] = sorted(writers)
    out["pypaimon_rust_imported"] = "pypaimon_rust" in sys.modules
    if out["pypaimon_rust_imported"]:
        out["pypaimon_rust"] = _version("pypaimon-rust")
        out["pypaimon_rust_module"] = getattr(sys.modules["pypaimon_rust"], "__file__", None)
    if check:
        rb = catalog.get_table("db.w2" if step == "w2_write" else "db.w1").new_read_builder()
        result = rb.new_read().to_arrow(rb.new_scan().plan().splits())
        if step == "w2_write":
            ok, msg = gen.check_w2(result)
            out["check"] = [bool(ok), msg]
        else:
            out["check"] = check_result(gen, "w1_all", result, pyarrow)
    return out


def _version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


def timed_reads(run: Callable[[], Any], reps: int) -> tuple[dict[str, Any], Any]:
    """Call ``run`` ``reps`` times in this process. The first call is the *cold* read (first
    read of a fresh process: thread pools, allocator, lazy init); the *warm* read is the
    fastest of the others (with ``reps == 1``: the cold one). Peak RSS is taken right after
    the first read (one read's footprint)."""
    base = rss_mb()
    out: dict[str, Any] = {"base_rss_mb": base, "seconds_all": [], "cpu_all": []}
    result: Any = None
    for i in range(max(reps, 1)):
        result = None  # free the previous result before the next read
        c0 = cpu_s()
        t0 = time.perf_counter()
        result = run()
        out["seconds_all"].append(time.perf_counter() - t0)
        out["cpu_all"].append(cpu_s() - c0)
        if i == 0:
            out["peak_rss_mb"] = peak_rss_mb()
    out["cold_s"] = out["seconds_all"][0]
    out["cold_cpu_s"] = out["cpu_all"][0]
    # warm = the fastest of the reads after the first (least disturbed by other load)
    n = len(out["seconds_all"])
    warm = min(range(1, n), key=lambda i: out["seconds_all"][i]) if n > 1 else 0
    out["seconds"] = out["seconds_all"][warm]
    out["cpu_s"] = out["cpu_all"][warm]
    out["rows"] = result.num_rows
    return out, result


def read(warehouse: str, gen: Any, step: str, check: bool, reps: int,
         native: bool = False) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.compute
    import pyarrow.dataset
    import pyarrow.parquet

    del pyarrow.compute, pyarrow.dataset, pyarrow.parquet  # loaded up front: not timed
    c0, t0 = cpu_s(), time.perf_counter()
    from pypaimon import CatalogFactory

    if native:
        import pypaimon_rust.datafusion  # noqa: F401  (what read.native.enabled imports)
    imported = {"import_s": time.perf_counter() - t0, "import_cpu_s": cpu_s() - c0}

    def run() -> Any:
        catalog = CatalogFactory.create({"warehouse": warehouse})
        table = catalog.get_table("db.w2" if step == "w2_merged" else "db.w1")
        if native:  # pypaimon's opt-in switch for the pypaimon_rust reader
            table = table.copy({"read.native.enabled": "true"})
        rb = table.new_read_builder()
        if step == "w1_day":
            pb = rb.new_predicate_builder()
            rb = rb.with_filter(pb.equal("dt", gen.FILTER_DAY))
        splits = rb.new_scan().plan().splits()
        return rb.new_read().to_arrow(splits)

    out, result = timed_reads(run, reps)
    out.update(imported)
    if native:
        out["pypaimon_rust_imported"] = "pypaimon_rust" in sys.modules
    if check:
        out["check"] = check_result(gen, step, result, pa)
    return out


def check_result(gen: Any, step: str, result: Any, pa: Any) -> list[Any]:
    """(ok, message) for a read result of ``step`` against gen.py's data."""
    if step == "w2_merged":
        ok, msg = gen.check_w2(result)
        return [bool(ok), msg]
    exp = gen.w1()
    if step == "w1_day":
        import pyarrow.compute as pc

        exp = exp.filter(pc.equal(exp.column("dt"), gen.FILTER_DAY))
    exp = gen.normalize(exp)
    got = gen.normalize(result)
    if got.num_rows != exp.num_rows:
        return [False, f"row count {got.num_rows} != expected {exp.num_rows}"]
    bad = [n for n in gen.SCHEMA.names if not got.column(n).equals(exp.column(n))]
    if bad:
        return [False, f"columns differ: {bad}"]
    return [True, f"{got.num_rows} rows, all 8 columns equal gen.py's"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=["prepare", "read", "write"])
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--gen", required=True, help="path of shared/bench/gen.py")
    ap.add_argument("--step", choices=["w1_all", "w1_day", "w2_merged", "w1_write", "w2_write"])
    ap.add_argument("--native", action="store_true",
                    help="write: enable pypaimon's pypaimon_rust write/commit path; read: "
                         "its native reader (read.native.enabled)")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--reps", type=int, default=3, help="reads in this process (1 = cold only)")
    args = ap.parse_args(argv)
    gen = load_gen(args.gen)
    if args.command == "prepare":
        res = prepare(args.warehouse, gen)
    elif args.command == "write":
        if args.step not in ("w1_write", "w2_write"):
            ap.error("write needs --step w1_write or w2_write")
        res = write(args.warehouse, gen, args.step, args.native, args.check)
    else:
        if not args.step:
            ap.error("read needs --step")
        res = read(args.warehouse, gen, args.step, args.check, args.reps, args.native)
    sys.stdout.write(json.dumps(res) + "\n")
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown (pyarrow pools): not part of any measurement


if __name__ == "__main__":
    sys.exit(main())
