"""Late data in the derived table: ``mart.orders_enriched`` equals the transform of
``cdc.orders`` at the same snapshot, whatever order the versions of a row arrive in.

``cdc.orders`` resolves versions by its ``sequence.field`` (``src_lsn``), so a landing day
ingested late (a backfill) cannot override newer versions there; the derived table must not
take them either. The property test generates out-of-order histories (random keys, versions,
deletes, duplicates, late days, compactions, overwrites, expiry) and checks the derived table
against a full recompute after every range it applies.

``source_snapshot`` is not a function of the source state (a full recompute at snapshot S would
stamp every row S); it is checked against its own model: the end of the range at which the
derived table saw the row take its current value (a stale change leaves it alone).
"""

from __future__ import annotations

import decimal
import itertools
from typing import Any

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from assets.derived import (
    DERIVED_CONSUMER_ID,
    apply_range,
    enrich_orders,
    lookup,
    orders_enriched,
)
from assets.derived import orders_snapshot_sensor as sensor
from assets.resources import PaimonCatalog
from assets.tables import ORDERS, ORDERS_ENRICHED
from paimon_core.catalog import FileSystemCatalog
from paimon_core.consumer import ConsumerManager
from paimon_core.table import FileStoreTable
from tests.assets.helpers import CDC_USER, commit_orders, order_rows
from tests.profiles import examples

STATUSES = ("new", "paid", "shipped", "delivered", "cancelled")
SNAPSHOT_COLUMN = "source_snapshot"
Rows = dict[int, dict[str, Any]]

_dirs = itertools.count()


def recompute(source: FileStoreTable, snapshot: int) -> Rows:
    """The transform of a full read of the source at ``snapshot`` (without the stamp)."""
    out = enrich_orders(source.to_arrow(snapshot_id=snapshot), snapshot)
    return {r["order_id"]: r for r in out.drop_columns([SNAPSHOT_COLUMN]).to_pylist()}


def derived(target: FileStoreTable) -> tuple[Rows, dict[int, int]]:
    """The derived rows (without the stamp) and the stamps, by key."""
    rows = target.to_arrow().to_pylist()
    stamps = {r["order_id"]: r.pop(SNAPSHOT_COLUMN) for r in rows}
    return {r["order_id"]: r for r in rows}, stamps


def observe(model: dict[int, tuple[dict[str, Any], int]], expected: Rows, end: int) -> None:
    """The stamp model: a key whose value differs from the one seen at the previous range end
    is stamped with this range's end; unchanged keys keep their stamp."""
    for key in set(model) - set(expected):
        del model[key]
    for key, row in expected.items():
        if key not in model or model[key][0] != row:
            model[key] = (row, end)


# ------------------------------------------------------------------------------ the issue
def test_late_older_version_does_not_override_the_newer_one(
    tables: Any, resources: dict[str, Any]
) -> None:
    """Issue 13.3: order 1 delivered (src_lsn 200), applied; order 1 new (src_lsn 100, a late
    day), applied -> the source says delivered, so must the mart. Through the sensor and the
    asset, as the daemon runs it."""
    src, tgt = tables
    catalog: PaimonCatalog = resources["catalog"]

    def tick_and_run(cursor: str | None) -> tuple[str | None, dict[str, Any]]:
        result = sensor(dg.build_sensor_context(cursor=cursor, resources={"catalog": catalog}))
        assert isinstance(result, dg.SensorResult)
        [req] = result.run_requests
        run = dg.materialize([orders_enriched], resources={"catalog": catalog},
                             run_config=req.run_config)
        assert run.success
        md = run.asset_materializations_for_node(orders_enriched.op.name)[0].metadata
        return result.cursor, {k: v.value for k, v in md.items()}

    s1 = commit_orders(src, order_rows([1, 2], "delivered", lsn=[200, 210], amount="100"), 1)
    cursor, _ = tick_and_run(None)
    s2 = commit_orders(src, order_rows([1], "new", lsn=[100], amount="1"), 2)
    _, md = tick_and_run(cursor)

    assert src.to_arrow().column("status").to_pylist() == ["delivered"] * 2
    rows, stamps = derived(tgt)
    assert rows == recompute(src, s2)
    assert rows[1]["status"] == "delivered" and rows[1]["is_open"] is False
    assert rows[1]["amount_band"] == "medium"
    # the stale version changed nothing: no row rewritten, the stamp is still the first range's
    assert stamps == {1: s1, 2: s1}
    assert (md["paimon/upserts"], md["paimon/deletes"]) == (0, 0)


