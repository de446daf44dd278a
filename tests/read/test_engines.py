"""Merge engines: the vectorised engines (``merge_records``) agree with the row-at-a-time,
Java-shaped reference (``paimon_core.read.engines.reference``) on random records, for every
engine and option combination; plus hand-checked cases of Paimon 0.9 semantics."""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core.errors import PaimonError, SchemaError, UnsupportedError
from paimon_core.options import CoreOptions
from paimon_core.read.engines import extra_read_columns, lookup_wrapped, validate
from paimon_core.read.engines.reference import reference_merge
from paimon_core.read.merge import merge_records
from paimon_core.spec.schema import TableSchema
from paimon_core.types import DataField, parse_sql_type
from tests.profiles import examples
from tests.tables import make_table, write_rows

SEQ = "_SEQUENCE_NUMBER"
KIND = "_VALUE_KIND"
D = decimal.Decimal

# ---------------------------------------------------------------------------------------------
# random records

VALUE_TYPES: dict[str, tuple[pa.DataType, st.SearchStrategy[Any]]] = {
    "i8": (pa.int8(), st.integers(-128, 127)),
    "i32": (pa.int32(), st.one_of(st.integers(-5, 5), st.integers(-(2**31), 2**31 - 1))),
    "i64": (pa.int64(), st.one_of(st.integers(-5, 5), st.integers(-(2**63), 2**63 - 1))),
    "f32": (pa.float32(), st.one_of(st.sampled_from([0.5, -0.0, 0.0, 1e30, -2.75]),
                                    st.floats(width=32, allow_nan=True))),
    "f64": (pa.float64(), st.one_of(st.sampled_from([0.1, -0.0, 0.0, 3.0]), st.floats())),
    "dec": (pa.decimal128(10, 2), st.decimals(-999, 999, places=2, allow_nan=False,
                                                allow_infinity=False)),
    "big": (pa.decimal128(38, 4), st.one_of(
        st.decimals(-99, 99, places=4, allow_nan=False, allow_infinity=False),
        st.sampled_from([D("9999999999999999999999999999999999.0000"), D("-5.0000")]))),
    "s": (pa.string(), st.sampled_from(["a", "b", "", "é", "中文", "zz"])),
    "b": (pa.bool_(), st.booleans()),
    "d": (pa.date32(), st.dates(datetime.date(1960, 1, 1), datetime.date(2040, 1, 1))),
}
NUMERIC = ("sum", "product", "max", "min")
ANY = ("last_value", "last_non_null_value", "first_value", "first_non_null_value",
       "first_not_null_value")
FUNCTIONS: dict[str, tuple[str, ...]] = {
    "i8": NUMERIC + ANY, "i32": NUMERIC + ANY, "i64": NUMERIC + ANY, "f32": NUMERIC + ANY,
    "f64": NUMERIC + ANY, "dec": NUMERIC + ANY, "big": NUMERIC + ANY,
    "s": ("listagg", "max", "min", *ANY), "b": ("bool_and", "bool_or", *ANY),
    "d": ("max", "min", *ANY),
}
RETRACTABLE = {"sum", "product", "last_value", "last_non_null_value"}


@st.composite
def records(draw: st.DrawFn, value_columns: list[str], *, seq_fields: int = 0,
            group_fields: tuple[str, ...] = (), kinds: bool = True) -> pa.Table:
    n = draw(st.integers(0, 40))
    cols: dict[str, pa.Array] = {
        "k1": pa.array(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)), pa.int32()),
        "k2": pa.array(draw(st.lists(st.sampled_from(["x", "y", "ü"]), min_size=n, max_size=n))),
    }
    for i in range(seq_fields):
        cols[f"sq{i}"] = pa.array(draw(st.lists(st.one_of(st.none(), st.integers(0, 3)),
                                                min_size=n, max_size=n)), pa.int64())
    for g in group_fields:
        cols[g] = pa.array(draw(st.lists(st.one_of(st.none(), st.integers(0, 4)),
                                         min_size=n, max_size=n)), pa.int64())
    for c in value_columns:
        t, strat = VALUE_TYPES[c.split("_")[0]]
        cols[c] = pa.array(draw(st.lists(st.one_of(st.none(), strat), min_size=n, max_size=n)),
                           t)
    cols[SEQ] = pa.array(draw(st.permutations(range(n))) if n else [], pa.int64())
    kind_values = st.sampled_from([0, 0, 2, 1, 3]) if kinds else st.just(0)
    cols[KIND] = pa.array(draw(st.lists(kind_values, min_size=n, max_size=n)), pa.int8())
    return pa.table(cols)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                     math.copysign(1, b))
    return bool(type(a) is type(b) and a == b) or (a is None and b is None)


