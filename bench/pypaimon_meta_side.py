"""The pypaimon 2.1 side of the metadata scale step (``bench/metadata_scale.py``); runs in the
oracle venv (pypaimon 2.1, pure Python) or in ``bench/results/venv-rust`` (pypaimon 2.1 +
pypaimon-rust 0.4), never in ours. One measured operation per fresh process, one JSON line:

``plan --warehouse WH --table T [--part P] [--native]``
    ``new_read_builder()`` (``with_filter(pb.equal("part", P))`` with ``--part``) ->
    ``new_scan().plan().splits()``; ``--native`` plans with pypaimon_rust
    (``table.copy({"scan.native-plan.enabled": "true"})``). Reports the planned data files
    and, with ``--native``, whether the native planner answered (``native_planned``: pypaimon
    falls back to its Python scanner silently).

``commit --warehouse WH --table T --part P --id I``
    Writes one row (``part = P``, ``id = I``) and commits it; only the commit is the measured
    operation (the write's CPU is reported beside it).

Measured (:func:`measured`): wall, CPU (user + sys, all threads), the RSS before the operation
(after the imports and the catalog) and the peak growth above it (VmHWM, reset right before
through ``/proc/self/clear_refs``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from proctree import cpu_s, status_mb
from scale import reset_peak

NATIVE_PLAN = {"scan.native-plan.enabled": "true"}


def measured(fn: Callable[[], Any]) -> tuple[dict[str, Any], Any]:
    """Run ``fn`` once and measure it (module docs); returns (figures, fn's result)."""
    base = status_mb("VmRSS")
    reset = reset_peak()
    c0, t0 = cpu_s(), time.perf_counter()
    result = fn()
    wall, cpu = time.perf_counter() - t0, cpu_s() - c0
    peak = status_mb("VmHWM")
    return ({"wall_s": wall, "cpu_s": cpu, "base_rss_mb": base, "peak_rss_mb": peak,
             "growth_mb": peak - base, "peak_reset": reset}, result)


def preload(*packages: str) -> None:
    """Import every module of ``packages`` up front: a step measures the work, not the
    first import of the modules it uses (ours and pypaimon alike)."""
    import contextlib
    import importlib
    import pkgutil

    for name in packages:
        pkg = importlib.import_module(name)
        for m in pkgutil.walk_packages(getattr(pkg, "__path__", []), name + "."):
            with contextlib.suppress(Exception):  # an optional dependency missing here
                importlib.import_module(m.name)


def plan(warehouse: str, table_name: str, part: int | None, native: bool) -> dict[str, Any]:
    from pypaimon import CatalogFactory

    preload("pyarrow.compute", "pypaimon.read", "pypaimon.manifest", "pypaimon.table",
            "pypaimon.common", "pypaimon.schema", "pypaimon.snapshot", "pypaimon.utils",
            "pypaimon.filesystem", "pypaimon.data")
    native_plans: list[bool] = []
    if native:  # record whether pypaimon's native planner answered (it falls back silently)
        from pypaimon.read.table_scan import TableScan

        try_native = TableScan._try_native_plan

        def recorded(self: Any) -> Any:
            plan = try_native(self)
            native_plans.append(plan is not None)
            return plan

        TableScan._try_native_plan = recorded

    def run() -> Any:
        table = CatalogFactory.create({"warehouse": warehouse}).get_table(table_name)
        if native:
            table = table.copy(dict(NATIVE_PLAN))
        rb = table.new_read_builder()
        if part is not None:
            rb = rb.with_filter(rb.new_predicate_builder().equal("part", part))
        return rb.new_scan().plan().splits()

    out, splits = measured(run)
    out["files"] = sum(len(s.files) for s in splits)
    out["rows"] = sum(f.row_count for s in splits for f in s.files)
    out["pypaimon_rust_imported"] = "pypaimon_rust" in sys.modules
    out["native_planned"] = native_plans == [True]
    return out


def commit(warehouse: str, table_name: str, part: int, key: int) -> dict[str, Any]:
    import pyarrow as pa
    from pypaimon import CatalogFactory

    preload("pypaimon.write", "pypaimon.manifest", "pypaimon.snapshot")
    table = CatalogFactory.create({"warehouse": warehouse}).get_table(table_name)
    wb = table.new_batch_write_builder()
    tw, tc = wb.new_write(), wb.new_commit()
    schema = pa.schema([pa.field("part", pa.int32(), nullable=False),
                        pa.field("id", pa.int64(), nullable=False),
                        ("v", pa.int64()), ("s", pa.string())])
    rows = pa.table({"part": [part], "id": [key], "v": [-1], "s": ["pypaimon"]}, schema=schema)
    c0 = cpu_s()
    tw.write_arrow(rows)
    msgs = tw.prepare_commit()
    write_cpu = cpu_s() - c0
    out, _ = measured(lambda: tc.commit(msgs))
    tc.close()
    tw.close()
    out["write_cpu_s"] = write_cpu
    out["files"] = sum(len(m.new_files) for m in msgs)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=["plan", "commit"])
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--part", type=int)
    ap.add_argument("--id", type=int, default=-1)
    ap.add_argument("--native", action="store_true")
    a = ap.parse_args(argv)
    if a.command == "plan":
        res = plan(a.warehouse, a.table, a.part, a.native)
    else:
        if a.part is None:
            ap.error("commit needs --part")
        res = commit(a.warehouse, a.table, a.part, a.id)
    sys.stdout.write(json.dumps(res) + "\n")
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: not part of any measurement


if __name__ == "__main__":
    sys.exit(main())