def test_delete_arriving_before_the_insert_it_deletes(tables: Any) -> None:
    """A delete (src_lsn 300) lands before the older insert it deletes (src_lsn 100): the
    source keeps the key deleted, so must the mart. Same for a newer delete applied before a
    late, older update of a key the mart already had."""
    src, tgt = tables
    s1 = commit_orders(src, order_rows([1, 2, 3], ["cancelled", "new", "new"], ["-D", "+I", "+I"],
                                       lsn=[300, 50, 100]), 1)
    assert apply_range(src, tgt, 0, s1).mode == "incremental"
    s2 = commit_orders(src, order_rows([3], "cancelled", "-D", lsn=[400]), 2)
    apply_range(src, tgt, s1, s2)
    assert sorted(derived(tgt)[0]) == [2]
    # the late day: the insert order 1's delete deleted, an update older than order 3's delete
    s3 = commit_orders(src, order_rows([1, 3], ["new", "paid"], ["+I", "+U"], lsn=[100, 200]), 3)
    r = apply_range(src, tgt, s2, s3)
    assert r.upserts == 0
    assert sorted(recompute(src, s3)) == [2]
    assert derived(tgt)[0] == recompute(src, s3)


def test_late_insert_after_a_compacted_delete_follows_the_source(tables: Any) -> None:
    """A full compaction of the source drops the delete at the highest level (Paimon's
    deduplicate engine keeps no tombstone; Java 0.9 does the same): an older insert arriving
    after that is live again in the SOURCE, and the mart shows what the source shows."""
    src, tgt = tables
    s1 = commit_orders(src, order_rows([1, 2], "new", lsn=[100, 110]), 1)
    s2 = commit_orders(src, order_rows([1], "cancelled", "-D", lsn=[300]), 2)
    apply_range(src, tgt, 0, s2)
    assert sorted(derived(tgt)[0]) == [2]
    src.compact()
    s4 = commit_orders(src, order_rows([1], "paid", lsn=[150]), 4)
    apply_range(src, tgt, s2, s4)
    assert sorted(recompute(src, s4)) == [1, 2]
    assert derived(tgt)[0] == recompute(src, s4)
    assert s1 == 1


@pytest.mark.parametrize("in_max", [256, 0], ids=["pushed-as-IN", "pushed-as-range"])
def test_lookup_reads_the_merged_rows_of_exactly_the_keys(tables: Any, in_max: int) -> None:
    src, _ = tables
    commit_orders(src, order_rows(range(1, 301), "new", lsn=range(1000, 1300)), 1)
    s2 = commit_orders(src, order_rows([7, 250, 299], "paid", ["+U", "+U", "-D"],
                                       lsn=[2000, 2001, 2002]), 2)
    commit_orders(src, order_rows([7], "delivered", "+U", lsn=[3000]), 3)
    keys = pa.array([299, 7, 250, 1000, 3], pa.int64())
    got = lookup(src, keys, snapshot_id=s2, columns=["order_id", "status"], in_max=in_max)
    assert sorted(got.to_pylist(), key=lambda r: r["order_id"]) == [
        {"order_id": 3, "status": "new"}, {"order_id": 7, "status": "paid"},
        {"order_id": 250, "status": "paid"}]


