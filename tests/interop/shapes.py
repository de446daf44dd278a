"""Declarative table shapes for the cross-implementation interop suite.

A :class:`Shape` is a ``schema.json`` dict (the oracle's format), a list of steps (writes with
optional ``_kind`` column, overwrites, Java full compactions, Java expiry) and a list of filter
sets. The oracle builds every shape once per test session (``conftest.py``) with the engine
that *writes* it, and records that engine's own reads as the expected output: Java 0.9 tables
are read back with ``--engine java``, pypaimon 2.1 tables with ``--engine pypaimon`` (Java 0.9
cannot read pypaimon's parquet DECIMAL(p <= 18) / TIMESTAMP(7..9), oracle README 4.3/4.4).

Snapshot ids are declared, not discovered (pytest parametrises at collection time): every
step says how many snapshots it creates (a Java write to a ``deletion-vectors.enabled`` table
creates two: APPEND + COMPACT). The fixture checks the declaration against the engine's
``snapshots`` output after every step and fails loudly on a mismatch.

Data is generated deterministically (seeded ``random.Random``) in the oracle's canonical JSON
input form (decimals and timestamps as strings, binary as base64).
"""

from __future__ import annotations

import base64
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

Engine = Literal["java", "pypaimon"]
Row = dict[str, Any]
Rows = list[Row]

DATABASE = "interop"
KIND = "_kind"


# ---------------------------------------------------------------------------------------------
# steps and shapes


@dataclass(frozen=True)
class Write:
    """One commit through the oracle's ``write`` (rows generated lazily, deterministically)."""

    rows: Callable[[], Rows]
    engine: Engine | None = None  # None: the shape's writer
    kind: bool = False  # rows carry a "_kind" column (+I/-U/+U/-D; java only)
    overwrite: dict[str, str] | None = None  # {} = dynamic INSERT OVERWRITE, else static
    snapshots: int = 1


@dataclass(frozen=True)
class Compact:
    """Java full compaction (``oracle compact``)."""

    snapshots: int = 1


@dataclass(frozen=True)
class Expire:
    """Java ``ExpireSnapshots`` keeping the newest ``retain_max`` snapshots."""

    retain_max: int


Step = Write | Compact | Expire


@dataclass(frozen=True)
class Shape:
    name: str
    writer: Engine  # whose own reads are the expected output
    schema: dict[str, Any]
    steps: tuple[Step, ...]
    filters: tuple[tuple[str, ...], ...] = ()  # each tuple: --filter expressions, ANDed
    empty_snapshots: frozenset[int] = frozenset()  # unfiltered read legitimately empty
    note: str = ""

    @property
    def table(self) -> str:
        return f"{DATABASE}.{self.name}"

    @property
    def mixed(self) -> bool:
        """Some steps are made by the other engine (then pypaimon needs --pypaimon-compat)."""
        return any(isinstance(s, (Compact, Expire)) for s in self.steps) or any(
            isinstance(s, Write) and s.engine not in (None, self.writer) for s in self.steps
        )

    def step_engine(self, step: Step) -> Engine:
        if isinstance(step, Write):
            return step.engine or self.writer
        return "java"

    def snapshots_after_steps(self) -> list[list[int]]:
        """The snapshot ids that exist after each step (declared)."""
        out: list[list[int]] = []
        ids: list[int] = []
        nxt = 1
        for s in self.steps:
            if isinstance(s, Expire):
                ids = ids[-s.retain_max :]
            else:
                n = s.snapshots
                ids = ids + list(range(nxt, nxt + n))
                nxt += n
            out.append(list(ids))
        return out

    def snapshot_ids(self) -> list[int]:
        """The snapshot ids that exist at the end."""
        return self.snapshots_after_steps()[-1]


