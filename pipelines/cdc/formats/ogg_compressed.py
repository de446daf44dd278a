"""GoldenGate's compressed updates (``ogg-json``): an update whose ``after`` image holds only
the key and the changed columns (GoldenGate's trail record of an Oracle update without full
supplemental logging; the JSON formatter prints the columns the record holds).

A column an update's ``after`` leaves out did not change: it takes its value from the
update's ``before`` image when that holds the column. A column neither image holds is refused
with the columns named (:data:`NO_VALUE`): its value is the key's previous row, which the
decode of one file cannot know. Paimon's ``OggRecordParser`` takes ``after`` as the whole row
(``processRecord(after, INSERT)``): a left-out column becomes NULL there, silently.

A key left out is told apart from a key given as ``null`` (an update to NULL) by the line's
text, since Arrow's JSON reader reads both as NULL: :func:`ogg_presence` extracts each
line's image objects with a regular expression that steps over whole JSON strings, then
matches ``"<column>":`` in them (a quote inside a string is escaped, so that text is a key),
vectorised over the lines, only for the updates with a NULL in ``after`` (an update holding
every column is whole). Images are flat objects (GoldenGate prints column values, never
objects). A table column the source does not send is named too, except the columns the job
fills itself: the sequence column (from ``pos``), the ``op_ts`` metadata column (from
``op_ts``) and the database sync's ``database_name`` / ``table_name``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.cdc.lines import split_lines
from pipelines.cdc.values.convert import json_text

__all__ = ["NO_VALUE", "Presence", "merge_compressed", "ogg_presence"]

#: the reason of a compressed update missing columns in both images (the names follow)
NO_VALUE = "ogg-json: compressed update without a value for "
#: one JSON token of a flat object: a character outside strings, or a whole string
_TOKEN = r'(?:[^"{}]|"(?:[^"\\]|\\.)*")'


@dataclass(frozen=True)
class Presence:
    """The lines of a decoded range (line ``first_line`` first), to tell per line which keys
    its ``after`` / ``before`` objects hold (:meth:`holds`, asked only for the updates that
    may be compressed), and the table columns the source sends (every column but the
    sequence column)."""

    first_line: int
    lines: pa.Array
    columns: tuple[str, ...]

    def holds(self, image: str, names: Sequence[str], rows: np.ndarray
              ) -> dict[str, np.ndarray]:
        """Per name, whether the ``image`` object of each of the lines ``rows`` (0-based in
        the range) holds that key."""
        objects = _objects(self.lines.take(pa.array(rows)), image)
        return {n: _holds(objects, n) for n in names}


def _objects(lines: pa.Array, image: str) -> pa.Array:
    """The text of each line's ``image`` object (NULL: none), stepping over whole strings."""
    m = pc.extract_regex(lines, rf'"{image}"\s*:\s*(?P<o>\{{{_TOKEN}*\}})')
    return pc.struct_field(m, "o")


def _holds(objects: pa.Array, name: str) -> np.ndarray:
    """Where the object text holds the key ``name``: ``"name"`` then ``:`` appears in JSON
    text only as a key (a quote inside a string is escaped)."""
    hit = pc.match_substring_regex(objects, rf'"{re.escape(name)}"\s*:')
    return np.asarray(pc.fill_null(hit, False).to_numpy(zero_copy_only=False), bool)


def ogg_presence(data: bytes, names: Sequence[str], first_line: int) -> Presence | None:
    """The :class:`Presence` of the lines of ``data`` (a range whose first line is
    ``first_line``) for the source columns ``names``; None when no line is an update (no
    compressed update possible)."""
    if b'"U"' not in data:
        return None
    return Presence(first_line, split_lines(data), tuple(names))


def _valid(arr: pa.Array | None, n: int) -> np.ndarray:
    if arr is None:
        return np.zeros(n, bool)
    return np.asarray(pc.is_valid(arr).to_numpy(zero_copy_only=False), bool)


def merge_compressed(after: pa.Array | None, before: pa.Array | None, presence: Presence,
                     lines: np.ndarray, is_u: np.ndarray) -> tuple[pa.Array | None, pa.Array]:
    """The ``after`` images (a struct per row; ``lines``: each row's line position) with the
    columns an update left out taken from ``before``, and per row the refusal of the columns
    neither image holds (NULL: none; :data:`NO_VALUE`). Only updates with a NULL in ``after``
    may be compressed: their lines alone are read again."""
    n = len(lines)
    names = presence.columns
    a_kids, b_kids = _kids(after), _kids(before)
    a_valid = {c: _valid(a_kids.get(c), n) for c in names}
    whole = np.logical_and.reduce([a_valid[c] for c in names] or [np.ones(n, bool)])
    cand = is_u & ~whole
    if not cand.any():
        return after, pa.nulls(n, pa.string())
    rows = np.flatnonzero(cand)
    at = lines[rows].astype(np.int64) - presence.first_line
    in_a, in_b = presence.holds("after", names, at), presence.holds("before", names, at)
    fields, kids = [], []
    missing: list[tuple[str, np.ndarray]] = []
    for name in dict.fromkeys([*a_kids, *names]):
        kid = a_kids.get(name)
        if name not in in_a:  # not a table column: kept as read
            if kid is not None:
                fields.append(name)
                kids.append(kid)
            continue
        absent, take = np.zeros(n, bool), np.zeros(n, bool)
        absent[rows] = ~in_a[name]
        take[rows] = ~in_a[name] & in_b[name]
        if (absent & ~take).any():
            missing.append((name, absent & ~take))
        old = b_kids.get(name)
        if take.any() and old is not None:
            kid = kid if kid is not None else pa.nulls(n, old.type)
            if old.type != kid.type:
                old, kid = json_text(old), json_text(kid)
            kid = pc.if_else(pa.array(take), old, kid)
        if kid is not None:
            fields.append(name)
            kids.append(kid)
    reason = _reasons(missing, n)
    if after is None or not pa.types.is_struct(after.type) or not fields:
        return after, reason
    mask = pc.is_null(after) if after.null_count else None
    return pa.StructArray.from_arrays(kids, fields, mask=mask), reason


def _reasons(missing: list[tuple[str, np.ndarray]], n: int) -> pa.Array:
    """Per row, :data:`NO_VALUE` and the names of its missing columns, else NULL (the text
    is made only for the refused rows)."""
    out = np.full(n, None, object)
    if missing:
        hit = np.stack([m for _, m in missing])
        for i in np.flatnonzero(hit.any(axis=0)).tolist():
            out[i] = NO_VALUE + ", ".join(name for (name, _), h in zip(missing, hit[:, i]) if h)
    return pa.array(out, pa.string())


def _kids(arr: pa.Array | None) -> dict[str, pa.Array]:
    if arr is None or not pa.types.is_struct(arr.type):
        return {}
    return {f.name: kid for f, kid in zip(arr.type, arr.flatten())}
