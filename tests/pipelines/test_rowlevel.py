"""``PaimonTable`` (pipelines/rowlevel): UPDATE / DELETE / MERGE through a real SparkSession,
against a plain-Python model (tests/pipelines/rowlevel_model.py), on primary-key and append
tables, partitioned and not; one commit per operation with the row kinds paimon-spark writes;
copy-on-write of only the touched files; exactly once on re-run; refusals by name."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_core import CommitConflictError, FileStoreTable, SchemaError, UnsupportedError
from pipelines.config import CatalogSettings
from pipelines.rowlevel import MergeMatchError, PaimonTable
from pipelines.rowlevel.plan import target_plan
from pipelines.rowlevel.target import TargetSnapshot
from tests.pipelines.rowlevel_model import (
    CONDITIONS,
    MOVE,
    SETS,
    MergeSpec,
    Row,
    canonical,
    model_delete,
    model_merge,
    model_update,
    run_merge,
)
from tests.profiles import examples
from tests.tables import make_catalog, make_table, write_rows

pytestmark = pytest.mark.spark

COLUMNS = [("pt", "STRING"), ("id", "INT"), ("v", "INT")]
#: name -> (primary key, partition keys, options)
SHAPES: dict[str, tuple[list[str], list[str], dict[str, str]]] = {
    "pk": (["pt", "id"], [], {"bucket": "2"}),
    "pk_part": (["pt", "id"], ["pt"], {"bucket": "1"}),
    "append": ([], [], {}),
    "append_part": ([], ["pt"], {}),
}
_names = itertools.count()


def arrow(rows: list[Row]) -> pa.Table:
    return pa.table({"pt": pa.array([r[0] for r in rows], pa.string()),
                     "id": pa.array([r[1] for r in rows], pa.int32()),
                     "v": pa.array([r[2] for r in rows], pa.int32())})


def new_table(wh: str | Path, shape: str, batches: list[list[Row]]) -> FileStoreTable:
    pk, part, opts = SHAPES[shape]
    t = make_table(wh, COLUMNS, name=f"db.{shape}_{next(_names)}", primary_keys=pk,
                   partition_keys=part, options=opts)
    for rows in batches:
        if rows:
            write_rows(t, arrow(rows))
    return t


def rows_of(t: FileStoreTable) -> pd.DataFrame:
    got = t.to_arrow().to_pylist()
    return canonical([(r["pt"], r["id"], r["v"]) for r in got])


def opened(spark: Any, wh: str | Path, t: FileStoreTable, **kw: Any) -> PaimonTable:
    return PaimonTable.forName(spark, str(t.identifier), warehouse=str(wh), **kw)


def latest_id(t: FileStoreTable) -> int:
    return t.snapshot_manager.latest_snapshot_id() or 0


def kinds(t: FileStoreTable, after: int) -> set[str]:
    changes = t.read_unmerged_changes(after, latest_id(t))
    return set(changes.column(0).to_pylist())


# ---------------------------------------------------------------------------- properties

ROW = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 7),
                st.one_of(st.none(), st.integers(0, 9)))
OP = st.one_of(
    st.tuples(st.just("update"), st.integers(0, len(CONDITIONS) - 1),
              st.integers(0, len(SETS))),
    st.tuples(st.just("delete"), st.integers(0, len(CONDITIONS) - 1)),
    st.tuples(st.just("merge"), st.lists(ROW, max_size=6, unique_by=lambda r: (r[0], r[1])),
              st.builds(MergeSpec, st.booleans(), st.booleans(), st.booleans(),
                        st.booleans())),
)


def _unique(rows: list[Row]) -> list[Row]:
    return list({(r[0], r[1]): r for r in rows}.values())


def apply_op(spark: Any, wh: str, t: FileStoreTable, shape: str, op: tuple[Any, ...],
             model: list[Row]) -> list[Row]:
    """Run ``op`` through PaimonTable, check it made one commit (none when nothing changed)
    with the row kinds paimon-spark writes, and return the model's new rows."""
    pt = opened(spark, wh, t)
    before = latest_id(t)
    pk = bool(SHAPES[shape][0])
    if op[0] == "update":
        sql, cond = CONDITIONS[op[1]]
        set_, new = MOVE if op[2] == len(SETS) and not pk else SETS[op[2] % len(SETS)]
        res = pt.update(sql, set_)
        expected = model_update(model, cond, new)
        changed, want_kinds = res.updated, {"+U"}
        assert res.updated == sum(cond(r) for r in model)
    elif op[0] == "delete":
        sql, cond = CONDITIONS[op[1]]
        res = pt.delete(sql)
        expected = model_delete(model, cond)
        changed, want_kinds = res.deleted, {"-D"}
        assert res.deleted == len(model) - len(expected)
    else:
        source = spark.createDataFrame(op[1], "pt STRING, id INT, v INT")
        res = run_merge(pt, source, op[2])
        expected = model_merge(model, op[1], op[2])
        changed = res.updated + res.deleted + res.inserted
        want_kinds = ({"+U"} if res.updated else set()) | ({"-D"} if res.deleted else set()) \
            | ({"+I"} if res.inserted else set())
    assert latest_id(t) == before + (1 if changed else 0), res
    assert res.read_snapshot == (before or None) and len(res.snapshot_ids) == (1 if changed else 0)
    if changed:
        got = kinds(t, before)
        # append tables: only the rewritten and inserted rows, as +I (none when a delete
        # removed whole files)
        assert got == want_kinds if pk else got <= {"+I"}, (op, got)
    return expected


