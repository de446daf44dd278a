"""The write-side subcommands of ``paimon``: create, write, alter, tag, fsck.

Same argument style and result lines as the reference oracle::

    paimon create --warehouse wh --table db.t --schema schema.json [--ignore-if-exists]
    paimon write  --warehouse wh --table db.t --input rows.jsonl [--kind _k] [--overwrite [pt=a]]
    paimon alter  --warehouse wh --table db.t --add-column 'c BIGINT' --rename-column a=b
                  --column-comment 'b=the b' --not-null b --move-column 'b FIRST'
    paimon tag create v1 --warehouse wh --table db.t [--snapshot 3]
    paimon fsck   --warehouse wh --table db.t [--deep]

Every mutating command prints one JSON result line (``{"op": "write", "rows": 3,
"snapshot": 4}``); ``fsck`` prints one JSON line per finding, then a summary line, and exits
with 1 when the table is not ok.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
from collections.abc import Callable
from typing import Any, TextIO

import pyarrow as pa

from paimon_core.cli.args import open_catalog, open_table
from paimon_core.cli.rows_input import load_input, rows_to_arrow
from paimon_core.commit.users import new_commit_user
from paimon_core.errors import CommitConflictError, SchemaError
from paimon_core.fsck import fsck
from paimon_core.options import parse_duration_millis
from paimon_core.schema_builder import Schema
from paimon_core.schema_change import (
    AddColumn,
    DropColumn,
    Move,
    MoveType,
    RemoveOption,
    RenameColumn,
    SchemaChange,
    SetOption,
    UpdateColumnComment,
    UpdateColumnNullability,
    UpdateColumnPosition,
    UpdateColumnType,
)
from paimon_core.spec.row_kind import RowKind
from paimon_core.spec.snapshot import BATCH_COMMIT_IDENTIFIER
from paimon_core.types import DataType, parse_sql_type

__all__ = ["UsageError", "add_parsers"]

Command = Callable[[argparse.Namespace, TextIO], int]


class UsageError(Exception):
    """Bad command-line usage (exit code 2)."""


def _emit(obj: dict[str, Any], out: TextIO) -> None:
    out.write(json.dumps(obj, sort_keys=True, ensure_ascii=False) + "\n")
    out.flush()


# ---------------------------------------------------------------------------------------------
# create


def cmd_create(args: argparse.Namespace, out: TextIO) -> int:
    try:
        with open(args.schema, encoding="utf-8") as f:
            spec = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise UsageError(f"cannot read --schema {args.schema}: {e}") from e
    if not isinstance(spec, dict):
        raise UsageError(f"--schema {args.schema} must hold a JSON object")
    catalog = open_catalog(args)
    existed = catalog.table_exists(args.table)
    table = catalog.create_table(args.table, Schema.from_json(spec, source=args.schema),
                                 ignore_if_exists=args.ignore_if_exists)
    _emit({"op": "create", "table": str(table.identifier), "created": not existed,
           "schema_id": table.schema.id}, out)
    return 0


# ---------------------------------------------------------------------------------------------
# write


def parse_partition_spec(text: str) -> dict[str, str] | None:
    """``--overwrite`` value: ``""`` = dynamic / whole-table overwrite (None), ``k=v,k2=v2`` or
    a JSON object = static partition."""
    text = text.strip()
    if not text:
        return None
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise UsageError(f"bad partition spec {text!r}: {e}") from e
        if not isinstance(obj, dict):
            raise UsageError(f"bad partition spec {text!r}")
        return {str(k): str(v) for k, v in obj.items()}
    out = {}
    for part in text.split(","):
        if "=" not in part:
            raise UsageError(f"bad partition spec {text!r} (use k=v[,k=v])")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def cmd_write(args: argparse.Namespace, out: TextIO) -> int:
    static = parse_partition_spec(args.overwrite) if args.overwrite is not None else None
    table = open_table(args)
    data, text_cells = load_input(args.input)
    if isinstance(data, pa.Table):
        if args.kind is not None and args.kind in data.column_names:
            col = data.column(args.kind).cast(pa.string())
            data = data.set_column(data.column_names.index(args.kind), args.kind,
                                   col.fill_null(RowKind.INSERT.short_string))
        arrow = data
    else:
        arrow = rows_to_arrow(data, table.schema, kind_column=args.kind, text_cells=text_cells)
    if args.kind is not None and args.kind not in arrow.column_names:
        inserts = [RowKind.INSERT.short_string] * arrow.num_rows
        arrow = arrow.append_column(args.kind, pa.array(inserts, pa.string()))
    user = args.commit_user or new_commit_user("cli")
    identifier = (BATCH_COMMIT_IDENTIFIER if args.commit_identifier is None
                  else args.commit_identifier)
    writer = table.new_write(user)
    try:
        writer.write_arrow(arrow, row_kind_column=args.kind)
        messages = writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    finally:
        writer.close()
    commit = table.new_commit(user)
    try:
        if args.overwrite is not None:
            dynamic = (None if args.dynamic_partition_overwrite is None
                       else args.dynamic_partition_overwrite == "true")
            ids = commit.overwrite(messages, static, identifier, dynamic=dynamic)
        else:
            ids = commit.commit(messages, identifier)
    except (SchemaError, CommitConflictError):
        commit.abort(messages)  # nothing of it was published (never on an unknown state)
        raise
    _emit({"op": "write", "rows": arrow.num_rows, "snapshot": ids[-1] if ids else None,
           "snapshots": ids, "commit_user": user}, out)
    return 0


# ---------------------------------------------------------------------------------------------
# alter

_MOVE_RE = re.compile(r"^(.*?)\s+(FIRST|AFTER\s+`?([^`\s]+)`?)\s*$", re.IGNORECASE)


def _name_and_type(text: str, flag: str) -> tuple[str, str]:
    parts = text.strip().split(None, 1)
    if len(parts) != 2:
        raise UsageError(f"{flag} expects 'NAME TYPE', got {text!r}")
    return parts[0].strip("`"), parts[1]


def _add_column(text: str) -> SchemaChange:
    name, rest = _name_and_type(text, "--add-column")
    first, after = False, None
    m = _MOVE_RE.match(rest)
    if m and not rest.rstrip().endswith(">"):
        rest = m.group(1)
        first = m.group(2).upper() == "FIRST"
        after = m.group(3)
    return AddColumn(name, _flag_type(rest, "--add-column", text), first=first, after=after)


def _flag_type(text: str, flag: str, value: str) -> DataType:
    """The type ``text`` of ``flag``'s ``value``; an error names the flag and its value."""
    try:
        return parse_sql_type(text)
    except SchemaError as e:
        raise SchemaError(f"{flag} {value!r}: {e}") from e


