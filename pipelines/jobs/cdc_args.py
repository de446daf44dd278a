"""The flags of the CDC jobs (:mod:`pipelines.jobs.cdc_ingest`, one table, and
:mod:`pipelines.jobs.cdc_sync_database`, every table of a landing): declared once."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from pipelines.cdc.formats import DEFAULT_FORMAT, FORMATS
from pipelines.cdc.ingest import CdcOptions
from pipelines.cdc.ranges import parse_size

__all__ = ["add_cdc_args", "add_staging_arg", "cdc_options"]


def add_cdc_args(p: argparse.ArgumentParser, *, formats: Sequence[str] | None = None) -> None:
    """The CDC flags of both CDC jobs (this one and :mod:`pipelines.jobs.cdc_sync_database`):
    landing, format, batches, quarantine and the decode / commit knobs."""
    p.add_argument("--landing", required=True, help="directory / S3 prefix of batch-<n> inputs")
    p.add_argument("--format", choices=sorted(formats or FORMATS), default=DEFAULT_FORMAT,
                   help="the events' format (default %(default)s: JSON lines, with or "
                        "without the schema/payload envelope; debezium-avro: Avro container "
                        "files of Debezium envelopes as Kafka Connect's S3 sink writes them)")
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
    p.add_argument("--decimal-base64", action="store_true",
                   help="debezium-json without schemas under decimal.handling.mode=precise: a "
                        "DECIMAL column's text values are Kafka Connect Decimal bytes (base64 "
                        "of the unscaled value) decoded with the column's scale (never "
                        "guessed without this flag)")


def add_staging_arg(p: argparse.ArgumentParser) -> None:
    """The database sync's staging location (:attr:`pipelines.cdc.database.DatabaseOptions.
    staging`), for a landing the job may not write to."""
    p.add_argument("--staging-dir", metavar="PATH",
                   help="where the database sync stages each batch's routed lines and notes "
                        "finished batches, and the default quarantine (PATH/_quarantine); "
                        "default <landing>/_staging and <landing>/_quarantine: give it for a "
                        "read-only landing")


def cdc_options(args: argparse.Namespace) -> CdcOptions:
    """The :class:`CdcOptions` of the flags of :func:`add_cdc_args`."""
    return CdcOptions(
        position_fields=(tuple(x.strip() for x in args.position_fields.split(",") if x.strip())
                         if args.position_fields else None),
        sequence_column=args.sequence_column, epoch_unit=args.epoch_unit,
        max_error_ratio=args.max_error_ratio, commit_user=args.commit_user,
        quarantine=args.quarantine, evolve_schema=not args.no_evolve,
        unavailable=args.unavailable_value, format=args.format,
        max_partition_bytes=args.max_partition_bytes, decimal_base64=args.decimal_base64,
    )
