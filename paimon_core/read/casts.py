"""Reading a column whose type was changed by ALTER: every cast Paimon Java 0.9 applies on read.

A data file keeps the type its column had when it was written; a table altered by Java 0.9
(``SchemaManager`` accepts every change ``DataTypeCasts.supportsExplicitCast`` allows and
``CastExecutors.resolve`` can execute) is read by converting each old value the way Java's
``CastExecutors`` rule for that pair does (``SchemaEvolutionUtil.createConvertMapping``), so
each value reads as Java reads it:

* numbers -> integers: Java's primitive casts (``Number.intValue`` ...): integers wrap,
  FLOAT/DOUBLE truncate toward zero and saturate at the int/long range (NaN -> 0; TINYINT and
  SMALLINT wrap the saturated int); DECIMAL truncates toward zero (``RoundingMode.DOWN``);
* to DECIMAL: rounding ``HALF_UP`` (ties away from zero) to the new scale, **null** when the
  value does not fit the new precision (``Decimal.fromBigDecimal``); a FLOAT/DOUBLE goes
  through its shortest decimal string (``BigDecimal.valueOf``);
* strings -> numbers: Java's ``BinaryStringUtils`` (integers accept ``[+-]digits[.digits]`` and
  truncate; overflow fails); strings -> DECIMAL ``new BigDecimal(s)``; strings -> BOOLEAN
  ``t/true/y/yes/1`` and ``f/false/n/no/0`` (any case). A value Java cannot parse fails Java's
  read; ours fails with :class:`~paimon_core.errors.CastError` naming the value;
* to CHAR/VARCHAR(n): truncated to n characters, CHAR padded with spaces; to BINARY(n) truncated
  or zero-padded, VARBINARY(n) truncated (``toCharacterString`` / ``toBinaryString``);
* BOOLEAN <-> numbers (1/0, ``intValue() != 0``), numbers/booleans -> strings (``toString``);
* temporal: :mod:`paimon_core.read.casts_time`.

:func:`is_widening` tells the changes that need no value cast: old files' statistics still prune
filters on such a column (:mod:`paimon_core.scan.planner`), on any other change they cannot.

Pairs Java 0.9 has no rule for are refused with :class:`~paimon_core.errors.UnsupportedError`
(Java's ALTER refuses them, so only a hand-made schema file can hold them).
"""

from __future__ import annotations

import decimal
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import UnsupportedError
from paimon_core.read import casts_time
from paimon_core.read.casts_values import (
    HEX_FLOAT,
    check_values,
    from_numpy,
    hex_floats,
    java_double_strings,
    to_numpy,
)
from paimon_core.types import (
    BINARY_ROOTS,
    INT_RANGES,
    INTEGER_ROOTS,
    STRING_ROOTS,
    AtomicType,
    DataType,
    TypeRoot,
    to_arrow_type,
)

__all__ = ["cast_evolved", "is_widening"]

_FLOATS = frozenset({TypeRoot.FLOAT, TypeRoot.DOUBLE})
_PRIMITIVE = INTEGER_ROOTS | _FLOATS
_NUMERIC = _PRIMITIVE | {TypeRoot.DECIMAL}
_TEMPORAL = casts_time.TEMPORAL_ROOTS
_NP_INT = {TypeRoot.TINYINT: np.int8, TypeRoot.SMALLINT: np.int16, TypeRoot.INT: np.int32,
           TypeRoot.BIGINT: np.int64}
_TRUE = pa.array(["t", "true", "y", "yes", "1"])
_FALSE = pa.array(["f", "false", "n", "no", "0"])
_DEC_RE = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_INT_RE = r"^[+-]?[0-9]*(\.[0-9]*)?$"
_FLOAT_RE = r"^[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)$"


