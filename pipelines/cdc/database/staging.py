"""The routing pass of a database sync batch: every event line to its table's staging files.

One Spark job per batch reads the batch's files in line-aligned byte ranges
(:func:`pipelines.cdc.batch.stage.plan_file_ranges`, one task unit each), parses only the
fields naming each event's table (:func:`pipelines.cdc.source_tables.names_declared`, every
other field skipped by the JSON reader) and writes each table's lines, in the order they
arrived, to::

    <staging>/batch-<n>/<database>.<table>/part-<range>.jsonl

where ``<staging>`` is ``<landing>/_staging`` (names starting ``_`` are ignored by
:func:`pipelines.cdc.ingest.list_batches`) or a location of its own (``--staging-dir``, for a
landing the job may not write to: :func:`staging_root`). Range ``k``
of the batch writes ``part-<k>``: a table's parts sorted by name are its events in file, line
order (the arrival order canal, DMS and position-less events are applied in); a retried task
writes the same names. The pass ends with the marker ``_routed.json`` (the tables, their parts
and event counts): a re-run of the batch reuses a complete staging instead of routing again.

A line naming no table (not JSON, or an event without its table's fields) cannot be routed: it
is counted by reason and quarantined (``<quarantine>/_unrouted/batch-<n>/part-<range>.jsonl``,
records as the CDC job's: batch, file, line, reason, event). A Debezium tombstone line
(``null``) is counted as a tombstone.

Staging by files rather than in memory: each table's batch is then an ordinary CDC batch of
one table (:func:`pipelines.cdc.ingest.ingest_batch`, with its ranges, passes, quarantine and
exactly-once commit), the routing is done once however many tables there are, and a re-run
after a crash between two tables' commits finds the routed lines where it left them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from paimon_core.errors import CorruptMetadataError, StorageError
from paimon_core.integration import FileIO, join
from pipelines.cdc.batch.stage import plan_file_ranges
from pipelines.cdc.events import TOMBSTONE
from pipelines.cdc.lines import is_utf8, newlines, split_lines
from pipelines.cdc.ranges import LineNumbers, LineRange
from pipelines.cdc.source_tables import event_tables, names_declared
from pipelines.session import default_parallelism

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pipelines.cdc.ingest import CdcOptions

__all__ = ["MALFORMED", "NO_TABLE", "RoutedBatch", "SourceTable", "StagedTable",
           "check_writable", "clear_staging", "line_tables", "route_batch", "staging_dir",
           "staging_root", "unrouted_reasons"]

#: reasons of a line that cannot be routed
MALFORMED = "malformed JSON"
NO_TABLE = "event names no table"
MARKER = "_routed.json"
STAGING = "_staging"

_OUT = "unit int, db string, tbl string, reason string, events long"
_NO_DB, _SEP = "\x00", "\x01"


@dataclass(frozen=True)
class SourceTable:
    """A source table the events name (``database`` None: the events name none)."""

    database: str | None
    table: str

    @property
    def name(self) -> str:
        """``database.table`` (just ``table`` when the events name no database)."""
        return f"{self.database}.{self.table}" if self.database is not None else self.table


@dataclass(frozen=True)
class StagedTable(SourceTable):
    """The staged lines of one source table of a batch: ``parts`` (paths, arrival order)."""

    parts: tuple[str, ...] = ()
    events: int = 0


@dataclass
class RoutedBatch:
    """What the routing pass of batch ``batch`` found (also the marker's content)."""

    batch: int
    tables: list[StagedTable] = field(default_factory=list)
    #: lines that name no table, per reason (quarantined), and tombstones
    unrouted: dict[str, int] = field(default_factory=dict)
    tombstones: int = 0
    quarantine: str | None = None
    reused: bool = False

    def to_json(self) -> str:
        return json.dumps({
            "batch": self.batch, "unrouted": self.unrouted, "tombstones": self.tombstones,
            "quarantine": self.quarantine,
            "tables": [{"database": t.database, "table": t.table, "parts": list(t.parts),
                        "events": t.events} for t in self.tables]}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, path: str) -> RoutedBatch:
        try:
            obj = json.loads(text)
            return cls(int(obj["batch"]), [
                StagedTable(t["database"], t["table"], tuple(t["parts"]), int(t["events"]))
                for t in obj["tables"]], {str(k): int(v) for k, v in obj["unrouted"].items()},
                int(obj["tombstones"]), obj["quarantine"], reused=True)
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptMetadataError(path, f"not a routing marker: {e}") from e


def staging_root(landing: str, staging: str | None) -> str:
    """The root of a database sync's staging: ``staging`` when given (``--staging-dir``),
    else ``<landing>/_staging``."""
    return staging if staging is not None else join(landing, STAGING)


def staging_dir(root: str, batch: int) -> str:
    """Where batch ``batch``'s routed lines are staged (``root``: :func:`staging_root`)."""
    return join(root, f"batch-{batch:06d}")


def clear_staging(file_io: FileIO, root: str, batch: int) -> None:
    """Remove batch ``batch``'s staging (every table of it committed)."""
    d = staging_dir(root, batch)
    if file_io.exists(d):
        file_io.delete_dir(d)


def check_writable(file_io: FileIO, root: str, staged_by_default: bool) -> None:
    """Write and remove a probe file under the staging ``root`` before any work.

    Raises:
        StorageError: the staging cannot be written there, naming it (and, for the default
            staging inside the landing, the flag that moves it).
    """
    probe = join(root, "_writable.probe")
    try:
        file_io.write_bytes(probe, b"")
        file_io.delete(probe)
    except StorageError as e:
        hint = ("; a read-only landing needs a staging location of its own (--staging-dir)"
                if staged_by_default else "")
        raise StorageError(root, f"the database sync cannot write its staging here "
                                 f"({e.reason}){hint}") from e


# ---------------------------------------------------------------------------- one range


def _parse(lines: pa.Array, declared: pa.Schema, start: int, out: list[tuple[int, pa.Table]],
           bad: list[int]) -> None:
    """Parse ``lines`` (only the ``declared`` fields) into chunks ``(first line, table)``;
    lines that are not JSON objects go to ``bad`` (bisected: only files holding such lines
    are parsed more than once)."""
    n = len(lines)
    if n == 0:
        return
    whole = pa.ListArray.from_arrays(pa.array([0, n], pa.int32()), lines)
    joined = pc.binary_join(whole, "\n")[0]
    doc = joined.as_buffer() if joined.is_valid else pa.py_buffer(b"")
    opts = pj.ParseOptions(explicit_schema=declared, unexpected_field_behavior="ignore")
    try:
        # one block: a line longer than the reader's default block is parsed as any other
        read = pj.ReadOptions(use_threads=False, block_size=max(1 << 20, min(doc.size + 1,
                                                                            1 << 30)))
        t = pj.read_json(pa.BufferReader(doc), parse_options=opts, read_options=read)
        if t.num_rows == n:
            out.append((start, t))
            return
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    if n == 1:
        bad.append(start)
        return
    mid = n // 2
    _parse(lines.slice(0, mid), declared, start, out, bad)
    _parse(lines.slice(mid), declared, start + mid, out, bad)


def line_tables(lines: pa.Array, fmt: str) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """Per line of ``lines``: its event's ``(database, table)`` (NULL where the line names
    none), and the indices of the lines that are not JSON objects."""
    n = len(lines)
    chunks: list[tuple[int, pa.Table]] = []
    bad: list[int] = []
    _parse(lines, names_declared(fmt), 0, chunks, bad)
    dbs: list[pa.Array] = []
    tables: list[pa.Array] = []
    at = 0
    for start, t in sorted(chunks, key=lambda c: c[0]):
        if start > at:  # lines that are not JSON: no table
            dbs.append(pa.nulls(start - at, pa.string()))
            tables.append(pa.nulls(start - at, pa.string()))
        d, tb = event_tables(t, fmt)
        dbs.append(d)
        tables.append(tb)
        at = start + t.num_rows
    if at < n:
        dbs.append(pa.nulls(n - at, pa.string()))
        tables.append(pa.nulls(n - at, pa.string()))
    if not dbs:
        return pa.nulls(0, pa.string()), pa.nulls(0, pa.string()), np.array(bad, np.int64)
    return pa.concat_arrays(dbs), pa.concat_arrays(tables), np.array(bad, np.int64)


def unrouted_reasons(lines: pa.Array, rows: np.ndarray, bad: np.ndarray) -> list[str]:
    """Why each of the lines ``rows`` (no table) is not routed: a Debezium tombstone
    (``null``), not JSON (``bad``: :data:`MALFORMED`), else :data:`NO_TABLE`."""
    text = pc.utf8_trim_whitespace(lines.take(pa.array(rows, pa.int64())))
    tomb = np.asarray(pc.equal(text, "null").to_numpy(zero_copy_only=False), bool)
    malformed = np.isin(rows, bad)
    return [TOMBSTONE if t else MALFORMED if m else NO_TABLE
            for t, m in zip(tomb.tolist(), malformed.tolist())]


@dataclass(frozen=True)
class _RouteTask:
    """The picklable task of the routing pass (one Spark task: a contiguous run of units)."""

    file_io: FileIO
    #: where the staged parts and the unrouted lines' quarantine are written
    stage_io: FileIO
    fmt: str
    stage: str
    quarantine: str | None
    batch: int
    units: tuple[LineRange, ...]

    def run(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        lines_of = LineNumbers(self.file_io, self.units)
        for b in batches:
            for u in b.column(0).to_pylist():
                yield self._route(int(u), lines_of)

    def _route(self, u: int, line_numbers: LineNumbers) -> pa.RecordBatch:
        r = self.units[u]
        data = self.file_io.read_range(r.path, r.start, r.length)
        plain = plain_lines(data, self.fmt)
        if plain is None:
            lines = split_lines(data)
            db, tbl, bad = line_tables(lines, self.fmt)
        else:  # the usual range: its lines are views over its bytes, never split nor joined
            with_newlines, db, tbl = plain
            bad = np.zeros(0, np.int64)
        key = pc.binary_join_element_wise(pc.fill_null(db, _NO_DB), tbl, _SEP)
        enc = pc.dictionary_encode(key).combine_chunks() if isinstance(
            key, pa.ChunkedArray) else pc.dictionary_encode(key)
        idx = np.asarray(pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False),
                         np.int64)
        rows: dict[str, list[object]] = {"unit": [], "db": [], "tbl": [], "reason": [],
                                         "events": []}
        for k, name in enumerate(enc.dictionary.to_pylist()):
            sel = np.flatnonzero(idx == k)
            d, t = name.split(_SEP, 1)
            part = join(self.stage, quote(f"{d}.{t}" if d != _NO_DB else t, safe=""),
                        f"part-{u:06d}.jsonl")
            self.stage_io.write_bytes(part, _text(lines.take(pa.array(sel))) if plain is None
                                      else _joined(with_newlines.take(pa.array(sel))))
            for col, v in zip(rows, (u, None if d == _NO_DB else d, t, None, len(sel))):
                rows[col].append(v)
        unrouted = np.flatnonzero(idx < 0)
        if len(unrouted):
            lines = split_lines(data) if plain is not None else lines
            self._quarantine(u, r, lines, unrouted_reasons(lines, unrouted, bad), unrouted,
                             line_numbers, rows)
        return pa.RecordBatch.from_pydict(rows, schema=pa.schema([
            ("unit", pa.int32()), ("db", pa.string()), ("tbl", pa.string()),
            ("reason", pa.string()), ("events", pa.int64())]))

    def _quarantine(self, u: int, r: LineRange, lines: pa.Array, why: list[str],
                    rows_at: np.ndarray, line_numbers: LineNumbers,
                    rows: dict[str, list[object]]) -> None:
        """Count the lines ``rows_at`` (no table; ``why``: their reasons) by reason;
        quarantine all but tombstones."""
        text = lines.take(pa.array(rows_at)).to_pylist()
        records = [json.dumps({"batch": self.batch, "file": r.path,
                               "line": line_numbers(r.file_index, r.first_position + int(j)),
                               "reason": w, "event": x})
                   for j, w, x in zip(rows_at.tolist(), why, text) if w != TOMBSTONE]
        for w in sorted(set(why)):
            for col, v in zip(rows, (u, None, None, w, why.count(w))):
                rows[col].append(v)
        if records and self.quarantine is not None:
            self.stage_io.write_bytes(join(self.quarantine, f"part-{u:06d}.jsonl"),
                                     ("\n".join(records) + "\n").encode("utf-8"))


def plain_lines(data: bytes, fmt: str) -> tuple[pa.Array, pa.Array, pa.Array] | None:
    """For the usual range (UTF-8 lines, each a JSON object ended by a newline, no CR): its
    lines, each with its newline, as a string array over ``data`` itself (no copy), and their
    events' ``(database, table)`` as :func:`line_tables` gives them (the range parsed as one
    document); None for any other range (split and parsed by :func:`line_tables`)."""
    n = len(data)
    if not n or n >= 2**31 - 1 or not data.endswith(b"\n") or b"\r" in data \
            or not is_utf8(data):
        return None
    nl = newlines(np.frombuffer(data, np.uint8))
    offsets = np.empty(len(nl) + 1, np.int32)
    offsets[0] = 0
    offsets[1:] = nl + 1
    with_newlines = pa.Array.from_buffers(pa.string(), len(nl), [
        None, pa.py_buffer(offsets), pa.py_buffer(data)])
    opts = pj.ParseOptions(explicit_schema=names_declared(fmt),
                           unexpected_field_behavior="ignore")
    read = pj.ReadOptions(use_threads=False, block_size=max(1 << 20, min(n + 1, 1 << 30)))
    try:
        t = pj.read_json(pa.BufferReader(data), parse_options=opts, read_options=read)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if t.num_rows != len(nl):  # blank lines, tombstones...: line by line
        return None
    db, tbl = event_tables(t, fmt)
    return with_newlines, db, tbl


def _joined(lines: pa.Array) -> bytes:
    """``lines`` (each ending with its newline) as one bytes object (one copy)."""
    if not len(lines):
        return b""
    offsets = np.frombuffer(lines.buffers()[1], np.int32, len(lines) + 1, lines.offset * 4)
    data: bytes = lines.buffers()[2].slice(int(offsets[0]),
                                           int(offsets[-1] - offsets[0])).to_pybytes()
    return data


def _text(lines: pa.Array) -> bytes:
    """``lines`` as JSON-lines bytes (each ended by a newline; no Python strings)."""
    whole = pa.ListArray.from_arrays(pa.array([0, len(lines)], pa.int32()), lines)
    joined = pc.binary_join(whole, "\n")[0]
    return (joined.as_buffer().to_pybytes() if joined.is_valid else b"") + b"\n"


# ---------------------------------------------------------------------------- the batch


def route_batch(spark: SparkSession, file_io: FileIO, stage_io: FileIO, root: str,
                batch: int, files: Sequence[str], opts: CdcOptions, quarantine_root: str
                ) -> RoutedBatch:
    """Route batch ``batch`` (its ``files``, read through ``file_io``) to its tables' staging
    files under ``root`` (:func:`staging_root`, written through ``stage_io``; see the module
    docs); a complete staging of an earlier run is reused.

    Raises:
        ConfigError: a format whose events cannot be routed by table (Avro).
        CorruptMetadataError: an unreadable routing marker.
    """
    names_declared(opts.format)  # a format that cannot be routed, named before any work
    stage = staging_dir(root, batch)
    marker = join(stage, MARKER)
    if stage_io.exists(marker):
        return RoutedBatch.from_json(stage_io.read_text(marker), marker)
    if stage_io.exists(stage):
        stage_io.delete_dir(stage)  # a routing pass that did not finish
    quarantine = join(quarantine_root, "_unrouted", f"batch-{batch:06d}")
    if stage_io.exists(quarantine):
        stage_io.delete_dir(quarantine)
    units = tuple(plan_file_ranges(spark, file_io, files, opts))
    task = _RouteTask(file_io, stage_io, opts.format, stage, quarantine, batch, units)
    n = max(1, min(len(units), default_parallelism(spark)))
    out = (spark.range(0, len(units), 1, n).mapInArrow(task.run, _OUT).toArrow()
           if units else pa.table({"unit": [], "db": [], "tbl": [], "reason": [],
                                   "events": []}))
    routed = _collect(batch, stage, out)
    if not any(routed.unrouted.values()):
        routed.quarantine = None
    else:
        routed.quarantine = quarantine
    stage_io.write_bytes(marker, routed.to_json().encode("utf-8"))
    return routed


def _collect(batch: int, stage: str, out: pa.Table) -> RoutedBatch:
    """The routed batch from the routing tasks' rows (one per (range, table or reason))."""
    routed = RoutedBatch(batch)
    parts: dict[tuple[str | None, str], list[tuple[int, int]]] = {}
    for row in sorted(out.to_pylist(), key=lambda r: r["unit"]):
        if row["tbl"] is not None:
            parts.setdefault((row["db"], row["tbl"]), []).append((row["unit"], row["events"]))
        elif row["reason"] == TOMBSTONE:
            routed.tombstones += row["events"]
        else:
            routed.unrouted[row["reason"]] = (routed.unrouted.get(row["reason"], 0)
                                              + row["events"])
    for (db, tbl), units in sorted(parts.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])):
        d = join(stage, quote(f"{db}.{tbl}" if db is not None else tbl, safe=""))
        routed.tables.append(StagedTable(
            db, tbl, tuple(join(d, f"part-{u:06d}.jsonl") for u, _ in units),
            sum(n for _, n in units)))
    return routed
