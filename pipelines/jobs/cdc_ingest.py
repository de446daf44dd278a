"""``python -m pipelines.jobs.cdc_ingest`` / ``spark-submit pipelines/jobs/cdc_ingest.py``:
ingest landed batches of CDC change events into a primary-key table, one commit per batch
(:mod:`pipelines.cdc.ingest`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from paimon_core import PaimonError
from pipelines.cdc.ingest import ErrorRatioExceeded, ingest
from pipelines.config import CatalogSettings, load_schema_file
from pipelines.jobs import cdc_sync_database
from pipelines.jobs.cdc_args import add_cdc_args, cdc_options
from pipelines.jobs.runner import Job, job_error, job_parser, run_job, run_job_main

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    p = job_parser("cdc_ingest", __doc__)
    for a in p._actions:  # --table or, without it, --database (the database sync)
        if a.dest == "table":
            a.required = False
    p.add_argument("--database", help="without --table: sync every table of the landing into "
                                      "this warehouse database (python -m "
                                      "pipelines.jobs.cdc_sync_database, which takes its flags)")
    add_cdc_args(p)
    p.add_argument("--source-table", metavar="PATTERN",
                   help="the source table whose events the job takes: a regex fully matching "
                        "the table name events name, or database.table (default: the name of "
                        "--table, in any database, ignoring case); events of other tables are "
                        "skipped and counted (other_tables), events naming no table are taken")
    p.add_argument("--schema", help="schema JSON to create the table with when it is missing")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; prints one JSON report per batch. Exit codes: 0 ok, 1 error, 3 error
    ratio exceeded."""
    given = list(sys.argv[1:] if argv is None else argv)
    if "--database" in given and not any(a == "--table" or a.startswith("--table=")
                                         for a in given):
        return cdc_sync_database.main(given)
    args = build_parser().parse_args(given)
    if not args.table or args.database:
        build_parser().error("one of --table (one table) or --database (database sync) "
                             "is required, not both")
    try:  # before the JVM starts: a wrong --schema fails at once, named
        schema = load_schema_file(args.schema) if args.schema else None
    except PaimonError as e:
        return job_error("cdc_ingest", e)

    def work(args: argparse.Namespace, settings: CatalogSettings, spark: SparkSession) -> int:
        try:
            for r in ingest(spark, settings, args.table, args.landing,
                            replace(cdc_options(args), source_table=args.source_table),
                            schema=schema, batches=args.batch):
                print(r.to_json(), flush=True)
        except ErrorRatioExceeded as e:
            print(e.report.to_json(), flush=True)
            print(f"cdc_ingest: {e}", file=sys.stderr)
            return 3
        return 0

    # a table the job creates (--schema) is not checked first
    return run_job(Job("cdc_ingest", "paimon-cdc-ingest", build_parser, work), args,
                   check=schema is None)


if __name__ == "__main__":  # pragma: no cover
    run_job_main("pipelines.jobs.cdc_ingest")
