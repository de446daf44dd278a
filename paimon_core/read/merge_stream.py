"""Merging one section of a primary-key bucket chunk by chunk, in bounded memory
(``org.apache.paimon.mergetree.compact.SortMergeReader`` over sorted runs, vectorised).

A section (:func:`paimon_core.read.merge.sections`) is cut into *sorted runs*: files whose key
ranges do not overlap, read one after the other, are one run (a level >= 1 is one; every
level-0 file is a run of its own). The section's row budget ``buffer_rows`` is shared by its
runs (:func:`run_buffer_rows`: ``buffer_rows // runs`` each, at least
``min(buffer_rows, RUN_FLOOR_ROWS)``), and each run is read in batches of that many rows, in
key order. A step then

1. takes, among the runs not yet drained, the smallest *last key of the buffered rows*: the
   *bound*. No run can still hold an unread record of a key <= bound (every run is sorted, and
   its unread rows come after its buffered ones);
2. cuts every run's buffered rows at ``key <= bound`` (a binary search with numpy on one
   integer-like key column, vectorised Arrow comparisons otherwise) and concatenates the cuts:
   the records of whole keys, never a key split across steps;
3. merges them with :func:`~paimon_core.read.merge.merge_records` (every merge engine,
   ``sequence.field``, retractions, ``LookupMergeFunction`` levels) and yields the result.

The run that gave the bound is drained in every step, so a step holds at most a run's share
per run: memory is bounded by ``buffer_rows`` for the whole section, never by the bucket nor
by its number of runs (measured on one bucket of 4M rows in 2 runs and of 16M rows in 4 runs:
a buffer per run grew the streaming read's peak from +136 to +167 MB; shared, +130 MB both).

Key order is the one the merge and our writer use (Arrow ascending; strings and binaries
bytewise, like Java's ``BinaryString``). Keys with a floating-point column need a
proof first: Java's key comparator holds NaN equal to every value, so a Java-sorted run with
a NaN key has no reliable order; a section of several runs is cut only when a pass over its
key columns finds no NaN and every run in ascending order, else it is merged whole (one
chunk).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.options import CoreOptions
from paimon_core.read.data_file import DataFileReader, FileRead
from paimon_core.read.merge import drop_retracts, merge_records
from paimon_core.spec.keys import KeyDecoder
from paimon_core.spec.manifest import DataFileMeta
from paimon_core.spec.option_enums import MergeEngine
from paimon_core.spec.row_kind import retract_mask
from paimon_core.spec.system_fields import KEY_PREFIX, VALUE_KIND

__all__ = ["RUN_FLOOR_ROWS", "Chunk", "merge_section_batches", "run_buffer_rows",
           "section_chunks", "sorted_runs"]

#: the fewest rows a sorted run reads at a time when a section's budget is shared by many
#: runs (smaller steps would make the per-step cost of the vectorised merge dominate)
RUN_FLOOR_ROWS = 4096


def run_buffer_rows(buffer_rows: int, runs: int) -> int:
    """Rows each of ``runs`` sorted runs reads at a time out of a section budget of
    ``buffer_rows``: an even share, at least ``min(buffer_rows, RUN_FLOOR_ROWS)``."""
    return max(buffer_rows // max(runs, 1), min(buffer_rows, RUN_FLOOR_ROWS), 1)


def sorted_runs(files: Sequence[DataFileMeta], decode_key: KeyDecoder
                ) -> list[list[DataFileMeta]]:
    """Files cut into sorted runs: in each run, files in ascending key order with disjoint key
    ranges (a file joins the first run whose last file ends strictly below its min key;
    ``IntervalPartition``'s per-section runs)."""
    keyed = sorted(
        ((decode_key(f.min_key), decode_key(f.max_key), i, f) for i, f in enumerate(files)),
        key=lambda t: (t[0], t[1], t[2]),
    )
    runs: list[list[DataFileMeta]] = []
    ends: list[tuple[object, ...]] = []
    for lo, hi, _, f in keyed:
        for j, end in enumerate(ends):
            if end < lo:
                runs[j].append(f)
                ends[j] = hi
                break
        else:
            runs.append([f])
            ends.append(hi)
    return runs


@dataclass(frozen=True)
class Chunk:
    """Unmerged records of whole keys, from one step of :func:`section_chunks`.

    Attributes:
        records: the records (the runs' cuts concatenated, each in key order).
        levels: the LSM level of every record (int32).
        runs: how many sorted runs contributed records (1: every key once, nothing to merge
            when the runs are data files).
        sequence_ordered: the records of every key come in ascending ``_SEQUENCE_NUMBER``
            order (the runs' sequence ranges are disjoint and concatenated in that order).
        sizes: how many of ``records`` come from each contributing run, in order (the
            records are the runs' parts concatenated).
    """

    records: pa.Table
    levels: np.ndarray
    runs: int
    sequence_ordered: bool = False
    sizes: tuple[int, ...] = ()


class _Run:
    """The buffered rows of one sorted run and the batches still to read."""

    def __init__(self, batches: Iterator[tuple[pa.Table, int]]) -> None:
        self._batches = batches
        self.rows: pa.Table | None = None
        self.levels = np.zeros(0, dtype=np.int32)
        self.drained = False  # no batch left to read

    @property
    def size(self) -> int:
        return 0 if self.rows is None else self.rows.num_rows

    def fill(self) -> None:
        """Read batches until some rows are buffered or the run is drained."""
        while not self.drained and self.size == 0:
            nxt = next(self._batches, None)
            if nxt is None:
                self.drained = True
                break
            self.rows, level = nxt
            self.levels = np.full(self.rows.num_rows, level, dtype=np.int32)

    def take(self, n: int) -> tuple[pa.Table, np.ndarray]:
        assert self.rows is not None
        head, levels = self.rows.slice(0, n), self.levels[:n]
        self.rows, self.levels = self.rows.slice(n), self.levels[n:]
        return head, levels


def _combined(col: pa.ChunkedArray) -> pa.Array:
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


def _numpy_key(t: pa.DataType) -> bool:
    """Key types whose ``to_numpy`` is a numeric (or datetime64) array in the same order."""
    return bool(pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t))