@pytest.mark.parametrize("shape", list(SHAPES))
def test_operations_match_the_model(spark: Any, shape: str) -> None:
    wh = tempfile.mkdtemp(prefix="rowlevel-")

    @settings(max_examples=examples(3))
    @given(first=st.lists(ROW, max_size=8), second=st.lists(ROW, max_size=8),
           ops=st.lists(OP, min_size=1, max_size=2))
    def check(first: list[Row], second: list[Row], ops: list[tuple[Any, ...]]) -> None:
        pk = bool(SHAPES[shape][0])
        if pk:
            first, second = _unique(first), _unique(second)
            model = _unique(first + second)
        else:
            model = first + second
        t = new_table(wh, shape, [first, second])  # two commits: two files per bucket
        for op in ops:
            model = apply_op(spark, wh, t, shape, op, model)
            pd.testing.assert_frame_equal(rows_of(t), canonical(model))

    check()


# ---------------------------------------------------------------------------- behaviour


def test_append_rewrites_only_the_touched_files(spark: Any, tmp_path: Path) -> None:
    t = new_table(tmp_path, "append_part", [[("a", 1, 1), ("b", 2, 2)], [("a", 3, 3)]])
    files = set(t.inspect.files().column("file_path").to_pylist())
    assert len(files) == 3  # (a: 2 files, b: 1 file)
    res = opened(spark, tmp_path, t).update("id = 3", {"v": "30"})
    assert res.rewritten_files == 1 and res.updated == 1
    after = set(t.inspect.files().column("file_path").to_pylist())
    assert len(files & after) == 2 and len(after - files) == 1  # one file replaced
    snap = t.latest_snapshot()
    assert snap is not None and snap.commit_kind.value == "APPEND"
    pd.testing.assert_frame_equal(rows_of(t), canonical([("a", 1, 1), ("b", 2, 2),
                                                         ("a", 3, 30)]))


def test_append_update_moves_rows_between_partitions(spark: Any, tmp_path: Path) -> None:
    t = new_table(tmp_path, "append_part", [[("a", 1, 1), ("a", 2, 2), ("b", 3, 3)]])
    opened(spark, tmp_path, t).update("id = 2", {"pt": "'b'"})
    parts = t.inspect.partitions()
    assert sorted(parts.column("record_count").to_pylist()) == [1, 2]
    pd.testing.assert_frame_equal(rows_of(t), canonical([("a", 1, 1), ("b", 2, 2),
                                                         ("b", 3, 3)]))


def test_rerun_with_the_same_identifier_applies_once(spark: Any, tmp_path: Path) -> None:
    for shape in ("pk_part", "append"):
        t = new_table(tmp_path, shape, [[("a", 1, 1), ("a", 2, 2)]])
        pt = opened(spark, tmp_path, t, commit_user="nightly-fix")
        src = spark.createDataFrame([("a", 2, 20), ("a", 9, 90)], "pt STRING, id INT, v INT")
        spec = MergeSpec(False, False, False, False)
        first = run_merge(pt, src, spec, commit_identifier=7)
        assert first.snapshot_ids == (2,) and not first.skipped
        again = run_merge(pt, src, spec, commit_identifier=7)  # e.g. a retried job
        assert again.skipped and again.snapshot_ids == () and latest_id(t) == 2
        assert pt.delete("id = 1", commit_identifier=7).skipped  # same id: not applied
        assert latest_id(t) == 2
        pd.testing.assert_frame_equal(rows_of(t), canonical([("a", 1, 1), ("a", 2, 22),
                                                             ("a", 9, 90)]))
        assert pt.delete("id = 1", commit_identifier=8).deleted == 1


