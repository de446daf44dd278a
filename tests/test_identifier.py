from __future__ import annotations

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import InvalidIdentifierError, TableNotExistError
from paimon_core.identifier import Identifier


@pytest.mark.parametrize(
    "name", ["", ".", "..", "a/b", "a\\b", "../x", "x\x00", "x\n", " x", ".hidden"]
)
def test_bad_names_rejected(name: str) -> None:
    with pytest.raises(InvalidIdentifierError):
        Identifier("db", name)
    with pytest.raises(InvalidIdentifierError):
        Identifier(name, "t")


def test_parse() -> None:
    assert Identifier.parse("db.t") == Identifier("db", "t")
    with pytest.raises(InvalidIdentifierError):
        Identifier.parse("db.t.x")
    with pytest.raises(InvalidIdentifierError):
        Identifier.parse("dbt")


def test_hostile_names_never_touch_storage(tmp_path: object) -> None:
    import os

    root = os.path.join(str(tmp_path), "wh")
    os.makedirs(root)
    cat = FileSystemCatalog(root)
    for bad in ["../x.t", "db./", "a/b.c", "./..", "db..", "db.", ".t"]:
        with pytest.raises(InvalidIdentifierError):
            cat.get_table(bad)
    for bad_db in ["..", ".", "", "a/b", "../../etc", "x\\y"]:
        with pytest.raises(InvalidIdentifierError):
            cat.create_database(bad_db)
        with pytest.raises(InvalidIdentifierError):
            cat.list_tables(bad_db)
    assert os.listdir(str(tmp_path)) == ["wh"]
    assert os.listdir(root) == []


def test_missing_table_is_typed(tmp_path: object) -> None:
    cat = FileSystemCatalog(str(tmp_path))
    with pytest.raises(TableNotExistError):
        cat.get_table("db.nope")
