"""The whole-database CDC benchmark's smoke check (``bench/canal_db.py``,
``bench/cdc_database.py``): the feed's model against a replay of the JSON lines it wrote, the
check failing on wrong tables, and the plain-Spark side (and the database sync job, when this
checkout has it) landing exactly the model's rows on a small feed."""

from __future__ import annotations

import argparse
import datetime
import decimal
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest

from tests.modload import load_module

REPO = Path(__file__).resolve().parent.parent
EVENTS, FILES = 3_000, 2


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_module(REPO / "bench" / "cdc_database.py", "bench_cdc_database")


@pytest.fixture(scope="module")
def canal(bench: ModuleType) -> ModuleType:
    return bench.canal_db  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def feed(canal: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    land = tmp_path_factory.mktemp("canaldb") / "landing"
    f = canal.generate(EVENTS, 11)
    canal.write_landing(f, land, FILES)
    return f, land


def _typed(kind: str, text: str | None) -> Any:
    if text is None:
        return None
    if kind in ("int", "bigint", "key", "line"):
        return int(text)
    if kind == "decimal":
        return decimal.Decimal(text)
    if kind == "double":
        return float(text)
    if kind == "bool":
        return {"1": True, "0": False}[text]
    if kind == "datetime":
        return datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
    return text


def _replay(canal: ModuleType, land: Path) -> dict[str, dict[tuple[Any, ...], dict[str, Any]]]:
    """Each table's rows after applying the landing's events one by one (json.loads)."""
    specs = {s.name: s for s in canal.specs(11)}
    state: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {n: {} for n in specs}
    last_ts = -1
    for f in sorted((land / "batch-000001").iterdir()):
        for line in f.read_text().splitlines():
            ev = json.loads(line)
            assert ev["database"] == "shop" and ev["isDdl"] is False and ev["ts"] > last_ts
            last_ts = ev["ts"]
            spec = specs[ev["table"]]
            assert ev["pkNames"] == list(spec.primary_keys)
            assert ev["mysqlType"] == {c.name: c.mysql for c in spec.columns}
            (row,) = ev["data"]
            kinds = {c.name: c.kind for c in spec.columns}
            typed = {k: _typed(kinds[k], v) for k, v in row.items()}
            key = tuple(typed[k] for k in spec.primary_keys)
            table = state[spec.name]
            if ev["type"] == "INSERT":
                assert key not in table and ev["old"] is None
                table[key] = typed
            elif ev["type"] == "UPDATE":
                old = table[key]
                (changed,) = ev["old"]
                assert {k: _typed(kinds[k], v) for k, v in changed.items()} == \
                    {k: old[k] for k in changed}
                table[key] = typed
            else:
                assert ev["type"] == "DELETE" and table.pop(key) == typed
    return state


def test_model_is_the_replay_of_the_landing(canal: ModuleType, feed: tuple[Any, Path]) -> None:
    f, land = feed
    state = _replay(canal, land)
    for i, spec in enumerate(f.specs):
        want = canal.expected(f, i).to_pylist()
        got = [state[spec.name][k] for k in sorted(state[spec.name])]
        assert want == got, spec.name
        assert canal.check(f, i, canal.expected(f, i)) is None
    sizes = sorted((len(s) for s in state.values()), reverse=True)
    assert sizes[0] > 5 * sizes[-1] > 0  # Zipf-like, every table present


def test_check_names_what_differs(canal: ModuleType, feed: tuple[Any, Path]) -> None:
    f, _ = feed
    good = canal.expected(f, 0)
    assert canal.check(f, 0, good.slice(1)) == \
        f"orders: {good.num_rows - 1} rows, expected {good.num_rows}"
    ts = good.column("updated_at").to_pylist()
    ts[3] = ts[3] - datetime.timedelta(seconds=1)  # a stale version of one key
    stale = good.set_column(good.column_names.index("updated_at"), "updated_at",
                            pa.array(ts, pa.timestamp("s")))
    assert canal.check(f, 0, stale) == "orders: columns ['updated_at'] differ"
    assert "columns" in canal.check(f, 0, good.drop_columns(["updated_at"]))


@pytest.mark.spark
def test_plain_spark_side_lands_the_model(bench: ModuleType, canal: ModuleType,
                                          feed: tuple[Any, Path], spark: Any,
                                          tmp_path: Path) -> None:
    f, land = feed
    specs = f.specs[:3] + f.specs[-1:]  # the largest, a two-column key, the smallest
    bench.child_spark(spark, land / "batch-000001", tmp_path, specs)
    import pyarrow.parquet as pq

    for spec in specs:
        i = f.specs.index(spec)
        assert canal.check(f, i, pq.read_table(str(tmp_path / spec.name))) is None


@pytest.mark.spark
@pytest.mark.slow
def test_database_sync_side_lands_the_model(bench: ModuleType, feed: tuple[Any, Path],
                                            tmp_path: Path) -> None:
    why = bench.available("dbsync")
    if why is not None:
        pytest.skip(why)
    f, land = feed
    args = argparse.Namespace(dbsync_arg=[], single="cli", bucket=4, tree=None)
    r = bench.run_side("dbsync", land, tmp_path / "wh", tmp_path, args)
    assert r["cpu_s"] > 0
    assert bench.check_side("dbsync", tmp_path / "wh", f) == []