def test_duplicate_source_matches_are_refused(spark: Any, tmp_path: Path) -> None:
    t = new_table(tmp_path, "pk", [[("a", 1, 1), ("a", 2, 2)]])
    pt = opened(spark, tmp_path, t)
    src = spark.createDataFrame([("a", 1, 10), ("a", 1, 11)], "pt STRING, id INT, v INT")
    with pytest.raises(MergeMatchError, match=r"2 source rows match the target row "
                                              r"\{'pt': 'a', 'id': 1\}"):
        pt.alias("t").merge(src.alias("s"), "t.pt = s.pt AND t.id = s.id") \
            .whenMatchedUpdateAll().execute()
    assert latest_id(t) == 1
    # only inserts: duplicates that match nothing are not a conflict (as Delta)
    res = pt.alias("t").merge(src.alias("s"), "t.pt = s.pt AND t.id = s.id") \
        .whenNotMatchedInsertAll().execute()
    assert res.inserted == 0 and latest_id(t) == 1


def test_refusals_name_what_is_refused(spark: Any, tmp_path: Path) -> None:
    t = new_table(tmp_path, "pk", [[("a", 1, 1)]])
    pt = opened(spark, tmp_path, t)
    with pytest.raises(SchemaError, match="key column 'id'"):
        pt.update("id = 1", {"id": "id + 1"})
    with pytest.raises(SchemaError, match=r"\['nope'\] are not columns"):
        pt.update("id = 1", {"nope": "1"})
    with pytest.raises(SchemaError, match=r"source lacks column\(s\) \['v'\]"):
        pt.alias("t").merge(spark.createDataFrame([("a", 1)], "pt STRING, id INT").alias("s"),
                            "t.id = s.id").whenMatchedUpdateAll().execute()
    for options, op, match in (
        ({"merge-engine": "first-row"}, "delete", "'first-row'"),
        ({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}, "update",
         "'aggregation'"),
        ({"merge-engine": "partial-update"}, "delete", "remove-record-on-delete"),
    ):
        other = make_table(tmp_path, COLUMNS, name=f"db.refuse_{next(_names)}",
                           primary_keys=["pt", "id"], options={"bucket": "1", **options})
        write_rows(other, arrow([("a", 1, 1)]))
        before = latest_id(other)
        target = opened(spark, tmp_path, other)
        with pytest.raises(UnsupportedError, match=match):
            target.delete("id = 1") if op == "delete" else target.update(None, {"v": "2"})
        assert latest_id(other) == before
    assert latest_id(t) == 1


def test_partial_update_sets_values_and_refuses_null(spark: Any, tmp_path: Path) -> None:
    t = make_table(tmp_path, COLUMNS, name="db.pu", primary_keys=["pt", "id"],
                   options={"bucket": "1", "merge-engine": "partial-update",
                            "partial-update.remove-record-on-delete": "true"})
    write_rows(t, arrow([("a", 1, 1), ("a", 2, 2)]))
    pt = opened(spark, tmp_path, t)
    pt.update("id = 1", {"v": "10"})
    with pytest.raises(SchemaError, match="sets column 'v' to NULL on a partial-update"):
        pt.update("id = 2", {"v": "NULL"})
    pt.delete("id = 2")
    pd.testing.assert_frame_equal(rows_of(t), canonical([("a", 1, 10)]))


