"""Partition directory names, as Java Paimon renders them.

Mirrors ``org.apache.paimon.utils.InternalRowPartitionComputer.generatePartValues`` (legacy
names: the Java ``toString()`` of the internal value, the only form Paimon 0.9 knows and the
default ``partition.legacy-name=true`` of later versions) and
``org.apache.paimon.utils.PartitionPathUtils`` (``escapePathName``, ``unescapePathName``,
``generatePartitionPath``).

Rendering of a partition value (internal value -> ``toString()``):

* STRING/CHAR/VARCHAR: the text; BOOLEAN ``true``/``false``; integers in decimal;
* DECIMAL(p, s): ``BigDecimal.toPlainString()`` with exactly ``s`` fraction digits (``12.30``);
* FLOAT/DOUBLE: Java ``Float.toString`` / ``Double.toString`` (:func:`java_float_to_string`,
  :func:`java_double_to_string`): ``1.0``, ``1.0E10``, ``1.0E-5``, ``0.001``, ``NaN``,
  ``Infinity``;
* DATE: days since 1970-01-01 (``19723``); TIME: milliseconds of the day (``3723000``);
* TIMESTAMP / TIMESTAMP_LTZ: ``LocalDateTime.toString()`` of the stored wall clock (the UTC
  instant for LTZ): ``2024-01-01T01:02``, ``2024-01-01T01:02:03``, ``…T01:02:03.456``,
  ``…T01:02:03.456789``, ``…T01:02:03.456789123``;
* null, or a string that is empty or whitespace only (Java ``Character.isWhitespace``), becomes
  the default partition name (option ``partition.default-name``, ``__DEFAULT_PARTITION__``).

Escaping replaces each character below 0x20, 0x7F and each of ``" # % ' * / : = ? \\ { } [ ] ^``
with ``%XX`` (uppercase hex); everything else (spaces, non-ASCII, ``.``) is kept. A value can
therefore never contain ``/``; ``..`` is kept literally but always sits behind its ``key=``
prefix (``k=..``), so a partition path always stays inside the table directory.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import operator
import struct
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from paimon_core.errors import SchemaError, UnsupportedError
from paimon_core.spec.binary_row import (
    date_to_days,
    decimal_to_unscaled,
    deserialize_binary_row,
    time_to_millis,
    timestamp_to_millis_nanos,
)
from paimon_core.types import (
    BINARY_ROOTS,
    INTEGER_ROOTS,
    STRING_ROOTS,
    AtomicType,
    DataType,
    TypeRoot,
)

__all__ = [
    "DEFAULT_PARTITION_NAME",
    "decode_partition",
    "escape_path_name",
    "java_double_to_string",
    "java_float_to_string",
    "local_date_time_string",
    "parse_partition_path",
    "partition_path",
    "partition_value_string",
    "unescape_path_name",
]

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"
#: ``"legacy"``: JDK 8-18 ``Double/Float.toString``; ``"shortest"``: JDK 19+.
FloatFormat = Literal["legacy", "shortest"]

_ESCAPED = frozenset(
    [chr(c) for c in range(0x20)] + list("\"#%'*/:=?\\{}[]^") + ["\x7f"]
)
# Java Character.isWhitespace: SPACE/LINE/PARAGRAPH separators except the non-breaking ones,
# plus \t \n \x0b \f \r and \x1c-\x1f (Unicode data of Java 9+).
_JAVA_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2008\u2009\u200a\u2028\u2029\u205f\u3000"
)
_HEX = frozenset("0123456789abcdefABCDEF")


# ---------------------------------------------------------------------------------------------
# escaping


def escape_path_name(s: str) -> str:
    """``PartitionPathUtils.escapePathName``.

    Raises:
        SchemaError: ``s`` is empty (Java throws too).
    """
    if not s:
        raise SchemaError("a partition path name must not be empty")
    if not any(c in _ESCAPED for c in s):
        return s
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in s)


def unescape_path_name(s: str) -> str:
    """``PartitionPathUtils.unescapePathName``: ``%XX`` -> the char, anything else kept.

    Like Java's ``Integer.parseInt(s, 16)`` a sign is accepted (``%+F`` -> ``\\x0f``); a
    negative code leaves the text alone.
    """
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "%" and i + 2 < len(s):
            code = _java_parse_hex(s[i + 1 : i + 3])
            if code is not None and code >= 0:
                out.append(chr(code))
                i += 3
                continue
        out.append(c)
        i += 1
    return "".join(out)


def _java_parse_hex(s: str) -> int | None:
    body = s[1:] if s[:1] in ("+", "-") else s
    if not body or any(c not in _HEX for c in body):
        return None
    return int(s, 16)


# ---------------------------------------------------------------------------------------------
# value rendering


def _is_blank(s: str) -> bool:
    return all(c in _JAVA_WHITESPACE for c in s)


def partition_value_string(
    value: Any,
    type: DataType,
    default_name: str = DEFAULT_PARTITION_NAME,
    *,
    float_format: FloatFormat = "legacy",
) -> str:
    """The (unescaped) directory value of one partition field, as Java renders it.

    Args:
        value: the Python value (see :mod:`paimon_core.spec.binary_row`), ``None`` for null.
        type: the partition column's type.
        default_name: ``partition.default-name``.
        float_format: FLOAT/DOUBLE rendering of JDK 8-18 (``"legacy"``) or JDK 19+
            (``"shortest"``); they differ for a few values (see :func:`java_double_to_string`).

    Raises:
        SchemaError: a value that does not fit the type.
        UnsupportedError: BINARY/VARBINARY or nested partition columns (Java would render an
            object identity such as ``[B@1b6d3586``).
    """
    if value is None:
        return default_name
    if not isinstance(type, AtomicType) or type.root in BINARY_ROOTS:
        raise UnsupportedError(f"partition column of type {type.sql()}")
    r = type.root
    if r in STRING_ROOTS:
        if not isinstance(value, str):
            raise SchemaError(f"expected str for {type}, got {value.__class__.__name__}")
        text = value
    elif r is TypeRoot.BOOLEAN:
        text = "true" if value else "false"
    elif r in INTEGER_ROOTS:
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise SchemaError(f"expected an integer for {type}, got {value.__class__.__name__}")
        text = str(operator.index(value))
    elif r is TypeRoot.FLOAT:
        text = java_float_to_string(float(value), fmt=float_format)
    elif r is TypeRoot.DOUBLE:
        text = java_double_to_string(float(value), fmt=float_format)
    elif r is TypeRoot.DECIMAL:
        p = type.precision if type.precision is not None else 10
        s = type.scale or 0
        text = _plain_decimal(decimal_to_unscaled(value, p, s), s)
    elif r is TypeRoot.DATE:
        text = str(date_to_days(value))
    elif r is TypeRoot.TIME:
        text = str(time_to_millis(value))
    elif r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        p = type.precision if type.precision is not None else 6
        millis, nanos = timestamp_to_millis_nanos(value, p, r is TypeRoot.TIMESTAMP_LTZ)
        text = local_date_time_string(millis, nanos)
    else:  # pragma: no cover - every atomic root is handled above
        raise UnsupportedError(f"partition column of type {type}")
    return default_name if _is_blank(text) else text


def _plain_decimal(unscaled: int, scale: int) -> str:
    """``BigDecimal.toPlainString()`` of ``unscaled * 10^-scale`` (no negative zero)."""
    digits = str(abs(unscaled))
    sign = "-" if unscaled < 0 else ""
    if scale <= 0:
        return sign + digits
    digits = digits.rjust(scale + 1, "0")
    return f"{sign}{digits[:-scale]}.{digits[-scale:]}"


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (ISO, year 0 exists) date of an epoch day, for any integer."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (1 if m <= 2 else 0), m, d


def local_date_time_string(millis: int, nano_of_milli: int) -> str:
    """``Timestamp.toString()`` = ``LocalDateTime.toString()`` of epoch millis + nanos."""
    days, ms = divmod(millis, 86_400_000)
    year, month, day = _civil_from_days(days)
    if abs(year) < 1000:
        ytext = ("-" if year < 0 else "") + f"{abs(year):04d}"
    else:
        ytext = ("+" if year > 9999 else "") + str(year)
    secs, milli = divmod(ms, 1000)
    nano = milli * 1_000_000 + nano_of_milli
    out = f"{ytext}-{month:02d}-{day:02d}T{secs // 3600:02d}:{secs // 60 % 60:02d}"
    if secs % 60 or nano:
        out += f":{secs % 60:02d}"
        if nano:
            if nano % 1_000_000 == 0:
                out += f".{nano // 1_000_000:03d}"
            elif nano % 1000 == 0:
                out += f".{nano // 1000:06d}"
            else:
                out += f".{nano:09d}"
    return out


# ---------------------------------------------------------------------------------------------
# Java Float.toString / Double.toString

def java_double_to_string(v: float, *, fmt: FloatFormat = "legacy") -> str:
    """``Double.toString``.

    Args:
        v: the value.
        fmt: ``"legacy"`` = JDK 8-18 (``FloatingDecimal``, ported exactly; Paimon 0.9's Java 8/11/
            17 runtimes), which for some values prints more digits than needed
            (``2e23`` -> ``1.9999999999999998E23``); ``"shortest"`` = JDK 19+ (the shortest
            decimal that rounds to ``v``: ``2.0E23``).
    """
    if fmt == "legacy":
        return _legacy_to_string(struct.unpack("<q", struct.pack("<d", float(v)))[0], False)
    return _java_fp_to_string(float(v), single=False)


def java_float_to_string(v: float, *, fmt: FloatFormat = "legacy") -> str:
    """``Float.toString`` of ``v`` rounded to float32 (``fmt`` as in
    :func:`java_double_to_string`; legacy renders ``1.17549435E-38``, shortest ``1.1754944E-38``).
    """
    if fmt == "legacy":
        bits = int(np.array(v, dtype=np.float32).view(np.int32))
        return _legacy_to_string(bits, True)
    return _java_fp_to_string(float(np.float32(v)), single=True)


# JDK 8-18 jdk.internal.math.FloatingDecimal.BinaryToASCIIBuffer.dtoa, with Java's int/long
# overflow reproduced where the original relies on it.
_N_5_BITS = (0, 3, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28, 31, 33, 35, 38, 40, 42, 45, 47, 49,
             52, 54, 56, 59, 61)
_INSIGNIFICANT_DIGITS = (0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 6,
                         7, 7, 7, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 11, 11, 11, 12, 12, 12, 12, 13,
                         13, 13, 14, 14, 14, 15, 15, 15, 15, 16, 16, 16, 17, 17, 17, 18, 18, 18,
                         19)


def _wrap(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _jdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _legacy_to_string(bits: int, single: bool) -> str:
    """``FloatingDecimal.toJavaFormatString`` of raw float32 (``single``) or float64 bits."""
    shift, bias, width = (23, 127, 32) if single else (52, 1023, 64)
    negative = bits < 0
    fract = bits & ((1 << shift) - 1)
    bin_exp = (bits >> shift) & ((1 << (width - 1 - shift)) - 1)
    if bin_exp == (1 << (width - 1 - shift)) - 1:
        return ("-Infinity" if negative else "Infinity") if fract == 0 else "NaN"
    if bin_exp == 0:
        if fract == 0:
            return "-0.0" if negative else "0.0"
        leading = width - fract.bit_length()
        sh = leading - (width - 1 - shift)
        fract <<= sh
        bin_exp = 1 - sh
        n_sig = width - leading
    else:
        fract |= 1 << shift
        n_sig = shift + 1
    bin_exp -= bias
    digits, dec_exp = _dtoa(bin_exp, fract << (52 - shift), n_sig)
    return ("-" if negative else "") + _get_chars(digits, dec_exp)


def _estimate_dec_exp(fract: int, bin_exp: int) -> int:
    d2: float = struct.unpack("<d", struct.pack("<q", (1023 << 52) | (fract & ((1 << 52) - 1))))[0]
    d = (d2 - 1.5) * 0.289529654 + 0.176091259 + float(bin_exp) * 0.301029995663981
    return math.floor(d)


def _dtoa(bin_exp: int, fract: int, n_sig: int) -> tuple[list[int], int]:
    tail_zeros = (fract & -fract).bit_length() - 1
    n_fract_bits = 53 - tail_zeros
    n_tiny_bits = max(0, n_fract_bits - bin_exp - 1)
    if -21 <= bin_exp <= 62 and n_tiny_bits == 0:
        insignificant = 0
        if bin_exp > n_sig:
            p2 = bin_exp - n_sig - 1
            insignificant = _INSIGNIFICANT_DIGITS[p2] if 1 < p2 < len(_INSIGNIFICANT_DIGITS) else 0
        lvalue = fract << (bin_exp - 52) if bin_exp >= 52 else fract >> (52 - bin_exp)
        dec_exp = 0
        if insignificant:
            pow10 = 10**insignificant
            residue = lvalue % pow10
            lvalue //= pow10
            dec_exp += insignificant
            if residue >= pow10 >> 1:
                lvalue += 1
        text = str(lvalue)
        return [int(c) for c in text.rstrip("0")], dec_exp + len(text)
    dec_exp = _estimate_dec_exp(fract, bin_exp)
    b5 = max(0, -dec_exp)
    b2 = b5 + n_tiny_bits + bin_exp
    s5 = max(0, dec_exp)
    s2 = s5 + n_tiny_bits
    m5 = b5
    m2 = b2 - n_sig
    fract >>= tail_zeros
    b2 -= n_fract_bits - 1
    common = min(b2, s2)
    b2, s2, m2 = b2 - common, s2 - common, m2 - common
    if n_fract_bits == 1:
        m2 -= 1
    if m2 < 0:
        b2, s2, m2 = b2 - m2, s2 - m2, 0
    b_bits = n_fract_bits + b2 + (_N_5_BITS[b5] if b5 < len(_N_5_BITS) else b5 * 3)
    ten_s_bits = s2 + 1 + (_N_5_BITS[s5 + 1] if s5 + 1 < len(_N_5_BITS) else (s5 + 1) * 3)
    digits: list[int] = []
    if b_bits < 64 and ten_s_bits < 64:
        w = 32 if b_bits < 32 and ten_s_bits < 32 else 64
        f = _wrap(fract, 32) if w == 32 else fract
        b = _wrap(_wrap(f * 5**b5, w) << b2, w)
        s = _wrap(5**s5 << s2, w)
        m = _wrap(5**m5 << m2, w)
        tens = _wrap(s * 10, w)
        q = _jdiv(b, s)
        b = _wrap(10 * (b - s * q), w)
        m = _wrap(m * 10, w)
        low, high = b < m, _wrap(b + m, w) > tens
        if q == 0 and not high:
            dec_exp -= 1
        else:
            digits.append(q)
        if dec_exp < -3 or dec_exp >= 8:
            high = low = False
        while not low and not high:
            q = _jdiv(b, s)
            b = _wrap(10 * (b - s * q), w)
            m = _wrap(m * 10, w)
            if m > 0:
                low, high = b < m, _wrap(b + m, w) > tens
            else:
                low = high = True
            digits.append(q)
        low_diff = _wrap(_wrap(b << 1, w) - tens, w)
    else:
        big_s = 5**s5 << s2
        big_b = (fract * 5**b5) << b2
        big_m = 5 ** (m5 + 1) << (m2 + 1)
        ten_s = 5 ** (s5 + 1) << (s2 + 1)
        q, big_b = divmod(big_b, big_s)
        big_b *= 10
        low, high = big_b < big_m, ten_s <= big_b + big_m
        if q == 0 and not high:
            dec_exp -= 1
        else:
            digits.append(q)
        if dec_exp < -3 or dec_exp >= 8:
            high = low = False
        while not low and not high:
            q, big_b = divmod(big_b, big_s)
            big_b *= 10
            big_m *= 10
            low, high = big_b < big_m, ten_s <= big_b + big_m
            digits.append(q)
        low_diff = (big_b << 1) - ten_s if high and low else 0
    dec_exponent = dec_exp + 1
    if high and (not low or low_diff > 0 or (low_diff == 0 and digits[-1] & 1)):
        dec_exponent = _roundup(digits, dec_exponent)
    return digits, dec_exponent


def _roundup(digits: list[int], dec_exponent: int) -> int:
    """``BinaryToASCIIBuffer.roundup`` (keeps its digit count on a carry out, like Java)."""
    i = len(digits) - 1
    q = digits[i]
    if q == 9:
        while q == 9 and i > 0:
            digits[i] = 0
            i -= 1
            q = digits[i]
        if q == 9:
            digits[0] = 1
            return dec_exponent + 1
    digits[i] = q + 1
    return dec_exponent


def _get_chars(digits: list[int], dec_exponent: int) -> str:
    """``BinaryToASCIIBuffer.getChars`` (without the sign)."""
    text = "".join(map(str, digits))
    n = len(text)
    if 0 < dec_exponent < 8:
        k = min(n, dec_exponent)
        if k < dec_exponent:
            return text[:k] + "0" * (dec_exponent - k) + ".0"
        return text[:k] + "." + (text[k:] if k < n else "0")
    if -3 < dec_exponent <= 0:
        return "0." + "0" * -dec_exponent + text
    e = dec_exponent - 1
    return f"{text[0]}.{text[1:] if n > 1 else '0'}E{e}"


def _java_fp_to_string(v: float, single: bool) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0.0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    sign = "-" if v < 0 else ""
    digits, exp = _shortest_decimal(abs(v), single)
    text = str(digits)
    n = len(text)
    sci = n - 1 + exp  # the value is d.ddd * 10^sci
    if -3 <= sci < 7:
        if exp >= 0:
            return f"{sign}{text}{'0' * exp}.0"
        point = n + exp
        if point > 0:
            return f"{sign}{text[:point]}.{text[point:]}"
        return f"{sign}0.{'0' * -point}{text}"
    return f"{sign}{text[0]}.{text[1:] or '0'}E{sci}"


def _shortest_decimal(v: float, single: bool) -> tuple[int, int]:
    """``(digits, exponent)`` with ``digits * 10**exponent`` the decimal Java prints for ``v > 0``.

    The shortest decimal that rounds to ``v`` (closest to ``v`` among those); when that has a
    single digit, Java also considers two-digit decimals and takes the closest one
    (``Double.MIN_VALUE`` -> ``4.9E-324``, not ``5E-324``).
    """
    text = (
        np.format_float_scientific(np.float32(v), unique=True, trim="-")
        if single
        else repr(v)
    )
    tup = decimal.Decimal(text).as_tuple()
    digits = int("".join(map(str, tup.digits)))
    exp = int(tup.exponent)
    while digits % 10 == 0:
        digits //= 10
        exp += 1
    if digits >= 10:
        return digits, exp
    exact = Fraction(v)
    best = (digits, exp)
    best_dist = abs(Fraction(digits) * Fraction(10) ** exp - exact)
    lead = exp if exact >= Fraction(10) ** exp else exp - 1  # exact = x.xxx * 10^lead
    scale_exp = lead - 1
    scale = Fraction(10) ** scale_exp
    lo = math.floor(exact / scale)
    for c in (lo, lo + 1):
        if not 10 <= c <= 99 or c % 10 == 0:
            continue
        cand = c * scale
        if not _rounds_to(cand, v, single):
            continue
        dist = abs(cand - exact)
        if dist < best_dist or (dist == best_dist and c % 2 == 0):
            best, best_dist = (c, scale_exp), dist
    return best


def _rounds_to(c: Fraction, v: float, single: bool) -> bool:
    """Whether the decimal ``c`` reads back as ``v`` (round half to even)."""
    if single:
        f = np.float32(v)
        up = float(np.nextafter(f, np.float32(np.inf)))
        down = float(np.nextafter(f, np.float32(0)))
        even = int(np.array(f).view(np.uint32)) % 2 == 0
    else:
        up, down = math.nextafter(v, math.inf), math.nextafter(v, 0.0)
        even = int(np.array(v).view(np.uint64)) % 2 == 0
    lo = (Fraction(down) + Fraction(v)) / 2
    hi = (Fraction(v) + Fraction(up)) / 2 if not math.isinf(up) else Fraction(v) * 2
    return lo < c < hi or (even and c in (lo, hi))


# ---------------------------------------------------------------------------------------------
# paths


def decode_partition(partition: bytes, types: Sequence[DataType]) -> tuple[Any, ...]:
    """The values of a serialized partition BinaryRow in the project's value convention
    (TIMESTAMP/LTZ of precision 7..9 as exact ``int`` epoch nanoseconds, like predicate
    literals)."""
    plain = deserialize_binary_row(partition, types)
    if any(_is_nano_timestamp(t) for t in types):
        exact = deserialize_binary_row(partition, types, exact_timestamps=True)
        plain = [e if _is_nano_timestamp(t) else p for p, e, t in zip(plain, exact, types)]
    return tuple(plain)


def _is_nano_timestamp(t: DataType) -> bool:
    return (
        t.root in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ)
        and isinstance(t, AtomicType)
        and (t.precision or 0) > 6
    )


def partition_path(
    values: Sequence[Any],
    keys: Sequence[str],
    types: Sequence[DataType],
    default_name: str = DEFAULT_PARTITION_NAME,
    *,
    float_format: FloatFormat = "legacy",
) -> str:
    """``PartitionPathUtils.generatePartitionPath(computer.generatePartValues(row))`` without
    the trailing ``/``: ``"dt=2024-01-01/hr=5"``, ``""`` when unpartitioned.

    Raises:
        SchemaError: lengths differ, or a value does not fit its type.
        UnsupportedError: BINARY or nested partition columns.
    """
    if not len(values) == len(keys) == len(types):
        raise SchemaError(
            f"{len(values)} partition values for {len(keys)} keys and {len(types)} types"
        )
    return "/".join(
        escape_path_name(k)
        + "="
        + escape_path_name(partition_value_string(v, t, default_name, float_format=float_format))
        for v, k, t in zip(values, keys, types)
    )


def parse_partition_path(
    path: str,
    keys: Sequence[str],
    types: Sequence[DataType],
    default_name: str = DEFAULT_PARTITION_NAME,
) -> list[Any]:
    """Reverse of :func:`partition_path`: the Python values of ``k1=v1/k2=v2``.

    Leading and trailing ``/`` are ignored. DATE accepts days (``19723``) or ISO dates, TIME
    millis of day or ISO times, TIMESTAMP the ``LocalDateTime`` form (microseconds kept).

    Raises:
        SchemaError: the components do not match ``keys`` or a value cannot be parsed.
    """
    parts = [p for p in path.strip("/").split("/") if p] if path.strip("/") else []
    if len(parts) != len(keys) or len(types) != len(keys):
        raise SchemaError(f"partition path {path!r} does not match partition keys {list(keys)}")
    out: list[Any] = []
    for part, key, t in zip(parts, keys, types):
        name, eq, raw = part.rpartition("=")
        if not eq or not name or not raw or unescape_path_name(name) != key:
            raise SchemaError(f"partition path component {part!r} is not {key}=<value>")
        text = unescape_path_name(raw)
        out.append(None if text == default_name else _parse_value(text, t))
    return out


def _parse_value(text: str, t: DataType) -> Any:
    if not isinstance(t, AtomicType) or t.root in BINARY_ROOTS:
        raise UnsupportedError(f"partition column of type {t.sql()}")
    r = t.root
    try:
        if r in STRING_ROOTS:
            return text
        if r is TypeRoot.BOOLEAN:
            if text.lower() not in ("true", "false"):
                raise ValueError(text)
            return text.lower() == "true"
        if r in INTEGER_ROOTS:
            return int(text)
        if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
            return float(text)
        if r is TypeRoot.DECIMAL:
            return decimal.Decimal(text)
        if r is TypeRoot.DATE:
            if text.lstrip("-").isdigit():
                return dt.date(1970, 1, 1) + dt.timedelta(days=int(text))
            return dt.date.fromisoformat(text)
        if r is TypeRoot.TIME:
            if text.isdigit():
                secs, ms = divmod(int(text), 1000)
                return dt.time(secs // 3600, secs // 60 % 60, secs % 60, ms * 1000)
            return dt.time.fromisoformat(text)
        if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
            base, dot, frac = text.partition(".")
            value = dt.datetime.fromisoformat(base)
            if dot:
                value = value.replace(microsecond=int(frac[:6].ljust(6, "0")))
            return value.replace(tzinfo=dt.UTC) if r is TypeRoot.TIMESTAMP_LTZ else value
    except (ValueError, OverflowError, decimal.DecimalException) as e:
        raise SchemaError(f"cannot parse partition value {text!r} as {t}") from e
    raise UnsupportedError(f"partition column of type {t}")  # pragma: no cover
