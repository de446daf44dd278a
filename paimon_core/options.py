"""Table options (``org.apache.paimon.CoreOptions``): every key declared once, with typed
accessors that parse on read and carry Paimon 0.9's defaults.

The keys are class attributes of :class:`CoreOptions` (``CoreOptions.MERGE_ENGINE ==
"merge-engine"``), as Java's ``CoreOptions.MERGE_ENGINE`` and paimon-rust's
``core_options.rs``; the enumerated values are in :mod:`paimon_core.spec.option_enums`.
Validation of a whole option set (create / alter table) is
:mod:`paimon_core.option_validation`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from paimon_core.errors import SchemaError, UnsupportedError
from paimon_core.spec.option_enums import ChangelogProducer, MergeEngine, StartupMode

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"
_MIB = 1024 * 1024
#: ``Integer.MAX_VALUE``: the default of ``snapshot.num-retained.max``.
INT_MAX = 2**31 - 1
_HOUR_MILLIS = 3_600_000


def parse_bool(key: str, raw: str) -> bool:
    """``true`` / ``false`` (any case) -> bool; anything else is a :class:`SchemaError`."""
    v = raw.strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise SchemaError(f"option {key}={raw!r} is not a boolean")


_parse_bool = parse_bool


def parse_memory_size(key: str, raw: str) -> int:
    """``256 mb``, ``8MiB``, ``1024`` (bytes) -> bytes."""
    text = raw.strip().lower().replace(" ", "")
    units = {
        "b": 1,
        "k": 1024,
        "kb": 1024,
        "kib": 1024,
        "m": 1024**2,
        "mb": 1024**2,
        "mib": 1024**2,
        "g": 1024**3,
        "gb": 1024**3,
        "gib": 1024**3,
        "t": 1024**4,
        "tb": 1024**4,
        "tib": 1024**4,
        "bytes": 1,
    }
    num = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(num) :] or "b"
    if not num or unit not in units:
        raise SchemaError(f"option {key}={raw!r} is not a memory size")
    try:
        return int(float(num) * units[unit])
    except ValueError as e:
        raise SchemaError(f"option {key}={raw!r} is not a memory size") from e


def parse_duration_millis(key: str, raw: str) -> int:
    """``1 h``, ``30min``, ``10 s``, ``500ms``, ``2 d``, plain number = millis."""
    text = raw.strip().lower().replace(" ", "")
    units = {
        "ms": 1,
        "milli": 1,
        "millis": 1,
        "millisecond": 1,
        "milliseconds": 1,
        # Java's TimeUtils also takes sub-millisecond units (rounded down to millis here)
        "us": 0.001,
        "µs": 0.001,
        "micro": 0.001,
        "micros": 0.001,
        "microsecond": 0.001,
        "microseconds": 0.001,
        "ns": 0.000001,
        "nano": 0.000001,
        "nanos": 0.000001,
        "nanosecond": 0.000001,
        "nanoseconds": 0.000001,
        "s": 1000,
        "sec": 1000,
        "secs": 1000,
        "second": 1000,
        "seconds": 1000,
        "min": 60000,
        "m": 60000,
        "mins": 60000,
        "minute": 60000,
        "minutes": 60000,
        "h": 3600000,
        "hour": 3600000,
        "hours": 3600000,
        "d": 86400000,
        "day": 86400000,
        "days": 86400000,
    }
    num = text.rstrip("abcdefghijklmnopqrstuvwxyzµ")
    unit = text[len(num) :] or "ms"
    if not num or unit not in units:
        raise SchemaError(f"option {key}={raw!r} is not a duration")
    try:
        return int(float(num) * units[unit])
    except ValueError as e:
        raise SchemaError(f"option {key}={raw!r} is not a duration") from e


@dataclass(frozen=True)
class CoreOptions:
    """The options of one table (or of a scan: table options plus dynamic ones).

    Attributes:
        raw: the option map, verbatim.
    """

    raw: Mapping[str, str]

    # ---- keys (``CoreOptions.<NAME>.key()``), grouped as in Java
    # table layout
    PRIMARY_KEY: ClassVar[str] = "primary-key"
    PARTITION: ClassVar[str] = "partition"
    BUCKET: ClassVar[str] = "bucket"
    BUCKET_KEY: ClassVar[str] = "bucket-key"
    BUCKET_FUNCTION_TYPE: ClassVar[str] = "bucket-function.type"
    DYNAMIC_BUCKET_TARGET_ROW_NUM: ClassVar[str] = "dynamic-bucket.target-row-num"
    DYNAMIC_BUCKET_INITIAL_BUCKETS: ClassVar[str] = "dynamic-bucket.initial-buckets"
    DYNAMIC_BUCKET_ASSIGNER_PARALLELISM: ClassVar[str] = "dynamic-bucket.assigner-parallelism"
    FILE_FORMAT: ClassVar[str] = "file.format"
    FILE_COMPRESSION: ClassVar[str] = "file.compression"
    FILE_COMPRESSION_ZSTD_LEVEL: ClassVar[str] = "file.compression.zstd-level"
    PARTITION_DEFAULT_NAME: ClassVar[str] = "partition.default-name"
    PARTITION_LEGACY_NAME: ClassVar[str] = "partition.legacy-name"
    PARTITION_EXPIRATION_TIME: ClassVar[str] = "partition.expiration-time"
    PARTITION_EXPIRATION_CHECK_INTERVAL: ClassVar[str] = "partition.expiration-check-interval"
    # merge
    MERGE_ENGINE: ClassVar[str] = "merge-engine"
    SEQUENCE_FIELD: ClassVar[str] = "sequence.field"
    ROWKIND_FIELD: ClassVar[str] = "rowkind.field"
    IGNORE_DELETE: ClassVar[str] = "ignore-delete"
    FIRST_ROW_IGNORE_DELETE: ClassVar[str] = "first-row.ignore-delete"
    DEDUPLICATE_IGNORE_DELETE: ClassVar[str] = "deduplicate.ignore-delete"
    PARTIAL_UPDATE_IGNORE_DELETE: ClassVar[str] = "partial-update.ignore-delete"
    PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE: ClassVar[str] = (
        "partial-update.remove-record-on-delete")
    FIELDS_DEFAULT_AGG_FUNC: ClassVar[str] = "fields.default-aggregate-function"
    CHANGELOG_PRODUCER: ClassVar[str] = "changelog-producer"
    CHANGELOG_PRODUCER_ROW_DEDUPLICATE: ClassVar[str] = "changelog-producer.row-deduplicate"
    DELETION_VECTORS_ENABLED: ClassVar[str] = "deletion-vectors.enabled"
    FORCE_LOOKUP: ClassVar[str] = "force-lookup"
    LOOKUP_WAIT: ClassVar[str] = "lookup-wait"  # fallback: changelog-producer.lookup-wait
    # write and compaction
    WRITE_ONLY: ClassVar[str] = "write-only"
    TARGET_FILE_SIZE: ClassVar[str] = "target-file-size"
    WRITE_BUFFER_SIZE: ClassVar[str] = "write-buffer-size"
    PAGE_SIZE: ClassVar[str] = "page-size"
    NUM_SORTED_RUNS_COMPACTION_TRIGGER: ClassVar[str] = "num-sorted-run.compaction-trigger"
    NUM_SORTED_RUNS_STOP_TRIGGER: ClassVar[str] = "num-sorted-run.stop-trigger"
    NUM_LEVELS: ClassVar[str] = "num-levels"
    COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT: ClassVar[str] = (
        "compaction.max-size-amplification-percent")
    COMPACTION_SIZE_RATIO: ClassVar[str] = "compaction.size-ratio"
    COMPACTION_MIN_FILE_NUM: ClassVar[str] = "compaction.min.file-num"
    COMPACTION_MAX_FILE_NUM: ClassVar[str] = "compaction.max.file-num"
    COMPACTION_EARLY_MAX_FILE_NUM: ClassVar[str] = "compaction.early-max.file-num"
    FULL_COMPACTION_DELTA_COMMITS: ClassVar[str] = "full-compaction.delta-commits"
    METADATA_STATS_MODE: ClassVar[str] = "metadata.stats-mode"
    METADATA_STATS_DENSE_STORE: ClassVar[str] = "metadata.stats-dense-store"
    DYNAMIC_PARTITION_OVERWRITE: ClassVar[str] = "dynamic-partition-overwrite"
    # manifests and commit
    MANIFEST_FORMAT: ClassVar[str] = "manifest.format"
    MANIFEST_COMPRESSION: ClassVar[str] = "manifest.compression"
    MANIFEST_TARGET_FILE_SIZE: ClassVar[str] = "manifest.target-file-size"
    MANIFEST_MERGE_MIN_COUNT: ClassVar[str] = "manifest.merge-min-count"
    MANIFEST_FULL_COMPACTION_FILE_SIZE: ClassVar[str] = "manifest.full-compaction-threshold-size"
    COMMIT_MAX_RETRIES: ClassVar[str] = "commit.max-retries"
    COMMIT_TIMEOUT: ClassVar[str] = "commit.timeout"
    COMMIT_FORCE_COMPACT: ClassVar[str] = "commit.force-compact"
    # expiry
    SNAPSHOT_NUM_RETAINED_MIN: ClassVar[str] = "snapshot.num-retained.min"
    SNAPSHOT_NUM_RETAINED_MAX: ClassVar[str] = "snapshot.num-retained.max"
    SNAPSHOT_TIME_RETAINED: ClassVar[str] = "snapshot.time-retained"
    SNAPSHOT_EXPIRE_LIMIT: ClassVar[str] = "snapshot.expire.limit"
    CHANGELOG_NUM_RETAINED_MIN: ClassVar[str] = "changelog.num-retained.min"
    CHANGELOG_NUM_RETAINED_MAX: ClassVar[str] = "changelog.num-retained.max"
    CHANGELOG_TIME_RETAINED: ClassVar[str] = "changelog.time-retained"
    CONSUMER_EXPIRATION_TIME: ClassVar[str] = "consumer.expiration-time"
    # scans
    SCAN_MODE: ClassVar[str] = "scan.mode"
    SCAN_SNAPSHOT_ID: ClassVar[str] = "scan.snapshot-id"
    SCAN_TIMESTAMP_MILLIS: ClassVar[str] = "scan.timestamp-millis"
    SCAN_TIMESTAMP: ClassVar[str] = "scan.timestamp"
    SCAN_TAG_NAME: ClassVar[str] = "scan.tag-name"
    SCAN_WATERMARK: ClassVar[str] = "scan.watermark"
    SCAN_VERSION: ClassVar[str] = "scan.version"
    SCAN_FILE_CREATION_TIME_MILLIS: ClassVar[str] = "scan.file-creation-time-millis"
    INCREMENTAL_BETWEEN: ClassVar[str] = "incremental-between"
    INCREMENTAL_BETWEEN_TIMESTAMP: ClassVar[str] = "incremental-between-timestamp"
    INCREMENTAL_BETWEEN_SCAN_MODE: ClassVar[str] = "incremental-between-scan-mode"
    CONSUMER_ID: ClassVar[str] = "consumer-id"
    CONSUMER_IGNORE_PROGRESS: ClassVar[str] = "consumer.ignore-progress"
    STREAMING_READ_OVERWRITE: ClassVar[str] = "streaming-read-overwrite"
    # ours (no Java counterpart): rows read per sorted run and step of the streaming merge
    MERGE_BUFFER_ROWS: ClassVar[str] = "paimon-core.merge.buffer-rows"

    @classmethod
    def declared_keys(cls) -> frozenset[str]:
        """Every option key declared above (the ``CoreOptions.<NAME>`` constants)."""
        return frozenset(v for k, v in vars(cls).items() if k.isupper() and isinstance(v, str))

    # ---- generic access (keys not declared above, e.g. ``fields.<name>.*``)
    def get(self, key: str, default: str | None = None) -> str | None:
        return self.raw.get(key, default)

    def get_int(self, key: str, default: int, *, minimum: int | None = None,
                bits: int = 32) -> int:
        """A Java ``int`` option (``bits=64``: a ``long``); unset is ``default``."""
        raw = self.raw.get(key)
        if raw is None:
            return default
        try:
            value = int(raw.strip())
        except ValueError as e:
            raise SchemaError(f"option {key}={raw!r} is not an integer") from e
        if minimum is not None and value < minimum:
            raise SchemaError(f"option {key}={raw!r} must be >= {minimum}")
        if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
            raise SchemaError(f"option {key}={raw!r} is out of the {bits}-bit integer range")
        return value

    def get_bool(self, key: str, default: bool, *fallback_keys: str) -> bool:
        for k in (key, *fallback_keys):
            raw = self.raw.get(k)
            if raw is not None:
                return _parse_bool(k, raw)
        return default

    def get_memory_size(self, key: str, default: int) -> int:
        """A memory size in bytes; unset or empty is ``default``."""
        raw = self.raw.get(key)
        return parse_memory_size(key, raw) if raw else default

    def get_duration_millis(self, key: str, default: int | None) -> int | None:
        """A duration in milliseconds; unset is ``default``."""
        raw = self.raw.get(key)
        return default if raw is None else parse_duration_millis(key, raw)

    # ---- table layout
    @property
    def partition_default_name(self) -> str:
        return self.raw.get(self.PARTITION_DEFAULT_NAME, DEFAULT_PARTITION_NAME)

    @property
    def partition_legacy_name(self) -> bool:
        """``partition.legacy-name`` (default true)."""
        return self.get_bool(self.PARTITION_LEGACY_NAME, True)

    @property
    def bucket_function_type(self) -> str:
        """``bucket-function.type``, lower case (default ``default``)."""
        return (self.raw.get(self.BUCKET_FUNCTION_TYPE) or "default").strip().lower()

    @property
    def file_compression(self) -> str:
        """``file.compression``, lower case (default ``zstd``)."""
        return (self.raw.get(self.FILE_COMPRESSION) or "zstd").strip().lower()

    @property
    def file_compression_zstd_level(self) -> int:
        """``file.compression.zstd-level`` (default 1)."""
        return self.get_int(self.FILE_COMPRESSION_ZSTD_LEVEL, 1)

    # ---- merge
    @property
    def merge_engine(self) -> MergeEngine:
        """``merge-engine`` (default ``deduplicate``).

        Raises:
            UnsupportedError: a value that is not a :class:`MergeEngine`.
        """
        raw = self.raw.get(self.MERGE_ENGINE, MergeEngine.DEDUPLICATE).strip().lower()
        try:
            return MergeEngine(raw)
        except ValueError as e:
            raise UnsupportedError(f"merge-engine {raw!r} is not supported") from e

    @property
    def changelog_producer(self) -> ChangelogProducer:
        """``changelog-producer`` (default ``none``).

        Raises:
            SchemaError: a value that is not a :class:`ChangelogProducer`.
        """
        raw = self.raw.get(self.CHANGELOG_PRODUCER, ChangelogProducer.NONE).strip().lower()
        try:
            return ChangelogProducer(raw)
        except ValueError as e:
            raise SchemaError(f"changelog-producer={raw!r} is not one of "
                              f"{', '.join(ChangelogProducer)}") from e

    @property
    def changelog_producer_row_deduplicate(self) -> bool:
        return self.get_bool(self.CHANGELOG_PRODUCER_ROW_DEDUPLICATE, False)

    @property
    def deletion_vectors_enabled(self) -> bool:
        return self.get_bool(self.DELETION_VECTORS_ENABLED, False)

    @property
    def force_lookup(self) -> bool:
        return self.get_bool(self.FORCE_LOOKUP, False)

    @property
    def lookup_wait(self) -> bool:
        """``lookup-wait``: see :attr:`CompactOptions.prepare_commit_wait_compaction`."""
        return self.get_bool(self.LOOKUP_WAIT, True, "changelog-producer.lookup-wait")

    @property
    def sequence_fields(self) -> tuple[str, ...]:
        raw = self.raw.get(self.SEQUENCE_FIELD)
        return tuple(s.strip() for s in raw.split(",") if s.strip()) if raw else ()

    @property
    def rowkind_field(self) -> str | None:
        return self.raw.get(self.ROWKIND_FIELD)

    def ignore_delete(self) -> bool:
        return self.get_bool(self.IGNORE_DELETE, False, self.FIRST_ROW_IGNORE_DELETE,
                             self.DEDUPLICATE_IGNORE_DELETE, self.PARTIAL_UPDATE_IGNORE_DELETE)

    # ---- merge-engine options (``CoreOptions.fieldAggFunc`` & co. and the sequence groups of
    # ``PartialUpdateMergeFunction``): values are taken verbatim, as Java does
    def field_aggregate_function(self, field: str) -> str | None:
        """``fields.<field>.aggregate-function``, else ``fields.default-aggregate-function``."""
        own = self.raw.get(f"fields.{field}.aggregate-function")
        return own if own is not None else self.raw.get(self.FIELDS_DEFAULT_AGG_FUNC)

    def field_ignore_retract(self, field: str) -> bool:
        """``fields.<field>.ignore-retract``."""
        return self.get_bool(f"fields.{field}.ignore-retract", False)

    def field_list_agg_delimiter(self, field: str) -> str:
        """``fields.<field>.list-agg-delimiter`` (default ``,``)."""
        return self.raw.get(f"fields.{field}.list-agg-delimiter", ",")

    @property
    def partial_update_remove_record_on_delete(self) -> bool:
        return self.get_bool(self.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE, False)

    def sequence_groups(self) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
        """``fields.<s1,s2>.sequence-group = f1,f2``: (sequence fields, grouped fields) pairs,
        in option-key order."""
        out = []
        for key in sorted(self.raw):
            if key.startswith("fields.") and key.endswith(".sequence-group"):
                seq = tuple(key[len("fields.") : -len(".sequence-group")].split(","))
                out.append((seq, tuple(self.raw[key].split(","))))
        return out

    # ---- write and compaction
    @property
    def write_only(self) -> bool:
        return self.get_bool(self.WRITE_ONLY, False)

    def target_file_size(self, primary_key: bool) -> int:
        """``target-file-size`` in bytes (default 128 MiB for primary-key tables, 256 MiB for
        append tables; ``CoreOptions.targetFileSize(hasPrimaryKey)``)."""
        return self.get_memory_size(self.TARGET_FILE_SIZE, 128 * _MIB if primary_key
                                    else 256 * _MIB)

    @property
    def write_buffer_size(self) -> int:
        """``write-buffer-size`` in bytes (default 256 MiB)."""
        return self.get_memory_size(self.WRITE_BUFFER_SIZE, 256 * _MIB)

    @property
    def merge_buffer_rows(self) -> int:
        """``paimon-core.merge.buffer-rows`` (ours, >= 1, default 131072): how many rows the
        streaming merge-read (``TableRead.to_batches``, incremental reads, compaction) buffers
        per *section*, shared evenly by the section's sorted runs (each run reads at least
        ``min(buffer-rows, 4096)`` rows at a time), so memory is bounded by it whatever the
        bucket's size and its number of overlapping runs. Java reads ``read.batch-size``
        (1024) rows per columnar batch and merges record by record; a vectorised merge pays
        a fixed cost per step, which steps of tens of thousands of rows make negligible
        (about 20 MB per section for rows of 150 bytes)."""
        return self.get_int(self.MERGE_BUFFER_ROWS, 131072, minimum=1)

    @property
    def dynamic_bucket_target_row_num(self) -> int:
        """``dynamic-bucket.target-row-num`` (>= 1, default 2,000,000): keys per bucket."""
        return self.get_int(self.DYNAMIC_BUCKET_TARGET_ROW_NUM, 2_000_000, minimum=1)

    @property
    def dynamic_bucket_initial_buckets(self) -> int | None:
        """``dynamic-bucket.initial-buckets`` (>= 1, no default)."""
        if self.raw.get(self.DYNAMIC_BUCKET_INITIAL_BUCKETS) is None:
            return None
        return self.get_int(self.DYNAMIC_BUCKET_INITIAL_BUCKETS, 1, minimum=1)

    @property
    def dynamic_bucket_assigner_parallelism(self) -> int | None:
        """``dynamic-bucket.assigner-parallelism`` (>= 1, no default)."""
        if self.raw.get(self.DYNAMIC_BUCKET_ASSIGNER_PARALLELISM) is None:
            return None
        return self.get_int(self.DYNAMIC_BUCKET_ASSIGNER_PARALLELISM, 1, minimum=1)

    @property
    def num_sorted_runs_compaction_trigger(self) -> int:
        """``num-sorted-run.compaction-trigger`` (>= 1, default 5)."""
        return self.get_int(self.NUM_SORTED_RUNS_COMPACTION_TRIGGER, 5, minimum=1)

    @property
    def num_sorted_runs_stop_trigger(self) -> int:
        """``num-sorted-run.stop-trigger``: sorted runs of a bucket beyond which a writer
        stops to compact (Java: no default, then the compaction trigger + 3; never below
        the compaction trigger, ``CoreOptions.numSortedRunStopTrigger``)."""
        trigger = self.num_sorted_runs_compaction_trigger
        if self.raw.get(self.NUM_SORTED_RUNS_STOP_TRIGGER) is None:
            return trigger + 3
        return max(trigger, self.get_int(self.NUM_SORTED_RUNS_STOP_TRIGGER, trigger + 3,
                                         minimum=1))

    @property
    def num_levels(self) -> int:
        """``num-levels`` (>= 1), by default the compaction trigger + 1
        (``CoreOptions.numLevels``). A merge tree needs two levels at least: that is checked
        where one is built (:class:`paimon_core.compact.options.CompactOptions`,
        ``Levels``), as in Java."""
        return self.get_int(self.NUM_LEVELS, self.num_sorted_runs_compaction_trigger + 1,
                            minimum=1)

    @property
    def compaction_max_size_amplification_percent(self) -> int:
        return self.get_int(self.COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT, 200, minimum=0)

    @property
    def compaction_size_ratio(self) -> int:
        return self.get_int(self.COMPACTION_SIZE_RATIO, 1, minimum=0)

    @property
    def compaction_min_file_num(self) -> int:
        return self.get_int(self.COMPACTION_MIN_FILE_NUM, 5, minimum=1)

    def compaction_max_file_num(self, num_buckets: int) -> int:
        """``compaction.max.file-num`` (fallback key ``compaction.early-max.file-num``):
        default 50 for unaware-bucket tables (``bucket = -1``), else 5."""
        key = self.COMPACTION_MAX_FILE_NUM
        fallback = self.COMPACTION_EARLY_MAX_FILE_NUM
        if self.raw.get(key) is None and self.raw.get(fallback) is not None:
            key = fallback
        return self.get_int(key, 50 if num_buckets == -1 else 5, minimum=1)

    @property
    def full_compaction_delta_commits(self) -> int | None:
        """``full-compaction.delta-commits`` (>= 1; None when unset)."""
        if self.raw.get(self.FULL_COMPACTION_DELTA_COMMITS) is None:
            return None
        return self.get_int(self.FULL_COMPACTION_DELTA_COMMITS, 1, minimum=1)

    @property
    def dynamic_partition_overwrite(self) -> bool:
        """``dynamic-partition-overwrite`` (default true)."""
        return self.get_bool(self.DYNAMIC_PARTITION_OVERWRITE, True)

    # ---- manifests and commit
    @property
    def manifest_compression(self) -> str:
        """``manifest.compression``, lower case (default ``zstd``)."""
        return self.raw.get(self.MANIFEST_COMPRESSION, "zstd").lower()

    @property
    def manifest_target_file_size(self) -> int:
        """``manifest.target-file-size`` in bytes (default 8 MiB)."""
        return self.get_memory_size(self.MANIFEST_TARGET_FILE_SIZE, 8 * _MIB)

    @property
    def manifest_merge_min_count(self) -> int:
        """``manifest.merge-min-count`` (>= 1, default 30)."""
        return self.get_int(self.MANIFEST_MERGE_MIN_COUNT, 30, minimum=1)

    @property
    def manifest_full_compaction_file_size(self) -> int:
        """``manifest.full-compaction-threshold-size`` in bytes (default 16 MiB)."""
        return self.get_memory_size(self.MANIFEST_FULL_COMPACTION_FILE_SIZE, 16 * _MIB)

    def commit_max_retries(self, default: int) -> int:
        """``commit.max-retries`` (>= 0); ``default`` when unset."""
        return self.get_int(self.COMMIT_MAX_RETRIES, default, minimum=0)

    # ---- expiry
    @property
    def snapshot_num_retained_min(self) -> int:
        """``snapshot.num-retained.min`` (>= 1, default 10)."""
        return self.get_int(self.SNAPSHOT_NUM_RETAINED_MIN, 10, minimum=1)

    @property
    def snapshot_num_retained_max(self) -> int:
        """``snapshot.num-retained.max`` (>= 1, default ``Integer.MAX_VALUE``)."""
        return self.get_int(self.SNAPSHOT_NUM_RETAINED_MAX, INT_MAX, minimum=1)

    @property
    def snapshot_time_retained_millis(self) -> int:
        """``snapshot.time-retained`` (default 1 h)."""
        millis = self.get_duration_millis(self.SNAPSHOT_TIME_RETAINED, _HOUR_MILLIS)
        assert millis is not None
        return millis

    @property
    def snapshot_expire_limit(self) -> int:
        """``snapshot.expire.limit`` (>= 1, default 10)."""
        return self.get_int(self.SNAPSHOT_EXPIRE_LIMIT, 10, minimum=1)

    @property
    def changelog_num_retained_min(self) -> int:
        """``changelog.num-retained.min`` (default: the snapshot one)."""
        return self.get_int(self.CHANGELOG_NUM_RETAINED_MIN, self.snapshot_num_retained_min,
                            minimum=1)

    @property
    def changelog_num_retained_max(self) -> int:
        """``changelog.num-retained.max`` (default: the snapshot one)."""
        return self.get_int(self.CHANGELOG_NUM_RETAINED_MAX, self.snapshot_num_retained_max,
                            minimum=1)

    @property
    def changelog_time_retained_millis(self) -> int:
        """``changelog.time-retained`` (default: the snapshot one)."""
        millis = self.get_duration_millis(self.CHANGELOG_TIME_RETAINED,
                                          self.snapshot_time_retained_millis)
        assert millis is not None
        return millis

    @property
    def consumer_expiration_millis(self) -> int | None:
        """``consumer.expiration-time`` (None: consumers never expire)."""
        return self.get_duration_millis(self.CONSUMER_EXPIRATION_TIME, None)

    # ---- scans
    @property
    def scan_mode(self) -> StartupMode:
        """``scan.mode`` as given, lower case (default ``default``; resolving ``default`` is
        the scan's job).

        Raises:
            SchemaError: a value that is not a :class:`StartupMode`.
        """
        mode = (self.raw.get(self.SCAN_MODE) or StartupMode.DEFAULT).strip().lower()
        try:
            return StartupMode(mode)
        except ValueError as e:
            raise SchemaError(
                f"scan.mode {mode!r}: expected one of {', '.join(StartupMode)}") from e

    def _get_long(self, key: str, what: str) -> int | None:
        raw = self.raw.get(key)
        if raw is None:
            return None
        try:
            return int(raw.strip())
        except ValueError as e:
            raise SchemaError(f"{key}={raw!r} is not {what}") from e

    @property
    def scan_snapshot_id(self) -> int | None:
        """``scan.snapshot-id`` (None when unset); SchemaError naming a bad value."""
        return self._get_long(self.SCAN_SNAPSHOT_ID, "a snapshot id")

    @property
    def scan_timestamp_millis(self) -> int | None:
        """``scan.timestamp-millis``, else ``scan.timestamp`` (text, UTC unless it has an
        offset; Java: the JVM's zone) in epoch millis; None when neither is set."""
        millis = self._get_long(self.SCAN_TIMESTAMP_MILLIS, "an integer")
        text = self.raw.get(self.SCAN_TIMESTAMP)
        if millis is not None or text is None:
            return millis
        from paimon_core.scan.predicate_literal import text_timestamp_nanos

        try:
            return text_timestamp_nanos(text) // 1_000_000
        except ValueError as e:
            raise SchemaError(f"scan.timestamp={text!r}: {e}") from e

    @property
    def consumer_id(self) -> str | None:
        """``consumer-id`` (None when unset or empty)."""
        return self.raw.get(self.CONSUMER_ID) or None

    @property
    def consumer_ignore_progress(self) -> bool:
        return self.get_bool(self.CONSUMER_IGNORE_PROGRESS, False)

    @property
    def streaming_read_overwrite(self) -> bool:
        return self.get_bool(self.STREAMING_READ_OVERWRITE, False)
