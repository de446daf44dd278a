"""The integration surface: what our own Spark jobs (``pipelines``) and Dagster assets
(``assets``) use of paimon_core beyond the front door, for engine integrations of the same kind.

**Less stable than** :mod:`paimon_core`: these are the engine-facing helpers -- Paimon's bucket of
every row (:func:`bucket_ids`) and the dynamic-bucket channels (:func:`channel_ids`,
:class:`AssignerChannel`), the compaction loop and its planning (:func:`compact_with_retries`,
:class:`CompactExecutor`, :func:`plan_compaction` = :func:`list_buckets` +
:func:`pick_buckets`, :class:`BucketCompactor`, ...), manifest rows (:class:`ManifestEntry`,
:class:`DataFileMeta`, :class:`FileKind`, :func:`live_files`, :func:`snapshot_listings`),
one-snapshot planning (:class:`ScanPlanner`), storage (:class:`FileIO`, :func:`join`,
:data:`BulkDelete`), paths (:class:`TableLayout`), the type system's roots and groups
(:class:`TypeRoot`, :data:`STRING_ROOTS`, :class:`AtomicType`, :func:`to_arrow_type` ...), the
predicate tree and its builders (:class:`Leaf`, :class:`Op`, :func:`and_`, :func:`equal`,
:func:`bind` ...), the option enums (:class:`MergeEngine`, :class:`StartupMode`,
:class:`ChangelogProducer`), the system tables (:class:`InspectTable`, :func:`sorted_runs`,
:func:`split_system_table`), input conforming (:func:`conform_column`) and vectorised merge
(:func:`deduplicate`). Names here may change between minor releases (the changelog says so);
an application should need nothing from it.

Every name is imported on first use, as in the front door; the ``Name as Name`` imports of the
``TYPE_CHECKING`` block are the one declaration (read back by :mod:`paimon_core._exports`).
"""

from typing import TYPE_CHECKING, Any

from paimon_core._exports import read_exports