@dataclass(frozen=True)
class ReadCase:
    shape: Shape
    snapshot: int | None  # None: latest
    filter_idx: int | None  # index into shape.filters

    @property
    def id(self) -> str:
        s = "latest" if self.snapshot is None else f"s{self.snapshot}"
        f = "all" if self.filter_idx is None else f"f{self.filter_idx}"
        return f"{self.shape.name}-{s}-{f}"

    @property
    def filters(self) -> tuple[str, ...]:
        return () if self.filter_idx is None else self.shape.filters[self.filter_idx]

    @property
    def expected_file(self) -> str:
        return f"expected/{self.shape.name}/read-{self.id.split('-', 1)[1]}.jsonl"


@dataclass(frozen=True)
class IncrementalCase:
    shape: Shape
    start: int  # exclusive
    end: int  # inclusive

    @property
    def id(self) -> str:
        return f"{self.shape.name}-incr-{self.start}-{self.end}"

    @property
    def expected_file(self) -> str:
        return f"expected/{self.shape.name}/incr-{self.start}-{self.end}.jsonl"


def snapshots_file(shape: Shape) -> str:
    return f"expected/{shape.name}/snapshots.jsonl"


def read_cases(shape: Shape) -> list[ReadCase]:
    out = []
    for sid in [*shape.snapshot_ids(), None]:
        out.append(ReadCase(shape, sid, None))
        out.extend(ReadCase(shape, sid, i) for i in range(len(shape.filters)))
    return out


def incremental_cases(shape: Shape) -> list[IncrementalCase]:
    """(n-1, n] for every retained snapshot n, plus the whole retained range in one call."""
    ids = shape.snapshot_ids()
    out = [IncrementalCase(shape, n - 1, n) for n in ids]
    if len(ids) > 2:
        out.append(IncrementalCase(shape, ids[0] - 1, ids[-1]))
    return out


# ---------------------------------------------------------------------------------------------
# deterministic value generation (oracle input form)

LONG = "a fairly long string value, longer than sixteen bytes"
STRINGS = [
    "", "a", "abc", "b", "ü", "中文字符", "😀 emoji", LONG, LONG + " (2)", 'q"uote', "back\\slash",
    "tab\tnew\nline", "a/b", "x=y", "%25", " lead", "trail ", "Zz", "\x01ctl", "€uro",
]
# partition values: path-hostile, unicode, blank (stored under __DEFAULT_PARTITION__) and NULL
PARTS_NULLABLE = [None, "", "a/b", "x=y", "%", '"', " ", "ü中", "a b", "#?&", "plain"]
PARTS = [p for p in PARTS_NULLABLE if p is not None]
# Java 0.9 lookup compaction (deletion vectors, lookup changelog) builds local file names from
# the partition value: a '/' in it fails with "IOException: No such file or directory"
PARTS_NO_SLASH = [p for p in PARTS if "/" not in p]


