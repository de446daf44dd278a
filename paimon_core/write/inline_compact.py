"""Compaction inside the writer (``MergeTreeWriter`` / ``AppendOnlyWriter`` with their
``CompactManager``s, synchronous as in Java's batch writes).

The writer knows the live files of its buckets without extra IO: the latest snapshot's files
when it first restores sequence numbers, then the files of later snapshots of *other* commit
users (ADD and DELETE, e.g. a dedicated compactor), plus its own new files and compaction
results. After every ``prepare_commit`` each bucket that received files is checked (metadata
only) and compacted when its sorted runs call for it (universal compaction; every level-0
file for the tables that need a lookup, ``CompactOptions.lookup``: ``changelog-producer=lookup``,
``merge-engine=first-row`` whose readers skip level 0, ``force-lookup``; small-file compaction
for fixed-bucket append tables; a full compaction every ``full-compaction.delta-commits``
commits). The result travels in the
same commit message (``compact_before`` / ``compact_after`` / ``compact_changelog``), and
``TableCommit.commit`` then makes an APPEND and a COMPACT snapshot, as Java does.

A primary-key bucket whose write buffer spills (``write-buffer-size``) gets a level-0 file
(a sorted run) per spill. Like Java's ``MergeTreeWriter``, which waits for its compaction once
the bucket has more sorted runs than ``num-sorted-run.stop-trigger``, the writer compacts such
a bucket right after the spill (:meth:`InlineCompaction.relieve`); the results of the round
are folded as Java's ``updateCompactResult`` does (a file written and compacted away within the
round is deleted at once and appears in neither list) and travel in the round's message.

``deletion-vectors.enabled=true`` primary-key tables compact every level-0 file at every commit
with a lookup (``KeyValueFileStoreWrite``: a DV table needs the lookup, so ``prepareCommit``
waits for the compaction), which adds the positions of the records it supersedes on the
levels above to their files' deletion vectors (:mod:`paimon_core.compact.deletion_vectors`);
each bucket's vectors are kept for the writer's life (reloaded from the latest snapshot when
another commit user changed the bucket) and written once per commit, as one new DV index file
replacing the previous one, in the round's message.

``write-only=true`` tables and unaware-bucket append tables never compact here (use
``FileStoreTable.compact`` / a dedicated compaction job).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence

from paimon_core.compact.deletion_vectors import BucketDeletionVectors, write_vectors
from paimon_core.compact.manager import BucketCompactor
from paimon_core.compact.options import CompactOptions
from paimon_core.compact.task import CompactResult
from paimon_core.datafile.writer import DataFileWriter
from paimon_core.errors import CorruptMetadataError, PaimonError, UnsupportedError
from paimon_core.io.file_io import FileIO, join
from paimon_core.layout import TableContext
from paimon_core.schema_manager import SchemaManager
from paimon_core.spec.manifest import DataFileMeta, FileKind, ManifestEntry
from paimon_core.spec.option_enums import BucketMode
from paimon_core.write.buffer import BucketState

__all__ = ["InlineCompaction", "inline_compaction_enabled", "refuse_shared_bucket_lookup"]

log = logging.getLogger(__name__)

BucketKey = tuple[bytes, int]
RunAll = Callable[[Sequence[BucketState], Callable[[BucketState], None]], None]
FileId = tuple[str, int]  # (file name, level): what a DELETE entry names


def inline_compaction_enabled(context: TableContext) -> bool:
    """Whether writers of this table compact (not ``write-only``, not unaware-bucket)."""
    core = context.options
    if core.write_only or (core.deletion_vectors_enabled and not context.is_primary_key_table):
        return False  # an append table's deletion vectors are not applied by its compaction
    return context.bucket_mode is not BucketMode.BUCKET_UNAWARE


def refuse_shared_bucket_lookup(context: TableContext, writers: str) -> None:
    """Refuse a table whose level-0 files must be compacted at every commit (first-row,
    lookup changelog, ``force-lookup``, deletion vectors) when it is written by several tasks
    that may share a bucket (``writers`` names them): such tasks do not compact.

    Raises:
        UnsupportedError: naming the options.
    """
    settings = CompactOptions.of(context.schema, context.options).lookup_settings
    if settings:
        raise UnsupportedError(
            f"a {writers} cannot have its level-0 files compacted at every commit, which "
            f"{' and '.join(settings)} needs: write it from one task, or give the table a "
            "fixed 'bucket' count")


class InlineCompaction:
    """Live files of a writer's buckets and their compaction.

    Args:
        file_io / context / schemas: the table, resolved.
        writer: the writer's data-file writer (compaction output joins its written files,
            so ``TableWrite.abort`` removes it too).
    """

    def __init__(self, file_io: FileIO, context: TableContext, schemas: SchemaManager,
                 writer: DataFileWriter) -> None:
        self.compactor = BucketCompactor(file_io, context, schemas, writer=writer)
        self.options = self.compactor.options
        self.file_io = file_io
        self.writer = writer
        self.stop_trigger = context.options.num_sorted_runs_stop_trigger
        self.files: dict[BucketKey, dict[FileId, DataFileMeta]] = {}
        self.commits = 0
        self.since_full: set[BucketKey] = set()
        self.vectors: dict[BucketKey, BucketDeletionVectors] = {}
        self.pending: list[tuple[BucketKey, bool]] = []  # due, not run yet (wait=False)

    # ---- tracking
    def reset(self) -> None:
        self.files.clear()
        self.vectors.clear()
        self.pending = []

    def note(self, entries: Iterable[ManifestEntry]) -> None:
        """Apply manifest entries (ADD / DELETE) of a snapshot, in order."""
        for e in entries:
            self.vectors.pop((e.partition, e.bucket), None)  # reloaded when compacted
            bucket = self.files.setdefault((e.partition, e.bucket), {})
            fid = (e.file.file_name, e.file.level)
            if e.kind is FileKind.ADD:
                bucket[fid] = e.file
            else:
                bucket.pop(fid, None)

    def add_new(self, key: BucketKey, files: Sequence[DataFileMeta]) -> None:
        bucket = self.files.setdefault(key, {})
        for f in files:
            bucket[(f.file_name, f.level)] = f

    def _apply(self, key: BucketKey, result: CompactResult) -> None:
        bucket = self.files.setdefault(key, {})
        for f in result.before:
            bucket.pop((f.file_name, f.level), None)
        for f in result.after:
            bucket[(f.file_name, f.level)] = f

    # ---- compaction
    def due(self, written: Sequence[BucketKey]) -> list[tuple[BucketKey, bool]]:
        """Buckets to compact after a commit that wrote ``written`` (and whether fully);
        metadata only. Counts one commit (``full-compaction.delta-commits``)."""
        self.commits += 1
        self.since_full.update(written)
        delta = self.options.full_compaction_delta_commits
        if delta is not None and self.commits % delta == 0:
            keys = sorted(self.since_full)
            self.since_full.clear()
            return [(k, True) for k in keys
                    if self.compactor.needs_compaction(list(self.files.get(k, {}).values()),
                                                       full=True)]
        return [(k, False) for k in written
                if self.compactor.needs_compaction(list(self.files.get(k, {}).values()))]

    def compact(self, key: BucketKey, *, full: bool) -> CompactResult:
        """Compact one bucket from its tracked files and track the result."""
        files = list(self.files.get(key, {}).values())
        result = self.compactor.compact(key[0], key[1], files, full=full,
                                        dvs=self._vectors(key))
        self._apply(key, result)
        return result

    def _vectors(self, key: BucketKey) -> BucketDeletionVectors | None:
        if not self.compactor.dv:
            return None
        dvs = self.vectors.get(key)
        if dvs is None:
            dvs = self.vectors[key] = self.compactor.load_vectors(*key)
        return dvs

    def write_vectors(self, buckets: Mapping[BucketKey, BucketState]) -> None:
        """Write the changed deletion vectors of the round's buckets (one index file each);
        the change joins the bucket's round result."""
        for key, dvs in self.vectors.items():
            st = buckets.get(key)
            if st is None or not dvs.modified:
                continue
            write_vectors(dvs, self.file_io, self.compactor.layout, self.writer, st.compacted)

    def _note_new(self, key: BucketKey, st: BucketState) -> None:
        self.add_new(key, st.new_files[st.noted:])
        st.noted = len(st.new_files)

    def relieve(self, st: BucketState) -> None:
        """After a spill of ``st``'s primary-key buffer: compact the bucket now when it has
        more sorted runs than ``num-sorted-run.stop-trigger`` (metadata only otherwise).
        The result joins ``st.compacted``."""
        key = (st.partition, st.bucket)
        self._note_new(key, st)
        if not self.compactor.is_pk:
            return
        files = list(self.files.get(key, {}).values())
        if self.compactor.levels(files).number_of_sorted_runs() <= self.stop_trigger:
            return
        self.fold(st, self.compact(key, full=False))

    def fold(self, st: BucketState, result: CompactResult) -> None:
        """Add ``result`` to the round's compaction of ``st`` (``MergeTreeWriter.
        updateCompactResult``): an input that an earlier compaction of the round wrote is
        dropped from both lists and deleted (unless it was upgraded: same file, new level)."""
        acc = st.compacted
        after_names = {f.file_name for f in result.after}
        before_names = {f.file_name for f in acc.before}
        for f in result.before:
            i = next((i for i, a in enumerate(acc.after)
                      if a.file_name == f.file_name and a.level == f.level), None)
            if i is None:
                acc.before.append(f)
                continue
            del acc.after[i]
            if f.file_name not in before_names and f.file_name not in after_names:
                path = join(st.bucket_dir, f.file_name)
                try:
                    self.file_io.delete(path)
                except PaimonError as e:  # an orphan at worst: orphan cleaning reclaims it
                    log.warning("could not delete the intermediate file %s: %s", path, e)
                else:
                    if path in self.writer.written_paths:
                        self.writer.written_paths.remove(path)
        acc.after.extend(result.after)
        acc.changelog.extend(result.changelog)

    def after_flush(self, buckets: Mapping[BucketKey, BucketState], run: RunAll, *,
                    wait: bool = True) -> dict[BucketKey, CompactResult] | None:
        """Track the buckets' new files, then compact those that need it (``run`` executes
        one function per bucket state, possibly in parallel). Returns the round's non-empty
        results (those of :meth:`relieve` and those held from the previous round included),
        or None when the tracked files turned out inconsistent (e.g. a commit of ours that did
        not land): tracking is reset and the caller must re-read the live files.

        ``wait=False`` (Java's ``prepareCommit(waitCompaction=false)``): the due buckets are
        kept in :attr:`pending` for :meth:`run_pending`, whose results go out with the next
        round. Java also waits for a bucket past ``num-sorted-run.stop-trigger`` + 1 sorted
        runs (``shouldWaitForPreparingCheckpoint``, for a background compaction that fell
        behind); ours never falls behind (it ends before the next round, and :meth:`relieve`
        bounds the runs at every spill), so no bucket gets there."""
        written = []
        for key, b in buckets.items():
            if b.new_files:
                self._note_new(key, b)
                written.append(key)
        try:
            due = self.due(written)
        except CorruptMetadataError as e:
            log.warning("the writer's view of the live files is inconsistent (%s): "
                        "re-reading it, no compaction this time", e)
            self.reset()
            return None
        if not wait:
            self.pending, due = due, []
        self._run_due(buckets, due, run)
        return {key: b.compacted for key, b in buckets.items() if not b.compacted.is_empty()}

    def run_pending(self, buckets: Mapping[BucketKey, BucketState], run: RunAll) -> None:
        """Run the compactions :meth:`after_flush` left pending (after the round's messages
        were made): their results wait in the buckets' ``compacted`` for the next round, as
        a finished asynchronous compaction waits in Java's ``MergeTreeWriter``."""
        due, self.pending = self.pending, []
        self._run_due(buckets, due, run)

    def _run_due(self, buckets: Mapping[BucketKey, BucketState],
                 due: Sequence[tuple[BucketKey, bool]], run: RunAll) -> None:
        full = dict(due)

        def one(st: BucketState) -> None:
            key = (st.partition, st.bucket)
            self.fold(st, self.compact(key, full=full[key]))

        if due:
            run([buckets[k] for k, _ in due], one)
        self.write_vectors(buckets)
