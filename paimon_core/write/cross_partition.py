"""Cross-partition upsert (``bucket = -1``, a primary key without every partition key).

Mirrors Paimon 0.9's ``org.apache.paimon.crosspartition``: ``GlobalIndexAssigner`` (one
index primary key -> (partition, bucket) for the whole table), ``IndexBootstrap`` (the index
loaded from the latest snapshot), ``BucketAssigner`` (buckets per partition) and the
``ExistingProcessor`` of each merge engine, for a key that arrives in another partition than
the one it is stored in:

* ``deduplicate`` (``DeleteExistingProcessor``): the stored row is deleted — a ``-D`` of the
  key in its old partition and bucket, right before the new row — and the new row goes to a
  bucket of its new partition;
* ``first-row`` (``SkipNewExistingProcessor``): the new row is dropped (the first one stays);
* ``partial-update`` / ``aggregation`` (``UseOldExistingProcessor``): the new row is written
  to the stored key's partition and bucket (its partition columns take the old values).

A key arriving in its stored partition keeps its bucket; a new key (or a moved one) takes the
lowest bucket of its partition holding fewer than ``dynamic-bucket.target-row-num`` keys, else
the lowest bucket number not used yet (of this assigner's residue class ``b % n == id`` when the
keys are split over ``n`` assigners). Like Java, no HASH index files are written in this mode,
a deleted key keeps its index entry, and the bucket counts of a partition count the keys
stored there. Every record, deletes included, goes through the same steps (Java's
``processInput``).

Memory: the index is four numpy arrays — 64-bit key fingerprints
(:func:`paimon_core.bucket.key_fingerprint_pair`, sorted), a second independent 64-bit check
word that confirms every fingerprint match (two keys sharing a fingerprint stay two entries),
partition ids and buckets (24 bytes per key: 10M keys take 240 MB) — bootstrapped by
reading only the primary-key and partition columns of the latest snapshot, split by split,
batch by batch. Within one write call the rows are
resolved by sorting them by key (stable), never one Python step per row: new keys are dealt
their buckets in runs between two moved keys (a move frees its place in the old bucket before
the next key is dealt, as Java's row-by-row loop), so the buckets chosen are Java's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.bucket import hash_codes, key_fingerprint_pair, key_fingerprints
from paimon_core.datafile import writer as data_writer
from paimon_core.errors import CorruptMetadataError, UnsupportedError
from paimon_core.io.file_io import FileIO
from paimon_core.layout import TableContext
from paimon_core.read.table_read import TableRead
from paimon_core.scan.planner import ScanPlanner
from paimon_core.scan.split import DataSplit
from paimon_core.snapshot_manager import SnapshotManager
from paimon_core.spec.option_enums import BucketMode, MergeEngine
from paimon_core.spec.row_kind import RowKind, retract_mask
from paimon_core.types import DataType
from paimon_core.write.dynamic_bucket import MAX_BUCKETS, AssignerChannel
from paimon_core.write.inline_compact import refuse_shared_bucket_lookup

__all__ = ["INDEX_TTL", "CrossPartitionAssigner", "cross_partition_assigner", "key_slices"]

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
#: Java's ``cross-partition-upsert.index-ttl``: the bootstrap skips the buckets whose files are
#: all older than it (``IndexBootstrap.filterSplit``)
INDEX_TTL = "cross-partition-upsert.index-ttl"


def key_slices(key_columns: list[pa.Array | pa.ChunkedArray], key_types: list[DataType],
               num_slices: int) -> I32:
    """The key slice (assigner) of every row: ``abs(hash % n)`` of the ``BinaryRow`` hash of
    the whole primary key, so every version of a key, in any partition, goes to one assigner
    (Flink's shuffle in front of ``GlobalIndexAssigner``)."""
    h = hash_codes(key_columns, key_types).astype(np.int64)
    return np.abs(np.fmod(h, num_slices)).astype(np.int32)


def cross_partition_assigner(file_io: FileIO, context: TableContext, planner: ScanPlanner,
                             snapshot_manager: SnapshotManager, *,
                             key_slice: AssignerChannel | None
                             ) -> CrossPartitionAssigner | None:
    """The global key index of a writer of a cross-partition table (of one key slice when
    given: :func:`key_slices`), None for other tables.

    An INSERT OVERWRITE is written as Java 0.9 writes it: Flink's ``GlobalDynamicBucketSink``
    takes the overwrite partitions only for its commit, and its ``IndexBootstrapOperator`` (as
    Spark's ``PaimonSparkWriter``) loads the index from the latest snapshot, the table as it
    is before the overwrite. A key that moves partition gets its ``-D`` in its old partition,
    which a dynamic partition overwrite then replaces too (as Java's commit does).

    Raises:
        UnsupportedError: key slices of a table whose level-0 files must be compacted at every
            commit (several tasks may share a bucket).
    """
    if context.bucket_mode is not BucketMode.CROSS_PARTITION:
        return None
    if key_slice is not None:
        refuse_shared_bucket_lookup(context, "cross-partition table written by several tasks")
    return CrossPartitionAssigner(file_io, context, planner, snapshot_manager, key_slice)


class _Partitions:
    """Partition ids (``IDMapping<BinaryRow>``): a 64-bit fingerprint of the partition values
    -> a dense id, and the values of each id (one row of the partition columns)."""

    def __init__(self, names: list[str], types: list[DataType], schema: pa.Schema) -> None:
        self.names = names
        self.types = types
        self._ids: dict[int, int] = {}
        self._values: list[pa.Table] = []
        self._schema = schema
        self._table: pa.Table | None = None

    def ids(self, table: pa.Table) -> I32:
        """The partition id of every row of ``table`` (which holds the partition columns).

        Raises:
            UnsupportedError: two different partitions share a 64-bit fingerprint (checked
                exactly, once per partition: never merged).
        """
        values = table.select(self.names).cast(self._schema)
        fps = key_fingerprints(list(values.columns), self.types)
        uniq, first, inverse = np.unique(fps, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        if not values.take(pa.array(first[inverse])).equals(values):  # a row not its group's
            raise self._collision()
        ids = np.empty(len(uniq), np.int32)
        for i, (fp, row) in enumerate(zip(uniq.tolist(), first.tolist())):  # per partition
            got = self._ids.get(fp)
            value = values.slice(row, 1)
            if got is None:
                got = self._ids[fp] = len(self._values)
                self._values.append(value)
                self._table = None
            elif not self._values[got].equals(value):
                raise self._collision()
            ids[i] = got
        return ids[inverse]

    def _collision(self) -> UnsupportedError:
        return UnsupportedError(
            f"two different values of the partition columns {self.names} share one 64-bit "
            "fingerprint; this writer cannot tell them apart")

    def values(self, ids: I32) -> pa.Table:
        """The partition columns of the partitions ``ids`` (one row each)."""
        if self._table is None:
            self._table = pa.concat_tables(self._values)
        return self._table.take(pa.array(ids))


class _Buckets:
    """Keys per bucket of each partition (``crosspartition.BucketAssigner``)."""

    def __init__(self, target: int, num_assigners: int, assign_id: int) -> None:
        self.target = target
        self.num_assigners = num_assigners
        self.assign_id = assign_id
        self.counts: dict[int, dict[int, int]] = {}

    def add(self, parts: I32, buckets: I32, delta: int) -> None:
        """Count ``delta`` (+1 stored, -1 removed) for each (partition, bucket) pair."""
        if not len(parts):
            return
        pairs = (parts.astype(np.int64) << 32) | buckets.astype(np.int64)
        uniq, counts = np.unique(pairs, return_counts=True)
        for pair, c in zip(uniq.tolist(), counts.tolist()):
            m = self.counts.setdefault(pair >> 32, {})
            b = pair & 0xFFFFFFFF
            m[b] = max(0, m.get(b, 0) + delta * c)  # Java: a missing bucket decrements to 0

    def deal(self, part: int, m: int) -> I32:
        """Buckets for ``m`` new keys of ``part``: the lowest bucket of this assigner below
        the target first, then the lowest bucket numbers not used yet."""
        counts = self.counts.setdefault(part, {})
        out = np.empty(m, np.int32)
        i = 0
        for b in sorted(counts):
            if i == m:
                break
            room = self.target - counts[b]
            if room <= 0 or abs(b % self.num_assigners) != self.assign_id:
                continue
            take = min(room, m - i)
            out[i:i + take] = b
            counts[b] += take
            i += take
        b = self.assign_id
        while i < m:
            while b in counts:
                b += self.num_assigners
            if b >= MAX_BUCKETS:
                raise UnsupportedError(
                    f"a partition needs more than {MAX_BUCKETS} buckets; raise "
                    f"'dynamic-bucket.target-row-num' (now {self.target})")
            take = min(self.target, m - i)
            out[i:i + take] = b
            counts[b] = take
            i += take
        return out


@dataclass
class _Index:
    """Key fingerprints (sorted) with each key's check word, partition id and bucket.

    A key is its (fingerprint, check word) pair (:func:`key_fingerprint_pair`): a fingerprint
    match is confirmed by the check word before the entry is taken, so two keys sharing a
    fingerprint are two entries (side by side in ``keys``) and never one key's row moved or
    deleted for the other's."""

    keys: U64
    checks: U64
    parts: I32
    buckets: I32

    def locate(self, fps: U64, checks: U64) -> I64:
        """The entry of each key, -1 where absent: the first entry with its fingerprint,
        then (only after a fingerprint collision) the next ones until the check word
        matches."""
        at = np.full(len(fps), -1, np.int64)
        n = len(self.keys)
        if not n or not len(fps):
            return at
        pos = np.searchsorted(self.keys, fps)
        todo = np.arange(len(fps))
        while len(todo):
            p = pos[todo]
            live = p < n
            todo, p = todo[live], p[live]
            same = self.keys[p] == fps[todo]
            todo, p = todo[same], p[same]
            hit = self.checks[p] == checks[todo]
            at[todo[hit]] = p[hit]
            todo = todo[~hit]
            pos[todo] += 1
        return at

    def find(self, fps: U64, checks: U64) -> tuple[npt.NDArray[np.bool_], I32, I32]:
        """(found, partition id, bucket) of each key (-1 where not found)."""
        at = self.locate(fps, checks)
        found = at >= 0
        safe = np.maximum(at, 0)
        if not len(self.keys):
            none = np.full(len(fps), -1, np.int32)
            return found, none, none.copy()
        return (found, np.where(found, self.parts[safe], -1).astype(np.int32),
                np.where(found, self.buckets[safe], -1).astype(np.int32))

    def put(self, fps: U64, checks: U64, parts: I32, buckets: I32) -> None:
        """Set the location of keys ``(fps, checks)`` (unique), replacing what was stored."""
        if not len(fps):
            return
        at = self.locate(fps, checks)
        hit = at >= 0
        self.parts[at[hit]] = parts[hit]
        self.buckets[at[hit]] = buckets[hit]
        new = np.flatnonzero(~hit)
        new = new[np.argsort(fps[new], kind="stable")]
        pos = np.searchsorted(self.keys, fps[new])
        self.keys = np.insert(self.keys, pos, fps[new])
        self.checks = np.insert(self.checks, pos, checks[new])
        self.parts = np.insert(self.parts, pos, parts[new])
        self.buckets = np.insert(self.buckets, pos, buckets[new])


class CrossPartitionAssigner:
    """Assigns (partition, bucket) to the rows of a cross-partition table, adding the ``-D``
    of a key that moved (``GlobalIndexAssigner``, bootstrapped on first use).

    Args:
        file_io / context / planner / snapshot_manager: the table (the index is read from
            its latest snapshot).
        key_slice: this writer takes only the keys of one slice (:func:`key_slices`; a Spark
            task of a distributed write): it loads only those keys and creates only buckets
            ``b`` with ``b % num_channels == channel``. None: every key.

    With ``cross-partition-upsert.index-ttl`` the bootstrap skips every bucket whose files
    are all older than the TTL (Java's ``IndexBootstrap.filterSplit``): their keys are not
    in the index, so such a key arriving in another partition is written there as a new key
    and kept in both (the duplication Paimon's option description warns of). Java's RocksDB
    also drops entries older than the TTL when it compacts, at no set time; this index keeps
    the entries of its own writes until the writer ends.

    With ``ignore-delete``, retractions pass through the index like every row (Java's
    ``processInput``: a ``-D`` arriving in another partition moves the key's entry there)
    and are dropped afterwards, with the ``-D`` rows the index adds (Java's
    ``TableWriteImpl`` drops every retraction it is handed).
    """

    def __init__(self, file_io: FileIO, context: TableContext, planner: ScanPlanner,
                 snapshot_manager: SnapshotManager, key_slice: AssignerChannel | None) -> None:
        schema = context.schema
        self.ttl_millis = context.options.get_duration_millis(INDEX_TTL, None)
        self.ignore_delete = context.options.ignore_delete()
        self.engine = context.options.merge_engine
        self.file_io = file_io
        self.context = context
        self.planner = planner
        self.snapshot_manager = snapshot_manager
        self.slice = key_slice
        self.key_names = list(schema.primary_keys)
        self.key_types = [schema.field(k).type for k in self.key_names]
        self._part_names = list(schema.partition_keys)
        self._part_types = [schema.field(k).type for k in self._part_names]
        self._index: _Index | None = None
        self._parts: _Partitions | None = None
        self._buckets: _Buckets | None = None

    def reset(self) -> None:
        """Forget the index (the next write bootstraps it from the latest snapshot)."""
        self._index = self._parts = self._buckets = None

    # ------------------------------------------------------------------ bootstrap
    def _bootstrap(self, arrow_schema: pa.Schema) -> None:
        n, me = (1, 0) if self.slice is None else (self.slice.num_channels, self.slice.channel)
        part_schema = pa.schema([arrow_schema.field(k) for k in self._part_names])
        self._parts = _Partitions(self._part_names, self._part_types, part_schema)
        self._buckets = _Buckets(self.context.options.dynamic_bucket_target_row_num, n, me)
        fps: list[U64] = []
        checks: list[U64] = []
        parts: list[I32] = []
        buckets: list[I32] = []
        for batch, bucket in self._stored_keys():
            key_cols = [batch.column(k) for k in self.key_names]
            mine = np.ones(batch.num_rows, bool) if n == 1 else key_slices(
                key_cols, self.key_types, n) == me
            if not mine.all():
                batch = batch.filter(pa.array(mine))
                key_cols = [batch.column(k) for k in self.key_names]
            if not batch.num_rows:
                continue
            f, c = _fingerprints(key_cols, self.key_types)
            fps.append(f)
            checks.append(c)
            # a split is one partition: its id from the first row
            parts.append(np.full(len(f), self._parts.ids(batch.slice(0, 1))[0], np.int32))
            buckets.append(np.full(len(f), bucket, np.int32))
        keys = np.concatenate(fps) if fps else np.zeros(0, np.uint64)
        chk = np.concatenate(checks) if checks else np.zeros(0, np.uint64)
        p = np.concatenate(parts) if parts else np.zeros(0, np.int32)
        b = np.concatenate(buckets) if buckets else np.zeros(0, np.int32)
        order = np.argsort(keys, kind="stable")
        keys, chk, p, b = keys[order], chk[order], p[order], b[order]
        twice = np.zeros(0, bool)
        if len(keys) > 1 and bool((keys[1:] == keys[:-1]).any()):  # a shared fingerprint
            order = np.lexsort((chk, keys))
            keys, chk, p, b = keys[order], chk[order], p[order], b[order]
            twice = (keys[1:] == keys[:-1]) & (chk[1:] == chk[:-1])
        if bool(twice.any()):
            raise CorruptMetadataError(
                self.context.table_path, "a primary key is stored in two partitions or "
                "buckets of this cross-partition table (two jobs wrote it at once?); Paimon's "
                "bootstrap refuses such data too")
        self._buckets.add(p, b, 1)
        self._index = _Index(keys, chk, p, b)

    def _stored_keys(self) -> Iterator[tuple[pa.Table, int]]:
        """The live primary keys (with the partition columns) of each bucket of the latest
        snapshot, batch by batch (``IndexBootstrap``: only these columns are read)."""
        snapshot = self.snapshot_manager.latest_snapshot()
        if snapshot is None:
            return
        columns = list(dict.fromkeys([*self.key_names, *self._part_names]))
        read = TableRead(self.file_io, self.context, self.planner.schemas, columns)
        now = data_writer.local_now_millis()  # files' creation times: writer-local clocks
        for split in self.planner.plan(snapshot).splits:
            if self.ttl_millis is not None and _expired(split, self.ttl_millis, now):
                continue
            for batch in read.to_batches([split]):
                yield pa.Table.from_batches([batch]), split.bucket

    # ------------------------------------------------------------------ routing
    def route(self, table: pa.Table, kinds: npt.NDArray[np.int8] | None
              ) -> tuple[pa.Table, npt.NDArray[np.int8] | None, I64]:
        """The rows to write for ``table`` (conformed to the schema, in arrival order) and
        each one's bucket: ``-D`` rows inserted before rows whose key moved (deduplicate),
        rows dropped (first-row) or moved to the stored partition (partial-update,
        aggregation)."""
        if self._index is None:
            self._bootstrap(table.schema)
        assert self._index is not None and self._parts is not None
        n = table.num_rows
        fps, checks = _fingerprints([table.column(k) for k in self.key_names], self.key_types)
        part = self._parts.ids(table)
        found, old_part, old_bucket = self._index.find(fps, checks)
        order = np.lexsort((np.arange(n), checks, fps))  # by key, then arrival
        sfp, schk, spart = fps[order], checks[order], part[order]
        first = np.ones(n, bool)
        first[1:] = (sfp[1:] != sfp[:-1]) | (schk[1:] != schk[:-1])
        route = (self._route_delete if self.engine is MergeEngine.DEDUPLICATE
                 else self._route_keep_old)
        out, out_kinds, buckets = route(table, kinds, order, first, spart, found[order],
                                        old_part[order], old_bucket[order], (sfp, schk))
        if self.ignore_delete and out_kinds is not None:  # after the index, as Java
            keep = ~retract_mask(out_kinds)
            if not keep.all():
                return out.filter(pa.array(keep)), out_kinds[keep], buckets[keep]
        return out, out_kinds, buckets

    def _route_delete(self, table: pa.Table, kinds: npt.NDArray[np.int8] | None,
                      order: I64, first: npt.NDArray[np.bool_], spart: I32,
                      sfound: npt.NDArray[np.bool_], sold_part: I32, sold_bucket: I32,
                      skeys: tuple[U64, U64]
                      ) -> tuple[pa.Table, npt.NDArray[np.int8] | None, I64]:
        """``DeleteExistingProcessor``: every row is written to its own partition; a row
        whose key was last in another partition first deletes it there."""
        assert self._index is not None and self._buckets is not None
        n = len(order)
        # a segment: consecutive versions of a key (in arrival order) in one partition
        start = first.copy()
        start[1:] |= spart[1:] != spart[:-1]
        stored_here = first & sfound & (sold_part == spart)
        needs_bucket = start & ~stored_here
        seg = np.cumsum(start) - 1
        seg_rows = np.flatnonzero(start)
        # where the key was before each segment: the stored location, or the segment before
        retract = start & ~first | (first & sfound & (sold_part != spart))
        seg_bucket = np.where(stored_here[seg_rows], sold_bucket[seg_rows], -1).astype(np.int32)
        prev_part = np.where(first, sold_part, np.roll(spart, 1)).astype(np.int32)
        self._deal_and_free(seg_bucket, seg, seg_rows, needs_bucket, order, spart,
                            np.flatnonzero(retract), prev_part,
                            np.where(first, sold_bucket, -1).astype(np.int32))
        bucket_sorted = seg_bucket[seg]
        prev_bucket = np.where(first, sold_bucket, np.roll(bucket_sorted, 1)).astype(np.int32)
        last = np.ones(n, bool)
        last[:-1] = first[1:]
        self._index.put(skeys[0][last], skeys[1][last], spart[last], bucket_sorted[last])
        buckets = np.empty(n, np.int64)
        buckets[order] = bucket_sorted
        moved = np.zeros(n, bool)
        moved[order] = retract
        if not moved.any():
            return table, kinds, buckets
        old_p = np.empty(n, np.int32)
        old_p[order] = prev_part
        old_b = np.empty(n, np.int64)
        old_b[order] = prev_bucket
        return self._with_retractions(table, kinds, buckets, moved, old_p, old_b)

    def _deal_segments(self, seg_bucket: I32, seg_rows: I64,
                       needs_bucket: npt.NDArray[np.bool_], order: I64, spart: I32) -> None:
        """Deal buckets to the segments that need one, per partition in arrival order."""
        assert self._buckets is not None
        need = needs_bucket[seg_rows]
        if not need.any():
            return
        segs = np.flatnonzero(need)
        segs = segs[np.argsort(order[seg_rows[segs]], kind="stable")]  # arrival order
        self._deal_rows(seg_bucket, segs, spart[seg_rows[segs]])

    def _deal_and_free(self, seg_bucket: I32, seg: I64, seg_rows: I64,
                       needs_bucket: npt.NDArray[np.bool_], order: I64, spart: I32,
                       retracts: I64, prev_part: I32, stored_bucket: I32) -> None:
        """Deal buckets to the segments that need one and free the place of every retracted
        key, in arrival order as Java does row by row (a retraction frees its place before
        its own row's key is dealt): the new keys between two retractions are dealt at once,
        so the Python steps are one per retraction (scalar), never one per row."""
        assert self._buckets is not None
        if not len(retracts):
            self._deal_segments(seg_bucket, seg_rows, needs_bucket, order, spart)
            return
        retracts = retracts[np.argsort(order[retracts], kind="stable")]
        need_rows = seg_rows[needs_bucket[seg_rows]]
        need_rows = need_rows[np.argsort(order[need_rows], kind="stable")]
        # the retractions arriving before each new segment: non-decreasing, so group k (the
        # segments after k retractions) is one slice
        after = np.searchsorted(order[retracts], order[need_rows], side="right")
        cuts = np.searchsorted(after, np.arange(len(retracts) + 2), side="left").tolist()
        need_seg, need_part = seg[need_rows], spart[need_rows]
        one_seg, one_part = need_seg.tolist(), need_part.tolist()
        r_part = prev_part[retracts].tolist()
        r_bucket = stored_bucket[retracts].tolist()
        r_prev_seg = (seg[retracts] - 1).tolist()  # a move within the call: its last segment
        counts = self._buckets.counts
        for k in range(len(retracts) + 1):
            if k:
                b = r_bucket[k - 1]
                if b < 0:
                    b = int(seg_bucket[r_prev_seg[k - 1]])
                m = counts.setdefault(r_part[k - 1], {})
                m[b] = max(0, m.get(b, 0) - 1)
            lo, hi = cuts[k], cuts[k + 1]
            if hi - lo == 1:  # the common case of a move: one key, scalar
                seg_bucket[one_seg[lo]] = self._buckets.deal(one_part[lo], 1)[0]
            elif lo < hi:
                self._deal_rows(seg_bucket, need_seg[lo:hi], need_part[lo:hi])

    def _deal_rows(self, seg_bucket: I32, segs: I64, parts: I32) -> None:
        """Deal buckets to segments ``segs`` (arrival order) of partitions ``parts``."""
        assert self._buckets is not None
        if bool((parts == parts[0]).all()):
            seg_bucket[segs] = self._buckets.deal(int(parts[0]), len(segs))
            return
        for p in np.unique(parts).tolist():
            mine = segs[parts == p]
            seg_bucket[mine] = self._buckets.deal(p, len(mine))

    def _route_keep_old(self, table: pa.Table, kinds: npt.NDArray[np.int8] | None,
                        order: I64, first: npt.NDArray[np.bool_], spart: I32,
                        sfound: npt.NDArray[np.bool_], sold_part: I32, sold_bucket: I32,
                        skeys: tuple[U64, U64]
                        ) -> tuple[pa.Table, npt.NDArray[np.int8] | None, I64]:
        """``SkipNewExistingProcessor`` (first-row: rows of a key in another partition than
        its stored one are dropped) and ``UseOldExistingProcessor`` (partial-update,
        aggregation: they are written to the stored partition and bucket)."""
        assert self._index is not None and self._buckets is not None
        n = len(order)
        group = np.cumsum(first) - 1
        heads = np.flatnonzero(first)
        home_part = np.where(sfound[heads], sold_part[heads], spart[heads]).astype(np.int32)
        home_bucket = np.where(sfound[heads], sold_bucket[heads], -1).astype(np.int32)
        self._deal_segments(home_bucket, heads, first & ~sfound, order, spart)
        new = ~sfound[heads]
        self._index.put(skeys[0][heads][new], skeys[1][heads][new], home_part[new],
                        home_bucket[new])
        elsewhere = np.zeros(n, bool)
        elsewhere[order] = spart != home_part[group]
        buckets = np.empty(n, np.int64)
        buckets[order] = home_bucket[group]
        if not elsewhere.any():
            return table, kinds, buckets
        if self.engine is MergeEngine.FIRST_ROW:
            keep = ~elsewhere
            return (table.filter(pa.array(keep)), None if kinds is None else kinds[keep],
                    buckets[keep])
        assert self._parts is not None
        target = np.empty(n, np.int32)
        target[order] = home_part[group]
        return _set_partitions(table, self._parts, elsewhere, target), kinds, buckets

    def _with_retractions(self, table: pa.Table, kinds: npt.NDArray[np.int8] | None,
                          buckets: I64, moved: npt.NDArray[np.bool_], old_part: I32,
                          old_bucket: I64) -> tuple[pa.Table, npt.NDArray[np.int8], I64]:
        """``table`` with a ``-D`` row (the row, in its key's old partition) before every
        moved row."""
        assert self._parts is not None
        n = table.num_rows
        rows = np.flatnonzero(moved)
        retracts = _set_partitions(table.take(pa.array(rows)), self._parts,
                                   np.ones(len(rows), bool), old_part[rows])
        # output order: row i's retraction (if any) right before row i
        src = np.concatenate([np.arange(n), n + np.arange(len(rows))])
        pos = np.concatenate([np.arange(n) * 2 + 1, rows * 2])
        perm = src[np.argsort(pos, kind="stable")]
        out = pa.concat_tables([table, retracts]).take(pa.array(perm))
        k = np.full(n, RowKind.INSERT, np.int8) if kinds is None else kinds
        all_kinds = np.concatenate([k, np.full(len(rows), RowKind.DELETE, np.int8)])
        all_buckets = np.concatenate([buckets, old_bucket[rows]])
        return out, all_kinds[perm], all_buckets[perm]


def _fingerprints(columns: list[pa.Array | pa.ChunkedArray], types: list[DataType]
                  ) -> tuple[U64, U64]:
    """Each row's key: fingerprint and check word (:func:`key_fingerprint_pair`; one name
    for the route's keys, which a test replaces with a weak one to force collisions)."""
    return key_fingerprint_pair(columns, types)


def _expired(split: DataSplit, ttl_millis: int, now: int) -> bool:
    """Every file of ``split`` was created more than ``ttl_millis`` before ``now``
    (``IndexBootstrap.filterSplit``: kept when ``now <= creation + ttl`` for any file)."""
    return all(f.creation_time is not None and now > f.creation_time + ttl_millis
               for f in split.files)


def _set_partitions(table: pa.Table, parts: _Partitions, rows: npt.NDArray[np.bool_],
                    ids: I32) -> pa.Table:
    """``table`` with the partition columns of ``rows`` set to the values of partitions
    ``ids`` (``ProjectToRowFunction``)."""
    values = parts.values(ids.astype(np.int32))
    mask = pa.array(rows)
    for name in parts.names:
        i = table.schema.get_field_index(name)
        col = pc.if_else(mask, values.column(name), table.column(name))
        table = table.set_column(i, table.schema.field(i), col)
    return table