def _rows_not_above(rows: pa.Table, bound: pa.Table, keys: Sequence[str], *,
                    strict: bool = False) -> int:
    """How many leading rows of ``rows`` (sorted by ``keys``) have a key <= the one row of
    ``bound`` (``strict``: a key < it)."""
    if len(keys) == 1 and _numpy_key(rows.schema.field(keys[0]).type):
        col = _combined(rows.column(keys[0]))
        if not col.null_count:
            values = np.asarray(col.to_numpy(zero_copy_only=False))
            b = np.asarray(_combined(bound.column(keys[0])).to_numpy(zero_copy_only=False))
            return int(np.searchsorted(values, b[0], side="left" if strict else "right"))
    # lexicographic (k1 < b1) | (k1 == b1 & ((k2 < b2) | (k2 == b2 & ...)))
    n = rows.num_rows
    acc = np.full(n, not strict, dtype=bool)
    for k in reversed(keys):
        col = _combined(rows.column(k))
        b = bound.column(k)[0]
        lt = np.asarray(pc.less(col, b).fill_null(False).to_numpy(zero_copy_only=False))
        eq = np.asarray(pc.equal(col, b).fill_null(False).to_numpy(zero_copy_only=False))
        acc = lt | (eq & acc)
    return int(np.count_nonzero(acc))


def _bound(runs: Sequence[_Run], keys: Sequence[str]) -> pa.Table:
    """The smallest last buffered key among ``runs`` (one row of the key columns)."""
    lasts = [r.rows.select(keys).slice(r.size - 1, 1) for r in runs if r.rows is not None]
    if len(lasts) == 1:
        return lasts[0]
    t = pa.concat_tables(lasts)
    order = pc.sort_indices(t, sort_keys=[(k, "ascending") for k in keys])
    return t.slice(int(order[0].as_py()), 1)


