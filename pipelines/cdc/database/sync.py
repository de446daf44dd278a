"""Database sync: one landing of change events of many tables -> one Paimon table each
(Paimon's ``kafka_sync_database``), one commit per table per batch, exactly once.

Per batch ``n`` (the landing's ``batch-<n>`` files, :func:`pipelines.cdc.ingest.list_batches`):

1. one routing pass writes each source table's lines to its staging files
   (:mod:`pipelines.cdc.database.staging`); lines naming no table are counted by reason and
   quarantined;
2. each source table taken by ``--including-tables`` / ``--excluding-tables``
   (:class:`~pipelines.cdc.source_tables.TableFilter`; the others are counted as excluded)
   goes to the warehouse table ``<database>.<prefix><table><suffix>``, created from its events
   when missing (:mod:`pipelines.cdc.database.create`), and is ingested as an ordinary CDC
   batch of that table (:func:`pipelines.cdc.ingest.ingest_batch`: new columns evolve the
   schema, malformed events go to ``<quarantine>/<target>/batch-<n>/``) under the commit user
   ``cdc-<target>`` (``<--commit-user>-<table>`` when given) with commit identifier ``n``:
   a re-run after a crash between two tables' commits commits only the missing tables;
3. once every taken table of the batch is committed, the staging goes, and
   ``<staging>/batch-<n>.done.json`` notes the batch's tables: a later run asks those tables
   whether they hold the batch instead of routing it again.

``<staging>`` is ``<landing>/_staging`` and the default quarantine ``<landing>/_quarantine``;
for a landing the job may not write to, :attr:`DatabaseOptions.staging` (``--staging-dir S``)
puts both elsewhere: ``S/batch-<n>/...``, ``S/batch-<n>.done.json`` and ``S/_quarantine``
(an unwritable staging is refused before any work, naming it).

A table that fails (no primary key to create it with, too many malformed events, two source
tables of one target) is reported with its reason; the other tables go on, the failed table
takes no later batch in this run (its batches stay in order), and the batch's staging stays
for the re-run.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

from paimon_core import PaimonError, SchemaError
from paimon_core.integration import FileIO, join
from pipelines.cdc.database.create import CreateOptions, NoColumnsYet, new_table_schema
from pipelines.cdc.database.staging import (
    MARKER,
    RoutedBatch,
    SourceTable,
    StagedTable,
    check_writable,
    clear_staging,
    line_tables,
    route_batch,
    staging_dir,
    staging_root,
)
from pipelines.cdc.ingest import (
    BatchReport,
    CdcOptions,
    ErrorRatioExceeded,
    ingest_batch,
    list_batches,
)
from pipelines.cdc.lines import split_lines
from pipelines.cdc.source_tables import TableFilter
from pipelines.cdc.values.event_time import OP_TS, check_event_time
from pipelines.config import CatalogSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DatabaseBatchReport", "DatabaseOptions", "SourceTable", "TableReport",
           "check_staging", "discover_tables", "sync_database", "target_identifier"]

log = logging.getLogger(__name__)

#: bytes of a table's staged events read to create it (its first events)
_SAMPLE_BYTES = 4 << 20


@dataclass(frozen=True)
class DatabaseOptions:
    """Knobs of :func:`sync_database` (Paimon's ``kafka_sync_database`` flags); ``cdc``: the
    per-table CDC options (format, error ratio, ...; its ``commit_user`` is the prefix of
    every table's commit user, its ``quarantine`` the root of every table's quarantine)."""

    cdc: CdcOptions = field(default_factory=CdcOptions)
    including_tables: str = ".*"
    excluding_tables: str | None = None
    table_prefix: str = ""
    table_suffix: str = ""
    create: CreateOptions = field(default_factory=CreateOptions)
    #: the root of the routed lines, the done markers and the default quarantine
    #: (``--staging-dir``; ``None``: ``<landing>/_staging`` and ``<landing>/_quarantine``)
    staging: str | None = None
    #: a table whose batch stages at most this many bytes is decoded and written on the
    #: driver, without a Spark job (:func:`pipelines.cdc.ingest.ingest_batch`); ``0``: every
    #: table by a Spark job
    local_bytes: int = 64 << 20

    def __post_init__(self) -> None:
        self.table_filter()  # a pattern that is not a regex, refused now (ConfigError)
        if OP_TS in self.create.metadata_columns:
            check_event_time(self.cdc.format)  # a format without times, refused now

    def table_filter(self) -> TableFilter:
        return TableFilter(self.including_tables, self.excluding_tables)


@dataclass
class TableReport:
    """What one batch did to one table."""

    source: str
    target: str
    commit_user: str | None = None
    created: bool = False
    #: why the table took nothing of the batch (``None``: ingested, or already committed)
    error: str | None = None
    #: what else the table's batch says (e.g. a table not created: DDL events only)
    note: str | None = None
    report: BatchReport | None = None


@dataclass
class DatabaseBatchReport:
    """What one batch did (printed as one JSON line by the job)."""

    batch: int
    tables: list[TableReport] = field(default_factory=list)
    #: source tables not taken (``--including-tables`` / ``--excluding-tables``), with events
    excluded: dict[str, int] = field(default_factory=dict)
    #: lines that name no table, per reason (quarantined)
    unrouted: dict[str, int] = field(default_factory=dict)
    tombstones: int = 0
    quarantine: str | None = None
    #: the batch was complete before this run (every table held it)
    skipped: bool = False

    @property
    def failed(self) -> list[TableReport]:
        return [t for t in self.tables if t.error is not None]

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def target_identifier(database: str, source_table: str, options: DatabaseOptions) -> str:
    """The warehouse table of source table ``source_table`` (its name, without database)."""
    return f"{database}.{options.table_prefix}{source_table}{options.table_suffix}"


def _commit_user(target: str, table: str, opts: DatabaseOptions) -> str:
    return (f"{opts.cdc.commit_user}-{table}" if opts.cdc.commit_user is not None
            else f"cdc-{target}")


# ---------------------------------------------------------------------------- one table


def _sample(fio: FileIO, parts: Sequence[str]) -> list[str]:
    """The first staged event lines of a table (up to :data:`_SAMPLE_BYTES`)."""
    lines: list[str] = []
    budget = _SAMPLE_BYTES
    for p in parts:
        size = fio.size(p)
        data = fio.read_range(p, 0, min(size, budget))
        if size > budget:
            data = data[:data.rfind(b"\n") + 1]
        lines.extend(split_lines(data).to_pylist())
        budget -= len(data)
        if budget <= 0:
            break
    return lines


def _ensure_table(settings: CatalogSettings, fio: FileIO, target: str, staged: StagedTable,
                  opts: DatabaseOptions) -> bool:
    """Create ``target`` from its staged events when missing; whether it was created."""
    catalog = settings.catalog()
    if catalog.table_exists(target):
        return False
    schema = new_table_schema(target, opts.cdc.format, _sample(fio, staged.parts), opts.create)
    catalog.create_table(target, schema, ignore_if_exists=True)
    log.info("created table %s from the events of %s: %s", target, staged.name,
             ", ".join(f"{f.name} {f.type.sql()}" for f in schema.fields))
    return True


def _metadata(staged: StagedTable, opts: DatabaseOptions) -> tuple[tuple[str, str], ...]:
    """The metadata columns' values of the table's rows (``--metadata-column``).

    Raises:
        SchemaError: ``database_name`` asked for events that name no database.
    """
    values = {"database_name": staged.database, "table_name": staged.table}
    out = []
    for name in opts.create.metadata_columns:
        if name not in values:  # op_ts: per event (CdcOptions.op_ts_column)
            continue
        value = values[name]
        if value is None:
            raise SchemaError(f"metadata column {name}: the events of {staged.name} name no "
                              "database")
        out.append((name, value))
    return tuple(out)


@dataclass(frozen=True)
class _Places:
    """Where a sync reads and writes: the landing (``landing_io``), the staging (``root``,
    :func:`~pipelines.cdc.database.staging.staging_root`, through ``stage_io``: also the
    staged parts' reader and the quarantine's writer) and the quarantine root."""

    landing: str
    landing_io: FileIO
    root: str
    stage_io: FileIO
    quarantine: str

    @classmethod
    def of(cls, landing: str, opts: DatabaseOptions,
           storage_options: Mapping[str, str]) -> _Places:
        root = staging_root(landing, opts.staging)
        q_root = opts.cdc.quarantine or join(
            opts.staging if opts.staging is not None else landing, "_quarantine")
        return cls(landing, FileIO(landing, dict(storage_options)), root,
                   FileIO(root, dict(storage_options)), q_root)


def _sync_table(spark: SparkSession, settings: CatalogSettings, where: _Places, database: str,
                staged: StagedTable, batch: int, opts: DatabaseOptions,
                properties: Mapping[str, str] | None) -> TableReport:
    """Batch ``batch`` of one source table into its warehouse table (see the module docs)."""
    target = target_identifier(database, staged.table, opts)
    out = TableReport(staged.name, target, _commit_user(target, staged.table, opts))
    try:
        fio = where.stage_io
        out.created = _ensure_table(settings, fio, target, staged, opts)
        pattern = re.escape(staged.name)
        cdc = replace(opts.cdc, commit_user=out.commit_user, source_table=pattern,
                      quarantine=None, constant_columns=_metadata(staged, opts),
                      op_ts_column=OP_TS if OP_TS in opts.create.metadata_columns else None)
        out.report = ingest_batch(spark, settings, target, batch, list(staged.parts), cdc,
                                  landing_io=fio,
                                  quarantine_root=join(where.quarantine, target),
                                  properties=properties, local_bytes=opts.local_bytes)
    except NoColumnsYet as e:
        out.note = f"{e} ({staged.events} events)"
    except ErrorRatioExceeded as e:
        out.report, out.error = e.report, str(e)
    except PaimonError as e:
        out.error = f"{type(e).__name__}: {e}"
    if out.error is not None:
        log.error("table %s (source %s), batch %s: %s", target, staged.name, batch, out.error)
    return out


# ---------------------------------------------------------------------------- the batch


def _done_path(root: str, batch: int) -> str:
    return join(root, f"batch-{batch:06d}.done.json")


def _already_done(settings: CatalogSettings, fio: FileIO, root: str, database: str,
                  batch: int, opts: DatabaseOptions) -> RoutedBatch | None:
    """The routed batch of a complete earlier run when every table it takes now holds the
    batch under the same table and commit user (else None: the batch is routed again)."""
    path = _done_path(root, batch)
    if not fio.exists(path):
        return None
    text = fio.read_text(path)
    routed = RoutedBatch.from_json(text, path)
    committed: dict[str, list[str] | None] = json.loads(text).get("committed", {})
    catalog = settings.catalog()
    flt = opts.table_filter()
    for t in routed.tables:
        if not flt.takes(t.database, t.table):
            continue
        target = target_identifier(database, t.table, opts)
        user = _commit_user(target, t.table, opts)
        if t.name not in committed:
            return None
        if committed[t.name] is None:  # nothing to commit (DDL only)
            continue
        if committed[t.name] != [target, user] or not catalog.table_exists(target):
            return None
        if catalog.get_table(target).new_commit(user).filter_committed([batch]):
            return None
    return routed


def _mark_done(fio: FileIO, root: str, routed: RoutedBatch,
               tables: Sequence[TableReport]) -> None:
    """Note the batch complete (its routing and each table's target and commit user)."""
    obj = json.loads(routed.to_json())
    obj["committed"] = {t.source: [t.target, t.commit_user] if t.report is not None else None
                        for t in tables}
    fio.write_bytes(_done_path(root, routed.batch),
                    json.dumps(obj, sort_keys=True).encode("utf-8"))


def _duplicates(tables: Sequence[StagedTable], database: str,
                opts: DatabaseOptions) -> dict[str, str]:
    """Source tables whose target another source table of the batch also maps to (merging
    shards is not supported): source name -> the reason."""
    by_target: dict[str, list[str]] = {}
    for t in tables:
        by_target.setdefault(target_identifier(database, t.table, opts), []).append(t.name)
    return {s: (f"source tables {', '.join(names)} all map to table {target}: merging "
                "them is not supported; exclude all but one with --excluding-tables")
            for target, names in by_target.items() if len(names) > 1 for s in names}


def _sync_batch(spark: SparkSession, settings: CatalogSettings, where: _Places, database: str,
                batch: int, files: Sequence[str], opts: DatabaseOptions,
                blocked: dict[str, int],
                properties: Mapping[str, str] | None) -> DatabaseBatchReport:
    """One batch: routed, then each taken table ingested (see the module docs)."""
    done = _already_done(settings, where.stage_io, where.root, database, batch, opts)
    routed = done or route_batch(spark, where.landing_io, where.stage_io, where.root, batch,
                                 files, opts.cdc, where.quarantine)
    report = DatabaseBatchReport(batch, unrouted=dict(routed.unrouted),
                                 tombstones=routed.tombstones, quarantine=routed.quarantine,
                                 skipped=done is not None)
    flt = opts.table_filter()
    taken = [t for t in routed.tables if flt.takes(t.database, t.table)]
    report.excluded = {t.name: t.events for t in routed.tables if t not in taken}
    if done is not None:
        for t in taken:
            target = target_identifier(database, t.table, opts)
            report.tables.append(TableReport(t.name, target,
                                             _commit_user(target, t.table, opts)))
        return report
    dupes = _duplicates(taken, database, opts)
    for t in taken:
        target = target_identifier(database, t.table, opts)
        if t.name in dupes or target in blocked:
            why = dupes.get(t.name) or f"batch {blocked[target]} of this table failed"
            report.tables.append(TableReport(t.name, target, error=why))
            continue
        report.tables.append(_sync_table(spark, settings, where, database, t, batch, opts,
                                         properties))
    for r in report.failed:
        blocked.setdefault(r.target, batch)
    if not report.failed:
        _mark_done(where.stage_io, where.root, routed, report.tables)
        clear_staging(where.stage_io, where.root, batch)
    return report


def check_staging(landing: str, options: DatabaseOptions,
                  storage_options: Mapping[str, str]) -> _Places:
    """Where a sync of ``landing`` reads and stages, its staging checked writable (a probe
    file): a job calls it before its Spark session starts, :func:`sync_database` before any
    work.

    Raises:
        StorageError: the staging cannot be written (a read-only landing without
            :attr:`DatabaseOptions.staging`: the message names the flag that moves it).
    """
    where = _Places.of(landing, options, storage_options)
    check_writable(where.stage_io, where.root, options.staging is None)
    return where


def sync_database(
    spark: SparkSession,
    settings: CatalogSettings,
    database: str,
    landing: str,
    options: DatabaseOptions | None = None,
    *,
    batches: Sequence[int] | None = None,
    properties: Mapping[str, str] | None = None,
) -> list[DatabaseBatchReport]:
    """Sync every batch under ``landing`` (or only ``batches``) into the tables of the
    warehouse database ``database`` (see the module docs); returns one report per batch. A
    table that fails is reported in its batch's report (``error``), and takes no later
    batch; the other tables go on.

    Raises:
        ConfigError: a format whose events cannot be routed by table.
        StorageError: the staging cannot be written (a read-only landing without
            :attr:`DatabaseOptions.staging`), before any batch is routed.
    """
    opts = options or DatabaseOptions()
    where = check_staging(landing, opts, settings.storage_options)
    settings.catalog().create_database(database, ignore_if_exists=True)
    blocked: dict[str, int] = {}
    reports = []
    for bid, files in list_batches(where.landing_io, landing):
        if batches is not None and bid not in batches:
            continue
        reports.append(_sync_batch(spark, settings, where, database, bid, files, opts,
                                   blocked, properties))
    return reports


def discover_tables(landing: str, fmt: str, *,
                    storage_options: Mapping[str, str] | None = None,
                    table_filter: TableFilter | None = None,
                    staging: str | None = None) -> list[SourceTable]:
    """The source tables the events under ``landing`` name (every batch's files read on the
    calling process, only the fields naming the table parsed; routed batches are read from
    their markers), taken by ``table_filter`` (default: all), sorted by name: the tables a
    database sync of the landing writes (:func:`target_identifier` gives each one's table;
    ``staging``: the sync's :attr:`DatabaseOptions.staging`).

    Raises:
        ConfigError: a format whose events cannot be routed by table.
    """
    fio = FileIO(landing, dict(storage_options or {}))
    root = staging_root(landing, staging)
    stage_io = FileIO(root, dict(storage_options or {}))
    found: set[tuple[str | None, str]] = set()
    for bid, files in list_batches(fio, landing):
        marker = _marker_of(stage_io, root, bid)
        if marker is not None:
            found.update((t.database, t.table) for t in marker.tables)
            continue
        for f in files:
            db, tbl, _ = line_tables(split_lines(fio.read_bytes(f)), fmt)
            found.update(zip(db.to_pylist(), tbl.to_pylist()))
    flt = table_filter or TableFilter()
    out = [SourceTable(d, t) for d, t in found if t is not None and flt.takes(d, t)]
    return sorted(out, key=lambda s: (s.database or "", s.table))


def _marker_of(fio: FileIO, root: str, batch: int) -> RoutedBatch | None:
    for path in (_done_path(root, batch), join(staging_dir(root, batch), MARKER)):
        if fio.exists(path):
            return RoutedBatch.from_json(fio.read_text(path), path)
    return None
