"""CDC ingestion: change events -> a primary-key Paimon table, exactly once.

The events are Debezium's (``--format debezium-json``, the default, with or without the
``{"schema", "payload"}`` envelope; ``debezium-avro``, see below) or those of the other CDC
tools Paimon's Kafka sync reads (``canal-json``, ``maxwell-json``, ``ogg-json``,
``aws-dms-json``: :mod:`pipelines.cdc.formats` turns each into the Debezium envelope's rows;
their DDL / control events are counted as ``ddl`` and skipped). What follows is said of
Debezium's events; the formats' positions are in :mod:`pipelines.cdc.formats`.

Landing layout (local directory or S3 prefix, read through ``paimon_core``'s FileIO in the
Python workers)::

    <landing>/batch-000001/part-0.json ...   one directory per batch (or a file
    <landing>/batch-000002.jsonl              batch-<n>.json / .jsonl), any number of files

With ``--format debezium-avro`` the files are Avro container files of Debezium envelopes as
Kafka Connect's S3 sink writes them (``<landing>/batch-<n>/<topic>+<partition>+<offset>.avro``,
taken by partition, then start offset; or a file ``batch-<n>.avro``), decoded by
:mod:`pipelines.cdc.formats.avro` into the same rows.

Each batch ``n`` is one commit with ``commit_identifier = n`` under a stable commit user
(default ``cdc-<db>.<table>``): batches already committed are skipped (a re-run of a batch, or
of the whole landing directory, applies every event exactly once). Per batch, one Spark job:

1. the files are decoded in line-aligned byte ranges of at most ``--max-partition-bytes``
   (default Spark's ``spark.sql.files.maxPartitionBytes``, 128 MB; :mod:`pipelines.cdc.ranges`:
   a line belongs to the range it starts in; the driver reads only a few KB at each boundary; a
   row's position within its file orders it exactly as its line number, which is computed only
   for the quarantined rows; Avro files are not split), each read with one ranged read and
   decoded apart, so a task holds one range, never a whole file (:mod:`pipelines.cdc.decode`:
   pyarrow's JSON reader, the event envelope, row kinds, exact typing, rejection reasons; the
   semantics of the Spark SQL reference :mod:`pipelines.cdc.events`;
   ``spark.default.parallelism`` tasks at most, each a contiguous run of ranges) and every row
   gets its bucket from paimon_core (rejected events ride along with NULL keys); the rows of
   each bucket leave the task as Arrow IPC blobs, one ``binary`` cell per (range, bucket), so
   that they cross the JVM and the shuffle as a few large values instead of row by row;
   ``repartitionById`` sends each bucket to one task;
2. each task counts its events per outcome, notes image keys the table lacks, writes its
   malformed events to ``<quarantine>/batch-<n>/part-<task>.jsonl`` (event, file, line,
   reason; for ``bad value for <col>`` the refused value's text in ``value``), keeps the
   last change of every key by source position and writes the rows;
3. on the driver: when the images carried new columns, the files are deleted, the columns
   added to a schema computed in memory (``ADD COLUMN``, type inferred from the JSON values)
   and the job runs again with it; ``_summary.json`` gets the counts per reason; above
   ``max_error_ratio`` the files are deleted and the batch fails (no schema written); otherwise
   the new schema is published and the batch committed (:mod:`pipelines.cdc.schema`: the
   columns land with the rows or not at all).

Across batches, events that arrive out of order are resolved by the table's
``sequence.field``: declare e.g. ``_seq BIGINT`` with ``'sequence.field' = '_seq'`` and the job
fills it with the source position as one BIGINT (the position fields come from the events'
``source.connector``: Postgres' ``lsn``, Oracle's ``scn``, MySQL's binlog index, pos and row
packed, MongoDB's oplog second and ``ord`` packed; ``--position-fields`` overrides: its first
field), so an older event arriving late never overrides a newer one (without it, the later
batch wins). An event whose position does not fit a BIGINT (SQL Server / Db2 LSNs) is refused
when the table has a sequence column. One batch holds the events of one connector. A
Debezium event whose ``source`` holds no position (the first field of its connector's, e.g.
``source`` with only ``db`` and ``table``, as some Kafka sinks write it) is ordered by arrival
(file, line), as canal's; a batch mixing such events with positioned ones is refused (the two
orders do not compare), and so is one for a table with a sequence column (nothing fills it).
With ``--position-fields`` every event must carry them (``missing source position``).

Every event names its source table (:mod:`pipelines.cdc.source_tables`: ``source.db`` /
``source.table``, canal's and maxwell's ``database`` / ``table``, OGG's ``table``, DMS'
``schema-name`` / ``table-name``). The job takes the events of ``--source-table`` (default:
the target's table name, in any database, ignoring case) and counts the others as
``other_tables``: skipped, like tombstones (not in the error ratio), never written, never
quarantined, never sampled for new columns, and their truncates empty nothing. An event
naming no table is taken (its landing is the table's). A batch whose events all name other
tables writes nothing: its report says so (``only_other_tables``, and a warning), and its
empty commit records it as done, as a batch of DDL only.

Operations: ``c`` / ``r`` / ``u`` / ``d`` (a delete needs only the key), ``m`` (messages) and
tombstones are skipped and counted; a truncate (``t``) empties the table at its position: a
batch holding truncates is committed in steps, all with its identifier: the changes before the
first truncate (APPEND), the truncate (an OVERWRITE snapshot deleting every file), the changes
up to the next truncate (APPEND)... the changes after the last one; each snapshot records its
step (``commit.step = i/n``), so that a re-run after a crash between two of them commits only
the steps that did not land (:mod:`paimon_core.commit.steps`). Readers of the table's history
see the rows before the truncate (time travel), its empty table, then the rows after it;
streaming and incremental readers skip OVERWRITE snapshots (Paimon's semantics).
Debezium's unchanged-TOAST placeholder keeps the column's previous value
(``--unavailable-value store|refuse`` for the alternatives).

Run::

    python -m pipelines.cdc.ingest --warehouse W --table db.t --landing L [--schema s.json]
        [--batch N] [--quarantine Q] [--max-error-ratio 0.01] [--position-fields F,...]
        [--unavailable-value previous|store|refuse] [--max-partition-bytes 128MB]
        [--format debezium-json|debezium-avro|canal-json|maxwell-json|ogg-json|aws-dms-json]
        [--source-table PATTERN] [--decimal-base64]
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from paimon_core import (
    CommitMessage,
    CommitOptions,
    ConfigError,
    FileStoreTable,
    Identifier,
    PaimonError,
    Schema,
    SchemaError,
    UnsupportedError,
)
from paimon_core.integration import FileIO, join
from paimon_core.schema_pending import PendingSchema, PendingSchemaRaceError
from pipelines.cdc.batch.commit import commit_steps, plan_steps, position_key
from pipelines.cdc.batch.passes import (
    PassResult,
    PassTask,
    plan_pass,
    write_pass,
    write_pass_local,
)
from pipelines.cdc.batch.stage import (
    decoded_blobs,
    local_blobs,
    plan_file_ranges,
    sequence_column,
)
from pipelines.cdc.events import (
    ARRIVAL,
    MESSAGE,
    TOMBSTONE,
    TRUNCATE,
    is_supported_type,
)
from pipelines.cdc.formats import DEFAULT_FORMAT, FORMATS, check_sequence
from pipelines.cdc.formats.avro import avro_file_order
from pipelines.cdc.formats.views import DDL
from pipelines.cdc.ranges import LineRange
from pipelines.cdc.routing import routing
from pipelines.cdc.schema import commit_batch, evolve, settle, withdraw
from pipelines.cdc.settings import DecodeSettings, EpochUnit, Unavailable
from pipelines.cdc.source_tables import OTHER_TABLE, TableFilter
from pipelines.cdc.values.event_time import check_event_time
from pipelines.config import (
    CatalogSettings,
    TableHandle,
)
from pipelines.session import default_parallelism
from pipelines.writer import commit_messages

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["BatchReport", "CdcOptions", "ErrorRatioExceeded", "ingest", "ingest_batch",
           "list_batches"]

log = logging.getLogger(__name__)
_BATCH = re.compile(r"^batch-(\d+)(?:\.jsonl?|\.avro)?$")


class ErrorRatioExceeded(PaimonError):
    """More malformed events than the batch may have; nothing was committed."""

    def __init__(self, report: BatchReport, max_ratio: float) -> None:
        super().__init__(
            f"batch {report.batch}: {report.malformed} of {report.events - report.skipped_events} "
            f"events malformed ({report.error_ratio:.2%} > {max_ratio:.2%}); see "
            f"{report.quarantine}"
        )
        self.report = report


@dataclass(frozen=True)
class CdcOptions:
    """Knobs of :func:`ingest_batch` (see the module docs)."""

    #: ``None``: the position fields of the events' ``source.connector``
    position_fields: tuple[str, ...] | None = None
    sequence_column: str | None = None
    epoch_unit: EpochUnit = "ms"
    max_error_ratio: float = 0.01
    commit_user: str | None = None
    quarantine: str | None = None
    evolve_schema: bool = True
    #: the TOAST placeholder: ``previous`` / ``store`` / ``refuse`` (see
    #: :data:`pipelines.cdc.settings.Unavailable`)
    unavailable: Unavailable = "previous"
    #: the events' format: a name of :data:`pipelines.cdc.formats.FORMATS` (``debezium-avro``:
    #: Avro container files, as Kafka Connect's S3 sink writes them,
    #: :mod:`pipelines.cdc.formats.avro`)
    format: str = DEFAULT_FORMAT
    #: largest line-aligned byte range of a file one decode task reads at a time
    #: (:mod:`pipelines.cdc.ranges`); ``None``: Spark's ``spark.sql.files.maxPartitionBytes``
    #: (128 MB by default)
    max_partition_bytes: int | None = None
    #: the source tables whose events the job takes (a :class:`~pipelines.cdc.source_tables.
    #: TableFilter` pattern, ``--source-table``: a Python regex fully matching the event's
    #: table name or ``database.table``, case-sensitive); ``None``: the target's table name,
    #: any database, ignoring case; events of other tables are counted as skipped
    #: (``other_tables``)
    source_table: str | None = None
    #: table columns filled with one value on every row (the database sync's metadata
    #: columns ``database_name`` / ``table_name``, :mod:`pipelines.cdc.database`): (column,
    #: value) pairs; each must be a column of the table
    constant_columns: tuple[tuple[str, str], ...] = ()
    #: schemaless Debezium JSON's decimals as Kafka Connect ``Decimal`` bytes (base64) of the
    #: column's scale (``--decimal-base64``; see
    #: :class:`~pipelines.cdc.settings.DecodeSettings`); only with ``debezium-json``
    decimal_base64: bool = False
    #: the table column filled with each event's time of change in the source database (the
    #: database sync's ``op_ts`` metadata column, :mod:`pipelines.cdc.values.event_time`): a
    #: TIMESTAMP / TIMESTAMP_LTZ column of the table; an event without one is quarantined
    op_ts_column: str | None = None

    def __post_init__(self) -> None:
        self.decode_settings(self.sequence_column)  # a decode setting it refuses, refused now
        if self.op_ts_column is not None:
            check_event_time(self.format)
        if self.decimal_base64 and self.format != DEFAULT_FORMAT:
            raise ConfigError("decimal_base64", f"applies to {DEFAULT_FORMAT} events only, "
                                                f"not {self.format}")

    def source_tables(self, target: str | None) -> TableFilter | None:
        """The filter of the events the job takes into the table ``target`` (``db.table``;
        ``None``: every event unless :attr:`source_table` is given)."""
        if self.source_table is not None:
            return TableFilter(self.source_table)
        return TableFilter.of_table(Identifier.parse(target).table) if target else None

    def decode_settings(self, sequence_column: str | None,
                        target: str | None = None) -> DecodeSettings:
        """The settings the batch's events are decoded with (``sequence_column``: the one the
        table resolved, see :func:`pipelines.cdc.batch.stage.sequence_column`; ``target``: the
        table written, whose name the events are routed by, :meth:`source_tables`); raises
        ``ConfigError`` naming a setting the decoders do not know."""
        return DecodeSettings(self.position_fields, self.epoch_unit, sequence_column,
                              self.unavailable, self.source_tables(target), self.decimal_base64,
                              self.op_ts_column, tuple(c for c, _ in self.constant_columns))


@dataclass
class BatchReport:
    """What one batch did (printed as JSON by the job)."""

    batch: int
    events: int = 0
    valid: int = 0
    malformed: int = 0
    tombstones: int = 0
    messages: int = 0
    truncates: int = 0
    ddl: int = 0
    #: events of other source tables than the job's (skipped: never written nor quarantined)
    other_tables: int = 0
    #: every event of the batch names another source table (nothing of it is the table's)
    only_other_tables: bool = False
    reasons: dict[str, int] = field(default_factory=dict)
    new_columns: dict[str, str] = field(default_factory=dict)
    rows_written: int = 0
    snapshot_ids: list[int] = field(default_factory=list)
    skipped: bool = False
    quarantine: str | None = None

    @property
    def skipped_events(self) -> int:
        """Tombstones, logical decoding messages, truncates, DDL / control events and the
        events of other tables: events that are no row of the table."""
        return self.tombstones + self.messages + self.truncates + self.ddl + self.other_tables

    @property
    def error_ratio(self) -> float:
        n = self.events - self.skipped_events
        return self.malformed / n if n else 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    def tally(self, counts: Mapping[str, int]) -> None:
        """Take the batch's event counts per outcome (``""``: valid, else the reason)."""
        self.events = sum(counts.values())
        self.valid = counts.get("", 0)
        self.tombstones = counts.get(TOMBSTONE, 0)
        self.messages = counts.get(MESSAGE, 0)
        self.truncates = counts.get(TRUNCATE, 0)
        self.ddl = counts.get(DDL, 0)
        self.other_tables = counts.get(OTHER_TABLE, 0)
        self.reasons = {k: v for k, v in sorted(counts.items())
                        if k not in ("", TOMBSTONE, MESSAGE, TRUNCATE, DDL, OTHER_TABLE)}
        self.malformed = sum(self.reasons.values())
        self.only_other_tables = self.other_tables > 0 and self.other_tables == self.events


