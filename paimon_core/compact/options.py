"""Compaction settings of a table (the compaction part of ``org.apache.paimon.CoreOptions``).

Defaults are those of Paimon 0.9 (spec §13):

* ``num-sorted-run.compaction-trigger`` 5, ``num-levels`` = trigger + 1,
  ``compaction.max-size-amplification-percent`` 200, ``compaction.size-ratio`` 1;
* ``target-file-size`` 128 MiB (primary-key tables) / 256 MiB (append tables); files smaller
  than 70 % of it (``compactionFileSize``) are "small";
* ``compaction.min.file-num`` 5, ``compaction.max.file-num`` 5 for bucketed append tables and
  50 for unaware-bucket ones (fallback key ``compaction.early-max.file-num``);
* ``write-only`` false, ``changelog-producer`` none, ``changelog-producer.row-deduplicate``
  false, ``full-compaction.delta-commits`` unset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from paimon_core.errors import SchemaError
from paimon_core.options import CoreOptions
from paimon_core.spec.option_enums import ChangelogProducer, MergeEngine
from paimon_core.spec.schema import TableSchema

__all__ = [
    "COMPACT_STRATEGIES", "DEFAULT_COMPACT_STRATEGY", "CompactOptions", "CompactStrategy",
    "is_full",
]

_MIB = 1024 * 1024

#: What an explicit compaction (``table.compact``, ``paimon compact``, ``pipelines.compact``)
#: does: ``full`` rewrites every bucket into one sorted run on the max level (append tables:
#: every small file), as Paimon's batch compaction (``CALL sys.compact``, the Flink / Spark
#: compact actions) does unless told otherwise; ``minor`` does what the universal picker asks
#: for (what writers do after a commit), which is often nothing.
CompactStrategy = Literal["full", "minor"]
COMPACT_STRATEGIES: tuple[CompactStrategy, ...] = ("full", "minor")
#: the strategy of an explicit compaction that names none: the one home of the default of
#: ``table.compact``, ``paimon compact``, ``python -m pipelines.jobs.compact`` and the Dagster
#: compaction assets (``assets.maintenance.CompactConfig``)
DEFAULT_COMPACT_STRATEGY: CompactStrategy = "full"


def is_full(strategy: str) -> bool:
    """Whether ``strategy`` is the full one.

    Raises:
        SchemaError: not one of :data:`COMPACT_STRATEGIES`.
    """
    if strategy not in COMPACT_STRATEGIES:
        raise SchemaError(f"compaction strategy {strategy!r} is not one of "
                          f"{', '.join(COMPACT_STRATEGIES)}")
    return strategy == "full"


@dataclass(frozen=True, slots=True)
class CompactOptions:
    """Typed compaction options of one table schema.

    Attributes:
        primary_key: whether the table has a primary key (LSM) or is an append table.
        num_buckets: the table's ``bucket`` option (-1: unaware for append tables).
        trigger: ``num-sorted-run.compaction-trigger``.
        num_levels: ``num-levels`` (levels 0 .. num_levels - 1).
        max_size_amp: ``compaction.max-size-amplification-percent``.
        size_ratio: ``compaction.size-ratio``.
        target_file_size: ``target-file-size`` in bytes.
        min_file_num / max_file_num: append-table compaction bounds.
        write_only: ``write-only`` (writers never compact).
        changelog_producer: ``none`` / ``input`` / ``full-compaction`` / ``lookup``.
        row_deduplicate: ``changelog-producer.row-deduplicate`` (no -U/+U for equal rows).
        full_compaction_delta_commits: ``full-compaction.delta-commits`` (None = unset).
        first_row: ``merge-engine=first-row`` (primary-key tables).
        force_lookup: ``force-lookup``.
        lookup_wait: ``lookup-wait``.
    """

    primary_key: bool
    num_buckets: int
    trigger: int = 5
    num_levels: int = 6
    max_size_amp: int = 200
    size_ratio: int = 1
    target_file_size: int = 128 * _MIB
    min_file_num: int = 5
    max_file_num: int = 5
    write_only: bool = False
    changelog_producer: ChangelogProducer = ChangelogProducer.NONE
    row_deduplicate: bool = False
    full_compaction_delta_commits: int | None = None
    first_row: bool = False
    force_lookup: bool = False
    deletion_vectors: bool = False
    lookup_wait: bool = True

    @classmethod
    def from_schema(cls, schema: TableSchema) -> CompactOptions:
        """:meth:`of` ``schema`` and its options, parsed here."""
        return cls.of(schema, CoreOptions(schema.options))

    @classmethod
    def of(cls, schema: TableSchema, o: CoreOptions) -> CompactOptions:
        """Read and validate the options ``o`` of ``schema`` (parsed by the caller: a
        :class:`~paimon_core.layout.TableContext`'s).

        Raises:
            SchemaError: a malformed or out-of-range option value.
        """
        pk = bool(schema.primary_keys)
        num_levels = o.num_levels
        if num_levels < 2:  # Levels: "Number of levels must be at least 2."
            raise SchemaError(f"option {o.NUM_LEVELS}={o.get(o.NUM_LEVELS)!r} must be >= 2")
        target = o.target_file_size(pk)
        if target <= 0:
            raise SchemaError("target-file-size must be positive")
        buckets = schema.num_buckets
        return cls(
            primary_key=pk,
            num_buckets=buckets,
            trigger=o.num_sorted_runs_compaction_trigger,
            num_levels=num_levels,
            max_size_amp=o.compaction_max_size_amplification_percent,
            size_ratio=o.compaction_size_ratio,
            target_file_size=target,
            min_file_num=o.compaction_min_file_num,
            max_file_num=o.compaction_max_file_num(buckets),
            write_only=o.write_only,
            changelog_producer=o.changelog_producer,
            row_deduplicate=o.changelog_producer_row_deduplicate,
            full_compaction_delta_commits=o.full_compaction_delta_commits,
            first_row=pk and o.merge_engine is MergeEngine.FIRST_ROW,
            force_lookup=o.force_lookup,
            deletion_vectors=o.deletion_vectors_enabled,
            lookup_wait=o.lookup_wait,
        )

    @property
    def compaction_file_size(self) -> int:
        """Files below this size are rewritten rather than upgraded / left alone
        (``CoreOptions.compactionFileSize``: 70 % of the target file size)."""
        return self.target_file_size // 10 * 7

    @property
    def max_level(self) -> int:
        return self.num_levels - 1

    @property
    def prepare_commit_wait_compaction(self) -> bool:
        """Java's ``CoreOptions.prepareCommitWaitCompaction()``: ``lookup-wait`` (default
        true) when the table needs a :attr:`lookup`, else false. Only a streaming driver asks
        it: Flink's sink passes it to ``prepareCommit(waitCompaction, id)`` at checkpoints;
        batch writes (``TableWriteImpl.prepareCommit()``, Spark's writes, Flink's end of
        input) always wait, as :meth:`TableWrite.prepare_commit` does by default."""
        return self.lookup and self.lookup_wait

    @property
    def lookup_settings(self) -> list[str]:
        """The options that make a primary-key table need a :attr:`lookup`, as
        ``key=value`` (for the messages of refusals)."""
        if not self.primary_key:
            return []
        return [s for s, on in (("merge-engine=first-row", self.first_row),
                                ("changelog-producer=lookup",
                                 self.changelog_producer is ChangelogProducer.LOOKUP),
                                ("force-lookup=true", self.force_lookup),
                                ("deletion-vectors.enabled=true", self.deletion_vectors)) if on]

    @property
    def lookup(self) -> bool:
        """Compaction pushes every level-0 file up and merges it with the keys' records on the
        levels above (``CoreOptions.needLookup``: the lookup producer, the first-row engine or
        ``force-lookup`` or deletion vectors: :attr:`lookup_settings`)."""
        return bool(self.lookup_settings)
