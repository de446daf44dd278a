"""The pandas-free reference of the row-level tests: UPDATE / DELETE / MERGE applied to a list
of rows in plain Python, with SQL's NULL semantics (a comparison with NULL does not hold), and
the SQL text of the same operations for :class:`pipelines.rowlevel.PaimonTable`.

Rows are ``(pt, id, v)``; ``v`` may be NULL. On primary-key tables the key is ``(pt, id)``
(or ``id`` on the unpartitioned shape), so the model keeps one row per key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

Row = tuple[str, int, int | None]
Pred = Callable[[Row], bool]


def _gt(a: int | None, b: int) -> bool:
    return a is not None and a > b


#: target-only conditions: (SQL, the same in Python)
CONDITIONS: list[tuple[str | None, Pred]] = [
    (None, lambda r: True),
    ("v > 4", lambda r: _gt(r[2], 4)),
    ("id % 2 = 0", lambda r: r[1] % 2 == 0),
    ("pt = 'a'", lambda r: r[0] == "a"),
    ("v IS NULL", lambda r: r[2] is None),
]
#: update assignments: (set, the new row)
SETS: list[tuple[dict[str, str], Callable[[Row], Row]]] = [
    ({"v": "v + 1"}, lambda r: (r[0], r[1], None if r[2] is None else r[2] + 1)),
    ({"v": "id * 10"}, lambda r: (r[0], r[1], r[1] * 10)),
]
#: append tables only: an update that moves rows to another partition
MOVE: tuple[dict[str, str], Callable[[Row], Row]] = (
    {"pt": "'c'", "v": "v"}, lambda r: ("c", r[1], r[2]))


@dataclass(frozen=True)
class MergeSpec:
    """The clauses of a MERGE (``t`` the target, ``s`` the source, ON ``(pt, id)``):
    optionally ``whenMatchedDelete("s.v < 3")`` first, then ``whenMatchedUpdate`` of
    ``v = s.v + t.id`` (only where ``t.v IS NOT NULL`` when ``guarded``), and an insert of
    every source column (only where ``s.v > 2`` when ``insert_some``) unless ``no_insert``."""

    delete_first: bool
    guarded: bool
    insert_some: bool
    no_insert: bool


def run_merge(table: Any, source: Any, spec: MergeSpec, **kw: Any) -> Any:
    b = table.alias("t").merge(source.alias("s"), "t.pt = s.pt AND t.id = s.id")
    if spec.delete_first:
        b = b.whenMatchedDelete("s.v < 3")
    b = b.whenMatchedUpdate("t.v IS NOT NULL" if spec.guarded else None,
                            set={"v": "s.v + t.id"})
    if not spec.no_insert:
        if spec.insert_some:
            b = b.whenNotMatchedInsert("s.v > 2", values={"pt": "s.pt", "id": "s.id",
                                                          "v": "s.v"})
        else:
            b = b.whenNotMatchedInsertAll()
    return b.execute(**kw)


def model_update(rows: list[Row], cond: Pred, new: Callable[[Row], Row]) -> list[Row]:
    return [new(r) if cond(r) else r for r in rows]


def model_delete(rows: list[Row], cond: Pred) -> list[Row]:
    return [r for r in rows if not cond(r)]


def model_merge(rows: list[Row], source: Sequence[Row], spec: MergeSpec) -> list[Row]:
    by_key = {(s[0], s[1]): s for s in source}
    out: list[Row] = []
    matched: set[tuple[str, int]] = set()
    for r in rows:
        s = by_key.get((r[0], r[1]))
        if s is None:
            out.append(r)
            continue
        matched.add((s[0], s[1]))
        if spec.delete_first and s[2] is not None and s[2] < 3:
            continue
        if not spec.guarded or r[2] is not None:
            out.append((r[0], r[1], None if s[2] is None else s[2] + r[1]))
        else:
            out.append(r)
    if not spec.no_insert:
        for s in source:
            if (s[0], s[1]) in matched:
                continue
            if not spec.insert_some or _gt(s[2], 2):
                out.append(s)
    return out


def canonical(rows: Sequence[Row]) -> pd.DataFrame:
    """Rows as a sorted frame (``v`` nullable), for ``pd.testing.assert_frame_equal``."""
    df = pd.DataFrame(list(rows), columns=["pt", "id", "v"]).astype(
        {"pt": "object", "id": "int64", "v": "Int64"})
    return df.sort_values(["pt", "id", "v"], na_position="first").reset_index(drop=True)
