"""conform_input: every rejection names the column, row and value; nothing is written on error."""

from __future__ import annotations

import datetime as dt
import decimal
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import SchemaError
from paimon_core.schema_builder import Schema
from paimon_core.spec.schema import TableSchema
from paimon_core.write.input import conform_input, parse_row_kinds

D = decimal.Decimal
UTC = dt.UTC

COLUMNS = [
    ("id", "INT"),
    ("big", "BIGINT"),
    ("dec", "DECIMAL(5, 2)"),
    ("dec38", "DECIMAL(38, 10)"),
    ("c", "CHAR(3)"),
    ("vc", "VARCHAR(4)"),
    ("bin", "BINARY(2)"),
    ("ts", "TIMESTAMP(3)"),
    ("ts2", "TIMESTAMP(2)"),
    ("ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("tm", "TIME(0)"),
    ("f", "DOUBLE"),
    ("arr", "ARRAY<INT NOT NULL>"),
    ("row", "ROW<x INT NOT NULL, y STRING>"),
]


def schema() -> TableSchema:
    return Schema.of(COLUMNS, primary_keys=["id"], options={"bucket": "1"}).to_table_schema()


def good(**over: Any) -> pa.Table:
    cols: dict[str, Any] = {
        "id": pa.array([1, 2], pa.int64()),
        "big": pa.array([1, -(2**63)], pa.int64()),
        "dec": pa.array([D("1.5"), D("-999.99")]),
        "dec38": pa.array([D("1234567890123456789012345678.0123456789"), None]),
        "c": pa.array(["abc", "é中😀"]),
        "vc": pa.array(["", None]),
        "bin": pa.array([b"\x00\xff", b""]),
        "ts": pa.array([dt.datetime(2024, 1, 1, 1, 2, 3, 456000), None], pa.timestamp("us")),
        "ts2": pa.array([dt.datetime(2024, 1, 1, 0, 0, 0, 120000), None], pa.timestamp("ms")),
        "ltz": pa.array([dt.datetime(2024, 1, 1, tzinfo=UTC), None], pa.timestamp("us", "UTC")),
        "tm": pa.array([dt.time(1, 2, 3), None], pa.time64("us")),
        "f": pa.array([float("nan"), -0.0]),
        "arr": pa.array([[1, 2], None]),
        "row": pa.array([{"y": "a", "x": 1}, None]),
    }
    cols.update(over)
    return pa.table(cols)


def test_conforms_types_and_order() -> None:
    data = good()
    data = data.select(list(reversed(data.column_names)))  # any input order
    out, kinds = conform_input(data, schema())
    assert kinds is None
    assert out.column_names == [c for c, _ in COLUMNS]
    assert out.schema.field("id").type == pa.int32() and not out.schema.field("id").nullable
    assert out.schema.field("ts").type == pa.timestamp("ms")
    assert out.schema.field("ltz").type == pa.timestamp("us", "UTC")
    assert out.schema.field("tm").type == pa.time32("ms")
    assert out.column("dec").to_pylist() == [D("1.50"), D("-999.99")]
    f = out.column("f").to_numpy()
    assert np.isnan(f[0]) and f[1] == 0.0 and np.signbit(f[1])  # NaN and -0.0 kept
    assert out.column("row").to_pylist() == [{"x": 1, "y": "a"}, None]
    assert out.column("c").to_pylist() == ["abc", "é中😀"]  # CHAR(3) counts characters


def test_record_batch_and_dictionary_input() -> None:
    t = good(vc=pa.array(["ab", "ab"]).dictionary_encode())
    out, _ = conform_input(t.to_batches()[0], schema())
    assert out.column("vc").type == pa.string()
    assert out.column("vc").to_pylist() == ["ab", "ab"]


def err(data: pa.Table, *parts: str, **kw: Any) -> str:
    with pytest.raises(SchemaError) as e:
        conform_input(data, schema(), **kw)
    msg = str(e.value)
    for p in parts:
        assert p in msg, msg
    return msg


def test_missing_and_extra_columns() -> None:
    err(good().drop_columns(["big"]), "'big'", "lacks")
    err(good().append_column("zzz", pa.array([1, 2])), "'zzz'")
    err(pa.table({"id": [1]}).append_column("id", pa.array([2])), "duplicate")


def test_int_overflow_names_column_and_first_value() -> None:
    err(good(id=pa.array([1, 2**31], pa.int64())), "'id'", "row 1", "2147483648")
    err(good(id=pa.array([1.0, 2.5])), "'id'", "row 1", "2.5")
    err(good(id=pa.array(["1", "2"])), "'id'", "cannot take")


def test_decimal_never_rounds() -> None:
    err(good(dec=pa.array([D("1.5"), D("1.234")])), "'dec'", "row 1", "1.234")
    err(good(dec=pa.array([D("1000"), D("1")])), "'dec'", "row 0", "1000")
    err(good(dec=pa.array([1000, 1])), "'dec'", "row 0", "1000")
    err(good(dec=pa.array([1.0, 0.125])), "'dec'", "row 1", "0.125", "rounding")
    err(good(dec=pa.array([float("inf"), 1.0])), "'dec'", "row 0")
    err(good(dec=pa.array(["1.5", "1.999"])), "'dec'", "row 1")
    # exact conversions are fine
    out, _ = conform_input(good(dec=pa.array([1.25, -3.5])), schema())
    assert out.column("dec").to_pylist() == [D("1.25"), D("-3.50")]
    out, _ = conform_input(good(dec=pa.array([12, -999])), schema())
    assert out.column("dec").to_pylist() == [D("12.00"), D("-999.00")]
    err(good(dec38=pa.array([D("1e28"), None])), "'dec38'", "row 0")


def test_timestamp_zone_and_precision() -> None:
    aware = pa.array([dt.datetime(2024, 1, 1, tzinfo=UTC), None], pa.timestamp("us", "UTC"))
    naive = pa.array([dt.datetime(2024, 1, 1), None], pa.timestamp("us"))
    err(good(ts=aware), "'ts'", "time zone")
    err(good(ltz=naive), "'ltz'", "no time")
    err(good(ts=pa.array([dt.datetime(2024, 1, 1, 0, 0, 0, 1), None])), "'ts'", "row 0")
    err(good(ts2=pa.array([dt.datetime(2024, 1, 1, 0, 0, 0, 125000), None])), "'ts2'",
        "precision 2")
    err(good(tm=pa.array([dt.time(1, 2, 3, 500000), None])), "'tm'", "row 0")
    err(good(tm=pa.array([1, 2], pa.time32("ms"))), "'tm'", "row 0")
    # other zones are converted to the same instant in UTC
    paris = pa.array([0, None], pa.timestamp("us", "Europe/Paris"))
    out, _ = conform_input(good(ltz=paris), schema())
    assert out.column("ltz").type == pa.timestamp("us", "UTC")
    assert out.column("ltz").cast(pa.int64()).to_pylist() == [0, None]
    err(good(ts=pa.array([1, 2], pa.int64())), "'ts'", "cannot take")


def test_lengths() -> None:
    err(good(c=pa.array(["abc", "abcd"])), "'c'", "row 1", "abcd", "4 characters")
    err(good(vc=pa.array(["abcde", None])), "'vc'", "row 0")
    err(good(bin=pa.array([b"abc", b""])), "'bin'", "row 0", "3 bytes")
    err(good(c=pa.array([b"ab", b"c"])), "'c'", "cannot take")


def test_not_null() -> None:
    err(good(id=pa.array([1, None], pa.int64())), "'id'", "NOT NULL", "row 1")
    err(good(arr=pa.array([[1, None], None])), "'arr[]'", "NOT NULL")
    err(good(row=pa.array([{"x": None, "y": "a"}, None])), "'row'", "'x'", "NOT NULL")
    # a NOT NULL field inside a NULL row is fine
    out, _ = conform_input(good(row=pa.array([{"x": 1, "y": "a"}, None])), schema())
    assert out.column("row").null_count == 1


def test_nested_field_names_must_match() -> None:
    err(good(row=pa.array([{"x": 1, "z": "a"}, None])), "'row'", "['x', 'y']")
    err(good(arr=pa.array([1, 2])), "'arr'", "cannot take")
    big = pa.array([[1, 2**40], None], pa.list_(pa.int64()))
    err(good(arr=big), "'arr[]'", "element 1", "1099511627776")


def test_sliced_nested_input() -> None:
    arr = pa.array([[99, None], [1, 2], None, [3]]).slice(1)  # the null element is cut off
    rows = pa.array([{"x": None, "y": "q"}, {"x": 1, "y": "a"}, None, {"x": 2, "y": None}])
    t = good(arr=arr.slice(0, 2), row=rows.slice(1, 2))
    out, _ = conform_input(t, schema())
    assert out.column("arr").to_pylist() == [[1, 2], None]
    assert out.column("row").to_pylist() == [{"x": 1, "y": "a"}, None]


def test_map_and_multiset() -> None:
    s = Schema.of([("m", "MAP<VARCHAR(2), BIGINT>"), ("ms", "MULTISET<STRING>")]
                  ).to_table_schema()
    m = pa.array([[("a", 1)], None], pa.map_(pa.string(), pa.int32()))
    ms = pa.array([[("a", 2)], []], pa.map_(pa.string(), pa.int32()))
    out, _ = conform_input(pa.table({"m": m, "ms": ms}), s)
    assert out.column("m").type == pa.map_(pa.string(), pa.int64())
    assert out.column("m").to_pylist() == [[("a", 1)], None]
    with pytest.raises(SchemaError, match=r"'m\.key'"):
        bad = pa.array([[("abc", 1)]], pa.map_(pa.string(), pa.int32()))
        conform_input(pa.table({"m": bad, "ms": ms.slice(0, 1)}), s)


def test_row_kinds() -> None:
    t = good().append_column("k", pa.array(["+I", "-D"]))
    _, kinds = conform_input(t, schema(), row_kind_column="k")
    assert kinds is not None and kinds.dtype == np.int8 and kinds.tolist() == [0, 3]
    t = good().append_column("k", pa.array([2, 1], pa.int8()))
    assert conform_input(t, schema(), row_kind_column="k")[1].tolist() == [2, 1]  # type: ignore[union-attr]
    for bad, what in ((["+I", "x"], "'x'"), ([0, 4], "code 4"), (["+I", None], "null"),
                      ([True, False], "strings or int")):
        t = good().append_column("k", pa.array(bad))
        with pytest.raises(SchemaError, match=what):
            conform_input(t, schema(), row_kind_column="k")
    with pytest.raises(SchemaError, match="not in the input"):
        conform_input(good(), schema(), row_kind_column="k")
    assert parse_row_kinds(pa.array(["-U", "+U"]).dictionary_encode(), "k").tolist() == [1, 2]


def _data_files(root: Path) -> list[str]:
    return [f for _, _, fs in os.walk(root) for f in fs if f.endswith(".parquet")]


@pytest.mark.parametrize(
    "bad",
    [
        {"id": pa.array([1, None], pa.int64())},
        {"dec": pa.array([D("1.5"), D("1.234")])},
        {"ts": pa.array([dt.datetime(2024, 1, 1, tzinfo=UTC), None])},
        {"c": pa.array(["abc", "abcd"])},
    ],
)
def test_nothing_written_on_error(tmp_path: Path, bad: dict[str, pa.Array]) -> None:
    cat = FileSystemCatalog(str(tmp_path))
    table = cat.create_table("db.t", Schema.of(COLUMNS, primary_keys=["id"],
                                               options={"bucket": "2"}))
    w = table.new_write("u")
    w.write_arrow(good())  # buffered, not yet written
    with pytest.raises(SchemaError):
        w.write_arrow(good(**bad))
    assert _data_files(tmp_path) == []
    msgs = w.prepare_commit()
    assert sum(f.row_count for m in msgs for f in m.new_files) == 2  # the good rows only
