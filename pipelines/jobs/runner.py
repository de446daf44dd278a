"""The one runner of the Spark jobs' entry points (``python -m pipelines.jobs.<job>``,
``spark-submit pipelines/jobs/<job>.py``).

Every job does the same around its own work: parse its flags, log ``pipelines.*`` at INFO,
read the catalog settings (``--warehouse`` / ``--storage-option``, else the environment), open
the table *before* the JVM starts (a wrong warehouse or table fails in a second, named), start
the Spark session, run the work, and turn a :class:`~paimon_core.PaimonError` into one line on
stderr (``<job>: <ErrorType>: <message>``) and exit code 1. A job gives its name, its parser and
its work (:class:`Job`); :func:`run_job` does the rest.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from paimon_core import PaimonError
from paimon_core.cli.args import add_storage_option_arg
from pipelines.config import CatalogSettings, SparkSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "Job", "Session", "Work", "add_catalog_args", "add_spark_args", "check_table",
    "configure_logging", "job_error", "job_parser", "run_job", "run_job_main",
]

#: a job's work: the parsed flags, the catalog settings and the session -> the exit code
Work = Callable[[argparse.Namespace, CatalogSettings, "SparkSession"], int]
#: how a job gets its session (the default: :func:`pipelines.session.get_session`); a context
#: manager, so a job can act when its session ends (compact publishes its JVM's class archive)
Session = Callable[[SparkSettings], AbstractContextManager["SparkSession"]]


def configure_logging(level: int = logging.INFO) -> None:
    """Job entry points: INFO messages of ``pipelines.*`` on stderr (the root logger, and so
    Spark's py4j and other libraries, are left alone)."""
    log = logging.getLogger("pipelines")
    log.setLevel(level)
    if not any(getattr(h, "_pipelines", False) for h in log.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        handler._pipelines = True  # type: ignore[attr-defined]
        log.addHandler(handler)


def add_catalog_args(p: argparse.ArgumentParser) -> None:
    """``--warehouse``, ``--storage-option`` (:mod:`paimon_core.cli.args`) and ``--table``."""
    p.add_argument("--warehouse", help="warehouse root (default: $PAIMON_WAREHOUSE)")
    add_storage_option_arg(p)
    p.add_argument("--table", required=True, help="db.name")


def add_spark_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master", help="Spark master (default: $PAIMON_SPARK_MASTER or local[*]); "
                                    "ignored under spark-submit, which sets it")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE",
                   help="extra Spark conf (repeatable)")


def check_table(settings: CatalogSettings, identifier: str, prog: str) -> int | None:
    """Open the job's table before its Spark session starts, so that a wrong ``--warehouse``
    or table name fails in a second with its own message (the warehouse does not exist / is
    not a Paimon warehouse / lacks the database or table: :class:`TableNotExistError` and its
    leaves) instead of after the JVM's start-up. Returns the exit code 1 after printing the
    error, None when the table is there."""
    try:
        settings.catalog().get_table(identifier)
    except PaimonError as e:
        return job_error(prog, e)
    return None


def job_parser(name: str, doc: str | None) -> argparse.ArgumentParser:
    """The parser of job ``name`` with the flags every job takes (catalog, table, Spark);
    its description is the first paragraph of ``doc`` (the job module's docstring)."""
    p = argparse.ArgumentParser(prog=f"python -m pipelines.jobs.{name}",
                                description=doc.split("\n\n")[0] if doc else None)
    add_catalog_args(p)
    add_spark_args(p)
    return p


def job_error(name: str, error: Exception) -> int:
    """Print ``<name>: <ErrorType>: <message>`` on stderr; the exit code 1."""
    print(f"{name}: {type(error).__name__}: {error}", file=sys.stderr)
    return 1


@contextlib.contextmanager
def _default_session(settings: SparkSettings) -> Iterator[SparkSession]:
    from pipelines.session import get_session

    yield get_session(settings)


@dataclass(frozen=True)
class Job:
    """One job's entry point: ``name`` (its module under ``pipelines.jobs``, its stderr
    prefix), its Spark ``app_name``, its ``parser`` and ``work``; ``session`` starts its Spark
    session."""

    name: str
    app_name: str
    parser: Callable[[], argparse.ArgumentParser]
    work: Work
    session: Session = _default_session

    def main(self, argv: Sequence[str] | None = None) -> int:
        """Parse ``argv`` (default: the command line) and :func:`run_job`: the exit code."""
        return run_job(self, self.parser().parse_args(argv))


def run_job(job: Job, args: argparse.Namespace, *, check: bool = True) -> int:
    """Run ``job`` on its parsed ``args`` (see the module docs); ``check=False`` skips the
    table check (a job that creates the table). Returns the exit code."""
    configure_logging()
    try:  # no warehouse anywhere, a malformed --storage-option / --conf: named, no JVM
        settings = CatalogSettings.from_args(args)
        spark_settings = SparkSettings.from_args(args, app_name=job.app_name)
    except ValueError as e:
        return job_error(job.name, e)
    if check and (rc := check_table(settings, args.table, job.name)) is not None:
        return rc
    with job.session(spark_settings) as spark:
        try:
            return job.work(args, settings, spark)
        except PaimonError as e:
            return job_error(job.name, e)


def run_job_main(module: str, argv: Sequence[str] | None = None) -> NoReturn:
    """The ``if __name__ == "__main__"`` of a job module (``python -m pipelines.jobs.<job>``,
    ``spark-submit pipelines/jobs/<job>.py``): runs ``main()`` of the *importable* module
    ``module`` and exits with its code.

    A job run as a script executes as ``__main__``, and cloudpickle pickles the functions of
    ``__main__`` by value, each with the module-level objects it reaches (an unpicklable one
    fails every task: ``PicklingError``) and the module's classes re-created on the workers.
    Run from the module imported by name, the job's task functions reach their module's
    objects by reference, exactly as when ``main()`` is called from Python.
    """
    job = importlib.import_module(module)
    sys.exit(job.main(argv))
