"""The scale step's correctness check (``bench/scale.py``): a table written and read through
``paimon_core``'s front door passes it, and a wrong row count, a stale version, a duplicate or
a row of another key fails it."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from paimon_core import FileSystemCatalog
from tests.modload import load_module

REPO = Path(__file__).resolve().parent.parent
GEN = Path(os.environ.get("PAIMON_SHARED") or REPO.parent / "shared") / "bench" / "gen.py"
N = 4_000

pytestmark = pytest.mark.skipif(not GEN.exists(), reason=f"no {GEN} (shared/ beside the repo)")


@pytest.fixture(scope="module")
def scale() -> ModuleType:
    return load_module(REPO / "bench" / "scale.py", "bench_scale")


@pytest.fixture(scope="module")
def written(scale: ModuleType, tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[Path, pa.Table, Any, int]:
    """The scale table at N rows (written by the step's own preparation), its merged read,
    and the model's (digest, row count)."""
    wh = tmp_path_factory.mktemp("scale") / "wh"
    scale.prepare_child(wh, str(GEN), N, 2)
    gen = load_module(GEN, "bench_gen")
    model, _ = scale.expected_digest(N, gen.SEED)
    result = FileSystemCatalog(str(wh)).get_table(scale.TABLE).to_arrow()
    return wh, result, model, N


def _digest(scale: ModuleType, t: pa.Table) -> Any:
    d = scale.Digest()
    for b in t.to_batches(max_chunksize=997):
        d.add_batch(b)
    return d


def _check(scale: ModuleType, t: pa.Table, model: Any) -> tuple[bool, str]:
    return scale.check_digest(_digest(scale, t), model.rows, model.checksum)  # type: ignore[no-any-return]


def test_model_matches_a_per_key_reference(scale: ModuleType) -> None:
    # the model's versions against a dict replay of the upserts (no numpy scatter)
    gen = load_module(GEN, "bench_gen")
    latest = dict.fromkeys(range(N), 0)
    for k in range(1, scale.UPSERTS + 1):
        for i in scale.upsert_ids(N, k, gen.SEED).tolist():
            latest[i] = k
    ref = scale.Digest()
    ids = np.array(sorted(latest), dtype=np.int64)
    ref.update(ids, np.array([i * 16 + latest[i] for i in sorted(latest)], dtype=np.int64))
    model, hist = scale.expected_digest(N, gen.SEED)
    assert (model.rows, model.checksum) == (ref.rows, ref.checksum)
    assert sum(hist) == N and all(h > 0 for h in hist)


def test_merged_read_passes(scale: ModuleType, written: tuple[Path, pa.Table, Any, int]) -> None:
    _, result, model, n = written
    assert result.num_rows == n
    ok, msg = _check(scale, result, model)
    assert ok, msg


def test_missing_row_fails(scale: ModuleType, written: tuple[Path, pa.Table, Any, int]) -> None:
    _, result, model, _ = written
    ok, msg = _check(scale, result.slice(1), model)
    assert not ok and "row count" in msg


def test_stale_version_fails(scale: ModuleType, written: tuple[Path, pa.Table, Any, int]) -> None:
    wh, _, model, n = written
    table = FileSystemCatalog(str(wh)).get_table(scale.TABLE)
    latest = table.latest_snapshot()
    assert latest is not None
    before_last_upsert = table.to_arrow(snapshot_id=latest.id - 1)
    assert before_last_upsert.num_rows == n  # same keys, older versions of N/10 of them
    ok, msg = _check(scale, before_last_upsert, model)
    assert not ok and "checksum" in msg


def test_one_wrong_version_fails(scale: ModuleType,
                                 written: tuple[Path, pa.Table, Any, int]) -> None:
    _, result, model, _ = written
    c = result.column("c_i64").to_numpy().copy()
    c[7] = (c[7] // 16) * 16 + (c[7] % 16 + 1) % 4  # same key, another version
    idx = result.schema.get_field_index("c_i64")
    ok, msg = _check(scale, result.set_column(idx, "c_i64", pa.array(c)), model)
    assert not ok and "checksum" in msg


def test_duplicate_replacing_a_row_fails(scale: ModuleType,
                                         written: tuple[Path, pa.Table, Any, int]) -> None:
    _, result, model, n = written
    dup = pa.concat_tables([result.slice(0, n - 1), result.slice(0, 1)])
    assert dup.num_rows == n
    ok, msg = _check(scale, dup, model)
    assert not ok and "checksum" in msg


def test_row_of_another_key_fails(scale: ModuleType,
                                  written: tuple[Path, pa.Table, Any, int]) -> None:
    _, result, model, _ = written
    ids = pc.add(result.column("id"), pa.scalar(1, pa.int64()))
    ok, msg = _check(scale, result.set_column(0, "id", ids), model)
    assert not ok and "does not belong" in msg
