"""Conforming user input to a table's schema before anything is written.

Mirrors what Java's ``TableWriteImpl`` gets for free from typed ``InternalRow``s (and what its
casts reject): every column of the table must be present, every value must fit its Paimon type
exactly. Nothing is rounded, truncated or re-interpreted silently:

* integers that overflow the column type, floats with a fraction into integer columns;
* decimals whose precision or scale does not fit (no rounding), floats that are not exactly the
  decimal they would become;
* naive timestamps into ``TIMESTAMP WITH LOCAL TIME ZONE`` and aware ones into ``TIMESTAMP``;
  timestamps / times finer than the column's precision;
* strings / bytes longer than ``CHAR(n)``/``VARCHAR(n)``/``BINARY(n)``/``VARBINARY(n)``;
* NULL in a NOT NULL column (primary-key columns always are), also inside nested values;
* nested ROW fields that are missing, extra or named differently;

all raise :class:`~paimon_core.errors.SchemaError` naming the column, the row and the value.
NaN and -0.0 are accepted as they are. Buckets given with the rows (:func:`conform_buckets`)
are checked the same way, and the table itself first (:func:`check_writable`).
"""

from __future__ import annotations

import decimal
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.errors import SchemaError, UnsupportedError
from paimon_core.layout import TableContext
from paimon_core.option_validation import check_deletion_vectors
from paimon_core.read import engines
from paimon_core.spec.option_enums import BucketMode
from paimon_core.spec.row_kind import SHORT_STRINGS, short_string_codes
from paimon_core.spec.schema import TableSchema
from paimon_core.types import (
    BINARY_ROOTS,
    MAX_LENGTH,
    STRING_ROOTS,
    ArrayType,
    AtomicType,
    DataType,
    MapType,
    MultisetType,
    RowType,
    TypeRoot,
    to_arrow_field,
    to_arrow_type,
)

__all__ = ["conform_input", "parse_row_kinds"]

_INT_TYPES = {
    TypeRoot.TINYINT: pa.int8(),
    TypeRoot.SMALLINT: pa.int16(),
    TypeRoot.INT: pa.int32(),
    TypeRoot.BIGINT: pa.int64(),
}
_UNIT_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def conform_input(
    data: pa.Table | pa.RecordBatch,
    schema: TableSchema,
    *,
    row_kind_column: str | None = None,
) -> tuple[pa.Table, np.ndarray | None]:
    """Select and safely cast ``data`` to the table's columns (mirrors the checks of Java's
    typed ``InternalRow`` writes).

    Args:
        data: the rows to write; columns are matched by name, in any order.
        schema: the table schema.
        row_kind_column: optional input column holding each row's kind (``+I``, ``-U``,
            ``+U``, ``-D`` strings or int codes 0..3); it is not a table column.

    Returns:
        The table in schema column order with exactly the Arrow types of
        :func:`paimon_core.types.to_arrow_type`, and the row kinds as an ``int8`` array (None
        when ``row_kind_column`` is None).

    Raises:
        SchemaError: a missing or extra column, or a value that does not fit (the message names
            the column, the row index and the value).
    """
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table):
        raise SchemaError(f"expected a pyarrow Table or RecordBatch, got {type(data).__name__}")
    names = data.column_names
    if len(set(names)) != len(names):
        dups = sorted({n for n in names if names.count(n) > 1})
        raise SchemaError(f"input has duplicate columns {dups}")
    wanted = schema.field_names
    missing = [n for n in wanted if n not in names]
    if missing:
        raise SchemaError(f"input lacks column(s) {missing} of the table (columns: {wanted})")
    if row_kind_column is not None and row_kind_column not in names:
        raise SchemaError(f"row kind column {row_kind_column!r} is not in the input")
    if row_kind_column is not None and row_kind_column in wanted:
        raise SchemaError(
            f"row kind column {row_kind_column!r} is a table column; use the table option "
            "'rowkind.field' for that"
        )
    extra = [n for n in names if n not in wanted and n != row_kind_column]
    if extra:
        raise SchemaError(f"input has column(s) {extra} that the table does not have")
    arrays = []
    for f in schema.fields:
        arrays.append(conform_column(data.column(f.name), f.type, f.name))
    arrow_schema = pa.schema([to_arrow_field(f.name, f.type) for f in schema.fields])
    out = pa.Table.from_arrays(arrays, schema=arrow_schema)
    kinds = None
    if row_kind_column is not None:
        kinds = parse_row_kinds(data.column(row_kind_column), row_kind_column)
    return out, kinds


