"""Folding ADD/DELETE manifest entries into the live file set (pure, no IO).

Mirrors ``org.apache.paimon.manifest.FileEntry.mergeEntries``: entries are applied in list order
(base manifest list, then delta); an ADD of an identifier already present is corrupt metadata;
a DELETE removes its ADD, or is remembered when the ADD is not (yet) seen.
"""

from __future__ import annotations

from collections.abc import Iterable

from paimon_core.errors import CorruptMetadataError
from paimon_core.spec.manifest import FileKind, ManifestEntry


def merge_entries(
    entries: Iterable[ManifestEntry], *, source: str = "<manifests>"
) -> dict[tuple[object, ...], ManifestEntry]:
    """Fold entries; returns identifier -> surviving entry (ADDs, plus unmatched DELETEs)."""
    live: dict[tuple[object, ...], ManifestEntry] = {}
    for entry in entries:
        ident = entry.identifier()
        if entry.kind is FileKind.ADD:
            if ident in live:
                raise CorruptMetadataError(
                    source,
                    f"file {entry.file.file_name} (bucket {entry.bucket}, level "
                    f"{entry.file.level}) is added twice",
                )
            live[ident] = entry
        else:
            if ident in live:
                del live[ident]
            else:
                live[ident] = entry
    return live


def live_files(
    entries: Iterable[ManifestEntry], *, source: str = "<manifests>"
) -> list[ManifestEntry]:
    """The ADD entries that survive folding, in first-seen order."""
    return [e for e in merge_entries(entries, source=source).values() if e.kind is FileKind.ADD]
