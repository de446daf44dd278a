"""``python -m pipelines.jobs.compact`` / ``spark-submit pipelines/jobs/compact.py``: compact
a table's buckets in Spark tasks, one COMPACT commit (:mod:`pipelines.compact`).

Start-up: when the job starts its own local session, the driver JVM gets
:data:`LOCAL_JVM_FLAGS` and a class-data archive (:mod:`pipelines.jvm_archive`; the first run
on a machine writes it, ``PAIMON_SPARK_CDS_DIR=off`` turns it off), and the ``paimon`` data
source is not registered (the tasks use ``paimon_core`` directly). ``PAIMON_JOB_CPU_LOG=1``
prints the CPU of the job's process tree at session-ready and after the work
(:mod:`pipelines.cputrace`; what ``bench/scale.py --spark`` splits a run with).
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from paimon_core.cli.compact_cmds import add_strategy_args
from paimon_core.integration import DEFAULT_MAX_ATTEMPTS
from pipelines.compact import compact
from pipelines.config import CatalogSettings, SparkSettings, parse_pairs
from pipelines.cputrace import mark
from pipelines.jobs.runner import Job, job_parser, run_job_main
from pipelines.jvm_archive import ClassArchive, class_archive

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["LOCAL_JVM_FLAGS", "WORKER_MEMORY_POOL", "build_parser", "main"]


#: JIT flags for the driver JVM of a local session this job starts: that JVM only schedules
#: one task per bucket and collects messages, so the C1 compiler alone and the serial GC do it
#: with less CPU than the default tiers and parallel GC threads (4M rows, 8 buckets: session
#: start-up 13.3 -> 8.1 s CPU, under load); a class-data archive
#: (:mod:`pipelines.jvm_archive`) halves what is left of the JVM's start-up
LOCAL_JVM_FLAGS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
_JAVA_OPTIONS = "spark.driver.extraJavaOptions"


def _owns_jvm(settings: SparkSettings) -> bool:
    """Whether this process is about to start the session's driver JVM itself, so that this
    job chooses its flags: local, not under ``spark-submit``, no JVM running yet (a session
    already running in this process is reused as it is), Java options not set by the user."""
    if not settings.is_local or _JAVA_OPTIONS in settings.conf:
        return False
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # spark-submit started the JVM
        return False
    from pyspark import SparkContext

    return SparkContext._gateway is None


def _local_archive(settings: SparkSettings) -> ClassArchive | None:
    """The class-data archive of the driver JVM this job starts (None: not ours to start,
    or archives turned off)."""
    return class_archive(LOCAL_JVM_FLAGS) if _owns_jvm(settings) else None


#: Arrow's memory pool in the job's Python workers (unless the user chose one): a worker is a
#: fresh process whose heap grows from nothing, and mimalloc (pyarrow's default) zeroes a fresh
#: huge page at every first touch; with the system allocator the workers' system CPU went
#: 1.1 -> 0.6 s for 4M rows in 8 buckets (user CPU unchanged, under load)
WORKER_MEMORY_POOL = "system"
_POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"


def _session_conf(settings: SparkSettings, local_defaults: Mapping[str, str],
                  archive: ClassArchive | None = None) -> dict[str, str]:
    """This job's additions to the session's conf: the workers' memory pool
    (:data:`WORKER_MEMORY_POOL`, unless set in the conf or the environment); for a local
    session whose driver Java options the user did not set, :data:`LOCAL_JVM_FLAGS` and the
    archive's option."""
    conf: dict[str, str] = {}
    pool_key = f"spark.executorEnv.{_POOL_ENV}"
    if pool_key not in settings.conf and _POOL_ENV not in os.environ:
        conf[pool_key] = WORKER_MEMORY_POOL
    if settings.is_local and _JAVA_OPTIONS not in settings.conf:
        flags = [local_defaults.get(_JAVA_OPTIONS, ""), LOCAL_JVM_FLAGS]
        if archive is not None:
            flags.append(archive.jvm_option)
        conf[_JAVA_OPTIONS] = " ".join(f for f in flags if f)
    return conf


@contextlib.contextmanager
def _session(settings: SparkSettings) -> Iterator[SparkSession]:
    """The job's session (see the module docs); a first run's JVM is ended at the end, so
    that it writes the class-data archive."""
    from pipelines.session import LOCAL_DEFAULTS, get_session

    archive = _local_archive(settings)
    spark = get_session(settings, conf=_session_conf(settings, LOCAL_DEFAULTS, archive),
                        register_source=False)  # the tasks use paimon_core, not the source
    mark("session")
    try:
        if archive is not None:
            archive.check(spark)
        yield spark
    finally:
        if archive is not None and archive.part is not None:
            archive.publish(spark)  # a first run: end the JVM so that it writes the archive


def build_parser() -> argparse.ArgumentParser:
    p = job_parser("compact", __doc__)
    add_strategy_args(p)
    p.add_argument("--partition", action="append", metavar="K=V,...",
                   help="only this partition (repeatable)")
    p.add_argument("--bucket", type=int, action="append", help="only this bucket (repeatable)")
    p.add_argument("--commit-user")
    p.add_argument("--max-attempts", type=int, default=DEFAULT_MAX_ATTEMPTS)
    return p


def _work(args: argparse.Namespace, settings: CatalogSettings, spark: SparkSession) -> int:
    parts = ([parse_pairs(x.replace(",", ";"), what="partition") for x in args.partition]
             if args.partition else None)
    report = compact(spark, settings, args.table, strategy=args.strategy, partitions=parts,
                     buckets=args.bucket, commit_user=args.commit_user,
                     max_attempts=args.max_attempts)
    mark("work")
    print(report.to_json(), flush=True)
    return 0


JOB = Job("compact", "paimon-compact", build_parser, _work, _session)
#: entry point; prints the report as JSON. Exit codes: 0 ok, 1 error.
main = JOB.main


if __name__ == "__main__":  # pragma: no cover
    run_job_main("pipelines.jobs.compact")
