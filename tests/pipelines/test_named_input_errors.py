"""Errors that name what the user handed over (issue 27, "smaller"): a wrong ``--warehouse`` is
reported as such (it does not exist / is no Paimon warehouse / is a table directory), not as a
missing table, by the ``paimon`` CLI and by the Spark jobs, before their JVM starts; an
unknown column type names the file, the column and the closest type. Every command runs as
the README writes it, in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.schema_builder import Schema
from pipelines.session import source_root
from tests.readme_harness import VENV_BIN

JOBS = ["pipelines.jobs.cdc_ingest", "pipelines.jobs.compact", "pipelines.jobs.expire",
        "pipelines.jobs.batch_overwrite"]


def _job_args(job: str, tmp: Path) -> list[str]:
    """The job's own required flags (besides --warehouse / --table)."""
    return {"pipelines.jobs.cdc_ingest": ["--landing", str(tmp / "landing")],
            "pipelines.jobs.batch_overwrite": ["--input", str(tmp / "in.parquet")]}.get(job, [])


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [source_root(), *filter(None, [os.environ.get("PYTHONPATH")])])}
    env.pop("PAIMON_WAREHOUSE", None)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wh = tmp_path_factory.mktemp("named") / "wh"
    FileSystemCatalog(str(wh)).create_table(
        "shop.orders", Schema.of([("id", "BIGINT"), ("v", "STRING")], primary_keys=["id"]))
    return wh


def _cases(wh: Path) -> list[tuple[str, str, str]]:
    """(--warehouse, --table, what stderr must say)."""
    missing = str(wh.parent / "no-such-wh")
    return [
        (missing, "shop.orders",
         f"WarehouseNotExistError: warehouse '{missing}' does not exist"),
        (str(wh.parent), "shop.orders",
         f"NotAWarehouseError: '{wh.parent}' is not a Paimon warehouse"),
        (str(wh / "shop.db" / "orders"), "shop.orders",
         "it is a table directory: the warehouse is two levels up"),
        (str(wh), "shop.ordrs", "table 'shop.ordrs' does not exist in warehouse "
         f"'{wh}' (did you mean 'shop.orders'?)"),
        (str(wh), "shp.orders", "has no database 'shp' (did you mean 'shop'?)"),
    ]


def test_paimon_cli_names_the_warehouse(warehouse: Path) -> None:
    for wh, table, said in _cases(warehouse):
        p = _run([str(VENV_BIN / "paimon"), "describe", "--warehouse", wh, "--table", table])
        assert p.returncode == 1 and said in p.stderr, (wh, table, p.stderr)


@pytest.mark.parametrize("job", JOBS)
def test_spark_jobs_name_the_warehouse_before_starting_spark(job: str, warehouse: Path,
                                                            tmp_path: Path) -> None:
    wh, table, said = _cases(warehouse)[1 if job == "pipelines.jobs.expire" else 0]
    p = _run([sys.executable, "-m", job, "--warehouse", wh, "--table", table,
              *_job_args(job, tmp_path)])
    assert p.returncode == 1, p.stderr[-2000:]
    last = p.stderr.strip().splitlines()[-1]
    assert said in last and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert "SparkContext" not in p.stderr  # refused before the session started


@pytest.mark.parametrize("job", JOBS)
def test_spark_jobs_name_a_malformed_option_before_starting_spark(job: str, warehouse: Path,
                                                                 tmp_path: Path) -> None:
    """A ``--storage-option`` / ``--conf`` item without ``=`` is refused by every job, named
    with its flag, through the one parser the ``paimon`` CLI uses too."""
    base = [sys.executable, "-m", job, "--warehouse", str(warehouse), "--table",
            "shop.orders", *_job_args(job, tmp_path)]
    for flag, item in (("--storage-option", "s3.endpoint"), ("--conf", "spark.ui.enabled")):
        p = _run([*base, flag, item])
        assert p.returncode == 1, p.stderr[-2000:]
        last = p.stderr.strip().splitlines()[-1]
        name = job.rsplit(".", 1)[-1]
        assert last == f"{name}: ConfigError: {flag}: expects KEY=VALUE, got '{item}'", last
        assert "Traceback" not in p.stderr and "SparkContext" not in p.stderr


def test_paimon_cli_names_a_malformed_option(warehouse: Path) -> None:
    for cmd, flag in ((["describe"], "--storage-option"), (["compact"], "--storage-option"),
                      (["write", "--input", "-"], "--storage-option"),
                      (["consumer", "list"], "--storage-option"),
                      (["stream"], "--option")):
        p = _run([str(VENV_BIN / "paimon"), *cmd, "--warehouse", str(warehouse), "--table",
                  "shop.orders", flag, "oops"])
        assert p.returncode == 1, (cmd, p.stderr)
        assert p.stderr.strip() == f"paimon: ConfigError: {flag}: expects KEY=VALUE, got 'oops'"


def test_unknown_type_names_file_column_and_closest_type(tmp_path: Path) -> None:
    schema = tmp_path / "orders.json"
    schema.write_text(json.dumps({"fields": [{"name": "id", "type": "BIGNT"},
                                             {"name": "v", "type": "STRING"}],
                                  "primary_keys": ["id"]}))
    said = (f"{schema}: column 'id': unknown type 'BIGNT' (did you mean 'BIGINT'?)")
    wh = str(tmp_path / "wh")
    p = _run([str(VENV_BIN / "paimon"), "create", "--warehouse", wh, "--table", "shop.orders",
              "--schema", str(schema)])
    assert p.returncode == 1 and said in p.stderr, p.stderr
    p = _run([sys.executable, "-m", "pipelines.jobs.cdc_ingest", "--warehouse", wh, "--table",
              "shop.orders", "--landing", str(tmp_path), "--schema", str(schema)])
    assert p.returncode == 1 and said in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert "SparkContext" not in p.stderr
    FileSystemCatalog(wh).create_table("shop.orders", Schema.of([("id", "BIGINT")]))
    p = _run([str(VENV_BIN / "paimon"), "alter", "--warehouse", wh, "--table", "shop.orders",
              "--add-column", "phone STRNG"])
    assert p.returncode == 1, p.stderr
    assert ("--add-column 'phone STRNG': unknown type 'STRNG' (did you mean 'STRING'?)"
            in p.stderr)
