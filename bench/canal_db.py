"""A whole database's change feed as Alibaba Canal prints it (``canal-json``, the flat message
Paimon's ``kafka_sync_database`` reads most), deterministic, and the tables it must leave
(issue 30, scope 8; used by ``bench/cdc_database.py`` and its smoke test).

* **Tables**: :data:`TABLE_NAMES` (20) of database :data:`DATABASE`, each with a primary key
  (``id BIGINT``; ``order_id BIGINT, line_no INT`` for the line tables), an ``updated_at
  DATETIME`` and 3-6 more columns drawn (fixed seed) from :data:`_TEMPLATES` (INT, BIGINT,
  DECIMAL(12,2), DOUBLE, VARCHAR, a nullable VARCHAR, TINYINT(1)).
* **Events**: ``events`` single-row events (numpy PCG64, ``seed``); the table of each is drawn
  Zipf-like (weight ``1 / rank``: the largest table takes ~28 %, the smallest ~1.4 %); its key
  uniformly from ``events_of_table / 4`` keys (so a key changes ~4 times). A key's first event
  is an INSERT; after it UPDATE, or DELETE with probability 0.1 (never twice in a row), and
  the event after a DELETE re-INSERTs the key. Values are functions of (key, event index), so
  the winning version is checkable (a DELETE's row is the deleted version's); ``updated_at``
  is 2024-01-01 plus the event index in seconds. Every event is canal's flat message:
  ``data`` (one row, values as text, NULL as ``null``), ``database``, ``es``, ``id``,
  ``isDdl``, ``mysqlType``, ``old`` (an UPDATE's changed columns' previous values),
  ``pkNames``, ``sql``, ``sqlType``, ``table``, ``ts`` (strictly increasing: the arrival
  order, which is canal's only order), ``type``.
* **Landing**: ``<dir>/batch-000001/part-<i>.json``, the events in order over ``files`` files.
* **Model**: :func:`expected` -- the rows a table must hold (the last change of each key,
  deleted keys absent), typed as Paimon's MySQL type mapping types them
  (:func:`paimon_schema`); :func:`check` compares a result with it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["DATABASE", "TABLE_NAMES", "Column", "Feed", "TableSpec", "check", "expected",
           "generate", "paimon_schema", "specs", "write_landing"]

DATABASE = "shop"
TABLE_NAMES = ("orders", "order_items", "customers", "products", "inventory", "payments",
               "shipments", "addresses", "carts", "cart_items", "reviews", "coupons",
               "categories", "suppliers", "warehouses", "returns", "invoices", "refunds",
               "sessions", "audit_log")
_LINE_TABLES = ("order_items", "cart_items")  # key (order_id, line_no)
_T0 = 1_704_067_200  # 2024-01-01 00:00:00 UTC, seconds
DELETE_P = 0.1
EVENTS_PER_KEY = 4


@dataclass(frozen=True)
class Column:
    """One column: name, canal's ``mysqlType`` / ``sqlType`` (java.sql.Types), the Paimon
    type Paimon's MySQL mapping gives it, and the value kind of the generator."""

    name: str
    mysql: str
    sql_type: int
    paimon: str
    kind: str


_TEMPLATES = (
    Column("qty", "int(11)", 4, "INT", "int"),
    Column("amount", "decimal(12,2)", 3, "DECIMAL(12, 2)", "decimal"),
    Column("price", "double", 8, "DOUBLE", "double"),
    Column("name", "varchar(64)", 12, "VARCHAR(64)", "name"),
    Column("note", "varchar(255)", 12, "VARCHAR(255)", "note"),
    Column("ref_id", "bigint(20)", -5, "BIGINT", "bigint"),
    Column("active", "tinyint(1)", -6, "BOOLEAN", "bool"),
)
_UPDATED = Column("updated_at", "datetime", 93, "TIMESTAMP(0)", "datetime")
_ARROW = {"int": pa.int32(), "decimal": pa.decimal128(12, 2), "double": pa.float64(),
          "name": pa.string(), "note": pa.string(), "bigint": pa.int64(), "bool": pa.bool_(),
          "datetime": pa.timestamp("s"), "key": pa.int64(), "line": pa.int32()}


