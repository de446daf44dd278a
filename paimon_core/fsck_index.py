"""fsck's checks of dynamic bucket hash indexes (``bucket = -1`` primary-key tables).

A Paimon writer of such a table finds a key's bucket only through the HASH index (§6.3 of the
format notes): an index that misses a stored key, or holds one hash in two buckets of a
partition, makes the next writer put that key in a second bucket, where it no longer
deduplicates. Checked on one snapshot (fsck: the latest):

* one HASH entry per (partition, bucket); each file's size is 4 bytes per hash and its hashes
  are unique;
* no hash in two buckets of one partition;
* every bucket holding live data files has an index entry, and the key hash of every live row
  is in its bucket's index (deleted keys may stay in the index: Java keeps them too).

Pure reporting: the caller turns each :class:`IndexProblem` into a finding.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from paimon_core.bucket import hash_codes
from paimon_core.errors import CorruptMetadataError, PaimonError
from paimon_core.io.file_io import FileIO
from paimon_core.layout import TableLayout
from paimon_core.spec.hash_index import decode_hash_index
from paimon_core.spec.index_manifest import HASH_INDEX, IndexManifestEntry
from paimon_core.spec.manifest import FileKind
from paimon_core.table import FileStoreTable

__all__ = ["IndexProblem", "check_hash_index"]


@dataclass(frozen=True)
class IndexProblem:
    message: str
    path: str | None = None


def check_hash_index(table: FileStoreTable, snapshot_id: int,
                     entries: Sequence[IndexManifestEntry],
                     live_buckets: Iterable[tuple[bytes, int]]) -> list[IndexProblem]:
    """The problems of the HASH index ``entries`` of snapshot ``snapshot_id`` (see the module
    docs); ``live_buckets``: the (partition, bucket) pairs holding live data files."""
    layout = table.layout
    out: list[IndexProblem] = []
    hashes: dict[tuple[bytes, int], np.ndarray] = {}
    for e in entries:
        if e.index_type != HASH_INDEX or e.kind is not FileKind.ADD:
            continue
        path = layout.index_file(e.file_name)
        where = f"partition {_text(layout, e.partition)} bucket {e.bucket}"
        if (e.partition, e.bucket) in hashes:
            out.append(IndexProblem(f"two HASH index entries for {where}", path))
            continue
        if e.file_size != 4 * e.row_count:
            out.append(IndexProblem(f"HASH index {e.file_name} of {where}: {e.file_size} bytes "
                                    f"for {e.row_count} hashes", path))
        got = _read(table.file_io, path, out)
        if got is None:
            continue
        if len(np.unique(got)) != len(got):
            out.append(IndexProblem(f"HASH index {e.file_name} of {where} repeats hashes", path))
        hashes[(e.partition, e.bucket)] = got
    by_partition: dict[bytes, list[tuple[int, np.ndarray]]] = defaultdict(list)
    for (p, b), h in hashes.items():
        by_partition[p].append((b, h))
    for p, buckets in by_partition.items():
        allh = np.concatenate([np.unique(h) for _, h in buckets])
        values, counts = np.unique(allh, return_counts=True)
        if bool((counts > 1).any()):
            out.append(IndexProblem(
                f"partition {_text(layout, p)}: {int((counts > 1).sum())} key hash(es) in the "
                f"HASH index of two buckets (e.g. {int(values[counts > 1][0])}): a writer could "
                "put one key in two buckets"))
    missing = sorted(set(live_buckets) - set(hashes))
    for p, b in missing:
        out.append(IndexProblem(f"partition {_text(layout, p)} bucket {b} holds data files but "
                                "has no HASH index entry"))
    if not missing:
        out.extend(_unindexed_keys(table, snapshot_id, hashes, layout))
    return out


def _read(file_io: FileIO, path: str, out: list[IndexProblem]) -> np.ndarray | None:
    try:
        return decode_hash_index(file_io.read_bytes(path), path)
    except CorruptMetadataError as e:
        out.append(IndexProblem(e.reason, path))
    except PaimonError as e:  # a missing file is reported by the index-file check
        if "not" not in str(e).lower():
            out.append(IndexProblem(str(e), path))
    return None


def _unindexed_keys(table: FileStoreTable, snapshot_id: int,
                    hashes: dict[tuple[bytes, int], np.ndarray],
                    layout: TableLayout) -> list[IndexProblem]:
    schema = table.schema
    keys = list(schema.trimmed_primary_keys)
    types = [schema.field(k).type for k in keys]
    rb = (table.new_read_builder().with_projection(keys)
          .with_time_travel(snapshot_id=snapshot_id))
    out: list[IndexProblem] = []
    read = rb.new_read()
    for split in rb.new_scan().plan().splits:
        have = hashes.get((split.partition, split.bucket))
        if have is None:
            continue
        data = read.to_arrow([split])
        if not data.num_rows:
            continue
        h = hash_codes([data.column(k) for k in keys], types)
        absent = ~np.isin(h, have)
        if bool(absent.any()):
            out.append(IndexProblem(
                f"partition {_text(layout, split.partition)} bucket {split.bucket}: "
                f"{int(absent.sum())} live key(s) missing from its HASH index (a writer would "
                "put them in another bucket)"))
    return out


def _text(layout: TableLayout, partition: bytes) -> str:
    try:
        return layout.partition_path(partition) or "(unpartitioned)"
    except PaimonError:
        return partition.hex()
