"""The options of the ``paimon`` Spark data source: every key declared once, and a validator.

An option given to ``spark.read/readStream/write.format("paimon")`` is accepted when it is

* declared here: :data:`READ_OPTIONS` (reads, after paimon-spark's ``sql-query.md`` and
  ``SparkConnectorOptions``) or :data:`WRITE_OPTIONS` (writes and table creation);
* a Paimon table option (a key of :class:`paimon_core.CoreOptions`, the one home of Paimon's
  option names), passed through as a dynamic option;
* under a declared prefix (:data:`PREFIXES`: storage options, ``fields.<name>.*``).

Anything else is refused with :class:`UnknownOptionError` naming the closest declared key
(``scan.snapshotid`` -> "did you mean 'scan.snapshot-id'"), so a typo never silently turns
into a full read of the latest snapshot. Spark hands a Python data source its options in a
``CaseInsensitiveDict`` (keys lower-cased): keys are compared case-insensitively, and
:func:`lookup` finds ``read.stream.maxFilesPerTrigger`` under ``read.stream.maxfilespertrigger``.

:class:`ReadOptions` parses the read options once (typed values, defaults, conflicts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from paimon_core import CoreOptions, SchemaError, UnsupportedError
from paimon_core.errors import did_you_mean
from paimon_core.integration import StartupMode, parse_memory_size, text_timestamp_nanos
from pipelines.spark_source.sink import (
    CHECKPOINT_LOCATION,
    COMMIT_IDENTIFIER,
    COMMIT_USER,
    OVERWRITE_PARTITION,
    ROW_KIND_COLUMN,
    WRITE_ASSIGNER_TASKS,
)
from pipelines.spark_source.sink_schema import EXPLICIT_CAST, MERGE_SCHEMA, MERGE_SCHEMA_ALIAS
from pipelines.spark_source.tables import CREATE_TABLE_EXTRAS

__all__ = [
    "PREFIXES",
    "READ_OPTIONS",
    "SPARK_OPTIONS",
    "WRITE_OPTIONS",
    "IncrementalRange",
    "ReadOptions",
    "SourceOption",
    "UnknownOptionError",
    "check_options",
    "declared",
    "lookup",
    "refuse_batch_unsupported",
]

OptionKind = Literal["string", "int", "bool", "memory", "enum"]


@dataclass(frozen=True, slots=True)
class SourceOption:
    """One option of the data source.

    Attributes:
        name: the key as documented (Spark matches it case-insensitively).
        kind: how the value is parsed.
        default: the default, as text (None: unset).
        doc: one line for the README's table.
        choices: the allowed values of an ``enum`` option.
        aliases: short forms accepted as well.
    """

    name: str
    kind: OptionKind
    default: str | None
    doc: str
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()

    def check(self, key: str, raw: str) -> None:
        """Raises :class:`SchemaError` when ``raw`` is not a value of this option."""
        text = str(raw).strip()
        if self.kind == "int":
            try:
                int(text)
            except ValueError as e:
                raise SchemaError(f"option {key}={raw!r} is not an integer") from e
        elif self.kind == "bool":
            if text.lower() not in ("true", "false"):
                raise SchemaError(f"option {key}={raw!r} is not a boolean (true or false)")
        elif self.kind == "memory":
            parse_memory_size(key, text)
        elif self.kind == "enum" and text.lower() not in self.choices:
            raise SchemaError(f"option {key}={raw!r} must be one of {', '.join(self.choices)}")


_O = CoreOptions
_SCAN_MODES = tuple(m.value for m in StartupMode)
INCREMENTAL_MODES = ("auto", "delta", "changelog", "diff")
MAX_FILES_PER_TRIGGER = "read.stream.maxFilesPerTrigger"
MAX_BYTES_PER_TRIGGER = "read.stream.maxBytesPerTrigger"
MAX_ROWS_PER_TRIGGER = "read.stream.maxRowsPerTrigger"
READ_CHANGELOG = "read.changelog"
SPLIT_TARGET_SIZE = "split.target-size"
DEFAULT_SPLIT_TARGET = 128 * 1024 * 1024

#: Options of reads (batch and streaming).
READ_OPTIONS: tuple[SourceOption, ...] = (
    SourceOption("warehouse", "string", None, "warehouse root (required)"),
    SourceOption("table", "string", None, "``db.name`` (or ``load('db.name')``)"),
    SourceOption("path", "string", None, "set by Spark from ``load(path)``: the table"),
    SourceOption("columns", "string", None, "projection, comma-separated"),
    SourceOption("filter", "string", None,
                 "extra Paimon filter (``amount > 10``; several joined by ``;``)"),
    SourceOption(_O.SCAN_SNAPSHOT_ID, "int", None,
                 "batch: read this snapshot; stream: start here (``scan.mode``)",
                 aliases=("snapshot-id",)),
    SourceOption(_O.SCAN_TAG_NAME, "string", None, "batch: read this tag", aliases=("tag",)),
    SourceOption(_O.SCAN_TIMESTAMP_MILLIS, "int", None,
                 "batch: the latest snapshot at or before this time (epoch millis); stream: "
                 "start at this time", aliases=("timestamp-millis",)),
    SourceOption(_O.SCAN_TIMESTAMP, "string", None,
                 "as ``scan.timestamp-millis``, as text ``yyyy-MM-dd HH:mm:ss[.SSS]`` (UTC "
                 "unless an offset is given)"),
    SourceOption(_O.SCAN_MODE, "enum", StartupMode.DEFAULT.value,
                 "stream startup: ``latest-full``, ``latest``, ``from-snapshot``, "
                 "``from-snapshot-full``, ``from-timestamp``, ...", choices=_SCAN_MODES),
    SourceOption(_O.INCREMENTAL_BETWEEN, "string", None,
                 "batch: the changes of ``(start, end]``, snapshot ids ``'5,10'`` or tag names "
                 "``'tag1,tag3'`` (tags: the difference of the two tags' states)"),
    SourceOption(_O.INCREMENTAL_BETWEEN_TIMESTAMP, "string", None,
                 "batch: the changes committed in ``(t1, t2]`` (epoch millis ``'t1,t2'``)"),
    SourceOption(_O.INCREMENTAL_BETWEEN_SCAN_MODE, "enum", "auto",
                 "``auto`` (changelog files when the table has a changelog producer, else delta "
                 "files), ``delta``, ``changelog`` or ``diff``", choices=INCREMENTAL_MODES),
    SourceOption(_O.CONSUMER_ID, "string", None,
                 "stream: record progress in ``consumer/consumer-<id>`` (protects unread "
                 "snapshots from expiry; a restarted query without checkpoint resumes there)"),
    SourceOption(READ_CHANGELOG, "bool", "false",
                 "a ``_kind`` column (``+I``/``-U``/``+U``/``-D``) first; otherwise streams and "
                 "incremental reads drop ``-U``/``-D`` rows"),
    SourceOption(SPLIT_TARGET_SIZE, "memory", "128 mb",
                 "batch and stream: pack splits into input partitions of about this size "
                 "(``0``: one split per partition)"),
    SourceOption(MAX_FILES_PER_TRIGGER, "int", None,
                 "stream: at most this many data files per micro-batch (whole snapshots: a "
                 "batch holds one snapshot at least)"),
    SourceOption(MAX_BYTES_PER_TRIGGER, "memory", None,
                 "stream: at most this many bytes of data files per micro-batch (as above)"),
    SourceOption(MAX_ROWS_PER_TRIGGER, "int", None,
                 "stream: at most this many rows per micro-batch (as above)"),
)

#: Options of writes (``df.write.format("paimon")``, ``writeStream``; the keys are
#: :mod:`pipelines.spark_source.sink`'s); extend it with new write options.
WRITE_OPTIONS: tuple[SourceOption, ...] = (
    SourceOption(COMMIT_USER, "string", None,
                 "commit user (default ``spark-<uuid>``; give one for exactly-once)"),
    SourceOption(COMMIT_IDENTIFIER, "int", None,
                 "commit identifier: one already committed by the user is not applied again"),
    SourceOption(OVERWRITE_PARTITION, "string", None,
                 "``mode('overwrite')``: the static partition ``k=v,...`` to replace"),
    SourceOption(ROW_KIND_COLUMN, "string", None, "input column holding each row's kind"),
    SourceOption(MERGE_SCHEMA, "bool", "false",
                 "add the columns the table lacks (nullable), write NULL into the table "
                 "columns the rows lack, widen numeric columns (otherwise both are refused)",
                 aliases=(MERGE_SCHEMA_ALIAS,)),
    SourceOption(EXPLICIT_CAST, "bool", "false",
                 "paimon-spark's lossy retyping under merge-schema: refused when it would be "
                 "needed (paimon_core only widens types)"),
    SourceOption(WRITE_ASSIGNER_TASKS, "int", None,
                 "set by ``df.write``'s shuffle: the assigner channels a dynamic bucket "
                 "primary-key table's rows were routed to (task ``i`` runs channel ``i``)"),
)

#: Options Spark itself adds: a stream sink's checkpoint, a ``CREATE TABLE``'s provider and
#: owner (and ``option.<key>`` copies, see :data:`PREFIXES`).
SPARK_OPTIONS: tuple[SourceOption, ...] = (
    SourceOption(CHECKPOINT_LOCATION, "string", None,
                 "``writeStream``: Spark's checkpoint (the default commit user derives from it)"),
    *(SourceOption(k, "string", None, "added by Spark to a CREATE TABLE")
      for k in CREATE_TABLE_EXTRAS),
)

#: Key prefixes passed through: storage options of paimon_core's FileIO (``storage.`` is
#: stripped), Paimon's per-field table options and the ``option.<key>`` copies Spark adds to a
#: ``CREATE TABLE``'s options.
PREFIXES: tuple[str, ...] = ("storage.", "s3.", "fs.", "fields.", "option.")


#: Paimon scan options a batch read does not apply: refused by name (a stream refuses them in
#: its startup, :class:`~paimon_core.StreamTableScan`)
BATCH_UNSUPPORTED = (CoreOptions.SCAN_WATERMARK, CoreOptions.SCAN_VERSION,
                     CoreOptions.SCAN_FILE_CREATION_TIME_MILLIS)
#: ``scan.mode`` values a batch read has no reading of (the others read one snapshot whole,
#: or a range with ``incremental-between``)
BATCH_UNSUPPORTED_MODES = (StartupMode.COMPACTED_FULL, StartupMode.FROM_FILE_CREATION_TIME)


def refuse_batch_unsupported(options: Mapping[str, str]) -> None:
    """Raises :class:`UnsupportedError` naming a Paimon scan option a batch read would not
    apply (:data:`BATCH_UNSUPPORTED`, :data:`BATCH_UNSUPPORTED_MODES`)."""
    for key in BATCH_UNSUPPORTED:
        if lookup(options, key) is not None:
            raise UnsupportedError(f"option {key} is not supported by batch reads of the paimon "
                                   "data source (time travel: scan.snapshot-id, scan.tag-name, "
                                   "scan.timestamp-millis)")
    mode = (lookup(options, CoreOptions.SCAN_MODE) or "").lower()
    if mode in BATCH_UNSUPPORTED_MODES:
        raise UnsupportedError(f"option scan.mode={mode} is not supported by batch reads of the "
                               "paimon data source")


class UnknownOptionError(SchemaError):
    """An option key the ``paimon`` data source does not know.

    Attributes:
        key: the key as given (lower-cased by Spark).
        suggestion: the closest declared key, or None.
    """

    def __init__(self, key: str, suggestion: str | None) -> None:
        hint = f"; did you mean {suggestion!r}?" if suggestion else ""
        super().__init__(
            f"unknown option {key!r} for the paimon data source{hint} (the options are listed "
            "in README.md's Spark section; Paimon table options are the keys of "
            "paimon_core.CoreOptions)")
        self.key = key
        self.suggestion = suggestion


def declared() -> dict[str, SourceOption | None]:
    """Every accepted key, lower-cased -> its declaration (None: a Paimon table option)."""
    out: dict[str, SourceOption | None] = {k.lower(): None for k in CoreOptions.declared_keys()}
    for opt in (*READ_OPTIONS, *WRITE_OPTIONS, *SPARK_OPTIONS):
        for name in (opt.name, *opt.aliases):
            out[name.lower()] = opt
    return out


_DECLARED = declared()
_SPELLING = {k.lower(): k for k in (*CoreOptions.declared_keys(),
                                    *(o.name for o in (*READ_OPTIONS, *WRITE_OPTIONS)))}


def lookup(options: Mapping[str, str], name: str) -> str | None:
    """The value of option ``name`` (or of one of its aliases), case-insensitively; blank
    values count as unset."""
    opt = _DECLARED.get(name.lower())
    names = (name, *(opt.aliases if opt is not None else ()))
    lowered = {str(k).lower(): v for k, v in options.items()}
    for n in names:
        v = lowered.get(n.lower())
        if v is not None and str(v).strip() != "":
            return str(v).strip()
    return None


def check_options(options: Mapping[str, str]) -> None:
    """Refuse unknown keys and malformed values of declared ones.

    Raises:
        UnknownOptionError: a key that is neither declared, a Paimon table option nor under a
            declared prefix (the message names the closest declared key).
        SchemaError: a value that does not parse (``scan.snapshot-id=abc``), or options that
            exclude each other (two time-travel targets, time travel with
            ``incremental-between``).
    """
    for key, raw in options.items():
        k = str(key).lower()
        if k in _DECLARED:
            opt = _DECLARED[k]
            if opt is not None and raw is not None and str(raw).strip() != "":
                opt.check(str(key), str(raw))
            continue
        if k.startswith(PREFIXES):
            continue
        close = did_you_mean(k, _SPELLING)
        raise UnknownOptionError(str(key), _SPELLING[close] if close else None)
    ReadOptions.parse(options)  # conflicts


@dataclass(frozen=True, slots=True)
class IncrementalRange:
    """``incremental-between`` / ``incremental-between-timestamp``: the range ``(start, end]``.

    Attributes:
        start, end: snapshot ids, epoch millis (``timestamps``) or tag names (``tags``).
        mode: ``incremental-between-scan-mode``.
    """

    start: str
    end: str
    mode: str
    timestamps: bool = False
    tags: bool = False


def _range(key: str, raw: str, mode: str, *, timestamps: bool) -> IncrementalRange:
    parts = [p.strip() for p in raw.split(",")]
    if len(parts) != 2 or not all(parts):
        raise SchemaError(f"option {key}={raw!r}: expected 'start,end'")
    numeric = [p.lstrip("-").isdigit() for p in parts]
    if timestamps and not all(numeric):
        raise SchemaError(f"option {key}={raw!r}: expected two epoch millis 'start,end'")
    if any(numeric) and not all(numeric):
        raise SchemaError(f"option {key}={raw!r}: give two snapshot ids or two tag names")
    return IncrementalRange(parts[0], parts[1], mode, timestamps=timestamps,
                            tags=not all(numeric))


def _int(options: Mapping[str, str], name: str) -> int | None:
    raw = lookup(options, name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError as e:
        raise SchemaError(f"option {name}={raw!r} is not an integer") from e


def _positive(options: Mapping[str, str], name: str, *, memory: bool = False) -> int | None:
    raw = lookup(options, name)
    if raw is None:
        return None
    value = parse_memory_size(name, raw) if memory else _int(options, name)
    assert value is not None
    if value <= 0:
        raise SchemaError(f"option {name}={raw!r} must be positive")
    return value


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """The read options, parsed (see :data:`READ_OPTIONS` for their meaning)."""

    snapshot_id: int | None = None
    tag: str | None = None
    timestamp_millis: int | None = None
    incremental: IncrementalRange | None = None
    read_changelog: bool = False
    split_target: int = DEFAULT_SPLIT_TARGET
    consumer_id: str | None = None
    max_files: int | None = None
    max_bytes: int | None = None
    max_rows: int | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadOptions:
        """Raises :class:`SchemaError` for a malformed value or options that exclude each
        other."""
        millis = _int(options, _O.SCAN_TIMESTAMP_MILLIS)
        text = lookup(options, _O.SCAN_TIMESTAMP)
        if text is not None:
            if millis is not None:
                raise SchemaError("give only one of scan.timestamp-millis and scan.timestamp")
            try:
                millis = text_timestamp_nanos(text) // 1_000_000
            except ValueError as e:
                raise SchemaError(f"option scan.timestamp={text!r}: {e}") from e
        snapshot_id = _int(options, _O.SCAN_SNAPSHOT_ID)
        tag = lookup(options, _O.SCAN_TAG_NAME)
        given = [n for n, v in ((_O.SCAN_SNAPSHOT_ID, snapshot_id), (_O.SCAN_TAG_NAME, tag),
                                ("scan.timestamp(-millis)", millis)) if v is not None]
        mode = (lookup(options, _O.INCREMENTAL_BETWEEN_SCAN_MODE) or "auto").lower()
        between = lookup(options, _O.INCREMENTAL_BETWEEN)
        between_ts = lookup(options, _O.INCREMENTAL_BETWEEN_TIMESTAMP)
        incremental = None
        if between is not None and between_ts is not None:
            raise SchemaError("give only one of incremental-between and "
                              "incremental-between-timestamp")
        if between is not None:
            incremental = _range(_O.INCREMENTAL_BETWEEN, between, mode, timestamps=False)
        elif between_ts is not None:
            incremental = _range(_O.INCREMENTAL_BETWEEN_TIMESTAMP, between_ts, mode,
                                 timestamps=True)
        scan_mode = (lookup(options, _O.SCAN_MODE) or "").lower()
        streaming_start = scan_mode not in ("", StartupMode.DEFAULT)
        if len(given) > 1 and not streaming_start:
            raise SchemaError(f"give at most one time-travel option, not {' and '.join(given)}")
        if incremental is not None and given:
            raise SchemaError(f"incremental-between cannot be combined with {given[0]}")
        split = lookup(options, SPLIT_TARGET_SIZE)
        return cls(
            snapshot_id=snapshot_id, tag=tag, timestamp_millis=millis, incremental=incremental,
            read_changelog=(lookup(options, READ_CHANGELOG) or "false").lower() == "true",
            split_target=(DEFAULT_SPLIT_TARGET if split is None
                          else parse_memory_size(SPLIT_TARGET_SIZE, split)),
            consumer_id=lookup(options, _O.CONSUMER_ID),
            max_files=_positive(options, MAX_FILES_PER_TRIGGER),
            max_bytes=_positive(options, MAX_BYTES_PER_TRIGGER, memory=True),
            max_rows=_positive(options, MAX_ROWS_PER_TRIGGER),
        )

    def time_travel(self) -> dict[str, int | str | None]:
        """Keyword arguments of ``ReadBuilder.with_time_travel``."""
        return {"snapshot_id": self.snapshot_id, "tag": self.tag,
                "timestamp_millis": self.timestamp_millis}

    @property
    def limited(self) -> bool:
        """Whether a read limit per micro-batch is set."""
        return any(x is not None for x in (self.max_files, self.max_bytes, self.max_rows))