def check(table: pa.Table, options: dict[str, str], seq_fields: list[str],
          primary_keys: tuple[str, ...] = (), levels: list[int] | None = None) -> None:
    o = CoreOptions(options)
    seq = [*seq_fields, SEQ]
    keys = ["k1", "k2"]
    lv = None if levels is None else np.asarray(levels, dtype=np.int32)
    try:
        expected = reference_merge(table.to_pylist(), table.schema, keys, seq, KIND, o,
                                   primary_keys=primary_keys, levels=levels,
                                   lookup=lookup_wrapped(o))
    except PaimonError as e:
        with pytest.raises(PaimonError):
            merge_records(table, keys, seq, KIND, o, primary_keys=primary_keys, levels=lv)
        assert isinstance(e, PaimonError)
        return
    got = merge_records(table, keys, seq, KIND, o, primary_keys=primary_keys, levels=lv)
    assert got.schema == table.schema
    rows = got.to_pylist()
    assert len(rows) == len(expected)
    for g, e in zip(rows, expected):
        if e is None or e[KIND] in (1, 3):
            assert g[KIND] in (1, 3), (g, e)
            continue
        bad = {c: (g[c], e[c]) for c in table.column_names if not _same(g[c], e[c])}
        assert not bad, (bad, g, e)


SETTINGS = settings(max_examples=examples(150),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---------------------------------------------------------------------------------------------
# property tests


@SETTINGS
@given(st.data())
def test_deduplicate(data: st.DataObject) -> None:
    n_seq = data.draw(st.integers(0, 2))
    table = data.draw(records(["i32", "s"], seq_fields=n_seq))
    opts = {"merge-engine": "deduplicate",
            "ignore-delete": data.draw(st.sampled_from(["true", "false"]))}
    check(table, opts, [f"sq{i}" for i in range(n_seq)])


@SETTINGS
@given(st.data())
def test_first_row(data: st.DataObject) -> None:
    table = data.draw(records(["i32", "s"], kinds=data.draw(st.booleans())))
    opts = {"merge-engine": "first-row",
            "first-row.ignore-delete": data.draw(st.sampled_from(["true", "false"]))}
    check(table, opts, [])


@SETTINGS
@given(st.data())
def test_aggregation(data: st.DataObject) -> None:
    names = data.draw(st.lists(st.sampled_from(sorted(VALUE_TYPES)), min_size=1, max_size=5))
    cols = [f"{t}_{i}" for i, t in enumerate(names)]
    n_seq = data.draw(st.integers(0, 2))
    table = data.draw(records(cols, seq_fields=n_seq, kinds=data.draw(st.booleans())))
    opts = {"merge-engine": "aggregation"}
    for c in cols:
        fn = data.draw(st.sampled_from((None, *FUNCTIONS[c.split("_")[0]])))
        if fn is not None:
            opts[f"fields.{c}.aggregate-function"] = fn
        if data.draw(st.booleans()):
            opts[f"fields.{c}.ignore-retract"] = "true"
        if fn == "listagg" and data.draw(st.booleans()):
            opts[f"fields.{c}.list-agg-delimiter"] = "|"
    if data.draw(st.booleans()):
        opts["fields.default-aggregate-function"] = data.draw(st.sampled_from(ANY))
    check(table, opts, [f"sq{i}" for i in range(n_seq)])


@SETTINGS
@given(st.data())
def test_aggregation_retractable(data: st.DataObject) -> None:
    """Retractions with functions that take them (most examples of the test above stop at
    a function without retraction)."""
    names = data.draw(st.lists(st.sampled_from(["i8", "i32", "i64", "f32", "f64", "big"]),
                               min_size=1, max_size=4))
    cols = [f"{t}_{i}" for i, t in enumerate(names)]
    table = data.draw(records(cols))
    opts = {"merge-engine": "aggregation"}
    for c in cols:
        opts[f"fields.{c}.aggregate-function"] = data.draw(
            st.sampled_from(["sum", "sum", "last_value", "last_non_null_value"]))
    check(table, opts, [])


@SETTINGS
@given(st.data())
def test_partial_update(data: st.DataObject) -> None:
    names = data.draw(st.lists(st.sampled_from(sorted(VALUE_TYPES)), min_size=1, max_size=4))
    cols = [f"{t}_{i}" for i, t in enumerate(names)]
    n_seq = data.draw(st.integers(0, 1))
    table = data.draw(records(cols, seq_fields=n_seq, kinds=data.draw(st.booleans())))
    mode = data.draw(st.sampled_from(["plain", "ignore", "remove"]))
    opts = {"merge-engine": "partial-update"}
    if mode == "ignore":
        opts[data.draw(st.sampled_from(["ignore-delete", "partial-update.ignore-delete"]))] = (
            "true")
    elif mode == "remove":
        opts["partial-update.remove-record-on-delete"] = "true"
    check(table, opts, [f"sq{i}" for i in range(n_seq)])


@SETTINGS
@given(st.data())
def test_partial_update_sequence_groups(data: st.DataObject) -> None:
    names = data.draw(st.lists(st.sampled_from(sorted(VALUE_TYPES)), min_size=2, max_size=6))
    cols = [f"{t}_{i}" for i, t in enumerate(names)]
    n_seq = data.draw(st.integers(0, 1))
    table = data.draw(records(cols, seq_fields=n_seq, group_fields=("g1", "g2a", "g2b")))
    # columns: some in group g1, some in group (g2a, g2b), the rest ungrouped
    where = data.draw(st.lists(st.sampled_from(["g1", "g2", "none"]), min_size=len(cols),
                               max_size=len(cols)))
    opts = {"merge-engine": "partial-update"}
    g1 = [c for c, w in zip(cols, where) if w == "g1"]
    g2 = [c for c, w in zip(cols, where) if w == "g2"]
    opts["fields.g1.sequence-group"] = ",".join(g1) if g1 else "g1"
    if g2 or data.draw(st.booleans()):
        opts["fields.g2a,g2b.sequence-group"] = ",".join(g2) if g2 else "g2a"
    for c in cols:
        if data.draw(st.integers(0, 2)) == 0:
            opts[f"fields.{c}.aggregate-function"] = data.draw(
                st.sampled_from(FUNCTIONS[c.split("_")[0]]))
            if data.draw(st.booleans()):
                opts[f"fields.{c}.ignore-retract"] = "true"
    if data.draw(st.integers(0, 3)) == 0:
        opts["ignore-delete"] = "true"
    check(table, opts, [f"sq{i}" for i in range(n_seq)])


@SETTINGS
@given(st.data())
def test_lookup_merge_function(data: st.DataObject) -> None:
    """``changelog-producer=lookup`` (or deletion vectors): of a key's records on levels > 0
    only the newest takes part (``LookupMergeFunction``)."""
    table = data.draw(records(["i32_0", "s_1"], kinds=False))
    levels = data.draw(st.lists(st.integers(0, 5), min_size=table.num_rows,
                                max_size=table.num_rows))
    engine = data.draw(st.sampled_from(["aggregation", "partial-update"]))
    opts = {"merge-engine": engine, "fields.i32_0.aggregate-function": "sum",
            data.draw(st.sampled_from(["changelog-producer", "deletion-vectors.enabled"])):
            "lookup"}
    if opts.get("deletion-vectors.enabled"):
        opts["deletion-vectors.enabled"] = "true"
    if engine == "partial-update":
        opts["fields.sq0.sequence-group"] = "i32_0"
        table = table.append_column("sq0", pa.array(range(table.num_rows), pa.int64()))
    check(table, opts, [], levels=levels)


@SETTINGS
@given(st.data())
def test_primary_key_columns_are_not_aggregated(data: st.DataObject) -> None:
    """Compaction input: ``_KEY_`` columns as the key, the primary-key values (and a
    partition column, known from ``primary_keys``) as values."""
    table = data.draw(records(["i32_0"]))
    table = table.append_column("pt", pa.array(["p"] * table.num_rows))
    opts = {"merge-engine": "aggregation", "fields.default-aggregate-function": "listagg",
            "fields.i32_0.aggregate-function": "sum", "fields.k1.aggregate-function": "sum"}
    check(table, opts, [], primary_keys=("k1", "k2", "pt"))


# ---------------------------------------------------------------------------------------------
# hand-checked Paimon 0.9 semantics


def _t(rows: list[tuple[Any, ...]], **types: pa.DataType) -> pa.Table:
    names = ["k", *types, SEQ, KIND]
    tys = [pa.int32(), *types.values(), pa.int64(), pa.int8()]
    return pa.table({n: pa.array([r[i] for r in rows], t)
                     for i, (n, t) in enumerate(zip(names, tys))})


def _merge(t: pa.Table, **opts: str) -> list[dict[str, Any]]:
    o = CoreOptions({k.replace("__", ".").replace("_", "-"): v for k, v in opts.items()})
    return merge_records(t, ["k"], [SEQ], KIND, o).to_pylist()


def test_lone_record_passes_through_unchanged() -> None:
    # ReducerMergeFunctionWrapper: a lone -U stays -U, a lone +U keeps its kind
    t = _t([(1, 5, 0, 1), (2, 7, 1, 2)], v=pa.int64())
    out = _merge(t, merge_engine="aggregation")
    assert [(r["k"], r["v"], r[KIND]) for r in out] == [(1, 5, 1), (2, 7, 2)]


def test_aggregation_sum_retract_and_kind() -> None:
    t = _t([(1, 5, 0, 0), (1, 3, 1, 1), (1, 10, 2, 2), (1, None, 3, 0)], v=pa.int64())
    out = _merge(t, merge_engine="aggregation", fields__v__aggregate_function="sum")
    assert out == [{"k": 1, "v": 12, SEQ: 3, KIND: 0}]
    # int8 sums wrap like Java's (byte) casts
    t = _t([(1, 100, 0, 0), (1, 100, 1, 0)], v=pa.int8())
    assert _merge(t, merge_engine="aggregation",
                  fields__v__aggregate_function="sum")[0]["v"] == -56


def test_aggregation_function_without_retraction_fails_like_java() -> None:
    t = _t([(1, 5, 0, 0), (1, 3, 1, 3)], v=pa.int64())
    with pytest.raises(UnsupportedError, match=r"fields\.v\.ignore-retract"):
        _merge(t, merge_engine="aggregation", fields__v__aggregate_function="max")
    out = _merge(t, merge_engine="aggregation", fields__v__aggregate_function="max",
                 fields__v__ignore_retract="true")
    assert out[0]["v"] == 5 and out[0][KIND] == 0


def test_aggregation_float_sum_is_sequential_float32() -> None:
    vals = [1e8, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    t = _t([(1, v, i, 0) for i, v in enumerate(vals)], v=pa.float32())
    got = _merge(t, merge_engine="aggregation", fields__v__aggregate_function="sum")[0]["v"]
    acc = np.float32(0)
    for v in vals:
        acc = np.float32(acc + np.float32(v))
    assert got == float(acc) == 1e8  # each +1 is lost in float32, as in Java


def test_aggregation_listagg_and_max_strings() -> None:
    t = _t([(1, "b", 0, 0), (1, None, 1, 0), (1, "a", 2, 0), (1, "é", 3, 0)], v=pa.string())
    assert _merge(t, merge_engine="aggregation", fields__v__aggregate_function="listagg",
                  fields__v__list_agg_delimiter=";")[0]["v"] == "b;a;é"
    assert _merge(t, merge_engine="aggregation",
                  fields__v__aggregate_function="max")[0]["v"] == "é"


def test_aggregation_decimal_overflow_is_null_then_restarts() -> None:
    big = D("9" * 34 + ".0000")
    t = _t([(1, big, 0, 0), (1, D(1), 1, 0), (1, D(2), 2, 0)], v=pa.decimal128(38, 4))
    # Decimal.fromBigDecimal -> null on overflow; agg(null, 2) = 2
    assert _merge(t, merge_engine="aggregation",
                  fields__v__aggregate_function="sum")[0]["v"] == D("2.0000")


def test_unknown_and_removed_functions() -> None:
    t = _t([(1, 1, 0, 0), (1, 2, 1, 0)], v=pa.int64())
    with pytest.raises(SchemaError, match="count"):
        _merge(t, merge_engine="aggregation", fields__v__aggregate_function="count")
    with pytest.raises(UnsupportedError, match="collect"):
        _merge(t, merge_engine="aggregation", fields__v__aggregate_function="collect")


def test_partial_update_non_null_overwrite_and_delete_errors() -> None:
    t = pa.table({"k": pa.array([1, 1, 1], pa.int32()), "a": [1, None, 3],
                  "b": ["x", "y", None], SEQ: pa.array([0, 1, 2], pa.int64()),
                  KIND: pa.array([0, 2, 0], pa.int8())})
    assert _merge(t, merge_engine="partial-update") == [
        {"k": 1, "a": 3, "b": "y", SEQ: 2, KIND: 0}]
    t2 = t.set_column(4, KIND, pa.array([0, 3, 0], pa.int8()))
    with pytest.raises(UnsupportedError, match="ignore-delete"):
        _merge(t2, merge_engine="partial-update")
    # ignore-delete: the -D is skipped; the sequence number is the last +I/+U one's
    assert _merge(t2.slice(0, 2), merge_engine="partial-update", ignore_delete="true") == [
        {"k": 1, "a": 1, "b": "x", SEQ: 0, KIND: 0}]
    # remove-record-on-delete: +I, -D -> deleted; +I, -D, +I -> a new row
    assert _merge(t2.slice(0, 2), merge_engine="partial-update",
                  partial_update__remove_record_on_delete="true")[0][KIND] == 3
    assert _merge(t2, merge_engine="partial-update",
                  partial_update__remove_record_on_delete="true") == [
        {"k": 1, "a": 3, "b": None, SEQ: 2, KIND: 0}]


def test_partial_update_sequence_group() -> None:
    # g orders the group (a, b); c is ungrouped; the record with g=1 arrives last but is older
    t = pa.table({"k": pa.array([1, 1, 1], pa.int32()), "g": [2, 3, 1], "a": [10, None, 30],
                  "b": [100, 200, 300], "c": ["p", "q", None], "s": [1, 2, 4],
                  SEQ: pa.array([0, 1, 2], pa.int64()), KIND: pa.array([0, 0, 0], pa.int8())})
    out = _merge(t, merge_engine="partial-update", fields__g__sequence_group="a,b,s",
                 fields__s__aggregate_function="sum")
    # a, b from g=3 (null included), s = 1 + 2 + 4 (reversed agg of the older one), c = q
    assert out == [{"k": 1, "g": 3, "a": None, "b": 200, "c": "q", "s": 7, SEQ: 2, KIND: 0}]
    # a -U that wins retracts the group's columns
    t2 = pa.concat_tables([t, pa.table({"k": pa.array([1], pa.int32()), "g": [5], "a": [None],
                                        "b": [None], "c": ["z"], "s": [2],
                                        SEQ: pa.array([3], pa.int64()),
                                        KIND: pa.array([1], pa.int8())}, schema=t.schema)])
    out = _merge(t2, merge_engine="partial-update", fields__g__sequence_group="a,b,s",
                 fields__s__aggregate_function="sum")
    assert out == [{"k": 1, "g": 5, "a": None, "b": None, "c": "q", "s": 5, SEQ: 2, KIND: 0}]


def test_first_row_keeps_oldest_and_refuses_retractions() -> None:
    t = _t([(1, 1, 5, 0), (1, 2, 3, 2)], v=pa.int64())
    assert _merge(t, merge_engine="first-row") == [{"k": 1, "v": 2, SEQ: 3, KIND: 2}]
    t = _t([(1, 1, 5, 0), (1, 2, 3, 3)], v=pa.int64())
    with pytest.raises(UnsupportedError, match=r"first-row\.ignore-delete"):
        _merge(t, merge_engine="first-row")
    assert _merge(t, merge_engine="first-row", ignore_delete="true")[0]["v"] == 1


def test_sequence_field_nulls_first_then_sequence_number() -> None:
    t = pa.table({"k": pa.array([1, 1, 1], pa.int32()), "ts": [5, None, 5], "v": ["a", "b", "c"],
                  SEQ: pa.array([2, 9, 1], pa.int64()), KIND: pa.array([0, 0, 0], pa.int8())})
    o = CoreOptions({"sequence.field": "ts"})
    assert merge_records(t, ["k"], ["ts", SEQ], KIND, o).column("v").to_pylist() == ["a"]


def _schema(options: dict[str, str]) -> TableSchema:
    fields = [DataField(0, "k", parse_sql_type("INT NOT NULL")),
              DataField(1, "g", parse_sql_type("INT")),
              DataField(2, "a", parse_sql_type("BIGINT")),
              DataField(3, "b", parse_sql_type("STRING"))]
    return TableSchema(id=0, fields=tuple(fields), highest_field_id=3, primary_keys=("k",),
                       options=options)


def _validate(schema: TableSchema) -> None:
    validate(schema, CoreOptions(schema.options))


def test_validate_and_projection() -> None:
    _validate(_schema({"merge-engine": "aggregation", "fields.a.aggregate-function": "sum"}))
    with pytest.raises(SchemaError, match="nope"):
        _validate(_schema({"merge-engine": "aggregation", "fields.a.aggregate-function": "nope"}))
    with pytest.raises(SchemaError, match="sequence group"):
        _validate(_schema({"merge-engine": "partial-update",
                          "fields.a.aggregate-function": "sum"}))
    with pytest.raises(SchemaError, match="can not be found"):
        _validate(_schema({"merge-engine": "partial-update", "fields.g.sequence-group": "zz"}))
    with pytest.raises(SchemaError, match="conflicting"):
        _validate(_schema({"merge-engine": "partial-update", "ignore-delete": "true",
                          "partial-update.remove-record-on-delete": "true"}))
    with pytest.raises(UnsupportedError):
        _validate(_schema({"merge-engine": "partial-update", "fields.g.sequence-group": "a",
                          "fields.default-aggregate-function": "sum"}))
    with pytest.raises(SchemaError, match="FIRST"):
        _validate(_schema({"merge-engine": "first-row", "sequence.field": "g"}))
    s = _schema({"merge-engine": "partial-update", "fields.g.sequence-group": "a"})
    assert extra_read_columns(s, ["k", "a"], CoreOptions(s.options)) == ["g"]
    assert extra_read_columns(s, ["k", "b"], CoreOptions(s.options)) == []


# ---------------------------------------------------------------------------------------------
# through our writer and reader


def _pk_table(tmp_path: Any, options: dict[str, str]) -> Any:
    cols = [("pt", "STRING"), ("id", "INT"), ("g", "INT"), ("a", "BIGINT"), ("s", "STRING")]
    return make_table(tmp_path / "wh", cols, partition_keys=["pt"], primary_keys=["pt", "id"],
                      options={"bucket": "1", "write-only": "true", **options})


def _commit(t: Any, rows: list[tuple[Any, ...]], ident: int) -> None:
    data = pa.table({
        "pt": [r[0] for r in rows], "id": pa.array([r[1] for r in rows], pa.int32()),
        "g": pa.array([r[2] for r in rows], pa.int32()),
        "a": pa.array([r[3] for r in rows], pa.int64()), "s": [r[4] for r in rows],
        "_k": [r[5] for r in rows],
    })
    write_rows(t, data, ident, row_kind_column="_k")


def _rows(t: Any, columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    out = t.to_arrow(columns=columns) if columns else t.to_arrow()
    return sorted(tuple(r.values()) for r in out.to_pylist())


def test_aggregation_written_and_read(tmp_path: Any) -> None:
    t = _pk_table(tmp_path, {"merge-engine": "aggregation",
                             "fields.a.aggregate-function": "sum",
                             "fields.s.aggregate-function": "listagg",
                             "fields.s.ignore-retract": "true",
                             "fields.default-aggregate-function": "sum"})
    # one commit: the write buffer merges same-key records (sum 1 + 2)
    _commit(t, [("p", 1, 1, 1, "x", "+I"), ("p", 1, 1, 2, "y", "+I"),
                ("p", 2, 5, 7, "z", "+I")], 1)
    _commit(t, [("p", 1, 1, 10, "w", "+U"), ("p", 2, 5, 7, "z", "-D")], 2)
    assert _rows(t) == [("p", 1, 3, 13, "x,y,w"), ("p", 2, 0, 0, "z")]
    _commit(t, [("p", 3, 1, 4, None, "-U")], 3)  # a lone retraction: the key stays deleted
    assert _rows(t) == [("p", 1, 3, 13, "x,y,w"), ("p", 2, 0, 0, "z")]
    assert _rows(t, ["a"]) == [(0,), (13,)]


def test_partial_update_written_and_read(tmp_path: Any) -> None:
    t = _pk_table(tmp_path, {"merge-engine": "partial-update",
                             "fields.g.sequence-group": "a",
                             "fields.a.aggregate-function": "max"})
    _commit(t, [("p", 1, 2, 5, None, "+I"), ("p", 1, None, None, "s1", "+I")], 1)
    _commit(t, [("p", 1, 1, 9, None, "+I"), ("p", 2, 1, 1, "t", "+I")], 2)
    _commit(t, [("p", 1, None, None, "s2", "+U")], 3)
    assert _rows(t) == [("p", 1, 2, 9, "s2"), ("p", 2, 1, 1, "t")]
    # a projection of a grouped column fetches the group's sequence field too
    assert _rows(t, ["id", "a"]) == [(1, 9), (2, 1)]


def test_partial_update_delete_refused_at_write(tmp_path: Any) -> None:
    t = _pk_table(tmp_path, {"merge-engine": "partial-update"})
    with pytest.raises(UnsupportedError, match="ignore-delete"):
        _commit(t, [("p", 1, 1, 1, "x", "+I"), ("p", 1, 1, 1, "x", "-D")], 1)


def test_writer_refusals(tmp_path: Any) -> None:
    from paimon_core.catalog import FileSystemCatalog
    from paimon_core.schema_builder import Schema

    cat = FileSystemCatalog(str(tmp_path / "wh2"))
    t = cat.create_table("db.a", Schema.of(
        [("id", "INT"), ("v", "INT")], primary_keys=["id"],
        options={"bucket": "1", "merge-engine": "aggregation",
                 "fields.v.aggregate-function": "hll_sketch"}))
    with pytest.raises(UnsupportedError, match="hll_sketch"):
        t.new_write("u")


@SETTINGS
@given(st.data())
def test_deduplicate_read_shortcuts(data: st.DataObject) -> None:
    """The reader's shortcuts give the same winners: ``key_order=False`` (input order instead
    of a gather in key order) and ``sequence_ordered`` rows merged without sequence columns
    (a stable sort by key), for integer keys (numpy path) and composite keys (Arrow path)."""
    from paimon_core.read.merge import deduplicate

    table = data.draw(records(["i32", "s"]))
    keys = data.draw(st.sampled_from([["k1"], ["k1", "k2"]]))
    expected = deduplicate(table, keys, [SEQ]).to_pylist()
    unordered = deduplicate(table, keys, [SEQ], key_order=False).to_pylist()
    assert sorted(unordered, key=lambda r: (r["k1"], r["k2"], r[SEQ])) == sorted(
        expected, key=lambda r: (r["k1"], r["k2"], r[SEQ]))
    by_seq = table.sort_by([(SEQ, "ascending")])
    got = deduplicate(by_seq, keys, [], sequence_ordered=True, key_order=False).to_pylist()
    assert sorted(got, key=lambda r: (r["k1"], r["k2"], r[SEQ])) == sorted(
        expected, key=lambda r: (r["k1"], r["k2"], r[SEQ]))
    assert len(got) == len({tuple(r[k] for k in keys) for r in table.to_pylist()})
