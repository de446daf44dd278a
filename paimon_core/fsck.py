"""``fsck``: check a table's structural invariants (reliability.md I2-I5) on any table.

Works on tables written by Paimon Java, pypaimon or this project; it only reads. What it checks:

* I3 snapshots: ids contiguous from the earliest to the latest snapshot *file* (a listing, not
  the hints); every snapshot decodes and its inner id equals its file name; its schema exists.
* I3 files: every manifest list, manifest, index manifest, index file, data file (with its
  extra files) and changelog file referenced by a retained snapshot or a tag exists; data files
  have exactly their manifest ``_FILE_SIZE``.
* I3 folding (``FileEntry.mergeEntries``, base then delta of every snapshot): no identifier is
  ADDed while live, every DELETE matches an earlier ADD; per (partition, bucket) of a
  primary-key table the files of each level >= 1 do not overlap in key range; the live files of
  a partition were all written for one bucket count; ``totalRecordCount`` equals the sum of the
  live files' row counts.
* I3 dynamic bucket tables (``bucket=-1``): the latest snapshot's HASH index agrees with its
  data (:mod:`paimon_core.fsck_index`: one entry per bucket, no key hash in two buckets of a
  partition, every live key's hash in its bucket's index).
* I2: no (commitUser, commitIdentifier, commitKind) in two snapshots (batch commits, which all
  use Long.MAX, excepted; the steps of a multi-step commit, ``commit.step``, are told apart).
* I4: the latest snapshot (every snapshot with ``deep=True``) reads in full through time
  travel; tables this reader cannot read (e.g. unsupported merge engines) give a warning.
* I5: ``LATEST``/``EARLIEST`` that lag, point past the snapshots or are garbage give warnings
  (they are only hints).

Speed: manifests are immutable, so each manifest list and manifest is decoded once; a
snapshot whose manifest sequence extends the previous snapshot's (no manifest merge in
between) is folded incrementally; each data-file directory is listed once.

:func:`orphan_files` lists files under the table directory that no snapshot, tag or changelog
references (it never deletes anything).
"""

from __future__ import annotations

import enum
import functools
import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from paimon_core.errors import (
    CorruptMetadataError,
    FileNotFoundInTableError,
    PaimonError,
    UnsupportedError,
)
from paimon_core.fsck_index import check_hash_index
from paimon_core.fsck_orphans import list_orphans
from paimon_core.io.file_io import FileIO, join
from paimon_core.scan.predicate_literal import java_compare
from paimon_core.snapshot_manager import EARLIEST_HINT, LATEST_HINT
from paimon_core.spec.index_manifest import IndexManifestEntry, decode_index_manifest
from paimon_core.spec.keys import key_decoder
from paimon_core.spec.manifest import FileKind, ManifestEntry, decode_manifest
from paimon_core.spec.manifest_list import ManifestFileMeta, decode_manifest_list
from paimon_core.spec.option_enums import BucketMode
from paimon_core.spec.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot, decode_snapshot
from paimon_core.table import FileStoreTable
from paimon_core.tags import TAG_PREFIX

__all__ = ["Finding", "FindingKind", "FsckReport", "Severity", "fsck", "orphan_files"]


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"


