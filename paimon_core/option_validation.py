"""Validation of table option values and of option changes (ALTER TABLE).

Mirrors the option checks of ``org.apache.paimon.schema.SchemaValidation`` and
``SchemaManager.checkAlterTableOption`` / ``checkResetTableOption`` (Paimon 0.9).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from paimon_core.errors import ImmutableOptionError, PaimonError, SchemaError, UnsupportedError
from paimon_core.options import CoreOptions, parse_duration_millis, parse_memory_size
from paimon_core.spec.option_enums import (
    DYNAMIC_BUCKET,
    ChangelogProducer,
    MergeEngine,
    parse_bucket,
)
from paimon_core.spec.schema import TableSchema

__all__ = [
    "FIELD_OPTION_SUFFIXES",
    "IMMUTABLE_OPTIONS",
    "check_alter_option",
    "check_deletion_vectors",
    "checked_overlay",
    "overlaid",
    "refuse_unapplied_format_options",
    "validate_options",
]

_MAX_INT = 2**31 - 1
_O = CoreOptions

#: ``CoreOptions`` annotated ``@Immutable`` in Paimon 0.9: not alterable once the table has data.
IMMUTABLE_OPTIONS = frozenset({
    _O.BUCKET_KEY, _O.MERGE_ENGINE, _O.IGNORE_DELETE, _O.SEQUENCE_FIELD,
    _O.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE, _O.ROWKIND_FIELD, _O.PRIMARY_KEY, _O.PARTITION,
    _O.FORCE_LOOKUP,
})

#: what a copy of a table (one job's dynamic options) cannot change: the immutable options and
#: the bucket count (a write's files must have the table's, as its commit checks)
_FIXED_FOR_COPY = IMMUTABLE_OPTIONS | {_O.BUCKET}

_BOOL_OPTIONS = (
    _O.DYNAMIC_PARTITION_OVERWRITE, _O.DELETION_VECTORS_ENABLED, _O.IGNORE_DELETE,
    _O.WRITE_ONLY, _O.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE, _O.METADATA_STATS_DENSE_STORE,
    _O.PARTITION_LEGACY_NAME, _O.COMMIT_FORCE_COMPACT, _O.STREAMING_READ_OVERWRITE,
)
_INT_OPTIONS = {
    _O.SNAPSHOT_NUM_RETAINED_MIN: 1, _O.SNAPSHOT_NUM_RETAINED_MAX: 1,
    _O.SNAPSHOT_EXPIRE_LIMIT: 1, _O.CHANGELOG_NUM_RETAINED_MIN: 1,
    _O.CHANGELOG_NUM_RETAINED_MAX: 1, _O.NUM_SORTED_RUNS_COMPACTION_TRIGGER: 1,
    _O.NUM_SORTED_RUNS_STOP_TRIGGER: 1, _O.NUM_LEVELS: 1, _O.MANIFEST_MERGE_MIN_COUNT: 1,
    _O.COMMIT_MAX_RETRIES: 0, _O.COMPACTION_MIN_FILE_NUM: 1, _O.COMPACTION_MAX_FILE_NUM: 1,
    _O.COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT: 0, _O.COMPACTION_SIZE_RATIO: 0,
    _O.FULL_COMPACTION_DELTA_COMMITS: 1, _O.DYNAMIC_BUCKET_TARGET_ROW_NUM: 1,
    _O.DYNAMIC_BUCKET_INITIAL_BUCKETS: 1, _O.DYNAMIC_BUCKET_ASSIGNER_PARALLELISM: 1,
    _O.FILE_COMPRESSION_ZSTD_LEVEL: 1, _O.MERGE_BUFFER_ROWS: 1,
}
_DURATION_OPTIONS = (
    _O.SNAPSHOT_TIME_RETAINED, _O.CHANGELOG_TIME_RETAINED, _O.PARTITION_EXPIRATION_TIME,
    _O.PARTITION_EXPIRATION_CHECK_INTERVAL, _O.CONSUMER_EXPIRATION_TIME, _O.COMMIT_TIMEOUT,
)
_MEMORY_OPTIONS = (
    _O.TARGET_FILE_SIZE, _O.WRITE_BUFFER_SIZE, _O.MANIFEST_TARGET_FILE_SIZE,
    _O.MANIFEST_FULL_COMPACTION_FILE_SIZE, _O.PAGE_SIZE,
)
_ENUM_OPTIONS: dict[str, tuple[str, ...]] = {
    _O.MERGE_ENGINE: tuple(e.value for e in MergeEngine),
    _O.CHANGELOG_PRODUCER: tuple(e.value for e in ChangelogProducer),
    _O.MANIFEST_FORMAT: ("avro", "orc", "parquet"),
}


def refuse_unapplied_format_options(opts: CoreOptions, prefix: str, known: frozenset[str],
                                    writer: str) -> None:
    """Refuse a ``prefix`` option (a file format's own, e.g. ``orc.``) that the ``writer``
    does not apply (``known``: those it applies).

    Raises:
        UnsupportedError: naming the first such option and its value.
    """
    unknown = sorted(k for k in opts.raw if k.startswith(prefix) and k not in known)
    if unknown:
        raise UnsupportedError(
            f"option {unknown[0]}={opts.raw[unknown[0]]!r} is not applied by this {writer} "
            f"writer (it applies {', '.join(sorted(known))})")


def check_deletion_vectors(changelog_producer: str, merge_engine: str, *,
                           primary_key: bool = True,
                           error: type[PaimonError] = UnsupportedError) -> None:
    """Refuse what Paimon 0.9 refuses with ``deletion-vectors.enabled=true``
    (``SchemaValidation.validateForDeletionVectors``), naming the option: a changelog producer
    other than none/input/lookup, and ``merge-engine=first-row`` on a primary-key table.

    Raises:
        ``error``: at CREATE / ALTER a :class:`SchemaError`; a writer or a compaction of a
            table stored so raises :class:`UnsupportedError`.
    """
    producer = changelog_producer.strip().lower()
    if producer not in (ChangelogProducer.NONE.value, ChangelogProducer.INPUT.value,
                        ChangelogProducer.LOOKUP.value):
        raise error(
            f"deletion-vectors.enabled=true with changelog-producer={producer}: deletion "
            "vectors mode is only supported for none/input/lookup changelog producer "
            "(Paimon 0.9 refuses it too)")
    if primary_key and merge_engine.strip().lower() == MergeEngine.FIRST_ROW.value:
        raise error(
            "deletion-vectors.enabled=true with merge-engine=first-row: first row merge engine "
            "does not need deletion vectors because there is no deletion of old data in this "
            "merge engine (Paimon 0.9 refuses it too)")


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
    for min_key, max_key in ((_O.SNAPSHOT_NUM_RETAINED_MIN, _O.SNAPSHOT_NUM_RETAINED_MAX),
                             (_O.CHANGELOG_NUM_RETAINED_MIN, _O.CHANGELOG_NUM_RETAINED_MAX)):
        lo = ints.get(min_key, 10)
        hi = ints.get(max_key, _MAX_INT)
        if lo > hi:
            raise SchemaError(
                f"option {min_key} ({lo}) must not be larger than {max_key} ({hi})"
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
    producer = opts.get(_O.CHANGELOG_PRODUCER, ChangelogProducer.NONE).strip().lower()
    if not schema.primary_keys and producer != ChangelogProducer.NONE:
        raise SchemaError("option changelog-producer needs a primary-key table")
    if (opts.get(_O.STREAMING_READ_OVERWRITE) or "").strip().lower() == "true":
        if not schema.primary_keys:
            raise SchemaError("option streaming-read-overwrite=true needs a primary-key table")
        if producer in (ChangelogProducer.FULL_COMPACTION, ChangelogProducer.LOOKUP):
            raise SchemaError(
                f"option streaming-read-overwrite=true cannot be used with "
                f"changelog-producer={producer}: it would read duplicated changes"
            )
    if (opts.get(_O.DELETION_VECTORS_ENABLED) or "").strip().lower() == "true":
        check_deletion_vectors(producer, opts.get(_O.MERGE_ENGINE, MergeEngine.DEDUPLICATE.value),
                               primary_key=bool(schema.primary_keys), error=SchemaError)
    names = set(schema.field_names)
    for key in (_O.SEQUENCE_FIELD, _O.ROWKIND_FIELD):
        raw = opts.get(key)
        if raw is None:
            continue
        missing = [c.strip() for c in raw.split(",") if c.strip() not in names]
        if missing or not raw.strip():
            raise SchemaError(f"option {key}={raw!r} names columns {missing} that do not exist")
    if _O.PARTITION_EXPIRATION_TIME in opts and not schema.partition_keys:
        raise SchemaError("option partition.expiration-time needs a partitioned table")
    _check_field_options(schema)


#: the per-field options (``fields.<name>.<suffix>``) this project interprets
FIELD_OPTION_SUFFIXES = ("aggregate-function", "ignore-retract", "list-agg-delimiter",
                         "sequence-group", "stats-mode")
_FIELDS = "fields."


def _check_field_options(schema: TableSchema) -> None:
    """``fields.<name>.<suffix>`` names columns of ``schema`` (a sequence group's key and value
    list several, comma-separated) and a suffix this project interprets (Java's
    ``validateFieldsPrefix`` / ``validateSequenceGroup``); raises :class:`SchemaError` naming
    the option and the field."""
    names = set(schema.field_names)
    for key, value in schema.options.items():
        if not key.startswith(_FIELDS) or key == _O.FIELDS_DEFAULT_AGG_FUNC:
            continue
        field, _, suffix = key[len(_FIELDS):].rpartition(".")
        if not field or suffix not in FIELD_OPTION_SUFFIXES:
            raise SchemaError(
                f"option {key}={value!r}: not a per-field option this table can apply "
                f"(fields.<column>.<{'|'.join(FIELD_OPTION_SUFFIXES)}>)")
        fields = field.split(",") if suffix == "sequence-group" else [field]
        if suffix == "sequence-group":
            fields += value.split(",")
        missing = [f for f in fields if f.strip() not in names]
        if missing:
            raise SchemaError(f"option {key}={value!r}: field {missing[0].strip()!r} is not a "
                              f"column of the table (columns: {', '.join(schema.field_names)})")


def check_alter_option(key: str, old: str | None, new: str | None) -> None:
    """``SchemaManager.checkAlterTableOption`` / ``checkResetTableOption`` (tables with data)."""
    if key in IMMUTABLE_OPTIONS:
        raise SchemaError(f"option {key!r} cannot be changed once the table has snapshots")
    if key == _O.BUCKET:
        if new is None:
            raise SchemaError("option 'bucket' cannot be reset")
        old_n = DYNAMIC_BUCKET if old is None else parse_bucket(old)
        new_n = parse_bucket(new)
        if old_n == DYNAMIC_BUCKET and new_n != DYNAMIC_BUCKET:
            raise SchemaError("cannot change bucket when it is -1 (dynamic/unaware bucket)")
        if new_n == DYNAMIC_BUCKET and old_n != DYNAMIC_BUCKET:
            raise SchemaError("cannot change bucket to -1")


def overlaid(schema: TableSchema, overlay: Mapping[str, str]) -> TableSchema:
    """``schema`` with ``overlay`` laid over its options, unchecked (see
    :func:`checked_overlay`); ``schema`` itself when that changes nothing."""
    if not overlay:
        return schema
    merged = {**schema.options, **overlay}
    return schema if merged == schema.options else replace(schema, options=merged)


def _table_value(schema: TableSchema, key: str) -> str | None:
    if key == _O.PRIMARY_KEY:
        return ",".join(schema.primary_keys) or None
    if key == _O.PARTITION:
        return ",".join(schema.partition_keys) or None
    if key == _O.BUCKET:
        return str(schema.num_buckets)
    return schema.options.get(key)


def _unchanged(schema: TableSchema, key: str, value: str) -> bool:
    if key in (_O.PRIMARY_KEY, _O.PARTITION):
        keys = schema.primary_keys if key == _O.PRIMARY_KEY else schema.partition_keys
        return [c.strip() for c in value.split(",") if c.strip()] == list(keys)
    if key == _O.BUCKET:
        try:
            return parse_bucket(value) == schema.num_buckets
        except SchemaError:
            return False
    return value == schema.options.get(key)


def checked_overlay(schema: TableSchema, overlay: Mapping[str, str],
                    refused: str = "cannot be overlaid for one job") -> dict[str, str]:
    """The entries of ``overlay`` (one job's dynamic options, Java's ``FileStoreTable.copy``)
    that change ``schema``'s options, checked as Java's ``checkImmutability`` +
    ``SchemaValidation`` do: an option fixed for the table's life given another value raises
    :class:`ImmutableOptionError` (``primary-key`` / ``partition`` / ``bucket`` equal to the
    table's are no change); the merged options are validated (:func:`validate_options`).
    ``refused`` words the error for the caller (a component's declared options)."""
    for key, value in overlay.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise SchemaError(f"option {key!r}={value!r}: keys and values must be strings")
    changed = {k: v for k, v in overlay.items() if not _unchanged(schema, k, v)}
    for key, value in changed.items():
        if key in _FIXED_FOR_COPY:
            raise ImmutableOptionError(key, _table_value(schema, key), value, refused)
    validate_options(overlaid(schema, changed))
    return changed
