"""The compact and expire jobs: per-bucket compaction in parallel Spark tasks with one COMPACT
snapshot (read by Java 0.9 too), retry after a conflict; snapshot expiry frees files; orphans
deleted by Spark tasks."""

from __future__ import annotations

import contextlib
import io
import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.canonical import canonical_lines
from paimon_core.fsck import fsck
from paimon_core.orphans import remove_orphan_files
from paimon_core.schema_builder import Schema
from paimon_core.spec.snapshot import CommitKind
from paimon_core.table import FileStoreTable
from pipelines import compact as compact_job
from pipelines.compact import compact
from pipelines.config import CatalogSettings
from pipelines.expire import expire
from pipelines.jobs.compact import main as compact_main
from pipelines.jobs.expire import main as expire_main
from tests.tables import make_table, sorted_rows, write_rows

pytestmark = pytest.mark.spark


def _pk_table(wh: Path, commits: int) -> FileStoreTable:
    t = make_table(wh, [("id", "BIGINT"), ("v", "STRING")], name="db.pk", primary_keys=["id"],
                   options={"bucket": "4", "write-only": "true"})
    for c in range(commits):
        ids = list(range(c * 10, c * 10 + 60))
        write_rows(t, pa.table({"id": ids, "v": [f"v{i}-{c}" for i in ids]}), c + 1, user="w")
    return t


def _sorted_rows(t: FileStoreTable) -> list[tuple[Any, ...]]:
    return sorted_rows(t, "id", "v")


def test_compaction_in_parallel_tasks_one_snapshot(spark: Any, tmp_path: Path) -> None:
    t = _pk_table(tmp_path / "wh", 3)
    before = _sorted_rows(t)
    settings = CatalogSettings(str(tmp_path / "wh"))
    # 3 sorted runs per bucket: below num-sorted-run.compaction-trigger (5), so the picker
    # (strategy minor) leaves them; the default is a full compaction
    assert compact(spark, settings, "db.pk", strategy="minor").snapshot_id is None
    report = compact(spark, settings, "db.pk", commit_user="compactor",
                     properties={"dagster.run-id": "r1"})
    assert report.snapshot_id == 4 and report.attempts == 1
    assert sorted(b for _, b in report.buckets) == [0, 1, 2, 3]
    assert len({pid for pid, _ in report.tasks}) == 4  # one Spark task per bucket
    assert report.files_before == 12 and report.files_after == 4
    snaps = list(t.snapshot_manager.snapshots())
    assert [s.commit_kind for s in snaps] == [CommitKind.APPEND] * 3 + [CommitKind.COMPACT]
    assert snaps[-1].properties == {"dagster.run-id": "r1"}
    splits = t.new_read_builder().new_scan().plan().splits
    assert all(len(s.files) == 1 and s.files[0].level > 0 for s in splits)
    assert _sorted_rows(t) == before
    assert fsck(t).ok


