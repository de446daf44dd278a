"""A fault-injecting FileIO: named crash points matched on the path being written.

Crash points (in commit order)::

    after_data_write          a data file (``.../bucket-N/<file>``) was written
    after_manifest_write      a manifest (``manifest/manifest-<uuid>-<n>``) was written
    after_manifest_list_write a manifest list (``manifest/manifest-list-...``) was written
    before_publish            about to create ``snapshot/snapshot-N``
    during_publish            ``snapshot-N`` landed, the caller has not been told yet
    before_latest_hint        about to write ``snapshot/LATEST``
    after_publish             ``LATEST`` written: everything is on storage, nothing acknowledged

Actions: ``exit`` (``os._exit(EXIT_CODE)``: the process vanishes, no ``finally``, no cleanup),
``raise`` (a connection-reset ``OSError`` raised inside FileIO's error translation, so callers
see what a real storage failure looks like: :class:`StorageError`), ``enospc`` (the write
fails with ``OSError(ENOSPC)``, nothing written).
"""

from __future__ import annotations

import errno
import os
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from paimon_core.io.file_io import FileIO

EXIT_CODE = 86

#: point -> (path kind, moment)
CRASH_POINTS: dict[str, tuple[str, str]] = {
    "after_data_write": ("data", "after"),
    "after_manifest_write": ("manifest", "after"),
    "after_manifest_list_write": ("manifest_list", "after"),
    "before_publish": ("snapshot", "before"),
    "during_publish": ("snapshot", "after"),
    "before_latest_hint": ("hint", "before"),
    "after_publish": ("hint", "after"),
}

_KINDS = [
    ("snapshot", re.compile(r"/snapshot/snapshot-\d+$")),
    ("hint", re.compile(r"/snapshot/(LATEST|EARLIEST)$")),
    ("manifest_list", re.compile(r"/manifest/manifest-list-[^/]+$")),
    ("manifest", re.compile(r"/manifest/manifest-[^/]+$")),
    ("index", re.compile(r"/index/[^/]+$")),
    ("data", re.compile(r"/bucket-\d+/[^/]+$")),
]


def path_kind(path: str) -> str:
    for kind, rx in _KINDS:
        if rx.search(path):
            return kind
    return "other"


@dataclass
class Fault:
    """Fire ``action`` at ``point`` on its ``nth`` occurrence (then ``count - 1`` more)."""

    point: str
    action: str = "exit"  # exit | raise | enospc
    nth: int = 1
    count: int = 1
    seen: int = 0
    fired: int = 0

    def __post_init__(self) -> None:
        if self.point not in CRASH_POINTS:
            raise ValueError(f"unknown crash point {self.point!r}")
        if self.action not in ("exit", "raise", "enospc"):
            raise ValueError(f"unknown action {self.action!r}")


class InjectedFault(ConnectionResetError):
    """What a ``raise`` fault throws (inside FileIO's translation -> StorageError)."""


class FaultFileIO(FileIO):
    """FileIO that fires :class:`Fault`s on matching writes and records every write.

    ``events`` is a list of ``(kind, moment, path)`` for every write/create seen.
    """

    def __init__(self, root: str, options: Mapping[str, str] | None = None,
                 faults: Sequence[Fault] = ()) -> None:
        super().__init__(root, options)
        self.faults = list(faults)
        self.events: list[tuple[str, str, str]] = []
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("FaultFileIO is per process: build it in the child")

    def _fire(self, kind: str, moment: str, path: str, partial: bytes | None = None) -> None:
        with self._lock:
            self.events.append((kind, moment, path))
            hit = None
            for f in self.faults:
                target = CRASH_POINTS[f.point]
                if f.action == "enospc":  # disk full hits the write itself
                    target = (target[0], "before")
                if target != (kind, moment):
                    continue
                f.seen += 1
                if f.seen >= f.nth and f.fired < f.count:
                    f.fired += 1
                    hit = f
                    break
        if hit is None:
            return
        if hit.action == "exit":
            os._exit(EXIT_CODE)
        with self._translate(path):
            if hit.action == "enospc":
                if partial is not None:  # the disk filled up half way through the file
                    super().write_bytes(path, partial)
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
            raise InjectedFault(errno.ECONNRESET, f"injected fault at {hit.point}", path)

    def write_bytes(self, path: str, data: bytes) -> None:
        kind = path_kind(path)
        self._fire(kind, "before", path, partial=data[: len(data) // 2])
        super().write_bytes(path, data)
        self._fire(kind, "after", path)

    def try_create(self, path: str, data: bytes) -> bool:
        kind = path_kind(path)
        self._fire(kind, "before", path)
        created = super().try_create(path, data)
        if created:
            self._fire(kind, "after", path)
        return created

    def reached(self, point: str, path: str = "<reached>") -> None:
        """Declare that ``point`` was reached by a write this FileIO does not see (the data
        file writer writes local files natively through Arrow)."""
        kind, moment = CRASH_POINTS[point]
        self._fire(kind, moment, path)

    def fired(self) -> list[str]:
        return [f.point for f in self.faults if f.fired]
