"""What the other components of the same ``dg`` project declare, read while one of them
builds its definitions (the project's component tree: YAML resolved, nothing built, no I/O
beyond the defs folder).

A derived table's ``source:`` must be a table some component of the project writes (or say
``source_external: true``): a typo (``shop.customerz``) fails the load with one line naming
the file, the field and the value, instead of a lineage edge to a phantom asset and a sensor
skipping forever. A maintenance component does not define again the checks of a table whose
own component has them (:func:`table_owner`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
from dagster_shared.yaml_utils.source_position import (
    SourcePositionTree,
    ValueAndSourcePositionTree,
)

from paimon_core.errors import did_you_mean

__all__ = ["TableDecl", "field_location", "project_tables", "suggestion"]


@dataclass(frozen=True)
class TableDecl:
    """A table one component of the project declares as an asset.

    Attributes:
        identifier: ``db.table``.
        key: its asset key path.
        component: the component's class name (``PaimonCdcTable``...).
        where: its ``defs.yaml`` (relative to the project root) and line.
        checks: whether that component builds the table's asset checks.
        bucket: the ``bucket`` option the component creates the table with (``-1``, Paimon's
            default, when its ``options:`` leave it out); None: a table the component does
            not create (a maintenance component's ``external: true``).
        primary_key: whether the component declares a primary key.
    """

    identifier: str
    key: tuple[str, ...]
    component: str
    where: str
    checks: bool
    bucket: str | None = None
    primary_key: bool = False


def _source_tree(decl: object) -> SourcePositionTree | None:
    """The source positions of a component declared in YAML (None: not declared in YAML,
    e.g. the mock declaration of ``dg.build_defs_for_component``)."""
    source = getattr(decl, "source_tree", None)
    return (source.source_position_tree if isinstance(source, ValueAndSourcePositionTree)
            else None)


def _where(context: dg.ComponentLoadContext, decl: object, path: Sequence[str] = ()) -> str:
    """``defs/x/defs.yaml:7`` of ``decl``'s YAML (the line of ``path`` under its document)."""
    tree = _source_tree(decl)
    position = None
    if tree is not None:
        position = (tree.lookup(list(path)) if path else None) or tree.lookup([])
    if position is None:
        return str(getattr(getattr(decl, "loc", None), "file_path", "?"))
    name = Path(position.filename).resolve()
    with contextlib.suppress(ValueError):  # a file outside the project: its full path
        name = name.relative_to(Path(context.project_root).resolve())
    return f"{name}:{position.start.line}"


def field_location(context: dg.ComponentLoadContext, field: str) -> str:
    """``<defs.yaml>:<line>`` of attribute ``field`` of the component being built (its file
    alone when it was not built from YAML)."""
    decl = getattr(context, "component_decl", None)
    if _source_tree(decl) is None:
        return "(not from a defs.yaml)"
    return _where(context, decl, ["attributes", field])


def project_tables(context: dg.ComponentLoadContext) -> list[TableDecl] | None:
    """The tables the project's Paimon table components declare as assets (CDC, overwrite and
    derived tables; maintenance with ``external: true``); None when the component being built
    is not declared in a ``defs.yaml`` of a ``dg`` project (``dg.build_defs_for_component``,
    a Python ``component.py``: no tree of YAML declarations to look in)."""
    from assets.components.maintenance import PaimonTableMaintenance
    from assets.components.tables import PaimonCdcTable, PaimonDerivedTable, PaimonOverwriteTable

    if _source_tree(getattr(context, "component_decl", None)) is None:
        return None
    tree = context.component_tree
    pairs = list(tree.find_root_decl().iterate_loc_component_decl_pairs())
    out: list[TableDecl] = []
    for loc, decl in pairs:
        kind = getattr(decl, "component_type", None)
        if not isinstance(kind, type) or not issubclass(kind, (
                PaimonCdcTable, PaimonOverwriteTable, PaimonDerivedTable,
                PaimonTableMaintenance)):
            continue
        comp = tree.load_component(loc)
        bucket: str | None = None
        primary_key = False
        if isinstance(comp, PaimonTableMaintenance):
            if not comp.external:
                continue
            key = tuple(comp.table_asset_key or ())
            checks = comp.checks is not None and comp.checks.enabled
        else:
            assert isinstance(comp, (PaimonCdcTable, PaimonOverwriteTable, PaimonDerivedTable))
            key = tuple(comp.asset.key or ())
            checks = comp.checks.enabled
            bucket = str(comp.options.get("bucket", -1))
            primary_key = bool(comp.primary_key)
        out.append(TableDecl(comp.table, key or tuple(comp.table.split(".", 1)),
                             kind.__name__, _where(context, decl, ["attributes", "table"]),
                             checks, bucket, primary_key))
    return out


def suggestion(value: str, choices: Sequence[str]) -> str:
    """``" (did you mean 'x'?)"`` for the closest of ``choices``, or ``""``."""
    close = did_you_mean(value, choices)
    return f" (did you mean {close!r}?)" if close else ""
