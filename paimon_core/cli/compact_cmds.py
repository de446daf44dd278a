"""``paimon compact``: compact a table's buckets into one COMPACT snapshot.

::

    paimon compact --warehouse wh --table db.t                       # what the picker asks for
    paimon compact --warehouse wh --table db.t --full                # everything
    paimon compact --warehouse wh --table db.t --partition dt=2024-01-01,hr=5 --bucket 0

``--partition`` (repeatable; partial specs allowed) and ``--bucket`` (repeatable) restrict
the buckets compacted. Prints one JSON line: ``{"op": "compact", "snapshot": 7}``
(``null`` when nothing needed compaction).
"""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.write_cmds import UsageError, parse_partition_spec
from paimon_core.table import FileStoreTable

__all__ = ["add_compact_parser", "cmd_compact"]


def _table(args: argparse.Namespace) -> FileStoreTable:
    opts: dict[str, str] = {}
    for item in getattr(args, "storage_option", None) or []:
        if "=" not in item:
            raise UsageError(f"--storage-option expects KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        opts[k.strip()] = v
    return FileSystemCatalog(args.warehouse, opts).get_table(args.table)


def cmd_compact(args: argparse.Namespace, out: TextIO) -> int:
    table = _table(args)
    partitions = None
    if args.partition:
        partitions = []
        for text in args.partition:
            spec = parse_partition_spec(text)
            if spec is None:
                raise UsageError("--partition needs k=v[,k=v]")
            partitions.append(spec)
    sid = table.compact(partitions=partitions, buckets=args.bucket, full=args.full,
                        commit_user=args.commit_user)
    result: dict[str, Any] = {"op": "compact", "snapshot": sid, "full": bool(args.full)}
    out.write(json.dumps(result, sort_keys=True) + "\n")
    out.flush()
    return 0


def add_compact_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``compact`` on ``sub`` (an argparse subparsers)."""
    s = sub.add_parser("compact", parents=[common],
                       help="compact buckets (universal picker, or --full) in one commit")
    s.add_argument("--partition", action="append", default=[], metavar="K=V[,K=V]",
                   help="only this partition (repeatable; partial specs allowed)")
    s.add_argument("--bucket", action="append", type=int, default=None, metavar="N",
                   help="only this bucket (repeatable)")
    s.add_argument("--full", action="store_true", help="full compaction")
    s.add_argument("--commit-user", help="commit user (default: a random one)")
    s.set_defaults(func=cmd_compact)