def check_writable(context: TableContext) -> None:
    """Refuse a table this writer cannot produce correct files for.

    Raises:
        UnsupportedError: postpone buckets, deletion vectors with first-row or a
            full-compaction changelog,
            ``partition.legacy-name=false``, a ``bucket-function.type`` other than
            ``default``, or a merge engine / aggregate function not implemented.
        SchemaError: invalid merge engine options.
    """
    o = context.options
    if context.is_primary_key_table:
        engines.validate(context.schema, o)  # the merge engine and its options
        if o.deletion_vectors_enabled:
            check_deletion_vectors(o.changelog_producer.value, o.merge_engine.value)
    if context.bucket_mode is BucketMode.POSTPONE:
        raise UnsupportedError(f"bucket={context.num_buckets} (postpone) is not supported by "
                               "this writer")
    if not o.partition_legacy_name:
        raise UnsupportedError("partition.legacy-name=false is not supported (Paimon 0.9)")
    bf = o.bucket_function_type
    if bf != "default":
        raise UnsupportedError(f"bucket-function.type={bf!r} is not supported")


def conform_buckets(buckets: pa.Array | pa.ChunkedArray | np.ndarray, num_rows: int,
                    mode: BucketMode, num_buckets: int) -> np.ndarray:
    """The bucket of every row as computed upstream (the CDC decode hashes them already), as
    ``int64``: one integer per row in ``0..num_buckets-1``. Only the range is checked, not
    the hash (the caller computed them with :func:`paimon_core.bucket.bucket_ids`).

    Raises:
        UnsupportedError: a table whose buckets are not the bucket key's hash (``bucket``
            is not a count: dynamic buckets come from the table's index).
        SchemaError: not integers, nulls, a length other than ``num_rows``, or a bucket out
            of range (naming the row and the value).
    """
    if mode is not BucketMode.HASH_FIXED:
        raise UnsupportedError(f"buckets given with the rows need a fixed bucket count "
                               f"(bucket > 0); this table's bucket mode is {mode}")
    if not isinstance(buckets, np.ndarray):
        if buckets.null_count:
            raise SchemaError(f"buckets: {buckets.null_count} of them are null")
        buckets = buckets.to_numpy(zero_copy_only=False)
    if buckets.dtype.kind not in "iu":
        raise SchemaError(f"buckets: integers expected, not {buckets.dtype}")
    if len(buckets) != num_rows:
        raise SchemaError(f"buckets: {len(buckets)} given for {num_rows} rows")
    out = buckets.astype(np.int64, copy=False)
    bad = (out < 0) | (out >= num_buckets)
    if bool(bad.any()):
        i = int(np.argmax(bad))
        raise SchemaError(f"buckets: row {i} has bucket {int(out[i])}, outside "
                          f"0..{num_buckets - 1} (bucket={num_buckets})")
    return out


def parse_row_kinds(col: pa.ChunkedArray | pa.Array, name: str) -> np.ndarray:
    """Row kinds from ``+I``/``-U``/``+U``/``-D`` strings or integer codes 0..3 (``int8``).

    Raises:
        SchemaError: null, an unknown string, a code outside 0..3, or another type.
    """
    if isinstance(col, pa.Array):
        col = pa.chunked_array([col])
    t = col.type
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type)
        t = col.type
    if col.null_count:
        i = _first_true(col.is_null())
        raise SchemaError(f"row kind column {name!r} is null at row {i}")
    if _is_string(t):
        idx = short_string_codes(col)
        if idx.null_count:
            i = _first_true(idx.is_null())
            raise SchemaError(
                f"row kind column {name!r} has {_value(col, i)!r} at row {i}; expected one of "
                f"{list(SHORT_STRINGS)}"
            )
        return np.asarray(idx.to_numpy(), dtype=np.int8)
    if pa.types.is_integer(t):
        v = np.asarray(col.to_numpy(), dtype=np.int64)
        bad = (v < 0) | (v > 3)
        if bad.any():
            i = int(np.argmax(bad))
            raise SchemaError(f"row kind column {name!r} has code {int(v[i])} at row {i}; "
                              "expected 0..3 (+I, -U, +U, -D)")
        return v.astype(np.int8)
    raise SchemaError(f"row kind column {name!r} must hold strings or int codes, not {t}")


# ---------------------------------------------------------------------------------------------
# columns