def _run_batches(reader: DataFileReader, reads: Sequence[FileRead], buffer_rows: int,
                 keys: Sequence[str] | None = None) -> Iterator[tuple[pa.Table, int]]:
    """The batches of a run's files in order; with ``keys`` (files that may repeat a key,
    e.g. changelog files: ``-U`` then ``+U``), each batch ends at a key boundary: the rows of
    the last key are held back and lead the next batch, so a key never spans two batches
    (the files of a run have disjoint key ranges: a file's end is a boundary)."""
    for r in reads:
        carry: pa.Table | None = None
        for t in reader.iter_read(r, buffer_rows):
            if keys is not None and t.num_rows:
                if carry is not None:
                    t = pa.concat_tables([carry, t])
                cut = _rows_not_above(t, t.select(keys).slice(t.num_rows - 1, 1), keys,
                                      strict=True)
                t, carry = t.slice(0, cut), t.slice(cut)
            if t.num_rows:
                yield t, r.file.level
        if carry is not None and carry.num_rows:
            yield carry, r.file.level


def section_chunks(
    reader: DataFileReader,
    reads: Sequence[FileRead],
    key_columns: Sequence[str],
    decode_key: KeyDecoder,
    *,
    buffer_rows: int,
    runs: Sequence[Sequence[DataFileMeta]] | None = None,
    unique_keys: bool = True,
) -> Iterator[Chunk]:
    """The records of one section in key-aligned chunks, unmerged (see the module docstring).

    Args:
        reader: decodes the files (schema evolution, deletion vectors).
        reads: one :class:`FileRead` per file of the section, all with the same columns; the
            ``key_columns`` must be among the columns they produce.
        key_columns: the merge key (``_KEY_*`` columns, or the value's primary-key columns).
        decode_key: decodes the files' min/max keys (to form the sorted runs).
        buffer_rows: rows buffered for the whole section (>= 1), shared by its sorted runs
            (:func:`run_buffer_rows`).
        runs: the section's sorted runs in the order their records are to be concatenated
            (e.g. Java's ``IntervalPartition`` order, for merges whose result depends on it);
            default :func:`sorted_runs` in ascending sequence order.
        unique_keys: every file holds a key at most once (data files); False for changelog
            files, whose rows of one key are adjacent (the file is sorted by key).

    Yields:
        :class:`Chunk` s in ascending key ranges; every key's records lie in one chunk. A
        section of several runs whose key has a floating-point column comes as one chunk
        unless its keys hold no NaN and every run is sorted (:func:`_float_runs_cuttable`).
    """
    if not reads:
        return
    by_name = {r.file.file_name: r for r in reads}
    # runs in the order of their sequence numbers: when their ranges are disjoint, every
    # key's records then come in sequence order (a stable sort by key suffices to merge)
    runs_files = [list(fs) for fs in runs] if runs is not None else sorted(
        sorted_runs([r.file for r in reads], decode_key),
        key=lambda fs: (min(f.min_sequence_number for f in fs),
                        max(f.max_sequence_number for f in fs)))
    ordered = all(
        max(f.max_sequence_number for f in a) < min(f.min_sequence_number for f in b)
        for a, b in itertools.pairwise(runs_files)
    )
    keys = list(key_columns)
    whole = len(runs_files) == 1
    per_run = run_buffer_rows(buffer_rows, len(runs_files))
    align = None if unique_keys else keys
    section_runs = [
        _Run(_run_batches(reader, [by_name[f.file_name] for f in files], per_run, align))
        for files in runs_files
    ]
    for r in section_runs:
        r.fill()
    live = [r for r in section_runs if r.size]
    if (not whole and live
            and any(pa.types.is_floating(live[0].rows.schema.field(k).type)  # type: ignore[union-attr]
                    for k in keys)):
        # NaN order differs between writers: cut only runs proven NaN-free and sorted
        whole = not _float_runs_cuttable(
            reader, [[by_name[f.file_name] for f in files] for files in runs_files], keys,
            per_run, strict=unique_keys)
    if whole:  # one run: every step is a batch of it; floats: one step of everything
        yield from _whole(section_runs, floats=len(runs_files) > 1, ordered=ordered)
        return
    while live:
        open_runs = [r for r in live if not r.drained]
        bound = _bound(open_runs, keys) if open_runs else None
        parts: list[pa.Table] = []
        levels: list[np.ndarray] = []
        for r in live:
            n = r.size if bound is None else _rows_not_above(r.rows, bound, keys)
            if n:
                head, lv = r.take(n)
                parts.append(head)
                levels.append(lv)
        yield Chunk(pa.concat_tables(parts) if len(parts) > 1 else parts[0],
                    np.concatenate(levels) if len(levels) > 1 else levels[0], len(parts),
                    ordered, tuple(p.num_rows for p in parts))
        for r in live:
            r.fill()
        live = [r for r in live if r.size]


