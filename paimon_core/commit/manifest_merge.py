"""Manifest merging on commit (``org.apache.paimon.operation.ManifestFileMerger``, §4.7).

Without merging, a table's base manifest list grows by one manifest per commit. Each commit
folds the previous snapshot's data manifests:

1. *Full compaction* when the manifests after the leading "already big and DELETE-free" ones
   add up to ``manifest.full-compaction-threshold-size``: fold them and rewrite the live ADD
   entries (DELETE/ADD pairs vanish), keeping base manifests that cannot contain a deleted file.
2. Otherwise *minor compaction*: walk the manifests accumulating size; each time a group reaches
   ``manifest.target-file-size`` fold it into new manifests; a trailing group of at least
   ``manifest.merge-min-count`` manifests is folded too, shorter ones are kept as they are.

Folding a group keeps unmatched DELETE entries (their ADD may live in an earlier manifest).
The merged list is equivalent to the input: folding it yields the same live files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from paimon_core.commit.manifest_writer import ManifestWriter
from paimon_core.options import CoreOptions
from paimon_core.spec.file_entries import merge_entries
from paimon_core.spec.manifest import FileKind, ManifestEntry
from paimon_core.spec.manifest_list import ManifestFileMeta

ReadManifest = Callable[[str], list[ManifestEntry]]


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
) -> list[ManifestFileMeta]:
    """Merge the data manifests of the previous snapshot; returns the new base list."""
    metas = list(metas)
    full = _try_full_compaction(metas, read, writer, target_size, full_threshold)
    if full is not None:
        return full
    out: list[ManifestFileMeta] = []
    group: list[ManifestFileMeta] = []
    size = 0
    for m in metas:
        group.append(m)
        size += m.file_size
        if size >= target_size:
            out.extend(_fold(group, read, writer) if len(group) > 1 else group)
            group, size = [], 0
    if len(group) >= min_count:
        out.extend(_fold(group, read, writer))
    else:
        out.extend(group)
    return out


def _fold(
    group: Sequence[ManifestFileMeta], read: ReadManifest, writer: ManifestWriter
) -> list[ManifestFileMeta]:
    entries = [e for m in group for e in read(m.file_name)]
    folded = list(merge_entries(entries, source="manifest merge").values())
    return writer.write_manifests(folded)


def _try_full_compaction(
    metas: list[ManifestFileMeta],
    read: ReadManifest,
    writer: ManifestWriter,
    target_size: int,
    threshold: int,
) -> list[ManifestFileMeta] | None:
    base: list[ManifestFileMeta] = []
    i = 0
    while i < len(metas) and metas[i].num_deleted_files == 0 and metas[i].file_size >= target_size:
        base.append(metas[i])
        i += 1
    delta = metas[i:]
    if sum(m.file_size for m in delta) < threshold:
        return None
    delta_entries = [e for m in delta for e in read(m.file_name)]
    deleted = {
        e.identifier() for e in merge_entries(delta_entries, source="manifest merge").values()
        if e.kind is FileKind.DELETE
    }
    deleted_partitions = {ident[0] for ident in deleted}
    kept: list[ManifestFileMeta] = []
    rewrite: list[ManifestEntry] = []
    for m in base:
        entries = read(m.file_name)
        if not any(e.partition in deleted_partitions for e in entries):
            kept.append(m)
        else:
            rewrite.extend(entries)
    live = [
        e for e in merge_entries(rewrite + delta_entries, source="manifest merge").values()
        if e.kind is FileKind.ADD
    ]
    # a DELETE whose ADD lives in a kept manifest cannot exist: kept manifests hold no
    # partition with a deletion
    return kept + writer.write_manifests(live)
