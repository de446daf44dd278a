"""Manifest merging on commit (``org.apache.paimon.operation.ManifestFileMerger``).

Without merging, a table's base manifest list grows by one manifest per commit. Each commit
merges the previous snapshot's data manifests (its base list, then its delta list) before it
writes its own base list. A manifest is *done* when it has reached
``manifest.target-file-size`` and holds no DELETE entry (the negation of Java's
``mustChange``); manifests roll at that size (:class:`ManifestWriter`), so a table is mostly
done manifests plus a few small ones from the latest commits.

1. *Full compaction* (``tryFullCompaction``), when the manifests that are not done add up to
   ``manifest.full-compaction-threshold-size``:

   * the DELETE identifiers are collected (only manifests whose ``_NUM_DELETED_FILES`` is not
     zero are decoded for that);
   * a done manifest is kept as it is, undecoded, when nothing is deleted or its
     ``_PARTITION_STATS`` exclude every partition a DELETE names (``PartitionPredicate
     .fromMultiple``: per partition field, no deleted value lies in [min, max]); otherwise it
     is decoded, and rewritten only when it holds a deleted file;
   * the other manifests are streamed, one at a time, into rolling manifests written after
     the kept ones: their ADD entries minus the deleted ones. DELETE entries vanish (their
     ADD is rewritten without it). Fewer than two manifests to rewrite: no full compaction.

   This is Paimon >= 1.0's selection. Paimon 0.9 split the list into a leading run of done
   manifests and the rest, and rewrote all of the rest (done ones included) plus every done
   manifest after the first one whose partition stats may hold a deleted partition: with the
   small last manifest of each commit interleaved, that is most of the table.
2. Otherwise *minor compaction* (``tryMinorCompaction``): walk the manifests accumulating the
   sizes of those not done; each time the group reaches ``manifest.target-file-size`` fold
   it into new manifests (a group of one manifest is kept as it is); a trailing group of at
   least ``manifest.merge-min-count`` manifests is folded too, a shorter one kept. Folding
   keeps unmatched DELETE entries (their ADD lives in an earlier manifest); a group of
   ADD-only manifests is folded by copying their Avro blocks (:mod:`.manifest_concat`).
   Unlike Java, done manifests keep their place and the group goes on past them (see
   :func:`_minor_compaction`).

Memory: one group (minor), or one manifest plus the DELETE identifiers and the rolling
writer's pending entries (full), are held at a time, never the whole table. The merged list
is equivalent to the input: folding it yields the same live files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from paimon_core.commit.manifest_concat import ReadBytes, concat_manifests
from paimon_core.commit.manifest_writer import ManifestWriter
from paimon_core.options import CoreOptions
from paimon_core.scan.manifest_filter import EntryFilter
from paimon_core.spec.file_entries import merge_entries
from paimon_core.spec.manifest import FileKind, ManifestEntry
from paimon_core.spec.manifest_list import ManifestFileMeta
from paimon_core.types import DataType

ReadManifest = Callable[[ManifestFileMeta], list[ManifestEntry]]
Identifier = tuple[bytes, int, int, str, tuple[str, ...], bytes | None, str | None]


def merge_settings(options: CoreOptions) -> tuple[int, int, int]:
    return (options.manifest_target_file_size, options.manifest_merge_min_count,
            options.manifest_full_compaction_file_size)


def merge_manifests(
    metas: Sequence[ManifestFileMeta],
    read: ReadManifest,
    writer: ManifestWriter,
    *,
    target_size: int,
    min_count: int,
    full_threshold: int,
    partition_types: Sequence[DataType] = (),
    read_bytes: ReadBytes | None = None,
) -> list[ManifestFileMeta]:
    """Merge the data manifests of the previous snapshot; returns the new base list.

    ``read`` decodes one manifest, ``read_bytes`` reads it undecoded (to fold ADD-only
    manifests by copying, :mod:`~paimon_core.commit.manifest_concat`); ``partition_types``
    are the table's partition field types (partition stats)."""
    metas = list(metas)
    full = _try_full_compaction(metas, read, writer, target_size, full_threshold,
                                partition_types)
    if full is not None:
        return full

    def fold(group: Sequence[ManifestFileMeta]) -> list[ManifestFileMeta]:
        if read_bytes is not None:
            copied = concat_manifests(group, read_bytes, writer, partition_types)
            if copied is not None:
                return [copied]
        return _fold(group, read, writer)

    return _minor_compaction(metas, fold, target_size, min_count)


