"""``paimon inspect``: a system table of a table (``table.inspect``) as JSON lines.

::

    paimon inspect --warehouse wh --table db.t snapshots
    paimon inspect --warehouse wh --table db.t files --snapshot 3
    paimon inspect --warehouse wh --table db.t buckets --tag release-1
    paimon inspect --warehouse wh --table db.t audit_log

NAME is one of ``snapshots``, ``schemas``, ``options``, ``files``, ``manifests``, ``partitions``,
``buckets``, ``tags``, ``consumers``, ``audit_log``, ``ro`` (see :mod:`paimon_core.inspect`).
``--snapshot`` / ``--tag`` time-travel the tables that allow it (``files``, ``manifests``,
``partitions``, ``buckets``, ``audit_log``, ``ro``). One JSON object per row, keys in column
order, values in the canonical forms of ``paimon read`` (timestamps
``"YYYY-MM-DD HH:MM:SS.fff"``); metadata tables in their own order, the data tables
``audit_log`` / ``ro`` sorted like ``paimon read``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from paimon_core.cli.args import open_table
from paimon_core.cli.canonical import json_fragments
from paimon_core.cli.write_cmds import UsageError
from paimon_core.inspect import SYSTEM_TABLES
from paimon_core.table import FileStoreTable

__all__ = ["add_inspect_parser", "cmd_inspect", "inspect_lines"]

_DATA_TABLES = ("audit_log", "ro")


def inspect_lines(table: FileStoreTable, name: str, *, snapshot_id: int | None = None,
                  tag: str | None = None) -> list[str]:
    """The system table ``name`` of ``table`` as canonical JSON lines."""
    data = table.inspect.system_table(name, snapshot_id=snapshot_id, tag=tag)
    fields = table.inspect.fields(name, snapshot_id=snapshot_id, tag=tag)
    cols = [
        [json.dumps(f.name, ensure_ascii=False) + ":" + v
         for v in json_fragments(data.column(i), f.type)]
        for i, f in enumerate(fields)
    ]
    lines = ["{" + ",".join(parts) + "}" for parts in zip(*cols)] if cols else []
    if name in _DATA_TABLES:
        lines.sort()
    return lines


def cmd_inspect(args: argparse.Namespace, out: TextIO) -> int:
    try:
        lines = inspect_lines(open_table(args), args.name, snapshot_id=args.snapshot, tag=args.tag)
    except ValueError as e:
        raise UsageError(str(e)) from e
    out.write("".join(line + "\n" for line in lines))
    out.flush()
    return 0


def add_inspect_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register ``inspect`` on ``sub`` (an argparse subparsers)."""
    s = sub.add_parser("inspect", parents=[common],
                       help="a system table (snapshots, files, buckets ...) as JSON lines")
    s.add_argument("name", choices=SYSTEM_TABLES, help="the system table")
    when = s.add_mutually_exclusive_group()
    when.add_argument("--snapshot", type=int, help="time travel to a snapshot id")
    when.add_argument("--tag", help="time travel to a tag")
    s.set_defaults(func=cmd_inspect)
