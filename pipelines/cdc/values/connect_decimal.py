"""Kafka Connect ``Decimal`` values (Debezium's default ``decimal.handling.mode=precise``:
base64 of the big-endian two's-complement unscaled value, the scale in the field's schema)
decoded column-wise with numpy instead of one Python call per value: base64 by a lookup
table over a fixed-width byte matrix, the bytes into int64, the scale fitted to the column's
by integer arithmetic, the result written straight into Arrow ``decimal128`` buffers. It
covers values of at most 8 bytes (18 digits) in canonical padded base64; any other column
returns None and the caller decodes it value by value, with the same results."""

from __future__ import annotations

import base64
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["connect_decimal_values", "connect_unscaled", "fit_decimal"]

_WIDTH = 12  # base64 characters of at most 9 bytes
_LUT = np.full(256, 255, np.uint8)
for _i, _c in enumerate(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"):
    _LUT[_c] = _i
_PAD = ord("=")
_POW10 = [10 ** k for k in range(19)]


def connect_decimal_values(b64: pa.Array, scales: pa.Array, target: pa.DataType
                           ) -> pa.Array | None:
    """The values of ``b64`` (base64 text, no NULLs) with their ``scales`` (the schema's
    ``scale`` parameter as text) in ``target`` (``decimal128(p, s)``): NULL where a value
    does not fit exactly (more than ``p`` digits at scale ``s``, or digits beyond ``s``).
    None when some value is outside the fast path (not canonical base64, more than 8 bytes,
    a scale that is no small integer, a value that would leave int64 when scaled up)."""
    if not pa.types.is_decimal128(target) or b64.null_count or scales.null_count:
        return None
    n = len(b64)
    if n == 0:
        return None
    if not (pa.types.is_string(b64.type) and pa.types.is_string(scales.type)):
        return None
    try:
        es = pc.cast(scales, pa.int64()).to_numpy()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if es.min() < 0 or es.max() > 18:
        return None
    lengths = pc.binary_length(b64).to_numpy(zero_copy_only=False).astype(np.int64)
    if lengths.min() < 4 or lengths.max() > _WIDTH or bool((lengths % 4).any()):
        return None
    offsets = np.frombuffer(b64.buffers()[1], np.int32, n + 1, b64.offset * 4).astype(np.int64)
    data = np.frombuffer(b64.buffers()[2], np.uint8)
    cols = np.arange(_WIDTH, dtype=np.int64)
    inside = cols[None, :] < lengths[:, None]
    idx = np.minimum(offsets[:-1, None] + cols[None, :], len(data) - 1)
    chars = np.where(inside, data[idx], ord("A"))
    pads = (chars == _PAD) & inside
    npad = pads.sum(axis=1)
    # '=' only as the last one or two characters ("x=" or "=="), never "=x"
    if bool(npad.max() > 2) or bool((pads & (cols[None, :] < (lengths - npad)[:, None])).any()):
        return None
    sextets = _LUT[np.where(pads, ord("A"), chars)]
    if bool((sextets == 255).any()):
        return None
    groups = sextets.reshape(n, _WIDTH // 4, 4).astype(np.uint32)
    word = (groups[..., 0] << 18) | (groups[..., 1] << 12) | (groups[..., 2] << 6) | groups[..., 3]
    raw = np.stack([(word >> 16) & 255, (word >> 8) & 255, word & 255], axis=-1)
    raw = raw.reshape(n, _WIDTH // 4 * 3).astype(np.uint8)
    nbytes = lengths // 4 * 3 - npad
    if nbytes.min() < 1 or nbytes.max() > 8:
        return None
    # big-endian unsigned value of the first nbytes bytes, then two's complement
    value = np.zeros(n, np.uint64)
    for k in range(8):
        take = k < nbytes
        value = np.where(take, (value << np.uint64(8)) | raw[:, k].astype(np.uint64), value)
    signed = value.view(np.int64)
    negative = (raw[:, 0] & 0x80) != 0
    short = nbytes < 8
    if bool((negative & short).any()):
        span = np.left_shift(np.int64(1), (8 * nbytes[negative & short]).astype(np.int64))
        signed = signed.copy()
        signed[negative & short] -= span
    p, s = target.precision, target.scale
    diff = s - es
    up = np.maximum(diff, 0)
    down = np.maximum(-diff, 0)
    if bool((up > 18).any()) or bool((down > 18).any()):
        return None
    pow_up = np.array(_POW10, np.int64)[up]
    pow_down = np.array(_POW10, np.int64)[down]
    limit = np.iinfo(np.int64).max // pow_up
    if bool((np.abs(signed) > limit).any()):
        return None
    exact = signed % pow_down == 0
    scaled = np.where(diff >= 0, signed * pow_up, signed // pow_down)
    fits = exact & ((np.abs(scaled) < _POW10[p]) if p <= 18 else True)
    words = np.empty((n, 2), np.int64)
    words[:, 0] = scaled
    words[:, 1] = scaled >> 63
    validity = pa.array(fits).buffers()[1] if not bool(fits.all()) else None
    return pa.Array.from_buffers(target, n, [validity, pa.py_buffer(words.tobytes())],
                                 null_count=int((~fits).sum()))


def fit_decimal(v: decimal.Decimal, precision: int, scale: int) -> decimal.Decimal:
    """``v`` at ``scale`` if that is exact and it has at most ``precision`` digits."""
    ctx = decimal.Context(prec=200, traps=[decimal.Inexact, decimal.InvalidOperation])
    q = v.quantize(decimal.Decimal(1).scaleb(-scale, ctx), context=ctx)
    if q.adjusted() >= precision - scale:
        raise ValueError(f"{v} has more than {precision - scale} integer digits")
    return q


def connect_unscaled(b64: str, scale: int) -> decimal.Decimal:
    """Kafka Connect's decimal: base64 of the big-endian two's complement unscaled value."""
    raw = base64.b64decode(b64, validate=True)
    if not raw:
        raise ValueError("no bytes")
    return decimal.Decimal(f"{int.from_bytes(raw, 'big', signed=True)}E-{int(scale)}")
