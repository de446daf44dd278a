"""SimpleStats helpers: the all-null BinaryRow and the stock stats values."""

from __future__ import annotations

import dataclasses

import pytest

from paimon_core.spec.stats import (
    EMPTY_ROW,
    EMPTY_STATS,
    SimpleStats,
    all_null_row,
    stats_from_avro,
    unknown_stats,
)


def test_empty_row_is_java_arity0_row() -> None:
    # §4.2: 00000000 0000000000000000 (12 bytes)
    expected = bytes.fromhex("00000000" "0000000000000000")
    assert expected == EMPTY_ROW
    assert SimpleStats(EMPTY_ROW, EMPTY_ROW, ()) == EMPTY_STATS


def test_all_null_row_arity3() -> None:
    # header byte 1 = bits 8, 9, 10 -> 0x07; three zero slots
    assert all_null_row(3) == bytes.fromhex(
        "00000003" "0007000000000000" + "00" * 24
    )


def test_all_null_row_wide_header() -> None:
    # n = 57: W = ((57 + 63 + 8) // 64) * 8 = 16; bits 8..64 set
    row = all_null_row(57)
    assert row[:4] == (57).to_bytes(4, "big")
    header = int.from_bytes(row[4:20], "little")
    assert header == ((1 << 57) - 1) << 8
    assert len(row) == 4 + 16 + 57 * 8
    assert row[20:] == bytes(57 * 8)
    assert len(all_null_row(56)) == 4 + 8 + 56 * 8  # W = 8 up to 56 fields


def test_unknown_stats() -> None:
    s = unknown_stats(2)
    assert s.min_values == s.max_values == bytes.fromhex("00000002" "0003000000000000") + bytes(16)
    assert s.null_counts == (None, None)
    with pytest.raises(ValueError):
        all_null_row(-1)


def test_frozen_and_avro() -> None:
    s = SimpleStats(EMPTY_ROW, EMPTY_ROW, (1, None))
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.null_counts = None  # type: ignore[misc]
    rec = s.to_avro()
    assert rec == {"_MIN_VALUES": EMPTY_ROW, "_MAX_VALUES": EMPTY_ROW, "_NULL_COUNTS": [1, None]}
    assert stats_from_avro(rec) == s
    assert stats_from_avro({**rec, "_NULL_COUNTS": None}).null_counts is None