def _key_value(text: str, flag: str, form: str = "KEY=VALUE") -> tuple[str, str]:
    k, sep, v = text.partition("=")
    if not sep or not k.strip():
        raise UsageError(f"{flag} expects {form}, got {text!r}")
    return k.strip(), v


def _change(flag: str, value: str) -> SchemaChange:
    if flag == "add_column":
        return _add_column(value)
    if flag == "rename_column":
        old, new = _key_value(value, "--rename-column", "OLD=NEW")
        return RenameColumn(old, new.strip())
    if flag == "drop_column":
        return DropColumn(value.strip())
    if flag == "set_option":
        return SetOption(*_key_value(value, "--set-option"))
    if flag == "remove_option":
        return RemoveOption(value.strip())
    if flag == "alter_column_type":
        name, t = _name_and_type(value, "--alter-column-type")
        return UpdateColumnType(name, _flag_type(t, "--alter-column-type", value))
    if flag == "column_comment":
        path, text = _key_value(value, "--column-comment", "NAME=COMMENT")
        return UpdateColumnComment(tuple(path.split(".")), text or None)
    if flag in ("not_null", "nullable"):
        return UpdateColumnNullability(tuple(value.strip().split(".")), flag == "nullable")
    if flag == "move_column":
        return UpdateColumnPosition(_move_spec(value))
    raise UsageError(f"unknown change {flag}")  # pragma: no cover


def _move_spec(text: str) -> Move:
    """``NAME FIRST|LAST`` or ``NAME AFTER|BEFORE OTHER`` (``--move-column``)."""
    parts = text.replace("`", "").split()
    kinds = {k.value: k for k in MoveType}
    kind = kinds.get(parts[1].upper()) if len(parts) > 1 else None
    relative = kind in (MoveType.AFTER, MoveType.BEFORE)
    if kind is None or len(parts) != (3 if relative else 2):
        raise UsageError(
            f"--move-column expects 'NAME FIRST|LAST' or 'NAME AFTER|BEFORE OTHER', got {text!r}")
    return Move(parts[0], kind, parts[2] if relative else None)