class Gen:
    """Seeded generator of values in the oracle's JSON input form.

    ``java_safe`` avoids values that Java 0.9 *reads* wrongly or not at all, so that Java's own
    read is an unambiguous expected output (both found while building this suite):

    * a ROW whose fields are all null reads back as a null ROW (pypaimon reads the same file as
      a ROW of nulls), so such values are not generated;
    * a null ROW that contains a nested ROW makes the read hang / exhaust memory;
    * TIMESTAMP(7..9) before 1970 fail with ``IllegalArgumentException`` (INT96 decoding).

    ``micro_nanos`` zeroes the digits below the microsecond of TIMESTAMP(7..9) values: pypaimon
    2.1 reads them truncated to microseconds from PRIMARY KEY tables (its merge path; the file
    holds the nanoseconds, append tables read them fine).
    """

    def __init__(self, seed: int, java_safe: bool = False, micro_nanos: bool = False) -> None:
        self.r = random.Random(seed)
        self.java_safe = java_safe
        self.micro_nanos = micro_nanos

    def maybe(self, v: Any, p: float = 0.1) -> Any:
        return None if self.r.random() < p else v

    def choice(self, xs: list[Any]) -> Any:
        return self.r.choice(xs)

    def randint(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)

    def string(self, max_len: int | None = None) -> str:
        r = self.r
        if r.random() < 0.5:
            s = r.choice(STRINGS)
        else:
            alphabet = "abcxyzAB0 9_-/=%é中😀"
            s = "".join(r.choice(alphabet) for _ in range(r.randint(0, 30)))
        return s if max_len is None else s[:max_len]

    def double(self, specials: bool = True) -> Any:
        r = self.r
        x = r.random()
        if specials and x < 0.08:
            return r.choice(["NaN", "Infinity", "-Infinity", -0.0, 0.0, 5e-324,
                             1.7976931348623157e308])
        if x < 0.2:
            return r.choice([0.1, 0.5, 1.0, -1.5, 1e16, 1e-7, 123456.789])
        return r.uniform(-1e6, 1e6) if x < 0.6 else r.random()

    def float32(self, specials: bool = True) -> Any:
        r = self.r
        x = r.random()
        if specials and x < 0.08:
            return r.choice(["NaN", "Infinity", "-Infinity", -0.0, 1.1, 3.4028235e38, 1e-45])
        return round(r.uniform(-1000, 1000), r.randint(0, 6)) if x < 0.6 else r.random()

    def decimal(self, p: int, s: int) -> str:
        r = self.r
        digits = r.choice([1, 2, 3, p // 2, p]) if p > 3 else p
        u = r.randint(-(10**digits) + 1, 10**digits - 1)
        neg = "-" if u < 0 else ""
        t = str(abs(u)).rjust(s + 1, "0")
        return neg + (t[:-s] + "." + t[-s:] if s else t)

    def date(self) -> str:
        import datetime as dt

        d = self.r.choice([-719162, -1, 0, 2932896]) if self.r.random() < 0.05 else (
            self.r.randint(-25567, 47482))
        return (dt.date(1970, 1, 1) + dt.timedelta(days=d)).isoformat()

    def time(self, p: int) -> str:
        ms = self.r.randint(0, 86399999)
        s = f"{ms // 3600000:02d}:{(ms // 60000) % 60:02d}:{(ms // 1000) % 60:02d}"
        return s + ("." + f"{ms % 1000:03d}"[:p] if p else "")

    def timestamp(self, p: int, ltz: bool = False) -> str:
        import datetime as dt

        r = self.r
        if p <= 6 and r.random() < 0.03:
            base = r.choice([dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59)])
        else:
            lo, hi = (1700, 2200) if p > 6 else (1900, 2100)
            if p > 6 and self.java_safe:
                lo = 1971
            secs = r.randint(int((dt.datetime(lo, 1, 1) - dt.datetime(1970, 1, 1)).total_seconds()),
                             int((dt.datetime(hi, 1, 1) - dt.datetime(1970, 1, 1)).total_seconds()))
            base = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=secs)
        s = base.strftime("%Y-%m-%d %H:%M:%S")
        s = f"{base.year:04d}" + s[s.index("-"):]
        if p:
            frac = "".join(r.choice("0123456789") for _ in range(p))
            if self.micro_nanos:
                frac = frac[:6].ljust(p, "0")
            s += "." + frac
        if ltz and base.year not in (1, 9999) and r.random() < 0.3:
            s += r.choice(["Z", "+02:00", "-05:30"])  # the input names the instant's offset
        return s

    def binary(self, n: int | None = None) -> str:
        k = n if n is not None else self.r.choice([0, 1, 3, 8, 20])
        return base64.b64encode(self.r.randbytes(k)).decode("ascii")


def _rows(seed: int, n: int, make: Callable[..., Row],
          java_safe: bool = False, micro_nanos: bool = False) -> Callable[[], Rows]:
    def gen() -> Rows:
        g = Gen(seed, java_safe, micro_nanos)
        return [make(g, i) for i in range(n)]

    return gen


def _kinds(g: Gen, row: Row, weights: tuple[int, int, int, int] = (5, 1, 3, 2)) -> Row:
    row[KIND] = g.r.choices(["+I", "-U", "+U", "-D"], weights=weights)[0]
    return row


# ---------------------------------------------------------------------------------------------
# column sets

