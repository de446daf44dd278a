"""RowKind and its vectorised helpers (paimon_core.spec.row_kind)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from paimon_core.errors import SchemaError
from paimon_core.spec.row_kind import (
    RETRACT_KINDS,
    SHORT_STRINGS,
    RowKind,
    add_mask,
    arrow_retract_mask,
    arrow_short_retract_mask,
    retract_mask,
    short_string_codes,
    to_short_strings,
)


def test_values_and_short_strings_follow_java() -> None:
    assert [(k.value, k.short_string) for k in RowKind] == [
        (0, "+I"), (1, "-U"), (2, "+U"), (3, "-D")]
    assert SHORT_STRINGS == ("+I", "-U", "+U", "-D")
    assert RETRACT_KINDS == (1, 3)
    assert [k for k in RowKind if k.is_retract] == [RowKind.UPDATE_BEFORE, RowKind.DELETE]
    assert [k for k in RowKind if k.is_add] == [RowKind.INSERT, RowKind.UPDATE_AFTER]


def test_parsing() -> None:
    assert RowKind.from_short_string("+U") is RowKind.UPDATE_AFTER
    assert RowKind.from_byte_value(3) is RowKind.DELETE
    with pytest.raises(SchemaError):
        RowKind.from_short_string("+X")
    with pytest.raises(SchemaError, match="invalid row kind 4"):
        RowKind.from_byte_value(4)


def test_vectorised_helpers() -> None:
    codes = np.array([0, 1, 2, 3, 3], dtype=np.int8)
    assert retract_mask(codes).tolist() == [False, True, False, True, True]
    assert add_mask(codes).tolist() == [True, False, True, False, False]
    assert arrow_retract_mask(pa.array(codes)).to_pylist() == retract_mask(codes).tolist()
    shorts = to_short_strings(codes)
    assert shorts.to_pylist() == ["+I", "-U", "+U", "-D", "-D"]
    assert to_short_strings(pa.chunked_array([pa.array(codes)])).equals(shorts)
    assert arrow_short_retract_mask(shorts).to_pylist() == retract_mask(codes).tolist()
    assert short_string_codes(pa.array(["-D", "x", "+I"])).to_pylist() == [3, None, 0]
