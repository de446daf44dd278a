"""``read_merged_changes(..., mode="diff")`` (``incremental-between-scan-mode = diff``): the
states at two snapshots compared per key, so that a truncate (an OVERWRITE, which the
``delta`` / ``changelog`` modes pass over as Java does) shows as ``-D`` of every key that was
live. The reference is computed here from two plain batch reads (time travel), per key in
Python: independent of the vectorised diff."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import SchemaError, UnsupportedError
from paimon_core.table import FileStoreTable
from tests.scan.change_tables import KRow, append_table, pk_table, write

Key = tuple[Any, ...]


def state(t: FileStoreTable, snapshot_id: int) -> dict[Key, dict[str, Any]]:
    if snapshot_id == 0:
        return {}
    rb = t.new_read_builder().with_time_travel(snapshot_id=snapshot_id)
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits).to_pylist()
    return {(r["pt"], r["id"]): r for r in rows}


def expected_diff(t: FileStoreTable, start: int, end: int) -> list[tuple[str, Any, ...]]:
    """("-D", row at start) for keys gone; ("+", row at end) for new or changed keys."""
    a, b = state(t, start), state(t, end)
    out: list[tuple[Any, ...]] = [("-D", *a[k].values()) for k in a if k not in b]
    out += [("+", *b[k].values()) for k in b if a.get(k) != b[k]]
    return sorted(out)


def actual_diff(t: FileStoreTable, start: int, end: int, **kw: Any) -> list[tuple[Any, ...]]:
    rows = t.read_merged_changes(start, end, mode="diff", **kw).to_pylist()
    out = []
    for r in rows:
        kind = r.pop("_kind")
        assert kind in ("-D", "+I", "+U")
        out.append(("-D" if kind == "-D" else "+", *r.values()))
    return sorted(out)


def test_a_truncate_in_the_range_shows_as_deletes(catalog: FileSystemCatalog) -> None:
    t = pk_table(catalog, "db.pk")
    write(t, [("+I", p, i, f"v1_{p}{i}") for p in "ab" for i in range(1, 5)])  # 1
    write(t, [("-D", "a", 2, "x"), ("+U", "b", 1, "v2_b1")])                   # 2
    assert t.new_commit("truncater").truncate() == [3]
    write(t, [("+I", "a", 1, "v1_a1"), ("+I", "b", 4, "new_b4"), ("+I", "c", 1, "v4_c1")])  # 4
    rows = t.read_merged_changes(2, 4, mode="diff").to_pylist()
    # a1 came back with its old value: no change; b4 changed; a2 was already gone at 2
    assert sorted((r["_kind"], r["pt"], r["id"], r["v"]) for r in rows) == [
        ("+I", "b", 4, "new_b4"), ("+I", "c", 1, "v4_c1"),
        ("-D", "a", 3, "v1_a3"), ("-D", "a", 4, "v1_a4"), ("-D", "b", 1, "v2_b1"),
        ("-D", "b", 2, "v1_b2"), ("-D", "b", 3, "v1_b3"),
    ]
    # the truncate alone: every live key as -D with its value at 2
    assert actual_diff(t, 2, 3) == expected_diff(t, 2, 3)
    assert {r["_kind"] for r in t.read_merged_changes(2, 3, mode="diff").to_pylist()} == {"-D"}
    assert len(state(t, 2)) == 7 and len(t.read_merged_changes(2, 3, mode="diff")) == 7
    # the delta mode passes over the OVERWRITE (Java 0.9): no retraction of the truncated keys
    delta = t.read_merged_changes(2, 4, mode="delta").to_pylist()
    assert all(r["_kind"] == "+I" for r in delta)
    # the stored kind of a changed key is kept (b1 was written +U)
    up = t.read_merged_changes(1, 2, mode="diff").to_pylist()
    assert sorted((r["_kind"], r["id"]) for r in up) == [("+U", 1), ("-D", 2)]


def test_diff_matches_two_batch_reads_on_random_histories(catalog: FileSystemCatalog) -> None:
    rng = np.random.default_rng(15)
    t = pk_table(catalog, "db.pk")
    n = 0
    for step in range(10):
        if step in (4, 8):
            n += len(t.new_commit("truncater").truncate())
            continue
        rows: list[KRow] = []
        for i in rng.choice(30, size=12, replace=False):
            kind = str(rng.choice(["+I", "+U", "-D"], p=[0.5, 0.3, 0.2]))
            pt = "ab"[int(i) % 2]
            rows.append((kind, pt, int(i), f"s{step}_{int(rng.integers(3))}"))
        n += len(write(t, rows))
    assert n == 10
    for start in range(0, 10):
        for end in range(start, 11):
            assert actual_diff(t, start, end) == expected_diff(t, start, end), (start, end)
    # projection and filter: the diff of the filtered states, values compared whole
    got = t.read_merged_changes(3, 10, mode="diff", columns=["id"], filter="pt = 'a'")
    assert got.column_names == ["_kind", "id"]
    full = [r for r in expected_diff(t, 3, 10) if r[1] == "a"]
    assert sorted((r["_kind"][0], r["id"]) for r in got.to_pylist()) == sorted(
        ("-" if k == "-D" else "+", i) for k, _, i, _ in full)


def test_diff_refusals(catalog: FileSystemCatalog) -> None:
    ap = append_table(catalog, "db.ap")
    write(ap, [("+I", "a", 1, "x")])
    with pytest.raises(UnsupportedError, match="primary-key"):
        ap.read_merged_changes(0, 1, mode="diff")
    t = pk_table(catalog, "db.pk")
    with pytest.raises(SchemaError, match="diff"):
        t.read_merged_changes(0, 1, mode="nope")
    assert t.read_merged_changes(0, 0, mode="diff").num_rows == 0  # no snapshot yet
    write(t, [("+I", "a", 1, "x")])
    with pytest.raises(SchemaError, match="must not exceed"):
        t.read_merged_changes(1, 0, mode="diff")