class _ChangeAction(argparse.Action):
    """Collects every change flag into one ordered list (changes apply in argv order)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        changes = list(getattr(namespace, "changes", None) or [])
        changes.append((self.dest, values))
        namespace.changes = changes


def cmd_alter(args: argparse.Namespace, out: TextIO) -> int:
    raw = getattr(args, "changes", None) or []
    if not raw:
        raise UsageError("alter needs at least one change (--add-column, --rename-column, "
                         "--drop-column, --set-option, --remove-option, --alter-column-type, "
                         "--column-comment, --not-null, --nullable, --move-column)")
    changes = [_change(flag, value) for flag, value in raw]
    schema = open_table(args).alter(changes)
    _emit({"op": "alter", "table": args.table, "schema_id": schema.id,
           "changes": len(changes)}, out)
    return 0


# ---------------------------------------------------------------------------------------------
# tags and fsck


def cmd_tag(args: argparse.Namespace, out: TextIO) -> int:
    table = open_table(args)
    if args.tag_cmd == "create":
        retained = None
        if args.time_retained:
            retained = dt.timedelta(
                milliseconds=parse_duration_millis("--time-retained", args.time_retained))
        snap = table.create_tag(args.name, args.snapshot, time_retained=retained)
        _emit({"op": "tag-create", "tag": args.name, "snapshot": snap.id}, out)
    elif args.tag_cmd == "delete":
        table.delete_tag(args.name)
        _emit({"op": "tag-delete", "tag": args.name}, out)
    else:
        for name, sid in table.list_tags():
            _emit({"tag": name, "snapshot": sid}, out)
    return 0


def cmd_fsck(args: argparse.Namespace, out: TextIO) -> int:
    report = fsck(open_table(args), deep=args.deep)
    for f in report.findings:
        _emit(f.to_json(), out)
    _emit({"op": "fsck", "ok": report.ok, "errors": len(report.errors),
           "warnings": len(report.warnings), "snapshots": len(report.snapshot_ids),
           "tags": len(report.tags), "files_checked": report.data_files_checked}, out)
    return 0 if report.ok else 1


# ---------------------------------------------------------------------------------------------
# parsers


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register create / write / alter / tag / fsck on ``sub`` (an argparse subparsers)."""
    s = sub.add_parser("create", parents=[common], help="create a table from a schema.json")
    s.add_argument("--schema", required=True, help="the oracle's schema.json format")
    s.add_argument("--ignore-if-exists", action="store_true")
    s.set_defaults(func=cmd_create)

    s = sub.add_parser("write", parents=[common], help="write rows in one commit")
    s.add_argument("--input", required=True, help="rows: .jsonl, .json, .parquet or .csv")
    s.add_argument("--kind", help="input column with the row kind (+I/-U/+U/-D; null = +I)")
    s.add_argument("--overwrite", nargs="?", const="", default=None, metavar="PARTITION",
                   help="INSERT OVERWRITE, Paimon's semantics: 'k=v,...' a static partition "
                        "spec; with dynamic-partition-overwrite (the table option, default "
                        "true) only the partitions receiving rows are replaced")
    s.add_argument("--dynamic-partition-overwrite", choices=["true", "false"],
                   help="overrides the table option for this --overwrite (false: replace "
                        "everything the spec matches, even by nothing)")
    s.add_argument("--commit-user", help="stable commit user (default: a random UUID)")
    s.add_argument("--commit-identifier", type=int,
                   help="commit identifier (default: Long.MAX, a batch commit)")
    s.set_defaults(func=cmd_write)

    s = sub.add_parser("alter", parents=[common], help="ALTER TABLE (changes apply in order)")
    for flag, meta, text in (
        ("--add-column", "'NAME TYPE [FIRST|AFTER COL]'", "add a nullable column"),
        ("--rename-column", "OLD=NEW", "rename a column"),
        ("--drop-column", "NAME", "drop a column"),
        ("--set-option", "KEY=VALUE", "set a table option"),
        ("--remove-option", "KEY", "remove a table option"),
        ("--alter-column-type", "'NAME TYPE'", "widen a column's type"),
        ("--column-comment", "NAME=COMMENT", "set a column's comment (empty: remove it)"),
        ("--not-null", "NAME", "make a column NOT NULL (refused while it holds a null)"),
        ("--nullable", "NAME", "make a column nullable"),
        ("--move-column", "'NAME FIRST|LAST|AFTER C|BEFORE C'", "move a column"),
    ):
        s.add_argument(flag, action=_ChangeAction, metavar=meta, help=text + " (repeatable)")
    s.set_defaults(func=cmd_alter)

    s = sub.add_parser("tag", help="create, delete or list tags")
    tags = s.add_subparsers(dest="tag_cmd", required=True)
    t = tags.add_parser("create", parents=[common], help="tag a snapshot (default: latest)")
    t.add_argument("name")
    t.add_argument("--snapshot", type=int)
    t.add_argument("--time-retained", help="retention, e.g. '1 d' (written as tag metadata)")
    t.set_defaults(func=cmd_tag)
    t = tags.add_parser("delete", parents=[common], help="delete a tag")
    t.add_argument("name")
    t.set_defaults(func=cmd_tag)
    t = tags.add_parser("list", parents=[common], help="list tags as JSON lines")
    t.set_defaults(func=cmd_tag)

    s = sub.add_parser("fsck", parents=[common], help="check the table's invariants")
    s.add_argument("--deep", action="store_true", help="read every retained snapshot")
    s.set_defaults(func=cmd_fsck)