@dataclass(frozen=True)
class TableSpec:
    name: str
    columns: tuple[Column, ...]
    primary_keys: tuple[str, ...]

    @property
    def value_columns(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.name not in self.primary_keys)


def specs(seed: int) -> list[TableSpec]:
    """The 20 tables (fixed by ``seed``)."""
    rng = np.random.default_rng([seed, 1])
    out = []
    for name in TABLE_NAMES:
        if name in _LINE_TABLES:
            keys: tuple[Column, ...] = (Column("order_id", "bigint(20)", -5, "BIGINT", "key"),
                                        Column("line_no", "int(11)", 4, "INT", "line"))
        else:
            keys = (Column("id", "bigint(20)", -5, "BIGINT", "key"),)
        n = int(rng.integers(3, 7))
        picked = sorted(rng.choice(len(_TEMPLATES), size=n, replace=False).tolist())
        cols = (*keys, *(_TEMPLATES[i] for i in picked), _UPDATED)
        out.append(TableSpec(name, cols, tuple(c.name for c in keys)))
    return out


def paimon_schema(spec: TableSpec, options: dict[str, str] | None = None) -> dict[str, Any]:
    """The table's Paimon schema (``--schema`` JSON of the single-table job)."""
    return {"fields": [{"name": c.name, "type": c.paimon
                        + (" NOT NULL" if c.name in spec.primary_keys else "")}
                       for c in spec.columns],
            "primary_keys": list(spec.primary_keys), "options": dict(options or {})}


# ---------------------------------------------------------------------------- the events


@dataclass
class Feed:
    """The generated feed, column-wise, in arrival order: per event its table index, key,
    type (0 INSERT, 1 UPDATE, 2 DELETE) and the index of the key's previous event (-1)."""

    seed: int
    table: np.ndarray
    key: np.ndarray
    op: np.ndarray
    prev: np.ndarray
    specs: list[TableSpec]

    @property
    def events(self) -> int:
        return len(self.table)


