"""Asset checks of every table: ``fsck`` clean, small-file count, snapshot count within
retention, freshness.

Each check loads the table fresh (metadata only; ``fsck`` also lists the data directories)
and reports its figures as metadata, so a check's history shows the trend.
"""

import time

import dagster as dg

from assets.metadata import table_stats
from assets.resources import PaimonCatalog
from assets.tables import TableSpec
from paimon_core import CoreOptions
from paimon_core.fsck import fsck  # the public submodule (the root keeps its name for it)

__all__ = ["build_table_checks", "check_names"]

CHECK_NAMES = ("fsck_clean", "small_files", "snapshot_retention", "freshness")


def check_names() -> tuple[str, ...]:
    return CHECK_NAMES


def _missing(spec: TableSpec) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        passed=False, severity=dg.AssetCheckSeverity.WARN,
        description=f"{spec.identifier} does not exist yet (never materialized)",
    )


def build_table_checks(spec: TableSpec) -> list[dg.AssetChecksDefinition]:
    """The four checks of one table asset (key ``spec.key_path``)."""
    key = dg.AssetKey(spec.key_path)

    @dg.asset_check(
        asset=key, name="fsck_clean",
        description="paimon fsck: contiguous snapshots, every referenced file present, no "
        "file added twice, no overlapping LSM levels, one bucket count per partition.",
    )
    def fsck_clean(catalog: PaimonCatalog) -> dg.AssetCheckResult:
        cat = catalog.load()
        if not cat.table_exists(spec.identifier):
            return _missing(spec)
        report = fsck(cat.get_table(spec.identifier))
        return dg.AssetCheckResult(
            passed=report.ok,
            severity=dg.AssetCheckSeverity.ERROR,
            metadata={
                "errors": dg.MetadataValue.int(len(report.errors)),
                "warnings": dg.MetadataValue.int(len(report.warnings)),
                "snapshots_checked": dg.MetadataValue.int(len(report.snapshot_ids)),
                "findings": dg.MetadataValue.json([f.to_json() for f in report.findings[:20]]),
            },
        )

    @dg.asset_check(
        asset=key, name="small_files",
        description=f"At most {spec.max_small_files} live files smaller than "
        f"{spec.small_file_bytes} bytes (else compaction is falling behind).",
    )
    def small_files(catalog: PaimonCatalog) -> dg.AssetCheckResult:
        cat = catalog.load()
        if not cat.table_exists(spec.identifier):
            return _missing(spec)
        stats = table_stats(cat.get_table(spec.identifier), small_file_bytes=spec.small_file_bytes)
        return dg.AssetCheckResult(
            passed=stats.small_files <= spec.max_small_files,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={
                "small_files": dg.MetadataValue.int(stats.small_files),
                "live_files": dg.MetadataValue.int(stats.files),
                "live_bytes": dg.MetadataValue.int(stats.bytes),
                "threshold_bytes": dg.MetadataValue.int(spec.small_file_bytes),
                "max_small_files": dg.MetadataValue.int(spec.max_small_files),
            },
        )

    @dg.asset_check(
        asset=key, name="snapshot_retention",
        description="Retained snapshots within 'snapshot.num-retained.max' (else expiry is not "
        "running, or a consumer holds snapshots back).",
    )
    def snapshot_retention(catalog: PaimonCatalog) -> dg.AssetCheckResult:
        cat = catalog.load()
        if not cat.table_exists(spec.identifier):
            return _missing(spec)
        table = cat.get_table(spec.identifier)
        sm = table.snapshot_manager
        earliest, latest = sm.earliest_snapshot_id(), sm.latest_snapshot_id()
        count = 0 if earliest is None or latest is None else latest - earliest + 1
        limit = int(table.options.get(CoreOptions.SNAPSHOT_NUM_RETAINED_MAX) or spec.retain_max)
        return dg.AssetCheckResult(
            passed=count <= limit,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={
                "retained_snapshots": dg.MetadataValue.int(count),
                "earliest": dg.MetadataValue.int(earliest or 0),
                "latest": dg.MetadataValue.int(latest or 0),
                "retain_max": dg.MetadataValue.int(limit),
            },
        )

    @dg.asset_check(
        asset=key, name="freshness",
        description=f"The latest snapshot is at most {spec.freshness_hours} h old.",
    )
    def freshness(catalog: PaimonCatalog) -> dg.AssetCheckResult:
        cat = catalog.load()
        if not cat.table_exists(spec.identifier):
            return _missing(spec)
        snap = cat.get_table(spec.identifier).latest_snapshot()
        if snap is None:
            return dg.AssetCheckResult(passed=False, severity=dg.AssetCheckSeverity.WARN,
                                       description="no snapshot yet")
        lag_s = max(0.0, time.time() - snap.time_millis / 1000)
        return dg.AssetCheckResult(
            passed=lag_s <= spec.freshness_hours * 3600,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={
                "latest_snapshot": dg.MetadataValue.int(snap.id),
                "lag_minutes": dg.MetadataValue.float(round(lag_s / 60, 2)),
                "max_lag_hours": dg.MetadataValue.float(spec.freshness_hours),
            },
        )

    return [fsck_clean, small_files, snapshot_retention, freshness]
