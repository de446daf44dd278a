"""Java's merge order for reads whose result depends on it (incremental-between of changelogs).

A normal read never depends on the order in which Java hands files to its merge: data files
hold every key once, and sequence numbers decide. Changelog files break both assumptions (a
changelog file repeats a key: ``-U old, +U new``; ``lookup`` / ``full-compaction`` changelogs
give the ``-U``/``-D`` "before" row the *old* record's sequence number, so two files may offer
the same key with the same sequence number). Paimon 0.9's ``incremental-between`` merges such
files anyway, and its result then follows the exact mechanics reproduced here:

* :func:`java_sorted_runs` = ``org.apache.paimon.mergetree.compact.IntervalPartition``: files
  stable-sorted by (min key, max key), cut into sections, and each section into sorted runs
  through a ``java.util.PriorityQueue`` whose *array order* (``queue.stream()``) is the run
  order (:class:`JavaPriorityQueue` mirrors the JDK's ``siftUp``/``siftDown``);
* :func:`loser_tree_merge` = ``org.apache.paimon.mergetree.compact.LoserTree`` +
  ``SortMergeReaderWithLoserTree`` with the deduplicate merge function: each run contributes
  at most one record per merge group, and within a group records pop in ascending sequence
  order with ties broken by the tree's history. Per record (pure Python): the caller uses it
  only for sections whose merge has a sequence-number tie.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from paimon_core.spec.keys import KeyDecoder
from paimon_core.spec.manifest import DataFileMeta

__all__ = ["JavaPriorityQueue", "Record", "java_sorted_runs", "loser_tree_merge"]

SortKey = tuple[Any, ...]
T = TypeVar("T")

#: one record of a sorted run: (user key, sequence key, row index in the caller's table)
Record = tuple[SortKey, SortKey, int]


class JavaPriorityQueue(Generic[T]):
    """``java.util.PriorityQueue`` with a key function (binary heap as in the JDK); ``items``
    is its array, i.e. what ``queue.stream()`` iterates."""

    def __init__(self, key: Callable[[T], SortKey]) -> None:
        self.items: list[T] = []
        self.key = key

    def add(self, x: T) -> None:
        q = self.items
        q.append(x)
        k = len(q) - 1
        kx = self.key(x)
        while k > 0:
            parent = (k - 1) >> 1
            e = q[parent]
            if not kx < self.key(e):
                break
            q[k] = e
            k = parent
        q[k] = x

    def poll(self) -> T:
        q = self.items
        result = q[0]
        x = q.pop()
        n = len(q)
        if n:
            kx = self.key(x)
            k = 0
            half = n >> 1
            while k < half:
                child = 2 * k + 1
                c = q[child]
                right = child + 1
                if right < n and self.key(c) > self.key(q[right]):
                    child = right
                    c = q[child]
                if not kx > self.key(c):
                    break
                q[k] = c
                k = child
            q[k] = x
        return result


def java_sorted_runs(
    files: Sequence[DataFileMeta], decode_key: KeyDecoder
) -> list[list[list[DataFileMeta]]]:
    """Sections of sorted runs exactly as ``IntervalPartition.partition()`` builds them."""
    keyed = [(decode_key(f.min_key), decode_key(f.max_key), f) for f in files]
    keyed.sort(key=lambda t: (t[0], t[1]))  # stable, like List.sort
    sections: list[list[tuple[SortKey, SortKey, DataFileMeta]]] = []
    current: list[tuple[SortKey, SortKey, DataFileMeta]] = []
    bound: SortKey = ()
    for item in keyed:
        if current and item[0] > bound:
            sections.append(current)
            current = []
        if not current or item[1] > bound:
            bound = item[1]
        current.append(item)
    if current:
        sections.append(current)
    out = []
    for section in sections:
        max_key = {id(f): hi for _, hi, f in section}
        queue: JavaPriorityQueue[list[DataFileMeta]] = JavaPriorityQueue(_last_max_key(max_key))
        queue.add([section[0][2]])
        for lo, _, f in section[1:]:
            top = queue.poll()
            if lo > max_key[id(top[-1])]:
                top.append(f)
            else:
                queue.add([f])
            queue.add(top)
        out.append(queue.items)
    return out


def _last_max_key(
    max_key: dict[int, SortKey],
) -> Callable[[list[DataFileMeta]], SortKey]:
    """Priority of a run: the max key of its last file."""
    return lambda run: max_key[id(run[-1])]


# ---------------------------------------------------------------------------------------------
# LoserTree (states and adjustments as in org.apache.paimon.mergetree.compact.LoserTree)

_LOSER_NEW, _LOSER_SAME, _LOSER_POPPED = 0, 1, 2
_WINNER_NEW, _WINNER_SAME, _WINNER_POPPED = 3, 4, 5


def _sign(a: SortKey, b: SortKey) -> int:
    return (a > b) - (a < b)


class _Leaf:
    __slots__ = ("first_same", "kv", "pos", "records", "state")

    def __init__(self, records: Sequence[Record]) -> None:
        self.records = records
        self.pos = 0
        self.kv: Record | None = None
        self.first_same = -1
        self.state = _WINNER_NEW

    def advance(self) -> None:
        self.first_same = -1
        self.state = _WINNER_NEW
        if self.pos < len(self.records):
            self.kv = self.records[self.pos]
            self.pos += 1
        else:
            self.kv = None

    def pop(self) -> Record | None:
        self.state = _WINNER_POPPED
        return self.kv

    def set_first_same(self, index: int) -> None:
        if self.first_same == -1:
            self.first_same = index


def _first(e1: Record | None, e2: Record | None) -> int:
    """> 0 when e1 wins on the key (smaller key; a missing record always loses)."""
    if e1 is None:
        return -1
    if e2 is None:
        return 1
    return _sign(e2[0], e1[0])


def _second(e1: Record | None, e2: Record | None) -> int:
    """> 0 when e1 wins on the sequence (smaller sequence pops first)."""
    if e1 is None:
        return -1
    if e2 is None:
        return 1
    return _sign(e2[1], e1[1])


class _LoserTree:
    def __init__(self, runs: Sequence[Sequence[Record]]) -> None:
        self.size = len(runs)
        self.leaves = [_Leaf(r) for r in runs]
        self.tree = [-1] * self.size
        for i in range(self.size - 1, -1, -1):
            self.leaves[i].advance()
            self._adjust(i)

    def adjust_for_next_loop(self) -> None:
        w = self.leaves[self.tree[0]]
        while w.state == _WINNER_POPPED:
            w.advance()
            self._adjust(self.tree[0])
            w = self.leaves[self.tree[0]]

    def pop_winner(self) -> Record | None:
        w = self.leaves[self.tree[0]]
        if w.state == _WINNER_POPPED:
            return None
        result = w.pop()
        self._adjust(self.tree[0])
        return result

    def peek_winner(self) -> Record | None:
        w = self.leaves[self.tree[0]]
        return w.kv if w.state != _WINNER_POPPED else None

    def _adjust(self, winner: int) -> None:
        tree, leaves = self.tree, self.leaves
        parent = (winner + self.size) // 2
        while parent > 0 and winner >= 0:
            w = leaves[winner]
            if tree[parent] == -1:
                w.state = _LOSER_NEW
            else:
                p = leaves[tree[parent]]
                if w.state == _WINNER_NEW:
                    self._adjust_new(parent, p, w)
                elif w.state == _WINNER_SAME:
                    self._adjust_same(parent, p, w)
                elif w.state == _WINNER_POPPED:
                    if w.first_same < 0:
                        parent = -1
                    else:
                        parent = w.first_same
                        p = leaves[tree[parent]]
                        w.state = _LOSER_POPPED
                        p.state = _WINNER_SAME
                else:  # pragma: no cover - a loser never climbs
                    raise AssertionError(f"loser tree: unexpected state {w.state}")
            if w.state < _WINNER_NEW:
                winner, tree[parent] = tree[parent], winner
            parent = int(parent / 2)  # Java's int division (-1 / 2 == 0)
        tree[0] = winner

    @staticmethod
    def _adjust_same(index: int, p: _Leaf, w: _Leaf) -> None:
        if p.state == _LOSER_SAME:
            if _second(p.kv, w.kv) > 0:
                p.state = _WINNER_SAME
                w.state = _LOSER_SAME
                p.set_first_same(index)
            else:
                w.set_first_same(index)

    @staticmethod
    def _adjust_new(index: int, p: _Leaf, w: _Leaf) -> None:
        if p.state == _LOSER_NEW:
            first = _first(p.kv, w.kv)
            if first == 0:
                if _second(p.kv, w.kv) < 0:
                    p.state = _LOSER_SAME
                    w.set_first_same(index)
                else:
                    w.state = _LOSER_SAME
                    p.state = _WINNER_NEW
                    p.set_first_same(index)
            elif first > 0:
                p.state = _WINNER_NEW
                w.state = _LOSER_NEW
        elif p.state == _LOSER_POPPED:
            p.state = _WINNER_POPPED
            p.first_same = -1
            w.state = _LOSER_NEW
        elif p.state == _LOSER_SAME:  # pragma: no cover - Java throws "This is a bug"
            raise AssertionError("loser tree: a new-key winner met a same-key loser")


def loser_tree_merge(runs: Sequence[Sequence[Record]]) -> list[list[int]]:
    """The merge groups of ``SortMergeReaderWithLoserTree`` over sorted runs: for every group,
    the row indices of its records in pop order (a deduplicate merge keeps the last one)."""
    if not runs:
        return []
    tree = _LoserTree(runs)
    groups: list[list[int]] = []
    if tree.peek_winner() is None:
        return groups
    while True:
        tree.adjust_for_next_loop()
        first = tree.pop_winner()
        if first is None:
            return groups
        group = [first[2]]
        while tree.peek_winner() is not None:
            rec = tree.pop_winner()
            assert rec is not None
            group.append(rec[2])
        groups.append(group)
