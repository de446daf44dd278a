"""Fast unit tests of the pipelines package that need no SparkSession: configuration, the
Spark filter translation, the type mapping, split packing, the CDC helpers."""

from __future__ import annotations

import argparse
import datetime
import decimal

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import datasource as ds
from pyspark.sql import types as T

from paimon_core.scan.predicate import Leaf, Op
from paimon_core.types import DataField, parse_sql_type
from pipelines.cdc.formats import sample_values
from pipelines.cdc.lines import split_text
from pipelines.cdc.schema import infer_column_type
from pipelines.config import CatalogSettings, SparkSettings, parse_pairs
from pipelines.spark_source.filters import to_predicate
from pipelines.spark_source.reading import options_settings, pack_splits, table_identifier
from pipelines.spark_types import paimon_type, spark_type

FIELDS = [
    DataField(0, "pt", parse_sql_type("STRING NOT NULL")),
    DataField(1, "id", parse_sql_type("BIGINT NOT NULL")),
    DataField(2, "amt", parse_sql_type("DECIMAL(10, 2)")),
    DataField(3, "f", parse_sql_type("DOUBLE")),
    DataField(4, "d", parse_sql_type("DATE")),
    DataField(5, "ts", parse_sql_type("TIMESTAMP(6)")),
    DataField(6, "tags", parse_sql_type("ARRAY<STRING>")),
]


def test_parse_pairs_forms() -> None:
    assert parse_pairs("a=1; b = x=y ;") == {"a": "1", "b": "x=y"}
    assert parse_pairs('{"a": 1, "b": "2"}') == {"a": "1", "b": "2"}
    assert parse_pairs(None) == {} and parse_pairs("  ") == {}
    with pytest.raises(ValueError, match="not KEY=VALUE"):
        parse_pairs("oops")
    with pytest.raises(ValueError):
        parse_pairs("{not json")


def test_settings_from_env_and_args() -> None:
    env = {"PAIMON_SPARK_MASTER": "spark://h:7077", "PAIMON_SPARK_CONF": "a=1;b=2",
           "PAIMON_WAREHOUSE": "s3://b/wh", "PAIMON_STORAGE_OPTIONS": "s3.endpoint=http://x"}
    s = SparkSettings.from_env(env)
    assert (s.master, dict(s.conf), s.is_local) == ("spark://h:7077", {"a": "1", "b": "2"},
                                                     False)
    args = argparse.Namespace(master="local[2]", conf=["b=3", "c=4"], warehouse=None,
                              storage_option=["s3.region=eu"])
    s2 = SparkSettings.from_args(args, env)
    assert s2.master == "local[2]" and dict(s2.conf) == {"a": "1", "b": "3", "c": "4"}
    c = CatalogSettings.from_args(args, env)
    assert c.warehouse == "s3://b/wh"
    assert dict(c.storage_options) == {"s3.endpoint": "http://x", "s3.region": "eu"}
    with pytest.raises(ValueError, match="no warehouse"):
        CatalogSettings.from_args(argparse.Namespace(warehouse=None), {})
    assert SparkSettings.from_env({}).master == "local[*]"


def test_data_source_options() -> None:
    opts = {"warehouse": "/wh", "path": "db.t", "s3.endpoint": "http://e",
            "storage.s3.region": "eu", "columns": "a"}
    s = options_settings(opts)
    assert s.warehouse == "/wh"
    assert dict(s.storage_options) == {"s3.endpoint": "http://e", "s3.region": "eu"}
    assert table_identifier(opts) == "db.t"
    assert table_identifier({"table": "x.y", "path": "db.t"}) == "x.y"


