"""Session fixture of the interop suite: builds every shape with the oracle, once.

All warehouses are written in ONE oracle batch per writing engine (one JVM for all Java work,
one process for pypaimon; the two run concurrently), and the same batches record the expected
output of every case, read back by the engine that wrote the table:

* ``read [--snapshot N] [--filter ...]`` for every snapshot that still exists (after expiry:
  the retained ones) and for the latest, unfiltered and with each filter set of the shape;
* ``snapshots``;
* ``incremental --mode stream`` for (n-1, n] of every retained snapshot and the whole range.

``PAIMON_INTEROP_CACHE=DIR`` keeps the build in DIR and reuses it while the shapes, this
harness and the oracle are unchanged (for development; CI builds afresh in a temp dir).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.interop import oracle as orc
from tests.interop.shapes import (
    KIND,
    SHAPES,
    Compact,
    Expire,
    IncrementalCase,
    ReadCase,
    Shape,
    Write,
    incremental_cases,
    read_cases,
    snapshots_file,
)

MANIFEST = "manifest.json"


@dataclass
class Interop:
    root: Path
    build_seconds: float
    batch_seconds: dict[str, float]
    reused: bool

    def warehouse(self, shape: Shape) -> Path:
        return self.root / f"wh-{_group(shape)}"

    def expected_lines(self, case: ReadCase | IncrementalCase) -> list[str]:
        return _lines(self.root / case.expected_file)

    def expected_snapshots(self, shape: Shape) -> list[dict[str, Any]]:
        return [json.loads(x) for x in _lines(self.root / snapshots_file(shape))]


def _lines(path: Path) -> list[str]:
    if not path.is_file():
        raise orc.OracleError(f"expected-output file {path} was not written")
    return path.read_text(encoding="utf-8").splitlines()


def _group(shape: Shape) -> str:
    return shape.writer


def _fingerprint() -> str:
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for p in (here / "shapes.py", here / "oracle.py", Path(__file__).resolve(), orc.ORACLE_PY,
              orc.ORACLE.parent / "requirements.txt"):
        h.update(p.read_bytes() if p.is_file() else b"-")
    return h.hexdigest()


def _commands(shape: Shape, root: Path) -> list[dict[str, Any]]:
    """Create, steps (each followed by a snapshots listing), then the expected outputs."""
    wh = str(root / f"wh-{_group(shape)}")
    inputs = root / "inputs" / shape.name
    inputs.mkdir(parents=True, exist_ok=True)
    (root / "expected" / shape.name).mkdir(parents=True, exist_ok=True)
    (inputs / "schema.json").write_text(json.dumps(shape.schema, ensure_ascii=False),
                                        encoding="utf-8")
    base = {"warehouse": wh, "table": shape.table}
    compat = shape.mixed

    def on(engine: str) -> dict[str, Any]:
        d: dict[str, Any] = {**base, "engine": engine}
        if engine == "pypaimon" and compat:
            d["pypaimon_compat"] = True
        return d

    first = shape.step_engine(shape.steps[0])
    cmds: list[dict[str, Any]] = [{"cmd": "create", **on(first),
                                   "schema": str(inputs / "schema.json")}]
    for k, step in enumerate(shape.steps):
        engine = shape.step_engine(step)
        if isinstance(step, Write):
            rows = step.rows()
            path = inputs / f"step-{k}.jsonl"
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                            encoding="utf-8")
            cmd: dict[str, Any] = {"cmd": "write", **on(engine), "input": str(path)}
            if step.kind:
                cmd["kind"] = KIND
            if step.overwrite is not None:
                cmd["overwrite"] = step.overwrite if step.overwrite else ""
            cmds.append(cmd)
        elif isinstance(step, Compact):
            cmds.append({"cmd": "compact", **on("java")})
        elif isinstance(step, Expire):
            cmds.append({"cmd": "expire", **on("java"), "retain_max": step.retain_max})
        cmds.append({"cmd": "snapshots", **on(shape.writer),
                     "output": str(inputs / f"after-step-{k}.snapshots.jsonl")})
    reader = on(shape.writer)
    for rc in read_cases(shape):
        c: dict[str, Any] = {"cmd": "read", **reader, "output": str(root / rc.expected_file)}
        if rc.snapshot is not None:
            c["snapshot"] = rc.snapshot
        if rc.filters:
            c["filter"] = list(rc.filters)
        cmds.append(c)
    cmds.append({"cmd": "snapshots", **reader, "output": str(root / snapshots_file(shape))})
    for ic in incremental_cases(shape):
        cmds.append({"cmd": "incremental", **reader, "from": ic.start, "to": ic.end,
                     "mode": "stream", "output": str(root / ic.expected_file)})
    return cmds


def _check_declared_snapshots(shape: Shape, root: Path) -> list[str]:
    problems = []
    for k, declared in enumerate(shape.snapshots_after_steps()):
        path = root / "inputs" / shape.name / f"after-step-{k}.snapshots.jsonl"
        actual = [json.loads(x)["id"] for x in _lines(path)]
        if actual != declared:
            kinds = [json.loads(x)["commit_kind"] for x in _lines(path)]
            problems.append(f"{shape.name}: after step {k} ({type(shape.steps[k]).__name__}) "
                            f"snapshots are {actual} {kinds}, shapes.py declares {declared}")
    return problems


def build(root: Path) -> dict[str, float]:
    """Builds every shape into ``root``; returns the wall time of each batch."""
    for sub in ("inputs", "expected", "wh-java", "wh-pypaimon"):
        shutil.rmtree(root / sub, ignore_errors=True)
    groups: dict[str, list[dict[str, Any]]] = {}
    for shape in SHAPES:
        groups.setdefault(_group(shape), []).extend(_commands(shape, root))
    results = orc.run_batches(groups, root)
    problems = []
    for r in results.values():
        for f in r.failures():
            problems.append(f"batch {r.name} command {f.get('i')} ({f.get('op')} "
                            f"{f.get('engine')}): {f.get('status')}: {f.get('error')}")
    if not problems:
        for shape in SHAPES:
            problems.extend(_check_declared_snapshots(shape, root))
    if problems:
        raise orc.OracleError("building the interop warehouses failed:\n" + "\n".join(problems))
    return {name: round(r.seconds, 1) for name, r in results.items()}


@pytest.fixture(scope="session")
def interop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Interop]:
    orc.ensure_ready()
    cache = os.environ.get("PAIMON_INTEROP_CACHE")
    root = Path(cache) if cache else tmp_path_factory.mktemp("interop")
    root.mkdir(parents=True, exist_ok=True)
    fp = _fingerprint()
    manifest = root / MANIFEST
    if cache and manifest.is_file():
        m = json.loads(manifest.read_text())
        if m.get("fingerprint") == fp and m.get("complete"):
            yield Interop(root, m["build_seconds"], m["batch_seconds"], reused=True)
            return
    manifest.unlink(missing_ok=True)
    t0 = time.monotonic()
    batch_seconds = build(root)
    seconds = round(time.monotonic() - t0, 1)
    manifest.write_text(json.dumps({"fingerprint": fp, "complete": True,
                                    "build_seconds": seconds, "batch_seconds": batch_seconds}))
    _BUILD_INFO.append(f"interop fixture: built {len(SHAPES)} tables in {seconds} s "
                       f"(batches: {batch_seconds}) under {root}")
    yield Interop(root, seconds, batch_seconds, reused=False)


_BUILD_INFO: list[str] = []


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in _BUILD_INFO:
        terminalreporter.write_line(line)
