"""Commit users by one scheme, ``<kind>-<name>`` (:mod:`paimon_core.commit.users`), as the
snapshots of a table show them: a writer given no user gets a fresh ``<kind>-<uuid>``; stable
users keep their spelling (a re-run finds its commits by them). (A Dagster run's snapshots
under the legacy ``dagster:<id>``: ``tests/assets/test_maintenance.py``.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core.cli.main import main
from paimon_core.commit.options import CommitOptions
from paimon_core.commit.users import (
    WriteSpec,
    new_commit_user,
    run_commit_user,
    stable_commit_user,
)
from paimon_core.errors import ConfigError
from tests.tables import pk_table

UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def _users(table_path: Path) -> list[str]:
    from paimon_core.catalog import FileSystemCatalog

    table = FileSystemCatalog(str(table_path)).get_table("db.pk")
    return [s.commit_user for s in table.snapshot_manager.snapshots()]


def test_writers_given_no_user_commit_as_kind_uuid(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    wh = tmp_path / "wh"
    t = pk_table(wh, **{"write-only": "true"})
    rows = pa.table({"pt": ["a", "a"], "id": [1, 2], "v": ["x", "y"]})
    builder = t.new_batch_write_builder()  # the builder's default user
    with builder.new_write() as w:
        w.write_arrow(rows)
        builder.new_commit().commit(w.prepare_commit())
    (tmp_path / "r.jsonl").write_text(json.dumps({"pt": "a", "id": 3, "v": "z"}) + "\n")
    assert main(["write", "--warehouse", str(wh), "--table", "db.pk",
                 "--input", str(tmp_path / "r.jsonl")]) == 0  # paimon write, no --commit-user
    assert t.compact() is not None  # table.compact, no commit_user
    capsys.readouterr()
    batch, cli, compact = _users(wh)
    assert re.fullmatch(f"batch-{UUID}", batch), batch
    assert re.fullmatch(f"cli-{UUID}", cli), cli
    assert re.fullmatch(f"compact-{UUID}", compact), compact
    assert new_commit_user("spark") != new_commit_user("spark")


def test_stable_users_keep_their_spelling() -> None:
    # the users earlier versions committed as: their re-runs must find those commits
    assert stable_commit_user("cdc", "shop.orders") == "cdc-shop.orders"
    assert stable_commit_user("dagster", "mart-orders-enriched") == "dagster-mart-orders-enriched"
    assert stable_commit_user("spark-stream", "0123abcd") == "spark-stream-0123abcd"
    assert run_commit_user("0f1e") == "dagster-run-0f1e"
    with pytest.raises(ConfigError, match="commit user: needs a kind and a name"):
        stable_commit_user("cdc", "")


def test_write_spec_made_by_the_caller() -> None:
    given = WriteSpec.new("spark", user="nightly", identifier=7,
                          options=CommitOptions(properties={"k": "v"}))
    assert (given.user, given.identifier, dict(given.options.properties)) == (
        "nightly", 7, {"k": "v"})
    fresh = WriteSpec.new("spark")
    assert re.fullmatch(f"spark-{UUID}", fresh.user) and fresh.identifier is None
    assert fresh.options == CommitOptions()

