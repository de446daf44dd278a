"""The vectorised deduplicate agrees with the row-at-a-time reference."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_core.read.merge import (
    deduplicate,
    drop_retracts,
    reference_deduplicate,
    sections,
)
from tests.profiles import examples

row = st.fixed_dictionaries(
    {
        "k1": st.integers(0, 20),
        "k2": st.sampled_from(["a", "b", "hello world!", ""]),
        "seq": st.integers(0, 50),
        "kind": st.sampled_from([0, 1, 2, 3]),
        "v": st.one_of(st.none(), st.integers(-5, 5)),
    }
)


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.table(
        {
            "k1": pa.array([r["k1"] for r in rows], pa.int64()),
            "k2": pa.array([r["k2"] for r in rows], pa.string()),
            "seq": pa.array([r["seq"] for r in rows], pa.int64()),
            "kind": pa.array([r["kind"] for r in rows], pa.int8()),
            "v": pa.array([r["v"] for r in rows], pa.int64()),
        }
    )


def _unique_seq(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # sequence numbers are unique per bucket in Paimon: make them so
    return [dict(r, seq=r["seq"] * 1000 + i) for i, r in enumerate(rows)]


@settings(max_examples=examples(200))
@given(st.lists(row, max_size=60))
def test_vectorised_equals_reference_two_keys(rows: list[dict[str, Any]]) -> None:
    rows = _unique_seq(rows)
    expected = reference_deduplicate(rows, ["k1", "k2"], ["seq"], "kind")
    got = drop_retracts(deduplicate(_table(rows), ["k1", "k2"], ["seq"]), "kind")
    got_rows = sorted(got.to_pylist(), key=lambda r: (r["k1"], r["k2"]))
    assert got_rows == expected


@settings(max_examples=examples(200))
@given(st.lists(row, max_size=60))
def test_vectorised_equals_reference_int_key_fast_path(rows: list[dict[str, Any]]) -> None:
    rows = [dict(r, k2="x") for r in _unique_seq(rows)]
    expected = reference_deduplicate(rows, ["k1"], ["seq"], "kind")
    got = drop_retracts(deduplicate(_table(rows), ["k1"], ["seq"]), "kind")
    assert sorted(got.to_pylist(), key=lambda r: r["k1"]) == expected


@settings(max_examples=examples(200))
@given(st.lists(row, max_size=60), st.sampled_from([1, 2**40, 2**61]),
       st.booleans(), st.booleans())
def test_vectorised_equals_reference_several_int_keys(
    rows: list[dict[str, Any]], scale: int, ordered: bool, key_order: bool
) -> None:
    """Integer keys combined into one sort code (or a lexsort when their ranges are too
    wide to combine), with the sequence column or with rows already in sequence order."""
    rows = [dict(r, k2=(len(r["k2"]) % 3) * scale - 2**62) for r in _unique_seq(rows)]
    if ordered:
        rows.sort(key=lambda r: r["seq"])
    t = _table([dict(r, k2="") for r in rows]).set_column(
        1, "k2", pa.array([r["k2"] for r in rows], pa.int64()))
    expected = reference_deduplicate(rows, ["k1", "k2"], ["seq"], "kind")
    got = drop_retracts(
        deduplicate(t, ["k1", "k2"], [] if ordered else ["seq"], sequence_ordered=ordered,
                    key_order=key_order), "kind")
    if key_order:
        assert got.to_pylist() == expected
    assert sorted(got.to_pylist(), key=lambda r: (r["k1"], r["k2"])) == expected


@settings(max_examples=examples(100))
@given(st.lists(row, max_size=40))
def test_user_sequence_field_orders_before_system_sequence(rows: list[dict[str, Any]]) -> None:
    rows = _unique_seq(rows)
    expected = reference_deduplicate(rows, ["k1"], ["v", "seq"], "kind")
    got = drop_retracts(deduplicate(_table(rows), ["k1"], ["v", "seq"]), "kind")
    assert sorted(got.to_pylist(), key=lambda r: r["k1"]) == expected


def test_latest_sequence_wins_and_delete_removes() -> None:
    t = pa.table(
        {
            "k": pa.array([1, 1, 2, 2, 3], pa.int32()),
            "seq": pa.array([5, 9, 1, 2, 0], pa.int64()),
            "kind": pa.array([0, 2, 0, 3, 0], pa.int8()),
            "v": ["old", "new", "x", "gone", "y"],
        }
    )
    out = drop_retracts(deduplicate(t, ["k"], ["seq"]), "kind")
    assert sorted(zip(out["k"].to_pylist(), out["v"].to_pylist())) == [(1, "new"), (3, "y")]


class _F:
    def __init__(self, lo: int, hi: int, name: str) -> None:
        self.min_key = lo.to_bytes(4, "big")
        self.max_key = hi.to_bytes(4, "big")
        self.file_name = name


def test_sections_split_non_overlapping_ranges() -> None:
    files = [_F(10, 20, "b"), _F(0, 5, "a"), _F(15, 30, "c"), _F(31, 40, "d"), _F(40, 41, "e")]

    def decode(b: bytes) -> tuple[int]:
        return (int.from_bytes(b, "big"),)

    got = [[f.file_name for f in s] for s in sections(files, decode)]  # type: ignore[arg-type]
    assert got == [["a"], ["b", "c"], ["d", "e"]]


@settings(max_examples=examples(100))
@given(st.lists(row, max_size=40), st.booleans())
def test_date_and_int_keys_merge_as_their_day_numbers(
    rows: list[dict[str, Any]], ordered: bool
) -> None:
    """DATE keys (numpy datetime64 values) take the integer path with their day numbers."""
    rows = _unique_seq(rows)
    t = _table(rows)
    as_date = t.set_column(0, "k1", t.column("k1").cast(pa.int32()).cast(pa.date32()))
    seq = [] if ordered else ["seq"]
    if ordered:
        t = t.sort_by("seq")
        as_date = as_date.sort_by("seq")
    for keys in (["k1"], ["k1", "v2"]):
        ints = t.append_column("v2", t.column("kind").cast(pa.int64()))
        dates = as_date.append_column("v2", as_date.column("kind").cast(pa.int64()))
        want = deduplicate(ints, keys, seq, sequence_ordered=ordered)
        got = deduplicate(dates, keys, seq, sequence_ordered=ordered)
        assert got.column("seq").to_pylist() == want.column("seq").to_pylist()
