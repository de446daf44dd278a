"""Validation of table option values and of option changes (ALTER TABLE).

Mirrors the option checks of ``org.apache.paimon.schema.SchemaValidation`` and
``SchemaManager.checkAlterTableOption`` / ``checkResetTableOption`` (Paimon 0.9).
"""

from __future__ import annotations

from paimon_core.errors import SchemaError
from paimon_core.options import parse_duration_millis, parse_memory_size
from paimon_core.spec.schema import TableSchema

__all__ = ["IMMUTABLE_OPTIONS", "check_alter_option", "validate_options"]

_MAX_INT = 2**31 - 1

#: ``CoreOptions`` annotated ``@Immutable`` in Paimon 0.9: not alterable once the table has data.
IMMUTABLE_OPTIONS = frozenset({
    "bucket-key", "merge-engine", "ignore-delete", "sequence.field",
    "partial-update.remove-record-on-delete", "rowkind.field", "primary-key", "partition",
    "force-lookup",
})

_BOOL_OPTIONS = (
    "dynamic-partition-overwrite", "deletion-vectors.enabled", "ignore-delete",
    "write-only", "partial-update.remove-record-on-delete", "metadata.stats-dense-store",
    "partition.legacy-name", "commit.force-compact", "streaming-read-overwrite",
)
_INT_OPTIONS = {
    "snapshot.num-retained.min": 1, "snapshot.num-retained.max": 1, "snapshot.expire.limit": 1,
    "changelog.num-retained.min": 1, "changelog.num-retained.max": 1,
    "num-sorted-run.compaction-trigger": 1, "num-sorted-run.stop-trigger": 1, "num-levels": 1,
    "manifest.merge-min-count": 1, "commit.max-retries": 0, "compaction.min.file-num": 1,
    "compaction.max.file-num": 1, "compaction.max-size-amplification-percent": 0,
    "compaction.size-ratio": 0, "full-compaction.delta-commits": 1,
    "dynamic-bucket.target-row-num": 1, "file.compression.zstd-level": 1,
}
_DURATION_OPTIONS = (
    "snapshot.time-retained", "changelog.time-retained", "partition.expiration-time",
    "partition.expiration-check-interval", "consumer.expiration-time", "commit.timeout",
)
_MEMORY_OPTIONS = (
    "target-file-size", "write-buffer-size", "manifest.target-file-size",
    "manifest.full-compaction-threshold-size", "page-size",
)
_ENUM_OPTIONS = {
    "merge-engine": ("deduplicate", "partial-update", "aggregation", "first-row"),
    "changelog-producer": ("none", "input", "full-compaction", "lookup"),
    "manifest.format": ("avro", "orc", "parquet"),
}


def validate_options(schema: TableSchema) -> None:
    """Check the values of the options this project (and Java 0.9) interpret; raises
    :class:`SchemaError`. Unknown options are passed through, as Java does."""
    opts = schema.options
    for key, value in opts.items():
        if not isinstance(key, str) or not key.strip() or not isinstance(value, str):
            raise SchemaError(f"option {key!r}={value!r}: keys and values must be strings")
    for key in _BOOL_OPTIONS:
        raw = opts.get(key)
        if raw is not None and raw.strip().lower() not in ("true", "false"):
            raise SchemaError(f"option {key}={raw!r} is not a boolean")
    ints: dict[str, int] = {}
    for key, minimum in _INT_OPTIONS.items():
        raw = opts.get(key)
        if raw is None:
            continue
        try:
            number = int(raw.strip())
        except ValueError as e:
            raise SchemaError(f"option {key}={raw!r} is not an integer") from e
        ints[key] = number
        if not minimum <= number <= _MAX_INT:
            raise SchemaError(f"option {key}={raw!r} must be in {minimum}..{_MAX_INT}")
    for prefix in ("snapshot", "changelog"):
        lo = ints.get(f"{prefix}.num-retained.min", 10)
        hi = ints.get(f"{prefix}.num-retained.max", _MAX_INT)
        if lo > hi:
            raise SchemaError(
                f"option {prefix}.num-retained.min ({lo}) must not be larger than "
                f"{prefix}.num-retained.max ({hi})"
            )
    for key in _DURATION_OPTIONS:
        if key in opts:
            parse_duration_millis(key, opts[key])
    for key in _MEMORY_OPTIONS:
        if key in opts:
            parse_memory_size(key, opts[key])
    for key, allowed in _ENUM_OPTIONS.items():
        raw = opts.get(key)
        if raw is not None and raw.strip().lower() not in allowed:
            raise SchemaError(f"option {key}={raw!r} must be one of {list(allowed)}")
    producer = opts.get("changelog-producer", "none").strip().lower()
    if not schema.primary_keys and producer != "none":
        raise SchemaError("option changelog-producer needs a primary-key table")
    names = set(schema.field_names)
    for key in ("sequence.field", "rowkind.field"):
        raw = opts.get(key)
        if raw is None:
            continue
        missing = [c.strip() for c in raw.split(",") if c.strip() not in names]
        if missing or not raw.strip():
            raise SchemaError(f"option {key}={raw!r} names columns {missing} that do not exist")
    if "partition.expiration-time" in opts and not schema.partition_keys:
        raise SchemaError("option partition.expiration-time needs a partitioned table")


def check_alter_option(key: str, old: str | None, new: str | None) -> None:
    """``SchemaManager.checkAlterTableOption`` / ``checkResetTableOption`` (tables with data)."""
    if key in IMMUTABLE_OPTIONS:
        raise SchemaError(f"option {key!r} cannot be changed once the table has snapshots")
    if key == "bucket":
        if new is None:
            raise SchemaError("option 'bucket' cannot be reset")
        try:
            old_n = -1 if old is None else int(old)
            new_n = int(new)
        except ValueError as e:
            raise SchemaError(f"option bucket={new!r} is not an integer") from e
        if old_n == -1 and new_n != -1:
            raise SchemaError("cannot change bucket when it is -1 (dynamic/unaware bucket)")
        if new_n == -1 and old_n != -1:
            raise SchemaError("cannot change bucket to -1")
