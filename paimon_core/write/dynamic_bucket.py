"""Dynamic bucket mode (``bucket = -1`` primary-key tables): bucket assignment and hash index.

Mirrors Paimon 0.9's ``org.apache.paimon.index``: ``HashBucketAssigner`` / ``PartitionIndex``
(which bucket a key goes to), ``SimpleHashBucketAssigner`` (the same without loading the index,
for INSERT OVERWRITE), ``HashIndexMaintainer`` (the key hashes of one bucket, written as a HASH
index file when they changed) and ``IndexFileHandler.scanEntries`` / ``readHashIndex``.

* A key is identified by ``BinaryRow.hashCode()`` of its trimmed primary key (int32,
  :func:`paimon_core.bucket.hash_codes`); two keys with the same hash share a bucket.
* Per partition, a key already in the index stays in its bucket; a new key goes to the first
  (lowest) bucket of the assigner holding fewer than ``dynamic-bucket.target-row-num`` keys,
  else to a new bucket: the lowest number not used yet that the assigner owns.
* Assigners: rows go to channel ``(abs(partitionHash % C) + abs(keyHash % A)) % C``
  (``BucketAssigner.computeAssigner``; ``C`` channels = ``dynamic-bucket.assigner-parallelism``,
  ``A`` = ``min(dynamic-bucket.initial-buckets, C)``), and channel ``i`` creates only buckets
  ``b`` with ``b % A == i % A`` (``isMyBucket``): a partition starts with ``A`` buckets filling
  in parallel. A channel loads the hashes of its slice and counts the keys of its buckets.
  :class:`DynamicBucketAssigner` runs any set of channels (a single-process writer runs all).
* Every record, deletes included, adds its key hash to its bucket's index (as Java's
  ``AbstractFileStoreWrite`` notifies the maintainer of every record): a deleted key keeps its
  bucket. A bucket whose hash set changed gets a new index file (all its hashes) at
  ``prepare_commit``; the commit replaces the bucket's previous index entry.

Vectorised: lookups are ``searchsorted`` over sorted hash arrays, and new keys are dealt to
buckets in runs (one numpy slice per bucket), never one Python step per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from paimon_core.bucket import hash_binary_row, hash_codes
from paimon_core.errors import UnsupportedError
from paimon_core.io.file_io import FileIO
from paimon_core.layout import TableLayout
from paimon_core.manifest_io import ManifestIO
from paimon_core.options import CoreOptions
from paimon_core.snapshot_manager import SnapshotManager
from paimon_core.spec.hash_index import decode_hash_index
from paimon_core.spec.index_manifest import HASH_INDEX
from paimon_core.spec.manifest import FileKind
from paimon_core.types import DataType

__all__ = [
    "MAX_BUCKETS",
    "AssignerChannel",
    "BucketHashes",
    "DynamicBucketAssigner",
    "HashIndexReader",
    "assigner_channels",
    "channel_ids",
    "compute_assigner",
]

I32 = npt.NDArray[np.int32]
#: buckets are stored as Java ``short`` in the assigner's map: 0 .. 32766
MAX_BUCKETS = 32767


def _java_abs_rem(a: npt.NDArray[np.int64] | int, n: int) -> npt.NDArray[np.int64]:
    """``Math.abs(a % n)`` with Java's remainder (the sign of the dividend)."""
    return np.abs(np.fmod(np.asarray(a, dtype=np.int64), n))


def compute_assigner(partition_hash: int, key_hashes: I32, num_channels: int,
                     num_assigners: int) -> npt.NDArray[np.int64]:
    """The assigner channel of each key (``BucketAssigner.computeAssigner``)."""
    start = int(_java_abs_rem(partition_hash, num_channels))
    ids = _java_abs_rem(key_hashes.astype(np.int64), num_assigners)
    return (start + ids) % num_channels


def partition_hash(partition: bytes) -> int:
    """``BinaryRow.hashCode()`` of a serialized partition (bytes with the arity prefix)."""
    return hash_binary_row(partition[4:])


@dataclass(frozen=True, slots=True)
class AssignerChannel:
    """One assigner of a distributed write (a Spark task): ``channel`` of ``num_channels``,
    with ``num_assigners`` bucket residue classes (Flink's ``HashBucketAssignerOperator``
    subtask; see :func:`channel_ids` for which rows it gets)."""

    channel: int
    num_channels: int
    num_assigners: int

    def __post_init__(self) -> None:
        if not (0 <= self.channel < self.num_channels
                and 1 <= self.num_assigners <= self.num_channels):
            raise ValueError(f"invalid assigner channel {self}")


