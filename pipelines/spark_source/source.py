"""The ``paimon`` Spark data source (PySpark Python Data Source API, Spark >= 4.1).

Batch::

    spark.read.format("paimon").option("warehouse", "/data/wh").load("sales.orders")
    spark.read.format("paimon").options(warehouse=wh, table="sales.orders",
                                        **{"scan.snapshot-id": "3"}).load()

Streaming (offsets are snapshot ids; Spark's checkpoint makes every snapshot's changes reach
the sink once across restarts)::

    spark.readStream.format("paimon").options(warehouse=wh, table="db.t").load()

Writing (``append`` — also with no ``.mode()`` — or ``overwrite``; one commit on the driver;
a missing table is created; streaming: one commit per micro-batch): :mod:`.sink`::

    df.write.format("paimon").option("warehouse", wh).save("db.t")
    df.writeStream.format("paimon").option("checkpointLocation", ck).start("db.t")

SQL (:mod:`.sql`, :mod:`.tables`): the warehouse defaults to the session's
``spark.paimon.warehouse``; ``CREATE TABLE t USING paimon OPTIONS (table 'db.t')`` then
``SELECT`` / ``INSERT INTO`` / ``INSERT OVERWRITE``; ``SELECT * FROM paimon_snapshots('db.t')``.

Options (case-insensitive; declared and validated in :mod:`pipelines.spark_source.options`: an
unknown key is an ``UnknownOptionError`` naming the closest one):

==============================  ===============================================================
``warehouse``                   warehouse root (required)
``table`` / ``load(path)``      ``db.name``
``s3.*``, ``storage.<key>``     storage options for ``paimon_core``'s FileIO (``storage.`` is
                                stripped), e.g. ``s3.endpoint``; object storage is reached from
                                the Python workers (no ``s3a``)
``columns``                     projection (comma-separated); a user schema (``.schema(...)``)
                                with a subset of the columns projects as well
``filter``                      extra Paimon filter (``"amount > 10"``; repeat with ``;``)
``scan.snapshot-id``,           batch time travel (``snapshot-id``, ``tag``,
``scan.tag-name``,              ``timestamp-millis`` are accepted as short forms);
``scan.timestamp-millis``       streaming: start position with ``scan.mode``
``scan.mode``                   streaming startup: ``latest-full`` (default), ``latest``,
                                ``from-snapshot``, ``from-snapshot-full``, ``from-timestamp``
``consumer-id``                 streaming: record progress in ``consumer/consumer-<id>`` when
                                Spark commits a batch to the source (protects unread snapshots
                                from expiry; Spark does that when it plans the next batch, so
                                the consumer lags one batch behind the sink, never ahead)
``read.changelog``              ``true``: a ``_kind`` column (``+I``/``-U``/``+U``/``-D``) comes
                                first; otherwise a stream drops ``-U``/``-D`` rows
``split.target-size``           batch: pack splits into input partitions of about this many
                                bytes (default 128 mb; ``0`` = one split per partition)
``incremental-between``         batch: the net change per key of ``(start, end]`` (snapshot
(``-timestamp``, ``-scan-mode``) ids, tag names or epoch millis), without ``-U``/``-D`` rows
                                unless ``read.changelog``
``read.stream.max*PerTrigger``  streaming: ``Files`` / ``Bytes`` / ``Rows`` limits per
                                micro-batch (whole snapshots; one at least)
``commit.user``,                writes: commit user and identifier (exactly-once: an
``commit.identifier``           identifier already committed by the user is not applied again)
``overwrite.partition``         writes with ``mode("overwrite")``: ``k=v,...`` static partition
``dynamic-partition-overwrite`` writes with ``mode("overwrite")``: overrides the table option
                                (``true``: only the partitions written are replaced)
``row-kind-column``             writes: input column holding each row's kind (default
                                ``_row_kind`` when the input has it)
``primary-key``, ``partition``, writes to a missing table: its keys and bucket count; any
``bucket`` (and table options)  other Paimon table option given is set on the new table
``checkpointLocation``          ``writeStream``: the commit user derives from it (exactly-once
                                across restarts) unless ``commit.user`` is given
==============================  ===============================================================

System tables (``table.inspect``, Paimon's ``t$snapshots`` ...): ``load("db.t$files")``
reads one of ``snapshots``, ``schemas``, ``options``, ``files``, ``manifests``, ``partitions``,
``buckets``, ``tags``, ``consumers``, ``audit_log``, ``ro`` (``scan.snapshot-id`` /
``scan.tag-name`` time-travel those that allow it). They are computed on the driver from
metadata (``audit_log`` / ``ro`` read the data there too) and served as one input partition.

Filters Spark pushes are translated by :mod:`pipelines.spark_source.filters` (partition /
bucket / stats pruning plus exact row filtering in the scan); the rest stays with Spark.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
)

from paimon_core import (
    CoreOptions,
    SchemaError,
)
from paimon_core.integration import (
    split_system_table,
)
from pipelines.spark_source.changes import IncrementalReader, PaimonStreamReader
from pipelines.spark_source.options import (
    ReadOptions,
    check_options,
    refuse_batch_unsupported,
)
from pipelines.spark_source.reading import (
    PaimonBatchReader,
    SystemTableReader,
    _columns,
    _output_schema,
    _system_time_travel,
    options_settings,
    read_handle,
    table_identifier,
)
from pipelines.spark_source.sink import PaimonStreamWriter, PaimonWriter, Target
from pipelines.spark_source.tables import effective_options, with_identity
from pipelines.spark_types import spark_schema

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = ["PaimonDataSource", "options_settings", "table_identifier", "write_target"]

FORMAT = "paimon"


# ---------------------------------------------------------------------------- data source


class PaimonDataSource(DataSource):
    """``format("paimon")``: batch and streaming reads, batch and streaming writes (see the
    module docs). Options are :func:`pipelines.spark_source.tables.effective_options`: the session's
    ``spark.paimon.*`` defaults (:attr:`session_defaults`, bound by
    :func:`pipelines.spark_source.sql.register_sql`), then the table a catalog table's schema
    names, then the options given."""

    #: ``spark.paimon.*`` session conf (prefix stripped), bound at registration
    session_defaults: ClassVar[Mapping[str, str]] = {}

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        # every path (read, stream, write) creates the source on the driver first: a typo
        # fails here, before any table is opened (pipelines.spark_source.options)
        check_options(self.options)

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def _options(self, schema: StructType | None = None) -> dict[str, str]:
        return effective_options(self.options, schema, self.session_defaults)

    def _write_options(self) -> dict[str, str]:
        """What a write overlays (:func:`pipelines.spark_source.sink.for_this_job`): not a catalog
        table's CREATE options (the table's own, maybe older than an ALTER)."""
        return effective_options(self.options, None, self.session_defaults)

    def schema(self) -> StructType:
        options = self._options()
        base, system = split_system_table(table_identifier(options))
        if system is not None:
            table = read_handle(options, base).open()
            snapshot_id, tag = _system_time_travel(table, options)
            return with_identity(
                spark_schema(table.inspect.fields(system, snapshot_id=snapshot_id, tag=tag)),
                options)
        table = read_handle(options, without=(CoreOptions.CONSUMER_ID,)).open()
        ro = ReadOptions.parse(options)
        if ro.incremental is not None:
            read_schema = table.schema
        else:
            read_schema = table.new_read_builder().with_time_travel(
                **ro.time_travel()).read_schema()
        cols = _columns(options, read_schema)
        return with_identity(
            _output_schema([read_schema.field(c) for c in cols], ro.read_changelog), options)

    def reader(self, schema: StructType) -> DataSourceReader:
        options = self._options(schema)
        refuse_batch_unsupported(options)
        if split_system_table(table_identifier(options))[1] is not None:
            return SystemTableReader(options, schema)
        if ReadOptions.parse(options).incremental is not None:
            return IncrementalReader(options, schema)
        return PaimonBatchReader(options, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return PaimonStreamReader(self._options(schema), schema)

    def writer(self, schema: StructType, overwrite: bool) -> PaimonWriter:
        options = self._options(schema)
        if not (options.get("table") or options.get("path")) and not self.options:
            raise SchemaError(
                "the paimon data source needs a table: option 'table' or save('db.t'). An "
                "INSERT into a 'USING paimon' table that did not go through spark.sql of a "
                "session with pipelines.spark_source.sql.register_sql (parameterized, Spark "
                "Connect, the spark-sql shell) arrives without the table's OPTIONS when every "
                "column of its SELECT matches the table's by name and type: alias or cast one "
                "column (SELECT id AS id2, ...), or write with "
                "df.write.format('paimon').save('db.t'); a table created with a column list "
                "outside such a spark.sql names no Paimon table: CREATE it again through it")
        return PaimonWriter(write_target(options), options, schema, overwrite,
                            self._write_options())

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = self._options(schema)
        return PaimonStreamWriter(write_target(options), options, schema, overwrite,
                                  self._write_options())


def write_target(options: Mapping[str, str]) -> Target:
    """The table a write with these (effective) options goes to."""
    return Target(options_settings(options), table_identifier(options))


