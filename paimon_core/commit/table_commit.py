"""Phase two of the two-phase commit: turning commit messages into snapshots.

Mirrors ``org.apache.paimon.operation.FileStoreCommitImpl`` with the commit made safe by
construction (reliability.md, design rules 1-4):

* The commit point is one atomic create-if-absent of ``snapshot/snapshot-N``
  (:meth:`FileIO.try_create`: ``os.link`` locally, ``If-None-Match: *`` on S3).
* A failed or refused publish proves nothing: the snapshot is read back. Ours (same commit
  user, identifier, kind and manifest list) means success; someone else's means re-plan on the
  new latest snapshot and retry; unreadable means :class:`CommitStateUnknownError`, and nothing
  is cleaned up.
* Conflicts are checked on every attempt against the snapshot being followed.
* Exactly once: a commit whose (commit user, identifier) is already in a snapshot is not
  applied again, whatever it carries (a restarted writer that regenerated the same batch may
  have compacted differently: its files are left as orphans for orphan cleaning, as Java's
  committer does); :meth:`TableCommit.filter_committed` lets a restarted pipeline drop what
  already landed before writing at all.
* Never below expiry: a snapshot id that expiry removed is free again for create-if-absent,
  so a writer delayed across an expiry could re-create it (a "stray" that would take the
  commits after it out of every read). Before and after the create the id is checked against
  the expiry fence (``EARLIEST``, raised by expiry before it deletes) and against the listing
  (:meth:`SnapshotManager.is_stray`); a stray is withdrawn and the commit retried on the fresh
  latest snapshot. Only the verified id is written to ``LATEST``.

Race windows: between writing manifests and publishing the snapshot, other commits may land;
the manifests of a lost attempt are deleted (they are referenced by nothing). A crash anywhere
before the publish leaves only orphans; a crash after it leaves a committed snapshot whose
``LATEST`` hint may lag (hints are only hints).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from paimon_core.commit.committed import CommittedLookup
from paimon_core.commit.conflicts import check_conflicts, check_new_files, needs_live_files
from paimon_core.commit.index_changes import (
    dv_index_changes,
    index_adds,
    index_deletes,
    with_index_checks,
)
from paimon_core.commit.manifest_merge import merge_manifests, merge_settings
from paimon_core.commit.manifest_writer import ManifestWriter
from paimon_core.commit.options import CommitOptions
from paimon_core.commit.publish import SnapshotPublisher
from paimon_core.commit.steps import CommitStep, steps_done
from paimon_core.commit_message import CommitMessage, validate_messages
from paimon_core.errors import (
    CommitConflictError,
    CorruptMetadataError,
    PaimonError,
    SchemaError,
)
from paimon_core.io.file_io import FileIO, join
from paimon_core.layout import TableContext
from paimon_core.manifest_io import ManifestIO
from paimon_core.option_validation import overlaid
from paimon_core.scan.manifest_filter import EntryFilter, read_entries
from paimon_core.schema_manager import SchemaManager
from paimon_core.snapshot_manager import SnapshotManager
from paimon_core.spec.binary_row import deserialize_binary_row
from paimon_core.spec.file_entries import live_files
from paimon_core.spec.index_manifest import IndexManifestEntry, combine_index_entries
from paimon_core.spec.keys import key_decoder
from paimon_core.spec.manifest import DataFileMeta, FileKind, ManifestEntry
from paimon_core.spec.manifest_list import ManifestFileMeta
from paimon_core.spec.option_enums import BucketMode
from paimon_core.spec.schema import TableSchema
from paimon_core.spec.snapshot import (
    BATCH_COMMIT_IDENTIFIER,
    CURRENT_VERSION,
    STEP_PROPERTY,
    CommitKind,
    Snapshot,
)
from paimon_core.types import DataType

log = logging.getLogger(__name__)

DEFAULT_MAX_RETRIES = 20


@dataclass(frozen=True)
class _Changes:
    data: list[ManifestEntry]
    changelog: list[ManifestEntry]
    #: index manifest changes (ADD new HASH files, DELETE dropped ones)
    index: list[IndexManifestEntry] = field(default_factory=list)


ChangeBuilder = Callable[[Snapshot | None, list[ManifestEntry]], _Changes]


class TableCommit:
    """Commits messages of one commit user to one table.

    Args:
        file_io: storage.
        table_path: the table directory.
        commit_user: stable identity of the writing pipeline (exactly-once is per user).
        options: this committer's :class:`CommitOptions` (snapshot properties, retries,
            overwrite mode, watermark); a call's own ``options`` replace them.
        max_retries: attempts after losing the race for a snapshot id (option
            ``commit.max-retries``); overrides ``options.max_retries``.
        dynamic_options: the table copy's options over the stored schema's
            (:meth:`FileStoreTable.copy`).
        context: the table's resolved schema, reused while it is the latest.
    """

    def __init__(
        self,
        file_io: FileIO,
        table_path: str,
        *,
        commit_user: str,
        schema_manager: SchemaManager | None = None,
        snapshot_manager: SnapshotManager | None = None,
        manifest_io: ManifestIO | None = None,
        options: CommitOptions | None = None,
        max_retries: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        dynamic_options: Mapping[str, str] | None = None,
        context: TableContext | None = None,
    ) -> None:
        if not commit_user:
            raise ValueError("commit_user must be a non-empty string")
        self.file_io = file_io
        self.table_path = table_path
        self.commit_user = commit_user
        self.schemas = schema_manager or SchemaManager(file_io, table_path)
        self.snapshots = snapshot_manager or SnapshotManager(file_io, table_path)
        self.manifests = manifest_io or ManifestIO(file_io, table_path)
        self.options = options or CommitOptions()
        if max_retries is not None:
            self.options = replace(self.options, max_retries=max_retries)
        self._sleep = sleep
        self.dynamic_options = dict(dynamic_options or {})
        self._resolved = context
        self._partition_fields: tuple[list[str], list[DataType]] | None = None
        self.committed = CommittedLookup(self.snapshots, commit_user)

    # ------------------------------------------------------------------ public API
    def commit(
        self,
        messages: Sequence[CommitMessage],
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
        *,
        options: CommitOptions | None = None,
    ) -> list[int]:
        """Commit new files (one APPEND snapshot) and compaction results (one COMPACT
        snapshot), both with ``commit_identifier``. Returns the ids of the snapshots created or
        found already committed; empty when there was nothing to commit. ``options``: this
        commit's settings (default: the committer's)."""
        opts = options or self.options
        schema = self._schema()
        self._validate(messages, schema)
        if landed := self.landed(commit_identifier):
            log.info("commit %s/%s already in snapshot(s) %s", self.commit_user,
                     commit_identifier, landed)
            return landed
        # the latest snapshot and schema just read: the first attempt builds on them (the
        # schema was read first: when the snapshot already uses a newer one, both are re-read)
        seen = self.committed.latest_seen
        start = None if seen is None or seen.schema_id > schema.id else seen
        schema_read: TableSchema | None = schema
        out: list[int] = []
        for kind, pick in (
            (CommitKind.APPEND, _append_files),
            (CommitKind.COMPACT, _compact_files),
        ):
            group = [m for m in messages
                     if any(pick(m)) or (kind is CommitKind.APPEND and m.index_files)
                     or (kind is CommitKind.COMPACT
                         and (m.dv_index_added or m.dv_index_deleted))]
            if not group:
                continue
            build = with_index_checks(_changes_of(group, pick), group, self._index_entries,
                                      hash_bases=kind is CommitKind.APPEND)
            sid = self._try_commit(kind, build, commit_identifier, opts,
                                   touched=_touched(group), start=start,
                                   schema_read=schema_read)
            start = schema_read = None  # the next kind builds on what this one made
            if sid is not None:
                out.append(sid)
        return out

    def overwrite(
        self,
        messages: Sequence[CommitMessage],
        partition: Mapping[str, Any] | None = None,
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
        *,
        options: CommitOptions | None = None,
        dynamic: bool | None = None,
    ) -> list[int]:
        """INSERT OVERWRITE (one OVERWRITE snapshot), as Paimon's
        ``FileStoreCommitImpl.overwrite``:

        * **dynamic** (``dynamic-partition-overwrite``, default true;
          ``options.dynamic_partition_overwrite`` or ``dynamic`` override the option;
          partitioned tables only): exactly the partitions that receive new files are replaced,
          and no new files means no snapshot. A static ``partition`` spec
          (possibly partial) only bounds the new files: within it, partitions that receive
          no rows keep theirs.
        * **static** (the option false, ``dynamic=False``, or an unpartitioned table): every
          live file matching ``partition`` (None or ``{}`` = the whole table) is replaced, by
          nothing if there are no new files.

        Every new file must lie in ``partition`` when one is given (:class:`SchemaError`).
        ``options``: this commit's settings (default: the committer's).
        """
        opts = options or self.options
        if dynamic is None:
            dynamic = opts.dynamic_partition_overwrite
        schema = self._schema()
        self._validate(messages, schema)
        part_types = [schema.field(k).type for k in schema.partition_keys]
        new = [(m, f) for m in messages for f in m.new_files]
        if any(m.compact_before or m.compact_after or m.deleted_files for m in messages):
            raise SchemaError("overwrite takes only new files (no compaction or deletions)")
        if dynamic is None:
            dynamic = self._context(schema).options.dynamic_partition_overwrite
        dynamic = dynamic and bool(schema.partition_keys)
        if dynamic and not new:
            return []
        matcher = self._context(schema).layout.partition_matcher(
            [partition] if partition else None)
        if partition is not None:
            for m in messages:
                if m.new_files and not matcher(m.partition):
                    values = deserialize_binary_row(m.partition, part_types)
                    raise SchemaError(f"overwrite of partition {dict(partition)} received rows "
                                      f"of partition {dict(zip(schema.partition_keys, values))}")
        targets = {m.partition for m, _ in new}
        if landed := self.landed(commit_identifier):
            return landed[-1:]

        def replaced(partition: bytes) -> bool:
            return partition in targets if dynamic else matcher(partition)

        build = self._replacing(replaced, messages)
        sid = self._try_commit(CommitKind.OVERWRITE, build, commit_identifier,
                               replace(opts, watermark=None), touched=None,
                               check_bucket_counts=False)
        return [sid] if sid is not None else []

    def truncate(
        self,
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
        *,
        options: CommitOptions | None = None,
    ) -> list[int]:
        """Remove every row (an OVERWRITE snapshot deleting all live files)."""
        return self.overwrite([], {}, commit_identifier, options=options, dynamic=False)

    def drop_partitions(
        self,
        partitions: Sequence[Mapping[str, Any]],
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
    ) -> list[int]:
        """Delete whole partitions (an OVERWRITE snapshot with deletions only)."""
        layout = self._context(self._schema()).layout
        matchers = [layout.partition_matcher([p] if p else None) for p in partitions]
        if landed := self.landed(commit_identifier):
            return landed[-1:]

        def build(latest: Snapshot | None, live: list[ManifestEntry]) -> _Changes:
            def dropped(partition: bytes) -> bool:
                return any(match(partition) for match in matchers)

            data = [ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file)
                    for e in live if dropped(e.partition)]
            index = index_deletes(self._index_entries(latest), dropped)
            return _Changes(data, [], index)

        sid = self._try_commit(CommitKind.OVERWRITE, build, commit_identifier,
                               replace(self.options, properties={}, watermark=None),
                               touched=None, check_bucket_counts=False, allow_empty=False)
        return [sid] if sid is not None else []

    def commit_steps(
        self,
        steps: Sequence[CommitStep],
        commit_identifier: int,
        *,
        options: CommitOptions | None = None,
    ) -> list[int]:
        """Commit ``steps`` in order, one snapshot each, all with ``commit_identifier`` (see
        :mod:`paimon_core.commit.steps`): each snapshot records ``commit.step = i/n``; steps
        that already landed (a re-run after a crash between two snapshots) are skipped, the
        others committed. One step is a plain :meth:`commit` / :meth:`truncate`. Returns the
        ids of every step's snapshot (found or created), oldest first.

        Raises:
            CommitConflictError: the identifier was committed with another step count.
        """
        opts = options or self.options
        if commit_identifier == BATCH_COMMIT_IDENTIFIER:
            raise ValueError("a multi-step commit needs its own commit identifier")
        if len(steps) == 1:
            if steps[0].kind == "truncate":
                return self.truncate(commit_identifier, options=opts)
            return self.commit(steps[0].messages, commit_identifier, options=opts)
        schema = self._schema()
        for step in steps:
            self._validate(step.messages, schema)
        landed = self.committed.landed_snapshots(commit_identifier)
        done = steps_done(landed, len(steps))
        if done is None:
            return [s.id for s in landed]
        out = [s.id for s in landed]
        for i in range(done, len(steps)):
            step = steps[i]
            step_opts = opts.with_properties({STEP_PROPERTY: f"{i + 1}/{len(steps)}"})
            if step.kind == "truncate":
                sid = self._try_commit(CommitKind.OVERWRITE,
                                       self._replacing(lambda _partition: True, []),
                                       commit_identifier,
                                       replace(step_opts, watermark=None), touched=None,
                                       check_bucket_counts=False)
            else:
                sid = self._try_commit(CommitKind.APPEND,
                                       _changes_of(list(step.messages), _append_files),
                                       commit_identifier, step_opts,
                                       touched=_touched(step.messages))
            if sid is None:  # never: every step has changes or is an OVERWRITE
                raise CommitConflictError(f"step {i + 1} of commit {commit_identifier} made "
                                          "no snapshot")
            out.append(sid)
        return out

    def _replacing(self, replaced: Callable[[bytes], bool],
                   messages: Sequence[CommitMessage]) -> ChangeBuilder:
        """The changes of an OVERWRITE: every live file of the partitions ``replaced`` names
        deleted, with their HASH index files (FileStoreCommitImpl.tryOverwrite), and the new
        files of ``messages`` added with theirs."""
        new = [(m, f) for m in messages for f in m.new_files]

        def build(latest: Snapshot | None, live: list[ManifestEntry]) -> _Changes:
            data = [ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file)
                    for e in live if replaced(e.partition)]
            data += [_entry(FileKind.ADD, m, f) for m, f in new]
            index = index_deletes(self._index_entries(latest), replaced) + index_adds(messages)
            return _Changes(data, [], index)

        return build

    # exactly once (:class:`CommittedLookup`)
    def unfinished_steps(self, identifier: int) -> list[Snapshot]:
        """See :meth:`CommittedLookup.unfinished_steps`."""
        return self.committed.unfinished_steps(identifier)

    def filter_committed(self, identifiers: Sequence[int]) -> list[int]:
        """See :meth:`CommittedLookup.filter_committed`."""
        return self.committed.filter_committed(identifiers)

    def latest_committed_identifier(self) -> int | None:
        return self.committed.latest_committed_identifier()

    def landed(self, identifier: int) -> list[int]:
        """See :meth:`CommittedLookup.landed`."""
        return self.committed.landed(identifier)

    def abort(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the files the messages' writers created (never call after a commit of them
        succeeded, or when its state is unknown)."""
        schema = self._schema()
        # the same checks as commit: a message may only name plain files of this table; its
        # schema may be one not published yet (a schema change that lands with the commit or
        # not at all: paimon_core.schema_pending), its files go all the same
        newest = max((m.schema_id for m in messages), default=schema.id)
        self._validate(messages, schema, latest_schema_id=max(schema.id, newest))
        layout = self._context(schema).layout
        for m in messages:
            bucket_dir = layout.bucket_dir(m.partition, m.bucket)
            for f in m.written_files():
                self.file_io.delete(join(bucket_dir, f.file_name))
                for extra in f.extra_files:
                    self.file_io.delete(join(bucket_dir, extra))
            for ix in m.index_files + m.dv_index_added:
                self.file_io.delete(layout.index_file(ix.file_name))

    # ------------------------------------------------------------------ internals
    def _schema(self) -> TableSchema:
        schema = self.schemas.latest()
        if schema is None:
            raise SchemaError(f"no table at {self.table_path}")
        return overlaid(schema, self.dynamic_options)

    def _context(self, schema: TableSchema) -> TableContext:
        """``schema`` resolved, made again only when the latest schema changes."""
        if self._resolved is None or self._resolved.schema != schema:
            self._resolved = TableContext.of(self.table_path, schema)
        return self._resolved

    def _validate(self, messages: Sequence[CommitMessage], schema: TableSchema, *,
                  latest_schema_id: int | None = None) -> None:
        ctx = self._context(schema)
        n = ctx.num_buckets
        validate_messages(messages, table_path=self.table_path, num_buckets=n,
                          partition_arity=len(schema.partition_keys), latest_schema_id=(
                              schema.id if latest_schema_id is None else latest_schema_id))
        for m in messages:
            if ctx.bucket_mode is BucketMode.HASH_FIXED and m.total_buckets != n and (
                    m.new_files or m.compact_after):
                raise CommitConflictError(f"files written for bucket={m.total_buckets}, but the "
                                          f"table now has bucket={n} (a writer with a stale "
                                          "bucket count)")

    def _index_entries(self, snapshot: Snapshot | None) -> list[IndexManifestEntry]:
        """The index manifest entries of ``snapshot`` (none without one)."""
        if snapshot is None or not snapshot.index_manifest:
            return []
        return self.manifests.index_manifest(snapshot.index_manifest)

    def _bucket_counts_agree(self, schema: TableSchema) -> bool:
        """Whether every schema up to ``schema`` has its bucket count (schemas are immutable
        and cached: read once per committer)."""
        try:
            return all(self.schemas.schema(i).num_buckets == schema.num_buckets
                       for i in range(schema.id))
        except PaimonError:  # a schema file missing or unreadable: check in full
            return False

    def _live(
        self, metas: Sequence[ManifestFileMeta], touched: set[bytes] | None
    ) -> list[ManifestEntry]:
        """The live entries of the ``touched`` partitions (all for None): only the manifests
        whose partition stats may hold one are read, only their rows are built."""
        if touched is None:
            flt = EntryFilter()
        else:
            if self._partition_fields is None:  # fixed for a table's life (never retyped)
                schema = self._schema()
                self._partition_fields = (
                    list(schema.partition_keys),
                    [schema.field(k).type for k in schema.partition_keys],
                )
            flt = EntryFilter.of_partitions(touched, *self._partition_fields)
        return live_files(read_entries(self.manifests, metas, flt), source=self.table_path)

    def _try_commit(
        self,
        kind: CommitKind,
        build: ChangeBuilder,
        identifier: int,
        opts: CommitOptions,
        *,
        touched: set[bytes] | None,
        check_bucket_counts: bool = True,
        allow_empty: bool = True,
        start: Snapshot | None = None,
        schema_read: TableSchema | None = None,
    ) -> int | None:
        """Commit the changes ``build`` makes of the latest snapshot, re-planned on a lost
        race; ``start``: the latest snapshot this call's caller has just read, and
        ``schema_read``: the latest schema, for the first attempt (the schema unless the
        latest snapshot already has a newer one)."""
        first_latest: int | None = None
        max_retries = opts.max_retries
        attempt = 0
        while True:
            latest = start if attempt == 0 and start else self.snapshots.latest_snapshot()
            if attempt == 0:
                first_latest = latest.id if latest else None
            else:
                done = self.committed.find_committed(kind, identifier, first_latest,
                                            latest.id if latest else None)
                if done is not None:
                    return done
            if attempt == 0 and schema_read is not None and (
                    latest is None or latest.schema_id <= schema_read.id):
                schema = schema_read
            else:
                schema = self._schema()
            options = self._context(schema).options
            if max_retries is None:
                max_retries = options.commit_max_retries(DEFAULT_MAX_RETRIES)
            try:
                prev = self.manifests.data_manifests(latest)
                # an OVERWRITE's changes are made of the live files; the others' are not
                live = self._live(prev, touched) if kind is CommitKind.OVERWRITE else None
                changes = build(latest, live or [])
                if (not changes.data and not changes.changelog and not changes.index
                        and (kind is not CommitKind.OVERWRITE or not allow_empty)):
                    return None
                if live is None and (kind is not CommitKind.APPEND or needs_live_files(
                        changes.data, bucket_counts_agree=self._bucket_counts_agree(schema))):
                    live = self._live(prev, touched)
                if live is None:  # conflicts.py: an APPEND of new level-0 files
                    check_new_files(changes.data)
                else:
                    check_conflicts(live, changes.data, decode_key=key_decoder(
                        schema, exact_timestamps=True) if schema.primary_keys else None,
                        check_bucket_counts=check_bucket_counts)
                outcome = self._attempt(kind, schema, latest, prev, changes, identifier,
                                        opts.properties, opts.watermark)
            except CorruptMetadataError:
                if latest is None or not self.snapshots.has_expired(latest.id):
                    raise
                # the snapshot this attempt built on expired while it read that snapshot's
                # manifests (a writer slower than retention): a lost race, not corruption
                log.info("snapshot %s expired while this commit read its manifests: "
                         "re-planning on the latest snapshot", latest.id)
                outcome = None
            if outcome is not None:
                return outcome
            attempt += 1
            if attempt > max_retries:
                raise CommitConflictError(
                    f"gave up after {attempt} attempts: other commits kept winning the race for "
                    f"the next snapshot id (raise 'commit.max-retries' if this is expected)"
                )
            delay = min(0.01 * 2 ** min(attempt, 10), 10.0)
            self._sleep(delay * (0.5 + random.random()))

    def _attempt(
        self,
        kind: CommitKind,
        schema: TableSchema,
        latest: Snapshot | None,
        prev: list[ManifestFileMeta],
        changes: _Changes,
        identifier: int,
        properties: Mapping[str, str] | None,
        watermark: int | None,
    ) -> int | None:
        """One attempt; returns the snapshot id, or None when another commit took the id."""
        target, min_count, full = merge_settings(options := self._context(schema).options)
        part_types = [schema.field(k).type for k in schema.partition_keys]
        writer = ManifestWriter(self.file_io, self.table_path, part_types, options, schema.id,
                                target_file_size=target, cache=self.manifests.cache)
        try:
            delta_metas = writer.write_manifests(changes.data)
            base_metas = merge_manifests(
                prev, lambda m: self.manifests.manifest(m.file_name, m.file_size), writer,
                target_size=target, min_count=min_count, full_threshold=full,
                partition_types=part_types,
                read_bytes=lambda m: self.manifests.manifest_bytes(m.file_name, m.file_size))
            base_name, base_size = writer.write_manifest_list(base_metas)
            delta_name, delta_size = writer.write_manifest_list(delta_metas)
            changelog_name: str | None = None
            changelog_size: int | None = None
            if changes.changelog:
                changelog_name, changelog_size = writer.write_manifest_list(
                    writer.write_manifests(changes.changelog))
            index_manifest = latest.index_manifest if latest else None
            if changes.index:  # IndexManifestFile.writeIndexFiles: the full set, rewritten
                index_manifest = writer.write_index_manifest(
                    combine_index_entries(self._index_entries(latest), changes.index))
        except BaseException:
            # nothing references these files yet
            _quietly(writer.cleanup)
            raise
        added = sum(e.file.row_count for e in changes.data if e.kind is FileKind.ADD)
        removed = sum(e.file.row_count for e in changes.data if e.kind is FileKind.DELETE)
        delta_count = added - removed
        prev_total = latest.total_record_count if latest and latest.total_record_count else 0
        marks = [w for w in (watermark, latest.watermark if latest else None) if w is not None]
        new_id = latest.id + 1 if latest else 1
        snapshot = Snapshot(
            version=CURRENT_VERSION, id=new_id, schema_id=schema.id,
            base_manifest_list=base_name, delta_manifest_list=delta_name,
            changelog_manifest_list=changelog_name,
            index_manifest=index_manifest,
            commit_user=self.commit_user, commit_identifier=identifier, commit_kind=kind,
            time_millis=int(time.time() * 1000), log_offsets={},
            total_record_count=prev_total + delta_count, delta_record_count=delta_count,
            changelog_record_count=sum(e.file.row_count for e in changes.changelog),
            watermark=max(marks) if marks else None,
            statistics=latest.statistics if latest and latest.schema_id == schema.id else None,
            base_manifest_list_size=base_size, delta_manifest_list_size=delta_size,
            changelog_manifest_list_size=changelog_size,
            properties=dict(properties) if properties else None,
        )
        publisher = SnapshotPublisher(self.file_io, self.snapshots)
        if publisher.publish(snapshot):
            publisher.write_hint(new_id)
            return new_id
        # lost the race: our manifests are referenced by nothing
        _quietly(writer.cleanup)
        return None


