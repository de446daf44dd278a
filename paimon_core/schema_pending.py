"""A schema change that lands with a commit's rows, or not at all.

A Paimon schema is its own file (``schema/schema-N``), published before the snapshot that uses
it: a reader of snapshot K loads ``schema-<K.schemaId>``, and every reader takes the table's
columns from the *latest* schema file (Java's ``SchemaManager.latest()``), whether a snapshot
uses it or not. Paimon Java's CDC sync (``UpdatedDataFieldsProcessFunction`` ->
``SchemaManager.commitChanges``) publishes a new column as soon as a record carries it, apart
from any commit: a batch that then fails leaves the column in the table. Here a batch's schema
change is *pending* until its snapshot lands:

1. the writer computes the new schema in memory (:func:`paimon_core.schema_change.apply_changes`)
   and writes its data files with it; every refusal (malformed events, validation) is decided
   before anything of the schema is written;
2. :func:`publish_pending` writes a marker ``schema/.pending-<N>`` (JSON: commit user, commit
   identifier, added columns; hidden: Java and :class:`SchemaManager` list only ``schema-*``,
   orphan cleaning never touches it) and then ``schema-<N>`` with one create-if-absent (taken:
   another writer changed the schema meanwhile: :class:`PendingSchemaRaceError`, the files must
   be written again);
3. the snapshot is committed; :func:`clear_pending` removes the marker.

When the commit fails for sure, :func:`withdraw_pending` *supersedes* the schema: while it is
still the latest, ``schema-<N+1>`` is published with the added columns dropped, so readers
see the columns they saw before. A schema file is never deleted: a snapshot committed
meanwhile by another writer records the latest schema id (``schema-<N>``) and a writer may have
loaded it already; dropping the columns keeps every such file readable (their values for the
columns are hidden, as after ``ALTER TABLE DROP COLUMN``; columns added again later get new
field ids). After a crash (marker left, no snapshot), :func:`resolve_pending` at the next run
adopts the schema when the same commit user runs the same identifier again (its rows then land
with it, once), or withdraws it: at once when the marker is the same user's (one writer per
commit user), after ``grace_millis`` when it is another user's (that writer may still be
between its schema and its snapshot).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from paimon_core.errors import CorruptMetadataError, FileNotFoundInTableError, PaimonError
from paimon_core.io.file_io import join
from paimon_core.schema_change import DropColumn, apply_changes, publish_schema_file
from paimon_core.spec.schema import TableSchema, encode_schema

if TYPE_CHECKING:
    from paimon_core.table import FileStoreTable

__all__ = [
    "DEFAULT_GRACE_MILLIS",
    "PENDING_PREFIX",
    "PendingSchema",
    "PendingSchemaRaceError",
    "clear_pending",
    "list_pending",
    "publish_pending",
    "resolve_pending",
    "withdraw_pending",
]

log = logging.getLogger(__name__)

PENDING_PREFIX = ".pending-"
#: how old another commit user's pending schema must be before it counts as abandoned
DEFAULT_GRACE_MILLIS = 3_600_000


class PendingSchemaRaceError(PaimonError):
    """Another writer published the schema id a pending schema change was written with: the
    batch's files were written with a schema that will not exist, and must be written again."""


@dataclass(frozen=True)
class PendingSchema:
    """The marker of a published schema whose commit has not landed yet."""

    schema_id: int
    commit_user: str
    commit_identifier: int
    added: tuple[str, ...]
    created_millis: int

    def to_bytes(self) -> bytes:
        return json.dumps({**asdict(self), "added": list(self.added)}).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes, path: str) -> PendingSchema:
        try:
            raw = json.loads(data)
            return cls(int(raw["schema_id"]), str(raw["commit_user"]),
                       int(raw["commit_identifier"]), tuple(str(x) for x in raw["added"]),
                       int(raw["created_millis"]))
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptMetadataError(path, f"not a pending-schema marker: {e}") from e


def _marker_path(table: FileStoreTable, schema_id: int) -> str:
    return join(table.schema_manager.schema_dir, f"{PENDING_PREFIX}{schema_id}")


