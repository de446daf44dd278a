"""Interop, write direction: every table shape of the read suite, written by OUR writer.

The module fixture replays every shape of ``shapes.py`` (adapted in ``write_shapes.py``) with
our ``paimon create`` / ``paimon write`` CLI, in-process, one commit per write step (row kinds
and overwrite specs of the shape; Java compactions and expiry are left out: issue 4). Then:

* phase B: Java 0.9 and pypaimon 2.1 (no ``--pypaimon-compat``) read every snapshot of our
  tables, unfiltered and with each filter set of the shape (and the latest, unfiltered:
  the path without ``--snapshot``); ``test_read``
  compares our CLI's read, Java's, pypaimon's and, independently of all three readers of our
  files, the writing engine's read of ITS OWN table of the same shape (read suite fixture,
  every snapshot it retained);
* phase C, on a copy of each table: a Java append (-U/+U/-D on primary-key tables), a Java full
  compaction, a pypaimon append (``--pypaimon-compat`` from then on: Java 0.9 wrote manifests,
  oracle README 4.1). After each step our read == Java's == pypaimon's == the MODEL (expected
  lines derived from the rows written, ``write_shapes.java_append``), and fsck is ok.

Java/pypaimon work runs as three oracle batches at once (phase B Java, phase B pypaimon,
phase C). ``PAIMON_INTEROP_CACHE=DIR`` keeps the build in DIR/write (fingerprint includes all
of ``paimon_core``, so a writer change rebuilds).

Engine limitations (never ours; where a Java read may fail, the error must be the documented
one, and any Java read that succeeds is compared):

* TIME filter literals: the oracle cannot build them for Java (exit 3, checked), one filter of
  ``p_types``.
* Phase C, ``p_types*``: Java 0.9 reads OUR INT96 TIMESTAMP(7..9) before 1970 correctly
  (phase B), but not the ones it writes itself (its append, its compaction): from then on its
  reads/compaction may fail with ``IllegalArgumentException`` (``write_shapes.PRE_1970_NANOS``).
* Phase C after the pypaimon append: Java 0.9 cannot read pypaimon's parquet DECIMAL(p <= 18)
  (oracle README 4.3) or TIMESTAMP(7..9) (4.4) files; Java value filters are only run after the
  Java append (pypaimon's default empty value stats are misdecoded by Java 0.9, 4.2).
* The oracle's Java read path corrupts nested columns after the 1024th row of a read
  (``write_shapes.JAVA_NESTED_BATCH``): such reads are made in parts (``java_chunks``), and any
  Java read of nested columns with 1024+ rows fails the test as a harness error.
* Data adapters (``write_shapes``): the ROW values of ``p_types*`` (every type, TIMESTAMP(7..9)
  beside TIMESTAMP(0..6)) are made ``java_safe`` (Java 0.9 misreads all-null ROWs and hangs on
  null ROWs with nested ROWs), in our input and in the reference alike.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.cli.main import main as paimon_main
from paimon_core.fsck import fsck
from tests.interop import oracle as orc
from tests.interop.conftest import _BUILD_INFO, Interop
from tests.interop.shapes import KIND
from tests.interop.test_read_interop import assert_same_lines
from tests.interop.write_shapes import (
    AFTER_STEPS,
    JAVA_APPEND,
    JAVA_COMPACT,
    JAVA_NESTED_BATCH,
    PRE_1970_NANOS,
    PYPAIMON_APPEND,
    WRITTEN,
    WriteShape,
    java_append,
    pypaimon_append,
)

pytestmark = pytest.mark.oracle

REPO = Path(__file__).resolve().parents[2]
BY_NAME = {ws.name: ws for ws in WRITTEN}
# (reason, regex of the Java error) of the documented engine failures
DEC18 = ("Java 0.9 cannot read pypaimon's parquet DECIMAL(p <= 18) (oracle README 4.3)",
         r"PlainValuesDictionary\$PlainBinaryDictionary")
NANO_INT64 = ("Java 0.9 cannot read pypaimon's parquet TIMESTAMP(7..9) (oracle README 4.4)",
              r"IllegalArgumentException: Unexpected type: INT64")


class BuildError(RuntimeError):
    pass


def cli(argv: list[str]) -> tuple[int, str, str]:
    """``paimon ARGV`` in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = paimon_main(argv)
    return rc, out.getvalue(), err.getvalue()