# ---------------------------------------------------------------------------- input


def list_batches(file_io: FileIO, landing: str) -> list[tuple[int, list[str]]]:
    """``(batch id, files)`` of every ``batch-<n>`` directory or file under ``landing``,
    ordered by id (files within a directory sorted by name, Kafka Connect S3-sink names
    ``<topic>+<partition>+<startOffset>.<ext>`` by partition and start offset as numbers;
    names starting with ``_`` or ``.`` are ignored)."""
    out: list[tuple[int, list[str]]] = []
    for st in file_io.list_status(landing):
        name = st.path.rstrip("/").rsplit("/", 1)[-1]
        m = _BATCH.match(name)
        if m is None:
            continue
        if st.is_dir:
            files = sorted(
                (s.path for s in file_io.list_status(st.path)
                 if not s.is_dir and not s.path.rsplit("/", 1)[-1].startswith(("_", "."))),
                key=avro_file_order)
        elif "." in name:
            files = [st.path]
        else:
            continue
        out.append((int(m.group(1)), files))
    return sorted(out)


# ---------------------------------------------------------------------------- one batch


def _check_malformed(report: BatchReport, fio: FileIO, quarantine: str | None,
                     max_ratio: float) -> None:
    """Refuse a batch with malformed events but no ``quarantine`` location, or with more
    than ``max_ratio`` of them (the quarantine's ``_summary.json`` written first)."""
    if not report.malformed:
        return
    if quarantine is None:
        raise SchemaError(f"batch {report.batch} has {report.malformed} malformed events and "
                          "no quarantine location was given")
    report.quarantine = quarantine
    fio.write_bytes(join(quarantine, "_summary.json"), report.to_json().encode("utf-8"))
    if report.error_ratio > max_ratio:
        raise ErrorRatioExceeded(report, max_ratio)


