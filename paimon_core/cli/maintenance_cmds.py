"""The maintenance subcommands of ``paimon``: expire, remove-orphans, consumer.

Same argument style as the other subcommands::

    paimon expire --warehouse wh --table db.t [--retain-min N] [--retain-max N]
                  [--older-than-ms T | --time-retained '1 h'] [--max-deletes N]
    paimon remove-orphans --warehouse wh --table db.t [--older-than-ms T] [--dry-run]
    paimon consumer list --warehouse wh --table db.t
    paimon consumer reset ID --next-snapshot N --warehouse wh --table db.t
    paimon consumer delete ID --warehouse wh --table db.t

(``--warehouse``/``--table`` may also come right after ``consumer``.) Values not given come
from the table's options (``snapshot.num-retained.min`` 10, ``snapshot.num-retained.max``,
``snapshot.time-retained`` 1 h, ``snapshot.expire.limit`` 10). ``--older-than-ms`` is an epoch
-millis cutoff in both commands: ``expire`` keeps snapshots committed at or after it (unless
``--retain-max`` forces them out), ``remove-orphans`` only deletes files modified before it
(default: now - 1 day).

``expire`` prints one JSON summary line; ``remove-orphans`` one line per file, then a summary;
``consumer list`` one line per consumer.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from paimon_core.cli.args import add_storage_option_arg, open_table
from paimon_core.cli.write_cmds import UsageError
from paimon_core.consumer import Consumer, ConsumerManager
from paimon_core.errors import NotFoundError, SnapshotExpiredError, SnapshotNotExistError
from paimon_core.expire import ExpireConfig, ExpireSnapshots
from paimon_core.options import parse_duration_millis
from paimon_core.orphans import remove_orphan_files

__all__ = ["add_maintenance_parsers"]


def _emit(obj: dict[str, Any], out: TextIO) -> None:
    out.write(json.dumps(obj, sort_keys=True, ensure_ascii=False) + "\n")
    out.flush()


def cmd_expire(args: argparse.Namespace, out: TextIO) -> int:
    if args.older_than_ms is not None and args.time_retained is not None:
        raise UsageError("give --older-than-ms or --time-retained, not both")
    table = open_table(args)
    ctx = table.latest_context()
    time_retained = (None if args.time_retained is None
                     else parse_duration_millis("--time-retained", args.time_retained))
    config = ExpireConfig.from_options(ctx.options).with_overrides(
        retain_min=args.retain_min, retain_max=args.retain_max, max_deletes=args.max_deletes,
        time_retained_millis=time_retained)
    result = ExpireSnapshots(table.file_io, table.path, ctx, config=config,
                             older_than_millis=args.older_than_ms).expire()
    _emit(result.to_json(), out)
    return 0


def cmd_remove_orphans(args: argparse.Namespace, out: TextIO) -> int:
    result = remove_orphan_files(open_table(args), args.older_than_ms, dry_run=args.dry_run)
    for path in result.paths:
        _emit({"path": path}, out)
    _emit(result.to_json(), out)
    return 0


def cmd_consumer(args: argparse.Namespace, out: TextIO) -> int:
    for flag in ("warehouse", "table"):
        if not getattr(args, flag, None):
            raise UsageError(f"consumer needs --{flag}")
    table = open_table(args)
    mgr = ConsumerManager(table.file_io, table.path)
    if args.consumer_cmd == "list":
        for cid, nxt in sorted(mgr.consumers().items()):
            _emit({"consumer": cid, "next_snapshot": nxt}, out)
    elif args.consumer_cmd == "reset":
        n = args.next_snapshot
        if n < 1:
            raise UsageError(f"--next-snapshot must be >= 1, got {n}")
        sm = table.snapshot_manager
        earliest, latest = sm.earliest_snapshot_id(), sm.latest_snapshot_id()
        if earliest is not None and n < earliest:
            raise SnapshotExpiredError(
                f"snapshot {n} has expired (earliest is {earliest}): a consumer there could "
                "not read anything")
        if latest is not None and n > latest + 1:
            raise SnapshotNotExistError(
                f"snapshot {n} is beyond the next one to be committed ({latest + 1})")
        mgr.reset_consumer(args.id, Consumer(n))
        _emit({"op": "consumer-reset", "consumer": args.id, "next_snapshot": n}, out)
    else:
        if mgr.consumer(args.id) is None:
            raise NotFoundError(f"consumer {args.id!r} does not exist")
        mgr.delete_consumer(args.id)
        _emit({"op": "consumer-delete", "consumer": args.id}, out)
    return 0


def add_maintenance_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register expire / remove-orphans / consumer on ``sub`` (an argparse subparsers)."""
    s = sub.add_parser("expire", parents=[common], help="expire old snapshots (JSON summary)")
    s.add_argument("--retain-min", type=int, help="snapshots always kept (default: option)")
    s.add_argument("--retain-max", type=int, help="at most this many snapshots kept")
    s.add_argument("--older-than-ms", type=int, metavar="EPOCH_MS",
                   help="keep snapshots committed at or after this time")
    s.add_argument("--time-retained", help="keep snapshots younger than this, e.g. '30 min'")
    s.add_argument("--max-deletes", type=int, help="expire at most this many snapshots")
    s.set_defaults(func=cmd_expire)

    s = sub.add_parser("remove-orphans", parents=[common],
                       help="delete files no snapshot, tag or changelog references")
    s.add_argument("--older-than-ms", type=int, metavar="EPOCH_MS",
                   help="only files modified before this time (default: now - 1 day)")
    s.add_argument("--dry-run", action="store_true", help="only list them")
    s.set_defaults(func=cmd_remove_orphans)

    # --warehouse/--table accepted before or after the action; SUPPRESS keeps a value given
    # before it from being overwritten by the action's parser
    loose = argparse.ArgumentParser(add_help=False)
    loose.add_argument("--warehouse", default=argparse.SUPPRESS)
    loose.add_argument("--table", default=argparse.SUPPRESS)
    add_storage_option_arg(loose, default=argparse.SUPPRESS)
    s = sub.add_parser("consumer", parents=[loose], help="list, reset or delete consumers")
    acts = s.add_subparsers(dest="consumer_cmd", required=True)
    a = acts.add_parser("list", parents=[loose], help="consumers as JSON lines")
    a.set_defaults(func=cmd_consumer)
    a = acts.add_parser("reset", parents=[loose], help="set a consumer's next snapshot")
    a.add_argument("id")
    a.add_argument("--next-snapshot", type=int, required=True)
    a.set_defaults(func=cmd_consumer)
    a = acts.add_parser("delete", parents=[loose], help="delete a consumer")
    a.add_argument("id")
    a.set_defaults(func=cmd_consumer)
