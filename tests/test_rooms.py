"""Size habits kept by the build (issue 29 scope 5): no module over 600 lines, no function over
80, no package over 12 modules and no new ``CoreOptions`` / ``TableLayout`` construction outside
their homes, except what ``tests/rooms_allow.toml`` lists with a ceiling and a reason; then the
checker itself (:mod:`tests.rooms`) on small trees written here, so each rule is seen to fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.rooms import (
    REPO,
    AllowList,
    AllowListError,
    Entry,
    Finding,
    check,
    load_allow_list,
    measure,
    parse_allow_list,
    render,
)

# -- the repository against its allow-list --------------------------------------------------


@pytest.fixture(scope="module")
def findings() -> list[Finding]:
    return check(REPO, load_allow_list())


def _of(findings: list[Finding], kind: str) -> str:
    return "\n".join(f.message for f in findings if f.kind == kind)


def test_modules_within_600_lines(findings: list[Finding]) -> None:
    assert not _of(findings, "module"), _of(findings, "module")


def test_functions_within_80_lines(findings: list[Finding]) -> None:
    assert not _of(findings, "function"), _of(findings, "function")


def test_packages_within_12_modules(findings: list[Finding]) -> None:
    assert not _of(findings, "package"), _of(findings, "package")


def test_options_and_layouts_built_only_where_listed(findings: list[Finding]) -> None:
    assert not _of(findings, "construction"), _of(findings, "construction")


def test_allow_list_file_is_sound() -> None:
    allow = load_allow_list()
    # every entry is a real exception today (the checks above would say otherwise), and the
    # list covers all four kinds, so a broken loader cannot pass by reading nothing
    assert allow.module and allow.function and allow.package and allow.construction
    assert all(e.reason.strip() for kind in ("module", "function", "package", "construction")
               for e in allow.of(kind).values())


# -- the checker on small trees -------------------------------------------------------------

def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _module(lines: int) -> str:
    return "x = 1\n" * lines


def _function(name: str, lines: int, indent: str = "") -> str:
    body = f"{indent}    x = 1\n" * (lines - 1)
    return f"{indent}def {name}() -> None:\n{body}"


def _messages(root: Path, allow: AllowList | None = None) -> list[str]:
    return [f.message for f in check(root, allow or AllowList())]


def test_a_module_of_601_lines_fails_and_600_passes(tmp_path: Path) -> None:
    _write(tmp_path, "pipelines/big.py", _module(601))
    _write(tmp_path, "pipelines/fits.py", _module(600))
    _write(tmp_path, "tests/ignored.py", _module(900))  # not a scanned tree
    assert _messages(tmp_path) == [
        "pipelines/big.py: module of 601 lines > limit 600 "
        "(split it, or allow-list it with a reason)"]


def test_a_function_of_81_lines_fails_nested_async_and_methods_too(tmp_path: Path) -> None:
    decorated = "@first\n@second\n" + _function("decorated", 80)  # 82 lines with them
    nested = _function("outer", 3) + _function("inner", 81, "    ")
    method = "class Job:\n" + _function("run", 81, "    ").replace("def", "async def", 1)
    _write(tmp_path, "assets/a.py", _function("long", 81) + _function("fits", 80) + decorated)
    _write(tmp_path, "scripts/b.py", nested + method)
    assert _messages(tmp_path) == [
        "assets/a.py::long (line 1): function of 81 lines > limit 80 "
        "(split it, or allow-list it with a reason)",
        "scripts/b.py::Job.run (line 86): function of 81 lines > limit 80 "
        "(split it, or allow-list it with a reason)",
        "scripts/b.py::outer (line 1): function of 84 lines > limit 80 "
        "(split it, or allow-list it with a reason)",
        "scripts/b.py::outer.inner (line 4): function of 81 lines > limit 80 "
        "(split it, or allow-list it with a reason)",
    ]


def test_a_package_of_13_modules_fails_and_12_pass(tmp_path: Path) -> None:
    for i in range(13):
        _write(tmp_path, f"paimon_core/crowded/m{i}.py", "")
    for i in range(12):
        _write(tmp_path, f"paimon_core/roomy/m{i}.py", "")
    _write(tmp_path, "paimon_core/roomy/__init__.py", "")  # not a module of the count
    assert _messages(tmp_path) == [
        "paimon_core/crowded/: package of 13 modules > limit 12 "
        "(split it, or allow-list it with a reason)"]


def test_an_allow_listed_entry_may_not_grow(tmp_path: Path) -> None:
    allow = AllowList(module={"pipelines/big.py": Entry(700, "r")},
                      function={"pipelines/big.py::f": Entry(90, "r")},
                      package={"pipelines": Entry(13, "r")})
    for i in range(12):
        _write(tmp_path, f"pipelines/m{i}.py", "")
    _write(tmp_path, "pipelines/big.py", _function("f", 90) + _module(610))
    assert _messages(tmp_path, allow) == []  # at their ceilings
    _write(tmp_path, "pipelines/big.py", _function("f", 91) + _module(610))
    _write(tmp_path, "pipelines/m12.py", "")
    assert _messages(tmp_path, allow) == [
        "pipelines/big.py: module of 701 lines > its allow-list ceiling 700 (limit 600): "
        "the list only shrinks",
        "pipelines/big.py::f (line 1): function of 91 lines > its allow-list ceiling 90 "
        "(limit 80): the list only shrinks",
        "pipelines/: package of 14 modules > its allow-list ceiling 13 (limit 12): "
        "the list only shrinks",
    ]


def test_a_stale_entry_must_be_removed(tmp_path: Path) -> None:
    allow = AllowList(module={"pipelines/gone.py": Entry(700, "r"),
                              "pipelines/shrunk.py": Entry(700, "r")},
                      function={"pipelines/shrunk.py::f": Entry(90, "r")},
                      package={"pipelines/old": Entry(20, "r")})
    _write(tmp_path, "pipelines/shrunk.py", _function("f", 80) + _module(520))
    assert _messages(tmp_path, allow) == [
        "pipelines/gone.py: allow-listed module no longer exists (ceiling 700): "
        "remove it from the allow-list",
        "pipelines/shrunk.py: module of 600 lines is within the limit 600: "
        "remove it from the allow-list",
        "pipelines/shrunk.py::f (line 1): function of 80 lines is within the limit 80: "
        "remove it from the allow-list",
        "pipelines/old: allow-listed package no longer exists (ceiling 20): "
        "remove it from the allow-list",
    ]


def test_constructions_outside_their_homes_are_counted(tmp_path: Path) -> None:
    homes = ("from paimon_core.layout import TableLayout\n"
             "def of(p, s):\n    return TableLayout(p, s), TableLayout.of(p, s)\n")
    _write(tmp_path, "paimon_core/layout.py", homes)
    _write(tmp_path, "paimon_core/options.py", "o = CoreOptions({})\n")
    _write(tmp_path, "pipelines/old.py",
           "a = CoreOptions({})\nb = options.CoreOptions({})\nc = TableLayout.of(p, s)\n")
    _write(tmp_path, "assets/new.py", "import paimon_core.layout as l\nx = l.TableLayout(p, s)\n"
                                      "y = TableLayout.resolve(p)\nz = CoreOptionsView({})\n")
    allow = AllowList(construction={"pipelines/old.py::CoreOptions": Entry(1, "r"),
                                    "pipelines/old.py::TableLayout": Entry(1, "r"),
                                    "scripts/gone.py::CoreOptions": Entry(2, "r")})
    assert _messages(tmp_path, allow) == [
        "assets/new.py: 1 TableLayout( construction(s) outside paimon_core/layout.py > limit 0 "
        "(use the table's own, or allow-list it with a reason)",
        "pipelines/old.py: 2 CoreOptions( construction(s) outside paimon_core/options.py "
        "> its allow-list ceiling 1 (limit 0): the list only shrinks",
        "scripts/gone.py: no CoreOptions( construction left (ceiling 2): "
        "remove it from the allow-list",
    ]


def test_the_allow_list_format_and_its_errors() -> None:
    allow = parse_allow_list(
        '[modules."pipelines"]\n"big.py" = { lines = 700, reason = "scope 3" }\n'
        '[functions."pipelines/big.py"]\n"Job.run" = { lines = 90, reason = "scope 3" }\n'
        '[packages]\n"pipelines" = { modules = 30, reason = "scope 3" }\n'
        '[constructions."pipelines"]\n'
        '"big.py" = { CoreOptions = 2, TableLayout = 1, reason = "scope 1" }\n')
    assert allow == AllowList(
        module={"pipelines/big.py": Entry(700, "scope 3")},
        function={"pipelines/big.py::Job.run": Entry(90, "scope 3")},
        package={"pipelines": Entry(30, "scope 3")},
        construction={"pipelines/big.py::CoreOptions": Entry(2, "scope 1"),
                      "pipelines/big.py::TableLayout": Entry(1, "scope 1")})
    bad = {
        '[modules.p]\n"a.py" = { lines = 700 }\n': "[modules] p/a.py: every entry needs",
        '[modules.p]\n"a.py" = { lines = 700, reason = "TODO" }\n': "one-line reason",
        '[modules.p]\n"a.py" = { lines = 700, reason = "a\\nb" }\n': "one-line reason",
        '[constructions.p]\n"a.py" = { CoreOptions = 0, reason = "r" }\n': "'CoreOptions' must",
        '[modules.p]\n"a.py" = { size = 700, reason = "r" }\n': "unknown key(s) ['size']",
        '[functions."p/a.py"]\nf = { lines = "90", reason = "r" }\n': "p/a.py::f: 'lines'",
        '[module.p]\n"a.py" = { lines = 700, reason = "r" }\n': "unknown section [module]",
        '[constructions.p]\n"a.py" = { TableRead = 1, reason = "r" }\n': "counts only of",
    }
    for text, message in bad.items():
        with pytest.raises(AllowListError) as e:
            parse_allow_list(text)
        assert message in str(e.value), (text, str(e.value))


def test_render_prints_an_allow_list_that_passes_once_reasons_are_given(tmp_path: Path) -> None:
    for i in range(13):
        _write(tmp_path, f"pipelines/cdc/m{i}.py", "")
    _write(tmp_path, "pipelines/cdc/m0.py", _function("run", 85) + _module(600))
    _write(tmp_path, "assets/a.py", "o = CoreOptions({})\n")
    kept = AllowList(module={"pipelines/cdc/m0.py": Entry(900, "scope 3")})
    text = render(measure(tmp_path), kept)
    assert '"m0.py" = { lines = 685, reason = "scope 3" }' in text
    assert '"run" = { lines = 85, reason = "TODO" }' in text
    with pytest.raises(AllowListError, match="one-line reason"):
        parse_allow_list(text)
    allow = parse_allow_list(text.replace('"TODO"', '"why"'))
    assert _messages(tmp_path) != [] and _messages(tmp_path, allow) == []
