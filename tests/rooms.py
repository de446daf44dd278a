"""Size habits kept by the build (issue 29 scope 5): the checker behind tests/test_rooms.py.

Every ``.py`` under ``paimon_core/ pipelines/ assets/ scripts/`` is parsed with :mod:`ast`;
a module over 600 lines, a function or method (nested and async ones too) whose ``def``
spans over 80 lines (decorators excluded), or a package directory holding over 12 modules
(``.py`` files besides ``__init__.py``) is a finding, unless ``tests/rooms_allow.toml`` lists
it with its size as a ceiling and a reason. The same file holds, per file, a ceiling on the
constructions of ``CoreOptions`` / ``TableLayout`` outside their homes (issue 29 scope 1: the
resolved table builds them once). The allow-list only shrinks: an entry past its ceiling
fails, and so does one whose file or function is gone or now under the limit.

``python -m tests.rooms`` prints the tree's current numbers in the allow-list's own format
(reasons kept from the allow-list, ``TODO`` for new entries, which the loader refuses).
"""

from __future__ import annotations

import ast
import json
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

REPO = Path(__file__).resolve().parents[1]
ALLOW_LIST = Path(__file__).resolve().with_name("rooms_allow.toml")
SCANNED = ("paimon_core", "pipelines", "assets", "scripts")
MODULE_LINES = 600
FUNCTION_LINES = 80
PACKAGE_MODULES = 12
# the constructions counted outside their homes, and those homes
HOMES = {"CoreOptions": "paimon_core/options.py", "TableLayout": "paimon_core/layout.py"}
CONSTRUCTORS = {"TableLayout": ("of",)}  # classmethods that construct, besides the call itself

Kind = Literal["module", "function", "package", "construction"]
# each section of the allow-list: (the key of its ceiling, the limit it allows past)
SECTIONS: dict[Kind, tuple[str, int]] = {
    "module": ("lines", MODULE_LINES),
    "function": ("lines", FUNCTION_LINES),
    "package": ("modules", PACKAGE_MODULES),
}
SECTION_NAMES: dict[str, Kind] = {"modules": "module", "functions": "function",
                                  "packages": "package", "constructions": "construction"}


class AllowListError(ValueError):
    """The allow-list file is malformed: names the entry and what is wrong with it."""


@dataclass(frozen=True)
class Entry:
    ceiling: int
    reason: str


@dataclass(frozen=True)
class AllowList:
    """Ceilings by kind; keys are repo-relative: ``a/b.py``, ``a/b.py::Cls.fn``, ``a/b``, and
    ``a/b.py::CoreOptions`` for a construction count."""

    module: dict[str, Entry] = field(default_factory=dict)
    function: dict[str, Entry] = field(default_factory=dict)
    package: dict[str, Entry] = field(default_factory=dict)
    construction: dict[str, Entry] = field(default_factory=dict)

    def of(self, kind: Kind) -> dict[str, Entry]:
        entries: dict[str, Entry] = getattr(self, kind)
        return entries


@dataclass(frozen=True)
class Finding:
    kind: Kind
    message: str


@dataclass
class Measures:
    """The tree's sizes: every module's and function's lines, every package's module count,
    every file's construction counts (keys as :class:`AllowList`'s)."""

    module: dict[str, int] = field(default_factory=dict)
    function: dict[str, int] = field(default_factory=dict)
    function_line: dict[str, int] = field(default_factory=dict)
    package: dict[str, int] = field(default_factory=dict)
    construction: dict[str, int] = field(default_factory=dict)

    def of(self, kind: Kind) -> dict[str, int]:
        sizes: dict[str, int] = getattr(self, kind)
        return sizes


# -- the allow-list file --------------------------------------------------------------------

def _entry(where: str, value: object, ceiling_key: str) -> tuple[int, str]:
    if not isinstance(value, dict):
        raise AllowListError(f"{where}: expected {{ {ceiling_key} = N, reason = \"...\" }}, "
                             f"got {value!r}")
    reason = value.get("reason")
    if not isinstance(reason, str) or reason.strip() in ("", "TODO") or "\n" in reason:
        raise AllowListError(f"{where}: every entry needs a one-line reason, got {reason!r}")
    unknown = set(value) - {ceiling_key, "reason"}
    if unknown:
        raise AllowListError(f"{where}: unknown key(s) {sorted(unknown)} (expected "
                             f"{ceiling_key!r} and 'reason')")
    ceiling = value.get(ceiling_key)
    if not isinstance(ceiling, int) or isinstance(ceiling, bool) or ceiling < 1:
        raise AllowListError(f"{where}: {ceiling_key!r} must be a positive integer, "
                             f"got {ceiling!r}")
    return ceiling, reason


