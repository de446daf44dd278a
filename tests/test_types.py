from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_core.errors import SchemaError
from paimon_core.types import (
    ArrayType,
    AtomicType,
    DataField,
    MapType,
    RowType,
    TypeRoot,
    assign_field_ids,
    highest_field_id,
    parse_sql_type,
    parse_type_json,
    to_arrow_type,
)

JAVA_SPELLINGS = [
    "BOOLEAN",
    "TINYINT",
    "SMALLINT",
    "INT",
    "BIGINT",
    "FLOAT",
    "DOUBLE",
    "DECIMAL(10, 2)",
    "DECIMAL(38, 10)",
    "CHAR(5)",
    "VARCHAR(20)",
    "STRING",
    "BINARY(4)",
    "VARBINARY(9)",
    "BYTES",
    "DATE",
    "TIME(0)",
    "TIME(3)",
    "TIMESTAMP(0)",
    "TIMESTAMP(3)",
    "TIMESTAMP(6)",
    "TIMESTAMP(9)",
    "TIMESTAMP(3) WITH LOCAL TIME ZONE",
    "INT NOT NULL",
    "STRING NOT NULL",
]


@pytest.mark.parametrize("s", JAVA_SPELLINGS)
def test_java_spellings_round_trip(s: str) -> None:
    assert parse_sql_type(s).to_json() == s


@pytest.mark.parametrize(
    "alias,canon",
    [
        ("INTEGER", "INT"),
        ("DECIMAL", "DECIMAL(10, 0)"),
        ("NUMERIC(5,1)", "DECIMAL(5, 1)"),
        ("TIMESTAMP", "TIMESTAMP(6)"),
        ("TIME", "TIME(0)"),
        ("TIMESTAMP_LTZ(3)", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
        ("VARCHAR(2147483647)", "STRING"),
        ("timestamp(6) without time zone", "TIMESTAMP(6)"),
        ("BIGINT NULL", "BIGINT"),
    ],
)
def test_aliases(alias: str, canon: str) -> None:
    assert parse_sql_type(alias).to_json() == canon


def test_nested_json_round_trip() -> None:
    j = {
        "type": "ROW NOT NULL",
        "fields": [
            {"id": 7, "name": "a", "type": {"type": "ARRAY", "element": "INT NOT NULL"}},
            {
                "id": 8,
                "name": "m",
                "type": {"type": "MAP", "key": "STRING NOT NULL", "value": "BIGINT"},
            },
            {"id": 9, "name": "s", "type": {"type": "MULTISET", "element": "STRING"}},
        ],
    }
    t = parse_type_json(j)
    assert isinstance(t, RowType) and not t.nullable
    assert t.to_json() == j


def test_sql_nested_and_field_ids_like_java() -> None:
    t = parse_sql_type("ROW<a INT, b ROW<c STRING, d BIGINT>>")
    fields, highest = assign_field_ids(
        [
            DataField(-1, "x", AtomicType(TypeRoot.INT)),
            DataField(-1, "r", t),
            DataField(-1, "y", AtomicType(TypeRoot.INT)),
        ]
    )
    # Java: the column takes its id; nested fields get theirs after their own types
    # (ReassignFieldId visits a field's type, then numbers the field)
    assert [f.id for f in fields] == [0, 1, 6]
    r = fields[1].type
    assert isinstance(r, RowType)
    assert [f.id for f in r.fields] == [2, 5]
    inner = r.fields[1].type
    assert isinstance(inner, RowType) and [f.id for f in inner.fields] == [3, 4]
    assert highest == 6 == highest_field_id(fields)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "FOO",
        "DECIMAL(40, 2)",
        "DECIMAL(5, 6)",
        "TIMESTAMP(10)",
        "ARRAY<INT",
        "MAP<INT>",
        "CHAR(0)",
    ],
)
def test_bad_types(bad: str) -> None:
    with pytest.raises(SchemaError):
        parse_sql_type(bad)


def test_arrow_mapping() -> None:
    assert to_arrow_type(parse_sql_type("TIMESTAMP(0)")) == pa.timestamp("s")
    assert to_arrow_type(parse_sql_type("TIMESTAMP(3)")) == pa.timestamp("ms")
    assert to_arrow_type(parse_sql_type("TIMESTAMP(6) WITH LOCAL TIME ZONE")) == pa.timestamp(
        "us", "UTC"
    )
    assert to_arrow_type(parse_sql_type("TIMESTAMP(9)")) == pa.timestamp("ns")
    assert to_arrow_type(parse_sql_type("DECIMAL(38, 10)")) == pa.decimal128(38, 10)
    assert to_arrow_type(parse_sql_type("TIME(3)")) == pa.time32("ms")
    assert to_arrow_type(ArrayType(AtomicType(TypeRoot.INT))).value_type == pa.int32()
    m = to_arrow_type(MapType(AtomicType(TypeRoot.VARCHAR, length=5), AtomicType(TypeRoot.INT)))
    assert isinstance(m, pa.MapType) and m.key_type == pa.string()
