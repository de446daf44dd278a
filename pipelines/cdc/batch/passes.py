"""One pass over a CDC batch: the write half of its Spark job, as :func:`pipelines.writer.
run_write_tasks` runs a DataFrame write: planned on the driver (:func:`write_pass`), run as a
picklable task per bucket (:class:`PassTask`), its outputs collected into one
:class:`PassResult` (nothing committed yet).

The decoded rows (:func:`pipelines.cdc.batch.stage.decoded_blobs`; rejected events ride along with
NULL keys) go to their bucket's task (``repartitionById``); each task counts its events per
outcome, collects sample lines of events whose images carry columns the table lacks, writes
its rejected events to ``quarantine/part-<task>.jsonl`` (deterministic names: a retried task or
a re-run of the batch overwrites instead of duplicating; their line numbers from the rows' line
positions and the batch's ranges), keeps the last change of every key by source position and
writes the valid rows.

With truncates (the positions of the batch's truncate events, in order) the rows are split at
them into segments written apart (each a step of the commit: see
:func:`pipelines.cdc.batch.commit.plan_steps`), through the table's ``write-only`` copy
(no compaction: a step is one snapshot); a TOAST placeholder after a truncate takes its
previous value from its own segment only (the table was emptied).
"""

from __future__ import annotations

import functools
import json
import pickle
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_core import CommitMessage, CoreOptions
from paimon_core.integration import FileIO, join
from pipelines.cdc.batch.rows import after_position, key_only_deletes, last_changes
from pipelines.cdc.batch.stage import blob_tables
from pipelines.cdc.events import (
    ERROR_COLUMN,
    KIND_COLUMN,
    MESSAGE,
    SEQUENCE_UNFIT,
    TOMBSTONE,
    TRUNCATE,
    position_columns,
)
from pipelines.cdc.formats.views import DDL
from pipelines.cdc.ranges import LineNumbers, LineRange
from pipelines.cdc.routing import Routing, routing
from pipelines.cdc.source_tables import OTHER_TABLE
from pipelines.cdc.toast import fill_unavailable
from pipelines.cdc.values.convert import bad_value
from pipelines.config import TableHandle
from pipelines.writer import write_batches

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["PassResult", "PassTask", "write_pass", "write_pass_local"]

#: the outcomes that are no malformed event (counted, never quarantined)
_SKIPPED = pa.array([TOMBSTONE, MESSAGE, TRUNCATE, DDL, OTHER_TABLE])
#: one task's output row
_OUT_FIELDS = [("payload", pa.binary()), ("rows", pa.int64()), ("counts", pa.string()),
               ("unknown", pa.string()), ("notes", pa.string())]
_OUT_ARROW = pa.schema([pa.field(n, t) for n, t in _OUT_FIELDS])
_OUT_DDL = "payload binary, rows bigint, counts string, unknown string, notes string"
#: sample lines kept per new column
_SAMPLES = 100

Previous = Callable[[Sequence[str]], pa.Table]


@dataclass
class PassResult:
    """What one pass over a batch produced (nothing committed yet)."""

    messages: list[CommitMessage]
    rows: int
    counts: dict[str, int]
    unknown: dict[str, list[str]]  # new column -> sample event lines
    connectors: set[str]  # the events' source.connector values
    truncates: list[tuple[object, ...]]  # the positions of truncate events
    #: with truncates: the messages of the changes before the first truncate, between the
    #: first and the second... after the last (the steps of the commit)
    segments: list[list[CommitMessage]] = field(default_factory=list)

    @classmethod
    def empty(cls, segments: int) -> PassResult:
        return cls([], 0, {}, {}, set(), [], [[] for _ in range(segments)])

    def add(self, r: Any) -> None:
        """The collector: one task's output row (see :meth:`PassTask.run`)."""
        parts: list[list[CommitMessage]] = pickle.loads(r["payload"])
        for s, msgs in enumerate(parts):
            self.messages.extend(msgs)
            if self.segments:
                self.segments[s].extend(msgs)
        self.rows += int(r["rows"])
        for k, v in json.loads(r["counts"]).items():
            self.counts[k] = self.counts.get(k, 0) + int(v)
        for k, lines in json.loads(r["unknown"]).items():
            self.unknown.setdefault(k, []).extend(lines)
        notes = json.loads(r["notes"])
        self.connectors.update(notes["connectors"])
        self.truncates.extend(tuple(p) for p in notes["truncates"])


