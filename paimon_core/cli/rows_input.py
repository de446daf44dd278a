"""Input rows for ``paimon write``: JSON lines / a JSON array / CSV in the oracle's encoding
(``shared/oracle/README.md`` §2.2), or Parquet, turned into an Arrow table of a table's schema.

JSON value encoding, per Paimon type: BOOLEAN ``true``/``false``; integers; FLOAT/DOUBLE numbers
or ``"NaN"``/``"Infinity"``/``"-Infinity"``; DECIMAL strings or numbers (parsed exactly,
rounded HALF_UP to the scale; a value that does not fit is an error); strings; BINARY base64;
DATE ``"YYYY-MM-DD"``; TIME ``"HH:MM:SS[.fff]"``; TIMESTAMP ``"YYYY-MM-DD HH:MM:SS[.f]"`` (or
``T``; truncated to the precision); TIMESTAMP_LTZ the same with ``Z``/``+hh:mm`` honoured and
naive values taken as UTC; ARRAY/MULTISET lists; MAP a JSON object or a list of ``[k, v]``
pairs; ROW an object (by field name) or a positional list; ``null``. CSV cells are text in the
same encoding (nested values as JSON text, an empty cell is null).
"""

from __future__ import annotations

import base64
import binascii
import csv
import datetime as dt
import decimal
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from paimon_core.errors import SchemaError
from paimon_core.scan.predicate_literal import text_timestamp_nanos
from paimon_core.spec.row_kind import RowKind
from paimon_core.spec.schema import TableSchema
from paimon_core.types import (
    ArrayType,
    AtomicType,
    DataType,
    MapType,
    MultisetType,
    RowType,
    TypeRoot,
    timestamp_unit,
    to_arrow_type,
)

__all__ = ["load_input", "rows_to_arrow"]

_DEC_CTX = decimal.Context(prec=80, rounding=decimal.ROUND_HALF_UP, Emin=-999999, Emax=999999)
_TIME_RE = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?$")
_EPOCH = dt.date(1970, 1, 1)
_UNIT_NANOS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


class _JsonNumber(float):
    """A JSON number keeping its source text (exact DECIMAL input beyond float precision)."""

    text: str

    def __new__(cls, text: str) -> _JsonNumber:
        self = float.__new__(cls, text)
        self.text = text
        return self


def load_input(path: str) -> tuple[pa.Table | list[dict[str, Any]], bool]:
    """Rows of ``path``: a Parquet file as an Arrow table; ``.jsonl``, ``.json`` (array or
    lines) and ``.csv`` as a list of dicts of JSON-encoded values. The flag says whether the
    values are CSV text cells (pass it to :func:`rows_to_arrow` as ``text_cells``).

    Raises:
        SchemaError: unreadable or malformed input (the message names file and line).
    """
    p = Path(path)
    try:
        if p.suffix.lower() == ".parquet":
            return pq.read_table(p), False
        if p.suffix.lower() == ".csv":
            with p.open(encoding="utf-8", newline="") as f:
                header = next(csv.reader(f), [])
            table = pacsv.read_csv(p, convert_options=pacsv.ConvertOptions(
                column_types={n: pa.string() for n in header},
                strings_can_be_null=True, null_values=[""]))
            return table.to_pylist(), True
        text = p.read_text(encoding="utf-8")
    except (OSError, pa.ArrowInvalid, UnicodeDecodeError, csv.Error) as e:
        raise SchemaError(f"cannot read input {path}: {e}") from e
    if p.suffix.lower() == ".json" and text.lstrip().startswith("["):
        try:
            rows = json.loads(text, parse_float=_JsonNumber)
        except json.JSONDecodeError as e:
            raise SchemaError(f"{path}: bad JSON: {e}") from e
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise SchemaError(f"{path}: expected a JSON array of objects")
        return rows, False
    out = []
    for ln, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            row = json.loads(line, parse_float=_JsonNumber)
        except json.JSONDecodeError as e:
            raise SchemaError(f"{path}:{ln}: bad JSON: {e}") from e
        if not isinstance(row, dict):
            raise SchemaError(f"{path}:{ln}: expected a JSON object")
        out.append(row)
    return out, False


