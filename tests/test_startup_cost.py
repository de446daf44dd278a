"""Start-up cost guards (the first read of a fresh process: a CLI call, a Spark task, a Dagster
step): what ``import paimon_core`` and a local read load (fails if someone re-adds an eager
import of a module a reader does not need), and the memory pool the scan decodes into."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_core
from paimon_core import FileSystemCatalog, Schema

REPO = Path(__file__).resolve().parent.parent
# never needed by ``import paimon_core`` nor by a read of a local table
NOT_FOR_A_READ = (
    "fsspec", "s3fs", "botocore", "hypothesis", "pyspark", "dagster",
    "paimon_core.compact", "paimon_core.write", "paimon_core.commit", "paimon_core.expire",
    "paimon_core.inspect", "paimon_core.schema_change", "paimon_core.tags", "paimon_core.fsck",
    "paimon_core.orphans", "paimon_core.cli",
)
# loaded by the first scan (pyarrow.dataset imports pandas), never by the import itself
NOT_AT_IMPORT = (*NOT_FOR_A_READ, "pandas", "pyarrow.dataset", "paimon_core.catalog",
                 "paimon_core.table", "pydantic")


def _modules(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True, cwd=REPO,
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def _loaded(mods: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in mods if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_import_loads_nothing_heavy() -> None:
    mods = _modules("import paimon_core, paimon_core.integration")  # both import lazily
    assert _loaded(mods, NOT_AT_IMPORT) == []


def test_a_local_read_loads_no_write_compaction_or_object_store_code(tmp_path: Path) -> None:
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]})
    table = FileSystemCatalog(str(tmp_path)).create_table(
        "db.t", Schema.from_arrow(data.schema, primary_keys=["id"], options={"bucket": "2"}))
    for _ in range(2):  # two commits: the read merges
        builder = table.new_batch_write_builder()
        with builder.new_write() as w:
            w.write_arrow(data)
            msgs = w.prepare_commit()
        builder.new_commit().commit(msgs)
    mods = _modules(
        "from paimon_core import FileSystemCatalog\n"
        f"t = FileSystemCatalog({str(tmp_path)!r}).get_table('db.t')\n"
        "assert t.to_arrow(filter='id > 1').num_rows == 2\n"
        "rb = t.new_read_builder()\n"
        "assert sum(b.num_rows for b in rb.new_read().to_batches(rb.new_scan().plan().splits)) == 3"
    )
    assert "paimon_core.read.table_read" in mods  # the read did run
    assert _loaded(mods, NOT_FOR_A_READ) == []


def test_every_public_name_resolves_lazily() -> None:
    for name in paimon_core.__all__:
        assert getattr(paimon_core, name) is not None, name
    assert set(paimon_core.__all__) <= set(dir(paimon_core))
    import paimon_core.fsck as fsck_module

    assert paimon_core.fsck is fsck_module  # the submodule keeps its name
    assert paimon_core.integration.FsckReport is fsck_module.FsckReport


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        paimon_core.no_such_name  # noqa: B018
    except AttributeError as e:
        assert "no_such_name" in str(e)
    else:
        raise AssertionError("expected AttributeError")


def test_the_scan_decodes_into_the_scan_pool(tmp_path: Path) -> None:
    from paimon_core.read.data_file import scan_memory_pool

    try:
        jemalloc = pa.jemalloc_memory_pool()
    except NotImplementedError:
        pytest.skip("pyarrow without jemalloc: the scan uses the default pool")
    import os

    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        assert scan_memory_pool() is not None
        pytest.skip("ARROW_DEFAULT_MEMORY_POOL chose the pool")
    assert scan_memory_pool().backend_name == jemalloc.backend_name == "jemalloc"
    n = 200_000
    data = pa.table({"id": pa.array(range(n), pa.int64()), "v": pa.array([1.5] * n)})
    table = FileSystemCatalog(str(tmp_path)).create_table("db.a", Schema.from_arrow(data.schema))
    for _ in range(2):  # two files in one bucket: one multi-file scan
        builder = table.new_batch_write_builder()
        with builder.new_write() as w:
            w.write_arrow(data)
            msgs = w.prepare_commit()
        builder.new_commit().commit(msgs)
    before = jemalloc.bytes_allocated()
    result = table.to_arrow()
    held = jemalloc.bytes_allocated() - before
    assert result.num_rows == 2 * n
    assert held >= result.nbytes // 2, (held, result.nbytes)  # the rows live in jemalloc
