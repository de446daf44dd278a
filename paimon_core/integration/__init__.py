"""The integration surface: what our own Spark jobs (``pipelines``) and Dagster assets
(``assets``) use of paimon_core beyond the front door, for engine integrations of the same kind.

**Less stable than** :mod:`paimon_core`: these are the engine-facing helpers -- Paimon's bucket of
every row (:func:`bucket_ids`) and the dynamic-bucket channels (:func:`channel_ids`,
:class:`AssignerChannel`; :func:`key_slices` for cross-partition tables), the compaction loop
and its planning (:func:`compact_with_retries`,
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
``TYPE_CHECKING`` block are the one declaration (read back by ``paimon_core._read_exports``).
"""

from typing import TYPE_CHECKING, Any

from paimon_core import _read_exports

if TYPE_CHECKING:
    from paimon_core.bucket import (
        bucket_ids as bucket_ids,
    )
    from paimon_core.commit.steps import (
        CommitStep as CommitStep,
    )
    from paimon_core.compact import (
        BucketCompactor as BucketCompactor,
        CompactExecutor as CompactExecutor,
        CompactOptions as CompactOptions,
        CompactSource as CompactSource,
        LocalExecutor as LocalExecutor,
        compact_with_retries as compact_with_retries,
    )
    from paimon_core.compact.manager import (
        DEFAULT_MAX_ATTEMPTS as DEFAULT_MAX_ATTEMPTS,
        BucketWork as BucketWork,
        list_buckets as list_buckets,
        new_compactor as new_compactor,
        pick_buckets as pick_buckets,
        plan_compaction as plan_compaction,
    )
    from paimon_core.compact.options import (
        DEFAULT_COMPACT_STRATEGY as DEFAULT_COMPACT_STRATEGY,
        CompactStrategy as CompactStrategy,
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
        sorted_runs as sorted_runs,
        split_system_table as split_system_table,
    )
    from paimon_core.io.file_io import (
        FileIO as FileIO,
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
        resolve_timestamp_range as resolve_timestamp_range,
    )
    from paimon_core.scan.planner import (
        ScanPlanner as ScanPlanner,
    )
    from paimon_core.scan.predicate import (
        And as And,
        Leaf as Leaf,
        Op as Op,
        Or as Or,
        and_ as and_,
        bind as bind,
        equal as equal,
        greater_or_equal as greater_or_equal,
        greater_than as greater_than,
        is_in as is_in,
        is_not_in as is_not_in,
        is_not_null as is_not_null,
        is_null as is_null,
        less_or_equal as less_or_equal,
        less_than as less_than,
        not_equal as not_equal,
        or_ as or_,
        parse_filter as parse_filter,
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
        FileKind as FileKind,
        ManifestEntry as ManifestEntry,
    )
    from paimon_core.spec.option_enums import (
        ChangelogProducer as ChangelogProducer,
        MergeEngine as MergeEngine,
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
        pool_threads as pool_threads,
    )
    from paimon_core.types import (
        BINARY_ROOTS as BINARY_ROOTS,
        INTEGER_ROOTS as INTEGER_ROOTS,
        INT_RANGES as INT_RANGES,
        STRING_ROOTS as STRING_ROOTS,
        ArrayType as ArrayType,
        AtomicType as AtomicType,
        MapType as MapType,
        MultisetType as MultisetType,
        TypeRoot as TypeRoot,
        from_arrow_type as from_arrow_type,
        to_arrow_schema as to_arrow_schema,
        to_arrow_type as to_arrow_type,
    )
    from paimon_core.write.cross_partition import (
        key_slices as key_slices,
    )
    from paimon_core.write.dynamic_bucket import (
        AssignerChannel as AssignerChannel,
        channel_ids as channel_ids,
    )
    from paimon_core.write.input import (
        conform_column as conform_column,
    )

_EXPORTS = _read_exports(__file__)
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
