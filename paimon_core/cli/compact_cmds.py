"""``paimon compact``: compact a table's buckets into one COMPACT snapshot.

::

    paimon compact --warehouse wh --table db.t                       # full (the default)
    paimon compact --warehouse wh --table db.t --strategy minor      # what the picker asks for
    paimon compact --warehouse wh --table db.t --partition dt=2024-01-01,hr=5 --bucket 0

Like Paimon's batch compaction (``CALL sys.compact``, the Flink / Spark compact actions) it is
a full compaction unless ``--strategy minor`` asks for the universal picker's choice (which
may be nothing); ``--full`` is the explicit spelling of the default. ``--partition``
(repeatable; partial specs allowed) and ``--bucket`` (repeatable) restrict the buckets
compacted. Prints one JSON line: ``{"op": "compact", "snapshot": 7, "strategy": "full"}``
(``snapshot`` is ``null`` when nothing needed compaction).
"""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from paimon_core.cli.args import open_table
from paimon_core.cli.write_cmds import UsageError, parse_partition_spec
from paimon_core.compact.options import COMPACT_STRATEGIES, DEFAULT_COMPACT_STRATEGY

__all__ = ["add_compact_parser", "add_strategy_args", "cmd_compact"]


def cmd_compact(args: argparse.Namespace, out: TextIO) -> int:
    table = open_table(args)
    partitions = None
    if args.partition:
        partitions = []
        for text in args.partition:
            spec = parse_partition_spec(text)
            if spec is None:
                raise UsageError("--partition needs k=v[,k=v]")
            partitions.append(spec)
    sid = table.compact(partitions=partitions, buckets=args.bucket, strategy=args.strategy,
                        commit_user=args.commit_user)
    result: dict[str, Any] = {"op": "compact", "snapshot": sid, "strategy": args.strategy}
    out.write(json.dumps(result, sort_keys=True) + "\n")
    out.flush()
    return 0


def add_compact_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``compact`` on ``sub`` (an argparse subparsers)."""
    s = sub.add_parser("compact", parents=[common],
                       help="compact buckets in one commit (full, or --strategy minor)")
    s.add_argument("--partition", action="append", default=[], metavar="K=V[,K=V]",
                   help="only this partition (repeatable; partial specs allowed)")
    s.add_argument("--bucket", action="append", type=int, default=None, metavar="N",
                   help="only this bucket (repeatable)")
    add_strategy_args(s)
    s.add_argument("--commit-user", help="commit user (default: a random one)")
    s.set_defaults(func=cmd_compact)


def add_strategy_args(p: argparse.ArgumentParser) -> None:
    """``--strategy full|minor`` (default full) and ``--full`` (its explicit spelling), as
    ``paimon compact`` and ``python -m pipelines.jobs.compact`` take them (``args.strategy``)."""
    how = p.add_mutually_exclusive_group()
    how.add_argument("--strategy", choices=COMPACT_STRATEGIES,
                     default=DEFAULT_COMPACT_STRATEGY,
                     help="full (default): one sorted run per bucket on the max level; minor: "
                     "what the universal picker asks for (may be nothing)")
    how.add_argument("--full", dest="strategy", action="store_const", const="full",
                     help="same as --strategy full (the default)")
