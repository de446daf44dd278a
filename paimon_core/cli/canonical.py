"""Canonical JSON lines: the row format that the cross-implementation oracle prints.

Mirrors ``canonical_lines`` / ``canon_array`` of ``shared/oracle/paimon_oracle.py`` (not a Java
class: the oracle materialises Java 0.9 and pypaimon 2.1 results as Arrow tables and prints them
through the same canonicaliser). Output of :func:`canonical_lines` is byte-identical to the
oracle's for every type it supports, so our reads can be compared with ``diff``.

The encoding is driven by the Paimon schema, not by Arrow types (an engine-side type difference
shows up as a diff, not as noise):

==========================  ===============================================================
Paimon type                 JSON value
==========================  ===============================================================
BOOLEAN, TINYINT..BIGINT    ``true``/``false``, integer
FLOAT                       number, shortest repr that round-trips float32; ``"NaN"``,
                            ``"Infinity"``, ``"-Infinity"``
DOUBLE                      number (Python ``repr``, ``-0.0`` kept); same special strings
DECIMAL(p, s)               string with exactly ``s`` decimals
CHAR/VARCHAR                string
BINARY/VARBINARY            base64 string
DATE                        ``"YYYY-MM-DD"``
TIME(p)                     ``"HH:MM:SS[.fff]"`` (at most 3 fraction digits)
TIMESTAMP(p)                ``"YYYY-MM-DD HH:MM:SS[.f{p}]"`` (exactly p fraction digits)
TIMESTAMP_LTZ(p)            the same + ``Z`` (the UTC instant)
ARRAY / MULTISET            list / sorted list
MAP                         ``[key, value]`` pairs sorted by key
ROW                         object in field order
==========================  ===============================================================

Lines are ``json.dumps(obj, ensure_ascii=False, separators=(",", ":"))`` with keys in schema
order (``_kind`` first for change output) and are sorted by code point.

Example:
    >>> import pyarrow as pa
    >>> from paimon_core.types import DataField, parse_sql_type
    >>> f = [DataField(0, "id", parse_sql_type("INT")), DataField(1, "d", parse_sql_type("DECIMAL(5, 2)"))]
    >>> canonical_lines(pa.table({"id": [2, 1], "d": pa.array([None, 1], pa.decimal128(5, 2))}), f)
    ['{"id":1,"d":"1.00"}', '{"id":2,"d":null}']
"""  # noqa: E501

from __future__ import annotations

import base64
import decimal
import json
import math
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import SchemaError
from paimon_core.spec.row_kind import SHORT_STRINGS
from paimon_core.spec.system_fields import KIND_COLUMN
from paimon_core.types import (
    BINARY_ROOTS,
    INTEGER_ROOTS,
    STRING_ROOTS,
    ArrayType,
    AtomicType,
    DataField,
    DataType,
    MapType,
    MultisetType,
    RowType,
    TypeRoot,
)

__all__ = ["KIND_KEY", "canon_values", "canonical_lines", "json_fragments"]

KIND_KEY = KIND_COLUMN
"""Key of the row kind in change output (always first)."""


# Decimal arithmetic never uses the thread's default context (28 digits): DECIMAL(38, s)
# values need up to 38 (same context as the oracle's).
_DEC_CTX = decimal.Context(
    prec=76, rounding=decimal.ROUND_HALF_UP, Emin=-999999, Emax=999999
)

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_SORT_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True)

_SECONDS_PER_UNIT = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


def _sort_key(v: Any) -> str:
    """Sort key of MULTISET elements and MAP keys (the oracle's ``_sort_key``)."""
    return str(_SORT_ENCODER.encode(v))


# ---------------------------------------------------------------------------------------------
# canonical Python values


def _chunks(arr: Any) -> list[Any]:
    if isinstance(arr, pa.ChunkedArray):
        return list(arr.chunks)
    return [arr]


