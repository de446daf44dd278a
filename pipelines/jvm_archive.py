"""A class-data sharing (AppCDS) archive for the driver JVM of a local Spark session.

A local session's JVM loads and verifies ~10,000 Spark classes from ~250 jars on every
start; that, not the job, is most of a short job's start-up CPU. Java 13+ can dump the
classes a run loaded into an archive at exit (``-XX:ArchiveClassesAtExit``) and map it into
later JVMs (``-XX:SharedArchiveFile``): measured here (2 cores, under load), the driver JVM of
``pipelines.compact``'s session went from 6.7 to 3.1 CPU seconds, and its wall time from 25 to
11 s. The first run pays ~3 s CPU more to write the archive (~110 MB).

* Where: ``$PAIMON_SPARK_CDS_DIR`` (empty or ``off``: no archive), default
  ``$XDG_CACHE_HOME/paimon-pipelines/cds`` (``~/.cache/...``).
* Which: one archive per (Java binary, Spark jars, JVM flags), named by a digest of them, so
  an upgrade of either starts a new archive instead of tripping over a stale one (and the JVM
  still checks the archive's class path and build, and ignores an archive that does not fit).
* Checked: a run that maps the archive asks the JVM whether it did (:meth:`ClassArchive.check`;
  a JVM that cannot use it runs with no class sharing at all) and deletes an archive it could
  not use, so that the next run writes a fresh one.
* Written safely: a run that finds no archive dumps one to its own ``.part`` file; after the
  job, :meth:`ClassArchive.publish` stops the session, lets the JVM exit (closing its stdin, as
  the Python driver's exit would) and renames the complete file into place atomically. Two
  first runs at once each write their own part; a reader never sees a half-written archive.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CDS_DIR_ENV", "ClassArchive", "class_archive"]

log = logging.getLogger(__name__)

#: the environment variable naming the archive directory ("" or "off": no archive)
CDS_DIR_ENV = "PAIMON_SPARK_CDS_DIR"
#: how long :meth:`ClassArchive.publish` waits for the JVM to dump the archive and exit
PUBLISH_TIMEOUT_S = 120.0
#: a part file older than this belongs to a run that died before publishing it
STALE_PART_S = 3600.0


@dataclass(frozen=True)
class ClassArchive:
    """The archive of one (Java, Spark jars, JVM flags) and what this run does with it.

    Attributes:
        path: the archive (complete when it exists).
        part: the file this run's JVM dumps at exit (None: the archive exists, this run maps it).
    """

    path: Path
    part: Path | None = None

    @property
    def jvm_option(self) -> str:
        if self.part is None:
            return f"-XX:SharedArchiveFile={self.path}"
        # the dump lists every class it cannot archive (Spark's reflection accessors...) as a
        # warning: noise for a job's log
        return f"-XX:ArchiveClassesAtExit={self.part} -Xlog:cds=off"

    def check(self, spark: SparkSession) -> bool:
        """When this run maps the archive: whether the JVM took it. A JVM that cannot use a
        ``SharedArchiveFile`` (damaged, or of another build despite the digest) runs without
        any class sharing, silently; then the archive is deleted, so that the next run writes
        a fresh one, and a warning says so."""
        if self.part is not None:
            return False
        try:
            info = str(spark._jvm.java.lang.System.getProperty("java.vm.info"))  # type: ignore[union-attr]
        except Exception as e:  # the check is advisory: a failure to ask leaves things as they are
            log.warning("class-data archive not checked (%s: %s)", type(e).__name__, e)
            return False
        if "sharing" in info:
            return True
        log.warning("class-data archive %s not used by the JVM (%s): deleted, the next run "
                    "writes a new one", self.path, info)
        self.path.unlink(missing_ok=True)
        return False

    def publish(self, spark: SparkSession) -> bool:
        """After the job, when this run writes the archive: stop ``spark``, end its JVM (it
        dumps the archive on exit) and move the dump into place. Never raises: a failure only
        means the next run writes the archive again. Returns whether the archive is in place."""
        if self.part is None:
            return self.path.exists()
        try:
            from pyspark import SparkContext

            gateway = SparkContext._gateway
            proc = getattr(gateway, "proc", None)
            spark.stop()
            if gateway is None or proc is None or proc.stdin is None:
                return False
            gateway.shutdown()
            proc.stdin.close()  # the gateway JVM exits on EOF of its stdin (and dumps)
            proc.wait(timeout=PUBLISH_TIMEOUT_S)
            SparkContext._gateway = None
            SparkContext._jvm = None
            if self.part.stat().st_size == 0:
                return False
            os.replace(self.part, self.path)
            log.info("class-data archive written: %s", self.path)
            return True
        except Exception as e:  # an archive is an optimisation, never a failure
            log.warning("class-data archive not written (%s: %s)", type(e).__name__, e)
            return False
        finally:
            if self.part.exists():
                self.part.unlink(missing_ok=True)


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    java = Path(home) / "bin" / "java" if home else None
    if java is None or not java.exists():
        found = shutil.which("java")
        java = Path(found) if found else None
    return java.resolve() if java is not None else None


def _spark_jars() -> Path | None:
    home = os.environ.get("SPARK_HOME")
    if home and (Path(home) / "jars").is_dir():
        return Path(home) / "jars"
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    return jars if jars.is_dir() else None


def _digest(java: Path, jars: Path, jvm_flags: str) -> str:
    h = hashlib.sha256()
    libjvm = java.parent.parent / "lib" / "server" / "libjvm.so"
    for f in (java, libjvm):
        if f.exists():
            st = f.stat()
            h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    for jar in sorted(jars.glob("*.jar")):
        st = jar.stat()
        h.update(f"{jar}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    h.update(jvm_flags.encode())
    return h.hexdigest()[:16]


def _remove_stale_parts(directory: Path) -> None:
    """Delete part files a killed run left behind (older than :data:`STALE_PART_S`)."""
    now = time.time()
    for p in directory.glob("spark-*.part"):
        try:
            if now - p.stat().st_mtime > STALE_PART_S:
                p.unlink()
        except OSError:
            pass  # gone meanwhile, or not ours to delete


def class_archive(jvm_flags: str, env: Mapping[str, str] | None = None) -> ClassArchive | None:
    """The archive for a local session started with ``jvm_flags``, or None (turned off, no
    Java / Spark jars found, the directory not writable)."""
    env = os.environ if env is None else env
    where = env.get(CDS_DIR_ENV)
    if where is not None and where.strip().lower() in ("", "off"):
        return None
    if where is None:
        cache = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        where = str(Path(cache) / "paimon-pipelines" / "cds")
    java, jars = _java(), _spark_jars()
    if java is None or jars is None:
        return None
    try:
        directory = Path(where)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"spark-{_digest(java, jars, jvm_flags)}.jsa"
        if path.exists() and path.stat().st_size > 0:
            return ClassArchive(path)
        part = path.with_name(f"{path.stem}.{os.getpid()}.part")
        part.touch()  # the directory is writable (the JVM would only warn)
        part.unlink()
        _remove_stale_parts(directory)
    except OSError as e:
        log.warning("class-data archive off (%s)", e)
        return None
    return ClassArchive(path, part)
