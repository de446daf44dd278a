"""Compile and run ``java/BinaryRowOracle.java`` against the oracle's Paimon 0.9 bridge jar."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ORACLE = Path(__file__).resolve().parents[3] / "shared" / "oracle" / "oracle"
SOURCE = Path(__file__).with_name("java") / "BinaryRowOracle.java"


def oracle_home() -> Path:
    home = os.environ.get("PAIMON_ORACLE_HOME")
    if home:
        return Path(home)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(cache) / "paimon-oracle"


def ensure_oracle() -> Path:
    """Install the oracle if needed (first call ~40-60 s) and return its jars directory."""
    jars = oracle_home() / "jars"
    if not list(jars.glob("paimon-python-java-bridge-*.jar")):
        if not ORACLE.exists():
            pytest.skip("the oracle (../shared/oracle) is not available")
        env = dict(os.environ)
        venv = Path(__file__).resolve().parents[2] / ".venv"
        spark_jars = venv / "lib/python3.11/site-packages/pyspark/jars"
        if spark_jars.is_dir():
            env.setdefault("PAIMON_ORACLE_SPARK_JARS", str(spark_jars))
        subprocess.run([str(ORACLE), "setup", "-q"], env=env, check=True, timeout=900)
    return jars


def compile_java(workdir: Path, source: Path) -> str:
    """Compile ``source`` against the oracle's Paimon 0.9 jars into ``workdir`` (skips the test
    without a JDK) and return the classpath to run it with."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("javac/java not installed")
    jars = ensure_oracle()
    classpath = os.pathsep.join([str(workdir), *sorted(glob.glob(str(jars / "*.jar")))])
    subprocess.run(
        ["javac", "-nowarn", "-d", str(workdir), "-cp", classpath, str(source)],
        check=True, capture_output=True, timeout=300,
    )
    return classpath


def run_java(classpath: str, main_class: str, lines: list[str], *, timeout: int = 600,
             jvm_args: tuple[str, ...] = ()) -> list[str]:
    """Run ``main_class`` with ``lines`` on stdin (one JVM); its stdout lines."""
    proc = subprocess.run(
        ["java", *jvm_args, "-cp", classpath, main_class],
        input="\n".join(lines) + "\n", capture_output=True, text=True, encoding="utf-8",
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise AssertionError(f"{main_class} failed: {proc.stderr[-3000:]}")
    return proc.stdout.splitlines()


class JavaHarness:
    def __init__(self, workdir: Path) -> None:
        self.classpath = compile_java(workdir, SOURCE)

    def run(self, lines: list[str]) -> list[str]:
        """Send protocol lines, return the output lines (``T`` lines answer ``ok``)."""
        return run_java(self.classpath, "BinaryRowOracle", lines)
