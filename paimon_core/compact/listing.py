"""The live files of a snapshot per (partition, bucket): what compaction plans from (metadata
only)."""

from __future__ import annotations

from collections.abc import Callable

from paimon_core.manifest_io import ManifestIO
from paimon_core.scan.manifest_filter import EntryFilter, read_entries
from paimon_core.spec.file_entries import live_files
from paimon_core.spec.manifest import DataFileMeta
from paimon_core.spec.snapshot import Snapshot

__all__ = ["BucketFilesMap", "live_bucket_files"]

#: (partition, bucket) -> (total buckets of its files, live files)
BucketFilesMap = dict[tuple[bytes, int], tuple[int, list[DataFileMeta]]]


def live_bucket_files(
    manifests: ManifestIO, snapshot: Snapshot | None,
    accept: Callable[[bytes, int], bool] | None = None,
    entries: EntryFilter | None = None,
) -> BucketFilesMap:
    """Live files of a snapshot per (partition, bucket) (metadata only); ``entries``: which
    manifests and rows to read (:mod:`paimon_core.scan.manifest_filter`; default all)."""
    out: BucketFilesMap = {}
    if snapshot is None:
        return out
    read = read_entries(manifests, manifests.data_manifests(snapshot), entries or EntryFilter())
    for e in live_files(read, source=manifests.path(snapshot.base_manifest_list)):
        key = (e.partition, e.bucket)
        if accept is not None and not accept(*key):
            continue
        slot = out.get(key)
        if slot is None:
            out[key] = (e.total_buckets, [e.file])
        else:
            slot[1].append(e.file)
    return out
