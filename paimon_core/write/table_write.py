"""Phase one of the two-phase commit: writing data files and producing commit messages.

Mirrors ``org.apache.paimon.table.sink.TableWriteImpl`` over ``KeyValueFileStoreWrite`` /
``MergeTreeWriter`` (primary-key tables) and ``AppendOnlyFileStoreWrite`` /
``AppendOnlyWriter`` (append tables):

* every input batch is conformed to the schema (:func:`conform_input`), then routed, fully
  vectorised, to its (partition, bucket): partition values by dictionary codes, fixed buckets
  by Paimon's bucket-key hash, unaware-bucket append tables to bucket 0;
* primary-key tables buffer records per bucket; each record
  takes the bucket's next sequence number in arrival order, continuing from the largest
  ``_MAX_SEQUENCE_NUMBER`` of the bucket's live files in the latest snapshot (spec §7.3). A
  flush sorts by key then sequence, merges the records of every key with the table's merge
  engine (``merge_records``: deduplicate, partial-update, aggregation, first-row) and
  writes sorted, key-unique level-0 files; ``changelog-producer=input`` also writes every raw
  record to changelog files;
* append tables buffer rows per bucket and write files of about ``target-file-size``;
* ``write-buffer-size`` bounds the Arrow bytes buffered by all buckets of the writer: past it
  the biggest buffers are spilled (Java's ``MemoryPoolFactory`` preempting its biggest
  writers) — a primary-key buffer is sorted and merged as at a flush and written as a level-0
  file, a sorted run of its bucket, then writing goes on; an append buffer becomes a new file.
  Spilled files are new files of the round's commit message (an abort deletes them, as Java's
  does); past ``num-sorted-run.stop-trigger`` runs the bucket is compacted right away
  (:mod:`paimon_core.write.inline_compact`). A write call bigger than the buffer is routed in
  buffer-sized slices. There is no local-disk spilling (Java's ``write-buffer-spillable``) and
  no opt-in (``write-buffer-for-append``): spills always go to data files;
* :meth:`TableWrite.prepare_commit` flushes everything (buckets in parallel: pyarrow releases
  the GIL) and returns one :class:`CommitMessage` per (partition, bucket) that got files;
* then, like Java's writers, it compacts the buckets that received files when their sorted
  runs call for it (:mod:`paimon_core.write.inline_compact`; never for ``write-only=true``
  tables or unaware-bucket append tables): the result is in the same message
  (``compact_before`` / ``compact_after`` / ``compact_changelog``) and the commit makes an
  APPEND and a COMPACT snapshot. Tables whose readers need a lookup (``merge-engine=first-row``,
  ``changelog-producer=lookup``, ``force-lookup``) get every level-0 file pushed up at each
  commit (``ForceUpLevel0Compaction``), so they are readable at every COMPACT snapshot; for
  first-row a key already on a level above is dropped there (its first row is older).

A TableWrite is not thread-safe; use one per task. Like Java, it assumes one writer per
(bucket, commit user): between commits it re-reads sequence numbers (and live files) only
from snapshots of *other* commit users, so concurrent writers of the same buckets should use
``write-only=true`` and leave compaction to one dedicated compactor. Input that does not fit
the schema is rejected before anything is buffered; after any other error (storage), call
:meth:`TableWrite.abort`.

Example:
    >>> w = table.new_write("pipeline-1")                      # doctest: +SKIP
    >>> w.write_arrow(batch)                                     # doctest: +SKIP
    >>> w.delete_arrow(keys)                                     # doctest: +SKIP
    >>> table.new_commit("pipeline-1").commit(w.prepare_commit(), 1)   # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core.bucket import bucket_ids, hash_codes
from paimon_core.commit_message import CommitMessage
from paimon_core.compact.task import CompactResult
from paimon_core.datafile.formats import format_options
from paimon_core.datafile.writer import DataFileWriter, epoch_nanos_value, split_by_size
from paimon_core.errors import PaimonError, SchemaError, UnsupportedError
from paimon_core.io.file_io import FileIO
from paimon_core.layout import TableContext
from paimon_core.read.merge import deduplicate, merge_records
from paimon_core.scan.planner import ScanPlanner
from paimon_core.snapshot_manager import SnapshotManager
from paimon_core.spec.binary_row import serialize_binary_row
from paimon_core.spec.hash_index import encode_hash_index
from paimon_core.spec.index_manifest import HASH_INDEX, IndexFileMeta
from paimon_core.spec.option_enums import BucketMode, ChangelogProducer, MergeEngine
from paimon_core.spec.row_kind import RowKind, retract_mask
from paimon_core.spec.system_fields import SEQUENCE_NUMBER, VALUE_KIND
from paimon_core.threads import pool_threads
from paimon_core.types import DataType
from paimon_core.write.buffer import (
    BucketState,
    Piece,
    Pin,
    combine_codes,
    gather,
    order_columns,
    split_groups,
    strictly_ascending,
    take_column,
    take_columns,
    take_rows,
    with_system_columns,
)
from paimon_core.write.cross_partition import cross_partition_assigner
from paimon_core.write.dynamic_bucket import (
    AssignerChannel,
    BucketHashes,
    DynamicBucketAssigner,
    HashIndexReader,
    assigner_channels,
)
from paimon_core.write.inline_compact import (
    InlineCompaction,
    inline_compaction_enabled,
    refuse_shared_bucket_lookup,
)
from paimon_core.write.input import (
    check_writable,
    conform_buckets,
    conform_input,
    parse_row_kinds,
)
from paimon_core.write.restore import BucketRestore
from paimon_core.write.small_buckets import (
    SMALL_BUCKET_BYTES,
    SmallFile,
    batches,
    is_small,
    plan_small_files,
)
from paimon_core.write.workers import shared_executor

__all__ = ["TableWrite"]

_T = TypeVar("_T")
_REGROUP_BYTES = 16 * 1024 * 1024


class TableWrite:
    """Writes rows of one table into data files (phase one of the commit).

    Args:
        file_io: storage.
        context: the table with the schema to write with (files record its id), resolved
            (:attr:`FileStoreTable.context <paimon_core.table.FileStoreTable.context>`).
        commit_user: the committing pipeline's identity (kept for the committer).
        snapshot_manager: to find the latest snapshot (sequence number restore).
        planner: a planner of ``schema`` without predicate (lists live files).
        max_workers: threads writing buckets in parallel (default:
            :func:`paimon_core.threads.pool_threads`).
        overwrite: the rows are for an INSERT OVERWRITE: dynamic bucket tables then assign
            buckets from scratch, without loading the hash index (Java's
            ``SimpleHashBucketAssigner``; the overwrite drops the partitions' old index).
        assigner_channel: dynamic bucket tables written by several tasks at once: this
            writer runs only this assigner channel and gets only its rows
            (:func:`paimon_core.write.dynamic_bucket.channel_ids`). New keys go to the
            channel's own buckets, so the tasks' index files never collide; a key already
            stored keeps its bucket, which another task may write too, so such a writer does
            not compact (a dedicated compaction does) and refuses tables whose readers need
            every level-0 file compacted (first-row, lookup changelog, ``force-lookup``).

    Dynamic bucket primary-key tables (``bucket=-1``) get each key's bucket from the table's
    hash index (:mod:`paimon_core.write.dynamic_bucket`: existing keys keep their bucket, new
    keys fill buckets up to ``dynamic-bucket.target-row-num``), and every bucket whose key set
    grew gets a new HASH index file in its commit message. One writer per partition is
    assumed, as for Java's assigners.

    Raises:
        UnsupportedError: a table this writer cannot produce correct files for (postpone
            bucket primary-key tables, deletion vectors with first-row, aggregate functions not
            implemented, non-parquet formats, non-legacy partition names, mixed timestamp
            precisions).
        SchemaError: invalid write options.
    """

    def __init__(
        self,
        file_io: FileIO,
        context: TableContext,
        *,
        commit_user: str,
        snapshot_manager: SnapshotManager,
        planner: ScanPlanner,
        max_workers: int | None = None,
        overwrite: bool = False,
        assigner_channel: AssignerChannel | None = None,
    ) -> None:
        self.file_io = file_io
        self.context = context
        self.table_path = context.table_path
        self.schema = schema = context.schema
        self.commit_user = commit_user
        self.snapshot_manager = snapshot_manager
        self.planner = planner
        self.options = context.options
        self.layout = context.layout
        self.is_pk = context.is_primary_key_table
        self.num_buckets = context.num_buckets
        self.bucket_mode = context.bucket_mode
        check_writable(context)
        self.max_workers = max_workers or pool_threads()
        self.part_keys = list(schema.partition_keys)
        self.part_types: list[DataType] = [schema.field(k).type for k in self.part_keys]
        self.part_index = [schema.field_names.index(k) for k in self.part_keys]
        self.key_names = list(schema.trimmed_primary_keys)
        fixed = self.bucket_mode is BucketMode.HASH_FIXED
        self.bucket_keys = list(schema.bucket_keys) if fixed else []
        self.bucket_types: list[DataType] = [schema.field(k).type for k in self.bucket_keys]
        self.dynamic = self.bucket_mode is BucketMode.HASH_DYNAMIC
        self.key_types: list[DataType] = [schema.field(k).type for k in self.key_names]
        self._overwrite = overwrite
        self._assigner, self._hash_index = self._dynamic_buckets(assigner_channel)
        self._cross = cross_partition_assigner(file_io, context, planner, snapshot_manager,
                                               key_slice=assigner_channel)
        self.sequence_fields = list(self.options.sequence_fields)
        for c in self.sequence_fields:
            schema.field(c)  # typed error for an unknown column
        self.ignore_delete = self.options.ignore_delete()
        # first-row keeps no retraction: Java's compaction fails on one (FirstRowMergeFunction)
        self.refuse_retract = (self.is_pk and self.options.merge_engine is MergeEngine.FIRST_ROW
                               and not self.ignore_delete)
        self.changelog_input = (self.is_pk and self.options.changelog_producer
                                is ChangelogProducer.INPUT)
        # small buckets are flushed in one pass (paimon_core.write.small_buckets)
        self._small_together = (self.is_pk and not self.changelog_input
                                and self.options.merge_engine is MergeEngine.DEDUPLICATE)
        self.rowkind_field = self.options.rowkind_field
        if self.rowkind_field is not None:
            schema.field(self.rowkind_field)
        self.target_file_size = self.options.target_file_size(self.is_pk)
        self.write_buffer_size = self.options.write_buffer_size
        if self.target_file_size <= 0 or self.write_buffer_size <= 0:
            raise SchemaError("target-file-size and write-buffer-size must be positive")
        self.path_factory = self.layout.new_file_names()
        self.writer = DataFileWriter(file_io, schema, self.path_factory,
                                     format_options=format_options(schema, self.options))
        self._inline = (  # a writer of an assigner channel shares its buckets: no compaction
            InlineCompaction(file_io, context, planner.schemas, self.writer)
            if inline_compaction_enabled(context) and assigner_channel is None else None
        )
        self._buckets: dict[tuple[bytes, int], BucketState] = {}
        self._pinned_bytes = 0  # Arrow bytes of the inputs routed since the last pin check
        self._touched: set[tuple[bytes, int]] = set()
        self._round_refreshed = False
        self._restore = BucketRestore(planner, snapshot_manager, commit_user, self.part_keys,
                                      self.part_types, self._inline)
        self._closed = False
        # per write call: partition dictionary codes and bucket of every input row
        self._part_dicts: list[tuple[np.ndarray, pa.Array]] = []
        self._bucket_col: np.ndarray | None = None
        self._key_hashes: np.ndarray | None = None

    def _dynamic_buckets(self, channel: AssignerChannel | None
                         ) -> tuple[DynamicBucketAssigner | None, BucketHashes | None]:
        """The bucket assigner and hash index of a dynamic bucket table (of ``channel``)."""
        if not self.dynamic:
            if channel is not None and self.bucket_mode is not BucketMode.CROSS_PARTITION:
                raise UnsupportedError(f"an assigner channel is for dynamic bucket primary-key "
                                       f"tables (bucket=-1), not bucket={self.num_buckets}")
            return None, None
        reader = None if self._overwrite else HashIndexReader(
            self.file_io, self.layout, self.snapshot_manager, self.planner.manifests)
        channels, assigners = assigner_channels(self.options)
        own: list[int] | None = None
        if channel is not None:
            refuse_shared_bucket_lookup(
                self.context, "dynamic bucket table written by several assigner tasks")
            channels, assigners = channel.num_channels, channel.num_assigners
            own = [channel.channel]
        assigner = DynamicBucketAssigner(
            target_row_num=self.options.dynamic_bucket_target_row_num,
            num_channels=channels, num_assigners=assigners, channels=own, reader=reader)
        return assigner, BucketHashes(reader)

    # ------------------------------------------------------------------ public API
    def write_arrow(self, data: pa.Table | pa.RecordBatch, *, row_kind_column: str | None = None,
                    buckets: pa.Array | pa.ChunkedArray | np.ndarray | None = None) -> None:
        """Write rows (all ``+I`` unless ``row_kind_column`` or the table option
        ``rowkind.field`` gives each row's kind). ``buckets``: each row's bucket, computed
        upstream (fixed-bucket tables), used instead of hashing the bucket key again.

        Raises:
            SchemaError: input that does not fit the schema, or ``buckets`` of another length
                or out of range (:func:`~paimon_core.write.input.conform_buckets`); nothing
                is written then.
            UnsupportedError: retract rows (-U/-D) into an append table, or into a first-row
                table without ``ignore-delete``; ``buckets`` for a table without a fixed
                bucket count (nothing is written then).
        """
        self._check_open()
        given = None if buckets is None else conform_buckets(
            buckets, data.num_rows, self.bucket_mode, self.num_buckets)
        table, kinds = conform_input(data, self.schema, row_kind_column=row_kind_column)
        if kinds is None and self.rowkind_field is not None:
            kinds = parse_row_kinds(table.column(self.rowkind_field), self.rowkind_field)
        self._write(table, kinds, given)

    def delete_arrow(self, data: pa.Table | pa.RecordBatch) -> None:
        """Delete the keys of ``data`` (every row becomes ``-D``). Columns other than the
        primary key may be omitted when nullable.

        Raises:
            UnsupportedError: an append table, or a first-row table without
                ``ignore-delete``.
            SchemaError: input that does not fit the schema.
        """
        self._check_open()
        if not self.is_pk:
            raise UnsupportedError("delete_arrow needs a primary-key table (append tables are "
                                   "insert-only)")
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        have = set(data.column_names)
        for f in self.schema.fields:
            if f.name not in have and f.type.nullable:
                data = data.append_column(f.name, pa.nulls(data.num_rows))
        table, _ = conform_input(data, self.schema)
        self._write(table, np.full(table.num_rows, 3, dtype=np.int8))

    def prepare_commit(self, *, wait_compaction: bool = True) -> list[CommitMessage]:
        """Flush everything and hand over the files written since the last call: one
        message per (partition, bucket) with new files; the writer is then ready for the next
        commit. ``wait_compaction=False``: see :mod:`paimon_core.write.inline_compact`."""
        self._check_open()
        self._flush_buffers([b for b in self._buckets.values() if b.buffer])
        inline = self._inline
        compacted = inline.after_flush(self._buckets, self._run, wait=wait_compaction) \
            if inline else {}
        if compacted is None:  # our view of the live files is inconsistent: re-read it
            self._restore.invalidate()
            compacted = {key: b.compacted for key, b in self._buckets.items()
                         if not b.compacted.is_empty()}
        index_files = self._write_hash_indexes()
        out = []
        for key, b in self._buckets.items():
            c = compacted.get(key) or CompactResult()
            ix, replaces = index_files.get(key, (None, None))
            if b.new_files or b.changelog_files or not c.is_empty() or ix is not None:
                out.append(
                    CommitMessage(
                        partition=b.partition,
                        bucket=b.bucket,
                        total_buckets=self.num_buckets,
                        new_files=tuple(b.new_files),
                        changelog_files=tuple(b.changelog_files),
                        compact_before=tuple(c.before), compact_after=tuple(c.after),
                        compact_changelog=tuple(c.changelog), dv_index_added=tuple(c.index_added),
                        dv_index_deleted=tuple(c.index_deleted),
                        table_path=self.table_path, schema_id=self.schema.id,
                        index_files=() if ix is None else (ix,),
                        replaces_index=None if ix is None or self._overwrite
                        else replaces or "",
                    )
                )
            b.end_round()
        out.sort(key=lambda m: (m.partition, m.bucket))
        self.writer.written_paths.clear()
        self._touched.clear()
        self._round_refreshed = False
        if inline is not None and inline.pending:  # its files are the next round's to abort
            inline.run_pending(self._buckets, self._run)
        return out

    def _write_hash_indexes(self) -> dict[tuple[bytes, int],
                                          tuple[IndexFileMeta | None, str | None]]:
        """A new HASH index file for every bucket whose key set changed (dynamic buckets),
        with the index file it replaces."""
        if self._hash_index is None:
            return {}
        out: dict[tuple[bytes, int], tuple[IndexFileMeta | None, str | None]] = {}
        for partition, bucket, hashes, replaces in self._hash_index.take_changed():
            name = self.path_factory.new_index_file_name()
            path = self.layout.index_file(name)
            data = encode_hash_index(hashes)
            self.writer.written_paths.append(path)  # recorded first: abort removes a partial
            self.file_io.write_bytes(path, data)
            self._hash_index.wrote(partition, bucket, name)
            out[(partition, bucket)] = (IndexFileMeta(HASH_INDEX, name, len(data), len(hashes)),
                                        replaces)
        return out

    def abort(self) -> None:
        """Drop buffered rows and delete every file written since the last
        :meth:`prepare_commit`. Files already handed out in commit messages are the caller's
        to abort (``TableCommit.abort(messages)``). Dynamic bucket assignments are forgotten
        (the next write loads the table's index again)."""
        for index in (self._assigner, self._hash_index, self._cross):
            if index is not None:
                index.reset()
        compacted = False
        for b in self._buckets.values():
            b.buffer = []
            b.buffered_bytes = 0
            compacted = compacted or b.noted > 0 or not b.compacted.is_empty()
            b.end_round()
        if compacted:  # the tracked live files include aborted ones: read them again
            self._restore.invalidate()
        paths = list(self.writer.written_paths)
        self.writer.written_paths.clear()
        errors = []
        for p in paths:
            try:
                self.file_io.delete(p)
            except PaimonError as e:  # keep deleting the others
                errors.append(e)
        self._touched.clear()
        self._round_refreshed = False
        if errors:
            raise errors[0]

    def close(self) -> None:
        """Abort what was not prepared (the writer cannot be used afterwards)."""
        if self._closed:
            return
        try:
            self.abort()
        finally:
            self._closed = True

    def __enter__(self) -> TableWrite:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ routing
    def _check_open(self) -> None:
        if self._closed:
            raise PaimonError("this TableWrite is closed")

    def _write(self, table: pa.Table, kinds: np.ndarray | None,
               buckets: np.ndarray | None = None) -> None:
        if kinds is not None:
            if not self.is_pk:
                if bool((kinds != RowKind.INSERT).any()):
                    i = int(np.argmax(kinds != RowKind.INSERT))
                    raise UnsupportedError(
                        f"append tables accept only +I rows; row {i} has kind "
                        f"{RowKind(int(kinds[i])).short_string}"
                    )
                kinds = None
            elif self.ignore_delete and self._cross is None:  # else after its index
                keep = ~retract_mask(kinds)
                if not bool(keep.all()):
                    table, kinds = table.filter(pa.array(keep)), kinds[keep]
                    buckets = None if buckets is None else buckets[keep]
            elif self.refuse_retract and bool(retract_mask(kinds).any()):
                raise UnsupportedError(
                    "merge-engine 'first-row' accepts no DELETE/UPDATE_BEFORE records (Java's "
                    "compaction refuses them); set 'first-row.ignore-delete' (or "
                    "'ignore-delete') to ignore them")
        if self._cross is not None and table.num_rows:  # -D of moved keys, every row's bucket
            table, kinds, buckets = self._cross.route(table, kinds)
        n = table.num_rows
        if n == 0:
            return
        # An input bigger than the write buffer is routed in slices of at most its size,
        # each followed by the buffer's spills: a spill never sorts more than twice the
        # buffer, whatever the size of one call (sequence numbers follow the input order,
        # slice after slice).
        size = table.nbytes
        pin = self._new_pin(size)
        step = max(1, n * self.write_buffer_size // max(size, 1))
        for start in range(0, n, step):  # numpy slices past the end are cut, as Arrow's
            part = slice(start, start + step)
            self._write_part(table.slice(start, step), None if kinds is None else kinds[part],
                             pin, None if buckets is None else buckets[part])

    def _write_part(self, table: pa.Table, kinds: np.ndarray | None, pin: Pin,
                    buckets: np.ndarray | None) -> None:
        """Route ``table`` to its buckets' buffers (pieces pinning the input ``pin``), then
        spill buffers if they outgrew ``write-buffer-size``."""
        n = table.num_rows
        groups = self._group(table, buckets)
        bytes_per_row = table.nbytes / n
        # Moderate inputs spread over many buckets are regrouped by one gather of each column
        # (each bucket then holds a zero-copy slice) instead of a gather per bucket and column
        # at flush time: the per-call cost dominates for small buckets.
        # (Not when the buckets will be flushed together: that pass gathers once anyway.)
        regroup = len(groups) > 1 and table.nbytes <= _REGROUP_BYTES and not (
            self._small_together and table.nbytes <= SMALL_BUCKET_BYTES * len(groups))
        if regroup:
            perm = np.concatenate([rows for rows, _ in groups if rows is not None])
            grouped = table.take(pa.array(perm))
            grouped_kinds = None if kinds is None else kinds[perm]
            offset = 0
            pin = self._new_pin(grouped.nbytes)
        full = []
        hashes = self._key_hashes
        if len(groups) > 1:
            self._restore_groups(groups)
        for rows, first in groups:
            st = self._bucket_state(first)
            count = n if rows is None else len(rows)
            if self._hash_index is not None and hashes is not None:
                self._hash_index.notify(st.partition, st.bucket,
                                        hashes if rows is None else hashes[rows])
            if regroup:
                piece = Piece(
                    grouped.slice(offset, count), None,
                    None if grouped_kinds is None else grouped_kinds[offset:offset + count],
                    st.next_seq, int(bytes_per_row * count), pin,
                )
                offset += count
            else:
                piece_kinds = kinds if rows is None or kinds is None else kinds[rows]
                piece = Piece(table, rows, piece_kinds, st.next_seq,
                              int(bytes_per_row * count), pin)
            st.add(piece)
            if self.is_pk:
                st.next_seq += count
            elif st.buffered_bytes >= self.target_file_size:
                full.append(st)
        self._run(full, self._flush_full_files)
        self._relieve_memory()

    def _group(self, table: pa.Table, buckets: np.ndarray | None
               ) -> list[tuple[np.ndarray | None, int]]:
        """Rows of each (partition, bucket): ascending row indices (None = every row) and the
        first row of the group (to resolve its partition values and bucket). ``buckets``:
        the rows' buckets as given (fixed-bucket tables), else hashed here."""
        n = table.num_rows
        codes = np.zeros(n, dtype=np.int64)
        radix = 1
        self._part_dicts = []
        for k in self.part_keys:
            col = table.column(k)
            arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
            enc = pc.dictionary_encode(arr, null_encoding="encode")
            idx = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
            self._part_dicts.append((idx, enc.dictionary))
            codes, radix = combine_codes(codes, radix, idx, len(enc.dictionary))
        self._key_hashes = None
        if self.bucket_mode is BucketMode.HASH_FIXED:
            b = buckets if buckets is not None else bucket_ids(
                [table.column(k) for k in self.bucket_keys], self.bucket_types, self.num_buckets
            ).astype(np.int64)
            self._bucket_col = b
            codes, radix = combine_codes(codes, radix, b, self.num_buckets)
        elif self.dynamic or self._cross is not None:
            b = self._assign_dynamic(table, codes, radix) if buckets is None else buckets
            self._bucket_col = b
            codes, radix = combine_codes(codes, radix, b, int(b.max()) + 1)
        else:
            self._bucket_col = None
        return split_groups(codes, radix)

    def _assign_dynamic(self, table: pa.Table, part_codes: np.ndarray, radix: int) -> np.ndarray:
        """Every row's dynamic bucket: the key hashes of each partition's rows, assigned by
        the table's index (the hashes are kept for the index files)."""
        assert self._assigner is not None
        hashes = hash_codes([table.column(k) for k in self.key_names], self.key_types)
        self._key_hashes = hashes
        out = np.empty(table.num_rows, dtype=np.int64)
        for rows, first in split_groups(part_codes, radix):
            partition = serialize_binary_row(self._partition_values(first), self.part_types)
            if rows is None:
                out[:] = self._assigner.assign(partition, hashes)
            else:
                out[rows] = self._assigner.assign(partition, hashes[rows])
        return out

    def _partition_values(self, row: int) -> list[object]:
        return [
            epoch_nanos_value(dic[int(idx[row])], t)
            for (idx, dic), t in zip(self._part_dicts, self.part_types)
        ]

    def _bucket_state(self, row: int) -> BucketState:
        """The writer of the (partition, bucket) of original row ``row``."""
        values = self._partition_values(row)
        bucket = int(self._bucket_col[row]) if self._bucket_col is not None else 0
        partition = serialize_binary_row(values, self.part_types)
        key = (partition, bucket)
        state = self._buckets.get(key)
        if state is None:
            bucket_dir = self.layout.bucket_dir_of_values(values, bucket)
            state = BucketState(partition, bucket, bucket_dir)
            self._buckets[key] = state
        if key not in self._touched:
            restored = self._restored_max(key)
            if restored is not None:
                state.next_seq = max(state.next_seq, restored + 1)
            self._touched.add(key)
        return state

    def _restored_max(self, key: tuple[bytes, int]) -> int | None:
        """Largest ``_MAX_SEQUENCE_NUMBER`` of the bucket's live files in the latest snapshot
        (:mod:`paimon_core.write.restore`: its partition read when first touched, the
        restored partitions brought up to date at the first bucket touched in each round)."""
        self._refresh_round()
        return self._restore.max_sequence(key)

    def _refresh_round(self) -> None:
        if not self._round_refreshed or not self._restore.valid:
            self._restore.refresh()
            self._round_refreshed = True

    def _restore_groups(self, groups: Sequence[tuple[object, int]]) -> None:
        """Restore, in one read, the partitions of the buckets of a write call that this
        round has not touched yet."""
        parts = set()
        for _, first in groups:
            part = serialize_binary_row(self._partition_values(first), self.part_types)
            bucket = int(self._bucket_col[first]) if self._bucket_col is not None else 0
            if (part, bucket) not in self._touched:
                parts.add(part)
        if parts:
            self._refresh_round()
            self._restore.ensure(parts)

    # ------------------------------------------------------------------ buffering
    def _relieve_memory(self) -> None:
        """Bound the memory of the buffers by ``write-buffer-size`` (Java's
        ``MemoryPoolFactory`` preempting the biggest writers): when the buffered rows of all
        buckets exceed it, the biggest buffers are spilled (primary-key tables: sorted and
        merged into a level-0 file, a sorted run of the bucket; append tables: a new file)
        until half of it is left. Then, once per ``write-buffer-size`` of input routed, the
        buffered pieces that pin an input more than twice their size (rows selected from a
        bigger write call whose other rows went elsewhere or were spilled) are copied out,
        releasing the inputs: the cost stays linear in the input, however small the calls."""
        limit = self.write_buffer_size
        total = sum(b.buffered_bytes for b in self._buckets.values())
        if total > limit:
            victims = []
            for b in sorted(self._buckets.values(), key=lambda b: -b.buffered_bytes):
                if total <= limit // 2 or not b.buffered_bytes:
                    break
                victims.append(b)
                total -= b.buffered_bytes
            self._flush_buffers(victims)
            if self._inline is not None and self.is_pk:
                # each spill is a sorted run: past num-sorted-run.stop-trigger, compact
                self._run(victims, self._inline.relieve)
        if self._pinned_bytes <= limit:
            return
        # once per write-buffer-size of input: copy out the pieces holding less than half of
        # the input they pin (what stays pinned is then at most twice the buffered bytes)
        self._pinned_bytes = 0
        for b in self._buckets.values():
            b.buffer = [p.compacted(self.part_index)
                        if p.pin is not None and p.pin.nbytes > 2 * p.nbytes else p
                        for p in b.buffer]

    def _new_pin(self, nbytes: int) -> Pin:
        self._pinned_bytes += nbytes
        return Pin(nbytes)

    # ------------------------------------------------------------------ flushing
    def _run(self, states: Sequence[_T], fn: Callable[[_T], None]) -> None:
        if not states:
            return
        if len(states) == 1 or self.max_workers <= 1:
            for s in states:
                fn(s)
            return
        pool = shared_executor(self.max_workers)
        futures = [pool.submit(fn, s) for s in states]
        first: BaseException | None = None
        for f in futures:
            exc = f.exception()
            if exc is not None and first is None:
                first = exc
        if first is not None:
            raise first

    def _flush_buffers(self, states: Sequence[BucketState]) -> None:
        """Flush the buffers of ``states``: many small buckets of the deduplicate engine in
        one pass (:mod:`paimon_core.write.small_buckets`), the others one by one."""
        small: list[BucketState] = []
        if self._small_together and len(states) > 1:
            small = [st for st in states if is_small(st, self.target_file_size)]
        if len(small) < 2:
            small = []
        chosen = {id(st) for st in small}
        self._run([st for st in states if id(st) not in chosen], self._flush_final)
        groups = batches(small)
        if len(groups) == 1:  # files written in parallel
            self._run(self._plan_small(groups[0]), self._write_small_file)
        else:  # passes in parallel
            self._run(groups, self._flush_small)

    def _plan_small(self, states: Sequence[BucketState]) -> list[SmallFile]:
        return plan_small_files(states, self.writer, key_names=self.key_names,
                                sequence_fields=self.sequence_fields, constant=self.part_index)

    def _flush_small(self, states: Sequence[BucketState]) -> None:
        for f in self._plan_small(states):
            self._write_small_file(f)

    def _write_small_file(self, f: SmallFile) -> None:
        f.state.new_files.append(
            self.writer.write_kv_file(f.state.bucket_dir, f.table, constant=self.part_index,
                                      stats=f.stats)
        )

    def _flush_final(self, st: BucketState) -> None:
        if self.is_pk:
            self._flush_pk(st)
        else:
            self._flush_append(st, final=True)

    def _flush_full_files(self, st: BucketState) -> None:
        self._flush_append(st, final=False)

    def _flush_append(self, st: BucketState, *, final: bool) -> None:
        size = st.buffered_bytes
        t = st.take_buffer(self.part_index)
        if t is None:
            return
        parts = split_by_size(t, self.target_file_size, size)
        if not final and parts and parts[-1].nbytes < self.target_file_size:
            rest = parts.pop()
            st.add(Piece(rest, None, None, 0, rest.nbytes))
        for p in parts:
            meta = self.writer.write_append_file(
                st.bucket_dir, p, st.next_seq, constant=self.part_index
            )
            st.next_seq += p.num_rows
            st.new_files.append(meta)

    def _flush_pk(self, st: BucketState) -> None:
        """Sort the bucket's records by (key, sequence), keep the newest per key and write
        level-0 files (plus every raw record as changelog with ``changelog-producer=input``).

        Ordering is computed on a thin table (keys, sequence columns, position); the wide rows
        are gathered once, in their final order, column by column while the buffer's columns
        are released: a spill holds the buffer and its sorted copy together for one column
        at a time, not twice the buffer."""
        if not st.buffer:
            return
        bytes_per_row = st.buffered_bytes / max(1, sum(p.num_rows for p in st.buffer)) + 9
        source, rows, seq, kinds = gather(st.buffer, self.part_index)
        st.buffer = []
        st.buffered_bytes = 0
        thin = {c: take_column(source.column(c), rows)
                for c in order_columns(self.key_names, self.sequence_fields)}
        thin[SEQUENCE_NUMBER] = pa.array(seq, pa.int64())
        ascending = self._strictly_ascending(thin)
        if self.changelog_input:
            order = None if ascending else np.asarray(
                pc.sort_indices(
                    pa.table(thin),
                    sort_keys=[(k, "ascending") for k in (*self.key_names, SEQUENCE_NUMBER)],
                ).to_numpy()
            )
            changes = self._wide(source, rows, seq, kinds, order)
            for p in split_by_size(changes, self.target_file_size,
                                   int(changes.num_rows * bytes_per_row)):
                st.changelog_files.append(
                    self.writer.write_kv_file(
                        st.bucket_dir, p, changelog=True, constant=self.part_index
                    )
                )
            del changes
        engine_merge = not ascending and self.options.merge_engine is not MergeEngine.DEDUPLICATE
        positions = None
        if not ascending and not engine_merge:
            thin["__pos"] = pa.array(np.arange(len(seq), dtype=np.int64))
            # records arrive in sequence order: without a sequence field a stable sort by
            # key alone keeps each key's records in that order
            winners = deduplicate(
                pa.table(thin), self.key_names, [*self.sequence_fields, SEQUENCE_NUMBER],
                sequence_ordered=not self.sequence_fields,
            )
            positions = np.asarray(winners.column("__pos").to_numpy(), dtype=np.int64)
            del winners
        del thin
        sel = rows if positions is None else (positions if rows is None else rows[positions])
        columns: list[pa.ChunkedArray | None] = list(source.columns)
        schema = source.schema
        del source  # the columns list now holds the buffer: take_columns releases it
        merged = with_system_columns(
            take_columns(columns, schema, sel, self.part_index),
            seq if positions is None else seq[positions],
            kinds if positions is None else kinds[positions],
        )
        if engine_merge:
            # the engine's record per key, as Java merges its write buffer with the table's
            # MergeFunction (a lone retraction stays in the level-0 file)
            merged = merge_records(
                merged, self.key_names, [*self.sequence_fields, SEQUENCE_NUMBER],
                VALUE_KIND, self.options, primary_keys=self.schema.primary_keys,
            )
        for p in split_by_size(merged, self.target_file_size,
                               int(merged.num_rows * bytes_per_row)):
            st.new_files.append(
                self.writer.write_kv_file(st.bucket_dir, p, constant=self.part_index)
            )

    def _wide(self, source: pa.Table, rows: np.ndarray | None, seq: np.ndarray,
              kinds: np.ndarray, positions: np.ndarray | None) -> pa.Table:
        """The buffered records ``positions`` (None = all, in arrival order) with their
        system columns."""
        sel = rows if positions is None else (positions if rows is None else rows[positions])
        t = take_rows(source, sel, self.part_index)
        s_ = seq if positions is None else seq[positions]
        k_ = kinds if positions is None else kinds[positions]
        return with_system_columns(t, s_, k_)

    def _strictly_ascending(self, thin: dict[str, pa.Array]) -> bool:
        """True when a single integer-like key is strictly ascending in arrival order: the
        records are then already sorted and unique (no merge needed)."""
        if len(self.key_names) != 1 or self.sequence_fields:
            return False
        return strictly_ascending(thin[self.key_names[0]])
