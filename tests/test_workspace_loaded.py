"""``scripts/topology.py``'s reading of the webserver's workspace (what the UI polls while its
code locations load): a location whose code server was unreachable for a while is still
loading, any other load error fails at once."""

from __future__ import annotations

from typing import Any

import pytest

from tests.assets.processes import _topology


def _answer(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"workspaceOrError": {"locationEntries": list(entries)}}


def _entry(status: str, typename: str, class_name: str | None = None) -> dict[str, Any]:
    error = {"__typename": typename}
    if class_name is not None:
        error.update(className=class_name, message=f"{class_name}: boom", stack=[])
    return {"name": "paimon", "loadStatus": status, "locationOrLoadError": error}


def test_loaded_location() -> None:
    assert _topology.workspace_loaded(_answer(_entry("LOADED", "RepositoryLocation")))


def test_loading_location_and_no_location_are_not_loaded() -> None:
    assert not _topology.workspace_loaded(_answer(_entry("LOADING", "RepositoryLocation")))
    assert not _topology.workspace_loaded(_answer())


def test_unreachable_code_server_is_still_loading() -> None:
    """The webserver's watch thread gave up on a restarting code server (its location shows
    DagsterUserCodeUnreachableError) and refreshes it once the server answers."""
    stale = _entry("LOADED", "PythonError", _topology.TRANSIENT_LOAD_ERROR)
    assert not _topology.workspace_loaded(_answer(stale))
    assert not _topology.workspace_loaded(_answer(_entry("LOADED", "RepositoryLocation"), stale))


def test_user_code_error_fails_with_its_message() -> None:
    broken = _entry("LOADED", "PythonError", "DagsterUserCodeProcessError")
    with pytest.raises(RuntimeError, match="DagsterUserCodeProcessError: boom"):
        _topology.workspace_loaded(_answer(broken, _entry("LOADED", "RepositoryLocation")))
