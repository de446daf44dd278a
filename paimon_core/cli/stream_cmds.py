"""``paimon incremental`` and ``paimon stream``: change reads from the command line.

* ``paimon incremental --from A --to B [--mode stream|between]`` prints the changes of
  snapshots ``(A, B]`` as canonical JSON lines with ``_kind`` first (the oracle's
  ``incremental`` command): ``stream`` (default) = what a streaming reader sees, unmerged,
  snapshot by snapshot (:class:`~paimon_core.scan.streaming.StreamTableScan` from snapshot
  ``A + 1``); ``between`` = Paimon 0.9 ``incremental-between``, merged per key
  (:meth:`FileStoreTable.read_merged_changes`, ``--scan-mode auto|delta|changelog|diff``).
* ``paimon stream [--consumer-id ID] [--max-snapshots N] [--follow]`` runs a streaming read:
  the startup plan (``--scan-mode``, ``--snapshot``, ``--timestamp-ms``, ``--option K=V``) and
  then every new snapshot, each snapshot's rows as sorted canonical JSON lines
  (``--headers`` adds a ``# snapshot ...`` line before each). With a consumer id the position
  is stored after each printed snapshot, so the next run resumes where this one stopped.

Example::

    paimon stream --warehouse /tmp/wh --table db.orders --consumer-id etl --max-snapshots 10
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any, TextIO

import pyarrow as pa

from paimon_core.cli.args import key_values, open_table
from paimon_core.cli.canonical import canonical_lines
from paimon_core.errors import PaimonError, SnapshotExpiredError, SnapshotNotExistError
from paimon_core.options import CoreOptions
from paimon_core.spec.option_enums import StartupMode
from paimon_core.spec.system_fields import KIND_COLUMN
from paimon_core.table import FileStoreTable

__all__ = ["add_stream_parsers", "cmd_incremental", "cmd_stream", "stream_changes"]


def _emit(table: FileStoreTable, data: pa.Table, out: TextIO) -> None:
    fields = [table.schema.field(c) for c in data.column_names if c != KIND_COLUMN]
    lines = canonical_lines(data, fields, kind_col=KIND_COLUMN)
    out.write("".join(line + "\n" for line in lines))
    out.flush()


def stream_changes(
    table: FileStoreTable,
    start: int,
    end: int,
    *,
    columns: Sequence[str] | None = None,
    filter: str | Sequence[str] | None = None,
) -> pa.Table:
    """The unmerged changes a streaming reader sees in snapshots ``(start, end]`` (delta or
    changelog files by ``changelog-producer``; skipped snapshots contribute nothing), with
    ``_kind`` first.

    Raises:
        SnapshotNotExistError: ``end`` is beyond the latest snapshot, or ``start > end``.
        SnapshotExpiredError: snapshot ``start + 1`` has been expired.
    """
    sm = table.snapshot_manager
    latest = sm.latest_snapshot_id()
    earliest = sm.earliest_snapshot_id()
    if latest is None or earliest is None or start < 0 or start > end or end > latest:
        raise SnapshotNotExistError(
            f"bad snapshot range ({start}, {end}]: the table's snapshots are "
            f"{earliest}..{latest}"
        )
    if start + 1 < earliest:
        raise SnapshotExpiredError(
            f"snapshot {start + 1} has expired (earliest is {earliest}); keep snapshots longer "
            "with 'snapshot.num-retained.min' / 'snapshot.time-retained', or read with a "
            "consumer-id"
        )
    scan = table.new_stream_scan(
        columns=columns,
        filter=filter,
        options={CoreOptions.SCAN_MODE: StartupMode.FROM_SNAPSHOT,
                 CoreOptions.SCAN_SNAPSHOT_ID: str(start + 1)},
    )
    parts = []
    while True:
        plan = scan.plan()
        if plan is None or plan.snapshot_id > end:
            break
        parts.append(scan.read(plan))
    if not parts:
        return scan.empty_table()
    return pa.concat_tables(parts)


def cmd_incremental(args: argparse.Namespace, out: TextIO) -> int:
    table = open_table(args)
    filters = args.filter or None
    if args.mode == "between":
        data = table.read_merged_changes(
            args.from_, args.to, mode=args.scan_mode or "auto", filter=filters
        )
    else:
        if args.scan_mode:
            raise PaimonError("--scan-mode only applies to --mode between")
        data = stream_changes(table, args.from_, args.to, filter=filters)
    _emit(table, data, out)
    return 0


def _scan_options(args: argparse.Namespace) -> dict[str, str]:
    opts = key_values(args.option, "--option")
    if args.scan_mode:
        opts[CoreOptions.SCAN_MODE] = args.scan_mode
    if args.snapshot is not None:
        opts[CoreOptions.SCAN_SNAPSHOT_ID] = str(args.snapshot)
        opts.setdefault(CoreOptions.SCAN_MODE, StartupMode.FROM_SNAPSHOT)
    if args.timestamp_ms is not None:
        opts[CoreOptions.SCAN_TIMESTAMP_MILLIS] = str(args.timestamp_ms)
        opts.setdefault(CoreOptions.SCAN_MODE, StartupMode.FROM_TIMESTAMP)
    return opts


def cmd_stream(args: argparse.Namespace, out: TextIO) -> int:
    table = open_table(args)
    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    scan = table.new_stream_scan(
        args.consumer_id, columns=columns, filter=args.filter or None,
        options=_scan_options(args),
    )
    printed = 0
    while args.max_snapshots is None or printed < args.max_snapshots:
        plan = scan.plan()
        if plan is None:
            if not args.follow:
                break
            time.sleep(args.poll_interval)
            continue
        data = scan.read(plan)
        if args.headers:
            out.write(
                f"# snapshot {plan.snapshot_id} {plan.commit_kind} {plan.source} "
                f"rows={data.num_rows} next={plan.next_snapshot}\n"
            )
        _emit(table, data, out)
        scan.notify_checkpoint_complete(scan.checkpoint())
        printed += 1
    return 0


def add_incremental_arguments(s: Any) -> None:
    """Options of ``paimon incremental`` beyond ``--from/--to/--mode/--filter``."""
    s.add_argument(
        "--scan-mode", choices=["auto", "delta", "changelog", "diff"], default=None,
        help="between: incremental-between-scan-mode (default auto)",
    )


def add_stream_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    s = sub.add_parser(
        "stream", parents=[common],
        help="streaming read: startup plan, then each new snapshot's changes as JSON lines",
    )
    s.add_argument("--consumer-id", help="resume from / store progress in consumer/consumer-ID")
    s.add_argument("--max-snapshots", type=int, help="stop after printing N snapshots' plans")
    s.add_argument(
        "--scan-mode",
        choices=["latest-full", "latest", "from-snapshot", "from-snapshot-full",
                 "from-timestamp", "compacted-full"],
        help="startup mode (default: the table's scan.mode, else latest-full)",
    )
    s.add_argument("--snapshot", type=int, help="scan.snapshot-id (implies from-snapshot)")
    s.add_argument("--timestamp-ms", type=int,
                   help="scan.timestamp-millis (implies from-timestamp)")
    s.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="dynamic table option, e.g. consumer.ignore-progress=true")
    s.add_argument("--filter", action="append", default=[], help="'col OP literal' (ANDed)")
    s.add_argument("--columns", help="comma-separated projection")
    s.add_argument("--follow", action="store_true", help="wait for new snapshots")
    s.add_argument("--poll-interval", type=float, default=1.0, help="seconds (with --follow)")
    s.add_argument("--headers", action="store_true",
                   help="print '# snapshot ID KIND SOURCE rows=N next=M' before each snapshot")
    s.set_defaults(func=cmd_stream)
