"""The read suite's table shapes (``shapes.py``) as OUR writer replays them.

Every :class:`~tests.interop.shapes.Shape` becomes a :class:`WriteShape`: the same schema, the
same rows, one commit of ours per ``Write`` step (same row kinds, same overwrite spec). Steps
our writer does not do are left out and named in ``skipped``: Java full compactions and
snapshot expiry (issue 4, compaction/expiry, is not in the writer yet), so our snapshot ids
are 1..n for the n write steps.

Every shape is written (deletion-vector tables, the last ones refused, are written since issue
31; the refusals that remain are tested by the writer's own tests, e.g. ``test_dv_write.py``).

``j_pk_dv`` is not replayed here: each of our writes to a deletion-vector table commits an
APPEND and a COMPACT snapshot (as Java's do), so the one-snapshot-per-write numbering of this
suite does not hold; ``test_dv_write_interop.py`` proves those writes against both engines.

``p_types*`` (every type, TIMESTAMP(7..9) beside TIMESTAMP(0..6) in one file) rows were
generated without ``java_safe`` (pypaimon wrote and read them in the read suite). Java 0.9
*reads* some of those values wrongly or not at all (see ``Gen`` in shapes.py: an all-null ROW
reads as a null ROW; a null ROW containing a ROW hangs the read), so their write shapes make
them safe exactly as ``Gen(java_safe=True)`` would have (:func:`java_safe_row`), in the rows we
write AND in the reference lines. Engine bug, not ours:
Java 0.9 reads its own files the same way, and reads our all-null ROW as NULL while pypaimon
and our reader keep it (``tests/write/test_write_oracle.py::test_java_all_null_row``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tests.interop.shapes import (
    KIND,
    SHAPES,
    Compact,
    Expire,
    ReadCase,
    Row,
    Rows,
    Shape,
    Write,
)


@dataclass(frozen=True)
class OurWrite:
    """One commit of ours: the rows of ``base.steps[step]``."""

    step: int
    rows: Callable[[], Rows]
    kind: bool
    overwrite: dict[str, str] | None


@dataclass(frozen=True)
class WriteShape:
    name: str  # our table's name (in database "interop" of our warehouse)
    base: Shape  # the read-suite shape whose rows we replay
    schema: dict[str, Any]
    writes: tuple[OurWrite, ...]
    filters: tuple[int, ...]  # indices into base.filters
    skipped: tuple[str, ...] = ()  # base steps not replayed, and why
    fix: Callable[[Row], Row] | None = None  # applied to input rows and reference lines
    # holds TIMESTAMP(7..9) values before 1970 (see PRE_1970_NANOS)
    pre_1970_nanos: bool = False
    # Java filter literals it cannot build: base filter index -> reason (oracle exit 3)
    java_unsupported_filters: tuple[tuple[int, str], ...] = ()
    # other read-suite shapes with the same rows and filters (references where base has none)
    same_rows_as: tuple[Shape, ...] = ()
    # unfiltered Java reads are made as one read per filter here (their union), so that no
    # Java read returns JAVA_NESTED_BATCH rows or more (see JAVA_NESTED_BATCH)
    java_chunks: tuple[str, ...] = ()

    @property
    def table(self) -> str:
        return f"interop.{self.name}"

    @property
    def nested(self) -> bool:
        return bool(re.search(r"ARRAY|MAP|ROW|MULTISET", json.dumps(self.schema).upper()))

    @property
    def primary_keys(self) -> list[str]:
        return list(self.schema.get("primary_keys") or [])

    @property
    def partition_keys(self) -> list[str]:
        return list(self.schema.get("partition_keys") or [])

    @property
    def options(self) -> dict[str, str]:
        return dict(self.schema.get("options") or {})

    @property
    def field_types(self) -> dict[str, Any]:
        return {f["name"]: f["type"] for f in self.schema["fields"]}

    def filter_exprs(self, i: int) -> tuple[str, ...]:
        return self.base.filters[i]

    def java_filter_unsupported(self, i: int) -> str | None:
        return dict(self.java_unsupported_filters).get(i)

    # ---- the engine's own table of the base shape, as a reference for ours -----------------
    def engine_snapshot(self, our_snapshot: int, base: Shape | None = None) -> int | None:
        """The snapshot id of ``base`` (default: the base shape; in the engine-built table)
        whose content our snapshot ``our_snapshot`` must equal, if the engine retained it
        (compactions add snapshots of equal content, expiry removes early ones)."""
        base = base or self.base
        step = self.writes[our_snapshot - 1].step
        sid = 0
        for s in base.steps[: step + 1]:
            if not isinstance(s, Expire):
                sid += s.snapshots
        return sid if sid in base.snapshot_ids() else None

    def reference_case(self, our_snapshot: int | None, filter_idx: int | None
                       ) -> ReadCase | None:
        """The read-suite case holding the reference output, if there is one."""
        if our_snapshot is None:
            return ReadCase(self.base, None, filter_idx)
        for base in (self.base, *self.same_rows_as):
            sid = self.engine_snapshot(our_snapshot, base)
            if sid is not None:
                return ReadCase(base, sid, filter_idx)
        return None

    def reference_lines(self, lines: Sequence[str]) -> list[str]:
        """The base shape's canonical lines fixed like our table."""
        if self.fix is None:
            return list(lines)
        return sorted(canonical(self.fix(json.loads(line))) for line in lines)

    def input_rows(self, w: OurWrite) -> Rows:
        rows = w.rows()
        if self.fix is None:
            return rows
        return [self.fix(r) for r in rows]


