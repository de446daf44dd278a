"""GoldenGate's compressed updates (``ogg-json``): an update whose ``after`` image holds only
the key and the changed columns (GoldenGate's trail record of an Oracle update without full
supplemental logging; the JSON formatter prints the columns the record holds).

A column an update's ``after`` leaves out did not change: it takes its value from the
update's ``before`` image when that holds the column. A column neither image holds is refused
with the columns named (:data:`NO_VALUE`): its value is the key's previous row, which the
decode of one file cannot know. Paimon's ``OggRecordParser`` takes ``after`` as the whole row
(``processRecord(after, INSERT)``): a left-out column becomes NULL there, silently.

A key left out is told apart from a key given as ``null`` (an update to NULL) by the line's
text, since Arrow's JSON reader reads both as NULL: :func:`ogg_presence` matches, per table
column, ``"<image>": {... "<column>":`` with a regular expression that steps over whole JSON
strings (a key inside a string value is not a key), vectorised over the lines. Images are
flat objects (GoldenGate prints column values, never objects). A table column that no image
of the decoded range holds (e.g. the sequence column, filled from ``pos``) is not a source
column there and is not refused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.cdc.lines import split_lines
from pipelines.cdc.values import json_text

__all__ = ["NO_VALUE", "Presence", "merge_compressed", "ogg_presence"]

#: the reason of a compressed update missing columns in both images (the names follow)
NO_VALUE = "ogg-json: compressed update without a value for "
#: one JSON token of a flat object: a character outside strings, or a whole string
_TOKEN = r'(?:[^"{}]|"(?:[^"\\]|\\.)*")'


@dataclass(frozen=True)
class Presence:
    """Per table column, per line of a decoded range (line ``first_line`` first): whether the
    line's ``after`` / ``before`` object holds the column's key."""

    first_line: int
    after: dict[str, np.ndarray]
    before: dict[str, np.ndarray]


def _holds(lines: pa.Array, image: str, name: str) -> np.ndarray:
    pattern = rf'"{image}"\s*:\s*\{{{_TOKEN}*?"{re.escape(name)}"\s*:'
    hit = pc.fill_null(pc.match_substring_regex(lines, pattern), False)
    return np.asarray(hit.to_numpy(zero_copy_only=False), bool)


def ogg_presence(data: bytes, names: Sequence[str], first_line: int) -> Presence | None:
    """The :class:`Presence` of ``names`` in the lines of ``data`` (a range whose first line
    is ``first_line``); None when no line is an update (no compressed update possible)."""
    if b'"U"' not in data:
        return None
    lines = split_lines(data)
    return Presence(first_line, {n: _holds(lines, "after", n) for n in names},
                    {n: _holds(lines, "before", n) for n in names})


def merge_compressed(after: pa.Array | None, before: pa.Array | None, presence: Presence,
                     lines: np.ndarray, is_u: np.ndarray, names: Sequence[str]
                     ) -> tuple[pa.Array | None, pa.Array]:
    """The ``after`` images (a struct per row; ``lines``: each row's line position) with the
    columns an update left out taken from ``before``, and per row the refusal of the columns
    neither image holds (NULL: none; :data:`NO_VALUE`)."""
    n = len(lines)
    at = lines.astype(np.int64) - presence.first_line
    a_kids = _kids(after)
    b_kids = _kids(before)
    fields, kids = [], []
    missing: list[tuple[str, np.ndarray]] = []
    for name in dict.fromkeys([*a_kids, *names]):
        kid = a_kids.get(name)
        in_a, in_b = presence.after.get(name), presence.before.get(name)
        if in_a is None or in_b is None:  # not a table column: kept as read
            if kid is not None:
                fields.append(name)
                kids.append(kid)
            continue
        absent = is_u & ~in_a[at]
        take = absent & in_b[at]
        if (in_a.any() or in_b.any()) and (absent & ~in_b[at]).any():
            missing.append((name, absent & ~in_b[at]))
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
