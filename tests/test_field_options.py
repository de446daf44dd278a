"""Issue 29 (scope 2): per-field options ``fields.<name>.<suffix>`` name a column of the table
and a suffix paimon_core applies, or are refused naming the field / option, wherever options
are checked: a job's copy (``FileStoreTable.copy``) and ALTER. Expected messages by hand."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from paimon_core import SchemaError
from paimon_core.catalog import FileSystemCatalog
from paimon_core.schema_builder import Schema
from paimon_core.schema_change import SetOption

AGG = Schema.of([("id", "BIGINT NOT NULL"), ("a", "BIGINT"), ("b", "BIGINT"), ("s", "BIGINT")],
                primary_keys=["id"], options={"bucket": "1", "merge-engine": "aggregation"})


def test_copy_and_alter_refuse_a_field_that_is_not_a_column(tmp_path: Path) -> None:
    cat = FileSystemCatalog(str(tmp_path))
    t = cat.create_table("db.t", AGG)
    copy = t.copy({"fields.a.aggregate-function": "max", "fields.b.ignore-retract": "true",
                   "fields.s.sequence-group": "a,b", "fields.default-aggregate-function": "sum"})
    assert copy.options.field_aggregate_function("a") == "max"
    for key, value, field in (("fields.nope.aggregate-function", "max", "nope"),
                              ("fields.s.sequence-group", "a,zz", "zz"),
                              ("fields.s,yy.sequence-group", "a", "yy")):
        with pytest.raises(SchemaError, match=re.escape(f"field {field!r} is not a column")):
            t.copy({key: value})
        with pytest.raises(SchemaError, match=re.escape(f"field {field!r} is not a column")):
            cat.alter_table("db.t", [SetOption(key, value)])
    for key in ("fields.a.default-value", "fields.a.distinct", "fields.aggregate-function"):
        with pytest.raises(SchemaError, match=re.escape(f"option {key}=")):
            t.copy({key: "1"})
    assert cat.get_table("db.t").schema.id == 0  # nothing altered