ALL_TYPES_COMMON: list[tuple[str, Any]] = [
    ("b", "BOOLEAN"), ("ti", "TINYINT"), ("si", "SMALLINT"), ("i", "INT"), ("bi", "BIGINT"),
    ("f", "FLOAT"), ("d", "DOUBLE"),
    ("dec9", "DECIMAL(9, 2)"), ("dec18", "DECIMAL(18, 4)"), ("dec38", "DECIMAL(38, 10)"),
    ("dec30", "DECIMAL(30, 0)"),
    ("c", "CHAR(5)"), ("vc", "VARCHAR(20)"), ("s", "STRING"),
    ("bin", "BINARY(4)"), ("vb", "VARBINARY(10)"), ("by", "BYTES"),
    ("dt", "DATE"), ("tm0", "TIME(0)"), ("tm3", "TIME(3)"),
    ("ts0", "TIMESTAMP(0)"), ("ts3", "TIMESTAMP(3)"), ("ts6", "TIMESTAMP(6)"),
    ("ltz3", "TIMESTAMP(3) WITH LOCAL TIME ZONE"), ("ltz6", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ("arr", "ARRAY<INT>"), ("arrs", "ARRAY<STRING>"),
    ("m", {"type": "MAP", "key": "STRING NOT NULL", "value": "DOUBLE"}),
    ("mi", "MAP<INT, ARRAY<STRING>>"),
    ("r", "ROW<x INT, y STRING, z ARRAY<DECIMAL(10, 2)>, w ROW<q BYTES, t DATE>>"),
    ("ar", "ARRAY<ROW<k STRING, v BIGINT>>"),
]
NANO_TYPES: list[tuple[str, Any]] = [
    ("ts7", "TIMESTAMP(7)"), ("ts9", "TIMESTAMP(9)"),
    ("ltz9", "TIMESTAMP(9) WITH LOCAL TIME ZONE"),
]


def _value(g: Gen, name: str, t: Any) -> Any:
    if isinstance(t, dict):
        return g.maybe({g.string(): g.double() for _ in range(g.randint(0, 3))})
    u = t.upper().replace(" NOT NULL", "")
    if u == "BOOLEAN":
        return g.maybe(g.r.random() < 0.5)
    if u == "TINYINT":
        return g.maybe(g.randint(-128, 127))
    if u == "SMALLINT":
        return g.maybe(g.randint(-32768, 32767))
    if u == "INT":
        return g.maybe(g.choice([g.randint(-100, 100), g.randint(-(2**31), 2**31 - 1)]))
    if u == "BIGINT":
        return g.maybe(g.choice([g.randint(-1000, 1000), g.randint(-(2**63), 2**63 - 1)]))
    if u == "FLOAT":
        return g.maybe(g.float32())
    if u == "DOUBLE":
        return g.maybe(g.double())
    if u.startswith("DECIMAL"):
        p, s = (int(x) for x in u[8:-1].split(","))
        return g.maybe(g.decimal(p, s))
    if u.startswith("CHAR"):
        return g.maybe(g.string(5))
    if u.startswith("VARCHAR"):
        return g.maybe(g.string(20))
    if u == "STRING":
        return g.maybe(g.string())
    if u == "BINARY(4)":
        return g.maybe(g.binary(4))
    if u.startswith("VARBINARY"):
        return g.maybe(g.binary(g.randint(0, 10)))
    if u == "BYTES":
        return g.maybe(g.binary())
    if u == "DATE":
        return g.maybe(g.date())
    if u.startswith("TIME("):
        return g.maybe(g.time(int(u[5])))
    if u.startswith("TIMESTAMP("):
        return g.maybe(g.timestamp(int(u[10]), ltz="ZONE" in u))
    if u == "ARRAY<INT>":
        return g.maybe([g.maybe(g.randint(-50, 50)) for _ in range(g.randint(0, 4))])
    if u == "ARRAY<STRING>":
        return g.maybe([g.maybe(g.string()) for _ in range(g.randint(0, 3))])
    if u.startswith("MAP<INT"):
        keys = sorted({g.randint(-20, 20) for _ in range(g.randint(0, 3))})
        return g.maybe([[k, g.maybe([g.string() for _ in range(g.randint(0, 2))])] for k in keys])
    if u.startswith("ROW<X"):
        pn = 0.0 if g.java_safe else 0.1
        return g.maybe({
            "x": g.maybe(g.randint(-9, 9), pn), "y": g.maybe(g.string()),
            "z": g.maybe([g.maybe(g.decimal(10, 2)) for _ in range(g.randint(0, 2))]),
            "w": g.maybe({"q": g.maybe(g.binary()), "t": g.maybe(g.date(), pn)}, pn),
        }, pn)
    if u.startswith("ARRAY<ROW"):
        pn = 0.0 if g.java_safe else 0.1
        return g.maybe([g.maybe({"k": g.maybe(g.string(), pn), "v": g.maybe(g.randint(-5, 5))}, pn)
                        for _ in range(g.randint(0, 3))])
    raise ValueError(f"no generator for {name} {t}")


def _fields(cols: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": n, "type": t} for n, t in cols]


def _typed_row(cols: list[tuple[str, Any]]) -> Callable[[Gen, int], Row]:
    def make(g: Gen, i: int) -> Row:
        return {n: _value(g, n, t) for n, t in cols}

    return make


# ---------------------------------------------------------------------------------------------
# the shapes

APPEND_COLS: list[tuple[str, Any]] = [
    ("id", "BIGINT"), ("name", "STRING"), ("score", "DOUBLE"), ("amount", "DECIMAL(12, 2)"),
    ("ts", "TIMESTAMP(3)"), ("pt", "STRING"),
]


def _append_row(base: int, parts: list[Any]) -> Callable[[Gen, int], Row]:
    def make(g: Gen, i: int) -> Row:
        return {"id": base + i, "name": g.maybe(g.string()), "score": g.maybe(g.double(False)),
                "amount": g.maybe(g.decimal(12, 2)), "ts": g.maybe(g.timestamp(3)),
                "pt": g.choice(parts)}

    return make


def _only_parts(make: Callable[[Gen, int], Row], parts: list[Any]) -> Callable[[Gen, int], Row]:
    def m(g: Gen, i: int) -> Row:
        row = make(g, i)
        row["pt"] = g.choice(parts)
        return row

    return m


APPEND_FILTERS: tuple[tuple[str, ...], ...] = (
    ("pt IS NULL",),
    ("pt = 'a/b'",),
    ("pt IN ('x=y', '%', '')",),
    ("pt = ' '",),
    ("id < 300",),
    ("score > 0.5", "pt IS NOT NULL"),
    ("name STARTSWITH 'a'",),
    ("amount >= 100",),
    ("ts < '1990-01-01 00:00:00'",),
)


def _append_shape(name: str, writer: Engine, options: dict[str, str], final: list[Step]) -> Shape:
    return Shape(
        name=name,
        writer=writer,
        schema={"fields": _fields(APPEND_COLS), "partition_keys": ["pt"], "options": options},
        steps=(
            Write(_rows(101, 1500, _append_row(0, PARTS_NULLABLE))),
            Write(_rows(102, 1500, _append_row(10_000, PARTS_NULLABLE))),
            Write(_rows(103, 800, _append_row(20_000, PARTS_NULLABLE))),
            # dynamic INSERT OVERWRITE: only NULL and '%' partitions are replaced
            Write(_rows(104, 300, _append_row(30_000, [None, "%"])), overwrite={}),
            # static partition overwrite of 'x=y'
            Write(_rows(105, 200, _append_row(40_000, ["x=y"])), overwrite={"pt": "x=y"}),
            Write(_rows(106, 400, _append_row(50_000, PARTS_NULLABLE))),
            *final,
        ),
        filters=APPEND_FILTERS,
    )


PK_COLS: list[tuple[str, Any]] = [
    ("pt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("v", "STRING"), ("n", "BIGINT"),
    ("d", "DOUBLE"), ("f", "FLOAT"), ("dec", "DECIMAL(20, 4)"), ("flag", "BOOLEAN"),
]


def _pk_row(seed_tag: str, key_space: int, kinds: bool,
            parts: list[str] = PARTS) -> Callable[[Gen, int], Row]:
    def make(g: Gen, i: int) -> Row:
        row = {"pt": g.choice(parts), "id": g.randint(0, key_space),
               "v": g.maybe(f"{seed_tag}-{i}"),
               "n": g.maybe(g.randint(-1000, 1000)), "d": g.maybe(g.double(False)),
               "f": g.maybe(g.float32()), "dec": g.maybe(g.decimal(20, 4)),
               "flag": g.maybe(g.r.random() < 0.5)}
        return _kinds(g, row) if kinds else row

    return make


PK_FILTERS: tuple[tuple[str, ...], ...] = (
    ("pt = 'x=y'",),
    ("pt IN ('a/b', '')",),
    ("id < 100",),
    ("v IS NULL",),
    ("n > 0", "pt != 'a/b'"),
    ("id IN (1, 2, 3, 50, 500, 1999)",),
    ("d < 0.0",),
    ("v STARTSWITH 'u1'",),
)


def _pk_schema(
    options: dict[str, str], cols: list[tuple[str, Any]] | None = None
) -> dict[str, Any]:
    return {"fields": _fields(cols or PK_COLS), "partition_keys": ["pt"],
            "primary_keys": ["pt", "id"], "options": options}


TYPE_FILTERS: tuple[tuple[str, ...], ...] = (
    ("dec9 > 0",),
    ("ts3 >= '2000-01-01 00:00:00'",),
    ("dt < '1970-01-01'",),
    ("b = true", "bi IS NOT NULL"),
    ("ti < 0",),
    ("ti IN (-1, 0, 1, 2, 3, 100)",),
    ("si NOT IN (1, 2, 3)", "si > 0"),
    ("c STARTSWITH 'a'",),
    ("ltz6 > '2020-01-01 00:00:00'",),
    ("dec38 <= 0", "vc IS NOT NULL"),
    ("i >= -50", "i <= 50"),
    ("by IS NULL",),
)


def shapes() -> list[Shape]:
    """Every shape of the suite (cheap: rows are generated only when built)."""
    out: list[Shape] = []

    # ---- Java 0.9 writes ------------------------------------------------------------------
    out.append(_append_shape(
        "j_append_pt", "java", {"bucket": "2", "bucket-key": "id"},
        [Compact(), Expire(retain_max=4)]))
    out.append(Shape(
        name="j_append_unaware",
        writer="java",
        schema={"fields": _fields([("id", "BIGINT"), ("s", "STRING"), ("d", "DOUBLE"),
                                   ("dec", "DECIMAL(38, 10)")])},
        steps=tuple(Write(_rows(200 + k, 300, lambda g, i, k=k: {
            "id": k * 1000 + i, "s": g.maybe(g.string()), "d": g.maybe(g.double()),
            "dec": g.maybe(g.decimal(38, 10))})) for k in range(6)),
        filters=(("id >= 2500",), ("s IS NULL",), ("dec > 0",)),
        # (the oracle's unaware-bucket compaction coordinator never found anything to do)
        note="bucket -1 (unaware) append table",
    ))
    out.append(Shape(
        name="j_pk_pt",
        writer="java",
        schema=_pk_schema({"bucket": "4"}),
        steps=(
            Write(_rows(301, 2000, _pk_row("u1", 1999, False))),
            Write(_rows(302, 1000, _pk_row("u2", 1999, True)), kind=True),
            Write(_rows(303, 1000, _pk_row("u3", 2500, True)), kind=True),
            Compact(),
            Write(_rows(304, 800, _pk_row("u4", 2500, True)), kind=True),
            Expire(retain_max=4),
        ),
        filters=PK_FILTERS,
    ))
    out.append(Shape(
        name="j_pk_dv",
        writer="java",
        schema=_pk_schema({"bucket": "2", "deletion-vectors.enabled": "true"}),
        steps=(
            Write(_rows(401, 1200, _pk_row("u1", 1500, False, PARTS_NO_SLASH)), snapshots=2),
            Write(_rows(402, 800, _pk_row("u2", 1500, True, PARTS_NO_SLASH)), kind=True,
                  snapshots=2),
            Write(_rows(403, 800, _pk_row("u3", 1500, True, PARTS_NO_SLASH)), kind=True,
                  snapshots=2),
            Write(_rows(404, 600, _pk_row("u4", 1500, True, PARTS_NO_SLASH)), kind=True,
                  snapshots=2),
            Compact(),
        ),
        filters=(("pt = 'x=y'",), ("pt IN ('%', '')",), *PK_FILTERS[2:4]),
        # level-0 files are invisible to batch reads of a DV table: the first APPEND snapshot
        # reads empty; every Java write commits APPEND + COMPACT (which writes the DVs)
        empty_snapshots=frozenset({1}),
    ))
    out.append(Shape(
        name="j_pk_changelog",
        writer="java",
        schema={"fields": _fields([("id", "INT NOT NULL"), ("v", "STRING"), ("n", "BIGINT")]),
                "primary_keys": ["id"],
                "options": {"bucket": "1", "changelog-producer": "input"}},
        steps=tuple(
            Write(_rows(500 + k, 400, lambda g, i, k=k: _kinds(g, {
                "id": g.randint(0, 300), "v": g.maybe(f"c{k}-{i}"),
                "n": g.maybe(g.randint(0, 9))})),
                kind=True)
            for k in range(3)),
        filters=(("n = 3",), ("id <= 10",)),
        note="changelog-producer=input: incremental reads come from changelog files",
    ))
    java_types = [("id", "INT NOT NULL"), *ALL_TYPES_COMMON]
    out.append(Shape(
        name="j_types",
        writer="java",
        schema={"fields": _fields(java_types), "primary_keys": ["id"], "options": {"bucket": "1"}},
        steps=(
            Write(_rows(601, 600, lambda g, i: {**_typed_row(java_types)(g, i), "id": i},
                        java_safe=True)),
            Write(_rows(602, 300, lambda g, i: _kinds(
                g, {**_typed_row(java_types)(g, i), "id": g.randint(0, 800)}), java_safe=True),
                  kind=True),
        ),
        filters=TYPE_FILTERS,
    ))
    nano_cols = [("id", "INT"), *NANO_TYPES]
    out.append(Shape(
        name="j_nanos",
        writer="java",
        schema={"fields": _fields(nano_cols)},
        steps=(
            Write(_rows(701, 150, lambda g, i: {**_typed_row(nano_cols)(g, i), "id": i},
                        java_safe=True)),
            Write(_rows(702, 100, lambda g, i: {**_typed_row(nano_cols)(g, i), "id": 1000 + i},
                        java_safe=True)),
        ),
        filters=(("ts9 > '2000-01-01 00:00:00.000000001'",), ("ltz9 IS NULL",)),
        note="TIMESTAMP(7..9): the oracle writes these row by row (paimon-arrow 0.9 bug)",
    ))

    # ---- pypaimon 2.1 writes ------------------------------------------------------------
    out.append(_append_shape("p_append_pt", "pypaimon", {}, []))
    out.append(Shape(
        name="p_append_pt2",
        writer="pypaimon",
        schema={"fields": _fields([("id", "INT"), ("v", "STRING"), ("pt", "STRING"),
                                   ("n", "INT")]),
                "partition_keys": ["pt", "n"], "options": {"metadata.stats-mode": "full"}},
        steps=tuple(Write(_rows(800 + k, 700, lambda g, i, k=k: {
            "id": k * 1000 + i, "v": g.maybe(g.string()), "pt": g.choice(PARTS_NULLABLE),
            "n": g.maybe(g.choice([1, -5, 0, 2**31 - 1]))})) for k in range(3)),
        filters=(("pt IS NULL", "n IS NULL"), ("n = -5",), ("pt = ''", "n IS NOT NULL"),
                 ("id > 1500",)),
        note="two partition keys (STRING, INT), NULL in both; full stats",
    ))
    out.append(Shape(
        name="p_pk_pt",
        writer="pypaimon",
        schema=_pk_schema({"bucket": "2", "metadata.stats-mode": "full"}),
        steps=tuple(Write(_rows(900 + k, 1500, _pk_row(f"u{k + 1}", 1999, False)))
                    for k in range(4)),
        filters=PK_FILTERS,
    ))
    out.append(Shape(
        name="p_pk_b4_rowkind",
        writer="pypaimon",
        schema={"fields": _fields([("id", "INT NOT NULL"), ("v", "STRING"), ("rk", "STRING")]),
                "primary_keys": ["id"], "options": {"bucket": "4", "rowkind.field": "rk"}},
        steps=tuple(Write(_rows(1000 + k, 800, lambda g, i, k=k: {
            "id": g.randint(0, 1200), "v": g.maybe(f"r{k}-{i}"),
            "rk": "+I" if k == 0 else g.choice(["+I", "+U", "-D", "-D"])})) for k in range(3)),
        filters=(("id < 50",), ("v IS NULL",)),
        note="rowkind.field: retractions from pypaimon; default (empty) stats",
    ))
    py_types = [("id", "INT"), *ALL_TYPES_COMMON, *NANO_TYPES]
    out.append(Shape(
        name="p_types",
        writer="pypaimon",
        schema={"fields": _fields(py_types), "options": {"metadata.stats-mode": "full"}},
        steps=(
            Write(_rows(1101, 700, lambda g, i: {**_typed_row(py_types)(g, i), "id": i})),
            Write(_rows(1102, 400, lambda g, i: {**_typed_row(py_types)(g, i), "id": 1000 + i})),
        ),
        # (Java 0.9 cannot build TIME filter literals: "unsupported" in the oracle)
        filters=(*TYPE_FILTERS, ("ts9 < '1970-01-01 00:00:00'",), ("tm3 > '12:00:00'",)),
    ))
    out.append(Shape(
        name="p_types_pk",
        writer="pypaimon",
        schema={"fields": _fields(py_types), "primary_keys": ["id"], "options": {"bucket": "1"}},
        steps=(
            Write(_rows(1201, 500, lambda g, i: {**_typed_row(py_types)(g, i), "id": i},
                        micro_nanos=True)),
            Write(_rows(1202, 300, lambda g, i: {**_typed_row(py_types)(g, i),
                                                 "id": g.randint(0, 700)}, micro_nanos=True)),
        ),
        filters=TYPE_FILTERS[:4],
        note="default (empty) value stats with filters; TIMESTAMP(7..9) values are whole "
             "microseconds (pypaimon's PK read truncates nanoseconds)",
    ))

    # ---- both: pypaimon writes, Java updates/compacts/expires, pypaimon writes on top -----
    mixed_cols = [c for c in PK_COLS if c[0] not in ("dec",)] + [("dec", "DECIMAL(25, 3)")]
    out.append(Shape(
        name="x_mixed_pk",
        writer="java",
        schema=_pk_schema({"bucket": "2", "metadata.stats-mode": "full"}, mixed_cols),
        steps=(
            Write(_rows(1301, 1000, _mixed_row("p1", False)), engine="pypaimon"),
            Write(_rows(1302, 600, _mixed_row("p2", False)), engine="pypaimon"),
            Write(_rows(1303, 500, _mixed_row("j3", True)), engine="java", kind=True),
            Compact(),
            Write(_rows(1304, 500, _mixed_row("p5", False)), engine="pypaimon"),
            Expire(retain_max=4),
        ),
        filters=PK_FILTERS[:5],
        note="expected from Java (pypaimon needs --pypaimon-compat after the Java commits)",
    ))
    return out


def _mixed_row(tag: str, kinds: bool) -> Callable[[Gen, int], Row]:
    base = _pk_row(tag, 1500, kinds)

    def make(g: Gen, i: int) -> Row:
        row = base(g, i)
        row["dec"] = g.maybe(g.decimal(25, 3))
        return row

    return make


SHAPES: list[Shape] = shapes()
assert len({s.name for s in SHAPES}) == len(SHAPES), "duplicate shape names"

READ_CASES: list[ReadCase] = [c for s in SHAPES for c in read_cases(s)]
INCREMENTAL_CASES: list[IncrementalCase] = [c for s in SHAPES for c in incremental_cases(s)]
