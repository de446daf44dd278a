"""How an asset presents itself in Dagster: key, group, owners, tags, kinds, description.

The builders of :mod:`assets.cdc`, :mod:`assets.overwrite`, :mod:`assets.derived` and
:mod:`assets.maintenance` take one :class:`AssetLabels` each; what it leaves unset falls back
to the builder's default (the demo's key, group and kinds)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from paimon_core import PaimonError

__all__ = ["AssetLabels", "SettingsError", "load_function"]


class SettingsError(PaimonError, ValueError):
    """A table's Dagster settings (a component's YAML attributes) are invalid; the message
    names the setting and what is allowed."""


@dataclass(frozen=True)
class AssetLabels:
    """Presentation of one asset; ``None`` / empty = the builder's default.

    Attributes:
        key: the asset key path (``["cdc", "orders"]``).
        group: the asset group.
        owners: ``team:...`` or e-mail addresses.
        tags: asset tags (strings).
        kinds: kinds shown in the UI (``{"paimon", "spark"}``).
        description: replaces the builder's description.
    """

    key: Sequence[str] | None = None
    group: str | None = None
    owners: Sequence[str] = ()
    tags: Mapping[str, str] = field(default_factory=dict)
    kinds: Sequence[str] | None = None
    description: str | None = None

    def asset_key(self, default: Sequence[str]) -> dg.AssetKey:
        return dg.AssetKey(list(self.key or default))

    def asset_kwargs(self, *, key: Sequence[str], group: str, kinds: Sequence[str],
                     description: str) -> dict[str, Any]:
        """Keyword arguments of ``@dg.asset`` (key, group_name, owners, tags, kinds,
        description) with the defaults filled in."""
        return {
            "key": self.asset_key(key),
            "group_name": self.group or group,
            "owners": list(self.owners) or None,
            "tags": dict(self.tags) or None,
            "kinds": set(self.kinds if self.kinds is not None else kinds),
            "description": self.description or description,
        }


def load_function(reference: str, *, what: str = "function") -> Callable[..., Any]:
    """The function named ``pkg.mod:fn`` (or ``pkg.mod.fn``) in a component's YAML.

    Raises:
        SettingsError: naming ``what`` it is (``transform``, ``alert function``) when the
            reference is malformed, cannot be imported, or is not callable.
    """
    module, sep, name = reference.partition(":")
    if not sep:
        module, _, name = reference.rpartition(".")
    if not module or not name:
        raise SettingsError(f"{what} {reference!r} is not a function reference "
                            "'package.module:function'")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise SettingsError(f"{what} {reference!r} cannot be loaded: {e}") from e
    if not callable(fn):
        raise SettingsError(f"{what} {reference!r} is not callable")
    return fn  # type: ignore[no-any-return]