def _entry(kind: FileKind, m: CommitMessage, f: DataFileMeta) -> ManifestEntry:
    return ManifestEntry(kind, m.partition, m.bucket, m.total_buckets, f)


Files = tuple[DataFileMeta, ...]


def _append_files(m: CommitMessage) -> tuple[Files, Files, Files]:
    """(added, deleted, changelog) files of the APPEND snapshot."""
    return m.new_files, m.deleted_files, m.changelog_files


def _compact_files(m: CommitMessage) -> tuple[Files, Files, Files]:
    """(added, deleted, changelog) files of the COMPACT snapshot."""
    return m.compact_after, m.compact_before, m.compact_changelog


def _changes_of(
    messages: Sequence[CommitMessage], pick: Callable[[CommitMessage], tuple[Files, Files, Files]]
) -> ChangeBuilder:
    """The manifest entries of one snapshot's messages (independent of the latest state)."""

    def build(latest: Snapshot | None, live: list[ManifestEntry]) -> _Changes:
        data: list[ManifestEntry] = []
        log_: list[ManifestEntry] = []
        for m in messages:
            added, deleted, changelog = pick(m)
            data += [_entry(FileKind.DELETE, m, f) for f in deleted]
            data += [_entry(FileKind.ADD, m, f) for f in added]
            log_ += [_entry(FileKind.ADD, m, f) for f in changelog]
        # hash index files go with the APPEND snapshot, deletion-vector index files with the
        # COMPACT one (FileStoreCommitImpl.collectChanges)
        index = index_adds(messages) if pick is _append_files else dv_index_changes(messages)
        return _Changes(data, log_, index)

    return build


def _touched(messages: Sequence[CommitMessage]) -> set[bytes]:
    return {m.partition for m in messages}


def _quietly(fn: Callable[[], None]) -> None:
    try:
        fn()
    except PaimonError as e:
        log.warning("cleanup failed: %s", e)