def rows_to_arrow(
    rows: Sequence[dict[str, Any]], schema: TableSchema, *, kind_column: str | None = None,
    text_cells: bool = False,
) -> pa.Table:
    """Convert JSON-decoded rows to an Arrow table with exactly the table's columns (missing
    keys are null), plus ``kind_column`` (strings, null/missing = ``+I``) when given.

    Args:
        rows: the rows.
        schema: the table schema.
        kind_column: the input key holding each row's kind.
        text_cells: values are CSV text (numbers, booleans and nested values are parsed).

    Raises:
        SchemaError: an unknown column or a value that cannot be converted (row and column
            are named).
    """
    names = set(schema.field_names)
    for i, r in enumerate(rows):
        extra = [k for k in r if k not in names and k != kind_column]
        if extra:
            raise SchemaError(f"row {i}: unknown column(s) {extra} (columns: {schema.field_names})")
    arrays = []
    for f in schema.fields:
        conv = _converter(f.type, text_cells)
        values = []
        for i, r in enumerate(rows):
            try:
                values.append(conv(r.get(f.name)))
            except (ValueError, TypeError, ArithmeticError, binascii.Error, SchemaError) as e:
                raise SchemaError(
                    f"row {i}, column {f.name!r} ({f.type.sql()}): cannot convert "
                    f"{r.get(f.name)!r}: {e}"
                ) from e
        try:
            arrays.append(pa.array(values, type=to_arrow_type(f.type)))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
            raise SchemaError(f"column {f.name!r} ({f.type.sql()}): {e}") from e
    out = pa.Table.from_arrays(arrays, names=schema.field_names)
    if kind_column is not None:
        kinds = [r.get(kind_column) for r in rows]
        out = out.append_column(kind_column, pa.array(
            [RowKind.INSERT.short_string if k is None else str(k) for k in kinds], pa.string()))
    return out


Conv = Callable[[Any], Any]


def _converter(t: DataType, text: bool) -> Conv:
    inner = _build(t, text)

    def conv(v: Any) -> Any:
        return None if v is None else inner(v)

    return conv


def _build(t: DataType, text: bool) -> Conv:
    if isinstance(t, (ArrayType, MultisetType)):
        el = _converter(t.element, False)

        def seq(v: Any) -> Any:
            v = _nested(v, text)
            if not isinstance(v, list):
                raise TypeError("expected a list")
            items = [el(x) for x in v]
            if isinstance(t, ArrayType):
                return items
            counts: dict[Any, int] = {}
            for x in items:
                counts[x] = counts.get(x, 0) + 1
            return list(counts.items())

        return seq
    if isinstance(t, MapType):
        key_conv = _converter(t.key, False)
        val_conv = _converter(t.value, False)
        parse_keys = isinstance(t.key, AtomicType) and t.key.root in (
            TypeRoot.BOOLEAN, TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT,
            TypeRoot.FLOAT, TypeRoot.DOUBLE)

        def mapping(v: Any) -> Any:
            v = _nested(v, text)
            if isinstance(v, dict):
                pairs = [(json.loads(k) if parse_keys else k, x) for k, x in v.items()]
            elif isinstance(v, list) and all(isinstance(p, list) and len(p) == 2 for p in v):
                pairs = [(p[0], p[1]) for p in v]
            else:
                raise TypeError("expected an object or a list of [key, value] pairs")
            return [(key_conv(k), val_conv(x)) for k, x in pairs]

        return mapping
    if isinstance(t, RowType):
        convs = [(f.name, _converter(f.type, False)) for f in t.fields]

        def row(v: Any) -> Any:
            v = _nested(v, text)
            if isinstance(v, dict):
                unknown = [k for k in v if k not in {n for n, _ in convs}]
                if unknown:
                    raise TypeError(f"unknown nested field(s) {unknown}")
                return {n: c(v.get(n)) for n, c in convs}
            if isinstance(v, list) and len(v) == len(convs):
                return {n: c(x) for (n, c), x in zip(convs, v)}
            raise TypeError(f"expected an object or a list of {len(convs)} values")

        return row
    return _atomic(t, text)


def _nested(v: Any, text: bool) -> Any:
    return json.loads(v, parse_float=_JsonNumber) if text and isinstance(v, str) else v