if TYPE_CHECKING:
    from paimon_core.bucket import (
        bucket_ids as bucket_ids,
    )
    from paimon_core.commit.steps import (
        CommitStep as CommitStep,
    )
    from paimon_core.compact import (
        BucketCompactor as BucketCompactor,
    )
    from paimon_core.compact import (
        CompactExecutor as CompactExecutor,
    )
    from paimon_core.compact import (
        CompactOptions as CompactOptions,
    )
    from paimon_core.compact import (
        CompactSource as CompactSource,
    )
    from paimon_core.compact import (
        LocalExecutor as LocalExecutor,
    )
    from paimon_core.compact import (
        compact_with_retries as compact_with_retries,
    )
    from paimon_core.compact.manager import (
        DEFAULT_MAX_ATTEMPTS as DEFAULT_MAX_ATTEMPTS,
    )
    from paimon_core.compact.manager import (
        BucketWork as BucketWork,
    )
    from paimon_core.compact.manager import (
        list_buckets as list_buckets,
    )
    from paimon_core.compact.manager import (
        new_compactor as new_compactor,
    )
    from paimon_core.compact.manager import (
        pick_buckets as pick_buckets,
    )
    from paimon_core.compact.manager import (
        plan_compaction as plan_compaction,
    )
    from paimon_core.compact.options import (
        DEFAULT_COMPACT_STRATEGY as DEFAULT_COMPACT_STRATEGY,
    )
    from paimon_core.compact.options import (
        CompactStrategy as CompactStrategy,
    )
    from paimon_core.compact.options import (
        is_full as is_full,
    )
    from paimon_core.expire import (
        BulkDelete as BulkDelete,
    )
    from paimon_core.expire_config import (
        ExpireResult as ExpireResult,
    )
    from paimon_core.fsck import (
        FsckReport as FsckReport,
    )
    from paimon_core.inspect import (
        InspectTable as InspectTable,
    )
    from paimon_core.inspect import (
        sorted_runs as sorted_runs,
    )
    from paimon_core.inspect import (
        split_system_table as split_system_table,
    )
    from paimon_core.io.file_io import (
        FileIO as FileIO,
    )
    from paimon_core.io.file_io import (
        join as join,
    )
    from paimon_core.layout import (
        TableLayout as TableLayout,
    )
    from paimon_core.manifest_io import (
        snapshot_listings as snapshot_listings,
    )
    from paimon_core.options import (
        parse_memory_size as parse_memory_size,
    )
    from paimon_core.orphans import (
        OrphanResult as OrphanResult,
    )
    from paimon_core.read.merge import (
        deduplicate as deduplicate,
    )
    from paimon_core.rollback import (
        RollbackResult as RollbackResult,
    )
    from paimon_core.scan.incremental import (
        check_range as check_range,
    )
    from paimon_core.scan.incremental import (
        resolve_timestamp_range as resolve_timestamp_range,
    )
    from paimon_core.scan.planner import (
        ScanPlanner as ScanPlanner,
    )
    from paimon_core.scan.predicate import (
        And as And,
    )
    from paimon_core.scan.predicate import (
        Leaf as Leaf,
    )
    from paimon_core.scan.predicate import (
        Op as Op,
    )
    from paimon_core.scan.predicate import (
        Or as Or,
    )
    from paimon_core.scan.predicate import (
        and_ as and_,
    )
    from paimon_core.scan.predicate import (
        bind as bind,
    )
    from paimon_core.scan.predicate import (
        equal as equal,
    )
    from paimon_core.scan.predicate import (
        greater_or_equal as greater_or_equal,
    )
    from paimon_core.scan.predicate import (
        greater_than as greater_than,
    )
    from paimon_core.scan.predicate import (
        is_in as is_in,
    )
    from paimon_core.scan.predicate import (
        is_not_in as is_not_in,
    )
    from paimon_core.scan.predicate import (
        is_not_null as is_not_null,
    )
    from paimon_core.scan.predicate import (
        is_null as is_null,
    )
    from paimon_core.scan.predicate import (
        less_or_equal as less_or_equal,
    )
    from paimon_core.scan.predicate import (
        less_than as less_than,
    )
    from paimon_core.scan.predicate import (
        not_equal as not_equal,
    )
    from paimon_core.scan.predicate import (
        or_ as or_,
    )
    from paimon_core.scan.predicate import (
        parse_filter as parse_filter,
    )
    from paimon_core.scan.predicate import (
        starts_with as starts_with,
    )
    from paimon_core.scan.predicate_literal import (
        text_timestamp_nanos as text_timestamp_nanos,
    )
    from paimon_core.scan.streaming import (
        StreamPlan as StreamPlan,
    )
    from paimon_core.spec.file_entries import (
        live_files as live_files,
    )
    from paimon_core.spec.manifest import (
        DataFileMeta as DataFileMeta,
    )
    from paimon_core.spec.manifest import (
        FileKind as FileKind,
    )
    from paimon_core.spec.manifest import (
        ManifestEntry as ManifestEntry,
    )
    from paimon_core.spec.option_enums import (
        ChangelogProducer as ChangelogProducer,
    )
    from paimon_core.spec.option_enums import (
        MergeEngine as MergeEngine,
    )
    from paimon_core.spec.option_enums import (
        StartupMode as StartupMode,
    )
    from paimon_core.spec.partition import (
        decode_partition as decode_partition,
    )
    from paimon_core.spec.row_kind import (
        arrow_short_retract_mask as arrow_short_retract_mask,
    )
    from paimon_core.spec.snapshot import (
        BATCH_COMMIT_IDENTIFIER as BATCH_COMMIT_IDENTIFIER,
    )
    from paimon_core.spec.system_fields import (
        KIND_COLUMN as KIND_COLUMN,
    )
    from paimon_core.threads import (
        limit_threads as limit_threads,
    )
    from paimon_core.threads import (
        pool_threads as pool_threads,
    )
    from paimon_core.types import (
        BINARY_ROOTS as BINARY_ROOTS,
    )
    from paimon_core.types import (
        INT_RANGES as INT_RANGES,
    )
    from paimon_core.types import (
        INTEGER_ROOTS as INTEGER_ROOTS,
    )
    from paimon_core.types import (
        STRING_ROOTS as STRING_ROOTS,
    )
    from paimon_core.types import (
        ArrayType as ArrayType,
    )
    from paimon_core.types import (
        AtomicType as AtomicType,
    )
    from paimon_core.types import (
        MapType as MapType,
    )
    from paimon_core.types import (
        MultisetType as MultisetType,
    )
    from paimon_core.types import (
        TypeRoot as TypeRoot,
    )
    from paimon_core.types import (
        from_arrow_type as from_arrow_type,
    )
    from paimon_core.types import (
        to_arrow_schema as to_arrow_schema,
    )
    from paimon_core.types import (
        to_arrow_type as to_arrow_type,
    )
    from paimon_core.write.dynamic_bucket import (
        AssignerChannel as AssignerChannel,
    )
    from paimon_core.write.dynamic_bucket import (
        channel_ids as channel_ids,
    )
    from paimon_core.write.input import (
        conform_column as conform_column,
    )

_EXPORTS = read_exports(__file__)
__all__ = _EXPORTS.names


def __getattr__(name: str) -> Any:
    """Import an integration name on first access."""
    if name not in _EXPORTS.lazy:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = _EXPORTS.load(name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