def channel_ids(partition_columns: Sequence[pa.Array | pa.ChunkedArray],
                partition_types: Sequence[DataType],
                key_columns: Sequence[pa.Array | pa.ChunkedArray], key_types: Sequence[DataType],
                num_channels: int, num_assigners: int) -> npt.NDArray[np.int32]:
    """The assigner channel of every row (``BucketAssigner.computeAssigner`` of the row's
    partition hash and trimmed primary key hash), vectorised: route each row to the task that
    runs that channel (Flink's shuffle in front of the assigners).

    Raises:
        SchemaError / UnsupportedError: columns that do not fit their types.
    """
    keys = hash_codes(key_columns, key_types).astype(np.int64)
    if partition_columns:
        parts = hash_codes(partition_columns, partition_types).astype(np.int64)
    else:  # BinaryRow.EMPTY_ROW: the header word only
        parts = np.full(len(keys), hash_binary_row(bytes(8)), np.int64)
    start = _java_abs_rem(parts, num_channels)
    ids = _java_abs_rem(keys, num_assigners)
    return ((start + ids) % num_channels).astype(np.int32)


def assigner_channels(options: CoreOptions) -> tuple[int, int]:
    """(channels, assigners) of a single-process writer, as Flink's ``DynamicBucketSink``:
    channels = ``dynamic-bucket.assigner-parallelism`` (Flink: the sink parallelism when
    unset; here ``initial-buckets``, else 1), assigners = ``min(initial-buckets, channels)``."""
    initial = options.dynamic_bucket_initial_buckets
    channels = options.dynamic_bucket_assigner_parallelism or initial or 1
    return channels, min(initial or channels, channels)


class HashIndexReader:
    """The HASH index files of a table's latest snapshot (``IndexFileHandler``), decoded once
    per file name.

    Args:
        file_io / layout: the table's storage and paths.
        snapshot_manager / manifest_io: to find the latest snapshot's index manifest.
    """

    def __init__(self, file_io: FileIO, layout: TableLayout, snapshot_manager: SnapshotManager,
                 manifest_io: ManifestIO) -> None:
        self.file_io = file_io
        self.layout = layout
        self.snapshot_manager = snapshot_manager
        self.manifest_io = manifest_io
        self._entries: dict[bytes, dict[int, tuple[str, int]]] | None = None
        self._files: dict[str, I32] = {}

    def refresh(self) -> None:
        """Forget the index manifest read (the next load reads the latest snapshot again)."""
        self._entries = None

    def _by_partition(self) -> dict[bytes, dict[int, tuple[str, int]]]:
        if self._entries is None:
            out: dict[bytes, dict[int, tuple[str, int]]] = {}
            latest = self.snapshot_manager.latest_snapshot()
            if latest is not None and latest.index_manifest:
                for ie in self.manifest_io.index_manifest(latest.index_manifest):
                    if ie.index_type == HASH_INDEX and ie.kind is FileKind.ADD:
                        out.setdefault(ie.partition, {})[ie.bucket] = (ie.file_name,
                                                                        ie.row_count)
            self._entries = out
        return self._entries

    def load(self, partition: bytes) -> dict[int, I32]:
        """The key hashes of every bucket of ``partition`` (empty for a new partition).

        Raises:
            CorruptMetadataError: an index file that is not a sequence of int32.
            PaimonError: storage errors.
        """
        return {b: hashes for b, (_, hashes) in self.load_files(partition).items()}

    def load_files(self, partition: bytes) -> dict[int, tuple[str, I32]]:
        """:meth:`load` with the name of each bucket's index file."""
        out: dict[int, tuple[str, I32]] = {}
        for bucket, (name, _) in self._by_partition().get(partition, {}).items():
            hashes = self._files.get(name)
            if hashes is None:
                path = self.layout.index_file(name)
                hashes = decode_hash_index(self.file_io.read_bytes(path), path)
                self._files[name] = hashes
            out[bucket] = (name, hashes)
        return out