def generate(events: int, seed: int) -> Feed:
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, len(TABLE_NAMES) + 1)
    table = rng.choice(len(TABLE_NAMES), size=events, p=w / w.sum()).astype(np.int16)
    counts = np.bincount(table, minlength=len(TABLE_NAMES))
    nkeys = np.maximum(1, counts // EVENTS_PER_KEY)
    key = np.floor(rng.random(events) * nkeys[table]).astype(np.int64)
    # each key's events in arrival order: its chain
    order = np.lexsort((np.arange(events), key, table))
    t_s, k_s = table[order], key[order]
    first = np.ones(events, bool)
    first[1:] = (t_s[1:] != t_s[:-1]) | (k_s[1:] != k_s[:-1])
    prev_s = np.where(first, -1, np.concatenate([[-1], order[:-1]]))
    drawn = (rng.random(events) < DELETE_P)[order] & ~first
    after_del = np.zeros(events, bool)  # a DELETE never follows a DELETE
    after_del[1:] = drawn[:-1] & ~first[1:]
    dele = drawn & ~after_del
    prev_del = np.zeros(events, bool)
    prev_del[1:] = dele[:-1] & ~first[1:]
    op_s = np.where(first | prev_del, 0, np.where(dele, 2, 1)).astype(np.int8)
    op = np.empty(events, np.int8)
    op[order] = op_s
    prev = np.empty(events, np.int64)
    prev[order] = prev_s
    return Feed(seed, table, key, op, prev, specs(seed))


def _values(col: Column, key: np.ndarray, ev: np.ndarray, j: int) -> pa.Array:
    """The typed values of ``col`` for (key, event index) pairs."""
    k = col.kind
    if k == "key":
        return pa.array(key // 8 + 1 if j < 0 else key + 1, pa.int64())
    if k == "line":
        return pa.array((key % 8 + 1).astype(np.int32))
    if k == "int":
        return pa.array(((key * 7 + ev) % 1_000_000).astype(np.int32))
    if k == "bigint":
        return pa.array(ev * 16 + j, pa.int64())
    if k == "decimal":
        return _decimal(key, ev)
    if k == "double":
        return pa.array((ev % 100_000) * 0.25)
    if k == "name":
        return pc.binary_join_element_wise("name-", pa.array(key).cast(pa.string()), "-",
                                           pa.array(ev % 997).cast(pa.string()), "")
    if k == "note":
        text = pc.binary_join_element_wise("note for event ", pa.array(ev).cast(pa.string()),
                                           " of the feed", "")
        return pc.if_else(pa.array(ev % 13 == 0), pa.scalar(None, pa.string()), text)
    if k == "bool":
        return pa.array((key + ev) % 2 == 1)
    if k == "datetime":
        return pa.array(_T0 + ev, pa.int64()).cast(pa.timestamp("s"))
    raise AssertionError(k)


def _decimal(key: np.ndarray, ev: np.ndarray) -> pa.Array:
    unscaled = (key * 131 + ev) % 1_000_000_000
    text = pc.binary_join_element_wise(
        pa.array(unscaled // 100).cast(pa.string()), ".",
        pc.utf8_lpad(pa.array(unscaled % 100).cast(pa.string()), 2, "0"), "")
    return text.cast(pa.decimal128(12, 2))


def _text(col: Column, typed: pa.Array) -> pa.Array:
    """Canal's JSON text of typed values: a quoted string, or ``null``."""
    if col.kind == "bool":
        s = pc.if_else(typed, "1", "0")
    elif col.kind == "datetime":
        s = typed.cast(pa.string())  # "2024-01-01 00:00:00"
    else:
        s = typed.cast(pa.string())
    return pc.fill_null(pc.binary_join_element_wise('"', s, '"', ""), "null")


def _row(spec: TableSpec, cols: tuple[Column, ...], key: np.ndarray, ev: np.ndarray
         ) -> pa.Array:
    parts: list[Any] = []
    for i, c in enumerate(cols):
        j = -1 if c.name == "order_id" else spec.columns.index(c)
        parts += [("{" if i == 0 else ",") + json.dumps(c.name) + ":",
                  _text(c, _values(c, key, ev, j))]
    return pc.binary_join_element_wise(*parts, "}", "")


_OPS = np.array(["INSERT", "UPDATE", "DELETE"])


def _lines(feed: Feed, ti: int, idx: np.ndarray) -> pa.Array:
    """The JSON lines of table ``ti``'s events at global indices ``idx``."""
    spec = feed.specs[ti]
    key, op, prev = feed.key[idx], feed.op[idx], feed.prev[idx]
    # a DELETE carries the row as it was (its previous version's values)
    data = _row(spec, spec.columns, key, np.where(op == 2, prev, idx))
    changed = (spec.value_columns[0], _UPDATED) if spec.value_columns[0] is not _UPDATED \
        else (_UPDATED,)
    old = _row(spec, changed, key, np.maximum(prev, 0))
    old = pc.if_else(pa.array(op == 1), pc.binary_join_element_wise("[", old, "]", ""), "null")
    ts = _T0 * 1000 + idx
    head = ('{"data":[', '],"database":' + json.dumps(DATABASE) + ',"es":')
    mid = (',"isDdl":false,"mysqlType":' + json.dumps({c.name: c.mysql for c in spec.columns},
                                                      separators=(",", ":")) + ',"old":')
    tail = (',"pkNames":' + json.dumps(list(spec.primary_keys), separators=(",", ":"))
            + ',"sql":"","sqlType":'
            + json.dumps({c.name: c.sql_type for c in spec.columns}, separators=(",", ":"))
            + ',"table":' + json.dumps(spec.name) + ',"ts":')
    return pc.binary_join_element_wise(
        head[0], data, head[1], pa.array(ts // 1000 * 1000).cast(pa.string()), ',"id":',
        pa.array(idx // 1000 + 1).cast(pa.string()), mid, old, tail,
        pa.array(ts).cast(pa.string()), ',"type":"', pa.array(_OPS[op]), '"}', "")


def write_landing(feed: Feed, landing: Path, files: int) -> Path:
    """``<landing>/batch-000001/part-<i>.json``: the events in arrival order."""
    batch = landing / "batch-000001"
    batch.mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, feed.events, files + 1).astype(np.int64)
    for f in range(files):
        lo, hi = int(bounds[f]), int(bounds[f + 1])
        pos = np.arange(lo, hi, dtype=np.int64)
        pieces: list[tuple[np.ndarray, pa.Array]] = []
        for ti in range(len(feed.specs)):
            sel = pos[feed.table[lo:hi] == ti]
            if len(sel):
                pieces.append((sel - lo, _lines(feed, ti, sel)))
        where = np.concatenate([p[0] for p in pieces]) if pieces else np.zeros(0, np.int64)
        chunk = pa.concat_arrays([p[1] for p in pieces]) if pieces else pa.array([], pa.string())
        inv = np.empty(len(where), np.int64)
        inv[where] = np.arange(len(where))
        with open(batch / f"part-{f:05d}.json", "wb") as fh:
            _write_lines(fh, chunk.take(pa.array(inv)))
    return batch


def _write_lines(fh: Any, lines: pa.Array) -> None:
    """Write string array ``lines`` newline-terminated, in slices (no per-line Python)."""
    for s in range(0, len(lines), 200_000):
        part = lines.slice(s, 200_000)
        joined = pc.binary_join_element_wise(part, "\n", "")
        buf = joined.buffers()[2]
        offs = np.frombuffer(joined.buffers()[1], np.int32)[joined.offset:
                                                             joined.offset + len(joined) + 1]
        fh.write(memoryview(buf)[int(offs[0]):int(offs[-1])])


# ---------------------------------------------------------------------------- the model


def expected(feed: Feed, ti: int) -> pa.Table:
    """The rows table ``ti`` must hold, sorted by key."""
    spec = feed.specs[ti]
    idx = np.flatnonzero(feed.table == ti)
    key = feed.key[idx]
    order = np.lexsort((idx, key))
    k_s = key[order]
    last = np.ones(len(k_s), bool)
    last[:-1] = k_s[1:] != k_s[:-1]
    win = idx[order][last]
    win = win[feed.op[win] != 2]
    wk = feed.key[win]
    cols = {c.name: _values(c, wk, win, -1 if c.name == "order_id" else spec.columns.index(c))
            for c in spec.columns}
    return pa.table(cols).sort_by([(k, "ascending") for k in spec.primary_keys])


def _canonical(t: pa.Table, spec: TableSpec) -> pa.Table:
    cols = {}
    for c in spec.columns:
        if c.name not in t.column_names:
            raise KeyError(c.name)
        col = t.column(c.name).combine_chunks()
        want = _ARROW[c.kind]
        if pa.types.is_timestamp(col.type):
            col = col.cast(pa.timestamp("s", tz=col.type.tz), safe=False).cast(pa.int64())
            want = pa.int64()
        cols[c.name] = col.cast(want)
    return pa.table(cols).sort_by([(k, "ascending") for k in spec.primary_keys])


def check(feed: Feed, ti: int, got: pa.Table) -> str | None:
    """None when ``got`` holds exactly table ``ti``'s expected rows (every column), else
    what differs (names the table)."""
    spec = feed.specs[ti]
    want = _canonical(expected(feed, ti), spec)
    try:
        have = _canonical(got, spec)
    except (KeyError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        return f"{spec.name}: columns {got.column_names}: {e}"
    if have.num_rows != want.num_rows:
        return f"{spec.name}: {have.num_rows} rows, expected {want.num_rows}"
    bad = [c.name for c in spec.columns if not have.column(c.name).equals(want.column(c.name))]
    return f"{spec.name}: columns {bad} differ" if bad else None
