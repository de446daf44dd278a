"""Random values of every atomic Paimon type (project value convention), shared by the
BinaryRow / bucket / partition tests and the Java cross-checks."""

from __future__ import annotations

import datetime as dt
import decimal
import random
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from paimon_core.spec.binary_row import (
    date_to_days,
    decimal_to_unscaled,
    time_to_millis,
    timestamp_to_millis_nanos,
)
from paimon_core.types import AtomicType, DataType, TypeRoot, parse_sql_type, to_arrow_type

#: every atomic type, with both compact and non-compact DECIMAL / TIMESTAMP forms
ALL_TYPES = [
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE",
    "DECIMAL(10, 2)", "DECIMAL(18, 0)", "DECIMAL(19, 4)", "DECIMAL(38, 10)", "DECIMAL(38, 0)",
    "CHAR(5)", "VARCHAR(20)", "STRING", "BINARY(4)", "VARBINARY(30)", "BYTES",
    "DATE", "TIME", "TIME(3)",
    "TIMESTAMP(0)", "TIMESTAMP(3)", "TIMESTAMP(4)", "TIMESTAMP(6)", "TIMESTAMP(9)",
    "TIMESTAMP_LTZ(3)", "TIMESTAMP_LTZ(6)", "TIMESTAMP_LTZ(9)",
]

_ALPHABET = "abcXYZ09 _-./=%:é中😀\t"
_EPOCH = dt.datetime(1970, 1, 1)


def parse(types: Sequence[str]) -> list[DataType]:
    return [parse_sql_type(t) for t in types]


def random_value(t: AtomicType, rnd: random.Random, null_rate: float = 0.1) -> Any:
    if rnd.random() < null_rate:
        return None
    r = t.root
    if r is TypeRoot.BOOLEAN:
        return rnd.random() < 0.5
    if r in (TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT):
        bits = {TypeRoot.TINYINT: 8, TypeRoot.SMALLINT: 16, TypeRoot.INT: 32,
                TypeRoot.BIGINT: 64}[r]
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return rnd.choice([lo, hi, 0, -1, 1, rnd.randint(lo, hi), rnd.randint(-100, 100)])
    if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        special = [float("nan"), -0.0, 0.0, float("inf"), float("-inf"), 1.0, -1.5]
        if rnd.random() < 0.3:
            v = rnd.choice(special)
        elif r is TypeRoot.DOUBLE:
            v = struct.unpack("<d", struct.pack("<Q", rnd.getrandbits(64)))[0]
        else:
            v = float(np.array(rnd.getrandbits(32), dtype=np.uint32).view(np.float32))
        if v != v:  # only the canonical NaN: Python floats do not keep float32 NaN payloads
            v = float("nan")
        return v
    if r is TypeRoot.DECIMAL:
        p, s = t.precision or 10, t.scale or 0
        digits = rnd.randint(1, p)
        unscaled = rnd.randint(0, 10**digits - 1) * rnd.choice([1, -1])
        return decimal.Decimal(f"{unscaled}E-{s}")
    if r in (TypeRoot.CHAR, TypeRoot.VARCHAR):
        n = rnd.choice([0, 1, 6, 7, 8, 9, rnd.randint(0, 30)])
        return "".join(rnd.choice(_ALPHABET) for _ in range(n))
    if r in (TypeRoot.BINARY, TypeRoot.VARBINARY):
        n = rnd.choice([0, 1, 7, 8, rnd.randint(0, 30)])
        return bytes(rnd.getrandbits(8) for _ in range(n))
    if r is TypeRoot.DATE:
        return dt.date(1970, 1, 1) + dt.timedelta(days=rnd.randint(-719_162, 2_932_896))
    if r is TypeRoot.TIME:
        ms = rnd.randint(0, 86_399_999)
        return dt.time(ms // 3_600_000, ms // 60_000 % 60, ms // 1000 % 60, ms % 1000 * 1000)
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        p = t.precision if t.precision is not None else 6
        if p > 6:  # arrow ns range; exact value as epoch nanos
            nanos = rnd.randint(-(2**63) + 1, 2**63 - 1)
            millis, nano = timestamp_to_millis_nanos(nanos, p, False)
            return millis * 1_000_000 + nano
        micros = rnd.randint(-62_135_596_800_000_000, 253_402_300_799_999_999)
        unit = 10 ** (6 - p)
        v = _EPOCH + dt.timedelta(microseconds=micros - micros % unit)
        return v.replace(tzinfo=dt.UTC) if r is TypeRoot.TIMESTAMP_LTZ else v
    raise AssertionError(t)


def random_rows(types: Sequence[DataType], n: int, seed: int, null_rate: float = 0.1
                ) -> list[list[Any]]:
    rnd = random.Random(seed)
    return [[random_value(t, rnd, null_rate) for t in types] for _ in range(n)]  # type: ignore[arg-type]


def arrow_column(values: Sequence[Any], t: DataType) -> pa.Array:
    """The Arrow column our readers would produce for these values."""
    return pa.array(list(values), type=to_arrow_type(t))


def java_value(v: Any, t: AtomicType) -> str:
    """A value in the BinaryRowOracle.java line protocol."""
    if v is None:
        return "\\N"
    r = t.root
    if r is TypeRoot.BOOLEAN:
        return "true" if v else "false"
    if r is TypeRoot.FLOAT:
        return f"{struct.unpack('<I', struct.pack('<f', v))[0]:08x}"
    if r is TypeRoot.DOUBLE:
        return f"{struct.unpack('<Q', struct.pack('<d', v))[0]:016x}"
    if r is TypeRoot.DECIMAL:
        return str(decimal_to_unscaled(v, t.precision or 10, t.scale or 0))
    if r in (TypeRoot.CHAR, TypeRoot.VARCHAR):
        return v.encode("utf-8").hex()
    if r in (TypeRoot.BINARY, TypeRoot.VARBINARY):
        return bytes(v).hex()
    if r is TypeRoot.DATE:
        return str(date_to_days(v))
    if r is TypeRoot.TIME:
        return str(time_to_millis(v))
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        p = t.precision if t.precision is not None else 6
        millis, nanos = timestamp_to_millis_nanos(v, p, r is TypeRoot.TIMESTAMP_LTZ)
        return f"{millis}:{nanos}"
    return str(int(v))
