"""``python -m pipelines.jobs.cdc_sync_database`` (or ``python -m pipelines.jobs.cdc_ingest
--database D`` without ``--table``): sync every table of a landing of change events into one
warehouse database, one commit per table per batch (:mod:`pipelines.cdc.database`; Paimon's
``kafka_sync_database``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from paimon_core.cli.args import add_storage_option_arg, key_values
from paimon_core.errors import ConfigError, StorageError
from pipelines.cdc.database import (
    METADATA_COLUMNS,
    TYPE_MAPPINGS,
    CreateOptions,
    DatabaseBatchReport,
    DatabaseOptions,
    check_staging,
    sync_database,
)
from pipelines.cdc.formats import FORMATS
from pipelines.config import CatalogSettings
from pipelines.jobs.cdc_args import add_cdc_args, add_staging_arg, cdc_options
from pipelines.jobs.runner import Job, add_spark_args, job_error, run_job, run_job_main

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["build_parser", "main"]

NAME = "cdc_sync_database"


def _names(text: str | None) -> tuple[str, ...]:
    return tuple(x.strip() for x in (text or "").split(",") if x.strip())


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m pipelines.jobs.{NAME}",
                                description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--warehouse", help="warehouse root (default: $PAIMON_WAREHOUSE)")
    add_storage_option_arg(p)
    p.add_argument("--database", required=True,
                   help="the warehouse database the tables are synced into")
    add_spark_args(p)
    add_cdc_args(p, formats=[f for f in FORMATS if f != "debezium-avro"])
    add_staging_arg(p)
    p.add_argument("--including-tables", default=".*",
                   help="regex of the source tables taken (full match of the table name or "
                        "of database.table; default all)")
    p.add_argument("--excluding-tables", help="regex of the source tables not taken")
    p.add_argument("--table-prefix", default="", help="prefix of every created table's name")
    p.add_argument("--table-suffix", default="", help="suffix of every created table's name")
    p.add_argument("--primary-keys", help="comma-separated primary keys of the created tables "
                                          "that have those columns (else the events' own)")
    p.add_argument("--partition-keys", help="comma-separated partition keys of the created "
                                            "tables that have those columns")
    p.add_argument("--type-mapping", help="comma-separated type mapping modes of created "
                                          f"tables: {', '.join(TYPE_MAPPINGS)}")
    p.add_argument("--metadata-column",
                   help="comma-separated metadata columns added to the created tables and "
                        f"filled from the events: {', '.join(METADATA_COLUMNS)}")
    p.add_argument("--table-conf", action="append", metavar="KEY=VALUE",
                   help="option of every created table (repeatable)")
    return p


def options(args: argparse.Namespace) -> DatabaseOptions:
    """The :class:`DatabaseOptions` of the parsed flags.

    Raises:
        ConfigError: a malformed ``--table-conf``, an unknown ``--type-mapping``, a pattern
            that is not a regex.
    """
    create = CreateOptions(_names(args.primary_keys), _names(args.partition_keys),
                           tuple(m.lower() for m in _names(args.type_mapping)),
                           key_values(args.table_conf, "--table-conf"),
                           _names(args.metadata_column))
    return DatabaseOptions(cdc_options(args), args.including_tables, args.excluding_tables,
                           args.table_prefix, args.table_suffix, create,
                           staging=args.staging_dir)


def _storage_options(args: argparse.Namespace) -> dict[str, str]:
    """The storage options of the landing (those of the warehouse: ``--storage-option``,
    ``PAIMON_STORAGE_OPTIONS``); none when no warehouse is given (the job names that)."""
    try:
        return dict(CatalogSettings.from_args(args).storage_options)
    except ConfigError:  # a malformed --storage-option: named by the caller
        raise
    except ValueError:  # no warehouse: named by run_job
        return {}


def exit_code(reports: Sequence[DatabaseBatchReport]) -> int:
    """0: every table of every batch synced; 3: a table refused by its error ratio; 1: a
    table failed otherwise."""
    failed = [t for r in reports for t in r.failed]
    if not failed:
        return 0
    return 3 if any(t.report is not None and t.report.malformed for t in failed) else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; prints one JSON report per batch (its tables inside). Exit codes: 0 ok,
    1 error, 3 a table's error ratio exceeded (see :func:`exit_code`)."""
    args = build_parser().parse_args(argv)
    try:  # before the JVM starts: a wrong flag or an unwritable staging fails at once, named
        opts = options(args)
        check_staging(args.landing, opts, _storage_options(args))
    except (ConfigError, StorageError) as e:
        return job_error(NAME, e)

    def work(args: argparse.Namespace, settings: CatalogSettings, spark: SparkSession) -> int:
        reports = []
        for r in sync_database(spark, settings, args.database, args.landing, opts,
                               batches=args.batch):
            print(r.to_json(), flush=True)
            reports.append(r)
            for t in r.failed:
                print(f"{NAME}: batch {r.batch}: table {t.target} (source {t.source}): "
                      f"{t.error}", file=sys.stderr)
        return exit_code(reports)

    return run_job(Job(NAME, "paimon-cdc-sync-database", build_parser, work), args,
                   check=False)


if __name__ == "__main__":  # pragma: no cover
    run_job_main("pipelines.jobs.cdc_sync_database")
