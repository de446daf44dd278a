"""The read side of ``format("paimon")`` as paimon-spark users expect it (issue 18, scope 1
and 5): options validated (a typo names its close match), ``incremental-between`` (ids, tags,
timestamps), stream read limits, typed error messages without a traceback, and filters of
every atomic type pushed down (results equal to Spark filtering the unfiltered read)."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core.table import FileStoreTable
from tests.tables import make_table, write_rows

pytestmark = pytest.mark.spark


def _error(action: Callable[[], Any]) -> str:
    """The message Spark raises for ``action`` (an AnalysisException / Py4J error)."""
    with pytest.raises(Exception) as info:  # Spark wraps the Python error
        action()
    return str(info.value)


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0]


# ---------------------------------------------------------------------------- change table


@pytest.fixture(scope="module")
def changes(tmp_path_factory: pytest.TempPathFactory) -> FileStoreTable:
    """``db.c`` (id key, v, batch): 1: ids 0..9; 2: 5..14 updated / inserted; 3: ids 0, 1
    deleted; 4: ids 20, 21. Tags ``t1`` (1) and ``t3`` (3)."""
    t = make_table(tmp_path_factory.mktemp("changes") / "wh",
                   [("id", "BIGINT"), ("v", "STRING"), ("batch", "INT")], name="db.c",
                   primary_keys=["id"], options={"bucket": "1", "write-only": "true"})

    def commit(ident: int, ids: list[int], kinds: list[str] | None = None) -> None:
        data = pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}-{ident}" for i in ids],
                         "batch": pa.array([ident] * len(ids), pa.int32())})
        if kinds is not None:
            data = data.append_column("_k", pa.array(kinds))
        write_rows(t, data, ident, user="fixture",
                   row_kind_column="_k" if kinds is not None else None)

    commit(1, list(range(10)))
    t.create_tag("t1", 1)
    commit(2, list(range(5, 15)))
    commit(3, [0, 1], kinds=["-D", "-D"])
    t.create_tag("t3", 3)
    commit(4, [20, 21])
    return t


def _wh(t: FileStoreTable) -> str:
    return t.path.rsplit("/", 2)[0]


def _read(spark: Any, t: FileStoreTable, **options: str) -> Any:
    name = t.path.rsplit("/", 2)
    return spark.read.format("paimon").option("warehouse", name[0]) \
        .options(**options).load(f"{name[1].removesuffix('.db')}.{name[2]}")


def _rows(df: Any) -> list[tuple[str, ...]]:
    """The rows, sorted, each value as its ``repr`` (NaN equals NaN, ``-0.0`` is not ``0.0``,
    None sorts with the rest)."""
    return sorted(tuple(repr(v) for v in r) for r in df.collect())


def _changed_since(t: FileStoreTable, start: int, end: int) -> list[tuple[str, ...]]:
    """Independent reference of a merged incremental read without retractions: the rows of
    the state at ``end`` written by a commit after ``start`` (every commit tags its rows)."""
    state = t.to_arrow(snapshot_id=end).to_pylist()
    return sorted((repr(r["id"]), repr(r["v"]), repr(r["batch"])) for r in state
                  if r["batch"] > start)


def test_unknown_option_names_the_close_match(spark: Any, changes: FileStoreTable) -> None:
    msg = _error(lambda: _read(spark, changes, **{"scan.snapshotid": "1"}).collect())
    first = _first_line(msg)
    assert "UnknownOptionError: unknown option 'scan.snapshotid'" in first
    assert "did you mean 'scan.snapshot-id'" in first
    assert "Traceback" not in msg
    # Paimon table options pass through; a typo of one is refused with its name
    assert _read(spark, changes, **{"changelog-producer": "none"}).count() == 15
    msg = _error(lambda: _read(spark, changes, **{"changelog-produce": "none"}).collect())
    assert "did you mean 'changelog-producer'" in _first_line(msg)
    # writes are checked too
    df = spark.createDataFrame([(1, "x", 1)], "id long, v string, batch int")
    msg = _error(lambda: df.write.format("paimon").option("warehouse", _wh(changes))
                 .option("commit.usr", "me").mode("append").save("db.c"))
    assert "did you mean 'commit.user'" in _first_line(msg)
    # a bad value is a typed error as well
    msg = _error(lambda: _read(spark, changes, **{"scan.snapshot-id": "two"}).collect())
    assert "SchemaError: option scan.snapshot-id='two' is not an integer" in _first_line(msg)


def test_options_are_case_insensitive(spark: Any, changes: FileStoreTable) -> None:
    got = _rows(_read(spark, changes, **{"Scan.Snapshot-ID": "1"}))
    assert got == sorted((repr(i), repr(f"v{i}-1"), "1") for i in range(10))
    got = _rows(_read(spark, changes, **{"scan.timestamp": _iso(changes, 2)}))
    assert got == _rows(_read(spark, changes, **{"scan.snapshot-id": "2"}))


def _iso(t: FileStoreTable, snapshot_id: int) -> str:
    millis = t.snapshot_manager.snapshot(snapshot_id).time_millis
    stamp = datetime.datetime.fromtimestamp(millis / 1000, datetime.UTC)
    return stamp.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def test_incremental_between_snapshots_tags_and_timestamps(spark: Any,
                                                          changes: FileStoreTable) -> None:
    assert _rows(_read(spark, changes, **{"incremental-between": "1,3"})) == \
        _changed_since(changes, 1, 3)
    assert _rows(_read(spark, changes, **{"incremental-between": "1,4"})) == \
        _changed_since(changes, 1, 4)
    # with read.changelog the deletes of the range come back as -D rows
    kinds = _read(spark, changes, **{"incremental-between": "2,3", "read.changelog": "true"})
    assert _rows(kinds.select("_kind", "id")) == [("'-D'", "0"), ("'-D'", "1")]
    # tag names: the difference of the two tags' states
    assert _rows(_read(spark, changes, **{"incremental-between": "t1,t3"})) == \
        _changed_since(changes, 1, 3)
    sm = changes.snapshot_manager
    between = f"{sm.snapshot(1).time_millis},{sm.snapshot(4).time_millis}"
    assert _rows(_read(spark, changes, **{"incremental-between-timestamp": between})) == \
        _changed_since(changes, 1, 4)
    assert _read(spark, changes, **{"incremental-between-timestamp": "1,2"}).count() == 0
    msg = _error(lambda: _read(spark, changes, **{"incremental-between": "1,9"}).collect())
    assert "SnapshotNotExistError: incremental-between (1, 9]: snapshot 9 does not exist" in \
        _first_line(msg)


def test_typed_errors_come_first(spark: Any, tmp_path: Path) -> None:
    t = make_table(tmp_path / "wh", [("id", "BIGINT")], name="db.x",
                   options={"write-only": "true"})
    for i in range(3):
        write_rows(t, pa.table({"id": pa.array([i], pa.int64())}), i + 1, user="u")
    t.expire_snapshots(retain_min=1, retain_max=1, older_than_millis=2**62)
    msg = _error(lambda: _read(spark, t, table="db.nope").collect())
    assert "TableNotExistError: table 'db.nope' does not exist" in _first_line(msg)
    assert "Traceback" not in msg
    msg = _error(lambda: _read(spark, t, **{"scan.snapshot-id": "1"}).collect())
    assert "SnapshotExpiredError" in _first_line(msg) and "Traceback" not in msg
    msg = _error(lambda: _read(spark, t, **{"incremental-between": "0,3"}).collect())
    assert "SnapshotExpiredError: incremental-between (0, 3]: snapshot 1 has expired" in \
        _first_line(msg)
    msg = _error(lambda: spark.readStream.format("paimon").option("warehouse", _wh(t))
                 .option("incremental-between", "1,3").load("db.x")
                 .writeStream.format("console").start().processAllAvailable())
    assert "incremental-between is a batch read" in msg and "Traceback" not in msg


# ---------------------------------------------------------------------------- read limits


def test_stream_read_limits_bound_each_micro_batch(spark: Any, tmp_path: Path) -> None:
    t = make_table(tmp_path / "wh", [("id", "BIGINT"), ("batch", "INT")], name="db.s",
                   options={"write-only": "true"})  # append, unaware bucket: a file a commit

    def commit(ident: int, n: int) -> None:
        ids = list(range(ident * 100, ident * 100 + n))
        write_rows(t, pa.table({"id": pa.array(ids, pa.int64()),
                                "batch": pa.array([ident] * n, pa.int32())}), ident, user="u")

    for ident in range(1, 6):
        commit(ident, 2)
    out, ck = tmp_path / "out", tmp_path / "ck"

    def run(**limits: str) -> list[int]:
        q = (spark.readStream.format("paimon").option("warehouse", str(tmp_path / "wh"))
             .options(**{"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}, **limits)
             .load("db.s").writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(ck)).trigger(availableNow=True).start())
        q.awaitTermination(120)
        return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]

    # five snapshots behind, two files a batch: three micro-batches (2 + 2 + 1 snapshots)
    assert run(**{"read.stream.maxFilesPerTrigger": "2"}) == [4, 4, 2]
    commit(6, 3)
    commit(7, 1)
    commit(8, 1)
    # restarted from the checkpoint, rows bounded: one snapshot of 3 rows exceeds the limit
    # alone (a batch holds a snapshot at least), the next two fit together
    assert run(**{"read.stream.maxRowsPerTrigger": "2"}) == [3, 2]
    got = sorted(r["id"] for r in spark.read.parquet(str(out)).collect())
    assert got == sorted(t.to_arrow().column("id").to_pylist())  # each row exactly once


# ---------------------------------------------------------------------------- filters

_NAN = float("nan")


@pytest.fixture(scope="module")
def typed(tmp_path_factory: pytest.TempPathFactory) -> FileStoreTable:
    """``db.types``: one partition ``k`` per commit k = 1..4, values of every atomic type
    rising with k (stats prune whole partitions); nulls in k = 2, ``-0.0``/``0.0`` in k = 1,
    NaN in k = 4."""
    t = make_table(tmp_path_factory.mktemp("types") / "wh",
                   [("k", "INT"), ("f", "FLOAT"), ("d", "DOUBLE"), ("dec", "DECIMAL(10, 2)"),
                    ("dt", "DATE"), ("ts", "TIMESTAMP(6)"),
                    ("ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("bin", "BYTES")],
                   name="db.types", partition_keys=["k"], options={"write-only": "true"})
    for k in range(1, 5):
        n = 4
        d = [k * 10.0 + i for i in range(n)]
        if k == 1:
            d[:3] = [-0.0, 0.0, -5.0]
        if k == 4:
            d[3] = _NAN
        day = datetime.date(2024, 1, k)
        noon = datetime.datetime(2024, 1, k, 12)
        cols: dict[str, list[Any]] = {
            "f": [k + 0.5 + i for i in range(n)], "d": d,
            "dec": [decimal.Decimal(k) + decimal.Decimal("0.25") * i for i in range(n)],
            "dt": [day] * n, "ts": [noon + datetime.timedelta(minutes=i) for i in range(n)],
            "ltz": [noon + datetime.timedelta(seconds=i) for i in range(n)],
            "bin": [bytes([k, i]) for i in range(n)],
        }
        if k == 2:
            for v in cols.values():
                v[0] = None
        data = pa.table({
            "k": pa.array([k] * n, pa.int32()), "f": pa.array(cols["f"], pa.float32()),
            "d": pa.array(cols["d"], pa.float64()),
            "dec": pa.array(cols["dec"], pa.decimal128(10, 2)),
            "dt": pa.array(cols["dt"], pa.date32()),
            "ts": pa.array(cols["ts"], pa.timestamp("us")),
            "ltz": pa.array(cols["ltz"], pa.timestamp("us", tz="UTC")),
            "bin": pa.array(cols["bin"], pa.binary()),
        })
        write_rows(t, data, k, user="u")
    return t


def _spark_filters(df: Any) -> str:
    """The Filter nodes Spark still applies (a pushed filter leaves none)."""
    plan = df._jdf.queryExecution().optimizedPlan().toString()
    return "\n".join(line for line in plan.splitlines() if "Filter" in line)


@pytest.mark.parametrize(
    ("condition", "prunes"),
    [
        ("f <= 2.5", True),  # (>, >= on floats never prune: NaN may be missing from stats)
        ("d = 0.0", True),  # -0.0 and 0.0 both
        ("d < 0.0", True),  # -0.0 is not below 0.0 for Spark
        ("d >= -0.0 AND d <= 0.0", True),
        ("d > 40.0", False),  # NaN is above every number
        ("d = double('NaN')", False),
        ("d IS NULL", False),
        ("dec > 3.00", True),
        ("dt = DATE'2024-01-03'", True),
        ("ts >= TIMESTAMP_NTZ'2024-01-03 12:01:00'", True),
        ("ltz < TIMESTAMP'2024-01-02 00:00:00'", True),
        ("bin >= X'0301'", False),  # binary min/max are not used for pruning
        ("bin IN (X'0102', X'0400')", False),
    ],
)
def test_filter_of_every_atomic_type_is_pushed(spark: Any, typed: FileStoreTable,
                                               condition: str, prunes: bool) -> None:
    base = _read(spark, typed)
    expected = _rows(base.localCheckpoint().filter(condition))  # Spark's own semantics
    df = _read(spark, typed, **{"split.target-size": "0"}).filter(condition)
    assert _spark_filters(df) == "", condition  # every conjunct pushed into the scan
    got = _rows(df)
    assert got == expected
    assert got, condition
    if prunes:  # files skipped: fewer input partitions than the four of the table
        assert df.rdd.getNumPartitions() < 4


# ---------------------------------------------------------------------------- the declarations


def test_declared_options_and_their_values() -> None:
    from paimon_core import CoreOptions, SchemaError
    from pipelines.spark_source.options import (
        READ_OPTIONS,
        WRITE_OPTIONS,
        ReadOptions,
        UnknownOptionError,
        check_options,
    )

    names = [o.name for o in (*READ_OPTIONS, *WRITE_OPTIONS)]
    assert len(names) == len({n.lower() for n in names})  # one declaration a key
    check_options({n.lower(): "" for n in names})  # Spark lower-cases every key
    check_options({CoreOptions.MERGE_ENGINE: "deduplicate", "fields.v.ignore-retract": "true",
                   "s3.endpoint": "http://x", "storage.anon": "true"})
    with pytest.raises(UnknownOptionError) as info:
        check_options({"read.stream.maxfilespertriger": "2"})
    assert info.value.suggestion == "read.stream.maxFilesPerTrigger"
    with pytest.raises(UnknownOptionError) as info:
        check_options({"zzz": "1"})
    assert info.value.suggestion is None
    for bad in ({"read.changelog": "yes"}, {"scan.mode": "from-nowhere"},
                {"split.target-size": "big"}, {"read.stream.maxrowspertrigger": "0"},
                {"incremental-between": "1"}, {"incremental-between": "1,t3"},
                {"incremental-between-scan-mode": "merge"},
                {"scan.snapshot-id": "1", "scan.tag-name": "t"},
                {"incremental-between": "1,2", "scan.snapshot-id": "1"},
                {"scan.timestamp": "yesterday"}):
        with pytest.raises(SchemaError):
            check_options(bad)
    ro = ReadOptions.parse({"scan.timestamp": "1970-01-01 00:00:01.5",
                            "read.stream.maxbytespertrigger": "1 mb"})
    assert ro.timestamp_millis == 1500 and ro.max_bytes == 1024 * 1024 and ro.limited
