"""The resolved table (issue 29 scope 1): a table parses its schema's options once
(``FileStoreTable.context``), names its bucket mode by Java's rule, and its writer takes the
buckets computed upstream instead of hashing the bucket key again."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import paimon_core.write.table_write as table_write_module
from paimon_core.bucket import bucket_ids
from paimon_core.errors import SchemaError, UnsupportedError
from paimon_core.layout import TableLayout
from paimon_core.options import CoreOptions
from paimon_core.schema_change import SetOption
from paimon_core.spec.option_enums import BucketMode
from paimon_core.spec.schema import TableSchema
from paimon_core.types import DataField, parse_sql_type
from tests.tables import USER, append_table, make_catalog, pk_table, sorted_rows

ROWS = pa.table({"pt": ["a", "a", "b", "b", "b"], "id": [1, 2, 3, 4, 5],
                 "v": ["p", "q", "r", "s", "t"]})


def _schema(bucket: str | None, primary_keys: tuple[str, ...],
            partition_keys: tuple[str, ...] = ()) -> TableSchema:
    fields = (DataField(0, "id", parse_sql_type("INT NOT NULL")),
              DataField(1, "v", parse_sql_type("STRING")))
    return TableSchema(id=0, fields=fields, primary_keys=primary_keys,
                       partition_keys=partition_keys,
                       options={} if bucket is None else {"bucket": bucket})


# Java: KeyValueFileStore.bucketMode (primary-key tables: -2 POSTPONE_MODE, -1 HASH_DYNAMIC
# (CROSS_PARTITION when the key lacks a partition key), else
# HASH_FIXED) and AppendOnlyFileStore.bucketMode (append tables: -1 BUCKET_UNAWARE, else
# HASH_FIXED); bucket unset is -1 (CoreOptions.BUCKET's default).
@pytest.mark.parametrize(("bucket", "primary_keys", "mode"), [
    ("4", ("id",), BucketMode.HASH_FIXED),
    ("4", ("id", "v"), BucketMode.HASH_FIXED),  # partitioned by v below: key holds it
    ("-1", ("id",), BucketMode.HASH_DYNAMIC),
    (None, ("id",), BucketMode.HASH_DYNAMIC),
    ("-2", ("id",), BucketMode.POSTPONE),
    ("4", (), BucketMode.HASH_FIXED),
    ("-1", (), BucketMode.BUCKET_UNAWARE),
    (None, (), BucketMode.BUCKET_UNAWARE),
])
def test_bucket_mode_follows_java(bucket: str | None, primary_keys: tuple[str, ...],
                                  mode: BucketMode) -> None:
    assert _schema(bucket, primary_keys).bucket_mode is mode
    if primary_keys:  # partitioned by v: the key lacks it unless it holds v
        cross = "v" not in primary_keys and bucket in ("-1", None)
        crossed = _schema(bucket, primary_keys, ("v",))
        if cross:
            assert crossed.bucket_mode is BucketMode.CROSS_PARTITION
        elif "v" in primary_keys:
            assert crossed.bucket_mode is mode
        else:  # a count (or -2) with a cross-partition key: refused as Java refuses it
            with pytest.raises(SchemaError, match="needs dynamic bucket mode"):
                crossed.bucket_mode  # noqa: B018


def test_cross_partition_key_needs_bucket_minus_one() -> None:
    with pytest.raises(SchemaError, match=r"bucket=4: a primary key without all partition keys"):
        _schema("4", ("id",), ("v",)).bucket_mode  # noqa: B018


@pytest.mark.parametrize(("bucket", "primary_keys", "message"), [
    ("-2", (), "bucket=-2 is not valid for an append table"),
    ("0", ("id",), "bucket='0': must be -1"),
    ("-3", (), "bucket='-3': must be -1"),
    ("four", ("id",), "bucket='four' is not an integer"),
])
def test_bad_bucket_is_refused_by_name(bucket: str, primary_keys: tuple[str, ...],
                                       message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        _schema(bucket, primary_keys).bucket_mode  # noqa: B018


def test_table_holds_its_resolved_settings(tmp_path: Path) -> None:
    catalog = make_catalog(tmp_path)
    pk = pk_table(catalog, bucket="3")
    assert (pk.bucket_mode, pk.num_buckets) == (BucketMode.HASH_FIXED, 3)
    assert pk.layout.partition_keys == ("pt",)
    assert pk.options.write_only
    dynamic = pk_table(catalog, "db.dyn", bucket="-1")
    assert dynamic.bucket_mode is BucketMode.HASH_DYNAMIC
    assert append_table(catalog).bucket_mode is BucketMode.BUCKET_UNAWARE
    # an ALTER is seen by the table that made it (a new context), and by a new handle
    pk.alter([SetOption("write-only", "false")])
    assert not pk.options.write_only
    assert not catalog.get_table("db.pk").options.write_only


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts the option maps parsed (``CoreOptions`` made) and layouts made from now on."""
    made: Counter[str] = Counter()
    for cls in (CoreOptions, TableLayout):
        def counted(self: Any, *a: Any, _init: Any = cls.__init__, _name: str = cls.__name__,
                    **k: Any) -> None:
            made[_name] += 1
            _init(self, *a, **k)

        monkeypatch.setattr(cls, "__init__", counted)
    return made


