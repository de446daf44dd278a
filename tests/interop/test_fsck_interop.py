"""``fsck`` is clean on every table written by Paimon Java 0.9 and pypaimon 2.1 (the interop
shapes: appends, upserts with retractions, overwrites, full compactions, deletion vectors,
changelog producers, expiry), at every retained snapshot (``deep=True``), and still detects
a corruption injected into a copy of such a table."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.fsck import FindingKind, fsck, orphan_files
from tests.interop.conftest import Interop
from tests.interop.shapes import SHAPES, Shape

pytestmark = pytest.mark.oracle


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_fsck_clean_on_engine_written_tables(interop: Interop, shape: Shape) -> None:
    table = FileSystemCatalog(str(interop.warehouse(shape))).get_table(shape.table)
    report = fsck(table, deep=True)
    assert report.ok, [f.to_json() for f in report.errors]
    assert report.snapshot_ids and report.data_files_checked > 0
    # the engines leave no unreferenced file behind (Java's expiry deletes what it expires),
    # so every file must be found referenced: no false orphans
    assert orphan_files(table, 2**62) == []


@pytest.mark.parametrize("writer", ["java", "pypaimon"])
def test_fsck_detects_a_missing_file_in_an_engine_table(
    interop: Interop, tmp_path: Path, writer: str
) -> None:
    shape = next(s for s in SHAPES if s.writer == writer and "pk" in s.name)
    src = interop.warehouse(shape)
    dst = tmp_path / "wh"
    shutil.copytree(src, dst)
    table = FileSystemCatalog(str(dst)).get_table(shape.table)
    live = table.new_read_builder().new_scan().plan().splits[0].files[0].file_name
    victim = next(Path(table.path).rglob(live))
    victim.unlink()
    report = fsck(table, deep=True)
    assert not report.ok
    assert FindingKind.MISSING_DATA_FILE in {f.kind for f in report.errors}