def test_copy_on_write_conflict_is_planned_again(spark: Any, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A compaction that removes the files being rewritten commits between the plan and the
    commit: the commit's conflict check refuses the first attempt, the second plans on the
    compacted files; the update is applied exactly once."""
    import pipelines.rowlevel.apply as apply

    t = new_table(tmp_path, "append", [[("a", 1, 1)], [("a", 2, 2)]])
    real = apply._count
    calls = []

    def count_then_compact(plan: Any) -> Any:
        out = real(plan)
        if not calls:
            assert t.compact() is not None  # removes both files, adds one
        calls.append(1)
        return out

    monkeypatch.setattr(apply, "_count", count_then_compact)
    res = opened(spark, tmp_path, t).update(None, {"v": "v + 100"})
    assert res.attempts == 2 and res.updated == 2
    pd.testing.assert_frame_equal(rows_of(t), canonical([("a", 1, 101), ("a", 2, 102)]))
    calls.clear()  # with one attempt only, the conflict is the caller's, typed
    write_rows(t, arrow([("a", 3, 3)]))  # two files again, for the compaction to merge

    def build(target: TargetSnapshot) -> Any:
        return target_plan(target.frame(spark), target.handle.schema, "update", None,
                           {"v": "v + 1"})

    with pytest.raises(CommitConflictError, match="no longer live"):
        apply.run("UPDATE", CatalogSettings(str(tmp_path)), str(t.identifier), build,
                  commit_user=None, commit_identifier=None, max_attempts=1)
    pd.testing.assert_frame_equal(rows_of(t), canonical([("a", 1, 101), ("a", 2, 102),
                                                         ("a", 3, 3)]))


def test_history_and_restore(spark: Any, tmp_path: Path) -> None:
    t = new_table(tmp_path, "pk", [[("a", 1, 1), ("a", 2, 2)]])
    pt = opened(spark, tmp_path, t)
    pt.delete("id = 1")
    pt.update(None, {"v": "v * 2"})
    hist = pt.history().select("snapshot_id", "operation").collect()
    assert [(r[0], r[1]) for r in hist] == [(3, "UPDATE"), (2, "DELETE"), (1, "APPEND")]
    assert [r[0] for r in pt.history(1).collect()] == [3]
    pt.restoreToVersion(2)
    assert latest_id(t) == 2
    pd.testing.assert_frame_equal(rows_of(t), canonical([("a", 2, 2)]))
    assert sorted(tuple(r) for r in pt.toDF().collect()) == [("a", 2, 2)]
    first = t.snapshot_manager.snapshot(1)
    pt.restoreToTimestamp(first.time_millis)
    assert latest_id(t) == 1
    by_path = PaimonTable.forPath(spark, t.path)
    assert by_path.identifier == str(t.identifier)


def test_session_warehouse_and_missing_warehouse(spark: Any, tmp_path: Path) -> None:
    from paimon_core import ConfigError

    t = new_table(tmp_path, "append", [[("a", 1, 1)]])
    with pytest.raises(ConfigError, match=r"spark\.paimon\.warehouse"):
        PaimonTable.forName(spark, str(t.identifier))
    spark.conf.set("spark.paimon.warehouse", str(tmp_path))
    try:
        assert PaimonTable.forName(spark, str(t.identifier)).delete("v = 1").deleted == 1
    finally:
        spark.conf.unset("spark.paimon.warehouse")
    assert make_catalog(tmp_path).get_table(str(t.identifier)).to_arrow().num_rows == 0


def test_readme_block_runs_as_written(spark: Any, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """README's PaimonTable block, as written (only the warehouse path replaced), in the test
    session (tests/test_readme_examples.py lists it in NOT_RUN for that)."""
    from decimal import Decimal

    from pipelines.spark_source.sql import register_sql
    from tests.readme_harness import README
    from tests.test_readme_examples import WAREHOUSE, orders_table, readme_blocks

    (code,) = [c for _, c in readme_blocks(README.read_text())
               if 'PaimonTable.forName(spark, "sales.orders"' in c]
    wh = tmp_path / "warehouse"
    orders = orders_table(wh, commits=2)
    before = latest_id(orders)
    try:
        exec(compile(code.replace(WAREHOUSE, str(wh)), "README.md", "exec"),
             {"__name__": "readme"})
    finally:
        spark.conf.unset("spark.paimon.warehouse")
        register_sql(spark)
    out = capsys.readouterr().out
    assert f"1 1 ({before + 3},)" in out
    # update, delete, merge: three commits; the restore took the merge back
    assert latest_id(orders) == before + 2
    got = sorted((r["region"], r["order_id"], r["amount"]) for r in orders.to_arrow().to_pylist())
    d = Decimal
    assert got == [("amer", 1, d("10.00")), ("amer", 2, d("12.00")), ("amer", 3, d("13.00")),
                   ("emea", 1, d("2.00")), ("emea", 2, d("4.00")), ("emea", 3, d("6.00"))]


def test_identifier_after_a_batch_commit_of_the_user_is_refused(spark: Any,
                                                               tmp_path: Path) -> None:
    from paimon_core import ConfigError

    t = new_table(tmp_path, "append", [])
    write_rows(t, arrow([("a", 1, 1)]), user="shared")  # a batch commit (Long.MAX) by "shared"
    pt = opened(spark, tmp_path, t, commit_user="shared")
    with pytest.raises(ConfigError, match="without an identifier"):
        pt.delete("id = 1", commit_identifier=1)
    assert pt.delete("id = 1").deleted == 1  # no identifier: a fresh user, applied


def test_sequence_field_table_takes_updates_and_deletes(spark: Any, tmp_path: Path) -> None:
    """With ``sequence.field``, a ``+U`` / ``-D`` carries the row's sequence value: equal to
    the stored one, the later write wins."""
    t = make_table(tmp_path, COLUMNS, name="db.seq", primary_keys=["pt", "id"],
                   options={"bucket": "1", "sequence.field": "v"})
    write_rows(t, arrow([("a", 1, 5), ("a", 2, 6), ("a", 3, 7)]))
    pt = opened(spark, tmp_path, t)
    pt.update("id = 1", {"v": "v"})  # same sequence value: accepted, the row unchanged
    pt.delete("id = 2")
    pt.update("id = 3", {"v": "9"})
    pd.testing.assert_frame_equal(rows_of(t), canonical([("a", 1, 5), ("a", 3, 9)]))