def is_widening(old: DataType, new: DataType) -> bool:
    """Whether every value of type ``old`` reads unchanged, and orders the same, as ``new``
    (no cast of :mod:`paimon_core.read.casts` needed beyond the Arrow representation; stats
    of files written with ``old`` may then prune filters on the ``new`` column)."""
    o, n = old.with_nullable(True), new.with_nullable(True)
    if o == n:
        return True
    if not isinstance(o, AtomicType) or not isinstance(n, AtomicType):
        return False
    if o.root in INTEGER_ROOTS and n.root in INTEGER_ROOTS:
        return INT_RANGES[o.root][1] <= INT_RANGES[n.root][1]
    if n.root is TypeRoot.DOUBLE:  # exact in a double
        return o.root in (TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.FLOAT)
    # not CHAR -> VARCHAR: an ORC file's CHAR values read trimmed (Java's ORC char reader)
    # while its statistics hold them padded, so those stats must not prune
    if (o.root, n.root) in ((TypeRoot.VARCHAR, TypeRoot.VARCHAR),
                            (TypeRoot.BINARY, TypeRoot.VARBINARY),
                            (TypeRoot.VARBINARY, TypeRoot.VARBINARY)):
        return (n.length or 0) >= (o.length or 0)
    if o.root is n.root and o.root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        return (n.precision or 0) >= (o.precision or 0)
    if o.root is TypeRoot.DECIMAL and n.root is TypeRoot.DECIMAL:
        return o.scale == n.scale and (n.precision or 0) >= (o.precision or 0)
    return False


def cast_evolved(col: pa.ChunkedArray | pa.Array, source: DataType,
                 target: DataType) -> pa.Array:
    """``col`` (values of a file column of Paimon type ``source``) read as ``target``, value for
    value as Java 0.9's ``CastExecutors`` rule for the pair.

    Raises:
        CastError: a value Java fails to convert (unparsable string, integer overflow of a
            string, NaN/Infinity to DECIMAL); names the value.
        UnsupportedError: Java 0.9 has no cast from ``source`` to ``target``.
    """
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    fn = (_rule(source, target)
          if isinstance(source, AtomicType) and isinstance(target, AtomicType) else None)
    if fn is None:
        raise UnsupportedError(
            f"no cast from {source.sql()} to {target.sql()} (Paimon 0.9 has none either)")
    assert isinstance(source, AtomicType) and isinstance(target, AtomicType)
    out = fn(arr, source, target)
    want = to_arrow_type(target)
    out = out if out.type == want else out.cast(want)
    if arr.null_count:  # a null stays null (some kernels fill the slots of nulls)
        out = pc.if_else(pc.is_valid(arr), out, pa.scalar(None, want))
    return out


_Rule = Callable[[pa.Array, AtomicType, AtomicType], pa.Array]


def _rule(s: AtomicType, t: AtomicType) -> _Rule | None:
    sr, tr = s.root, t.root
    if sr in _NUMERIC and tr in _NUMERIC:
        if tr is TypeRoot.DECIMAL:
            return _to_decimal
        if sr is TypeRoot.DECIMAL:
            return _decimal_to_primitive
        return _primitive_to_primitive
    if tr in STRING_ROOTS:
        if sr in STRING_ROOTS:
            return _string_to_string
        if sr in _NUMERIC or sr is TypeRoot.BOOLEAN:
            return _to_string
        if sr in BINARY_ROOTS:
            return _binary_to_string
    if sr in STRING_ROOTS:
        if tr is TypeRoot.DECIMAL:
            return _string_to_decimal
        if tr in INTEGER_ROOTS:
            return _string_to_integer
        if tr in _FLOATS:
            return _string_to_float
        if tr is TypeRoot.BOOLEAN:
            return _string_to_boolean
        if tr in BINARY_ROOTS:
            return _string_to_binary
    if sr in BINARY_ROOTS and tr in BINARY_ROOTS:
        return _binary_to_binary
    if sr is TypeRoot.BOOLEAN and tr in _NUMERIC:
        return _boolean_to_numeric
    if sr in INTEGER_ROOTS and tr is TypeRoot.BOOLEAN:
        return _integer_to_boolean
    if sr in _TEMPORAL or tr in _TEMPORAL:
        return casts_time.rule(s, t)
    return None


# ---- numbers -------------------------------------------------------------------------------