def test_filter_translation_pushes_only_exact_filters() -> None:
    eq = ds.EqualTo(("pt",), "a")
    rng = ds.GreaterThanOrEqual(("id",), 5)
    dec_exact = ds.LessThan(("amt",), decimal.Decimal("1.50"))
    dec_round = ds.LessThan(("amt",), decimal.Decimal("1.005"))  # would be rounded: kept
    dbl = ds.GreaterThan(("f",), 0.0)  # the same on both sides: pushed as is
    dbl_zero = ds.GreaterThanOrEqual(("f",), 0.0)  # Spark: -0.0 >= 0.0; Paimon: -0.0 < 0.0
    date = ds.EqualTo(("d",), datetime.date(2024, 1, 2))
    ts = ds.GreaterThan(("ts",), datetime.datetime(2024, 1, 1))  # naive literal, NTZ column
    ts_aware = ds.GreaterThan(("ts",), datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC))
    ts_micro = ds.GreaterThan(("ts",), datetime.datetime(2024, 1, 1, 0, 0, 0, 1))
    nested = ds.IsNotNull(("tags",))
    inn = ds.In(("id",), (1, 2, None))
    notin = ds.Not(ds.In(("pt",), ("x",)))
    ne = ds.Not(ds.EqualTo(("id",), 3))
    starts = ds.StringStartsWith(("pt",), "a")
    ends = ds.StringEndsWith(("pt",), "a")
    other = ds.Not(ds.GreaterThan(("id",), 1))
    isnull = ds.IsNull(("amt",))
    overflow = ds.EqualTo(("id",), 2**70)
    filters = [eq, rng, dec_exact, dec_round, dbl, dbl_zero, date, ts, ts_aware, ts_micro,
               nested, inn, notin, ne, starts, ends, other, isnull, overflow]
    pred, rest = to_predicate(filters, FIELDS)
    kept = [dec_round, ts_aware, nested, ends, other, overflow]
    assert rest == kept
    assert all(a is b for a, b in zip(rest, kept, strict=True))
    leaves = pred.children  # type: ignore[union-attr]
    assert leaves == (
        Leaf("pt", Op.EQ, ("a",)), Leaf("id", Op.GE, (5,)),
        Leaf("amt", Op.LT, (decimal.Decimal("1.50"),)),
        Leaf("f", Op.GT, (0.0,)), Leaf("f", Op.GE, (-0.0,)),
        Leaf("d", Op.EQ, (datetime.date(2024, 1, 2),)),
        Leaf("ts", Op.GT, (datetime.datetime(2024, 1, 1),)),
        Leaf("ts", Op.GT, (datetime.datetime(2024, 1, 1, 0, 0, 0, 1),)),
        Leaf("id", Op.IN, (1, 2, None)), Leaf("pt", Op.NOT_IN, ("x",)),
        Leaf("id", Op.NE, (3,)), Leaf("pt", Op.STARTS_WITH, ("a",)),
        Leaf("amt", Op.IS_NULL),
    )
    assert str(leaves[4].literals[0]) == "-0.0"  # >= 0.0 pushed as >= -0.0
    one, none = to_predicate([eq], FIELDS)
    assert one == Leaf("pt", Op.EQ, ("a",)) and none == []
    assert to_predicate([], FIELDS) == (None, [])


def test_type_mapping_both_ways() -> None:
    cases = {
        "TINYINT": T.ByteType(), "SMALLINT": T.ShortType(), "INT": T.IntegerType(),
        "BIGINT": T.LongType(), "FLOAT": T.FloatType(), "DOUBLE": T.DoubleType(),
        "BOOLEAN": T.BooleanType(), "STRING": T.StringType(), "VARCHAR(5)": T.StringType(),
        "BYTES": T.BinaryType(), "DATE": T.DateType(), "DECIMAL(38, 10)": T.DecimalType(38, 10),
        "TIMESTAMP(9)": T.TimestampNTZType(),
        "TIMESTAMP(3) WITH LOCAL TIME ZONE": T.TimestampType(),
        "ARRAY<INT NOT NULL>": T.ArrayType(T.IntegerType(), False),
        "MAP<STRING, DOUBLE>": T.MapType(T.StringType(), T.DoubleType(), True),
        "ROW<a INT, b STRING NOT NULL>": T.StructType([
            T.StructField("a", T.IntegerType(), True),
            T.StructField("b", T.StringType(), False)]),
    }
    for sql, st in cases.items():
        assert spark_type(parse_sql_type(sql)) == st, sql
    for sql in ("BIGINT", "STRING", "DECIMAL(12, 2)", "DATE", "BOOLEAN", "ARRAY<STRING>"):
        t = parse_sql_type(sql)
        assert paimon_type(spark_type(t)).sql() == t.sql()


def test_pack_splits_by_size() -> None:
    from paimon_core.scan.split import DataSplit

    class F:
        def __init__(self, size: int) -> None:
            self.file_size = size

    def split(*sizes: int) -> DataSplit:
        return DataSplit(1, b"", (), 0, 1, "/x", tuple(F(s) for s in sizes))  # type: ignore[misc]

    s = [split(60), split(50), split(10), split(200), split(5)]
    assert [len(c) for c in pack_splits(s, 100)] == [1, 2, 1, 1]
    assert [len(c) for c in pack_splits(s, 0)] == [1, 1, 1, 1, 1]
    assert pack_splits([], 100) == []


def test_cdc_helpers() -> None:
    assert infer_column_type([1, 2, None]) == "BIGINT"
    assert infer_column_type([1, 2.5]) == "DOUBLE"
    assert infer_column_type([True, None]) == "BOOLEAN"
    assert infer_column_type(["a", 1]) == "STRING"
    assert infer_column_type([{"a": 1}]) == "STRING"
    assert infer_column_type([None]) == "STRING"
    lines = ['{"op":"c","after":{"n":1,"x":"a"}}',
             '{"payload":{"op":"u","before":{"n":2},"after":{"n":3}}}', "garbage", "null"]
    assert sample_values("debezium-json", lines, ["n", "x"]) == {"n": [1, 3, 2], "x": ["a"]}
    assert split_text(b"a\r\nb\n") == ["a", "b", ""]
    assert split_text(b"ok\n\xff\xfe\nfine") == ["ok", "\u0000<invalid utf-8>", "fine"]
