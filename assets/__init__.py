"""The Dagster code location (issue 6): Paimon tables as assets, run by the Spark jobs of
``pipelines/``, with sensors, schedules and checks — the demo's ``defs.yaml`` files
(``assets/demo/``) of the components in :mod:`assets.components` (issue 17).

``defs`` uses the embedded defaults (local warehouse, Spark ``local[2]``);
``assets.production.defs`` the production resources (S3-compatible store, Spark cluster).
"""

from assets.definitions import build_defs

defs = build_defs("local")

__all__ = ["defs"]