def _cdc_table(settings: CatalogSettings, identifier: str, table: FileStoreTable | None,
               opts: CdcOptions) -> TableHandle:
    """The handle on the table ``identifier`` (``table`` when the caller opened it), checked:
    a known format, a primary key, columns change events can carry."""
    if opts.format not in FORMATS:
        raise SchemaError(f"unknown CDC format {opts.format!r}; one of "
                          f"{', '.join(sorted(FORMATS))}")
    handle = (TableHandle.of(settings, table) if table is not None
              else TableHandle.load(settings, identifier))
    if not handle.schema.primary_keys:
        raise SchemaError(f"CDC needs a primary-key table; {identifier} has no primary key")
    for f in handle.schema.fields:
        if not is_supported_type(f.type):
            raise UnsupportedError(f"column {f.name} of type {f.type.sql()} cannot be decoded "
                                   "from change events")
    return handle


#: attempts of a batch whose new schema id another writer took meanwhile
_SCHEMA_RACE_ATTEMPTS = 3


def ingest_batch(
    spark: SparkSession,
    settings: CatalogSettings,
    identifier: str,
    batch: int,
    files: Sequence[str],
    options: CdcOptions | None = None,
    *,
    landing_io: FileIO | None = None,
    quarantine_root: str | None = None,
    properties: Mapping[str, str] | None = None,
    table: FileStoreTable | None = None,
    checked: bool = False,
    local_bytes: int | None = None,
) -> BatchReport:
    """Ingest one batch (see the module docs); returns its report. ``properties`` are added to
    the snapshot's properties (e.g. the orchestrator's run id). ``table``: the table
    ``identifier`` as the caller opened it (from ``settings``' catalog; default: opened here);
    ``checked``: the caller already asked whether the commit user committed ``batch`` (it did
    not), so the question is not asked again. ``local_bytes``: a batch of at most that many
    bytes is decoded and written in this process instead of by a Spark job (the same tasks,
    run one after the other: for small batches, whose work is less than a job's fixed cost,
    as the database sync's tables mostly are). New columns land with the batch's snapshot or
    not at all (:mod:`pipelines.cdc.schema`); when another writer changes the schema while
    the batch is written with its new columns, the batch is written again (a few times).

    Raises:
        ErrorRatioExceeded: too many malformed events (quarantine written, nothing committed).
        SchemaError / UnsupportedError: a table the events cannot be written to.
    """
    for attempt in range(1, _SCHEMA_RACE_ATTEMPTS + 1):
        try:
            return _ingest_batch(spark, settings, identifier, batch, files, options,
                                 landing_io=landing_io, quarantine_root=quarantine_root,
                                 properties=properties, table=table, checked=checked,
                                 local_bytes=local_bytes)
        except PendingSchemaRaceError as e:
            if attempt == _SCHEMA_RACE_ATTEMPTS:
                raise
            log.warning("%s; writing batch %s again (attempt %s)", e, batch, attempt + 1)
            table = None  # the latest schema, loaded again
    raise AssertionError("unreachable")  # pragma: no cover