def canon_values(arr: pa.Array | pa.ChunkedArray, t: DataType) -> list[Any]:
    """Converts an Arrow array into canonical JSON values (``None`` for null) for type ``t``.

    Args:
        arr: the column, any chunking; dictionary-encoded arrays are decoded.
        t: the Paimon type of the column (drives the encoding).

    Returns:
        One Python value per row, ready for ``json.dumps``.

    Raises:
        SchemaError: the Arrow type cannot hold values of ``t``.
    """
    if isinstance(arr, pa.ChunkedArray):
        out: list[Any] = []
        for c in arr.chunks:
            out.extend(_canon_chunk(c, t))
        return out
    return _canon_chunk(arr, t)


def _canon_chunk(arr: Any, t: DataType) -> list[Any]:
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    n = len(arr)
    if n == 0:
        return []
    if pa.types.is_null(arr.type):
        return [None] * n
    if isinstance(t, (ArrayType, MultisetType)):
        return _canon_list(arr, t)
    if isinstance(t, MapType):
        return _canon_map(arr, t)
    if isinstance(t, RowType):
        return _canon_row(arr, t)
    return _canon_atomic(arr, t)


def _valid(arr: Any) -> list[bool]:
    if arr.null_count == 0:
        return [True] * len(arr)
    return list(arr.is_valid().to_pylist())


def _canon_list(arr: Any, t: ArrayType | MultisetType) -> list[Any]:
    n = len(arr)
    valid = _valid(arr)
    if pa.types.is_map(arr.type) and isinstance(t, MultisetType):
        # our reader's MULTISET: map<element, count>
        offsets = arr.offsets.to_pylist()
        keys = _canon_chunk(arr.keys, t.element)
        counts = arr.items.to_pylist()
        out: list[Any] = []
        for i in range(n):
            if not valid[i]:
                out.append(None)
                continue
            elems: list[Any] = []
            for j in range(offsets[i], offsets[i + 1]):
                elems.extend([keys[j]] * int(counts[j] or 0))
            out.append(sorted(elems, key=_sort_key))
        return out
    if not (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)):
        if pa.types.is_fixed_size_list(arr.type):
            arr = arr.cast(pa.list_(arr.type.value_field))
        else:
            raise SchemaError(f"Arrow type {arr.type} cannot hold {t.sql()}")
    offsets = arr.offsets.to_pylist()
    child = _canon_chunk(arr.values, t.element)
    out = [child[offsets[i] : offsets[i + 1]] if valid[i] else None for i in range(n)]
    if isinstance(t, MultisetType):
        out = [None if x is None else sorted(x, key=_sort_key) for x in out]
    return out


def _canon_map(arr: Any, t: MapType) -> list[Any]:
    if not pa.types.is_map(arr.type):
        raise SchemaError(f"Arrow type {arr.type} cannot hold {t.sql()}")
    n = len(arr)
    valid = _valid(arr)
    offsets = arr.offsets.to_pylist()
    keys = _canon_chunk(arr.keys, t.key)
    vals = _canon_chunk(arr.items, t.value)
    out: list[Any] = []
    for i in range(n):
        if not valid[i]:
            out.append(None)
            continue
        pairs = [[keys[j], vals[j]] for j in range(offsets[i], offsets[i + 1])]
        pairs.sort(key=lambda p: _sort_key(p[0]))
        out.append(pairs)
    return out


def _canon_row(arr: Any, t: RowType) -> list[Any]:
    if not pa.types.is_struct(arr.type) or arr.type.num_fields != len(t.fields):
        raise SchemaError(f"Arrow type {arr.type} cannot hold {t.sql()}")
    n = len(arr)
    valid = _valid(arr)
    children = arr.flatten()
    cols = [_canon_chunk(c, f.type) for c, f in zip(children, t.fields)]
    names = [f.name for f in t.fields]
    return [dict(zip(names, [c[i] for c in cols])) if valid[i] else None for i in range(n)]