def _done(m: ManifestFileMeta, target_size: int) -> bool:
    """A manifest that needs no merging: it reached the target and deletes nothing (the
    negation of Java's ``mustChange``)."""
    return m.num_deleted_files == 0 and m.file_size >= target_size


def _minor_compaction(
    metas: list[ManifestFileMeta],
    fold: Callable[[Sequence[ManifestFileMeta]], list[ManifestFileMeta]],
    target_size: int,
    min_count: int,
) -> list[ManifestFileMeta]:
    """``tryMinorCompaction``, except that a manifest that needs no merging (:func:`_done`)
    keeps its place and the group goes on past it: its ADDs are unique files, so a group
    folded after it (its DELETEs still after their ADDs) reads the same. Java folds it
    into the group when the group reaches the target with it: a full manifest decoded and
    re-encoded by a commit that added one file."""
    out: list[tuple[int, ManifestFileMeta]] = []  # (position, manifest), sorted at the end
    group: list[tuple[int, ManifestFileMeta]] = []
    size = 0
    for pos, m in enumerate(metas):
        if _done(m, target_size):
            out.append((pos, m))
            continue
        group.append((pos, m))
        size += m.file_size
        if size >= target_size:
            out.extend((pos, f) for f in fold([g for _, g in group]))
            group, size = [], 0
    if len(group) >= min_count:
        last = group[-1][0]
        out.extend((last, f) for f in fold([g for _, g in group]))
    else:
        out.extend(group)
    return [m for _, m in sorted(out, key=lambda pm: pm[0])]


def _fold(
    group: Sequence[ManifestFileMeta], read: ReadManifest, writer: ManifestWriter
) -> list[ManifestFileMeta]:
    """``mergeCandidates``: one manifest stays as it is; more are folded and rewritten."""
    if len(group) == 1:
        return list(group)
    folded = merge_entries((e for m in group for e in read(m)), source="manifest merge")
    return writer.write_manifests(list(folded.values()))


def _try_full_compaction(
    metas: list[ManifestFileMeta],
    read: ReadManifest,
    writer: ManifestWriter,
    target_size: int,
    threshold: int,
    partition_types: Sequence[DataType],
) -> list[ManifestFileMeta] | None:
    must_change = [not _done(m, target_size) for m in metas]
    if sum(m.file_size for m, c in zip(metas, must_change) if c) < threshold:
        return None
    deleted: set[Identifier] = {
        e.identifier() for m in metas if m.num_deleted_files
        for e in read(m) if e.kind is FileKind.DELETE
    }
    # Java's PartitionPredicate.fromMultiple over the deleted partitions' values
    may_hold = EntryFilter.of_partitions(
        {ident[0] for ident in deleted}, [f"_p{i}" for i in range(len(partition_types))],
        partition_types).manifest_ok or (lambda _: True)
    candidates = [c or bool(deleted and may_hold(m)) for m, c in zip(metas, must_change)]
    if sum(candidates) <= 1:
        return None
    kept: list[ManifestFileMeta] = []
    roller = _Roller(writer)
    for m, c, candidate in zip(metas, must_change, candidates):
        if not candidate:
            kept.append(m)
            continue
        entries = [e for e in read(m) if e.kind is FileKind.ADD]
        live = [e for e in entries if e.identifier() not in deleted]
        if not c and len(live) == len(entries):
            kept.append(m)  # its partitions may, its files do not hold a deleted one
        else:
            roller.add(live)
    return kept + roller.finish()


class _Roller:
    """Streams entries into rolling manifests: full ones are written as soon as they fill."""

    def __init__(self, writer: ManifestWriter) -> None:
        self.writer = writer
        self.pending: list[ManifestEntry] = []
        self.out: list[ManifestFileMeta] = []

    def add(self, entries: Iterable[ManifestEntry]) -> None:
        self.pending.extend(entries)
        per_entry = self.writer.bytes_per_entry
        if per_entry and len(self.pending) * per_entry < self.writer.target_file_size:
            return  # not a full manifest yet (by the last encoding's estimate)
        metas, rest = self.writer.write_full_manifests(self.pending)
        if metas:
            self.out.extend(metas)
            self.pending = list(rest)

    def finish(self) -> list[ManifestFileMeta]:
        self.out.extend(self.writer.write_manifests(self.pending))
        self.pending = []
        return self.out
