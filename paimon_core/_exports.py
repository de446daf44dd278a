"""Lazy re-exports declared once: a package's ``if TYPE_CHECKING:`` block of
``from module import Name as Name`` lines is both what type checkers see and, read back here
with :mod:`ast`, the map a PEP 562 ``__getattr__`` imports from on first use (the same idea as
Scientific Python's ``lazy_loader.attach_stub``, without a stub file). ``__all__`` is that block's
names plus the module's eager ``Name as Name`` imports, so no name is written twice.

Used by :mod:`paimon_core` (the front door) and :mod:`paimon_core.integration`.
"""

from __future__ import annotations

import ast
import importlib
from typing import Any, NamedTuple


class Exports(NamedTuple):  # not a dataclass: dataclasses imports inspect (start-up cost)
    """What a module re-exports: ``lazy`` name -> defining module, ``eager`` names."""

    lazy: dict[str, str]
    eager: tuple[str, ...]

    @property
    def names(self) -> list[str]:
        """The module's ``__all__``: every re-exported name, sorted."""
        return sorted({*self.lazy, *self.eager})

    def load(self, name: str) -> Any:
        """The value of lazily exported ``name`` (imports its module)."""
        return getattr(importlib.import_module(self.lazy[name]), name)


def _explicit(node: ast.ImportFrom) -> list[str]:
    """The ``Name as Name`` (explicit re-export) aliases of one import."""
    return [a.name for a in node.names if a.asname == a.name]


def _declared(node: ast.ImportFrom, source_file: str) -> list[str]:
    """The names of one ``TYPE_CHECKING`` import, every one of them a ``Name as Name``: a plain
    or renamed import there would be seen by type checkers and missing at run time."""
    bad = [a.name for a in node.names if a.asname != a.name]
    if bad:
        raise ImportError(f"{source_file}:{node.lineno}: lazy re-export {bad[0]!r} of "
                          f"{node.module} must be written '{bad[0]} as {bad[0]}'")
    return _explicit(node)


def _is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def read_exports(source_file: str) -> Exports:
    """The re-exports a module declares in its source (see the module docstring)."""
    with open(source_file, encoding="utf-8") as f:
        tree = ast.parse(f.read(), source_file)
    lazy: dict[str, str] = {}
    eager: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            eager.extend(_explicit(node))
        elif isinstance(node, ast.If) and _is_type_checking(node):
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.module:
                    lazy.update(dict.fromkeys(_declared(stmt, source_file), stmt.module))
    return Exports(lazy, tuple(eager))
