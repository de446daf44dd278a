"""Array plumbing shared by the read-side casts (:mod:`paimon_core.read.casts`,
:mod:`paimon_core.read.casts_time`): numpy views with validity, the first offending value of
a failed cast, and Java's ``Double.toString`` / ``Float.toString`` text of numbers."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import CastError
from paimon_core.types import DataType

__all__ = ["check_values", "from_numpy", "java_double_strings", "to_numpy"]


def to_numpy(arr: pa.Array, fill: object) -> tuple[np.ndarray, np.ndarray]:
    """The values of ``arr`` with nulls replaced by ``fill``, and the validity mask."""
    valid = np.asarray(pc.is_valid(arr))
    values = np.asarray(pc.fill_null(arr, pa.scalar(fill, arr.type)) if arr.null_count
                        else arr.to_numpy(zero_copy_only=False))
    return values, valid


def from_numpy(values: np.ndarray, valid: np.ndarray, typ: pa.DataType) -> pa.Array:
    """An Arrow array of ``typ`` from numpy ``values``, null where ``valid`` is False."""
    mask = None if valid.all() else ~valid
    return pa.array(values, type=typ, mask=mask)


def check_values(arr: pa.Array, ok: pa.Array, source: DataType, target: DataType,
                 why: str) -> None:
    """Raise :class:`CastError` naming the first non-null value of ``arr`` that ``ok`` does
    not accept (Java fails the read on it)."""
    bad = pc.and_(pc.is_valid(arr), pc.invert(pc.fill_null(ok, False)))
    if pc.any(bad).as_py():
        value = arr[pc.index(bad, True).as_py()].as_py()
        raise CastError(value, source.sql(), target.sql(), why)


_NUMBER = r"^(?P<sign>-?)(?P<int>[0-9]+)(?:\.(?P<frac>[0-9]*))?(?:e\+?(?P<exp>-?[0-9]+))?$"


def java_double_strings(arr: pa.Array, *, float32: bool = False) -> pa.Array:
    """``Double.toString`` (``Float.toString`` with ``float32``) of every value, nulls kept:
    the shortest digits that read back as the value (Arrow prints those), laid out as Java
    does: plain with at least one fraction digit for 1e-3 <= |d| < 1e7 (``100.0``,
    ``0.001``), else ``d.dddE±n`` (``1.0E10``, ``1.0E-4``)."""
    arr = pc.cast(arr, pa.float32() if float32 else pa.float64())
    text = pc.cast(arr, pa.string())
    parts = pc.extract_regex(pc.fill_null(text, "0"), _NUMBER)
    sign, whole, frac = (pc.fill_null(parts.field(k), "") for k in ("sign", "int", "frac"))
    exp = pc.cast(pc.if_else(pc.equal(pc.fill_null(parts.field("exp"), ""), ""), "0",
                             parts.field("exp")), pa.int64())
    joined = pc.binary_join_element_wise(whole, frac, "")
    trimmed = pc.utf8_ltrim(joined, characters="0")
    leading = pc.subtract(pc.utf8_length(joined), pc.utf8_length(trimmed))
    point = np.asarray(pc.subtract(pc.add(pc.cast(pc.utf8_length(whole), pa.int64()), exp),
                                   pc.cast(leading, pa.int64())))
    digits = pc.utf8_rtrim(trimmed, characters="0")
    zero = np.asarray(pc.equal(digits, ""))
    rest = pc.utf8_slice_codeunits(digits, 1)
    out = pc.binary_join_element_wise(
        sign, pc.utf8_slice_codeunits(digits, 0, 1), ".",
        pc.if_else(pc.equal(rest, ""), "0", rest), "E",
        pc.cast(pa.array(point - 1), pa.string()), "")
    for k in range(-2, 8):  # plain layout, one pass per position of the point
        mask = pa.array((point == k) & ~zero)
        if not pc.any(mask).as_py():
            continue
        if k >= 1:
            tail = pc.utf8_slice_codeunits(digits, k)
            plain = pc.binary_join_element_wise(
                sign, pc.utf8_rpad(pc.utf8_slice_codeunits(digits, 0, k), k, "0"), ".",
                pc.if_else(pc.equal(tail, ""), "0", tail), "")
        else:
            plain = pc.binary_join_element_wise(sign, "0." + "0" * -k, digits, "")
        out = pc.if_else(mask, plain, out)
    out = pc.if_else(pa.array(zero), pc.binary_join_element_wise(sign, "0.0", ""), out)
    special = pc.is_nan(arr)
    out = pc.if_else(pc.fill_null(special, False), "NaN", out)
    inf = pc.fill_null(pc.is_inf(arr), False)
    out = pc.if_else(inf, pc.if_else(pc.greater(arr, 0), "Infinity", "-Infinity"), out)
    return pc.if_else(pc.is_valid(arr), out, pa.scalar(None, pa.string()))


#: Java's hexadecimal floating-point literal (``Double.parseDouble``): the binary exponent is
#: required
HEX_FLOAT = (r"^(?P<sign>[+-]?)0[xX](?P<int>[0-9a-fA-F]*)\.?(?P<frac>[0-9a-fA-F]*)"
             r"[pP](?P<exp>[+-]?[0-9]+)$")
_HEX_DIGITS = 16


def hex_floats(text: pa.Array) -> pa.Array:
    """The doubles of hexadecimal literals (:data:`HEX_FLOAT`; other values give 0): the
    first 16 significant hex digits as an exact 64-bit integer, rounded once to a double and
    scaled by the binary exponent (digits past the 16th are dropped, which can differ from
    Java's rounding in the last place; Java prints such literals nowhere)."""
    parts = pc.extract_regex(pc.fill_null(text, "0x0p0"), HEX_FLOAT)
    parts = pc.if_else(pc.is_valid(parts), parts, pc.extract_regex(
        pa.array(["0x0p0"] * len(text)), HEX_FLOAT))
    frac = parts.field("frac")
    digits = pc.utf8_ltrim(pc.binary_join_element_wise(parts.field("int"), frac, ""),
                           characters="0")
    length = np.asarray(pc.utf8_length(digits), dtype=np.int64)
    dropped = np.maximum(length - _HEX_DIGITS, 0)
    head = pc.utf8_lpad(pc.utf8_slice_codeunits(digits, 0, _HEX_DIGITS), _HEX_DIGITS, "0")
    chars = np.frombuffer(pc.cast(head, pa.binary()).buffers()[2], dtype=np.uint8,
                          count=len(text) * _HEX_DIGITS).reshape(len(text), _HEX_DIGITS)
    nibbles = np.where(chars <= ord("9"), chars - ord("0"), (chars | 0x20) - ord("a") + 10)
    weights = np.uint64(1) << (np.uint64(4) * np.arange(_HEX_DIGITS - 1, -1, -1,
                                                          dtype=np.uint64))
    mantissa = (nibbles.astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)
    exp = (np.asarray(pc.cast(parts.field("exp"), pa.int64()))
           - 4 * np.asarray(pc.utf8_length(frac), dtype=np.int64) + 4 * dropped)
    exp = np.clip(exp, -2000, 2000)  # beyond these every double is 0 or infinite
    value = np.ldexp(mantissa.astype(np.float64), exp.astype(np.int32))
    negative = np.asarray(pc.equal(parts.field("sign"), "-"))
    return pa.array(np.where(negative, -value, value), pa.float64())