# ------------------------------------------------------------------------------ property
@st.composite
def histories(draw: st.DrawFn) -> dict[str, Any]:
    """A change history of a few keys (true order = position = src_lsn), delivered in landing
    days that arrive in a random order (an event may land twice), with maintenance between
    the days and random range splits."""
    n = draw(st.integers(1, 20))
    events = draw(st.lists(
        st.tuples(st.integers(1, 6), st.sampled_from(["+I", "+U", "-D"]),
                  st.sampled_from(STATUSES), st.sampled_from(["5", "80", "700"])),
        min_size=n, max_size=n))
    n_days = draw(st.integers(1, 6))
    days: list[list[int]] = [[] for _ in range(n_days)]
    for i in range(n):
        days[draw(st.integers(0, n_days - 1))].append(i)
        if draw(st.integers(0, 5)) == 0:  # delivered twice (at-least-once)
            days[draw(st.integers(0, n_days - 1))].append(i)
    order = draw(st.permutations(range(n_days)))
    after = draw(st.lists(
        st.sampled_from(["apply", "apply", "apply-part", "none", "compact", "full", "overwrite",
                         "expire"]),
        min_size=n_days, max_size=n_days))
    return {"events": events, "days": [days[d] for d in order], "after": after,
            "seed": draw(st.integers(0, 2**16))}


def _day_rows(events: list[tuple[int, str, str, str]], idx: list[int]) -> pa.Table:
    ev = [events[i] for i in idx]
    rows = order_rows([e[0] for e in ev], [e[2] for e in ev], [e[1] for e in ev],
                      lsn=[(i + 1) * 10 for i in idx])
    amounts = pa.array([decimal.Decimal(e[3]) for e in ev], pa.decimal128(12, 2))
    return rows.set_column(rows.schema.get_field_index("amount"), "amount", amounts)


def _overwrite_without(src: FileStoreTable, drop_key: int, identifier: int) -> None:
    """A reload of the source: an OVERWRITE snapshot of its rows but one key."""
    rows = src.to_arrow()
    rows = rows.filter(pc.not_equal(rows.column("order_id"), drop_key))
    with src.new_write(CDC_USER) as w:
        w.write_arrow(rows)
        msgs = w.prepare_commit()
    src.new_commit(CDC_USER).overwrite(msgs, {}, commit_identifier=identifier)


@settings(max_examples=examples(40), suppress_health_check=[HealthCheck.too_slow])
@given(h=histories())
def test_derived_table_equals_recompute_for_any_arrival_order(
    tmp_path_factory: pytest.TempPathFactory, h: dict[str, Any]
) -> None:
    cat = FileSystemCatalog(str(tmp_path_factory.mktemp(f"late{next(_dirs)}")))
    src, tgt = ORDERS.ensure(cat), ORDERS_ENRICHED.ensure(cat)
    events, seed = h["events"], h["seed"]
    model: dict[int, tuple[dict[str, Any], int]] = {}
    applied = 0
    ident = itertools.count(1)

    def apply(end: int) -> None:
        nonlocal applied
        if end < (src.snapshot_manager.earliest_snapshot_id() or 1):
            end = src.snapshot_manager.latest_snapshot_id() or 0  # its state is gone
        r = apply_range(src, tgt, applied, end)
        assert r.end == end and r.mode in ("incremental", "full")
        event(f"range applied: {r.mode}")
        expected = recompute(src, end)
        rows, stamps = derived(tgt)
        assert rows == expected, (r, h)
        observe(model, expected, end)
        assert stamps == {k: v[1] for k, v in model.items()}, (r, h)
        applied = end

    for day, action in zip(h["days"], h["after"]):
        if day:
            commit_orders(src, _day_rows(events, day), next(ident))
        latest = src.snapshot_manager.latest_snapshot_id() or 0
        if action == "compact":
            src.compact(strategy="minor", commit_user="compactor")
        elif action == "full":
            src.compact(commit_user="compactor")
        elif action == "overwrite" and latest:
            _overwrite_without(src, 1 + seed % 6, next(ident))
        elif action == "expire" and latest:
            # the consumer is gone (expired, removed): the snapshots the mart has not read
            # expire too, and the next range is rebuilt from the source state
            ConsumerManager(src.file_io, src.path).delete_consumer(DERIVED_CONSUMER_ID)
            src.expire_snapshots(retain_min=1, retain_max=1)
        latest = src.snapshot_manager.latest_snapshot_id() or 0
        if latest > applied and action in ("apply", "apply-part"):
            low = applied + 1  # may have expired: then the run rebuilds at the latest
            end = latest if action == "apply" else low + seed % (latest - low + 1)
            apply(end)
    latest = src.snapshot_manager.latest_snapshot_id() or 0
    if latest > applied:
        apply(latest)