@dataclass
class _Tally:
    """What one task saw besides the rows it writes: counts per outcome, new columns' sample
    lines, the quarantine's records, connectors and truncate positions."""

    batch: int
    files: Sequence[str]
    pos: Sequence[str]
    line_of: LineNumbers
    counts: dict[str, int] = field(default_factory=dict)
    unknown: dict[str, list[str]] = field(default_factory=dict)
    rejected: list[str] = field(default_factory=list)
    connectors: set[str] = field(default_factory=set)
    truncates: list[list[object]] = field(default_factory=list)

    def observe(self, b: pa.RecordBatch) -> pa.RecordBatch:
        """Tally one batch of decoded rows; returns its valid rows."""
        err = b.column(ERROR_COLUMN)
        first = pc.equal(b.column("_event"), 0)
        vc = pc.value_counts(pc.fill_null(pc.filter(err, first), ""))
        for v, n in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()):
            self.counts[v] = self.counts.get(v, 0) + n
        new = pc.is_valid(b.column("_unknown"))
        if pc.any(new).as_py():
            sub = b.filter(new)
            for names, line in zip(sub.column("_unknown").to_pylist(),
                                   sub.column("_value").to_pylist()):
                for k in names.split("\n"):
                    samples = self.unknown.setdefault(k, [])
                    if len(samples) < _SAMPLES:
                        samples.append(line)
        trunc = pc.fill_null(pc.equal(err, TRUNCATE), False)
        # the connectors of the rows the batch orders, or would but for the sequence column
        # (a malformed or skipped event's missing position orders nothing: it never makes a
        # batch a mix of orders)
        ordered = pc.or_(pc.or_(pc.is_null(err), trunc),
                         pc.starts_with(pc.fill_null(err, ""), SEQUENCE_UNFIT))
        conn = pc.unique(pc.filter(b.column("_connector"), ordered)).to_pylist()
        self.connectors.update(c for c in conn if c is not None)
        if pc.any(trunc).as_py():
            self.truncates.extend(list(r.values()) for r in
                                  b.filter(trunc).select(list(self.pos)).to_pylist())
        bad = pc.and_(pc.is_valid(err), pc.invert(pc.is_in(err, _SKIPPED)))
        for r in b.filter(bad).select([*self.pos[-2:], ERROR_COLUMN, "_value"]).to_pylist():
            record = self._record(r, r[ERROR_COLUMN])
            record["value"] = bad_value(r["_value"], r[ERROR_COLUMN])
            record["event"] = r["_value"]
            self.rejected.append(json.dumps(record, ensure_ascii=False))
        return b.filter(pc.is_null(err))

    def refuse(self, data: pa.Table, refused: dict[int, str]) -> pa.Table:
        """``data`` without the rows ``refused`` (index -> reason): each is counted under its
        reason instead of as valid, and quarantined by its file and line (the event's text is
        not kept for valid rows)."""
        keep = np.ones(data.num_rows, bool)
        for i, reason in sorted(refused.items()):
            keep[i] = False
            r = data.slice(i, 1).select([*self.pos[-2:], "_event"]).to_pylist()[0]
            if r["_event"] == 0:
                self.counts[""] = self.counts.get("", 0) - 1
                self.counts[reason] = self.counts.get(reason, 0) + 1
            self.rejected.append(json.dumps({**self._record(r, reason), "event": None}))
        return data.filter(pa.array(keep))

    def _record(self, r: dict[str, Any], reason: str) -> dict[str, Any]:
        """A quarantine record's head: the event's batch, file, line and reason."""
        f, line = self.pos[-2], self.pos[-1]
        return {"batch": self.batch, "file": self.files[r[f]],
                "line": self.line_of(r[f], r[line]), "reason": reason}

    def output(self, parts: list[list[CommitMessage]], rows: int) -> pa.RecordBatch:
        """The task's one output row (read back by :meth:`PassResult.add`)."""
        return pa.RecordBatch.from_pydict(
            {"payload": [pickle.dumps(parts)], "rows": [rows],
             "counts": [json.dumps(self.counts)], "unknown": [json.dumps(self.unknown)],
             "notes": [json.dumps({"connectors": sorted(self.connectors),
                                   "truncates": self.truncates})]}, schema=_OUT_ARROW)