def _wrap(values: np.ndarray, root: TypeRoot) -> np.ndarray:
    """Java's narrowing of a long to ``root`` (two's complement wrap)."""
    return values.astype(np.int64).astype(_NP_INT[root])


def _float_to_integral(values: np.ndarray, root: TypeRoot) -> np.ndarray:
    """JLS 5.1.3: NaN -> 0, truncate toward zero, saturate at int (long for BIGINT); TINYINT
    and SMALLINT then wrap the int."""
    wide = root is TypeRoot.BIGINT
    lo, hi = INT_RANGES[TypeRoot.BIGINT if wide else TypeRoot.INT]
    v = np.nan_to_num(np.trunc(values.astype(np.float64)), nan=0.0, posinf=np.inf,
                      neginf=-np.inf)
    big, small = v >= float(hi), v <= float(lo)
    out = np.where(big | small, 0.0, v).astype(np.int64)
    out[big] = hi
    out[small] = lo
    return _wrap(out, root)


def _primitive_to_primitive(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    if t.root in _FLOATS:
        return pc.cast(arr, to_arrow_type(t), safe=False)
    values, valid = to_numpy(arr, 0)
    if s.root in _FLOATS:
        return from_numpy(_float_to_integral(values, t.root), valid, to_arrow_type(t))
    return from_numpy(_wrap(values, t.root), valid, to_arrow_type(t))


def _decimal_to_primitive(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    p, sc = s.precision or 38, s.scale or 0
    if t.root in _FLOATS:
        if p <= 18:  # DecimalUtils.doubleValue of a compact decimal: unscaled / 10^scale
            unscaled, valid = _unscaled(arr)
            d = unscaled.astype(np.float64) / float(10 ** sc)
            return pc.cast(from_numpy(d, valid, pa.float64()), to_arrow_type(t), safe=False)
        return pc.cast(pc.cast(arr, pa.float64(), safe=False), to_arrow_type(t), safe=False)
    whole = pc.cast(arr, pa.decimal128(p, 0), safe=False)  # RoundingMode.DOWN
    longs = pc.cast(whole, pa.int64(), safe=False)
    values, valid = to_numpy(longs, 0)
    return from_numpy(_wrap(values, t.root), valid, to_arrow_type(t))


def _unscaled(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The unscaled values (low 64 bits) of a decimal128 array and its validity."""
    words = np.frombuffer(arr.buffers()[1], dtype=np.int64)
    low = words[2 * arr.offset: 2 * (arr.offset + len(arr)): 2]
    return low, np.asarray(pc.is_valid(arr))


def _to_decimal(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    sc = t.scale or 0
    if s.root is TypeRoot.DECIMAL or s.root in INTEGER_ROOTS:
        exact = pc.cast(arr, pa.decimal256(76, max(sc, s.scale or 0) + 1))
        return _round_fit(exact, arr, s, t)
    # FLOAT/DOUBLE: BigDecimal.valueOf(doubleValue()) == new BigDecimal(Double.toString(d)):
    # the shortest digits that read back as the double (Arrow prints those too)
    return _string_to_decimal(pc.cast(pc.cast(arr, pa.float64()), pa.string()), s, t)


def _round_fit(exact: pa.Array, arr: pa.Array, s: AtomicType, t: AtomicType,
               too_long: pa.Array | None = None) -> pa.Array:
    """``Decimal.fromBigDecimal``: HALF_UP (ties away from zero) to the scale of ``t``.

    A value over its precision is a ``null`` decimal in Java 0.9 that its readers do not
    expect (``CastedRow.isNullAt`` says false, ``getDecimal`` returns null: the oracle's read
    fails with a NullPointerException), so it fails ours too, naming the value; ``too_long``
    marks values known not to fit before rounding."""
    p, sc = t.precision or 38, t.scale or 0
    rounded = pc.round(exact, ndigits=sc, round_mode="half_towards_infinity")
    bound = pa.scalar(decimal.Decimal(10) ** (p - sc), rounded.type)
    fits = pc.less(pc.abs(rounded), bound)
    if too_long is not None:
        fits = pc.and_(fits, pc.invert(too_long))
    check_values(arr, fits, s, t, f"more than {p} digits (Paimon 0.9's read fails too)")
    return pc.cast(rounded, pa.decimal128(p, sc))


def _boolean_to_numeric(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    ints = pc.cast(arr, pa.int32())
    if t.root is TypeRoot.DECIMAL:
        return _round_fit(pc.cast(ints, pa.decimal256(76, (t.scale or 0) + 1)), arr, s, t)
    return pc.cast(ints, to_arrow_type(t))


def _integer_to_boolean(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    values, valid = to_numpy(arr, 0)  # Number.intValue() != 0: a long wraps first
    return from_numpy(values.astype(np.int64).astype(np.int32) != 0, valid, pa.bool_())


# ---- strings -------------------------------------------------------------------------------


def _string_to_decimal(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    """``new BigDecimal(s)`` then ``Decimal.fromBigDecimal``: plain numbers are cut to one
    digit past the scale (all HALF_UP needs) and rounded by Arrow; the rare values with an
    exponent go through Python's decimal, which rounds alike."""
    p, sc = t.precision or 38, t.scale or 0
    check_values(arr, pc.match_substring_regex(arr, _DEC_RE), s, t, "not a decimal number")
    sci = pc.fill_null(pc.match_substring_regex(arr, "[eE]"), False)
    parts = pc.extract_regex(pc.if_else(sci, "0", arr),
                             r"^(?P<sign>[+-]?)(?P<int>[0-9]*)\.?(?P<frac>[0-9]*)$")
    sign, ints, frac = (parts.field(k) for k in ("sign", "int", "frac"))
    ints = pc.utf8_ltrim(ints, characters="0")
    too_long = pc.fill_null(pc.greater(pc.utf8_length(ints), p - sc), False)  # cannot fit
    ints = pc.if_else(too_long, "0", ints)
    frac = pc.utf8_rpad(pc.utf8_slice_codeunits(frac, 0, sc + 1), sc + 1, "0")
    text = pc.binary_join_element_wise(sign, pc.if_else(pc.equal(ints, ""), "0", ints), ".",
                                       frac, "")
    exact = pc.cast(text, pa.decimal256(76, sc + 1))
    if pc.any(sci).as_py():
        values, huge = _exponent_values(arr.filter(sci), p, sc)
        exact = pc.replace_with_mask(exact, sci, pc.cast(values, exact.type))
        too_long = pc.replace_with_mask(too_long, sci, huge)
    return _round_fit(exact, arr, s, t, too_long)


def _exponent_values(arr: pa.Array, p: int, sc: int) -> tuple[pa.Array, pa.Array]:
    """Strings with an exponent (a few, if any) rounded HALF_UP to scale ``sc`` by Python's
    decimal (BigDecimal's semantics), and which of them cannot fit ``p`` digits at all."""
    q = decimal.Decimal(1).scaleb(-sc)
    ctx = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_UP)
    exact = [decimal.Decimal(v) for v in arr.to_pylist()]
    huge = [d.adjusted() >= p - sc for d in exact]
    values = [decimal.Decimal(0) if h else d.quantize(q, context=ctx)
              for d, h in zip(exact, huge)]
    return pa.array(values, pa.decimal256(76, sc)), pa.array(huge, pa.bool_())


def _string_to_integer(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    ok = pc.and_(pc.match_substring_regex(arr, _INT_RE),
                 pc.invert(pc.is_in(arr, pa.array(["", "+", "-"]))))
    check_values(arr, ok, s, t, "not an integer")
    parts = pc.extract_regex(arr, r"^(?P<sign>[+-]?)(?P<int>[0-9]*)")
    sign = pc.if_else(pc.equal(parts.field("sign"), "-"), "-", "")
    digits = pc.utf8_ltrim(parts.field("int"), characters="0")
    digits = pc.if_else(pc.equal(digits, ""), "0", digits)
    lo, hi = INT_RANGES[TypeRoot.BIGINT if t.root is TypeRoot.BIGINT else TypeRoot.INT]
    fits = pc.less_equal(pc.utf8_length(digits), 19)
    check_values(arr, fits, s, t, "overflow")
    wide = pc.cast(pc.binary_join_element_wise(sign, digits, ""), pa.decimal128(20, 0))
    lo2, hi2 = INT_RANGES[t.root] if t.root is not TypeRoot.BIGINT else (lo, hi)
    in_range = pc.and_(pc.greater_equal(wide, pa.scalar(decimal.Decimal(lo2), wide.type)),
                       pc.less_equal(wide, pa.scalar(decimal.Decimal(hi2), wide.type)))
    check_values(arr, in_range, s, t, "overflow")
    return pc.cast(wide, to_arrow_type(t))


def _string_to_float(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    # Double.parseDouble trims blanks and accepts a d/D/f/F suffix, NaN, Infinity and
    # hexadecimal floating-point literals (0x1.8p1)
    text = pc.utf8_trim_whitespace(arr)
    text = pc.replace_substring_regex(text, "(?i)([0-9.])[df]$", r"\1")
    hexa = pc.fill_null(pc.match_substring_regex(text, HEX_FLOAT), False)
    check_values(arr, pc.or_(pc.match_substring_regex(text, _FLOAT_RE), hexa), s, t,
                 "not a number")
    decimal_text = pc.if_else(hexa, "0", text)
    decimal_text = pc.replace_substring(pc.replace_substring(decimal_text, "Infinity", "inf"),
                                        "NaN", "nan")
    out = pc.cast(decimal_text, to_arrow_type(t))
    if pc.any(hexa).as_py():
        out = pc.if_else(hexa, hex_floats(text).cast(to_arrow_type(t), safe=False), out)
    return out


def _string_to_boolean(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    low = pc.utf8_lower(arr)
    yes, no = pc.is_in(low, _TRUE), pc.is_in(low, _FALSE)
    check_values(arr, pc.or_(yes, no), s, t, "not a boolean")
    return pc.if_else(pc.is_valid(arr), yes, pa.scalar(None, pa.bool_()))


def _fit_chars(strings: pa.Array, t: AtomicType) -> pa.Array:
    """``BinaryStringUtils.toCharacterString``: truncate to the length, pad CHAR."""
    n = t.length if t.length is not None else 2**31 - 1
    if n < 2**31 - 1:
        strings = pc.utf8_slice_codeunits(strings, 0, n)
    if t.root is TypeRoot.CHAR:
        strings = pc.utf8_rpad(strings, n, " ")
    return strings


def _string_to_string(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    return _fit_chars(pc.cast(arr, pa.string()), t)


def _to_string(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    if s.root in _FLOATS:
        text = java_double_strings(arr, float32=s.root is TypeRoot.FLOAT)
    elif s.root is TypeRoot.BOOLEAN:
        text = pc.if_else(arr, "true", "false")
    else:  # integers, DECIMAL (BigDecimal.toPlainString keeps the scale)
        text = pc.cast(arr, pa.string())
    return _fit_chars(text, t)


def _fit_bytes(data: pa.Array, t: AtomicType) -> pa.Array:
    """``BinaryStringUtils.toBinaryString``: truncate to the length, zero-pad BINARY."""
    n = t.length if t.length is not None else 2**31 - 1
    if n >= 2**31 - 1:
        return data
    data = pc.binary_slice(data, 0, n)
    if t.root is TypeRoot.BINARY:
        pad = pc.binary_repeat(pa.scalar(b"\x00"), pc.subtract(n, pc.binary_length(data)))
        data = pc.binary_join_element_wise(data, pad, b"")
    return data


def _binary_to_binary(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    return _fit_bytes(pc.cast(arr, pa.binary()), t)


def _string_to_binary(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    return _fit_bytes(pc.cast(arr, pa.binary()), t)


def _binary_to_string(arr: pa.Array, s: AtomicType, t: AtomicType) -> pa.Array:
    # BinaryString.fromBytes: the bytes as they are (no length applied)
    return pc.cast(pc.cast(arr, pa.binary()), pa.string())
