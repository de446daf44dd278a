"""TableLayout: every path of a table from one object; partition decoding and matching."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

import pytest

from paimon_core.commit_message import CommitMessage
from paimon_core.compact.manager import (
    BucketWork,
    CompactSource,
    compact_with_retries,
    new_compactor,
)
from paimon_core.errors import CommitConflictError, SchemaError
from paimon_core.layout import DataFilePathFactory, TableLayout, bucket_dir_name
from paimon_core.schema_builder import Schema
from paimon_core.spec.binary_row import serialize_binary_row
from paimon_core.spec.keys import key_decoder
from paimon_core.spec.partition import decode_partition
from paimon_core.types import parse_sql_type
from tests.compact.helpers import pk_table, rows

STRING = parse_sql_type("STRING")
INT = parse_sql_type("INT")


def _layout(**options: str) -> TableLayout:
    schema = Schema.of([("dt", "STRING"), ("hr", "INT"), ("id", "INT NOT NULL")],
                       partition_keys=["dt", "hr"], primary_keys=["dt", "hr", "id"],
                       options={"bucket": "2", **options}).to_table_schema()
    return TableLayout.of("/wh/db.db/t", schema)


def test_metadata_directories() -> None:
    layout = TableLayout("/wh/db.db/t")
    assert layout.snapshot_dir == "/wh/db.db/t/snapshot"
    assert layout.schema_dir == "/wh/db.db/t/schema"
    assert layout.manifest_dir == "/wh/db.db/t/manifest"
    assert layout.index_file("dv-1") == "/wh/db.db/t/index/dv-1"
    assert layout.tag_dir == "/wh/db.db/t/tag"
    assert layout.consumer_dir == "/wh/db.db/t/consumer"
    assert layout.changelog_file(7) == "/wh/db.db/t/changelog/changelog-7"


def test_bucket_dirs() -> None:
    layout = _layout()
    part = serialize_binary_row(["2024-01-01", 3], [STRING, INT])
    assert layout.partition_path(part) == "dt=2024-01-01/hr=3"
    assert layout.bucket_dir(part, 1) == "/wh/db.db/t/dt=2024-01-01/hr=3/bucket-1"
    assert layout.data_file(part, 0, "data-x-0.parquet") == (
        "/wh/db.db/t/dt=2024-01-01/hr=3/bucket-0/data-x-0.parquet")
    assert bucket_dir_name(-2) == "bucket-postpone"
    assert TableLayout("/t").bucket_dir(serialize_binary_row([], []), 0) == "/t/bucket-0"
    # null partition values: partition.default-name
    null = serialize_binary_row([None, 3], [STRING, INT])
    assert _layout(**{"partition.default-name": "NA"}).partition_path(null) == "dt=NA/hr=3"


def test_partition_matcher() -> None:
    layout = _layout()
    a = serialize_binary_row(["a", 1], [STRING, INT])
    b = serialize_binary_row(["b", 2], [STRING, INT])
    null = serialize_binary_row([None, 2], [STRING, INT])
    assert layout.partition_matcher(None)(a)
    assert not layout.partition_matcher([])(a)
    match = layout.partition_matcher([{"dt": "a"}, {"hr": "2", "dt": "b"}])
    assert match(a) and match(b) and not match(null)
    assert layout.partition_matcher([{"dt": None}])(null)
    assert layout.partition_matcher([{"dt": "__DEFAULT_PARTITION__"}])(null)
    with pytest.raises(SchemaError):
        layout.partition_matcher([{"id": "1"}])


def test_decode_partition_keeps_nanoseconds() -> None:
    ts9 = parse_sql_type("TIMESTAMP(9)")
    ts3 = parse_sql_type("TIMESTAMP(3)")
    nanos = 1_700_000_000_123_456_789
    raw = serialize_binary_row([nanos, nanos // 1_000_000 * 1_000_000], [ts9, ts3])
    exact, millis = decode_partition(raw, [ts9, ts3])
    assert exact == nanos
    assert isinstance(millis, dt.datetime)


def test_key_decoder() -> None:
    schema = Schema.of([("k", "STRING NOT NULL"), ("v", "INT")], primary_keys=["k"],
                       options={"bucket": "1"}).to_table_schema()
    raw = serialize_binary_row(["x"], [parse_sql_type("STRING NOT NULL")])
    assert key_decoder(schema)(raw) == ("x",)
    cached = key_decoder(schema, cached=True)
    assert cached(raw) is cached(raw)


def test_file_names() -> None:
    names = DataFilePathFactory("orc")
    assert names.new_data_file_name() == f"data-{names.uuid}-0.orc"
    assert names.new_changelog_file_name() == f"changelog-{names.uuid}-1.orc"
    assert _layout().new_file_names().file_format == "parquet"


def test_one_retry_loop_with_a_pluggable_executor(tmp_path: Path) -> None:
    table = pk_table(str(tmp_path / "wh"), bucket="1", **{"write-only": "true"})
    for i in range(2):
        w = table.new_write("u")
        w.write_arrow(rows([1, 2], [f"v{i}"] * 2))
        table.new_commit("u").commit(w.prepare_commit())
    calls: list[int] = []

    def executor(source: CompactSource, work: Sequence[BucketWork], *, full: bool,
                 abort: object) -> list[CommitMessage]:
        compactor = new_compactor(source)
        out = [compactor.message(p, b, total, compactor.compact(p, b, files, full=full))
               for p, b, total, files in work]
        if not calls:  # a concurrent writer wins the first round
            w = table.new_write("other")
            w.write_arrow(rows([3], ["late"]))
            table.new_commit("other").overwrite(w.prepare_commit(), {})
        calls.append(len(work))
        return [m for m in out if m is not None]

    outcome = compact_with_retries(lambda: table, commit_user="c", executor=executor)
    assert outcome.attempts == 2 and calls == [1, 1]
    assert outcome.snapshot_id == table.latest_snapshot().id  # type: ignore[union-attr]
    assert [r["id"] for r in table.to_arrow().to_pylist()] == [3]
    with pytest.raises(CommitConflictError, match="conflicted with concurrent commits 1 times"):
        calls.clear()
        for i in range(2):
            w = table.new_write("u")
            w.write_arrow(rows([4], [f"x{i}"]))
            table.new_commit("u").commit(w.prepare_commit())
        compact_with_retries(lambda: table, commit_user="c", executor=executor,
                             max_attempts=1)