@dataclass(frozen=True)
class PassTask:
    """The picklable write task of one pass: made on the driver, shipped to every Spark task
    of the write stage (:meth:`run` over that task's bucket's blobs)."""

    #: the table as pinned for the batch (the previous rows of TOAST placeholders)
    handle: TableHandle
    #: the table the rows are written to: ``handle``, or its ``write-only`` copy with truncates
    target: TableHandle
    user: str
    file_io: FileIO
    quarantine: str | None
    batch: int
    files: tuple[str, ...]
    ranges: tuple[LineRange, ...]
    start_snapshot: int | None
    route: Routing
    pos: tuple[str, ...]
    #: whether TOAST placeholders take the key's previous value
    fill_previous: bool
    #: the truncates' positions (None: the batch holds none)
    cuts: tuple[tuple[object, ...], ...] | None

    def run(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """One Spark task: its bucket's rows tallied, written (per segment) and reported."""
        yield self.run_task(_partition_id() or 0, batches)

    def run_task(self, pid: int, batches: Iterator[pa.RecordBatch]) -> pa.RecordBatch:
        """Write task ``pid`` (the Spark task's partition, or :func:`write_pass_local`'s
        task): its rows tallied, written (per segment) and reported in one row."""
        tally = _Tally(self.batch, self.files, self.pos, LineNumbers(self.file_io, self.ranges))
        held = [v for t in blob_tables(batches) for b in t.to_batches()
                if (v := tally.observe(b)).num_rows]
        data = pa.Table.from_batches(held) if held else None
        channel = self.route.channel(pid)
        previous = functools.partial(self._previous, pid=pid)
        if self.cuts is None:
            msgs, rows = self._write(data, previous, False, tally, channel)
            parts = [msgs]
        else:
            parts, rows = self._segments(data, previous, tally, channel)
        if tally.rejected and self.quarantine is not None:
            self.file_io.write_bytes(join(self.quarantine, f"part-{pid:05d}.jsonl"),
                                     ("\n".join(tally.rejected) + "\n").encode("utf-8"))
        return tally.output(parts, rows)

    def _segments(self, data: pa.Table | None, previous: Previous, tally: _Tally, channel: Any
                  ) -> tuple[list[list[CommitMessage]], int]:
        """The rows split at the truncates, each segment written apart (after a truncate the
        table holds nothing, and a dynamic bucket table's buckets are assigned afresh)."""
        cuts = self.cuts or ()
        data = data.combine_chunks() if data is not None else None
        seg = np.zeros(data.num_rows if data is not None else 0, np.int64)
        if data is not None:
            for cut in cuts:
                seg += np.asarray(after_position(data, self.pos, cut).to_numpy(
                    zero_copy_only=False), np.int64)
        parts, rows = [], 0
        for s in range(len(cuts) + 1):
            part = data.filter(pa.array(seg == s)) if data is not None else None
            m, n = self._write(part, previous if s == 0 else _nothing, s > 0, tally,
                               channel)
            parts.append(m)
            rows += n
        return parts, rows

    def _write(self, data: pa.Table | None, previous: Previous, emptied: bool, tally: _Tally,
               channel: Any) -> tuple[list[CommitMessage], int]:
        """``emptied``: the rows follow a truncate (written as an overwrite)."""
        schema = self.handle.schema
        if data is not None and self.fill_previous:
            data, refused = fill_unavailable(data, schema, self.pos, previous)
            if refused:
                data = tally.refuse(data, dict(refused))
        last = (key_only_deletes(last_changes(data, schema.primary_keys, self.pos),
                                 schema.fields, schema.primary_keys).combine_chunks().to_batches()
                if data is not None and data.num_rows else [])
        return write_batches(self.target, self.user, last, row_kind_column=KIND_COLUMN,
                             overwrite=emptied, assigner_channel=channel)

    def _previous(self, columns: Sequence[str], pid: int) -> pa.Table:
        """The table's rows of task ``pid``'s bucket as the batch started."""
        if self.start_snapshot is None:
            return _nothing(columns)
        # a dynamic bucket task's keys may be in any bucket
        bucket = None if self.route.dynamic else pid
        rb = (self.handle.open().new_read_builder().with_projection(columns)
              .with_time_travel(snapshot_id=self.start_snapshot))
        splits = [s for s in rb.new_scan().plan().splits if bucket is None or s.bucket == bucket]
        return rb.new_read().to_arrow(splits)


def _nothing(columns: Sequence[str]) -> pa.Table:
    """No previous rows (the table is empty, or was emptied by a truncate)."""
    return pa.schema([pa.field(c, pa.string()) for c in columns]).empty_table()


def _partition_id() -> int | None:
    """This Spark task's partition (None outside a task)."""
    from pyspark import TaskContext

    tc = TaskContext.get()
    return tc.partitionId() if tc is not None else None


def write_pass(task: PassTask, blobs: DataFrame) -> PassResult:
    """Run ``task`` over the batch's decoded ``blobs`` (one Spark task per routing task) and
    collect what every task produced."""
    routed = blobs.repartitionById(task.route.tasks, "bucket")
    result = PassResult.empty(len(task.cuts) + 1 if task.cuts is not None else 0)
    for r in routed.mapInArrow(task.run, _OUT_DDL).collect():
        result.add(r)
    return result


def write_pass_local(task: PassTask, blobs: Sequence[pa.RecordBatch]) -> PassResult:
    """:func:`write_pass` run in this process (the blobs of
    :func:`pipelines.cdc.batch.stage.local_blobs`): every write task in turn, each over its
    bucket's blobs, exactly as the Spark tasks would (same task ids, files, quarantine parts)."""
    by_task: dict[int, list[pa.RecordBatch]] = {}
    for b in blobs:
        by_task.setdefault(int(b.column(0)[0].as_py()), []).append(b)
    result = PassResult.empty(len(task.cuts) + 1 if task.cuts is not None else 0)
    for pid in range(task.route.tasks):
        result.add(task.run_task(pid, iter(by_task.get(pid, []))).to_pylist()[0])
    return result


def plan_pass(handle: TableHandle, user: str, parallelism: int, *, file_io: FileIO,
              quarantine: str | None, batch: int, files: Sequence[str],
              ranges: Sequence[LineRange], start_snapshot: int | None,
              position_fields: Sequence[str] | None, fill_previous: bool,
              truncates: Sequence[Sequence[object]] | None = None) -> PassTask:
    """The planner: the task of one pass over the batch (see the module docs;
    ``parallelism``: the Spark session's, which decides the routing)."""
    cuts = tuple(tuple(t) for t in truncates) if truncates is not None else None
    target = handle if cuts is None else TableHandle.of(
        handle.settings, handle.open().copy({CoreOptions.WRITE_ONLY: "true"}))
    return PassTask(handle, target, user, file_io, quarantine, batch, tuple(files),
                    tuple(ranges), start_snapshot,
                    routing(handle.schema, parallelism),
                    tuple(position_columns(position_fields)), fill_previous, cuts)