def _constructions(where: str, key: str, value: object) -> dict[str, Entry]:
    if not isinstance(value, dict) or not isinstance(value.get("reason"), str):
        raise AllowListError(f"{where}: expected {{ CoreOptions = N, TableLayout = N, "
                             f"reason = \"...\" }}, got {value!r}")
    unknown = set(value) - {*HOMES, "reason"}
    if unknown or len(value) < 2:
        raise AllowListError(f"{where}: counts only of {sorted(HOMES)}, got {sorted(value)}")
    out = {}
    for name in sorted(set(value) - {"reason"}):
        ceiling, reason = _entry(where, {name: value[name], "reason": value["reason"]}, name)
        out[f"{key}::{name}"] = Entry(ceiling, reason)
    return out


def parse_allow_list(text: str, *, source: str = "allow-list") -> AllowList:
    """Parse the TOML allow-list: ``[modules."<package dir>"]`` ``"<file>" = { lines, reason }``,
    ``[functions."<module path>"]`` ``"<qualname>" = { lines, reason }``, ``[packages]``
    ``"<package dir>" = { modules, reason }``, ``[constructions."<package dir>"]``
    ``"<file>" = { CoreOptions, TableLayout, reason }``.

    Raises:
        AllowListError: naming the section and entry that is malformed.
    """
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise AllowListError(f"{source}: {e}") from e
    allow = AllowList()
    for section, groups in doc.items():
        kind = SECTION_NAMES.get(section)
        if kind is None:
            raise AllowListError(f"{source}: unknown section [{section}] (expected one of "
                                 f"{sorted(SECTION_NAMES)})")
        if kind == "package":
            groups = {"": groups}
        for group, entries in groups.items():
            if not isinstance(entries, dict):
                raise AllowListError(f"{source}: [{section}.{group}] must be a table")
            sep = "::" if kind == "function" else "/"
            for name, value in entries.items():
                key = f"{group}{sep}{name}" if group else name
                where = f"{source} [{section}] {key}"
                if kind == "construction":
                    allow.construction.update(_constructions(where, key, value))
                    continue
                ceiling, reason = _entry(where, value, SECTIONS[kind][0])
                allow.of(kind)[key] = Entry(ceiling, reason)
    return allow


def load_allow_list(path: Path = ALLOW_LIST) -> AllowList:
    return parse_allow_list(path.read_text(encoding="utf-8"), source=path.name)


# -- measuring the tree ---------------------------------------------------------------------

def _sources(root: Path) -> list[Path]:
    files = []
    for top in SCANNED:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).parts
            if not any(p.startswith(".") or p == "__pycache__" for p in rel):
                files.append(path)
    return files


