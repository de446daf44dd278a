"""``paimon``: look inside a table from the command line.

Same argument style as the reference oracle (``SUBCOMMAND --warehouse DIR --table db.name``),
and the same canonical JSON lines on stdout, so outputs can be diffed against Paimon Java and
pypaimon::

    paimon read --warehouse /tmp/wh --table db.orders --filter "amount > 10"
    paimon snapshots --warehouse /tmp/wh --table db.orders --verbose
    paimon incremental --warehouse /tmp/wh --table db.orders --from 1 --to 3 [--mode between]
    paimon describe --warehouse /tmp/wh --table db.orders

and change it (:mod:`paimon_core.cli.write_cmds`): ``create``, ``write``, ``alter``, ``tag``,
``fsck``; maintain it (:mod:`paimon_core.cli.maintenance_cmds`): ``expire``,
``remove-orphans``, ``consumer``; follow it (:mod:`paimon_core.cli.stream_cmds`): ``stream``;
ask about it (:mod:`paimon_core.cli.inspect_cmds`): ``inspect NAME`` (the system tables).

Exit codes: 0 ok, 1 a Paimon error (message on stderr) or an fsck that found errors,
2 usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from paimon_core.cli import stream_cmds
from paimon_core.cli.args import add_storage_option_arg, open_table
from paimon_core.cli.canonical import canonical_lines
from paimon_core.cli.compact_cmds import add_compact_parser
from paimon_core.cli.inspect_cmds import add_inspect_parser
from paimon_core.cli.maintenance_cmds import add_maintenance_parsers
from paimon_core.cli.write_cmds import UsageError, add_parsers
from paimon_core.errors import PaimonError
from paimon_core.table import FileStoreTable


def cmd_read(args: argparse.Namespace, out: TextIO) -> int:
    table = open_table(args)
    rb = table.new_read_builder().with_filter(args.filter or None)
    rb = rb.with_time_travel(
        snapshot_id=args.snapshot, tag=args.tag, timestamp_millis=args.timestamp_ms
    )
    if args.columns:
        rb = rb.with_projection([c.strip() for c in args.columns.split(",")])
    data = rb.new_read().to_arrow(rb.new_scan().plan().splits)
    schema = rb.read_schema()
    fields = [schema.field(c) for c in data.column_names]
    _emit(canonical_lines(data, fields), out)
    return 0


def cmd_incremental(args: argparse.Namespace, out: TextIO) -> int:
    # --mode stream (default) / between: paimon_core.cli.stream_cmds
    return stream_cmds.cmd_incremental(args, out)


def snapshot_records(table: FileStoreTable, verbose: bool) -> list[dict[str, Any]]:
    out = []
    for s in table.snapshot_manager.snapshots():
        d: dict[str, Any] = {
            "id": s.id,
            "schema_id": s.schema_id,
            "commit_kind": s.commit_kind.value,
            "total_record_count": s.total_record_count,
            "delta_record_count": s.delta_record_count,
            "changelog_record_count": s.changelog_record_count,
            "has_changelog_manifest": s.changelog_manifest_list is not None,
        }
        if verbose:
            d.update(
                {
                    "time_millis": s.time_millis,
                    "commit_user": s.commit_user,
                    "commit_identifier": s.commit_identifier,
                    "watermark": s.watermark,
                }
            )
        out.append(d)
    return out


def cmd_snapshots(args: argparse.Namespace, out: TextIO) -> int:
    records = snapshot_records(open_table(args), args.verbose)
    _emit([json.dumps(d, sort_keys=True) for d in records], out)
    return 0


def cmd_describe(args: argparse.Namespace, out: TextIO) -> int:
    table = open_table(args)
    s = table.schema
    latest = table.latest_snapshot()
    info: dict[str, Any] = {
        "table": str(table.identifier),
        "path": table.path,
        "schema_id": s.id,
        "fields": [f.to_json() for f in s.fields],
        "partition_keys": list(s.partition_keys),
        "primary_keys": list(s.primary_keys),
        "options": s.options,
        "comment": s.comment,
        "latest_snapshot": latest.id if latest else None,
        "earliest_snapshot": table.snapshot_manager.earliest_snapshot_id(),
        "tags": table.snapshot_manager.list_tags(),
    }
    if latest is not None:
        plan = table.new_read_builder().new_scan().plan()
        info["total_record_count"] = latest.total_record_count
        info["splits"] = len(plan.splits)
        info["data_files"] = sum(len(sp.files) for sp in plan.splits)
        info["data_bytes"] = sum(f.file_size for sp in plan.splits for f in sp.files)
    out.write(json.dumps(info, indent=2, ensure_ascii=False) + "\n")
    return 0


def _emit(lines: Sequence[str], out: TextIO) -> None:
    out.write("".join(line + "\n" for line in lines))
    out.flush()


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--warehouse", required=True, help="warehouse path or URL (s3://...)")
    common.add_argument("--table", required=True, help="db.name")
    add_storage_option_arg(common)
    p = argparse.ArgumentParser(prog="paimon", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("read", parents=[common], help="print rows as sorted canonical JSON")
    s.add_argument("--snapshot", type=int, help="time travel to a snapshot id")
    s.add_argument("--tag", help="time travel to a tag")
    s.add_argument("--timestamp-ms", type=int, help="time travel to a point in time")
    s.add_argument(
        "--filter", action="append", default=[], help="'col OP literal' (repeatable, ANDed)"
    )
    s.add_argument("--columns", help="comma-separated projection")
    s.set_defaults(func=cmd_read)

    s = sub.add_parser(
        "incremental",
        parents=[common],
        help="changes in snapshots (FROM, TO], each line with its row kind",
    )
    s.add_argument("--from", dest="from_", type=int, required=True)
    s.add_argument("--to", type=int, required=True)
    s.add_argument("--mode", choices=["stream", "between"], default=None)
    s.add_argument("--filter", action="append", default=[])
    stream_cmds.add_incremental_arguments(s)
    s.set_defaults(func=cmd_incremental)

    s = sub.add_parser("snapshots", parents=[common], help="list snapshots as JSON lines")
    s.add_argument("--verbose", action="store_true")
    s.set_defaults(func=cmd_snapshots)

    s = sub.add_parser("describe", parents=[common], help="schema, options and file counts")
    s.set_defaults(func=cmd_describe)
    add_parsers(sub, common)
    add_compact_parser(sub, common)
    add_inspect_parser(sub, common)
    add_maintenance_parsers(sub, common)
    stream_cmds.add_stream_parsers(sub, common)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        rc: int = args.func(args, sys.stdout)
        return rc
    except UsageError as e:
        print(f"paimon: usage: {e}", file=sys.stderr)
        return 2
    except PaimonError as e:
        print(f"paimon: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # pragma: no cover - `paimon read | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
