"""The front door (``paimon_core``'s ``__all__``), the batch write builder (one commit user for
both phases, overwrite as pypaimon's) and :class:`CommitOptions` (one object per commit's
settings)."""

from __future__ import annotations

import dataclasses
import pkgutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_core
from paimon_core import (
    CommitKind,
    CommitOptions,
    FileStoreTable,
    FileSystemCatalog,
    PaimonError,
    Schema,
    TableCommit,
)


def _table(tmp_path: Path, **options: str) -> FileStoreTable:
    return FileSystemCatalog(str(tmp_path)).create_table("db.t", Schema.of(
        [("pt", "STRING"), ("k", "BIGINT"), ("v", "STRING")], partition_keys=["pt"],
        primary_keys=["pt", "k"], options={"bucket": "1", **options}))


def _rows(pt: str, ks: range, v: str) -> pa.Table:
    return pa.table({"pt": [pt] * len(ks), "k": pa.array(list(ks), pa.int64()),
                     "v": [v] * len(ks)})


def test_front_door_exports_resolve_and_import_no_engine() -> None:
    assert sorted(paimon_core.__all__) == sorted(set(paimon_core.__all__))
    assert all(hasattr(paimon_core, name) for name in paimon_core.__all__)
    assert issubclass(paimon_core.CommitConflictError, PaimonError)
    # an export named like a submodule would replace it (``import paimon_core.fsck as m``)
    submodules = {m.name for m in pkgutil.iter_modules(paimon_core.__path__)}
    assert not submodules & set(paimon_core.__all__)
    code = ("import sys, paimon_core; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'dagster')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_builder_ties_one_commit_user_to_both_phases(tmp_path: Path) -> None:
    t = _table(tmp_path)
    builder = t.new_batch_write_builder()
    assert builder.commit_user  # a random uuid, made once
    write, commit = builder.new_write(), builder.new_commit()
    assert write.commit_user == commit.commit_user == builder.commit_user
    write.write_arrow(_rows("a", range(3), "x"))
    assert commit.commit(write.prepare_commit()) == [1]
    assert t.latest_snapshot().commit_user == builder.commit_user  # type: ignore[union-attr]
    assert t.new_batch_write_builder().commit_user != builder.commit_user
    assert t.new_batch_write_builder("etl").new_commit().commit_user == "etl"


def test_new_write_requires_a_commit_user(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        _table(tmp_path).new_write()  # type: ignore[call-arg]


def test_builder_overwrite_static_and_dynamic(tmp_path: Path) -> None:
    t = _table(tmp_path)
    builder = t.new_batch_write_builder("seed")
    with builder.new_write() as w:
        w.write_arrow(pa.concat_tables([_rows("a", range(3), "x"), _rows("b", range(3), "x")]))
        builder.new_commit().commit(w.prepare_commit())
    # dynamic (the default): only partition a, which receives rows, is replaced
    dyn = t.new_batch_write_builder("reload").overwrite()
    with dyn.new_write() as w:
        w.write_arrow(_rows("a", range(1), "y"))
        assert dyn.new_commit().commit(w.prepare_commit()) == [2]
    assert sorted((r["pt"], r["k"], r["v"]) for r in t.to_arrow().to_pylist()) == [
        ("a", 0, "y"), ("b", 0, "x"), ("b", 1, "x"), ("b", 2, "x")]
    # static, via CommitOptions: everything the spec matches, even by nothing
    static = t.new_batch_write_builder(
        "reload", options=CommitOptions(dynamic_partition_overwrite=False)).overwrite({"pt": "b"})
    with static.new_write() as w:
        assert static.new_commit().commit(w.prepare_commit(), 3) == [3]
    assert t.latest_snapshot().commit_kind is CommitKind.OVERWRITE  # type: ignore[union-attr]
    assert [r["pt"] for r in t.to_arrow().to_pylist()] == ["a"]


def test_commit_options_carry_properties_retries_and_watermark(tmp_path: Path) -> None:
    t = _table(tmp_path)
    opts = CommitOptions(properties={"run": "r1"}, watermark=42, max_retries=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.max_retries = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match="max_retries"):
        CommitOptions(max_retries=-1)
    assert opts.with_properties({"day": "d"}).properties == {"run": "r1", "day": "d"}
    builder = t.new_batch_write_builder("u", options=opts)
    commit = builder.new_commit()
    assert isinstance(commit.table_commit, TableCommit)
    assert commit.table_commit.options.max_retries == 0
    assert t.new_commit("u", options=opts, max_retries=5).options.max_retries == 5
    with builder.new_write() as w:
        w.write_arrow(_rows("a", range(2), "x"))
        commit.commit(w.prepare_commit(), 7)
    snap = t.latest_snapshot()
    assert snap is not None and snap.properties == {"run": "r1"} and snap.watermark == 42
    # a call's own options replace the committer's
    w = t.new_write("u")
    w.write_arrow(_rows("a", range(1), "z"))
    t.new_commit("u", options=opts).commit(w.prepare_commit(), 8,
                                           options=CommitOptions(properties={"run": "r2"}))
    assert t.latest_snapshot().properties == {"run": "r2"}  # type: ignore[union-attr]
    assert commit.filter_committed([7, 8, 9]) == [9]