def _line_count(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _functions(tree: ast.AST) -> list[tuple[str, int, int]]:
    """(qualname, first line of the ``def``, lines it spans) of every function, nested ones
    named ``outer.inner`` and methods ``Class.method``."""
    out: list[tuple[str, int, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    end = child.end_lineno if child.end_lineno is not None else child.lineno
                    out.append((name, child.lineno, end - child.lineno + 1))
                visit(child, name + ".")
            elif not isinstance(child, ast.expr):  # a def is a statement: no def in an expr
                visit(child, prefix)

    visit(tree, "")
    return out


def _construction_counts(tree: ast.AST) -> Counter[str]:
    """``CoreOptions(...)`` / ``x.CoreOptions(...)`` / ``TableLayout.of(...)`` calls by class."""
    counts: Counter[str] = Counter()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else (
            func.attr if isinstance(func, ast.Attribute) else None)
        if name in HOMES:
            counts[name] += 1
        elif isinstance(func, ast.Attribute):
            owner = func.value
            owner_name = owner.id if isinstance(owner, ast.Name) else (
                owner.attr if isinstance(owner, ast.Attribute) else None)
            if owner_name in CONSTRUCTORS and func.attr in CONSTRUCTORS[owner_name]:
                counts[owner_name] += 1
    return counts


def measure(root: Path) -> Measures:
    """Parse every scanned module under ``root`` (a repository checkout or a test's tree)."""
    m = Measures()
    homes = set(HOMES.values())
    for path in _sources(root):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=rel)
        m.module[rel] = _line_count(text)
        for name, line, span in _functions(tree):
            key = f"{rel}::{name}"
            if span > m.function.get(key, 0):  # a name defined twice: its longest body
                m.function[key], m.function_line[key] = span, line
        if path.name != "__init__.py":
            pkg = path.parent.relative_to(root).as_posix()
            m.package[pkg] = m.package.get(pkg, 0) + 1
        if rel not in homes and any(cls in text for cls in HOMES):
            for cls, n in _construction_counts(tree).items():
                m.construction[f"{rel}::{cls}"] = n
    return m


# -- checking sizes against the allow-list --------------------------------------------------

def _what(kind: Kind, key: str, size: int, m: Measures) -> str:
    if kind == "function":
        return f"{key} (line {m.function_line[key]}): function of {size} lines"
    if kind == "module":
        return f"{key}: module of {size} lines"
    if kind == "package":
        return f"{key}/: package of {size} modules"
    path, cls = key.split("::")
    return f"{path}: {size} {cls}( construction(s) outside {HOMES[cls]}"


def _check_kind(kind: Kind, m: Measures, allow: dict[str, Entry]) -> list[Finding]:
    limit = SECTIONS[kind][1] if kind in SECTIONS else 0
    fix = "use the table's own" if kind == "construction" else "split it"
    sizes = m.of(kind)
    found = []
    for key, size in sorted(sizes.items()):
        entry = allow.get(key)
        if entry is None and size > limit:
            found.append(Finding(kind, f"{_what(kind, key, size, m)} > limit {limit} "
                                       f"({fix}, or allow-list it with a reason)"))
        elif entry is not None and size > entry.ceiling:
            found.append(Finding(kind, f"{_what(kind, key, size, m)} > its allow-list ceiling "
                                       f"{entry.ceiling} (limit {limit}): the list only shrinks"))
    for key, entry in sorted(allow.items()):
        size = sizes.get(key, 0)
        if size == 0 and kind == "construction":
            path, cls = key.split("::")
            found.append(Finding(kind, f"{path}: no {cls}( construction left (ceiling "
                                       f"{entry.ceiling}): remove it from the allow-list"))
        elif size == 0:
            found.append(Finding(kind, f"{key}: allow-listed {kind} no longer exists (ceiling "
                                       f"{entry.ceiling}): remove it from the allow-list"))
        elif size <= limit:
            found.append(Finding(kind, f"{_what(kind, key, size, m)} is within the limit "
                                       f"{limit}: remove it from the allow-list"))
    return found


def check(root: Path, allow: AllowList) -> list[Finding]:
    """Every finding of the tree under ``root`` against ``allow``, one line each (empty: the
    tree keeps its habits)."""
    m = measure(root)
    kinds: tuple[Kind, ...] = ("module", "function", "package", "construction")
    return [f for kind in kinds for f in _check_kind(kind, m, allow.of(kind))]


# -- the current numbers, in the allow-list's format ----------------------------------------

def _toml_line(name: str, fields: dict[str, int], reason: str) -> str:
    counts = ", ".join(f"{k} = {v}" for k, v in fields.items())
    return f"{json.dumps(name)} = {{ {counts}, reason = {json.dumps(reason)} }}"


def _grouped(section: str, rows: dict[str, tuple[dict[str, int], str]], sep: str) -> list[str]:
    """``[section."<head>"]`` tables of ``"<name>" = {...}`` lines, one table per head."""
    out: list[str] = []
    by_head: dict[str, list[str]] = {}
    for key in sorted(rows, key=lambda k: k.rsplit(sep, 1)):
        head, name = key.rsplit(sep, 1)
        by_head.setdefault(head, []).append(_toml_line(name, *rows[key]))
    for head, lines in by_head.items():
        out += ["", f"[{section}.{json.dumps(head)}]", *lines]
    return out


def render(m: Measures, allow: AllowList) -> str:
    """The current offenders as allow-list TOML, reasons kept (``TODO`` where new)."""
    def reason(kind: Kind, key: str) -> str:
        return allow.of(kind).get(key, Entry(0, "TODO")).reason

    out: list[str] = []
    tables: tuple[tuple[Kind, str, str], ...] = (("module", "modules", "/"),
                                                 ("function", "functions", "::"))
    for kind, section, sep in tables:
        key_name, limit = SECTIONS[kind]
        out += _grouped(section, {k: ({key_name: n}, reason(kind, k))
                                  for k, n in m.of(kind).items() if n > limit}, sep)
    out += ["", "[packages]"]
    out += [_toml_line(k, {"modules": n}, reason("package", k))
            for k, n in sorted(m.package.items()) if n > PACKAGE_MODULES]
    per_file: dict[str, tuple[dict[str, int], str]] = {}
    for key, n in sorted(m.construction.items()):
        path, cls = key.split("::")
        counts, why = per_file.get(path, ({}, "TODO"))
        counts[cls] = n
        per_file[path] = (counts, why if key not in allow.construction else reason(
            "construction", key))
    out += _grouped("constructions", per_file, "/")
    return "\n".join(out).lstrip("\n") + "\n"


def main() -> int:
    allow = load_allow_list() if ALLOW_LIST.exists() else AllowList()
    sys.stdout.write(render(measure(REPO), allow))
    return 0


if __name__ == "__main__":
    sys.exit(main())