def conform_column(col: pa.ChunkedArray | pa.Array, t: DataType, name: str) -> pa.ChunkedArray:
    """Cast one column to ``to_arrow_type(t)`` with the checks of :func:`conform_input`."""
    if isinstance(col, pa.Array):
        col = pa.chunked_array([col])
    target = to_arrow_type(t)
    chunks = []
    base = 0
    for chunk in col.chunks:
        chunks.append(_conform(chunk, t, name, base))
        base += len(chunk)
    out = pa.chunked_array(chunks, type=target)
    if not t.nullable and out.null_count:
        i = _first_true(out.is_null())
        raise SchemaError(f"column {name!r} is NOT NULL but row {i} is null")
    return out


def _conform(arr: pa.Array, t: DataType, name: str, base: int) -> pa.Array:
    """Conform one chunk; ``base`` is the chunk's first row index (for messages)."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if isinstance(t, AtomicType):
        return _atomic(arr, t, name, base)
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), to_arrow_type(t))
    if isinstance(t, ArrayType):
        return _list(arr, t, name, base)
    if isinstance(t, (MapType, MultisetType)):
        return _map(arr, t, name, base)
    if isinstance(t, RowType):
        return _row(arr, t, name, base)
    raise SchemaError(f"column {name!r}: unsupported type {t}")  # pragma: no cover


def _list(arr: pa.Array, t: ArrayType, name: str, base: int) -> pa.Array:
    if pa.types.is_large_list(arr.type) or pa.types.is_fixed_size_list(arr.type) or (
        pa.types.is_list_view(arr.type) or pa.types.is_large_list_view(arr.type)
    ):
        arr = arr.cast(pa.list_(arr.type.value_field))
    if not pa.types.is_list(arr.type):
        raise SchemaError(f"column {name!r} of type {t.sql()} cannot take Arrow {arr.type}")
    offsets, values = _children(arr)
    values = _conform(values, t.element, f"{name}[]", base)
    _check_nested_nulls(values, t.element, f"{name}[]")
    return pa.ListArray.from_arrays(
        offsets, values, type=to_arrow_type(t), mask=_mask(arr)
    )


def _map(arr: pa.Array, t: MapType | MultisetType, name: str, base: int) -> pa.Array:
    if not pa.types.is_map(arr.type):
        raise SchemaError(f"column {name!r} of type {t.sql()} cannot take Arrow {arr.type}")
    offsets, entries = _children(arr)
    if isinstance(t, MapType):
        kt, vt = t.key.with_nullable(False), t.value
    else:
        kt, vt = t.element.with_nullable(False), AtomicType(TypeRoot.INT, False)
    keys = _conform(entries.field(0), kt, f"{name}.key", base)
    items = _conform(entries.field(1), vt, f"{name}.value", base)
    _check_nested_nulls(keys, kt, f"{name}.key")
    _check_nested_nulls(items, vt, f"{name}.value")
    return pa.MapArray.from_arrays(offsets, keys, items, type=to_arrow_type(t), mask=_mask(arr))


def _row(arr: pa.Array, t: RowType, name: str, base: int) -> pa.Array:
    if not pa.types.is_struct(arr.type):
        raise SchemaError(f"column {name!r} of type {t.sql()} cannot take Arrow {arr.type}")
    have = [arr.type.field(i).name for i in range(arr.type.num_fields)]
    want = [f.name for f in t.fields]
    if sorted(have) != sorted(want) or len(set(have)) != len(have):
        raise SchemaError(f"column {name!r}: ROW fields {want} but the input has {have}")
    parent_valid = None if arr.null_count == 0 else pc.is_valid(arr)
    children = []
    for f in t.fields:
        child = _conform(arr.field(have.index(f.name)), f.type, f"{name}.{f.name}", base)
        if not f.type.nullable and child.null_count:
            nulls = child.is_null()
            if parent_valid is not None:
                nulls = pc.and_(nulls, parent_valid)
            if pc.any(nulls).as_py():
                i = _first_true(nulls)
                raise SchemaError(f"column {name!r}: field {f.name!r} is NOT NULL but is null "
                                  f"at {_where(name, base, i)}")
        children.append(child)
    fields = [to_arrow_field(f.name, f.type) for f in t.fields]
    return pa.StructArray.from_arrays(children, fields=fields, mask=_mask(arr))


def _children(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Zero-based offsets and the child values actually covered by a (sliced) list/map."""
    off = arr.offsets.to_numpy()
    start, end = int(off[0]), int(off[-1])
    return pa.array(off - start, pa.int32()), arr.values.slice(start, end - start)


