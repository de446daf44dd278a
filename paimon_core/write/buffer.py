"""Per-bucket write buffers: rows routed to a (partition, bucket), gathered lazily.

Helpers of :mod:`paimon_core.write.table_write` (``MergeTreeWriter``'s write buffer and
``AppendOnlyWriter``'s pending rows): a write call routes rows by *index* into its input table;
the rows are gathered (one ``take`` per column, partition columns rebuilt by repetition) only
when the bucket is flushed, inside a worker thread.

A piece selected from a bigger input keeps the whole input alive (its :class:`Pin`): the
writer copies such pieces out (:meth:`Piece.compacted`) when what they pin outgrows
``write-buffer-size``, so the memory held is bounded by the buffer, not by the input seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from paimon_core.compact.task import CompactResult
from paimon_core.spec.manifest import DataFileMeta
from paimon_core.spec.system_fields import SEQUENCE_NUMBER, VALUE_KIND

__all__ = [
    "BucketState",
    "Piece",
    "Pin",
    "combine_codes",
    "gather",
    "order_columns",
    "split_groups",
    "strictly_ascending",
    "take_column",
    "take_columns",
    "take_rows",
    "with_system_columns",
]

_INT_LIKE = (pa.types.is_integer, pa.types.is_date, pa.types.is_timestamp, pa.types.is_time)


@dataclass(eq=False)
class Pin:
    """The Arrow bytes of one write call's input (or of the part of it regrouped by bucket):
    every piece selected from it keeps all of it alive until flushed or compacted. Compared
    by identity: pieces of one input share one pin."""

    nbytes: int


@dataclass(eq=False)
class Piece:
    """Rows routed to one bucket by one write call, gathered lazily (at flush time, in a
    worker thread): ``rows`` are ascending indices into ``table`` (None = all rows).
    ``pin``: the input the piece was selected from, when it holds more than the piece's own
    rows (None = the piece owns its memory)."""

    table: pa.Table
    rows: np.ndarray | None
    kinds: np.ndarray | None  # row kinds of the selected rows; None = all +I
    first_seq: int
    nbytes: int
    pin: Pin | None = None

    @property
    def num_rows(self) -> int:
        return self.table.num_rows if self.rows is None else len(self.rows)

    def materialize(self, constant: Sequence[int] = ()) -> pa.Table:
        return take_rows(self.table, self.rows, constant)

    def compacted(self, constant: Sequence[int] = ()) -> Piece:
        """This piece with its rows copied out of the input it pins (same records, same
        sequence numbers), so that the input can be released."""
        rows = self.rows if self.rows is not None else np.arange(self.num_rows)
        table = take_rows(self.table, rows, constant)
        return Piece(table, None, self.kinds, self.first_seq, self.nbytes)


def take_rows(table: pa.Table, rows: np.ndarray | None, constant: Sequence[int] = ()) -> pa.Table:
    """``table.take(rows)``; columns listed in ``constant`` hold one value in these rows (the
    partition columns of a bucket) and are rebuilt by repetition instead of gathered."""
    if rows is None:
        return table
    if not constant or len(rows) == 0:
        return table.take(pa.array(rows))
    return take_columns(table.columns, table.schema, rows, constant)


def take_columns(
    columns: list[pa.ChunkedArray | None],
    schema: pa.Schema,
    rows: np.ndarray | None,
    constant: Sequence[int] = (),
) -> pa.Table:
    """:func:`take_rows` over the ``columns`` of a table, releasing each source column as
    soon as it is gathered: the list is emptied as it goes (every entry set to None), so a
    caller that passes the only references holds the source and the result together for
    one column at a time, not twice the whole table (a write buffer's flush)."""
    out: list[pa.Array | pa.ChunkedArray] = []
    idx = None if rows is None else pa.array(rows)
    n = 0 if rows is None else len(rows)
    first = int(rows[0]) if rows is not None and n else 0
    for i in range(len(columns)):
        col = columns[i]
        columns[i] = None
        assert col is not None, "a column was already taken"
        if idx is None:
            out.append(col)
        elif i in constant and n:
            out.append(pa.repeat(col[first], n))
        else:
            # one contiguous copy first (Arrow's take would concatenate the chunks anyway),
            # so the chunks are released before the gathered copy is made
            arr = col.combine_chunks() if col.num_chunks > 1 else col
            del col
            out.append(arr.take(idx))
            del arr
            continue
        del col
    return pa.Table.from_arrays(out, schema=schema)


@dataclass(eq=False)
class BucketState:
    """State of one (partition, bucket) writer: its sequence counter, buffered pieces, and the
    files written since the last ``prepare_commit``."""

    partition: bytes
    bucket: int
    bucket_dir: str
    next_seq: int = 0
    buffer: list[Piece] = field(default_factory=list)
    buffered_bytes: int = 0
    new_files: list[DataFileMeta] = field(default_factory=list)
    changelog_files: list[DataFileMeta] = field(default_factory=list)
    # inline compaction during the round: how many of ``new_files`` it already tracks, and
    # what it compacted so far (part of the round's commit message)
    noted: int = 0
    compacted: CompactResult = field(default_factory=CompactResult)

    def end_round(self) -> None:
        """Forget the round's files (handed out in a commit message, or aborted)."""
        self.new_files = []
        self.changelog_files = []
        self.noted = 0
        self.compacted = CompactResult()

    def add(self, piece: Piece) -> None:
        self.buffer.append(piece)
        self.buffered_bytes += piece.nbytes

    def take_buffer(self, constant: Sequence[int] = ()) -> pa.Table | None:
        if not self.buffer:
            return None
        parts = [p.materialize(constant) for p in self.buffer]
        self.buffer = []
        self.buffered_bytes = 0
        return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


def gather(
    pieces: Sequence[Piece], constant: Sequence[int]
) -> tuple[pa.Table, np.ndarray | None, np.ndarray, np.ndarray]:
    """``(source, rows, seq, kinds)``: the buffered records are ``source`` rows ``rows``
    (None = all) in arrival order, with their sequence numbers and kinds."""
    seqs = [np.arange(p.first_seq, p.first_seq + p.num_rows, dtype=np.int64) for p in pieces]
    kinds = [
        p.kinds if p.kinds is not None else np.zeros(p.num_rows, dtype=np.int8) for p in pieces
    ]
    if len(pieces) == 1:
        return pieces[0].table, pieces[0].rows, seqs[0], kinds[0]
    source = pa.concat_tables([p.materialize(constant) for p in pieces])
    return source, None, np.concatenate(seqs), np.concatenate(kinds)


def order_columns(key_names: Sequence[str], sequence_fields: Sequence[str]) -> list[str]:
    """The columns a primary-key flush orders records by, besides the sequence number: the
    keys, then the ``sequence.field`` columns that are not keys."""
    return [*key_names, *(c for c in sequence_fields if c not in key_names)]


def with_system_columns(table: pa.Table, seq: np.ndarray, kinds: np.ndarray) -> pa.Table:
    """``table`` with ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` appended: the rows of a
    primary-key data file, as :meth:`DataFileWriter.write_kv_file` takes them."""
    return table.append_column(SEQUENCE_NUMBER, pa.array(seq, pa.int64())).append_column(
        VALUE_KIND, pa.array(kinds, pa.int8()))


def take_column(col: pa.ChunkedArray, rows: np.ndarray | None) -> pa.Array:
    arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return arr if rows is None else arr.take(pa.array(rows))


def combine_codes(
    codes: np.ndarray, radix: int, idx: np.ndarray, cardinality: int
) -> tuple[np.ndarray, int]:
    """Mixed-radix code of one more grouping column (re-densified before int64 overflow)."""
    if radix * max(cardinality, 1) >= 2**62:
        uniq, codes = np.unique(codes, return_inverse=True)
        radix = len(uniq)
        codes = codes.astype(np.int64)
    return codes + idx * radix, radix * max(cardinality, 1)


def _int_values(arr: pa.Array) -> np.ndarray:
    t = arr.type
    if not pa.types.is_integer(t):
        arr = arr.view(pa.int64() if t.bit_width == 64 else pa.int32())
    return np.asarray(arr.to_numpy(zero_copy_only=False))



def strictly_ascending(col: pa.Array) -> bool:
    """True when an integer-like column without nulls is strictly ascending."""
    if not any(f(col.type) for f in _INT_LIKE) or col.null_count:
        return False
    k = _int_values(col)
    return k.size <= 1 or bool((k[1:] > k[:-1]).all())


def split_groups(codes: np.ndarray, radix: int) -> list[tuple[np.ndarray | None, int]]:
    """Rows of each distinct group code: ascending row indices (None = every row) and the
    group's first row. Few groups are picked with one comparison pass each, many with one
    stable argsort."""
    n = len(codes)
    if radix == 1 or n <= 1:
        return [(None, 0)]
    if radix > 4 * n + 1024:
        _, codes = np.unique(codes, return_inverse=True)
    counts = np.bincount(codes)
    present = np.flatnonzero(counts)
    if len(present) == 1:
        return [(None, 0)]
    if len(present) <= 16:
        groups = [np.flatnonzero(codes == g) for g in present]
    else:
        order = np.argsort(codes, kind="stable")
        groups = np.split(order, np.cumsum(counts[present])[:-1])
    return [(g, int(g[0])) for g in groups]
