"""Flushing the write buffers of many small primary-key buckets in one pass.

A commit of a few thousand rows spread over many (partition, bucket)s writes one small level-0
file per bucket. Flushed bucket by bucket (``TableWrite._flush_pk``), each file costs a sort,
a deduplication, a gather of every column and a min / max per column: a dozen Arrow calls
whose fixed cost outweighs the rows they process. Here the records of all those buckets are
sorted and deduplicated together (the bucket's ordinal as the leading key), gathered with one
``take`` per column and described with one hash aggregation; each bucket's file is a zero-copy
slice of the result.

The files are exactly those of the per-bucket flush of the ``deduplicate`` engine: the same
rows in the same (key, sequence) order, the same sequence numbers, kinds and stats. Only
buckets that fit one file qualify (no rolling), and only that engine without
``changelog-producer=input`` (the other engines merge with their own functions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from paimon_core.datafile.writer import DataFileWriter
from paimon_core.read.merge import deduplicate
from paimon_core.spec.stats import SimpleStats
from paimon_core.spec.system_fields import SEQUENCE_NUMBER
from paimon_core.write.buffer import BucketState, gather, order_columns, with_system_columns

__all__ = ["SMALL_BUCKET_BYTES", "SmallFile", "batches", "is_small", "plan_small_files"]

#: a bucket whose buffer holds at most this much (Arrow bytes) is flushed with the others:
#: about 15k rows of 70 bytes, where the fixed cost of a file's Arrow calls still shows;
#: bigger buckets are flushed on their own, several in parallel
SMALL_BUCKET_BYTES = 1024 * 1024
#: the buffers flushed in one pass at most (bigger sets: several passes, in parallel)
_BATCH_BYTES = 16 * 1024 * 1024
_RUN = "__run"
_POS = "__pos"


@dataclass(frozen=True, eq=False)
class SmallFile:
    """One bucket's level-0 file, ready to write: its rows (table columns, then
    ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``, sorted by key) and their (key, value) stats."""

    state: BucketState
    table: pa.Table
    stats: tuple[SimpleStats, SimpleStats]


def is_small(st: BucketState, target_file_size: int) -> bool:
    """True when the bucket's buffer is small and becomes a single file (the per-bucket flush
    estimates a file at the buffered bytes plus 9 bytes a row for sequence number and kind)."""
    rows = sum(p.num_rows for p in st.buffer)
    size = st.buffered_bytes + 9 * rows
    return rows > 0 and size <= min(SMALL_BUCKET_BYTES, target_file_size)


def batches(states: Sequence[BucketState]) -> list[list[BucketState]]:
    """``states`` cut into groups of at most :data:`_BATCH_BYTES` buffered bytes."""
    if not states:
        return []
    out: list[list[BucketState]] = [[]]
    size = 0
    for st in states:
        if out[-1] and size + st.buffered_bytes > _BATCH_BYTES:
            out.append([])
            size = 0
        out[-1].append(st)
        size += st.buffered_bytes
    return out


def plan_small_files(
    states: Sequence[BucketState],
    writer: DataFileWriter,
    *,
    key_names: Sequence[str],
    sequence_fields: Sequence[str],
    constant: Sequence[int],
) -> list[SmallFile]:
    """Take the buffers of ``states`` (each non-empty, :func:`is_small`) and return one file
    per state, in order. The buffers are emptied."""
    sources: list[pa.Table] = []
    source_of: dict[int, int] = {}
    starts_of_source: list[int] = []
    total = 0
    index_parts: list[np.ndarray] = []
    seq_parts: list[np.ndarray] = []
    kind_parts: list[np.ndarray] = []
    run_parts: list[np.ndarray] = []
    for i, st in enumerate(states):
        source, rows, seq, kinds = gather(st.buffer, constant)
        st.buffer = []
        st.buffered_bytes = 0
        j = source_of.get(id(source))
        if j is None:  # buckets routed by row index share their write call's table
            j = source_of[id(source)] = len(sources)
            sources.append(source)
            starts_of_source.append(total)
            total += source.num_rows
        local = (np.arange(source.num_rows, dtype=np.int64) if rows is None
                 else np.asarray(rows, dtype=np.int64))
        index_parts.append(local + starts_of_source[j])
        seq_parts.append(seq)
        kind_parts.append(kinds)
        run_parts.append(np.full(len(seq), i, dtype=np.int32))
    index = np.concatenate(index_parts)
    seq_all = np.concatenate(seq_parts)
    kinds_all = np.concatenate(kind_parts)
    run_all = np.concatenate(run_parts)
    source = sources[0] if len(sources) == 1 else pa.concat_tables(sources)
    idx = pa.array(index)
    thin: dict[str, pa.Array | pa.ChunkedArray] = {_RUN: pa.array(run_all)}
    for c in order_columns(key_names, sequence_fields):
        thin[c] = source.column(c).take(idx)
    thin[SEQUENCE_NUMBER] = pa.array(seq_all, pa.int64())
    thin[_POS] = pa.array(np.arange(len(seq_all), dtype=np.int64))
    # a bucket's records arrive in ascending sequence numbers: without a sequence field a
    # stable sort by (bucket, key) leaves each key's records in sequence order
    winners = deduplicate(
        pa.table(thin), [_RUN, *key_names], [*sequence_fields, SEQUENCE_NUMBER],
        sequence_ordered=not sequence_fields,
    )
    pos = np.asarray(winners.column(_POS).to_numpy(), dtype=np.int64)
    wide = with_system_columns(source.take(pa.array(index[pos])), seq_all[pos], kinds_all[pos])
    runs = run_all[pos]
    starts = np.flatnonzero(np.concatenate(([True], runs[1:] != runs[:-1])))
    assert len(starts) == len(states), "every bucket keeps at least one record"
    ends = [*starts[1:].tolist(), len(pos)]
    stats = writer.kv_stats_runs(wide, starts)
    return [
        SmallFile(st, wide.slice(a, b - a), s)
        for st, a, b, s in zip(states, starts.tolist(), ends, stats)
    ]