def test_one_parse_per_table_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Building a primary-key table's TableWrite (inline compaction on) and writing a batch
    parses the option map once and lays out the paths once (13 and 3 times before)."""
    make = pk_table(make_catalog(tmp_path), **{"write-only": "false"})
    table = make_catalog(tmp_path).get_table("db.pk")
    assert table.schema == make.schema
    made = _count_parses(monkeypatch)
    with table.new_write(USER) as w:
        w.write_arrow(ROWS)
        messages = w.prepare_commit()
    assert made == Counter({"CoreOptions": 1, "TableLayout": 1})
    with table.new_write(USER) as w:  # the second writer of the same table parses nothing
        w.write_arrow(ROWS)
    assert made == Counter({"CoreOptions": 1, "TableLayout": 1})
    table.new_commit(USER).commit(messages)


def _given(table: Any, data: pa.Table) -> np.ndarray:
    keys = list(table.schema.bucket_keys)
    return bucket_ids([data.column(k) for k in keys],
                      [table.schema.field(k).type for k in keys], table.num_buckets)


def _no_hash(*_a: object, **_k: object) -> None:
    raise AssertionError("the writer hashed the bucket key again")


def test_buckets_given_are_used_not_hashed_again(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = make_catalog(tmp_path)
    hashed, given = pk_table(catalog, "db.hashed", bucket="3"), pk_table(catalog, bucket="3")
    buckets = _given(given, ROWS)
    with hashed.new_write(USER) as w:
        w.write_arrow(ROWS)
        hashed.new_commit(USER).commit(w.prepare_commit())

    monkeypatch.setattr(table_write_module, "bucket_ids", _no_hash)
    with given.new_write(USER) as w:
        w.write_arrow(ROWS, buckets=pa.array(buckets, pa.int32()))
        given.new_commit(USER).commit(w.prepare_commit())
    files = [sorted((r["partition"], r["bucket"], r["record_count"])
                    for r in t.inspect.files().to_pylist()) for t in (hashed, given)]
    assert files[0] == files[1]
    assert len({b for _, b, _ in files[1]}) > 1  # the rows really spread over buckets
    assert sorted_rows(given, "pt", "id", "v") == sorted_rows(hashed, "pt", "id", "v")


def test_bad_buckets_are_refused(tmp_path: Path) -> None:
    catalog = make_catalog(tmp_path)
    table = pk_table(catalog, bucket="3")
    with table.new_write(USER) as w:
        with pytest.raises(SchemaError, match="buckets: 2 given for 5 rows"):
            w.write_arrow(ROWS, buckets=np.array([0, 1]))
        with pytest.raises(SchemaError, match=r"row 3 has bucket 3, outside 0\.\.2"):
            w.write_arrow(ROWS, buckets=np.array([0, 1, 2, 3, 0]))
        with pytest.raises(SchemaError, match="row 0 has bucket -1"):
            w.write_arrow(ROWS, buckets=np.array([-1, 1, 2, 0, 0]))
        with pytest.raises(SchemaError, match="1 of them are null"):
            w.write_arrow(ROWS, buckets=pa.array([0, None, 1, 2, 0], pa.int32()))
        with pytest.raises(SchemaError, match="integers expected"):
            w.write_arrow(ROWS, buckets=np.array([0.0, 1.0, 2.0, 0.0, 0.0]))
        assert w.prepare_commit() == []  # nothing was written
    dynamic = pk_table(catalog, "db.dyn", bucket="-1")
    with dynamic.new_write(USER) as w, pytest.raises(
            UnsupportedError, match="bucket mode is hash-dynamic"):
        w.write_arrow(ROWS, buckets=np.zeros(5, np.int64))


def test_pipeline_writer_passes_the_bucket_column_down(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """``pipelines.writer.write_batches`` (a Spark write task of the CDC job and of
    ``write_dataframe``) hands the ``_paimon_bucket`` column that the CDC decode or
    ``bucketed`` computed to the writer: the rows land in the buckets given (here all in
    bucket 2, which no hash of these keys gives them all), the writer hashes nothing."""
    from pipelines.config import CatalogSettings, TableHandle
    from pipelines.writer import BUCKET_COLUMN, write_batches

    table = pk_table(make_catalog(tmp_path), bucket="3")
    handle = TableHandle.of(CatalogSettings(str(tmp_path)), table)
    assert set(_given(table, ROWS).tolist()) != {2}
    monkeypatch.setattr(table_write_module, "bucket_ids", _no_hash)
    batch = ROWS.append_column(BUCKET_COLUMN, pa.array([2] * 5, pa.int32())).to_batches()
    messages, rows = write_batches(handle, USER, batch)
    assert rows == 5 and {m.bucket for m in messages} == {2}
    with pytest.raises(SchemaError, match=r"row 0 has bucket 7, outside 0\.\.2"):
        write_batches(handle, USER, ROWS.append_column(
            BUCKET_COLUMN, pa.array([7] * 5, pa.int32())).to_batches())


def test_one_parse_per_expiry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``table.expire_snapshots()`` parses the option map once (the table's context, reused by
    the expiry's retention, layout and paths; twice per expiry before), and sees an ALTER
    made by another handle (the latest schema's retention applies)."""
    pk_table(make_catalog(tmp_path), **{"snapshot.num-retained.min": "1",
                                        "snapshot.num-retained.max": "1"})
    table = make_catalog(tmp_path).get_table("db.pk")
    for _ in range(3):
        with table.new_write(USER) as w:
            w.write_arrow(ROWS)
            table.new_commit(USER).commit(w.prepare_commit())
    table = make_catalog(tmp_path).get_table("db.pk")
    made = _count_parses(monkeypatch)
    assert table.expire_snapshots().expired_ids == (1, 2)
    assert made["CoreOptions"] == 1  # (the snapshot/tag/consumer managers' path-only layouts
    assert table.expire_snapshots().expired_ids == ()  # are not counted) a second one: none
    assert made["CoreOptions"] == 1
    with table.new_write(USER) as w:
        w.write_arrow(ROWS)
        table.new_commit(USER).commit(w.prepare_commit())
    make_catalog(tmp_path).get_table("db.pk").alter([SetOption("snapshot.num-retained.max",
                                                               "2")])
    assert table.expire_snapshots().expired_ids == ()  # 3 and 4 kept: max 2, as altered
    assert sorted(s.id for s in table.snapshot_manager.snapshots()) == [3, 4]


def test_one_parse_per_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A streaming scan, an incremental read (delta and diff) and a batch read of one table
    handle share its parsed options (one parse in all, 11 before); options given to one
    streaming scan are parsed for it alone."""
    table = pk_table(make_catalog(tmp_path), bucket="2")
    for i in range(2):
        with table.new_write(USER) as w:
            w.write_arrow(ROWS.set_column(2, "v", pa.array([f"{i}"] * 5)))
            table.new_commit(USER).commit(w.prepare_commit())
    table = make_catalog(tmp_path).get_table("db.pk")
    made = _count_parses(monkeypatch)
    scan = table.new_stream_scan()
    plan = scan.plan()
    assert plan is not None and scan.read(plan).num_rows == 5
    assert table.read_merged_changes(1, 2).num_rows == 5
    assert table.read_unmerged_changes(0, 2).num_rows == 10
    assert table.read_merged_changes(1, 2, mode="diff").num_rows == 5  # +I: the new values
    assert table.to_arrow().num_rows == 5
    assert made["CoreOptions"] == 1
    scan = table.new_stream_scan(options={"scan.mode": "from-snapshot", "scan.snapshot-id": "2"})
    assert scan.options.scan_snapshot_id == 2 and made["CoreOptions"] == 2