def _ascending(t: pa.Table, keys: Sequence[str], *, strict: bool) -> bool:
    """Whether the rows of ``t`` are in ascending key order (``strict``: no key twice)."""
    n = t.num_rows
    if n < 2:
        return True
    acc = np.full(n - 1, not strict, dtype=bool)  # prev <= next (strict: prev < next)
    for k in reversed(keys):
        col = _combined(t.column(k))
        prev, nxt = col.slice(0, n - 1), col.slice(1)
        lt = np.asarray(pc.less(prev, nxt).fill_null(False).to_numpy(zero_copy_only=False))
        eq = np.asarray(pc.equal(prev, nxt).fill_null(False).to_numpy(zero_copy_only=False))
        acc = lt | (eq & acc)
    return bool(acc.all())


def _float_runs_cuttable(reader: DataFileReader, runs: Sequence[Sequence[FileRead]],
                         keys: Sequence[str], batch_rows: int, *, strict: bool) -> bool:
    """Whether a section whose key has a FLOAT / DOUBLE column can be cut like any other: no
    key is NaN and every run is in ascending key order. Java's generated key comparator
    compares floating-point fields with ``a > b ? 1 : a < b ? -1 : 0``, so a NaN compares
    equal to every value and a Java-sorted run holding NaN has no reliable order (nor does
    the same key order as Arrow's, which puts NaN last); without NaN both orders are the
    numeric one (``-0.0`` equal to ``0.0`` in both). Reads the key columns only, batch by
    batch (a pass over the keys before the merge)."""
    for run in runs:
        last: pa.Table | None = None
        for r in run:
            read = dataclasses.replace(r, columns=tuple(c for c in r.columns if c in keys))
            for t in reader.iter_read(read, batch_rows):
                if not t.num_rows:
                    continue
                t = t.select(list(keys))
                for k in keys:
                    col = t.column(k)
                    if pa.types.is_floating(col.type) and pc.any(pc.is_nan(col)).as_py():
                        return False
                if last is not None and not _ascending(
                        pa.concat_tables([last, t.slice(0, 1)]), keys, strict=strict):
                    return False
                if not _ascending(t, keys, strict=strict):
                    return False
                last = t.slice(t.num_rows - 1, 1)
    return True


def _whole(runs: Sequence[_Run], *, floats: bool, ordered: bool) -> Iterator[Chunk]:
    """Chunks of a section that cannot be cut by key: a single run batch by batch (its keys
    are unique: nothing to merge across batches), else everything at once."""
    if not floats:
        run = runs[0]
        while run.size:
            t, lv = run.take(run.size)
            yield Chunk(t, lv, 1, True, (t.num_rows,))
            run.fill()
        return
    parts, levels, sizes = [], [], []
    for r in runs:
        n = 0
        while r.size:
            t, lv = r.take(r.size)
            parts.append(t)
            levels.append(lv)
            n += t.num_rows
            r.fill()
        if n:
            sizes.append(n)
    if parts:
        yield Chunk(pa.concat_tables(parts), np.concatenate(levels), len(runs), ordered,
                    tuple(sizes))