def _ingest_batch(spark: SparkSession, settings: CatalogSettings, identifier: str, batch: int,
                  files: Sequence[str], options: CdcOptions | None = None, *,
                  landing_io: FileIO | None = None, quarantine_root: str | None = None,
                  properties: Mapping[str, str] | None = None,
                  table: FileStoreTable | None = None, checked: bool = False,
                  local_bytes: int | None = None) -> BatchReport:
    """One attempt of :func:`ingest_batch`."""
    opts = options or CdcOptions()
    # the table is opened once: every driver step below uses handle.open() (the same object)
    handle = _cdc_table(settings, identifier, table, opts)
    user = opts.commit_user or f"cdc-{identifier}"
    report = BatchReport(batch)
    # "already committed?" is asked once; commit_messages is told (checked=True)
    if not checked and not handle.open().new_commit(user).filter_committed([batch]):
        report.skipped = True
        return report
    handle, adopted = _settled(settings, handle, user, batch, opts, report)
    fio = landing_io or settings.file_io()
    q_root = quarantine_root or opts.quarantine
    base = join(q_root, f"batch-{batch:06d}") if q_root is not None else None

    start_snapshot = _start_snapshot(handle, user, batch)
    ranges = plan_file_ranges(spark, fio, files, opts)  # once, for every pass below
    local = local_bytes is not None and sum(r.length for r in ranges) <= local_bytes

    def run(h: TableHandle, truncates: Sequence[Sequence[object]] | None = None) -> PassResult:
        if base is not None and fio.exists(base):
            fio.delete_dir(base)  # a re-run of a batch that was not committed
        return _execute(spark, plan_pass(
            h, user, default_parallelism(spark), file_io=fio, quarantine=base, batch=batch,
            files=files, ranges=ranges, start_snapshot=start_snapshot,
            position_fields=opts.position_fields,
            fill_previous=opts.unavailable == "previous" and FORMATS[opts.format].placeholder,
            truncates=truncates), fio, files, h, opts, ranges, local)

    def abort(messages: Sequence[CommitMessage], refused: bool = True) -> None:
        if messages:
            handle.open().new_commit(user).abort(messages)
        if refused:  # nothing of the batch lands: its schema neither
            withdraw(handle, adopted)

    res = run(handle)
    added: dict[str, str] = {}  # the columns this run adds (published with the snapshot)
    if res.unknown and opts.evolve_schema:
        # written with the old schema: write again with the new one (in memory until the
        # commit: every refusal below is decided before it is published)
        abort(res.messages, refused=False)
        handle, added = evolve(handle, res.unknown, opts.format)
        report.new_columns = added
        res = run(handle)
    if ARRIVAL in res.connectors or (len(res.connectors) > 1 and opts.position_fields is None):
        error = _order_error(batch, res.connectors, sequence_column(handle, opts))
        if error is not None:
            abort(res.messages)
            raise error
    truncates = sorted(set(res.truncates), key=position_key)
    if truncates:
        # the table is emptied at each truncate's position: the rows are written again, split
        # at the truncates, and committed in steps (plan_steps)
        abort(res.messages, refused=False)
        res = run(handle, truncates)
    report.tally(res.counts)
    if report.only_other_tables:
        log.warning("batch %s: all %s events name other source tables than %s's (%s): "
                    "nothing of it is written", batch, report.events, identifier,
                    opts.source_table or "its own name")
    try:
        _check_malformed(report, fio, base, opts.max_error_ratio)
    except PaimonError:
        abort(res.messages)
        raise
    try:
        report.snapshot_ids = _commit(handle, user, batch, res, report, list(added), adopted,
                                      properties)
    except PendingSchemaRaceError:
        abort(res.messages, refused=False)  # written with a schema id another writer took
        raise
    report.rows_written = res.rows
    report.skipped = not report.snapshot_ids and bool(res.messages)
    return report


