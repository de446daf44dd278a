"""PySpark jobs over paimon_core: CDC ingestion, batch insert-overwrite, per-bucket compaction,
snapshot expiry (issue 5). Imports point one way: assets -> pipelines -> paimon_core.

Not built yet: this package only reserves its place in the layout.
"""
