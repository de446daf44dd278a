"""Tags: named, long-lived references to a snapshot (``tag/tag-<name>``).

Mirrors ``org.apache.paimon.utils.TagManager`` and ``org.apache.paimon.tag.Tag`` (spec §12). A
tag file is the snapshot's JSON, copied verbatim (so fields of newer writers survive); only when
a retention is given are two keys added, exactly as Jackson writes them in Java:
``tagCreateTime`` = ``LocalDateTime`` array ``[y, m, d, H, M(, S(, nanos))]`` (local wall clock)
and ``tagTimeRetained`` = the ``Duration`` as decimal seconds with 9 fraction digits
(``86400.000000000``). Without a retention Java omits both so that old readers can parse tags.

Tags are created with one atomic create-if-absent (:meth:`FileIO.try_create`). Creating an
existing tag again is a no-op when it names the same snapshot and an error otherwise (Java
rewrites the file in the first case, to update its retention; we keep the first one).

Deleting a tag only removes its file. Protecting and reclaiming the tagged snapshot's files is
the business of snapshot expiry and orphan cleaning.

Example:
    >>> tm = TagManager(file_io, "/wh/db.db/t")       # doctest: +SKIP
    >>> tm.create("release-1")                         # doctest: +SKIP
    >>> tm.list()                                      # doctest: +SKIP
    [('release-1', 3)]
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from paimon_core.errors import (
    CorruptMetadataError,
    FileNotFoundInTableError,
    PaimonError,
    SnapshotNotExistError,
    TagNotExistError,
)
from paimon_core.identifier import validate_name
from paimon_core.io.file_io import FileIO, join
from paimon_core.layout import TableLayout
from paimon_core.snapshot_manager import SnapshotManager
from paimon_core.spec.snapshot import Snapshot, decode_snapshot

__all__ = ["TAG_PREFIX", "TagAlreadyExistError", "TagManager", "encode_tag"]

TAG_PREFIX = "tag-"
_RETAINED_PLACEHOLDER = "\x00tagTimeRetained\x00"


class TagAlreadyExistError(PaimonError):
    """A tag of that name already exists for another snapshot."""

    def __init__(self, name: str, existing_snapshot: int, requested_snapshot: int) -> None:
        super().__init__(
            f"tag {name!r} already exists for snapshot {existing_snapshot} (asked for snapshot "
            f"{requested_snapshot}); delete it first"
        )
        self.name = name
        self.existing_snapshot = existing_snapshot
        self.requested_snapshot = requested_snapshot


def _duration_text(d: dt.timedelta) -> str:
    """Jackson's ``Duration`` form: decimal seconds, 9 fraction digits (``0.0`` for zero)."""
    if d < dt.timedelta(0):
        raise ValueError(f"tag retention must not be negative: {d}")
    micros = (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds
    seconds, rest = divmod(micros, 1_000_000)
    if micros == 0:
        return "0.0"
    return f"{seconds}.{rest * 1000:09d}"


def _local_date_time_array(t: dt.datetime) -> list[int]:
    """Jackson's ``LocalDateTime`` array: seconds only if seconds or nanos, nanos only if set."""
    out = [t.year, t.month, t.day, t.hour, t.minute]
    nanos = t.microsecond * 1000
    if t.second or nanos:
        out.append(t.second)
    if nanos:
        out.append(nanos)
    return out


def encode_tag(
    snapshot_json: dict[str, Any],
    *,
    time_retained: dt.timedelta | None = None,
    create_time: dt.datetime | None = None,
) -> bytes:
    """The bytes of a tag file for a snapshot's JSON object (``Tag.toJson`` /
    ``Snapshot.toJson``)."""
    obj = {k: v for k, v in snapshot_json.items() if k not in ("tagCreateTime", "tagTimeRetained")}
    if time_retained is None:
        return json.dumps(obj, indent=2).encode("utf-8")
    obj["tagCreateTime"] = _local_date_time_array(create_time or dt.datetime.now())
    obj["tagTimeRetained"] = _RETAINED_PLACEHOLDER
    text = json.dumps(obj, indent=2)
    # a JSON number with exactly Jackson's digits (json.dumps cannot write 86400.000000000)
    text = text.replace(json.dumps(_RETAINED_PLACEHOLDER), _duration_text(time_retained))
    return text.encode("utf-8")


class TagManager:
    """Creates, lists, reads and deletes the tags of one table.

    Args:
        file_io: storage.
        table_path: the table directory.
    """

    def __init__(self, file_io: FileIO, table_path: str) -> None:
        self.file_io = file_io
        self.table_path = table_path
        self.tag_dir = TableLayout(table_path).tag_dir
        self.snapshots = SnapshotManager(file_io, table_path)

    def tag_path(self, name: str) -> str:
        validate_name(name, "tag")
        return join(self.tag_dir, TAG_PREFIX + name)

    def exists(self, name: str) -> bool:
        return self.file_io.exists(self.tag_path(name))

    def get(self, name: str) -> Snapshot:
        """The tagged snapshot.

        Raises:
            TagNotExistError: no such tag.
            CorruptMetadataError: the tag file cannot be decoded.
        """
        path = self.tag_path(name)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundInTableError as e:
            raise TagNotExistError(name) from e
        return decode_snapshot(data, path)

    def list(self) -> list[tuple[str, int]]:
        """``(name, snapshot id)`` of every tag, ordered by snapshot id, then name."""
        out = []
        for fname in self.file_io.list_names(self.tag_dir):
            if not fname.startswith(TAG_PREFIX) or fname.startswith("."):
                continue
            name = fname[len(TAG_PREFIX):]
            try:
                out.append((name, self.get(name).id))
            except TagNotExistError:
                continue  # deleted while listing
        return sorted(out, key=lambda t: (t[1], t[0]))

    def create(
        self,
        name: str,
        snapshot_id: int | None = None,
        *,
        time_retained: dt.timedelta | None = None,
    ) -> Snapshot:
        """Tag ``snapshot_id`` (default: the latest snapshot) as ``name``.

        Args:
            name: tag name (validated like an identifier: non-blank, no separators, not
                ``.``/``..``).
            snapshot_id: the snapshot to tag; None = latest.
            time_retained: optional retention (written as ``tagTimeRetained`` with a
                ``tagCreateTime``).

        Returns:
            The tagged snapshot.

        Raises:
            InvalidIdentifierError: a bad name.
            SnapshotNotExistError: no such snapshot (or the table has none).
            TagAlreadyExistError: the tag exists for another snapshot.
        """
        path = self.tag_path(name)
        if snapshot_id is None:
            latest = self.snapshots.latest_snapshot_id()
            if latest is None:
                raise SnapshotNotExistError("cannot create a tag: the table has no snapshot")
            snapshot_id = latest
        snap_path = self.snapshots.snapshot_path(snapshot_id)
        snapshot = self.snapshots.retained_snapshot(snapshot_id)  # typed errors for missing/expired
        try:
            raw = json.loads(self.file_io.read_bytes(snap_path).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:  # pragma: no cover - decoded above
            raise CorruptMetadataError(snap_path, f"not valid JSON: {e}") from e
        except FileNotFoundInTableError as e:
            raise SnapshotNotExistError(
                f"snapshot {snapshot_id} disappeared while tagging it"
            ) from e
        data = encode_tag(raw, time_retained=time_retained)
        error: PaimonError | None = None
        try:
            if self.file_io.try_create(path, data):
                return snapshot
        except PaimonError as e:
            error = e
        self.file_io.invalidate(path)
        try:
            existing = self.get(name)
        except TagNotExistError:
            if error is not None:
                raise error from None
            raise
        if existing.id != snapshot_id:
            raise TagAlreadyExistError(name, existing.id, snapshot_id)
        return existing

    def delete(self, name: str) -> None:
        """Delete a tag (its file only).

        Raises:
            TagNotExistError: no such tag.
        """
        if not self.file_io.delete(self.tag_path(name)):
            raise TagNotExistError(name)
