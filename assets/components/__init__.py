"""Dagster Components for Paimon tables, declared in ``defs.yaml`` (issue 17).

Four components, each a thin YAML front to the builders of :mod:`assets.cdc`,
:mod:`assets.overwrite`, :mod:`assets.derived`, :mod:`assets.maintenance` and
:mod:`assets.checks` (the one home of what they build):

* :class:`PaimonCdcTable` — a primary-key table fed by CDC change events (``pipelines.cdc.ingest``):
  asset, checks, ingestion job and its schedule.
* :class:`PaimonCdcDatabase` — every table of one CDC feed of a whole database
  (``pipelines.cdc.database``): one asset per table in one multi-asset (one Spark pass a run),
  tables appearing in the feed becoming assets at the next load (a state-backed component).
* :class:`PaimonOverwriteTable` — a partitioned table whose partitions are replaced by landed
  extracts (``pipelines.batch_overwrite``): asset, checks, job and schedule.
* :class:`PaimonDerivedTable` — a table following a source table snapshot range by snapshot
  range through a Python transform (``pkg.mod:fn``), exactly once: asset, checks, job and the
  snapshot sensor.
* :class:`PaimonTableMaintenance` — per-bucket compaction, snapshot expiry and orphan removal
  of any table (also one another engine writes): assets, checks, jobs and schedules.
* :class:`PaimonRunAlerts` — an alert (webhook and / or Python function) for every failed
  run of the code location.

Every asset's key, group, owners, tags, kinds and description are settable (``asset:``).
The definitions need the resources ``catalog``, ``landing`` and ``spark``
(:func:`assets.resources.local_resources`): add them with :class:`PaimonResources`.

Example ``defs.yaml``::

    type: assets.components.PaimonCdcTable
    attributes:
      table: shop.customers
      columns: [{name: id, type: BIGINT}, {name: name, type: STRING}, {name: lsn, type: BIGINT}]
      primary_key: [id]
      options: {bucket: 2, sequence.field: lsn}
      source: {connector: postgresql, start: "2025-01-01"}
"""

from assets.components.alerts import PaimonRunAlerts
from assets.components.database import PaimonCdcDatabase
from assets.components.maintenance import (
    CompactionAttributes,
    ExpiryAttributes,
    PaimonTableMaintenance,
)
from assets.components.tables import (
    AssetAttributes,
    ChecksAttributes,
    Column,
    PaimonCdcTable,
    PaimonDerivedTable,
    PaimonOverwriteTable,
    PaimonResources,
    ScheduleAttributes,
)

__all__ = [
    "AssetAttributes",
    "ChecksAttributes",
    "Column",
    "CompactionAttributes",
    "ExpiryAttributes",
    "PaimonCdcDatabase",
    "PaimonCdcTable",
    "PaimonDerivedTable",
    "PaimonOverwriteTable",
    "PaimonResources",
    "PaimonRunAlerts",
    "PaimonTableMaintenance",
    "ScheduleAttributes",
]