def _mask(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


def _check_nested_nulls(values: pa.Array, t: DataType, name: str) -> None:
    if not t.nullable and values.null_count:
        raise SchemaError(f"column {name!r} is NOT NULL but holds a null element")


# ---------------------------------------------------------------------------------------------
# atomic values


def _atomic(arr: pa.Array, t: AtomicType, name: str, base: int) -> pa.Array:
    target = to_arrow_type(t)
    src = arr.type
    r = t.root
    if pa.types.is_null(src):
        return pa.nulls(len(arr), target)
    if r is TypeRoot.BOOLEAN:
        _require(pa.types.is_boolean(src), arr, t, name)
        return arr
    if r in _INT_TYPES:
        _require(_is_number(src), arr, t, name)
        return _safe_cast(arr, target, t, name, base)
    if r in (TypeRoot.FLOAT, TypeRoot.DOUBLE):
        _require(_is_number(src), arr, t, name)
        return _safe_cast(arr, target, t, name, base)
    if r is TypeRoot.DECIMAL:
        return _decimal(arr, t, name, base)
    if r in STRING_ROOTS:
        _require(_is_string(src), arr, t, name)
        out = _safe_cast(arr, target, t, name, base)
        if t.length is not None and t.length < MAX_LENGTH:
            _check_length(out, pc.utf8_length(out), t, name, base, "characters")
        return out
    if r in BINARY_ROOTS:
        _require(_is_binary(src), arr, t, name)
        out = _safe_cast(arr, target, t, name, base)
        if t.length is not None and t.length < MAX_LENGTH:
            _check_length(out, pc.binary_length(out), t, name, base, "bytes")
        return out
    if r is TypeRoot.DATE:
        _require(pa.types.is_date(src), arr, t, name)
        return _safe_cast(arr, target, t, name, base)
    if r is TypeRoot.TIME:
        _require(pa.types.is_time(src), arr, t, name)
        out = _safe_cast(arr, target, t, name, base)
        _check_precision(out, t, "ms", name, base)
        return out
    if r in (TypeRoot.TIMESTAMP, TypeRoot.TIMESTAMP_LTZ):
        return _timestamp(arr, t, name, base)
    raise SchemaError(f"column {name!r}: unsupported type {t}")  # pragma: no cover


def _timestamp(arr: pa.Array, t: AtomicType, name: str, base: int) -> pa.Array:
    src = arr.type
    _require(pa.types.is_timestamp(src), arr, t, name)
    ltz = t.root is TypeRoot.TIMESTAMP_LTZ
    if ltz and src.tz is None:
        raise SchemaError(
            f"column {name!r} is {t.sql()} (an instant) but the input timestamps have no time "
            "zone; localize them (e.g. to UTC) first"
        )
    if not ltz and src.tz is not None:
        raise SchemaError(
            f"column {name!r} is {t.sql()} (a wall-clock time) but the input timestamps carry "
            f"the time zone {src.tz!r}; convert them to naive local times first"
        )
    if ltz and src.tz != "UTC":
        arr = arr.cast(pa.timestamp(src.unit, tz="UTC"))  # same instants, new label
    out = _safe_cast(arr, to_arrow_type(t), t, name, base)
    _check_precision(out, t, out.type.unit, name, base)
    return out


def _check_precision(arr: pa.Array, t: AtomicType, unit: str, name: str, base: int) -> None:
    """Values must be multiples of the column's precision inside the Arrow unit (e.g.
    TIMESTAMP(2) is stored in milliseconds: every value a multiple of 10 ms)."""
    p = t.precision if t.precision is not None else 0
    digits = _UNIT_DIGITS[unit]
    if p >= digits or arr.null_count == len(arr):
        return
    factor = 10 ** (digits - p)
    ints = arr.view(pa.int64() if pa.types.is_timestamp(arr.type) else pa.int32())
    v = np.asarray(pc.fill_null(ints, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    bad = v % factor != 0
    if bad.any():
        i = int(np.argmax(bad))
        raise SchemaError(
            f"column {name!r} is {t.sql()} but {_where(name, base, i)} holds {_value(arr, i)!r}, "
            f"which is finer than precision {p} (it would lose data)"
        )


def _decimal(arr: pa.Array, t: AtomicType, name: str, base: int) -> pa.Array:
    target = to_arrow_type(t)
    src = arr.type
    if pa.types.is_decimal(src) or _is_string(src):
        return _safe_cast(arr, target, t, name, base)
    if pa.types.is_integer(src):
        wide = arr.cast(pa.decimal128(38, 0))
        return _safe_cast(wide, target, t, name, base, shown=arr)
    if pa.types.is_floating(src):
        f64 = arr.cast(pa.float64())
        special = pc.fill_null(pc.invert(pc.is_finite(f64)), False)
        if pc.any(special).as_py():
            i = _first_true(special)
            raise SchemaError(f"column {name!r} is {t.sql()} but {_where(name, base, i)} holds "
                              f"{_value(arr, i)!r}")
        try:
            out = f64.cast(target, safe=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            _raise_first_failure(arr, lambda a: a.cast(pa.float64()).cast(target, safe=False),
                                 t, name, base, e)
            raise  # pragma: no cover
        back = out.cast(pa.float64())
        differs = pc.fill_null(pc.not_equal(back, f64), False)
        if pc.any(differs).as_py():
            i = _first_true(differs)
            raise SchemaError(
                f"column {name!r} is {t.sql()} but {_where(name, base, i)} holds the float "
                f"{_value(arr, i)!r}, which is not exactly {decimal.Decimal(str(out[i].as_py()))} "
                "(no silent rounding: pass decimal.Decimal or strings)"
            )
        return out
    raise SchemaError(f"column {name!r} of type {t.sql()} cannot take Arrow {src}")


def _check_length(
    arr: pa.Array, lengths: pa.Array, t: AtomicType, name: str, base: int, unit: str
) -> None:
    n = t.length or 0
    too_long = pc.fill_null(pc.greater(lengths, n), False)
    if pc.any(too_long).as_py():
        i = _first_true(too_long)
        v = _value(arr, i)
        shown = v if len(repr(v)) < 80 else repr(v)[:77] + "..."
        raise SchemaError(
            f"column {name!r} is {t.sql()} but {_where(name, base, i)} holds {shown!r} of "
            f"{lengths[i].as_py()} {unit}"
        )


def _safe_cast(
    arr: pa.Array,
    target: pa.DataType,
    t: AtomicType,
    name: str,
    base: int,
    *,
    shown: pa.Array | None = None,
) -> pa.Array:
    if arr.type == target:
        return arr
    try:
        return arr.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        _raise_first_failure(arr, lambda a: a.cast(target, safe=True), t, name, base, e,
                             shown=shown)
        raise  # pragma: no cover


def _raise_first_failure(
    arr: pa.Array,
    cast: Callable[[pa.Array], pa.Array],
    t: AtomicType,
    name: str,
    base: int,
    error: Exception,
    *,
    shown: pa.Array | None = None,
) -> None:
    """Find the first row whose cast fails (bisection over slices) and raise a SchemaError
    naming it."""
    lo, hi = 0, len(arr)
    try:
        cast(arr.slice(0, 1)) if len(arr) else None
        first_ok = True
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        first_ok = False
    if not first_ok or isinstance(error, (pa.ArrowNotImplementedError, pa.ArrowTypeError)):
        if isinstance(error, (pa.ArrowNotImplementedError, pa.ArrowTypeError)):
            raise SchemaError(
                f"column {name!r} of type {t.sql()} cannot take Arrow {arr.type}: {error}"
            ) from error
        hi = 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            cast(arr.slice(lo, mid - lo))
            lo = mid
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            hi = mid
    i = lo
    value = _value(shown if shown is not None else arr, i)
    raise SchemaError(
        f"column {name!r} is {t.sql()} but {_where(name, base, i)} holds {value!r}, which does "
        f"not fit ({error})"
    ) from error


def _where(name: str, base: int, i: int) -> str:
    """``row N`` for top-level (and ROW field) values; inside arrays and maps the index
    counts elements of the column's flattened values."""
    if "[]" in name or ".key" in name or ".value" in name:
        return f"element {i}"
    return f"row {base + i}"


def _require(ok: bool, arr: pa.Array, t: AtomicType, name: str) -> None:
    if not ok:
        raise SchemaError(f"column {name!r} of type {t.sql()} cannot take Arrow {arr.type}")


def _is_number(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


def _is_string(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)
    )


def _is_binary(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_binary_view(t)
    )


def _first_true(mask: pa.Array | pa.ChunkedArray) -> int:
    m = np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)
    return int(np.argmax(m))


def _value(arr: pa.Array | pa.ChunkedArray, i: int) -> object:
    try:
        return arr[i].as_py()
    except (ValueError, OverflowError, pa.ArrowException):
        return str(arr[i])