def _atomic(t: AtomicType, text: bool) -> Conv:
    r = t.root
    if r is TypeRoot.BOOLEAN:
        def boolean(v: Any) -> bool:
            if isinstance(v, str):
                if v.strip().lower() not in ("true", "false"):
                    raise ValueError("expected true or false")
                return v.strip().lower() == "true"
            if not isinstance(v, bool):
                raise TypeError("expected a boolean")
            return v
        return boolean
    if r in (TypeRoot.TINYINT, TypeRoot.SMALLINT, TypeRoot.INT, TypeRoot.BIGINT):
        def integer(v: Any) -> int:
            if isinstance(v, bool):
                raise TypeError("expected an integer")
            if isinstance(v, float):
                if not v.is_integer():
                    raise ValueError("not an integer")
                return int(v)
            return int(v.strip()) if isinstance(v, str) else int(v)
        return integer
    if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        return _float
    if r is TypeRoot.DECIMAL:
        assert t.precision is not None and t.scale is not None
        return _decimal(t.precision, t.scale)
    if r in (TypeRoot.CHAR, TypeRoot.VARCHAR):
        return lambda v: v if isinstance(v, str) else json.dumps(v)
    if r in (TypeRoot.BINARY, TypeRoot.VARBINARY):
        return lambda v: v if isinstance(v, bytes) else base64.b64decode(v, validate=True)
    if r is TypeRoot.DATE:
        def date(v: Any) -> int:
            if isinstance(v, int) and not isinstance(v, bool):
                return v
            return (dt.date.fromisoformat(str(v).strip()[:10]) - _EPOCH).days
        return date
    if r is TypeRoot.TIME:
        p = min(t.precision or 0, 3)
        return lambda v: _time_millis(v, p)
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        assert t.precision is not None
        unit = _UNIT_NANOS[timestamp_unit(t.precision)]
        trunc = 10 ** (9 - t.precision)
        return lambda v: (_ts_nanos(v) // trunc * trunc) // unit
    raise SchemaError(f"type {t.sql()} is not supported as input")  # pragma: no cover


def _float(v: Any) -> float:
    if isinstance(v, str):
        s = v.strip()
        special = {"nan": "nan", "infinity": "inf", "+infinity": "inf", "-infinity": "-inf",
                   "inf": "inf", "-inf": "-inf"}
        return float(special.get(s.lower(), s))
    if isinstance(v, bool):
        raise TypeError("expected a number")
    return float(v)


def _decimal(precision: int, scale: int) -> Conv:
    quantum = decimal.Decimal(1).scaleb(-scale, _DEC_CTX)

    def conv(v: Any) -> decimal.Decimal:
        if isinstance(v, bool):
            raise TypeError("expected a decimal")
        text = v.text if isinstance(v, _JsonNumber) else str(v).strip()
        try:
            d = decimal.Decimal(text)
        except decimal.InvalidOperation as e:
            raise ValueError("not a decimal") from e
        if not d.is_finite():
            raise ValueError("not a finite decimal")
        q = d.quantize(quantum, context=_DEC_CTX)
        if q and q.adjusted() >= precision - scale:
            raise ValueError(f"does not fit DECIMAL({precision}, {scale})")
        return q

    return conv


def _time_millis(v: Any, p: int) -> int:
    if isinstance(v, int) and not isinstance(v, bool):
        ms = int(v)
    else:
        m = _TIME_RE.match(str(v).strip())
        if not m:
            raise ValueError("expected HH:MM:SS[.fff]")
        hh, mi, ss, frac = m.groups()
        ms = ((int(hh) * 60 + int(mi)) * 60 + int(ss or 0)) * 1000 + int(
            (frac or "0").ljust(3, "0")[:3])
    step: int = 10 ** (3 - p)
    return ms - ms % step


def _ts_nanos(v: Any) -> int:
    """Epoch nanos of a timestamp text: wall clock for naive values, the UTC instant when an
    offset is given (the oracle's ``_ts_to_nanos``; the same parser as filter literals)."""
    if isinstance(v, int) and not isinstance(v, bool):
        raise ValueError("integer timestamps are ambiguous; use an ISO string")
    return text_timestamp_nanos(str(v))