class FindingKind(str, enum.Enum):
    """What is wrong (the ``kind`` of a :class:`Finding`)."""

    SNAPSHOT_GAP = "snapshot_gap"
    SNAPSHOT_UNREADABLE = "snapshot_unreadable"
    SNAPSHOT_ID_MISMATCH = "snapshot_id_mismatch"
    MISSING_SCHEMA = "missing_schema"
    MISSING_MANIFEST_LIST = "missing_manifest_list"
    MISSING_MANIFEST = "missing_manifest"
    MISSING_INDEX_MANIFEST = "missing_index_manifest"
    CORRUPT_METADATA = "corrupt_metadata"
    MISSING_DATA_FILE = "missing_data_file"
    DATA_FILE_SIZE_MISMATCH = "data_file_size_mismatch"
    MISSING_INDEX_FILE = "missing_index_file"
    DUPLICATE_ADD = "duplicate_add"
    UNMATCHED_DELETE = "unmatched_delete"
    LEVEL_OVERLAP = "level_overlap"
    MIXED_BUCKET_COUNTS = "mixed_bucket_counts"
    RECORD_COUNT_MISMATCH = "record_count_mismatch"
    DUPLICATE_COMMIT = "duplicate_commit"
    UNREADABLE = "unreadable"
    UNVERIFIABLE = "unverifiable"
    HINT_LAG = "hint_lag"
    HINT_INVALID = "hint_invalid"
    STRAY_SNAPSHOT = "stray_snapshot"
    HASH_INDEX_INCONSISTENT = "hash_index_inconsistent"


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem found by :func:`fsck`."""

    kind: FindingKind
    severity: Severity
    message: str
    snapshot_id: int | None = None
    path: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind.value, "severity": self.severity.value,
                               "message": self.message}
        if self.snapshot_id is not None:
            out["snapshot"] = self.snapshot_id
        if self.path is not None:
            out["path"] = self.path
        return out


@dataclass(frozen=True)
class FsckReport:
    """The result of :func:`fsck`: ``ok`` when there is no error (warnings are allowed)."""

    table_path: str
    findings: tuple[Finding, ...]
    snapshot_ids: tuple[int, ...] = ()
    tags: tuple[str, ...] = ()
    data_files_checked: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.WARNING]

    def of_kind(self, kind: FindingKind) -> list[Finding]:
        return [f for f in self.findings if f.kind is kind]


Ident = tuple[Any, ...]


@dataclass
class _Fold:
    """Live files after folding a sequence of manifests, with indexes for the checks."""

    live: dict[Ident, ManifestEntry] = field(default_factory=dict)
    pending_deletes: dict[Ident, ManifestEntry] = field(default_factory=dict)
    by_bucket: dict[tuple[bytes, int], set[Ident]] = field(default_factory=lambda: defaultdict(set))
    bucket_counts: dict[bytes, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))
    rows: int = 0
    touched: set[tuple[bytes, int]] = field(default_factory=set)
    unverified: list[Ident] = field(default_factory=list)
    sequence: list[str] = field(default_factory=list)


def fsck(table: FileStoreTable, *, deep: bool = False) -> FsckReport:
    """Check ``table`` (see the module docs). Never raises for problems in the table: each
    one becomes a :class:`Finding`; storage failures may still raise :class:`PaimonError`.

    Args:
        table: any table.
        deep: read every retained snapshot in full (default: only the latest).
    """
    return _Checker(table).run(deep)


class _Checker:
    def __init__(self, table: FileStoreTable) -> None:
        self.table = table
        self.file_io: FileIO = table.file_io
        self.path = table.path
        self.schema = table.schema
        self.options = table.options  # the table's own context, parsed once
        self.layout = table.layout
        self.manifest_dir = self.layout.manifest_dir
        self.findings: list[Finding] = []
        self._keys: set[tuple[Any, ...]] = set()
        self._lists: dict[str, list[ManifestFileMeta] | None] = {}
        self._manifests: dict[str, list[ManifestEntry] | None] = {}
        self._index_manifests: dict[str, list[IndexManifestEntry] | None] = {}
        self._dirs: dict[str, dict[str, int]] = {}
        self._bucket_dirs: dict[tuple[bytes, int], str | None] = {}
        self._checked: set[str] = set()
        self.is_pk = bool(self.schema.primary_keys)
        self._key = key_decoder(self.schema, exact_timestamps=True, cached=True)

    # ------------------------------------------------------------------ reporting
    def add(self, kind: FindingKind, message: str, *, snapshot: int | None = None,
            path: str | None = None, severity: Severity = Severity.ERROR,
            key: Any = None) -> None:
        k = (kind, key if key is not None else (path, message))
        if k in self._keys:
            return
        self._keys.add(k)
        self.findings.append(Finding(kind, severity, message, snapshot, path))

    # ------------------------------------------------------------------ main
    def run(self, deep: bool) -> FsckReport:
        sm = self.table.snapshot_manager
        ids = sm.list_snapshot_ids()
        fence = sm.expiry_fence()
        if fence is not None and ids and ids[0] < fence:
            strays = [i for i in ids if i < fence]
            ids = [i for i in ids if i >= fence]
            self.add(FindingKind.STRAY_SNAPSHOT,
                     f"snapshot file(s) {strays} lie below the expiry fence EARLIEST={fence}: "
                     "left by an interrupted expiry or re-created by a delayed writer; not "
                     "snapshots (readers and writers ignore them), the next expiry removes them",
                     path=sm.snapshot_dir, severity=Severity.WARNING)
        if ids:
            missing = sorted(set(range(ids[0], ids[-1] + 1)) - set(ids))
            if missing:
                shown = ", ".join(map(str, missing[:20])) + (" ..." if len(missing) > 20 else "")
                self.add(FindingKind.SNAPSHOT_GAP,
                         f"snapshot ids {ids[0]}..{ids[-1]} are not contiguous: missing {shown}",
                         path=sm.snapshot_dir)
        self._check_hints(ids)
        snapshots = [s for s in (self._snapshot(i) for i in ids) if s is not None]
        self._check_duplicate_commits(snapshots)
        schema_ids = set(self.table.schema_manager.list_schema_ids())
        fold = _Fold()
        for snap in snapshots:
            if snap.schema_id not in schema_ids:
                self.add(FindingKind.MISSING_SCHEMA, f"schema {snap.schema_id} does not exist",
                         snapshot=snap.id, path=self.table.schema_manager.schema_path(
                             snap.schema_id))
            fold = self._check_snapshot(snap, fold)
        if snapshots and self.schema.bucket_mode is BucketMode.HASH_DYNAMIC:
            self._check_hash_index(snapshots[-1], fold)
        tags = self._check_tags({s.id: s for s in snapshots})
        targets = snapshots if deep else snapshots[-1:]
        for snap in targets:
            self._check_readable(snap)
        order = {Severity.ERROR: 0, Severity.WARNING: 1}
        findings = sorted(self.findings, key=lambda f: (order[f.severity], f.snapshot_id or 0))
        return FsckReport(self.path, tuple(findings), tuple(s.id for s in snapshots),
                          tuple(tags), len(self._checked))

    def _snapshot(self, sid: int) -> Snapshot | None:
        path = self.table.snapshot_manager.snapshot_path(sid)
        try:
            snap = decode_snapshot(self.file_io.read_bytes(path), path)
        except FileNotFoundInTableError:
            self.add(FindingKind.SNAPSHOT_GAP, f"snapshot {sid} vanished while checking",
                     snapshot=sid, path=path)
            return None
        except CorruptMetadataError as e:
            self.add(FindingKind.SNAPSHOT_UNREADABLE, e.reason, snapshot=sid, path=path)
            return None
        if snap.id != sid:
            self.add(FindingKind.SNAPSHOT_ID_MISMATCH,
                     f"snapshot file {sid} holds snapshot id {snap.id}", snapshot=sid, path=path)
            return None
        return snap

    def _check_hints(self, ids: list[int]) -> None:
        sm = self.table.snapshot_manager
        for name, true in ((LATEST_HINT, ids[-1] if ids else None),
                           (EARLIEST_HINT, ids[0] if ids else None)):
            path = join(sm.snapshot_dir, name)
            try:
                text = self.file_io.read_bytes(path).decode("utf-8", errors="replace")
            except FileNotFoundInTableError:
                continue
            s = text.strip()
            if not s.isdigit() or not 0 < int(s) < 2**63:
                self.add(FindingKind.HINT_INVALID, f"{name} hint is not a snapshot id: {text!r}",
                         path=path, severity=Severity.WARNING)
            elif int(s) != true:
                actual = (f"the {name.lower()} snapshot file is {true}" if true
                          else "there is no snapshot")
                what = "lags behind" if true is not None and int(s) < true else "points past"
                self.add(FindingKind.HINT_LAG,
                         f"{name} hint says {s}, {actual} ({what} it; readers fall back to "
                         "listing)", path=path, severity=Severity.WARNING)

    def _check_duplicate_commits(self, snapshots: Iterable[Snapshot]) -> None:
        # the steps of one commit (TableCommit.commit_steps) are distinct commits
        seen: dict[tuple[str, int, str, tuple[int, int] | None], int] = {}
        for s in snapshots:
            if s.commit_identifier == BATCH_COMMIT_IDENTIFIER:
                continue
            k = (s.commit_user, s.commit_identifier, s.commit_kind.value, s.commit_step)
            if k in seen:
                step = f", step {k[3][0]}/{k[3][1]}" if k[3] else ""
                self.add(FindingKind.DUPLICATE_COMMIT,
                         f"commit (user {k[0]}, identifier {k[1]}, {k[2]}{step}) is in snapshots "
                         f"{seen[k]} and {s.id} (applied twice)", snapshot=s.id)
            else:
                seen[k] = s.id

    # ------------------------------------------------------------------ metadata files
    def _manifest_list(self, name: str, sid: int) -> list[ManifestFileMeta] | None:
        if name not in self._lists:
            self._lists[name] = self._decode(name, sid, FindingKind.MISSING_MANIFEST_LIST,
                                             "manifest list", decode_manifest_list)
        return self._lists[name]

    def _manifest(self, name: str, sid: int) -> list[ManifestEntry] | None:
        if name not in self._manifests:
            self._manifests[name] = self._decode(name, sid, FindingKind.MISSING_MANIFEST,
                                                 "manifest", decode_manifest)
        return self._manifests[name]

    def _index_manifest(self, name: str, sid: int) -> list[IndexManifestEntry] | None:
        if name not in self._index_manifests:
            self._index_manifests[name] = self._decode(
                name, sid, FindingKind.MISSING_INDEX_MANIFEST, "index manifest",
                decode_index_manifest)
        return self._index_manifests[name]

    def _decode(self, name: str, sid: int, missing: FindingKind, what: str,
                decode: Any) -> Any:
        path = join(self.manifest_dir, name)
        try:
            return decode(self.file_io.read_bytes(path), path)
        except FileNotFoundInTableError:
            self.add(missing, f"{what} {name} referenced by snapshot {sid} does not exist",
                     snapshot=sid, path=path, key=path)
        except CorruptMetadataError as e:
            self.add(FindingKind.CORRUPT_METADATA, f"{what} {name}: {e.reason}", snapshot=sid,
                     path=path, key=path)
        return None

    # ------------------------------------------------------------------ per snapshot
    def _check_snapshot(self, snap: Snapshot, fold: _Fold) -> _Fold:
        base = self._manifest_list(snap.base_manifest_list, snap.id)
        delta = self._manifest_list(snap.delta_manifest_list, snap.id)
        if snap.changelog_manifest_list:
            self._check_changelog(snap)
        if snap.index_manifest:
            self._check_index(snap)
        if base is None or delta is None:
            return _Fold(sequence=["<broken>"])
        seq = [m.file_name for m in base + delta]
        if fold.sequence and seq[:len(fold.sequence)] == fold.sequence:
            todo = seq[len(fold.sequence):]
            full = False
        else:
            fold, todo, full = _Fold(), seq, True
        fold.touched = set()
        for name in todo:
            entries = self._manifest(name, snap.id)
            if entries is None:
                return _Fold(sequence=["<broken>"])
            self._apply(fold, entries, snap.id, name)
        fold.sequence = seq
        for ident, e in fold.pending_deletes.items():
            self.add(FindingKind.UNMATCHED_DELETE,
                     f"DELETE of {e.file.file_name} (bucket {e.bucket}, level {e.file.level}) "
                     "matches no earlier ADD", snapshot=snap.id, key=ident)
        if snap.total_record_count is not None and snap.total_record_count != fold.rows:
            self.add(FindingKind.RECORD_COUNT_MISMATCH,
                     f"totalRecordCount is {snap.total_record_count} but the live files hold "
                     f"{fold.rows} rows", snapshot=snap.id, key=snap.id)
        buckets = set(fold.by_bucket) if full else fold.touched
        self._check_bucket_counts(fold, {p for p, _ in buckets}, snap.id)
        if self.is_pk:
            for pb in buckets:
                self._check_levels(fold, pb, snap.id)
        verify = list(fold.live) if full else fold.unverified
        for ident in verify:
            live = fold.live.get(ident)
            if live is not None:
                self._check_data_file(live, snap.id)
        fold.unverified = []
        return fold

    def _apply(self, fold: _Fold, entries: list[ManifestEntry], sid: int, manifest: str) -> None:
        live, pending = fold.live, fold.pending_deletes
        for e in entries:
            ident = e.identifier()
            pb = (e.partition, e.bucket)
            if e.kind is FileKind.ADD:
                if ident in live:
                    self.add(FindingKind.DUPLICATE_ADD,
                             f"file {e.file.file_name} (bucket {e.bucket}, level {e.file.level}) "
                             f"is added again while live (manifest {manifest})", snapshot=sid,
                             key=ident)
                    continue
                if ident in pending:
                    self.add(FindingKind.UNMATCHED_DELETE,
                             f"file {e.file.file_name} is deleted before it is added "
                             f"(manifest {manifest})", snapshot=sid, key=ident)
                    del pending[ident]
                live[ident] = e
                fold.rows += e.file.row_count
                fold.by_bucket[pb].add(ident)
                fold.bucket_counts[e.partition][e.total_buckets] += 1
                fold.unverified.append(ident)
            else:
                old = live.pop(ident, None)
                if old is None:
                    pending[ident] = e
                    continue
                fold.rows -= old.file.row_count
                fold.by_bucket[pb].discard(ident)
                counts = fold.bucket_counts[old.partition]
                counts[old.total_buckets] -= 1
                if counts[old.total_buckets] <= 0:
                    del counts[old.total_buckets]
            fold.touched.add(pb)

    def _check_bucket_counts(self, fold: _Fold, partitions: set[bytes], sid: int) -> None:
        for p in partitions:
            counts = [n for n, c in fold.bucket_counts.get(p, Counter()).items() if c > 0]
            if len(counts) > 1:
                self.add(FindingKind.MIXED_BUCKET_COUNTS,
                         f"partition {self._partition_text(p)} mixes files written for bucket "
                         f"counts {sorted(counts)}", snapshot=sid, key=(p, tuple(sorted(counts))))

    def _check_levels(self, fold: _Fold, pb: tuple[bytes, int], sid: int) -> None:
        by_level: dict[int, list[ManifestEntry]] = defaultdict(list)
        for ident in fold.by_bucket.get(pb, ()):
            e = fold.live[ident]
            if e.file.level >= 1:
                by_level[e.file.level].append(e)
        for level, files in by_level.items():
            if len(files) < 2:
                continue
            try:
                files.sort(key=functools.cmp_to_key(
                    lambda a, b: _cmp(self._key(a.file.min_key), self._key(b.file.min_key))))
                for a, b in itertools.pairwise(files):
                    if _cmp(self._key(a.file.max_key), self._key(b.file.min_key)) >= 0:
                        self.add(FindingKind.LEVEL_OVERLAP,
                                 f"bucket {pb[1]} of partition {self._partition_text(pb[0])}, "
                                 f"level {level}: {a.file.file_name} and {b.file.file_name} "
                                 "overlap in key range", snapshot=sid,
                                 key=(a.file.file_name, b.file.file_name))
            except PaimonError as e:
                self.add(FindingKind.CORRUPT_METADATA, f"undecodable min/max key: {e}",
                         snapshot=sid, key=("key", pb))

    # ------------------------------------------------------------------ data files
    def _bucket_dir(self, partition: bytes, bucket: int, sid: int) -> str | None:
        k = (partition, bucket)
        if k not in self._bucket_dirs:
            try:
                self._bucket_dirs[k] = self.layout.bucket_dir(partition, bucket)
            except PaimonError as e:
                self.add(FindingKind.CORRUPT_METADATA, f"undecodable partition: {e}",
                         snapshot=sid, key=("partition", partition))
                self._bucket_dirs[k] = None
        return self._bucket_dirs[k]

    def _listing(self, directory: str) -> dict[str, int]:
        hit = self._dirs.get(directory)
        if hit is None:
            hit = {s.path.rsplit("/", 1)[-1]: s.size
                   for s in self.file_io.list_status(directory) if not s.is_dir}
            self._dirs[directory] = hit
        return hit

    def _check_file(self, directory: str, name: str, size: int | None, sid: int,
                    what: str) -> None:
        path = join(directory, name)
        if path in self._checked:
            return
        self._checked.add(path)
        actual = self._listing(directory).get(name)
        if actual is None:
            self.add(FindingKind.MISSING_DATA_FILE,
                     f"{what} {name} referenced by snapshot {sid} does not exist",
                     snapshot=sid, path=path, key=path)
        elif size is not None and actual != size:
            self.add(FindingKind.DATA_FILE_SIZE_MISMATCH,
                     f"{what} {name} has {actual} bytes, its manifest entry says {size}",
                     snapshot=sid, path=path, key=path)

    def _check_data_file(self, e: ManifestEntry, sid: int, what: str = "data file") -> None:
        f = e.file
        if f.external_path:
            directory, name = f.external_path.rsplit("/", 1)
        else:
            d = self._bucket_dir(e.partition, e.bucket, sid)
            if d is None:
                return
            directory, name = d, f.file_name
        self._check_file(directory, name, f.file_size, sid, what)
        for extra in f.extra_files:
            self._check_file(directory, extra, None, sid, f"extra file of {f.file_name}:")

    def _check_changelog(self, snap: Snapshot) -> None:
        assert snap.changelog_manifest_list is not None
        metas = self._manifest_list(snap.changelog_manifest_list, snap.id)
        for m in metas or []:
            for e in self._manifest(m.file_name, snap.id) or []:
                if e.kind is FileKind.ADD:
                    self._check_data_file(e, snap.id, "changelog file")

    def _check_index(self, snap: Snapshot) -> None:
        assert snap.index_manifest is not None
        entries = self._index_manifest(snap.index_manifest, snap.id)
        index_dir = self.layout.index_dir
        for ie in entries or []:
            if ie.kind is not FileKind.ADD:
                continue
            if ie.external_path:
                directory, name = ie.external_path.rsplit("/", 1)
            else:
                directory, name = index_dir, ie.file_name
            path = join(directory, name)
            if path in self._checked:
                continue
            self._checked.add(path)
            actual = self._listing(directory).get(name)
            if actual is None:
                self.add(FindingKind.MISSING_INDEX_FILE,
                         f"index file {name} ({ie.index_type}) referenced by snapshot "
                         f"{snap.id} does not exist", snapshot=snap.id, path=path, key=path)
            elif actual != ie.file_size:
                self.add(FindingKind.DATA_FILE_SIZE_MISMATCH,
                         f"index file {name} has {actual} bytes, its entry says {ie.file_size}",
                         snapshot=snap.id, path=path, key=path)

    def _partition_text(self, partition: bytes) -> str:
        try:
            return self.layout.partition_path(partition) or "(unpartitioned)"
        except PaimonError:
            return partition.hex()

    # ------------------------------------------------------------------ tags, reads
    def _check_tags(self, retained: dict[int, Snapshot]) -> list[str]:
        tag_dir = self.layout.tag_dir
        names = []
        for fname in sorted(self.file_io.list_names(tag_dir)):
            if not fname.startswith(TAG_PREFIX):
                continue
            name = fname[len(TAG_PREFIX):]
            names.append(name)
            path = join(tag_dir, fname)
            try:
                snap = decode_snapshot(self.file_io.read_bytes(path), path)
            except FileNotFoundInTableError:
                continue
            except CorruptMetadataError as e:
                self.add(FindingKind.CORRUPT_METADATA, f"tag {name}: {e.reason}", path=path)
                continue
            same = retained.get(snap.id)
            if same is not None and same.base_manifest_list == snap.base_manifest_list:
                continue  # checked as a snapshot
            self._check_snapshot(snap, _Fold())
        return names

    def _check_hash_index(self, snap: Snapshot, fold: _Fold) -> None:
        """Dynamic bucket tables: the latest snapshot's HASH index agrees with its data
        (:mod:`paimon_core.fsck_index`)."""
        entries = (self._index_manifest(snap.index_manifest, snap.id) or []
                   if snap.index_manifest else [])
        live = [k for k, ids in fold.by_bucket.items() if ids]
        try:
            problems = check_hash_index(self.table, snap.id, entries, live)
        except Exception as e:  # a failing read is reported by the read check
            self.add(FindingKind.UNVERIFIABLE, f"cannot check the hash index of snapshot "
                     f"{snap.id}: {type(e).__name__}: {e}", snapshot=snap.id,
                     severity=Severity.WARNING)
            return
        for p in problems:
            self.add(FindingKind.HASH_INDEX_INCONSISTENT, p.message, snapshot=snap.id,
                     path=p.path)

    def _check_readable(self, snap: Snapshot) -> None:
        try:
            data = self.table.to_arrow(snapshot_id=snap.id)
        except UnsupportedError as e:
            self.add(FindingKind.UNVERIFIABLE, f"cannot read snapshot {snap.id} with this "
                     f"reader: {e}", snapshot=snap.id, severity=Severity.WARNING, key="read")
            return
        except Exception as e:  # any failure of a read is the finding (I4, I6)
            self.add(FindingKind.UNREADABLE,
                     f"reading snapshot {snap.id} failed: {type(e).__name__}: {e}",
                     snapshot=snap.id, key=("read", snap.id))
            return
        append_only = not self.is_pk and not snap.index_manifest
        if (append_only and snap.total_record_count is not None
                and data.num_rows != snap.total_record_count):
            self.add(FindingKind.RECORD_COUNT_MISMATCH,
                     f"reading snapshot {snap.id} gave {data.num_rows} rows, its "
                     f"totalRecordCount is {snap.total_record_count}", snapshot=snap.id,
                     key=snap.id)


def _cmp(a: Sequence[Any], b: Sequence[Any]) -> int:
    for x, y in zip(a, b):
        if x is None or y is None:
            c = (x is not None) - (y is not None)
        else:
            c = java_compare(x, y) or 0
        if c:
            return c
    return 0


def orphan_files(table: FileStoreTable, older_than_millis: int) -> list[str]:
    """Files under the table directory that nothing references, last modified before
    ``older_than_millis`` (an epoch-millis cutoff, as Java's ``OrphanFilesClean``). Only
    lists; never deletes. Referenced = named by any manifest list, manifest, index manifest,
    statistics file, data / extra / changelog file of any snapshot, tag or changelog
    (decoupled) of the table or its branches; metadata directories are skipped except for
    leftover hidden temp files (``.<name>.<uuid>.tmp``).

    Raises:
        CorruptMetadataError: some metadata cannot be read, so the referenced set is unknown
            (nothing is listed rather than a live file).
    """
    return list_orphans(table, older_than_millis)