def _execute(spark: SparkSession, task: PassTask, fio: FileIO, files: Sequence[str],
             handle: TableHandle, opts: CdcOptions, ranges: Sequence[LineRange],
             local: bool) -> PassResult:
    """Run one pass over the batch: a Spark job, or (``local``) the same tasks in turn in this
    process (:func:`ingest_batch`'s ``local_bytes``)."""
    if local:
        return write_pass_local(task, local_blobs(fio, handle, opts, ranges,
                                                  default_parallelism(spark)))
    return write_pass(task, decoded_blobs(spark, fio, files, handle, opts, ranges))


def _settled(settings: CatalogSettings, handle: TableHandle, user: str, batch: int,
             opts: CdcOptions, report: BatchReport) -> tuple[TableHandle, PendingSchema | None]:
    """The handle the batch is written through, checked: a schema a crashed run of this batch
    published is adopted (its columns noted in ``report``), any other left over withdrawn."""
    handle, adopted = settle(settings, handle, user, batch)
    if adopted is not None:  # the columns this batch adds (published by its crashed run)
        report.new_columns = {n: handle.schema.field(n).type.sql() for n in adopted.added
                              if n in handle.schema.field_names}
    routing(handle.schema, 1)  # a bucket mode the job can write (else an error naming it)
    check_sequence(opts.format, sequence_column(handle, opts), opts.position_fields)
    return handle, adopted