@dataclass
class _ChannelIndex:
    """One assigner channel's view of one partition (``PartitionIndex``)."""

    keys: I32  # sorted hashes of this channel's slice
    buckets: I32  # bucket of each key
    counts: dict[int, int]  # keys per bucket of this channel (non-full and full)
    owned: set[int]  # every bucket of this channel (``totalBucket``)
    residue: int
    num_assigners: int
    target: int

    def assign(self, hashes: I32) -> I32:
        out = np.empty(len(hashes), dtype=np.int32)
        found = np.zeros(len(hashes), dtype=bool)
        if len(self.keys):
            pos_c = _positions(self.keys, hashes)
            found = self.keys[pos_c] == hashes
            out[found] = self.buckets[pos_c[found]]
        if found.all():
            return out
        missing = hashes[~found]
        uniq, first, inverse = np.unique(missing, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # new keys in arrival order
        dealt = np.empty(len(uniq), dtype=np.int32)
        dealt[order] = self._deal(len(uniq))
        out[~found] = dealt[inverse.reshape(-1)]
        self._remember(uniq, dealt)
        return out

    def _deal(self, m: int) -> I32:
        """Buckets for ``m`` new keys: fill the non-full buckets lowest first, then new ones
        (Java iterates a ``HashMap``: ascending while bucket numbers stay below its capacity;
        a partition normally has one non-full bucket per assigner anyway)."""
        out = np.empty(m, dtype=np.int32)
        i = 0
        for b in sorted(self.counts):
            if i == m:
                break
            room = self.target - self.counts[b]
            if room <= 0:
                continue
            take = min(room, m - i)
            out[i:i + take] = b
            self.counts[b] += take
            i += take
        while i < m:
            b = self._new_bucket()
            take = min(self.target, m - i)
            out[i:i + take] = b
            self.counts[b] = take
            self.owned.add(b)
            i += take
        for b in [b for b, c in self.counts.items() if c >= self.target]:
            del self.counts[b]  # full: never offered again (Java drops it when it sees it full)
        return out

    def _new_bucket(self) -> int:
        for b in range(self.residue, MAX_BUCKETS, self.num_assigners):
            if b not in self.owned:
                return b
        raise UnsupportedError(
            f"a partition needs more than {MAX_BUCKETS} dynamic buckets; raise "
            f"'dynamic-bucket.target-row-num' (now {self.target})")

    def _remember(self, hashes: I32, buckets: I32) -> None:
        keys = np.concatenate([self.keys, hashes])
        values = np.concatenate([self.buckets, buckets])
        order = np.argsort(keys, kind="stable")
        self.keys, self.buckets = keys[order], values[order]


class DynamicBucketAssigner:
    """Assigns buckets to key hashes (``HashBucketAssigner``, one object for any set of
    channels; ``SimpleHashBucketAssigner`` when ``reader`` is None).

    Args:
        target_row_num: ``dynamic-bucket.target-row-num``.
        num_channels / num_assigners: see :func:`assigner_channels`.
        channels: the channels this object runs (default: all).
        reader: the table's index (None: start empty, as for an overwrite).

    Raises:
        ValueError: a row whose channel is not one of ``channels``.
    """

    def __init__(self, *, target_row_num: int, num_channels: int = 1, num_assigners: int = 1,
                 channels: Sequence[int] | None = None,
                 reader: HashIndexReader | None = None) -> None:
        if target_row_num < 1 or num_channels < 1 or not 1 <= num_assigners <= num_channels:
            raise ValueError("invalid dynamic bucket assigner settings")
        self.target = target_row_num
        self.num_channels = num_channels
        self.num_assigners = num_assigners
        self.channels = set(range(num_channels) if channels is None else channels)
        self.reader = reader
        self._index: dict[tuple[bytes, int], _ChannelIndex] = {}

    def reset(self) -> None:
        """Forget every partition (the next assignment loads the latest index again)."""
        self._index.clear()
        if self.reader is not None:
            self.reader.refresh()

    def assign(self, partition: bytes, hashes: I32) -> I32:
        """The bucket of each key hash of ``partition`` (int32 array, same order)."""
        hashes = np.asarray(hashes, dtype=np.int32)
        p_hash = partition_hash(partition)
        chan = (np.zeros(len(hashes), np.int64) if self.num_channels == 1
                else compute_assigner(p_hash, hashes, self.num_channels, self.num_assigners))
        out = np.empty(len(hashes), dtype=np.int32)
        for c in np.unique(chan).tolist():
            if c not in self.channels:
                raise ValueError(f"key hashes of channel {c} sent to channels "
                                 f"{sorted(self.channels)}")
            rows = np.flatnonzero(chan == c) if len(self.channels) > 1 else None
            idx = self._channel(partition, p_hash, c)
            if rows is None:
                out[:] = idx.assign(hashes)
            else:
                out[rows] = idx.assign(hashes[rows])
        return out

    def _channel(self, partition: bytes, p_hash: int, c: int) -> _ChannelIndex:
        idx = self._index.get((partition, c))
        if idx is None:
            idx = self._load(partition, p_hash, c)
            self._index[(partition, c)] = idx
        return idx

    def _load(self, partition: bytes, p_hash: int, c: int) -> _ChannelIndex:
        """``PartitionIndex.loadIndex``: the hashes of this channel's slice, and the key counts
        of this channel's buckets."""
        residue = c % self.num_assigners
        files = self.reader.load(partition) if self.reader is not None else {}
        keys: list[I32] = []
        buckets: list[I32] = []
        counts: dict[int, int] = {}
        for b, hashes in sorted(files.items()):
            mine = (np.ones(len(hashes), bool) if self.num_channels == 1 else
                    compute_assigner(p_hash, hashes, self.num_channels, self.num_assigners) == c)
            keys.append(hashes[mine])
            buckets.append(np.full(int(mine.sum()), b, dtype=np.int32))
            if b % self.num_assigners == residue:
                counts[b] = len(hashes)
        k = np.concatenate(keys) if keys else np.zeros(0, np.int32)
        v = np.concatenate(buckets) if buckets else np.zeros(0, np.int32)
        order = np.argsort(k, kind="stable")
        return _ChannelIndex(k[order], v[order], counts, set(counts), residue,
                             self.num_assigners, self.target)


def _positions(sorted_values: I32, values: I32) -> npt.NDArray[np.intp]:
    """``searchsorted`` clipped to the last index; many values are looked up in ascending
    order (about twice as fast: the binary searches then share their cache lines)."""
    if len(values) > 4096:
        order = np.argsort(values, kind="stable")
        pos = np.empty(len(values), np.intp)
        pos[order] = np.searchsorted(sorted_values, values[order])
    else:
        pos = np.searchsorted(sorted_values, values)
    return np.minimum(pos, len(sorted_values) - 1)


def _members(sorted_values: I32, values: I32) -> npt.NDArray[np.bool_]:
    """Which ``values`` are in ``sorted_values`` (ascending, non-empty)."""
    return np.asarray(sorted_values[_positions(sorted_values, values)] == values)


class BucketHashes:
    """The key hashes of each (partition, bucket) a writer touched (``HashIndexMaintainer``):
    restored from the latest index when the bucket is first touched (not with ``reader`` None,
    as for an overwrite), extended by every record written.

    Args:
        reader: the table's index, or None to start every bucket empty.
    """

    def __init__(self, reader: HashIndexReader | None) -> None:
        self.reader = reader
        self._hashes: dict[tuple[bytes, int], I32] = {}
        self._modified: set[tuple[bytes, int]] = set()
        self._partitions: dict[bytes, dict[int, tuple[str, I32]]] = {}
        #: the index file each bucket's hash set was restored from, or last written to
        self._base: dict[tuple[bytes, int], str | None] = {}

    def reset(self) -> None:
        """Forget everything (after an abort)."""
        self._hashes.clear()
        self._modified.clear()
        self._partitions.clear()
        self._base.clear()

    def notify(self, partition: bytes, bucket: int, hashes: I32) -> None:
        """Records with key ``hashes`` were written to ``(partition, bucket)``."""
        key = (partition, bucket)
        have = self._hashes.get(key)
        if have is None:
            have = self._restore(partition, bucket)
        hashes = np.asarray(hashes, dtype=np.int32)
        if len(have):  # most records are of stored keys: drop them before the unique
            hashes = hashes[~_members(have, hashes)]
        if len(hashes):
            new = np.unique(hashes)
            have = np.insert(have, np.searchsorted(have, new), new)
            self._modified.add(key)
        self._hashes[key] = have

    def _restore(self, partition: bytes, bucket: int) -> I32:
        self._base[(partition, bucket)] = None
        if self.reader is None:
            return np.zeros(0, np.int32)
        files = self._partitions.get(partition)
        if files is None:
            files = self.reader.load_files(partition)
            self._partitions[partition] = files
        found = files.get(bucket)
        if found is None:
            return np.zeros(0, np.int32)
        self._base[(partition, bucket)] = found[0]
        got = np.sort(found[1])
        if len(got) > 1 and bool((got[1:] == got[:-1]).any()):  # Java writes a set
            got = np.unique(got)
        return got

    def take_changed(self) -> list[tuple[bytes, int, I32, str | None]]:
        """(partition, bucket, every hash, the index file they replace) of the buckets whose
        hash set changed since the last call (``HashIndexMaintainer.prepareCommit``), hashes
        ascending. The replaced file is the one the bucket was restored from, or the one
        :meth:`wrote` named since (None: the bucket had no index file)."""
        out = [(p, b, self._hashes[(p, b)], self._base.get((p, b)))
               for p, b in sorted(self._modified)]
        self._modified.clear()
        return out

    def wrote(self, partition: bytes, bucket: int, file_name: str) -> None:
        """The bucket's hash set is now in ``file_name`` (what the next change replaces)."""
        self._base[(partition, bucket)] = file_name

