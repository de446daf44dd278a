"""Hostile identifiers, partition values, tag names and commit messages (reliability.md I7 and
rules 7-8): rejected or escaped, and NOTHING is created or deleted outside
``<warehouse>/<db>.db/<table>/`` — checked by listing everything around the table on local disk
and the whole bucket on S3, before and after."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.commit_message import InvalidCommitMessageError
from paimon_core.errors import InvalidIdentifierError, PaimonError
from paimon_core.identifier import Identifier
from paimon_core.schema_builder import Schema
from tests.reliability.harness import assert_fsck_clean, open_table, rows_of
from tests.reliability.minwrite import writer_for

HOSTILE_NAMES = ["../x", "a/b", "..", ".", "", "\x00", "x\\y", "..\\..\\x", "/abs", " x",
                 ".hidden", "a\nb", "x/../../y", "C:\\x"]
HOSTILE_VALUES = ["../x", "a/b", "..", ".", "%2F", "\x00", "..\\..\\x", "/abs",
                  "x/../../../../y", "=", "a=b/c=d", "%", "%%2E%2E", "\n", "ü/ß", "~", "$HOME",
                  "bucket-0", "snapshot", "../../../snapshot/LATEST"]


def _walk_local(root: Path) -> dict[str, bytes]:
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def _list_bucket(opts: dict[str, str], bucket: str) -> dict[str, str]:
    import boto3

    c = boto3.client("s3", endpoint_url=opts["s3.endpoint"], region_name="us-east-1",
                     aws_access_key_id="testing", aws_secret_access_key="testing")
    out: dict[str, str] = {}
    for page in c.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            out[o["Key"]] = o["ETag"]
    return out


class Storage:
    """The warehouse plus an 'everything around it' snapshot function."""

    def __init__(self, kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
        self.kind = kind
        if kind == "local":
            self.outer = tmp_path
            self.warehouse = str(tmp_path / "wh")
            self.options: dict[str, str] | None = None
            (tmp_path / "victim").mkdir()
            (tmp_path / "victim" / "keep.txt").write_text("precious")
            (tmp_path / "wh").mkdir()
            (tmp_path / "wh" / "keep.txt").write_text("precious")
            (tmp_path / "wh" / "x").write_text("precious")
            (tmp_path / "x").write_text("precious")
            self.table_prefix = os.path.join("wh", "db.db", "t") + os.sep
        else:
            root, opts = request.getfixturevalue("s3_bucket")
            self.warehouse, self.options = root, opts
            self.bucket = root[len("s3://"):].split("/", 1)[0]
            from paimon_core.io.file_io import FileIO

            fio = FileIO(root, opts)
            for key in ("victim/keep.txt", "wh/keep.txt", "x", "wh/x", "wh/db.db/x"):
                fio.write_bytes(f"s3://{self.bucket}/{key}", b"precious")
            self.table_prefix = "wh/db.db/t/"

    def everything(self) -> dict[str, Any]:
        if self.kind == "local":
            return _walk_local(self.outer)
        assert self.options is not None
        return _list_bucket(self.options, self.bucket)

    @contextmanager
    def contained(self, inside: str | None = None) -> Iterator[None]:
        """Nothing outside ``inside`` (default: the table dir) created, changed or deleted."""
        prefix = self.table_prefix if inside is None else inside
        before = self.everything()
        yield
        after = self.everything()
        outside_before = {k: v for k, v in before.items() if not k.startswith(prefix)}
        outside_after = {k: v for k, v in after.items() if not k.startswith(prefix)}
        assert outside_after == outside_before, (
            f"I7: outside {prefix!r}: created {sorted(set(outside_after) - set(outside_before))}"
            f", deleted {sorted(set(outside_before) - set(outside_after))}")


STORAGES = ["local", pytest.param("s3", marks=pytest.mark.s3)]


@pytest.fixture(params=STORAGES)
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    return Storage(request.param, tmp_path, request)


def _schema() -> Schema:
    return Schema.of([("pt", "STRING"), ("v", "BIGINT")], partition_keys=["pt"])


def test_hostile_database_and_table_names_are_rejected_before_storage(storage: Storage
                                                                      ) -> None:
    cat = FileSystemCatalog(storage.warehouse, storage.options)
    ops: list[Callable[[str], Any]] = [
        lambda n: cat.create_database(n),
        lambda n: cat.drop_database(n, ignore_if_not_exists=True, cascade=True),
        lambda n: cat.create_table(Identifier(n, "t"), _schema()),
        lambda n: cat.create_table(Identifier("db", n), _schema()),
        lambda n: cat.create_table(f"{n}.t", _schema()),
        lambda n: cat.create_table(f"db.{n}", _schema()),
        lambda n: cat.get_table(Identifier("db", n)),
        lambda n: cat.drop_table(Identifier("db", n), ignore_if_not_exists=True),
        lambda n: cat.drop_table(Identifier(n, "keep.txt"), ignore_if_not_exists=True),
        lambda n: cat.table_exists(Identifier("db", n)),
        lambda n: cat.list_tables(n),
    ]
    with storage.contained(inside="\0nothing"):  # nothing may change anywhere
        for name in HOSTILE_NAMES:
            for op in ops:
                with pytest.raises(InvalidIdentifierError):
                    op(name)


def test_percent_names_stay_inside_the_warehouse(storage: Storage) -> None:
    """``%2F`` is a legal name: it is used literally (never URL-decoded into a separator)."""
    cat = FileSystemCatalog(storage.warehouse, storage.options)
    with storage.contained(inside="wh/%2F.db/"):
        t = cat.create_table("%2F.%2E%2E", _schema())
        assert t.path.endswith("/%2F.db/%2E%2E")
        assert cat.list_tables("%2F") == ["%2E%2E"]
        cat.drop_table("%2F.%2E%2E")
        assert not cat.table_exists("%2F.%2E%2E")


def test_hostile_partition_values_are_escaped_and_contained(storage: Storage) -> None:
    cat = FileSystemCatalog(storage.warehouse, storage.options)
    cat.create_table("db.t", _schema())
    table = open_table(storage.warehouse, storage.options)
    values = HOSTILE_VALUES
    with storage.contained():
        w = writer_for(table, "u")
        w.write_arrow(pa.table({"pt": values, "v": pa.array(range(len(values)), pa.int64())}))
        msgs = w.prepare_commit()
        table.new_commit("u").commit(msgs, 1)
        got = sorted(rows_of(table.to_arrow(), ["v", "pt"]))
        assert got == sorted(zip(range(len(values)), values)), "values do not round-trip"
        # partition-scoped operations with hostile specs stay inside too
        for v in values[:6]:
            assert sorted(rows_of(table.to_arrow(filter=f"pt = '{_sql(v)}'"), ["pt"])) == [
                (v,)] if "\x00" not in v and "\n" not in v else True
        table.new_commit("u").overwrite([], {"pt": "../x"}, 2, dynamic=False)
        table.new_commit("u").drop_partitions([{"pt": "a/b"}, {"pt": ".."}], 3)
        left = {r[0] for r in rows_of(table.to_arrow(), ["pt"])}
        assert left == set(values) - {"../x", "a/b", ".."}
        assert_fsck_clean(open_table(storage.warehouse, storage.options))


def _sql(v: str) -> str:
    return v.replace("'", "''")


def test_hostile_tag_names_are_rejected(storage: Storage) -> None:
    cat = FileSystemCatalog(storage.warehouse, storage.options)
    cat.create_table("db.t", _schema())
    table = open_table(storage.warehouse, storage.options)
    w = writer_for(table, "u")
    w.write_arrow(pa.table({"pt": ["a"], "v": pa.array([1], pa.int64())}))
    table.new_commit("u").commit(w.prepare_commit(), 1)
    with storage.contained(inside="\0nothing"):
        for name in HOSTILE_NAMES:
            with pytest.raises(InvalidIdentifierError):
                table.create_tag(name, 1)
            with pytest.raises((InvalidIdentifierError, PaimonError)):
                table.delete_tag(name)


def _hostile_messages(table: Any, msgs: list[Any], name: str) -> list[Any]:
    m = msgs[0]
    f = replace(m.new_files[0], file_name=name)
    return [replace(m, new_files=(f,))]


HOSTILE_FILE_NAMES = ["../../../../x", "../../../../victim/keep.txt", "../../../keep.txt",
                      "/etc/passwd", "..", "a/../../b"]


def test_hostile_file_names_in_commit_messages_are_rejected(storage: Storage) -> None:
    cat = FileSystemCatalog(storage.warehouse, storage.options)
    cat.create_table("db.t", _schema())
    table = open_table(storage.warehouse, storage.options)
    w = writer_for(table, "u")
    w.write_arrow(pa.table({"pt": ["a"], "v": pa.array([1], pa.int64())}))
    msgs = w.prepare_commit()
    with storage.contained():
        for name in HOSTILE_FILE_NAMES:
            bad = _hostile_messages(table, msgs, name)
            with pytest.raises(InvalidCommitMessageError):
                table.new_commit("u").commit(bad, 1)
            extra = [replace(msgs[0], new_files=(replace(msgs[0].new_files[0],
                                                          extra_files=(name,)),))]
            with pytest.raises(InvalidCommitMessageError):
                table.new_commit("u").commit(extra, 1)
        foreign = [replace(msgs[0], table_path=storage.warehouse + "/db.db/other")]
        with pytest.raises(InvalidCommitMessageError):
            table.new_commit("u").commit(foreign, 1)
        assert table.snapshot_manager.list_snapshot_ids() == []


@pytest.mark.parametrize("kind", ["local",
                                  pytest.param("s3", marks=pytest.mark.s3)])
def test_abort_of_hostile_messages_deletes_nothing_outside(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    storage = Storage(kind, tmp_path, request)
    cat = FileSystemCatalog(storage.warehouse, storage.options)
    cat.create_table("db.t", _schema())
    table = open_table(storage.warehouse, storage.options)
    w = writer_for(table, "u")
    w.write_arrow(pa.table({"pt": ["a"], "v": pa.array([1], pa.int64())}))
    msgs = w.prepare_commit()
    with storage.contained():
        for name in HOSTILE_FILE_NAMES:
            # abort validates like commit (fixed in c4fcc03: it used to delete
            # <warehouse>/x for '../../../../x' on local disk)
            with pytest.raises(InvalidCommitMessageError):
                table.new_commit("u").abort(_hostile_messages(table, msgs, name))
        table.new_commit("u").abort(msgs)  # the genuine messages still abort