def cli_ok(argv: list[str]) -> list[str]:
    rc, out, err = cli(argv)
    if rc != 0:
        raise BuildError(f"`paimon {' '.join(argv)}` exited with {rc}: {err[-3000:]}")
    return out.splitlines()


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def _slug(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", key)


# ---------------------------------------------------------------------------------------------
# the build


@dataclass
class Built:
    root: Path
    ours: dict[str, list[list[int]]]  # shape -> snapshot ids created by each of our writes
    write_errors: dict[str, str]  # shape -> why our create/write failed (its tests fail)
    records: dict[str, dict[str, Any]]  # command key -> the oracle's status record
    build_seconds: float
    batch_seconds: dict[str, float]
    reused: bool

    def wh(self, phase: str) -> str:
        return str(self.root / f"wh-{phase}")

    def _parts(self, key: str) -> list[str]:
        if key in self.records:
            return [key]
        parts = [k for k in self.records if k.startswith(key + "|chunk")]
        if not parts:
            raise orc.OracleError(f"no oracle command {key!r} in the build")
        return parts

    def output(self, key: str, ws: WriteShape | None = None) -> list[str] | None:
        """Lines of a read-like command (the union of its chunks); None when the engine
        failed (see ``error``). With ``ws``: a Java read of nested columns must stay below
        JAVA_NESTED_BATCH rows (the oracle's Java read path corrupts the rows after)."""
        out: list[str] = []
        parts = self._parts(key)
        for k in parts:
            if self.records[k].get("status") != "ok":
                return None
            lines = (self.root / "out" / f"{_slug(k)}.jsonl").read_text("utf-8").splitlines()
            if ws is not None and ws.nested and "|java|" in k and len(lines) >= JAVA_NESTED_BATCH:
                pytest.fail(f"harness: Java read {k} returned {len(lines)} rows with nested "
                            f"columns (>= {JAVA_NESTED_BATCH}: corrupted by the oracle's Java "
                            "read path); give the shape java_chunks", pytrace=False)
            out.extend(lines)
        return out if len(parts) == 1 else sorted(out)

    def error(self, key: str) -> str:
        errors = [f"{r.get('status')}: {r.get('error')}" for r in
                  (self.records[k] for k in self._parts(key)) if r.get("status") != "ok"]
        return errors[0] if errors else "ok"

    def model(self, ws: WriteShape, step: str) -> list[str]:
        return (self.root / "model" / ws.name / f"{step}.jsonl").read_text("utf-8").splitlines()


def written(ws: WriteShape, built: Built) -> None:
    """Fails the test when our writer could not write this shape."""
    if ws.name in built.write_errors:
        pytest.fail(f"our writer failed on {ws.name}: {built.write_errors[ws.name]}",
                    pytrace=False)


def b_key(engine: str, ws: WriteShape, snap: int | None, f: int | None) -> str:
    return f"B|{engine}|{ws.name}|{'latest' if snap is None else f's{snap}'}|" + (
        "all" if f is None else f"f{f}")


def c_key(what: str, ws: WriteShape, step: str, f: int | None = None) -> str:
    return f"C|{what}|{ws.name}|{step}|" + ("all" if f is None else f"f{f}")


def _write_ours(ws: WriteShape, root: Path, wh: str) -> list[list[int]]:
    inputs = root / "inputs" / ws.name
    inputs.mkdir(parents=True, exist_ok=True)
    schema = inputs / "schema.json"
    schema.write_text(json.dumps(ws.schema, ensure_ascii=False), "utf-8")
    cli_ok(["create", "--warehouse", wh, "--table", ws.table, "--schema", str(schema)])
    ids = []
    for k, w in enumerate(ws.writes):
        path = _jsonl(inputs / f"write-{k}.jsonl", ws.input_rows(w))
        argv = ["write", "--warehouse", wh, "--table", ws.table, "--input", str(path),
                "--commit-user", "paimon-core-interop"]
        if w.kind:
            argv += ["--kind", KIND]
        if w.overwrite is not None:  # last: --overwrite takes an optional value
            argv += ["--overwrite"] + ([json.dumps(w.overwrite)] if w.overwrite else [])
        ids.append(json.loads(cli_ok(argv)[0])["snapshots"])
    return ids


def _our_lines(wh: str, ws: WriteShape, snap: int | None = None,
               filters: tuple[str, ...] = ()) -> list[str]:
    argv = ["read", "--warehouse", wh, "--table", ws.table]
    if snap is not None:
        argv += ["--snapshot", str(snap)]
    for f in filters:
        argv += ["--filter", f]
    return cli_ok(argv)


class Plan:
    """Oracle commands by batch, each with a key (outputs land in out/<key>.jsonl)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.batches: dict[str, list[dict[str, Any]]] = {}
        self.keys: dict[str, list[str]] = {}

    def add(self, batch: str, key: str | None, cmd: dict[str, Any]) -> None:
        if key is not None and cmd["cmd"] in ("read", "snapshots"):
            cmd = {**cmd, "output": str(self.root / "out" / f"{_slug(key)}.jsonl")}
        self.batches.setdefault(batch, []).append(cmd)
        self.keys.setdefault(batch, []).append(key or f"{batch}#{len(self.keys[batch])}")

    def read(self, batch: str, key: str, engine: str, wh: str, ws: WriteShape,
             snap: int | None = None, f: int | None = None, compat: bool = False) -> None:
        cmd: dict[str, Any] = {"cmd": "read", "engine": engine, "warehouse": wh,
                               "table": ws.table}
        if snap is not None:
            cmd["snapshot"] = snap
        if f is not None:
            cmd["filter"] = list(ws.filter_exprs(f))
        if compat:
            cmd["pypaimon_compat"] = True
        if engine == "java" and f is None and ws.java_chunks:
            for i, chunk in enumerate(ws.java_chunks):  # see write_shapes.JAVA_NESTED_BATCH
                self.add(batch, f"{key}|chunk{i}", {**cmd, "filter": [chunk]})
        else:
            self.add(batch, key, cmd)


def _plan_b(plan: Plan, ws: WriteShape, wh: str, snaps: list[int]) -> None:
    for engine in ("java", "pypaimon"):
        batch = f"read-{engine}"
        for snap in [*snaps, None]:
            for f in [None, *ws.filters] if snap is not None else [None]:
                plan.read(batch, b_key(engine, ws, snap, f), engine, wh, ws, snap, f)
        plan.add(batch, f"B|{engine}|{ws.name}|snapshots",
                 {"cmd": "snapshots", "engine": engine, "warehouse": wh, "table": ws.table})


def _plan_c(plan: Plan, ws: WriteShape, wh: str, root: Path) -> None:
    """Java append, Java compaction, pypaimon append on our table; reads after each."""
    before = _our_lines(wh, ws)
    jrows, after_java = java_append(ws, before)
    prows, after_py = pypaimon_append(ws, after_java)
    model = root / "model" / ws.name
    model.mkdir(parents=True, exist_ok=True)
    for step, lines in ((JAVA_APPEND, after_java), (JAVA_COMPACT, after_java),
                        (PYPAIMON_APPEND, after_py)):
        (model / f"{step}.jsonl").write_text("".join(x + "\n" for x in lines), "utf-8")
    base = {"warehouse": wh, "table": ws.table}
    jw: dict[str, Any] = {"cmd": "write", "engine": "java", **base,
                          "input": str(_jsonl(model / "java-rows.jsonl", jrows))}
    if ws.primary_keys and not ws.options.get("rowkind.field"):
        jw["kind"] = KIND
    steps: list[tuple[str, dict[str, Any] | None]] = [
        (JAVA_APPEND, jw),
        (JAVA_COMPACT, {"cmd": "compact", "engine": "java", **base}),
        (PYPAIMON_APPEND, {"cmd": "write", "engine": "pypaimon", **base, "pypaimon_compat": True,
                           "input": str(_jsonl(model / "pypaimon-rows.jsonl", prows))}),
    ]
    for step, cmd in steps:
        if cmd is not None:
            plan.add("after", c_key("op", ws, step), cmd)
        plan.add("after", c_key("snapshots", ws, step),
                 {"cmd": "snapshots", "engine": "java", **base})
        plan.read("after", c_key("java", ws, step), "java", wh, ws)
        plan.read("after", c_key("pypaimon", ws, step), "pypaimon", wh, ws, compat=True)
        if step == JAVA_APPEND:
            for f in ws.filters:
                if not ws.java_filter_unsupported(f):
                    plan.read("after", c_key("java", ws, step, f), "java", wh, ws, f=f)
                plan.read("after", c_key("pypaimon", ws, step, f), "pypaimon", wh, ws, f=f,
                          compat=True)


def build(root: Path) -> tuple[dict[str, list[list[int]]], dict[str, str],
                                dict[str, dict[str, Any]], dict[str, float]]:
    for sub in ("inputs", "out", "model", "wh-ours", "wh-after"):
        shutil.rmtree(root / sub, ignore_errors=True)
    (root / "out").mkdir(parents=True)
    wh_ours, wh_after = str(root / "wh-ours"), str(root / "wh-after")
    t0 = time.monotonic()
    ours: dict[str, list[list[int]]] = {}
    errors: dict[str, str] = {}
    for ws in WRITTEN:
        try:
            ours[ws.name] = _write_ours(ws, root, wh_ours)
        except BuildError as e:
            errors[ws.name] = str(e)
    seconds = {"our-writes": round(time.monotonic() - t0, 1)}
    shutil.copytree(wh_ours, wh_after)
    plan = Plan(root)
    for ws in WRITTEN:
        if ws.name in ours:
            _plan_b(plan, ws, wh_ours, [ids[-1] for ids in ours[ws.name]])
            _plan_c(plan, ws, wh_after, root)
    results = orc.run_batches(plan.batches, root)
    records: dict[str, dict[str, Any]] = {}
    for name, r in results.items():
        for rec in r.records:
            records[plan.keys[name][rec["i"] - 1]] = rec
        seconds[name] = round(r.seconds, 1)
    return ours, errors, records, seconds


def _fingerprint() -> str:
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    files = [here / n for n in ("shapes.py", "write_shapes.py", "oracle.py",
                                "test_write_interop.py")]
    files += sorted((REPO / "paimon_core").rglob("*.py"))
    files += [orc.ORACLE_PY, orc.ORACLE.parent / "requirements.txt"]
    for p in files:
        h.update(str(p).encode())
        h.update(p.read_bytes() if p.is_file() else b"-")
    return h.hexdigest()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    orc.ensure_ready()
    cache = os.environ.get("PAIMON_INTEROP_CACHE")
    root = Path(cache) / "write" if cache else tmp_path_factory.mktemp("write-interop")
    root.mkdir(parents=True, exist_ok=True)
    manifest = root / "manifest.json"
    fp = _fingerprint()
    if cache and manifest.is_file():
        m = json.loads(manifest.read_text())
        if m.get("fingerprint") == fp:
            yield Built(root, m["ours"], m["write_errors"], m["records"], m["build_seconds"],
                        m["batch_seconds"], reused=True)
            return
    manifest.unlink(missing_ok=True)
    t0 = time.monotonic()
    ours, errors, records, seconds = build(root)
    total = round(time.monotonic() - t0, 1)
    manifest.write_text(json.dumps({"fingerprint": fp, "ours": ours, "write_errors": errors,
                                    "records": records, "build_seconds": total,
                                    "batch_seconds": seconds}))
    _BUILD_INFO.append(f"write-interop fixture: {len(WRITTEN)} tables written by paimon_core, "
                 f"{len(records)} oracle commands, built in {total} s ({seconds}) under {root}")
    yield Built(root, ours, errors, records, total, seconds, reused=False)


# ---------------------------------------------------------------------------------------------
# phase B: Java, pypaimon and the engines' own tables against our read of our tables

B_CASES = [(ws, snap, f) for ws in WRITTEN for snap in [*range(1, len(ws.writes) + 1), None]
           for f in ([None, *ws.filters] if snap is not None else [None])]


def _b_id(c: tuple[WriteShape, int | None, int | None]) -> str:
    ws, snap, f = c
    return f"{ws.name}-{'latest' if snap is None else f's{snap}'}-" + (
        "all" if f is None else f"f{f}")


@pytest.mark.parametrize("ws", WRITTEN, ids=[s.name for s in WRITTEN])
def test_our_snapshots(ws: WriteShape, built: Built) -> None:
    """One snapshot per write, APPEND or OVERWRITE; Java and pypaimon list them as we do."""
    written(ws, built)
    assert built.ours[ws.name] == [[k] for k in range(1, len(ws.writes) + 1)]
    ours = [json.loads(x) for x in cli_ok(["snapshots", "--warehouse", built.wh("ours"),
                                           "--table", ws.table])]
    kinds = ["OVERWRITE" if w.overwrite is not None else "APPEND" for w in ws.writes]
    assert [s["commit_kind"] for s in ours] == kinds
    for engine in ("java", "pypaimon"):
        theirs = built.output(f"B|{engine}|{ws.name}|snapshots")
        assert theirs is not None, built.error(f"B|{engine}|{ws.name}|snapshots")
        assert [json.loads(x) for x in theirs] == ours, engine


@pytest.mark.parametrize("case", B_CASES, ids=[_b_id(c) for c in B_CASES])
def test_read(case: tuple[WriteShape, int | None, int | None], built: Built,
              interop: Interop) -> None:
    ws, snap, f = case
    filters = () if f is None else ws.filter_exprs(f)
    written(ws, built)
    ours = _our_lines(built.wh("ours"), ws, snap, filters)
    what = f"{_b_id(case)} {list(filters)}"
    if f is None:
        assert ours, f"{what}: our read of our table is empty"
    elif snap == len(ws.writes):
        everything = _our_lines(built.wh("ours"), ws, snap)
        assert 0 < len(ours) < len(everything), (
            f"{what}: a useful filter keeps some rows and drops some ({len(ours)} of "
            f"{len(everything)})")
    # 1. independent of our files: the writing engine's read of its own table of this shape
    ref = ws.reference_case(snap, f)
    if ref is not None:
        expected = ws.reference_lines(interop.expected_lines(ref))
        assert_same_lines(ours, expected, f"{what}: ours vs {ws.base.writer}'s own table")
    # 2. pypaimon 2.1 reads our table, no compat flag
    py = built.output(b_key("pypaimon", ws, snap, f))
    assert py is not None, f"{what}: pypaimon failed on our table: " + built.error(
        b_key("pypaimon", ws, snap, f))
    assert_same_lines(ours, py, f"{what}: ours vs pypaimon reading our table")
    # 3. Java 0.9 reads our table (value filters: pruning by our stats and bucket hashes)
    key = b_key("java", ws, snap, f)
    java = built.output(key, ws)
    if java is None:
        err = built.error(key)
        if f is not None and ws.java_filter_unsupported(f):
            assert err.startswith("unsupported:"), err
            return
        pytest.fail(f"{what}: Java failed on our table: {err}", pytrace=False)
    assert_same_lines(ours, java, f"{what}: ours vs Java reading our table")


# ---------------------------------------------------------------------------------------------
# phase C: Java appends and compacts our table, pypaimon appends; everyone reads the result


def _has_decimal18(ws: WriteShape) -> bool:
    return any(int(p) <= 18 for p in re.findall(r"DECIMAL\((\d+)", json.dumps(ws.schema)))


def _has_nanos(ws: WriteShape) -> bool:
    return bool(re.search(r"TIMESTAMP\([789]\)", json.dumps(ws.schema)))


def _after_snapshot(ws: WriteShape, built: Built, step: str) -> list[dict[str, Any]]:
    lines = built.output(c_key("snapshots", ws, step))
    assert lines is not None
    return [json.loads(x) for x in lines]


def java_after_errors(ws: WriteShape, step: str) -> list[tuple[str, str]]:
    """Documented Java 0.9 failures (reason, error text) allowed after ``step`` on ``ws``."""
    allowed = []
    if ws.pre_1970_nanos:  # from the Java append on, Java's own INT96 files are in the table
        allowed.append(PRE_1970_NANOS)
    if step == PYPAIMON_APPEND:
        allowed += [DEC18] if _has_decimal18(ws) else []
        allowed += [NANO_INT64] if _has_nanos(ws) else []
    return allowed


def _check_java_error(err: str, allowed: list[tuple[str, str]], what: str) -> None:
    if not any(re.search(sig, err) for _, sig in allowed):
        pytest.fail(f"{what}: Java failed (no documented reason applies: {allowed}): {err}",
                    pytrace=False)


C_CASES = [(ws, step) for ws in WRITTEN for step in AFTER_STEPS]
CF_CASES = [(ws, f) for ws in WRITTEN for f in ws.filters]


@pytest.mark.parametrize("case", C_CASES, ids=[f"{w.name}-{s}" for w, s in C_CASES])
def test_after(case: tuple[WriteShape, str], built: Built) -> None:
    ws, step = case
    i = AFTER_STEPS.index(step)
    written(ws, built)
    what = f"{ws.name} after {step}"
    compacted = True
    for s in AFTER_STEPS[: i + 1]:
        op = c_key("op", ws, s)
        if built.records[op]["status"] != "ok":
            if s == JAVA_COMPACT:  # Java must read the table to compact it
                _check_java_error(built.error(op), java_after_errors(ws, s), f"{what}: {op}")
                compacted = False
            else:
                pytest.fail(f"{what}: {op} failed: {built.error(op)}", pytrace=False)
    snaps = _after_snapshot(ws, built, step)
    prev = len(ws.writes) if i == 0 else len(_after_snapshot(ws, built, AFTER_STEPS[i - 1]))
    assert [s["id"] for s in snaps] == list(range(1, len(snaps) + 1)), snaps
    kinds = [s["commit_kind"] for s in snaps[prev:]]
    if step == JAVA_APPEND:
        # Java's writer compacts on its own when our writes left enough level-0 files / small
        # files in a bucket (num-sorted-run.compaction-trigger, compaction.min.file-num)
        assert kinds in (["APPEND"], ["APPEND", "COMPACT"]), snaps
    elif step == JAVA_COMPACT:
        # an append table's compaction may find nothing to do (oracle README 2: the
        # coordinator only picks small files)
        allowed = [["COMPACT"]] + ([[]] if not ws.primary_keys else [])
        assert kinds in (allowed if compacted else [[]]), snaps
    else:
        assert kinds == ["APPEND"], snaps
    snap = snaps[-1]["id"]
    model = built.model(ws, step)
    assert model, "harness: empty model"
    ours = _our_lines(built.wh("after"), ws, snap)
    what += f" (snapshot {snap})"
    assert_same_lines(ours, model, f"{what}: ours vs model")
    py = built.output(c_key("pypaimon", ws, step))
    assert py is not None, built.error(c_key("pypaimon", ws, step))
    assert_same_lines(py, model, f"{what}: pypaimon (compat) vs model")
    java = built.output(c_key("java", ws, step), ws)
    if java is None:
        _check_java_error(built.error(c_key("java", ws, step)), java_after_errors(ws, step),
                          what)
        return
    assert_same_lines(java, model, f"{what}: Java vs model")


@pytest.mark.parametrize("case", CF_CASES, ids=[f"{w.name}-f{f}" for w, f in CF_CASES])
def test_after_java_append_filtered(case: tuple[WriteShape, int], built: Built) -> None:
    """Value filters on our files + Java's files: ours == Java == pypaimon, all a subset of
    the model (the unfiltered expected content)."""
    ws, f = case
    written(ws, built)
    snap = _after_snapshot(ws, built, JAVA_APPEND)[-1]["id"]
    filters = ws.filter_exprs(f)
    ours = _our_lines(built.wh("after"), ws, snap, filters)
    what = f"{ws.name} after {JAVA_APPEND} {list(filters)}"
    model = built.model(ws, JAVA_APPEND)
    assert ours and len(ours) < len(model), f"{what}: {len(ours)} of {len(model)} rows"
    assert not set(ours) - set(model), f"{what}: rows not in the model"
    py = built.output(c_key("pypaimon", ws, JAVA_APPEND, f))
    assert py is not None, built.error(c_key("pypaimon", ws, JAVA_APPEND, f))
    assert_same_lines(ours, py, f"{what}: ours vs pypaimon")
    if ws.java_filter_unsupported(f):
        return  # not run (oracle exit 3, checked in test_read)
    java = built.output(c_key("java", ws, JAVA_APPEND, f), ws)
    if java is None:
        _check_java_error(built.error(c_key("java", ws, JAVA_APPEND, f)),
                          java_after_errors(ws, JAVA_APPEND), what)
        return
    assert_same_lines(ours, java, f"{what}: ours vs Java")


@pytest.mark.parametrize("ws", WRITTEN, ids=[s.name for s in WRITTEN])
def test_fsck(ws: WriteShape, built: Built) -> None:
    """Our table and the copy Java and pypaimon wrote on: every snapshot checks out."""
    written(ws, built)
    for phase in ("ours", "after"):
        table = FileSystemCatalog(built.wh(phase)).get_table(ws.table)
        report = fsck(table, deep=True)
        assert report.ok, (phase, [f.to_json() for f in report.findings][:10])
        assert len(report.snapshot_ids) == (len(ws.writes) if phase == "ours"
                                            else len(_after_snapshot(ws, built,
                                                                     PYPAIMON_APPEND)))
