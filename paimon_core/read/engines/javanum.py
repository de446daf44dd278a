"""Scalar arithmetic with Java semantics, as Paimon's ``Field*Agg`` classes compute it.

* integers wrap around at their width (``(byte) (a + b)``, ``Math`` is not used), integer
  division truncates toward zero and throws on a zero divisor;
* ``DECIMAL(p, s)`` results go through ``Decimal.fromBigDecimal(bd, p, s)``: rounded HALF_UP
  to the scale, **null** when they need more than ``p`` digits (``DecimalUtils.add`` /
  ``subtract`` first try exact ``long`` arithmetic for p <= 18, which keeps a result of more
  than ``p`` digits as long as it fits a long: this module refuses such a value, Arrow
  cannot hold it);
* ``Float.compare`` / ``Double.compare`` order: -0.0 < 0.0, every NaN equal and greater than
  +Infinity.
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

import numpy as np

from paimon_core.errors import PaimonError

__all__ = [
    "DECIMAL_CONTEXT",
    "decimal_divide",
    "float_order_key",
    "java_decimal",
    "java_float_key",
    "wrap_int",
]

#: exact for every sum/product/quotient of two DECIMAL(38) values
DECIMAL_CONTEXT = decimal.Context(prec=400, rounding=decimal.ROUND_HALF_UP)
_LONG_MAX = 2**63 - 1


def wrap_int(value: int, bits: int) -> int:
    """``value`` as a Java signed integer of ``bits`` bits (two's complement wrap)."""
    m = value & ((1 << bits) - 1)
    return m - (1 << bits) if m >> (bits - 1) else m


def _digits(unscaled: int) -> int:
    return len(str(abs(unscaled))) if unscaled else 1


def java_decimal(
    value: decimal.Decimal, precision: int, scale: int, *, exact_long: bool = False
) -> decimal.Decimal | None:
    """``Decimal.fromBigDecimal(value, precision, scale)``: HALF_UP to ``scale``, None when
    more than ``precision`` digits are needed. ``exact_long``: the value comes from the
    compact (p <= 18) ``long`` path of ``DecimalUtils.add/subtract``, where Java only checks
    for a ``long`` overflow."""
    q = value.quantize(decimal.Decimal(1).scaleb(-scale), context=DECIMAL_CONTEXT)
    unscaled = int(q.scaleb(scale, context=DECIMAL_CONTEXT))
    if _digits(unscaled) <= precision:
        return q
    if exact_long and precision <= 18 and abs(unscaled) <= _LONG_MAX:
        raise PaimonError(
            f"DECIMAL({precision}, {scale}) aggregation result {q} has more than "
            f"{precision} digits (Java 0.9 would keep this out-of-precision value)"
        )
    return None


def decimal_divide(a: decimal.Decimal, b: decimal.Decimal) -> decimal.Decimal:
    """``BigDecimal.divide(BigDecimal)``: the exact quotient, an error when it does not
    terminate or the divisor is zero."""
    if b == 0:
        raise PaimonError("aggregate retraction: division by zero (Java ArithmeticException)")
    q = Fraction(a) / Fraction(b)
    den = q.denominator
    for p in (2, 5):
        while den % p == 0:
            den //= p
    if den != 1:
        raise PaimonError(
            f"aggregate retraction: {a} / {b} has a non-terminating decimal expansion "
            "(Java ArithmeticException)"
        )
    return DECIMAL_CONTEXT.divide(decimal.Decimal(q.numerator), decimal.Decimal(q.denominator))


def float_order_key(values: np.ndarray) -> np.ndarray:
    """Integers ordered like ``Float.compare`` / ``Double.compare`` order the floats."""
    if values.dtype == np.float32:
        bits = values.view(np.int32).astype(np.int64)
        nan_bits = 0x7FC00000
        flip = 0x7FFFFFFF
    else:
        bits = values.astype(np.float64).view(np.int64).copy()
        nan_bits = 0x7FF8000000000000
        flip = 0x7FFFFFFFFFFFFFFF
    bits = np.where(np.isnan(values), nan_bits, bits)
    return np.where(bits < 0, bits ^ flip, bits)


def java_float_key(value: float) -> tuple[int, float, float]:
    """A sort key of one float in ``Double.compare`` order (for row-at-a-time code)."""
    if math.isnan(value):
        return (1, 0.0, 0.0)
    return (0, value, math.copysign(1.0, value))