def list_pending(table: FileStoreTable) -> list[PendingSchema]:
    """The pending-schema markers of ``table`` (by schema id)."""
    out = []
    for name in table.file_io.list_names(table.schema_manager.schema_dir):
        rest = name[len(PENDING_PREFIX):] if name.startswith(PENDING_PREFIX) else ""
        if not rest.isdigit():
            continue
        path = _marker_path(table, int(rest))
        try:
            out.append(PendingSchema.from_bytes(table.file_io.read_bytes(path), path))
        except FileNotFoundInTableError:
            continue  # cleared meanwhile
    return sorted(out, key=lambda p: p.schema_id)


def publish_pending(table: FileStoreTable, schema: TableSchema, commit_user: str,
                    commit_identifier: int, added: Sequence[str]) -> PendingSchema:
    """Publish ``schema`` (computed in memory on top of the latest schema) for the commit
    ``commit_identifier`` of ``commit_user``: the marker first, then ``schema-<id>``.

    Raises:
        PendingSchemaRaceError: ``schema-<id>`` exists already (another writer's schema).
    """
    pending = PendingSchema(schema.id, commit_user, commit_identifier, tuple(added),
                            int(time.time() * 1000))
    marker = _marker_path(table, schema.id)
    table.file_io.write_bytes(marker, pending.to_bytes())
    if not publish_schema_file(table.file_io, table.schema_manager.schema_path(schema.id),
                    encode_schema(schema)):
        table.file_io.delete(marker)
        raise PendingSchemaRaceError(
            f"table {table.identifier}: schema {schema.id} was published by another writer "
            f"while commit {commit_identifier} of {commit_user!r} was being written with it")
    log.info("table %s: schema %s published for commit %s of %s (added %s)",
             table.identifier, schema.id, commit_identifier, commit_user, list(added))
    return pending


def clear_pending(table: FileStoreTable, pending: PendingSchema) -> None:
    """The commit landed: the schema is the table's; the marker goes."""
    table.file_io.delete(_marker_path(table, pending.schema_id))


def withdraw_pending(table: FileStoreTable, pending: PendingSchema) -> TableSchema | None:
    """Supersede the pending schema of a commit that did not land: while it is the latest
    schema, publish the next one with its added columns dropped (returned); then remove the
    marker. A schema that is no longer the latest (someone built on it) is kept. Never
    deletes a schema file (see the module docs)."""
    schemas = table.schema_manager
    latest = schemas.latest()
    superseded = None
    if latest is not None and latest.id == pending.schema_id:
        drops = [DropColumn(n) for n in pending.added if n in latest.field_names]
        if drops:
            new = apply_changes(latest, drops, has_snapshots=True)
            if publish_schema_file(table.file_io, schemas.schema_path(new.id), encode_schema(new)):
                superseded = new
                log.warning("table %s: schema %s of commit %s of %s did not land with its "
                            "rows; superseded by schema %s without %s", table.identifier,
                            pending.schema_id, pending.commit_identifier,
                            pending.commit_user, new.id, list(pending.added))
    clear_pending(table, pending)
    return superseded


def resolve_pending(table: FileStoreTable, commit_user: str, commit_identifier: int, *,
                    grace_millis: int = DEFAULT_GRACE_MILLIS) -> PendingSchema | None:
    """Settle the pending schemas left by crashed writers before ``commit_user`` writes its
    commit ``commit_identifier``; returns the marker it adopts (its own schema of this very
    commit, still the latest: the files are written with it and :func:`clear_pending` follows
    the commit), if any. Markers whose commit landed are removed; abandoned ones withdrawn
    (:func:`withdraw_pending`). Returns None when nothing is adopted."""
    adopted = None
    now = int(time.time() * 1000)
    for p in list_pending(table):
        commit = table.new_commit(p.commit_user)
        if commit.landed(p.commit_identifier):
            clear_pending(table, p)
            continue
        latest = table.schema_manager.latest()
        ours = p.commit_user == commit_user
        if ours and p.commit_identifier == commit_identifier and latest is not None \
                and latest.id == p.schema_id:
            adopted = p
        elif commit.unfinished_steps(p.commit_identifier):
            continue  # some of its snapshots use the schema: its writer finishes the commit
        elif ours or now - p.created_millis > grace_millis:
            withdraw_pending(table, p)
    return adopted
