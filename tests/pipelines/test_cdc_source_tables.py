"""The table each change event names, per format, and which tables a job takes
(:mod:`pipelines.cdc.source_tables`). Events are the shapes the tools print (field names from
their docs: canal's flat message, Maxwell's, GoldenGate's JSON formatter, AWS DMS's Kafka
target, Debezium's envelope with and without schemas)."""

from __future__ import annotations

import io
import pickle

import pyarrow as pa
import pyarrow.json as pj
import pytest

from paimon_core.errors import ConfigError, PaimonError
from pipelines.cdc.source_tables import TableFilter, event_tables, names_declared


def _names(fmt: str, text: str, *, declared: bool = False) -> list[tuple[str | None, str | None]]:
    opts = (pj.ParseOptions(explicit_schema=names_declared(fmt),
                            unexpected_field_behavior="ignore") if declared else None)
    t = pj.read_json(io.BytesIO(text.encode()), parse_options=opts)
    db, table = event_tables(t, fmt)
    return list(zip(db.to_pylist(), table.to_pylist()))


@pytest.mark.parametrize("declared", [False, True])
def test_each_format_names_its_table(declared: bool) -> None:
    canal = ('{"data":[{"id":"1"}],"database":"inventory","table":"products","pkNames":["id"],'
             '"type":"INSERT","isDdl":false}\n'
             '{"data":null,"database":"inventory","table":"customers","type":"ALTER",'
             '"isDdl":true,"sql":"ALTER TABLE customers ADD c INT"}\n')
    assert _names("canal-json", canal, declared=declared) == [
        ("inventory", "products"), ("inventory", "customers")]
    maxwell = ('{"database":"test","table":"maxwell","type":"insert","ts":1449786310,'
               '"xid":940752,"commit":true,"data":{"id":1,"daemon":"Stanislaw Lem"}}\n')
    assert _names("maxwell-json", maxwell, declared=declared) == [("test", "maxwell")]
    ogg = ('{"table":"GG.TCUSTMER","op_type":"I","op_ts":"2015-11-05 18:45:36.000000",'
           '"pos":"00000000000000002928","after":{"CUST_CODE":"WILL"}}\n'
           '{"table":"TCUSTORD","op_type":"I","after":{"CUST_CODE":"X"}}\n')
    assert _names("ogg-json", ogg, declared=declared) == [("GG", "TCUSTMER"), (None, "TCUSTORD")]
    dms = ('{"data":{"id":1},"metadata":{"timestamp":"2019-10-31T22:53:59.721201Z",'
           '"record-type":"data","operation":"insert","partition-key-type":"schema-table",'
           '"schema-name":"mydb","table-name":"orders"}}\n')
    assert _names("aws-dms-json", dms, declared=declared) == [("mydb", "orders")]
    debezium = ('{"before":null,"after":{"id":1},"source":{"connector":"mysql",'
                '"db":"inventory","table":"customers","file":"mysql-bin.000003","pos":154},'
                '"op":"c"}\n'
                '{"schema":{"type":"struct"},"payload":{"before":null,"after":{"id":2},'
                '"source":{"db":"inventory","table":"orders"},"op":"c"}}\n'
                '{"before":null,"after":{"id":3},"op":"c"}\n')
    assert _names("debezium-json", debezium, declared=declared) == [
        ("inventory", "customers"), ("inventory", "orders"), (None, None)]


def test_unknown_format_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="protobuf"):
        names_declared("protobuf")


def test_default_filter_takes_the_target_name_in_any_database_ignoring_case() -> None:
    f = TableFilter.of_table("products")
    db = pa.array(["inventory", "inventory", "other", None, "x"])
    table = pa.array(["products", "customers", "PRODUCTS", None, "products_v2"])
    # an event naming no table is taken: it cannot be routed (see the module docs)
    assert f.mask(db, table).tolist() == [True, False, True, True, False]


def test_including_and_excluding_patterns() -> None:
    db = pa.array(["mydb", "mydb", "mydb", "other"])
    table = pa.array(["orders", "order_items", "customers", "orders"])
    assert TableFilter("order.*").mask(db, table).tolist() == [True, True, False, True]
    assert TableFilter(r"mydb\.orders").mask(db, table).tolist() == [True, False, False, False]
    assert TableFilter(excluding="customers").mask(db, table).tolist() == [
        True, True, False, True]
    assert TableFilter("order.*", r"other\..*").mask(db, table).tolist() == [
        True, True, False, False]
    # names are case-sensitive unless asked (Paimon's regexes are)
    assert TableFilter("ORDERS").mask(db, table).tolist() == [False] * 4


def test_a_bad_pattern_is_refused_naming_the_option() -> None:
    with pytest.raises(PaimonError, match=r"excluding-tables.*not a regular expression"):
        TableFilter(".*", "(")


def test_filter_pickles_for_spark_tasks() -> None:
    f = TableFilter("a.*", "ab")
    assert pickle.loads(pickle.dumps(f)) == f