def merge_section_batches(
    reader: DataFileReader,
    bucket_path: str,
    files: Sequence[DataFileMeta],
    *,
    options: CoreOptions,
    decode_key: KeyDecoder,
    columns: Sequence[str],
    key_columns: Sequence[str] | None = None,
    sequence_columns: Sequence[str],
    primary_keys: Sequence[str] = (),
    deleted_rows: Mapping[str, np.ndarray] | None = None,
    ignore_delete: bool | None = None,
    keep_retracts: bool = True,
    system_columns: bool = True,
    key_order: bool = True,
    with_levels: bool = True,
    buffer_rows: int | None = None,
) -> Iterator[pa.Table]:
    """The merged records of one section of a primary-key bucket, chunk by chunk, in memory
    bounded by ``buffer_rows`` (shared by the section's sorted runs), whatever the section's
    size.

    Args:
        reader: decodes the files for the current schema (schema evolution).
        bucket_path: the bucket directory of ``files``.
        files: the files of one section (key ranges overlapping, or a single file); any
            order.
        options: the table options: merge engine, ``sequence.field`` semantics,
            ``ignore-delete``, and the default of ``buffer_rows``.
        decode_key: decodes the files' serialized min/max keys (``key_decoder(schema)``).
        columns: value columns to read (current names; e.g. ``schema.field_names``).
            ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` are always read.
        key_columns: the merge key. Default: the ``_KEY_<k>`` columns of the trimmed
            primary key (read from the files' key columns). Pass the trimmed primary-key
            value columns (they must be in ``columns``) to merge on the values instead: the
            ``_KEY_*`` columns are then not read.
        sequence_columns: ``sequence.field`` columns (in ``columns``), then
            ``_SEQUENCE_NUMBER``.
        primary_keys: the table's primary-key columns (partition columns included) that
            appear in ``columns``: never aggregated.
        deleted_rows: deletion vector of a file (by file name): row positions to skip.
        ignore_delete: drop retract (-U/-D) input records before merging. Default: the
            table's ``ignore-delete``, except for the aggregation engine (Java's
            ``AggregateMergeFunction`` applies retractions even then).
        keep_retracts: keep merged records whose kind is a retraction (compaction below the
            last level keeps them); False drops them (readers, ``drop_delete``).
        system_columns: keep ``_KEY_*``, ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` in the
            output (False: ``columns`` only).
        key_order: yield each chunk sorted by key (chunks come in ascending key ranges, so
            the concatenation is sorted); False spares a gather when the order does not
            matter (readers).
        with_levels: give the merge every record's level, for the engines Java wraps in
            ``LookupMergeFunction`` (see :func:`merge_records`); False merges as if every
            record were on level 0 (incremental reads of deltas).
        buffer_rows: rows buffered for the section, shared by its sorted runs; default
            ``options.merge_buffer_rows`` (``paimon-core.merge.buffer-rows``).

    Yields:
        Tables of merged records (one row per key, the merge engine's result), with the
        columns ``[_KEY_*] _SEQUENCE_NUMBER _VALUE_KIND *columns`` (system columns first,
        as :meth:`DataFileReader.read` returns them) or ``columns`` alone. Every key appears
        in exactly one table; empty tables are not yielded.

    Raises:
        CorruptMetadataError: a missing or unreadable file.
        UnsupportedError: retractions the merge engine refuses.
    """
    rows = options.merge_buffer_rows if buffer_rows is None else buffer_rows
    on_values = key_columns is not None and not any(k.startswith(KEY_PREFIX)
                                                    for k in key_columns)
    keys = list(key_columns) if key_columns is not None else [
        KEY_PREFIX + k for k in _trimmed_keys(reader)]
    if ignore_delete is None:
        ignore_delete = (options.ignore_delete()
                         and options.merge_engine is not MergeEngine.AGGREGATE)
    deleted = deleted_rows or {}
    reads = [
        FileRead(bucket_path, f, tuple(columns), system=True, keys=not on_values,
                 deleted_rows=deleted.get(f.file_name))
        for f in files
    ]
    seq = list(sequence_columns)
    for chunk in section_chunks(reader, reads, keys, decode_key, buffer_rows=rows):
        t, levels = chunk.records, chunk.levels
        if ignore_delete:
            live = ~retract_mask(np.asarray(t.column(VALUE_KIND).to_numpy()))
            if not live.all():
                t, levels = t.filter(pa.array(live)), levels[live]
        if chunk.runs > 1 and t.num_rows:
            t = merge_records(t, keys, seq, VALUE_KIND, options, primary_keys=primary_keys,
                              levels=levels if with_levels else None, key_order=key_order,
                              sequence_ordered=chunk.sequence_ordered and len(seq) == 1)
        if not keep_retracts:
            t = drop_retracts(t, VALUE_KIND)
        if not system_columns:
            t = t.select(list(columns))
        if t.num_rows:
            yield t


def _trimmed_keys(reader: DataFileReader) -> list[str]:
    return list(reader.schema.trimmed_primary_keys)