def canonical(obj: dict[str, Any]) -> str:
    """One canonical output line (the oracle's ``json.dumps`` settings)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# Java 0.9 read bugs: make p_types rows safe the way Gen(java_safe=True) generates them

_DATE0 = "1970-01-01"


def java_safe_row(row: Row) -> Row:
    """``r`` (ROW<x, y, z, w ROW<q, t>>) and ``ar`` (ARRAY<ROW<k, v>>) as ``java_safe`` makes
    them: ``r``, ``r.x``, ``r.w``, ``r.w.t``, the elements of ``ar`` and their ``k`` never null
    (so no ROW is null-with-a-nested-ROW or all-null). Works on input rows and on canonical
    lines alike (both encode a ROW as an object in field order, DATE as ``YYYY-MM-DD``)."""
    out = dict(row)
    if "r" in out:
        r = out["r"]
        if r is None:
            r = {"x": 0, "y": None, "z": None, "w": {"q": None, "t": _DATE0}}
        else:
            r = dict(r)
            if r["x"] is None:
                r["x"] = 0
            w = r["w"]
            w = {"q": None, "t": _DATE0} if w is None else dict(w)
            if w["t"] is None:
                w["t"] = _DATE0
            r["w"] = w
        out["r"] = r
    if out.get("ar") is not None:
        out["ar"] = [{"k": "", "v": None} if e is None else
                     {"k": "" if e["k"] is None else e["k"], "v": e["v"]} for e in out["ar"]]
    return out


# ---------------------------------------------------------------------------------------------
# building the write shapes

# Java 0.9 reads OUR INT96 TIMESTAMP(7..9) values before 1970 correctly, but not the ones it
# writes itself (shapes.py Gen): once Java has written such rows into the table (its append, its
# compaction), its reads fail with this error. Checked, never skipped.
PRE_1970_NANOS = ("Java 0.9 cannot read the INT96 TIMESTAMP(7..9) values before 1970 that it "
                  "wrote itself (shapes.py Gen); the exception has no message",
                  r"java\.lang\.IllegalArgumentException(?!:)")
# The oracle's Java read path (Paimon 0.9 rows -> Arrow through paimon-arrow's writer, in
# batches of 1024 rows) corrupts nested columns from the 1025th row of a read on: row 1024+k
# gets the ARRAY/MAP/ROW values of row k. Reproduced on a table Java 0.9 wrote itself (1100
# rows of ARRAY<INT>/MAP<STRING, INT>: Java's read returns rows 1024.. with the values of rows
# 0..; pypaimon reads them right). Not a Paimon core bug and not ours; the read suite never
# hits it (Java reads no table with nested columns and more than 1023 rows). So every Java read
# of a table with nested columns must stay below this many rows (checked).
JAVA_NESTED_BATCH = 1024
TIME_LITERAL = ("Java side of the oracle cannot build TIME filter literals (exit 3, as in the "
                "read suite's p_types)")


def _replay(base: Shape) -> tuple[tuple[OurWrite, ...], tuple[str, ...]]:
    writes, skipped = [], []
    for k, s in enumerate(base.steps):
        if isinstance(s, Write):
            writes.append(OurWrite(k, s.rows, s.kind, s.overwrite))
        elif isinstance(s, Compact):
            skipped.append(f"step {k}: Java full compaction (compaction is issue 4)")
        else:
            skipped.append(f"step {k}: expire retain_max={s.retain_max} (expiry is issue 4)")
    return tuple(writes), tuple(skipped)


def _all_types(base: Shape) -> WriteShape:
    """p_types / p_types_pk: every type, ROW values made ``java_safe``."""
    writes, skipped = _replay(base)
    every = tuple(range(len(base.filters)))
    return WriteShape(
        name=base.name, base=base, schema=base.schema, writes=writes, filters=every,
        skipped=skipped, fix=java_safe_row, pre_1970_nanos=True,
        java_unsupported_filters=tuple(
            (i, TIME_LITERAL) for i in every if any("tm3" in e for e in base.filters[i])),
        # 1100 rows (+40 later) with nested columns: Java reads them in parts (ids are
        # 0..699 and 1000..1399, +1e6/+2e6 for the rows appended after our writes)
        java_chunks=("id < 600", "id >= 600", "id IS NULL") if base.name == "p_types" else (),
    )


def write_shapes() -> list[WriteShape]:
    out: list[WriteShape] = []
    for base in SHAPES:
        writes, skipped = _replay(base)
        every = tuple(range(len(base.filters)))
        if base.name == "j_pk_dv":
            continue  # see the module docs
        if base.name in ("p_types", "p_types_pk"):
            out.append(_all_types(base))
        elif base.name == "j_append_pt":
            # p_append_pt has the same rows, steps and filters (_append_shape): its engine
            # table still has the snapshots that j_append_pt's expiry removed
            twin = next(s for s in SHAPES if s.name == "p_append_pt")
            assert twin.filters == base.filters and twin.schema["fields"] == base.schema["fields"]
            out.append(WriteShape(base.name, base, base.schema, writes, every, skipped,
                                  same_rows_as=(twin,)))
        else:
            out.append(WriteShape(base.name, base, base.schema, writes, every, skipped))
    return out


# ---------------------------------------------------------------------------------------------
# after our writes, on a copy of our table: a Java append (with -U/+U/-D on primary-key
# tables), a Java full compaction, a pypaimon append. The rows are derived from the canonical
# lines of the table (the oracle reads and writes the same JSON encoding), so the expected
# content after each step is known exactly: MODEL lines, independent of every reader.

JAVA_APPEND, JAVA_COMPACT, PYPAIMON_APPEND = "java_append", "java_compact", "pypaimon_append"
AFTER_STEPS = (JAVA_APPEND, JAVA_COMPACT, PYPAIMON_APPEND)


def _ts_value(t: str, i: int) -> str:
    p = int(t[t.index("(") + 1])
    s = f"2001-02-03 04:05:{i % 60:02d}" + ("." + "123456".ljust(p, "0")[:p] if p else "")
    return s + ("Z" if "ZONE" in t.upper() else "")


def mutable_column(ws: WriteShape) -> str:
    """A non-key column whose value an update changes (a STRING, else a TIMESTAMP)."""
    fixed = set(ws.primary_keys) | set(ws.partition_keys) | {ws.options.get("rowkind.field")}
    types = {n: t for n, t in ws.field_types.items() if n not in fixed}
    for n, t in types.items():
        if isinstance(t, str) and t.upper() == "STRING":
            return n
    for n, t in types.items():
        if isinstance(t, str) and t.upper().startswith("TIMESTAMP("):
            return n
    raise AssertionError(f"{ws.name}: no column to mutate")


def _mutate(ws: WriteShape, obj: Row, tag: str, i: int) -> Row:
    col = mutable_column(ws)
    t = ws.field_types[col]
    return {**obj, col: f"{tag}{i}" if str(t).upper() == "STRING" else _ts_value(str(t), i)}


def _rekey(obj: Row, offset: int) -> Row:
    return {**obj, "id": obj["id"] + offset}


def _apply(before: Sequence[str], removed: Sequence[Row], added: Sequence[Row]) -> list[str]:
    lines = list(before)
    for r in removed:
        lines.remove(canonical(r))
    return sorted(lines + [canonical(r) for r in added])


def _pick(before: Sequence[str], n: int) -> list[Row]:
    """``n`` rows spread over the table (deterministic)."""
    step = max(1, len(before) // (n + 1))
    objs = [json.loads(x) for x in before[::step][:n]]
    assert len(objs) == n, "table too small for the after-write steps"
    return objs


def java_append(ws: WriteShape, before: Sequence[str]) -> tuple[Rows, list[str]]:
    """Rows of the Java append (``_kind`` on primary-key tables; ``rowkind.field`` tables
    carry the kind in their own column) and the expected lines after it."""
    if not ws.primary_keys:
        copies = [_mutate(ws, _rekey(r, 1_000_000), "jA", i)
                  if _has_string(ws) else _rekey(r, 1_000_000)
                  for i, r in enumerate(_pick(before, 20))]
        return copies, _apply(before, [], copies)
    rk = ws.options.get("rowkind.field")
    kcol = rk or KIND
    sel = _pick(before, 18)
    dels, upds, lone, news = sel[0:5], sel[5:10], sel[10:13], sel[13:18]
    rows: Rows = []
    removed: list[Row] = []
    added: list[Row] = []

    def put(obj: Row, kind: str) -> Row:
        row = {**obj, kcol: kind}
        rows.append(row)
        return row if rk else obj

    for r in dels:
        put(r, "-D")
        removed.append(r)
    for i, r in enumerate(upds):
        put(r, "-U")
        added.append(put(_mutate(ws, r, "jU", i), "+U"))
        removed.append(r)
    for i, r in enumerate(lone):  # +U without -U: an upsert
        added.append(put(_mutate(ws, r, "jL", i), "+U"))
        removed.append(r)
    for i, r in enumerate(news):
        put(_mutate(ws, _rekey(r, 100_000), "jX", i), "+I")  # overwritten in the same batch
        added.append(put(_mutate(ws, _rekey(r, 100_000), "jI", i), "+I"))
    put(_rekey(dels[0], 200_000), "-D")  # delete of a key that never existed
    return rows, _apply(before, removed, added)


def pypaimon_append(ws: WriteShape, before: Sequence[str]) -> tuple[Rows, list[str]]:
    """Rows of the pypaimon append (only +I: pypaimon 2.1 has no per-row kind, except through
    ``rowkind.field``) and the expected lines after it."""
    if not ws.primary_keys:
        copies = [_mutate(ws, _rekey(r, 2_000_000), "pA", i)
                  if _has_string(ws) else _rekey(r, 2_000_000)
                  for i, r in enumerate(_pick(before, 20))]
        return copies, _apply(before, [], copies)
    rk = ws.options.get("rowkind.field")
    sel = _pick(before, 16)
    rows: Rows = []
    removed: list[Row] = []
    added: list[Row] = []
    for i, r in enumerate(sel[0:6]):
        new = _mutate(ws, r, "pU", i)
        rows.append({**new, rk: "+I"} if rk else new)
        added.append(rows[-1])
        removed.append(r)
    for i, r in enumerate(sel[6:12]):
        new = _mutate(ws, _rekey(r, 300_000), "pI", i)
        rows.append({**new, rk: "+I"} if rk else new)
        added.append(rows[-1])
    if rk:
        for r in sel[12:16]:
            rows.append({**r, rk: "-D"})
            removed.append(r)
    return rows, _apply(before, removed, added)


def _has_string(ws: WriteShape) -> bool:
    try:
        return str(ws.field_types[mutable_column(ws)]).upper() == "STRING"
    except AssertionError:
        return False


WRITE_SHAPES: list[WriteShape] = write_shapes()
assert len({s.name for s in WRITE_SHAPES}) == len(WRITE_SHAPES)
WRITTEN: list[WriteShape] = list(WRITE_SHAPES)
