"""The ``--filter`` syntax of the oracle CLI: ``col OP literal``.

Grammar (``shared/oracle/paimon_oracle.py``: ``_FILTER_RE``, ``_parse_literal``,
``parse_filter``)::

    filter  := column OP literal | column (NOT)? IN '(' literal (',' literal)* ')'
             | column IS (NOT)? NULL | column STARTSWITH literal
    column  := [A-Za-z_][A-Za-z0-9_$]* | `any text without backticks`
    OP      := = | == | != | <> | < | <= | > | >=          (keywords case-insensitive)
    literal := 'text with '' for a quote' | NULL | JSON value (number, true/false, "string")
             | any other bare word (taken as a string)

Literals are converted with the column type exactly like the oracle's ``py_value`` (see
:func:`paimon_core.scan.predicate_literal.literal_from_text`): timestamps/dates/times as ISO
strings, DATE also as an integer day count, decimals as strings or numbers exact to 38 digits
(rounded HALF_UP to the scale), binary as base64. Intentional differences from the oracle, all
on inputs it mishandles: ``==`` is ``=`` (the oracle reads ``a == 1`` as ``a = '= 1'``); commas
and ``<``/``>`` inside quoted IN-list items do not split the item; integers written as JSON
numbers are exact (no float round trip); booleans are rejected for numeric/date columns,
numbers other than 0/1 for BOOLEAN, and out-of-range hours/minutes/seconds everywhere (the
oracle wraps them into the next unit); an empty ``IN ()`` is an error (as Java's
``PredicateBuilder.in`` with no literal).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from paimon_core.errors import FilterError
from paimon_core.scan.predicate_literal import JsonNumber, is_nested, literal_from_text
from paimon_core.scan.predicate_model import Leaf, Op, Predicate, and_
from paimon_core.types import BINARY_ROOTS, STRING_ROOTS, DataField

__all__ = ["parse_filter", "parse_filters"]

_FILTER_RE = re.compile(
    r"^\s*(?:`([^`]+)`|([A-Za-z_][\w$]*))\s*"
    r"(==|=|!=|<>|<=|>=|<|>|\s+IS\s+NOT\s+NULL|\s+IS\s+NULL|"
    r"\s+NOT\s+IN\s*|\s+IN\s*|\s+STARTSWITH\s+)(.*)$",
    re.I | re.S,
)

_OPS = {
    "=": Op.EQ,
    "==": Op.EQ,
    "!=": Op.NE,
    "<>": Op.NE,
    "<": Op.LT,
    "<=": Op.LE,
    ">": Op.GT,
    ">=": Op.GE,
    "IN": Op.IN,
    "NOT IN": Op.NOT_IN,
    "IS NULL": Op.IS_NULL,
    "IS NOT NULL": Op.IS_NOT_NULL,
    "STARTSWITH": Op.STARTS_WITH,
}

_SYNTAX = (
    "use: col OP literal; OP in = != < <= > >= IN (..) NOT IN (..) IS NULL IS NOT NULL STARTSWITH"
)


def _raw_literal(text: str) -> Any:
    """The oracle's ``_parse_literal``: quoted string, NULL, JSON value, else the bare text."""
    s = text.strip()
    if not s:
        raise FilterError("missing literal")
    if len(s) >= 2 and s[0] == "'" and s[-1] == "'":
        return s[1:-1].replace("''", "'")
    if s.upper() == "NULL":
        return None
    try:
        return json.loads(s, parse_float=JsonNumber)
    except ValueError:
        return s


def _split_list(body: str) -> list[str]:
    """Split an IN list on commas outside quotes ('..' with '' escapes, ".." with \\ escapes).
    A trailing empty item is dropped, like the oracle's ``_split_top``."""
    parts: list[str] = []
    cur: list[str] = []
    quote: str | None = None
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if quote == "'":
            if ch == "'" and i + 1 < n and body[i + 1] == "'":
                cur.append("''")
                i += 2
                continue
            if ch == "'":
                quote = None
        elif quote == '"':
            if ch == "\\" and i + 1 < n:
                cur.append(body[i : i + 2])
                i += 2
                continue
            if ch == '"':
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == ",":
            parts.append("".join(cur))
            cur = []
            i += 1
            continue
        cur.append(ch)
        i += 1
    if quote is not None:
        raise FilterError(f"unterminated string in IN list ({body})")
    last = "".join(cur)
    if last.strip():
        parts.append(last)
    return parts


def parse_filter(expr: str, fields: Sequence[DataField]) -> Predicate:
    """Parse one ``--filter`` expression into a bound predicate.

    Args:
        expr: e.g. ``"score > 1"``, ``"pt IN ('a','b')"``, ``"name STARTSWITH 'ab'"``.
        fields: the table's columns (top-level; names are case-sensitive).

    Returns:
        A :class:`~paimon_core.scan.predicate_model.Leaf` with literals converted to the column
        type.

    Raises:
        FilterError: syntax error, unknown column, bad literal or a literal that does not fit
            the column type (the message names column and value).
    """
    if not isinstance(expr, str):
        raise FilterError(f"filter must be a string, got {expr!r}")
    m = _FILTER_RE.match(expr)
    if not m:
        raise FilterError(f"cannot parse filter {expr!r} ({_SYNTAX})")
    col = m.group(1) if m.group(1) is not None else m.group(2)
    op_text = " ".join(m.group(3).upper().split())
    rest = m.group(4)
    op = _OPS[op_text]
    by_name = {f.name: f for f in fields}
    fld = by_name.get(col)
    if fld is None:
        raise FilterError(f"filter column {col!r} not in table columns {list(by_name)}")
    t = fld.type
    if op in (Op.IS_NULL, Op.IS_NOT_NULL):
        if rest.strip():
            raise FilterError(f"junk after {op.value} in filter {expr!r}: {rest!r}")
        return Leaf(col, op)
    if is_nested(t):
        raise FilterError(f"{op.value} is not supported on nested column {col!r} ({t})")
    if op is Op.STARTS_WITH and t.root not in STRING_ROOTS and t.root not in BINARY_ROOTS:
        raise FilterError(f"STARTSWITH needs a string or binary column; {col!r} is {t}")
    if op in (Op.IN, Op.NOT_IN):
        r = rest.strip()
        if not (r.startswith("(") and r.endswith(")")):
            raise FilterError(f"{op.value} needs a parenthesised list in filter {expr!r}")
        items = _split_list(r[1:-1])
        if not items:
            raise FilterError(f"empty {op.value} list in filter {expr!r}")
        lits = tuple(literal_from_text(_raw_literal(x), t, col) for x in items)
        return Leaf(col, op, lits)
    return Leaf(col, op, (literal_from_text(_raw_literal(rest), t, col),))


def parse_filters(exprs: Sequence[str], fields: Sequence[DataField]) -> Predicate | None:
    """Parse several ``--filter`` expressions and AND them (``None`` for none).

    Raises:
        FilterError: see :func:`parse_filter`.
    """
    if isinstance(exprs, str):
        exprs = [exprs]
    preds = [parse_filter(e, fields) for e in exprs]
    return and_(*preds) if preds else None
