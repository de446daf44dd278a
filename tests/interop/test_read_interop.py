"""Our reader against the engines that wrote the tables: Java Paimon 0.9 and pypaimon 2.1.

Every case runs OUR CLI in-process (``paimon_core.cli.main.main(argv)``) and compares its
stdout, line for line, with the canonical output of the writing engine's own read recorded by
the session fixture (``conftest.py``; shapes in ``shapes.py``):

* ``read`` at every retained snapshot and at the latest, unfiltered and with each filter set;
* ``incremental --from N --to M`` (streaming semantics, ``_kind`` first);
* ``snapshots`` (compared as JSON objects).

Before comparing, each case checks that its expectation can tell a broken reader from a
working one (an unfiltered read, an APPEND delta, a filter at the latest snapshot must have
rows; a filter must drop some), so that two empty outputs never pass as agreement.
"""

from __future__ import annotations

import importlib
import json
from collections import Counter
from collections.abc import Callable

import pytest

from tests.interop.conftest import Interop
from tests.interop.shapes import (
    INCREMENTAL_CASES,
    READ_CASES,
    SHAPES,
    IncrementalCase,
    ReadCase,
    Shape,
)

pytestmark = pytest.mark.oracle

MAX_SHOWN = 8


def _cli_main() -> Callable[[list[str]], int]:
    try:
        mod = importlib.import_module("paimon_core.cli.main")
    except ImportError as e:
        pytest.fail(f"our CLI is missing: cannot import paimon_core.cli.main ({e!r})",
                    pytrace=False)
    main = getattr(mod, "main", None)
    if not callable(main):
        pytest.fail("paimon_core.cli.main has no main(argv) function", pytrace=False)
    return main  # type: ignore[no-any-return]


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    """Runs ``paimon ARGV`` in-process; returns its stdout lines (fails on a non-zero exit)."""
    main = _cli_main()
    capsys.readouterr()
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse errors
        rc = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    if rc != 0:
        pytest.fail(f"`paimon {' '.join(argv)}` exited with {rc}; stderr:\n{err[-4000:]}",
                    pytrace=False)
    return out.splitlines()


def assert_same_lines(actual: list[str], expected: list[str], what: str) -> None:
    if actual == expected:
        return
    exp_c, act_c = Counter(expected), Counter(actual)
    missing = list((exp_c - act_c).elements())
    extra = list((act_c - exp_c).elements())
    msg = [f"{what}: {len(actual)} lines from paimon_core, {len(expected)} from the engine"]
    if not missing and not extra:
        msg.append("same lines in a different order (our output must be sorted by code point)")
    if missing:
        msg.append(f"{len(missing)} engine lines missing from ours, e.g.:")
        msg.extend("  - " + x[:400] for x in missing[:MAX_SHOWN])
    if extra:
        msg.append(f"{len(extra)} lines of ours not in the engine's output, e.g.:")
        msg.extend("  + " + x[:400] for x in extra[:MAX_SHOWN])
    msg.extend(_field_diffs(missing, extra))
    pytest.fail("\n".join(msg), pytrace=False)


def _field_diffs(missing: list[str], extra: list[str]) -> list[str]:
    """Pairs engine/our lines that agree on their first two keys and names the differing
    fields (the lines are often too long to spot the difference)."""
    def key(obj: dict[str, object]) -> str:
        return json.dumps(list(obj.items())[:2], ensure_ascii=False)

    ours: dict[str, dict[str, object]] = {}
    for line in extra:
        obj = json.loads(line)
        ours.setdefault(key(obj), obj)
    counts: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for line in missing:
        eng = json.loads(line)
        our = ours.get(key(eng))
        if our is None:
            continue
        for k in eng.keys() | our.keys():
            if eng.get(k, "<absent>") != our.get(k, "<absent>"):
                counts[k] += 1
                examples.setdefault(k, f"engine {json.dumps(eng.get(k, '<absent>'))[:150]} "
                                       f"vs ours {json.dumps(our.get(k, '<absent>'))[:150]}")
    if not counts:
        return []
    out = ["differing fields of paired lines (same first two keys):"]
    out.extend(f"  {k}: {n} lines, e.g. {examples[k]}" for k, n in counts.most_common(12))
    return out


def _base_argv(cmd: str, interop: Interop, shape: Shape) -> list[str]:
    return [cmd, "--warehouse", str(interop.warehouse(shape)), "--table", shape.table]


def _check_read_expectation(case: ReadCase, expected: list[str], interop: Interop) -> None:
    shape = case.shape
    if case.filter_idx is None:
        if not expected and case.snapshot not in shape.empty_snapshots:
            pytest.fail(f"harness: the engine's unfiltered read of {case.id} is empty",
                        pytrace=False)
    elif case.snapshot is None:
        unfiltered = interop.expected_lines(ReadCase(shape, None, None))
        if not expected or len(expected) >= len(unfiltered):
            pytest.fail(f"harness: filter {case.filters} of {shape.name} selects "
                        f"{len(expected)} of {len(unfiltered)} rows at the latest snapshot "
                        "(a useful filter keeps some rows and drops some)", pytrace=False)


@pytest.mark.parametrize("case", READ_CASES, ids=[c.id for c in READ_CASES])
def test_read(case: ReadCase, interop: Interop, capsys: pytest.CaptureFixture[str]) -> None:
    expected = interop.expected_lines(case)
    _check_read_expectation(case, expected, interop)
    argv = _base_argv("read", interop, case.shape)
    if case.snapshot is not None:
        argv += ["--snapshot", str(case.snapshot)]
    for f in case.filters:
        argv += ["--filter", f]
    assert_same_lines(run_cli(argv, capsys), expected, case.id)


@pytest.mark.parametrize("case", INCREMENTAL_CASES, ids=[c.id for c in INCREMENTAL_CASES])
def test_incremental(case: IncrementalCase, interop: Interop,
                     capsys: pytest.CaptureFixture[str]) -> None:
    expected = interop.expected_lines(case)
    snaps = {s["id"]: s for s in interop.expected_snapshots(case.shape)}
    appends = [snaps[i] for i in range(case.start + 1, case.end + 1)
               if i in snaps and snaps[i]["commit_kind"] == "APPEND"]
    if appends and not expected:
        pytest.fail(f"harness: the engine's incremental read {case.id} is empty although it "
                    f"spans APPEND snapshots {[s['id'] for s in appends]}", pytrace=False)
    argv = _base_argv("incremental", interop, case.shape)
    argv += ["--from", str(case.start), "--to", str(case.end)]
    assert_same_lines(run_cli(argv, capsys), expected, case.id)


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_snapshots(shape: Shape, interop: Interop, capsys: pytest.CaptureFixture[str]) -> None:
    expected = interop.expected_snapshots(shape)
    assert [s["id"] for s in expected] == shape.snapshot_ids()
    lines = run_cli(_base_argv("snapshots", interop, shape), capsys)
    try:
        actual = [json.loads(x) for x in lines]
    except ValueError as e:
        pytest.fail(f"`paimon snapshots` printed something that is not JSON lines: {e}",
                    pytrace=False)
    if actual != expected:
        shown = [f"  engine: {json.dumps(e, sort_keys=True)}\n  ours:   "
                 f"{json.dumps(a, sort_keys=True)}"
                 for e, a in zip(expected, actual) if e != a][:MAX_SHOWN]
        pytest.fail(f"snapshots of {shape.name} differ ({len(actual)} ours, {len(expected)} "
                    "engine):\n" + "\n".join(shown), pytrace=False)
