"""Enumerated table-option values (the enums of ``org.apache.paimon.CoreOptions``); pure.

Each member's value is Paimon's option string, so ``MergeEngine.FIRST_ROW == "first-row"``
holds and the members print as the option text. The option keys and their typed accessors are
in :mod:`paimon_core.options`.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ChangelogProducer", "MergeEngine", "StartupMode"]


class MergeEngine(StrEnum):
    """``merge-engine`` (``CoreOptions.MergeEngine``); default ``deduplicate``."""

    DEDUPLICATE = "deduplicate"
    PARTIAL_UPDATE = "partial-update"
    AGGREGATE = "aggregation"
    FIRST_ROW = "first-row"


class ChangelogProducer(StrEnum):
    """``changelog-producer`` (``CoreOptions.ChangelogProducer``); default ``none``."""

    NONE = "none"
    INPUT = "input"
    FULL_COMPACTION = "full-compaction"
    LOOKUP = "lookup"


class StartupMode(StrEnum):
    """``scan.mode`` (``CoreOptions.StartupMode``, Paimon 0.9); default ``default``.

    ``full`` is the deprecated alias of ``latest-full``.
    """

    DEFAULT = "default"
    FULL = "full"
    LATEST_FULL = "latest-full"
    LATEST = "latest"
    FROM_SNAPSHOT = "from-snapshot"
    FROM_SNAPSHOT_FULL = "from-snapshot-full"
    FROM_TIMESTAMP = "from-timestamp"
    COMPACTED_FULL = "compacted-full"
    FROM_FILE_CREATION_TIME = "from-file-creation-time"
    INCREMENTAL = "incremental"
