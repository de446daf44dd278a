"""The code location with the production resources (docker/compose.yaml):
``dagster code-server start -m assets.production``."""

from assets.definitions import build_defs

defs = build_defs("production")

__all__ = ["defs"]