def _canon_atomic(arr: Any, t: AtomicType) -> list[Any]:
    r = t.root
    if r is TypeRoot.BOOLEAN or r in INTEGER_ROOTS or r in STRING_ROOTS:
        return list(arr.to_pylist())
    if r is TypeRoot.FLOAT or r is TypeRoot.DOUBLE:
        return _canon_floats(arr, r is TypeRoot.FLOAT)
    if r is TypeRoot.DECIMAL:
        return _canon_decimal(arr, t.scale or 0)
    if r in BINARY_ROOTS:
        return [
            None if v is None else base64.b64encode(v).decode("ascii") for v in arr.to_pylist()
        ]
    if r is TypeRoot.DATE:
        return _canon_date(arr)
    if r is TypeRoot.TIME:
        return _canon_time(arr, t.precision or 0)
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        return _canon_timestamp(arr, t.precision or 0, r is TypeRoot.TIMESTAMP_LTZ)
    raise SchemaError(f"no canonical form for {t.sql()}")  # pragma: no cover


def _special_float(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    return "Infinity" if x > 0 else "-Infinity"


def _canon_floats(arr: Any, single: bool) -> list[Any]:
    target = pa.float32() if single else pa.float64()
    if not arr.type.equals(target):
        arr = arr.cast(target, safe=False)
    filled = arr.fill_null(0)
    np_vals = filled.to_numpy(zero_copy_only=False)
    out: list[Any]
    if single:
        # Arrow prints float32 with the shortest round-trip digits (double-conversion's
        # ToShortestSingle): the digits numpy's Dragon4 gives, which the oracle parses back
        # into a Python float (tests/cli/test_canonical.py checks random bit patterns).
        out = list(map(float, filled.cast(pa.string()).to_pylist()))
    else:
        out = np_vals.tolist()
    special = ~np.isfinite(np_vals)
    if arr.null_count:
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        special |= ~valid
        for i in np.flatnonzero(special).tolist():
            out[i] = _special_float(out[i]) if valid[i] else None
    else:
        for i in np.flatnonzero(special).tolist():
            out[i] = _special_float(out[i])
    return out


def _canon_decimal(arr: Any, scale: int) -> list[Any]:
    q = decimal.Decimal(1).scaleb(-scale, _DEC_CTX)

    def slow(v: Any) -> str:
        return format(decimal.Decimal(v).quantize(q, context=_DEC_CTX), "f")

    if pa.types.is_decimal(arr.type) and arr.type.scale == scale:
        # Arrow prints plain digits with exactly `scale` decimals, except in scientific
        # notation when the adjusted exponent is < -6 ("1E-10"): those go through Decimal.
        strs = arr.cast(pa.string())
        out: list[Any] = strs.to_pylist()
        sci = pc.match_substring(strs, "E").fill_null(False).to_numpy(zero_copy_only=False)
        for i in np.flatnonzero(sci).tolist():
            out[i] = slow(out[i])
        return out
    return [None if v is None else slow(v) for v in arr.to_pylist()]


def _canon_date(arr: Any) -> list[Any]:
    if pa.types.is_date32(arr.type):
        return list(arr.cast(pa.string()).to_pylist())  # ISO "YYYY-MM-DD", years 0001..9999
    if pa.types.is_date64(arr.type):
        days = np.floor_divide(
            np.asarray(arr.cast(pa.int64()).fill_null(0).to_numpy(), dtype=np.int64), 86400000
        )
    elif pa.types.is_integer(arr.type):
        days = np.asarray(arr.cast(pa.int32()).fill_null(0).to_numpy(), dtype=np.int64)
    else:
        raise SchemaError(f"Arrow type {arr.type} cannot hold DATE")
    strs = np.datetime_as_string(days.astype("datetime64[D]"), unit="D").tolist()
    valid = _valid(arr)
    return [s if ok else None for s, ok in zip(strs, valid)]


def _canon_time(arr: Any, precision: int) -> list[Any]:
    ty = arr.type
    if pa.types.is_time32(ty) or pa.types.is_time64(ty):
        as_int = pa.int32() if pa.types.is_time32(ty) else pa.int64()
        raw = np.asarray(arr.cast(as_int).fill_null(0).to_numpy(), dtype=np.int64)
        if ty.unit == "s":
            ms = raw * 1000
        else:
            ms = np.floor_divide(raw, {"ms": 1, "us": 1000, "ns": 1000000}[ty.unit])
    elif pa.types.is_integer(ty):
        ms = np.asarray(arr.cast(pa.int64()).fill_null(0).to_numpy(), dtype=np.int64)
    else:
        raise SchemaError(f"Arrow type {ty} cannot hold TIME")
    p = min(precision, 3)
    valid = _valid(arr)
    out: list[Any] = []
    for x, ok in zip(ms.tolist(), valid):
        if not ok:
            out.append(None)
            continue
        s = f"{x // 3600000:02d}:{(x // 60000) % 60:02d}:{(x // 1000) % 60:02d}"
        if p > 0:
            s += "." + f"{x % 1000:03d}"[:p]
        out.append(s)
    return out


_UNIT_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def _canon_timestamp(arr: Any, precision: int, ltz: bool) -> list[Any]:
    ty = arr.type
    if not pa.types.is_timestamp(ty):
        raise SchemaError(f"Arrow type {ty} cannot hold TIMESTAMP")
    digits = _UNIT_DIGITS[ty.unit]
    if digits >= precision:
        # Arrow prints "YYYY-MM-DD HH:MM:SS[.f{digits}]" (years 0001..9999, floored): cut it
        naive = arr.cast(pa.int64()).cast(pa.timestamp(ty.unit))
        strs = naive.cast(pa.string())
        width = 19 + (1 + digits if digits else 0)
        lengths = pc.utf8_length(strs)
        if len(strs) == strs.null_count or (
            pc.min(lengths).as_py() == width and pc.max(lengths).as_py() == width
        ):
            strs = pc.utf8_slice_codeunits(strs, 0, 19 + (1 + precision if precision else 0))
            if ltz:
                strs = pc.binary_join_element_wise(strs, "Z", "")
            return list(strs.to_pylist())
    per_sec = _SECONDS_PER_UNIT[ty.unit]
    raw = np.asarray(arr.cast(pa.int64()).fill_null(0).to_numpy(), dtype=np.int64)
    secs = np.floor_divide(raw, per_sec)
    frac_nanos = (raw - secs * per_sec) * (10**9 // per_sec)
    strs_np = np.datetime_as_string(secs.astype("datetime64[s]"), unit="s").tolist()
    valid = _valid(arr)
    suffix = "Z" if ltz else ""
    out: list[Any] = []
    for s, f, ok in zip(strs_np, frac_nanos.tolist(), valid):
        if not ok:
            out.append(None)
        elif precision:
            out.append(s.replace("T", " ") + "." + f"{f:09d}"[:precision] + suffix)
        else:
            out.append(s.replace("T", " ") + suffix)
    return out


# ---------------------------------------------------------------------------------------------
# JSON fragments and lines


def _frag_int_like(arr: Any) -> list[str]:
    if pa.types.is_boolean(arr.type):
        return ["null" if v is None else ("true" if v else "false") for v in arr.to_pylist()]
    return list(arr.cast(pa.string()).fill_null("null").to_pylist())


def _frag_string(arr: Any) -> list[str]:
    enc: Callable[[str], str] = encode_basestring
    return ["null" if v is None else enc(v) for v in arr.to_pylist()]


def _frag_float(vals: list[Any]) -> list[str]:
    r = float.__repr__
    return [r(v) if type(v) is float else ("null" if v is None else f'"{v}"') for v in vals]


def _frag_plain_str(vals: list[Any]) -> list[str]:
    """Strings that need no JSON escaping (dates, times, decimals, base64)."""
    return ["null" if v is None else f'"{v}"' for v in vals]


_PLAIN_STRING_ROOTS = frozenset(
    {
        TypeRoot.DECIMAL,
        TypeRoot.BINARY,
        TypeRoot.VARBINARY,
        TypeRoot.DATE,
        TypeRoot.TIME,
        TypeRoot.TIMESTAMP,
        TypeRoot.TIMESTAMP_LTZ,
    }
)


def _frag_value(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, str):
        return str(encode_basestring(v))
    if isinstance(v, float):
        return float.__repr__(v)
    return str(_ENCODER.encode(v))


def json_fragments(arr: pa.Array | pa.ChunkedArray, t: DataType) -> list[str]:
    """The JSON text of every value of a column (``null`` for nulls), as in a canonical line.

    Args:
        arr: the column.
        t: its Paimon type.

    Returns:
        One JSON fragment per row.

    Raises:
        SchemaError: the Arrow type cannot hold values of ``t``.
    """
    out: list[str] = []
    for c in _chunks(arr):
        if pa.types.is_dictionary(c.type):
            c = c.dictionary_decode()
        r = t.root
        if (r is TypeRoot.BOOLEAN or r in INTEGER_ROOTS) and (
            pa.types.is_integer(c.type) or pa.types.is_boolean(c.type)
        ):
            out.extend(_frag_int_like(c))
        elif r in STRING_ROOTS and (pa.types.is_string(c.type) or pa.types.is_large_string(c.type)):
            out.extend(_frag_string(c))
        elif r is TypeRoot.FLOAT or r is TypeRoot.DOUBLE:
            out.extend(_frag_float(_canon_chunk(c, t)))
        elif r in _PLAIN_STRING_ROOTS:
            out.extend(_frag_plain_str(_canon_chunk(c, t)))
        else:
            out.extend(_frag_value(v) for v in _canon_chunk(c, t))
    return out


def _kind_fragments(arr: Any) -> list[str]:
    vals = arr.to_pylist()
    out: list[str] = []
    for v in vals:
        if isinstance(v, int) and not isinstance(v, bool):
            v = SHORT_STRINGS[v] if 0 <= v < len(SHORT_STRINGS) else v
        out.append(_frag_value(v))
    return out


def canonical_lines(
    table: pa.Table, fields: Sequence[DataField], kind_col: str | None = None
) -> list[str]:
    """Prints an Arrow table as the oracle's sorted canonical JSON lines.

    Args:
        table: the rows; its data columns are matched to ``fields`` by position (after removing
            ``kind_col``).
        fields: the Paimon schema of the data columns (drives the encoding and the keys).
        kind_col: name of a column holding the row kind (``"+I"``/``"-U"``/``"+U"``/``"-D"``,
            or the byte codes 0..3); printed first under the key ``_kind``.

    Returns:
        The lines, sorted by code point, without newlines.

    Raises:
        SchemaError: the column count does not match ``fields``, ``kind_col`` is missing, or a
            column's Arrow type cannot hold its Paimon type.
    """
    names = list(table.column_names)
    kind_idx: int | None = None
    if kind_col is not None:
        if kind_col not in names:
            raise SchemaError(f"kind column {kind_col!r} not in {names}")
        kind_idx = names.index(kind_col)
    data_idx = [i for i in range(len(names)) if i != kind_idx]
    if len(data_idx) != len(fields):
        raise SchemaError(
            f"table has {len(data_idx)} data columns {[names[i] for i in data_idx]}, "
            f"expected {len(fields)} {[f.name for f in fields]}"
        )
    n = table.num_rows
    cols: list[list[str]] = []
    if kind_idx is not None:
        cols.append([f'"{KIND_KEY}":{v}' for v in _kind_fragments(table.column(kind_idx))])
    for i, f in zip(data_idx, fields):
        prefix = encode_basestring(f.name) + ":"
        cols.append([prefix + v for v in json_fragments(table.column(i), f.type)])
    if not cols:
        return ["{}"] * n
    lines = ["{" + ",".join(parts) + "}" for parts in zip(*cols)]
    lines.sort()
    return lines
