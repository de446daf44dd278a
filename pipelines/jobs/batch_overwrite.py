"""``python -m pipelines.jobs.batch_overwrite`` / ``spark-submit
pipelines/jobs/batch_overwrite.py``: INSERT OVERWRITE files (Parquet / CSV / JSON) or another
table into static or dynamic partitions of a table, one OVERWRITE commit
(:mod:`pipelines.batch_overwrite`)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from pipelines.batch_overwrite import FORMATS, load_files, overwrite
from pipelines.config import CatalogSettings, parse_pairs
from pipelines.jobs.runner import Job, job_parser, run_job_main
from pipelines.writer import WriteSpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    p = job_parser("batch_overwrite", __doc__)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--input", help="file or directory (local or s3://)")
    src.add_argument("--source-table", help="another table of the warehouse (db.name)")
    p.add_argument("--format", choices=FORMATS, default="parquet")
    p.add_argument("--partition", help="static partition k=v[,k2=v2]")
    p.add_argument("--whole-table", action="store_true", help="replace the whole table")
    p.add_argument("--static", action="store_true",
                   help="with --partition: replace every partition it matches, even those "
                        "the input has no rows for (dynamic-partition-overwrite=false)")
    p.add_argument("--commit-user")
    p.add_argument("--commit-identifier", type=int)
    return p


def _source(args: argparse.Namespace, settings: CatalogSettings, spark: SparkSession
            ) -> DataFrame:
    if args.source_table:
        return spark.read.format("paimon").option("warehouse", settings.warehouse).options(
            **{f"storage.{k}": v for k, v in settings.storage_options.items()}
        ).load(args.source_table)
    schema = settings.catalog().get_table(args.table).schema
    return load_files(spark, args.input, args.format, schema, settings)


def _work(args: argparse.Namespace, settings: CatalogSettings, spark: SparkSession) -> int:
    spec = (parse_pairs(args.partition.replace(",", ";"), what="partition")
            if args.partition else None)
    result = overwrite(spark, settings, args.table, _source(args, settings, spark),
                       partition=spec, whole_table=args.whole_table, static=args.static,
                       write=WriteSpec.new("spark", user=args.commit_user,
                                           identifier=args.commit_identifier))
    print(json.dumps({"table": result.table, "snapshot_ids": list(result.snapshot_ids),
                      "rows": result.rows, "files": result.files, "skipped": result.skipped}),
          flush=True)
    return 0


JOB = Job("batch_overwrite", "paimon-batch-overwrite", build_parser, _work)
#: entry point; prints the result as JSON. Exit codes: 0 ok, 1 error.
main = JOB.main


if __name__ == "__main__":  # pragma: no cover
    run_job_main("pipelines.jobs.batch_overwrite")