def _order_error(batch: int, connectors: set[str], sequence: str | None
                 ) -> SchemaError | None:
    """The refusal of a batch whose events' orders do not compare (connectors of different
    positions; events with and without a source position, :data:`ARRIVAL`), or whose
    position-less events cannot fill the table's sequence column (None: none)."""
    error: SchemaError | None = None
    named = sorted(c for c in connectors if c != ARRIVAL)
    if ARRIVAL in connectors and sequence is not None:
        error = SchemaError(f"batch {batch}: events without a source position cannot fill "
                            f"the sequence column {sequence} ('sequence.field'): drop the "
                            "option (the later batch wins), or name a source field that "
                            "orders them with --position-fields")
    elif ARRIVAL in connectors and named:
        error = SchemaError(f"batch {batch} mixes events with a source position ("
                            f"{', '.join(named)}) and events without one (ordered by "
                            "arrival): the two orders do not compare; land them apart (or "
                            "give --position-fields)")
    elif len(named) > 1:
        error = SchemaError(f"batch {batch} mixes the events of connectors "
                            f"{', '.join(named)}: their source positions do not order "
                            "each other; land each connector's events apart (or give "
                            "--position-fields)")
    return error


def _start_snapshot(handle: TableHandle, user: str, batch: int) -> int | None:
    """What a TOAST placeholder's previous value is: the table as the batch starts (a re-run
    after a crash between the snapshots of a batch holding truncates: before the first)."""
    unfinished = handle.open().new_commit(user).unfinished_steps(batch)
    start = handle.open().latest_snapshot()
    return (unfinished[0].id - 1 if unfinished
            else start.id if start is not None else None) or None


