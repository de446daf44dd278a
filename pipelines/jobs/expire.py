"""``python -m pipelines.jobs.expire`` / ``spark-submit pipelines/jobs/expire.py``: expire a
table's snapshots and remove its orphan files, the deletions spread over Spark tasks
(:mod:`pipelines.expire`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pipelines.config import CatalogSettings
from pipelines.expire import expire
from pipelines.jobs.runner import Job, job_parser, run_job_main

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    p = job_parser("expire", __doc__)
    p.add_argument("--retain-min", type=int)
    p.add_argument("--retain-max", type=int)
    p.add_argument("--older-than-ms", type=int, help="expire snapshots older than this "
                                                     "(epoch ms; default now - "
                                                     "snapshot.time-retained)")
    p.add_argument("--max-deletes", type=int)
    p.add_argument("--no-expire", action="store_true", help="skip snapshot expiry")
    p.add_argument("--remove-orphans", action="store_true")
    p.add_argument("--orphans-older-than-ms", type=int,
                   help="only orphans modified before this (default now - 1 day)")
    p.add_argument("--dry-run", action="store_true", help="only list orphans")
    p.add_argument("--bulk-min-files", type=int, default=64,
                   help="a snapshot's data files are deleted by Spark tasks from this many on")
    return p


def _work(args: argparse.Namespace, settings: CatalogSettings, spark: SparkSession) -> int:
    report = expire(
        spark, settings, args.table, retain_min=args.retain_min, retain_max=args.retain_max,
        older_than_millis=args.older_than_ms, max_deletes=args.max_deletes,
        expire_snapshots=not args.no_expire, remove_orphans=args.remove_orphans,
        orphans_older_than_millis=args.orphans_older_than_ms, dry_run=args.dry_run,
        bulk_min_files=args.bulk_min_files)
    print(report.to_json(), flush=True)
    return 0


JOB = Job("expire", "paimon-expire", build_parser, _work)
#: entry point; prints the report as JSON. Exit codes: 0 ok, 1 error.
main = JOB.main


if __name__ == "__main__":  # pragma: no cover
    run_job_main("pipelines.jobs.expire")