def test_compact_job_command_line_is_full_by_default(spark: Any, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m pipelines.jobs.compact`` as ``paimon compact``: full unless ``--strategy
    minor`` (the picker); ``--full`` is the explicit spelling of the default."""
    t = _pk_table(tmp_path / "wh", 3)
    base = ["--warehouse", str(tmp_path / "wh"), "--table", "db.pk"]
    assert compact_main([*base, "--strategy", "minor"]) == 0
    assert json.loads(capsys.readouterr().out)["snapshot_id"] is None  # 3 runs < trigger 5
    assert compact_main(base) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["snapshot_id"] == 4 and report["files_after"] == 4
    assert t.snapshot_manager.snapshot(4).commit_kind is CommitKind.COMPACT
    assert compact_main([*base, "--full"]) == 0  # one run per bucket already
    assert json.loads(capsys.readouterr().out)["snapshot_id"] is None
    with pytest.raises(SystemExit):
        compact_main([*base, "--full", "--strategy", "minor"])


@pytest.mark.oracle
def test_java_reads_spark_compacted_table(spark: Any, tmp_path: Path) -> None:
    from tests.interop.oracle import ensure_ready, run_batches

    ensure_ready()
    t = _pk_table(tmp_path / "wh", 6)
    report = compact(spark, CatalogSettings(str(tmp_path / "wh")), "db.pk",
                     strategy="minor")  # 6 runs > 5: the picker compacts
    assert report.snapshot_id == 7 and len(report.buckets) == 4
    out = tmp_path / "java.jsonl"
    res = run_batches({"c": [{"cmd": "read", "warehouse": str(tmp_path / "wh"),
                              "table": "db.pk", "engine": "java", "output": str(out)}]},
                      tmp_path)["c"]
    assert not res.failures(), (res.failures(), res.stderr[-3000:])
    data = t.to_arrow()
    ours = canonical_lines(data, [t.schema.field(c) for c in data.column_names])
    assert out.read_text().splitlines() == ours and len(ours) == 110


def test_compaction_conflict_is_planned_again(spark: Any, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    t = _pk_table(tmp_path / "wh", 3)
    original = compact_job._run_tasks
    calls: list[int] = []

    def racing(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        if not calls:  # a concurrent overwrite lands before our first commit
            w = t.new_write("other")
            w.write_arrow(pa.table({"id": [1, 2], "v": ["x", "y"]}))
            t.new_commit("other").overwrite(w.prepare_commit(), {})
        calls.append(1)
        return out

    monkeypatch.setattr(compact_job, "_run_tasks", racing)
    report = compact(spark, CatalogSettings(str(tmp_path / "wh")), "db.pk")
    assert report.attempts == 2 and len(calls) == 2
    assert _sorted_rows(t) == [(1, "x"), (2, "y")]
    kinds = [s.commit_kind for s in t.snapshot_manager.snapshots()]
    assert kinds[-2:] == [CommitKind.OVERWRITE, CommitKind.COMPACT]
    # the files the conflicted round wrote were deleted: no orphans
    assert remove_orphan_files(t, int(time.time() * 1000) + 60_000, dry_run=True).count == 0
    assert fsck(t).ok


def test_expire_frees_files_and_tasks_remove_orphans(spark: Any, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    schema = Schema.of([("pt", "INT"), ("id", "BIGINT")], partition_keys=["pt"],
                       options={"bucket": "-1"})
    t = FileSystemCatalog(str(wh)).create_table("db.a", schema)

    def commit(ids: list[int], overwrite: bool = False) -> None:
        w = t.new_write("w")
        w.write_arrow(pa.table({"pt": pa.array([i % 2 for i in ids], pa.int32()), "id": ids}))
        c = t.new_commit("w")
        c.overwrite(w.prepare_commit(), {}) if overwrite else c.commit(w.prepare_commit())

    for k in range(3):
        commit(list(range(k * 10, k * 10 + 10)))
    commit([100, 101], overwrite=True)  # snapshot 4 deletes every earlier data file
    commit([102, 103])
    commit([104])
    # orphans: files written but never committed
    w = t.new_write("lost")
    w.write_arrow(pa.table({"pt": pa.array([0, 1], pa.int32()), "id": [7, 8]}))
    lost = w.prepare_commit()
    assert len(lost) == 2
    size_before = sum(p.stat().st_size for p in Path(t.path).rglob("*") if p.is_file())
    report = expire(spark, CatalogSettings(str(wh)), "db.a", retain_min=2, retain_max=2,
                    older_than_millis=int(time.time() * 1000) + 60_000, remove_orphans=True,
                    orphans_older_than_millis=int(time.time() * 1000) + 60_000)
    assert report.expire["expired_ids"] == [1, 2, 3, 4]
    assert report.expire["earliest"] == 5 and report.expire["data_files"] == 6
    assert report.expire["bytes_freed"] > 0
    assert len(report.orphans) == 2 and report.orphans_deleted == 2
    size_after = sum(p.stat().st_size for p in Path(t.path).rglob("*") if p.is_file())
    assert size_after < size_before
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [100, 101, 102, 103, 104]
    assert fsck(t).ok
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert expire_main(["--warehouse", str(wh), "--table", "db.a", "--remove-orphans",
                            "--dry-run"]) == 0
    assert json.loads(out.getvalue())["orphans"] == 0


def test_expire_deletes_data_files_in_spark_tasks(spark: Any, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``bulk_min_files=1`` every expired snapshot's data files go through Spark tasks;
    the outcome (files, bytes, what is left) equals paimon_core's own expiry of a twin table."""
    import shutil

    import pipelines.expire as expire_job
    from paimon_core.expire import ExpireConfig, ExpireSnapshots

    wh = tmp_path / "wh"
    schema = Schema.of([("pt", "INT"), ("id", "BIGINT")], partition_keys=["pt"],
                       options={"bucket": "-1"})
    t = FileSystemCatalog(str(wh)).create_table("db.a", schema)
    for k in range(4):
        w = t.new_write("w")
        ids = list(range(k * 10, k * 10 + 10))
        w.write_arrow(pa.table({"pt": pa.array([i % 2 for i in ids], pa.int32()), "id": ids}))
        c = t.new_commit("w")
        c.overwrite(w.prepare_commit(), {}) if k % 2 else c.commit(w.prepare_commit())
    twin = tmp_path / "twin"
    shutil.copytree(wh, twin)
    batches: list[list[str]] = []
    real = expire_job.bulk_deleter

    def recording(spark_: Any, handle: Any, **kw: Any) -> Any:
        inner = real(spark_, handle, **kw)

        def delete(items: Any) -> Any:
            batches.append([p for p, _ in items])
            return inner(items)
        return delete

    monkeypatch.setattr(expire_job, "bulk_deleter", recording)
    cutoff = int(time.time() * 1000) + 60_000
    report = expire(spark, CatalogSettings(str(wh)), "db.a", retain_min=1, retain_max=1,
                    older_than_millis=cutoff, bulk_min_files=1)
    tt = FileSystemCatalog(str(twin)).get_table("db.a")
    ref = ExpireSnapshots(tt.file_io, tt.path, tt.schema, older_than_millis=cutoff,
                          config=ExpireConfig.from_options({}).with_overrides(
                              retain_min=1, retain_max=1)).expire()
    assert report.expire["expired_ids"] == list(ref.expired_ids) == [1, 2, 3]
    assert report.expire["data_files"] == ref.data_files > 0
    assert report.expire["bytes_freed"] == ref.bytes_freed
    deleted = [p for b in batches for p in b]
    assert len(deleted) == ref.data_files and all(p.endswith(".parquet") for p in deleted)
    assert not any(Path(p).exists() for p in deleted)
    left = sorted(str(p.relative_to(wh)) for p in wh.rglob("*") if p.is_file())
    left_twin = sorted(str(p.relative_to(twin)) for p in twin.rglob("*") if p.is_file())
    assert left == left_twin
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == list(range(30, 40))
    assert fsck(t).ok