def _commit(handle: TableHandle, user: str, batch: int, res: PassResult, report: BatchReport,
            added: Sequence[str], adopted: PendingSchema | None,
            properties: Mapping[str, str] | None) -> list[int]:
    """Commit the batch's last pass (in steps when it holds truncates) with its new columns
    (:func:`pipelines.cdc.schema.commit_batch`); returns the snapshot ids."""
    commit_options = CommitOptions(properties={
        **(properties or {}), "cdc.batch": str(batch), "cdc.events": str(report.events),
        "cdc.malformed": str(report.malformed)})
    segments, messages = res.segments, res.messages
    return commit_batch(
        handle, user, batch, list(added), adopted,
        (lambda: commit_steps(handle, user, plan_steps(segments), batch, commit_options))
        if segments else
        (lambda: commit_messages(handle, user, messages, commit_identifier=batch,
                                 checked=True, options=commit_options)))


def ingest(
    spark: SparkSession,
    settings: CatalogSettings,
    identifier: str,
    landing: str,
    options: CdcOptions | None = None,
    *,
    schema: Schema | None = None,
    batches: Sequence[int] | None = None,
    properties: Mapping[str, str] | None = None,
) -> list[BatchReport]:
    """Ingest every not-yet-committed batch under ``landing`` in order (or only ``batches``);
    the table is created from ``schema`` when missing. Stops at the first failing batch."""
    opts = options or CdcOptions()
    catalog = settings.catalog()
    table = None
    if schema is not None:
        existed = catalog.table_exists(identifier)
        table = catalog.create_table(identifier, schema, ignore_if_exists=True)
        if not existed:
            log.info("created table %s at %s", identifier, table.path)
    fio = FileIO(landing, dict(settings.storage_options))
    q_root = opts.quarantine or join(landing, "_quarantine")
    reports = []
    for bid, files in list_batches(fio, landing):
        if batches is not None and bid not in batches:
            continue
        if table is None:  # opened once, for the first batch
            table = catalog.get_table(identifier)
        reports.append(ingest_batch(spark, settings, identifier, bid, files, opts,
                                    landing_io=fio, quarantine_root=q_root,
                                    properties=properties, table=table))
    return reports
