"""The demo's jobs that span several tables: one ingestion job for both CDC tables (a day
of every feed per run, by schedule or by the landing sensor) and one expiry job for every
table. (Each table's state sensor comes with its component: ``<db>_<table>_state_sensor``.)"""

import dagster as dg

from assets.cdc import CdcSource, build_landing_sensor
from assets.maintenance import EXPIRE_TAG
from assets.tables import ORDERS

CDC_TABLES = (dg.AssetKey(["cdc", "customers"]), dg.AssetKey(["cdc", "orders"]))
cdc_job = dg.define_asset_job(
    "cdc_ingest_job",
    selection=dg.AssetSelection.assets(*CDC_TABLES),
    description="Ingest one landing day of change events into every CDC table.",
)
cdc_schedule = dg.build_schedule_from_partitioned_job(
    cdc_job, hour_of_day=1, minute_of_hour=15,
    default_status=dg.DefaultScheduleStatus.STOPPED,
)
# ships stopped (start it from the UI): one cdc_ingest_job run per landing day of cdc.orders
# (upstream lands every CDC table of a day together); run_key = the day
cdc_landing_sensor = build_landing_sensor(
    ORDERS, CdcSource(), cdc_job, name="cdc_landing_sensor", minimum_interval_seconds=30)
expiry_job = dg.define_asset_job(
    "expiry_job",
    selection=dg.AssetSelection.groups("maintenance").materializable()
    - dg.AssetSelection.key_substring("_compaction"),
    tags={EXPIRE_TAG: "all-tables"},
    description="Expire snapshots and remove orphan files of every table.",
)
expiry_schedule = dg.ScheduleDefinition(
    name="expiry_schedule",
    cron_schedule="30 2 * * *",
    job=expiry_job,
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Daily snapshot expiry of every table.",
)
table_checks_job = dg.define_asset_job(
    "table_checks_job",
    selection=dg.AssetSelection.all_asset_checks(),
    description="Run every table's asset checks (fsck, small files, retention, freshness).",
)
