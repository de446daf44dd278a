"""``python -m pipelines.jobs.cdc_ingest`` / ``spark-submit pipelines/jobs/cdc_ingest.py``:
ingest landed batches of CDC change events into a primary-key table, one commit per batch
(:mod:`pipelines.cdc.ingest`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from paimon_core import PaimonError
from pipelines.cdc.formats import DEFAULT_FORMAT, FORMATS
from pipelines.cdc.ingest import CdcOptions, ErrorRatioExceeded, ingest
from pipelines.cdc.ranges import parse_size
from pipelines.config import CatalogSettings, load_schema_file
from pipelines.jobs.runner import Job, job_error, job_parser, run_job, run_job_main

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    p = job_parser("cdc_ingest", __doc__)
    p.add_argument("--landing", required=True, help="directory / S3 prefix of batch-<n> inputs")
    p.add_argument("--format", choices=sorted(FORMATS), default=DEFAULT_FORMAT,
                   help="the events' format (default %(default)s: JSON lines, with or "
                        "without the schema/payload envelope; debezium-avro: Avro container "
                        "files of Debezium envelopes as Kafka Connect's S3 sink writes them)")
    p.add_argument("--source-table", metavar="PATTERN",
                   help="the source table whose events the job takes: a regex fully matching "
                        "the table name events name, or database.table (default: the name of "
                        "--table, in any database, ignoring case); events of other tables are "
                        "skipped and counted (other_tables), events naming no table are taken")
    p.add_argument("--decimal-base64", action="store_true",
                   help="debezium-json without schemas under decimal.handling.mode=precise: a "
                        "DECIMAL column's text values are Kafka Connect Decimal bytes (base64 "
                        "of the unscaled value) decoded with the column's scale (never "
                        "guessed without this flag)")
    p.add_argument("--schema", help="schema JSON to create the table with when it is missing")
    p.add_argument("--batch", type=int, action="append", help="only this batch (repeatable)")
    p.add_argument("--quarantine", help="where malformed events go (default <landing>/"
                                        "_quarantine)")
    p.add_argument("--max-error-ratio", type=float, default=0.01)
    p.add_argument("--position-fields",
                   help="comma-separated fields of 'source' ordering the events (default: "
                        "those of the events' source.connector)")
    p.add_argument("--sequence-column", help="table column filled with the source position "
                                             "(default: the table's sequence.field)")
    p.add_argument("--epoch-unit", choices=["ms", "us"], default="ms",
                   help="unit of numeric timestamps in the events")
    p.add_argument("--commit-user", help="stable commit user (default cdc-<db>.<table>)")
    p.add_argument("--no-evolve", action="store_true", help="do not add new columns")
    p.add_argument("--max-partition-bytes", type=parse_size, default=None,
                   help="largest byte range of a landing file one task decodes at a time, "
                        "e.g. 128MB (default: Spark's spark.sql.files.maxPartitionBytes, "
                        "128MB); larger files are split at line starts")
    p.add_argument("--unavailable-value", choices=["previous", "store", "refuse"],
                   default="previous",
                   help="Debezium's unchanged-TOAST placeholder: keep the column's previous "
                        "value (default), store the placeholder text, or quarantine the event")
    return p


def _options(args: argparse.Namespace) -> CdcOptions:
    return CdcOptions(
        position_fields=(tuple(x.strip() for x in args.position_fields.split(",") if x.strip())
                         if args.position_fields else None),
        sequence_column=args.sequence_column, epoch_unit=args.epoch_unit,
        max_error_ratio=args.max_error_ratio, commit_user=args.commit_user,
        quarantine=args.quarantine, evolve_schema=not args.no_evolve,
        unavailable=args.unavailable_value, format=args.format,
        max_partition_bytes=args.max_partition_bytes, source_table=args.source_table,
        decimal_base64=args.decimal_base64,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; prints one JSON report per batch. Exit codes: 0 ok, 1 error, 3 error
    ratio exceeded."""
    args = build_parser().parse_args(argv)
    try:  # before the JVM starts: a wrong --schema fails at once, named
        schema = load_schema_file(args.schema) if args.schema else None
    except PaimonError as e:
        return job_error("cdc_ingest", e)

    def work(args: argparse.Namespace, settings: CatalogSettings, spark: SparkSession) -> int:
        try:
            for r in ingest(spark, settings, args.table, args.landing, _options(args),
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
