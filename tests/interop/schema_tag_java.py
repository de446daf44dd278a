"""Driver for ``java/SchemaTagOracle.java``: ALTER TABLE, tags and tag/snapshot reads done by
Paimon 0.9's own Java API (the oracle CLI has no alter or tag command)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.interop.java_harness import compile_java, run_java

SOURCE = Path(__file__).with_name("java") / "SchemaTagOracle.java"
SEP = "\u0001"


@dataclass
class Answer:
    ok: bool
    text: str
    rows: list[str]


def _type_json(t: Any) -> str:
    return json.dumps(t.to_json() if hasattr(t, "to_json") else t)


def add(name: str, type_json: Any, desc: str = "", first: bool = False, after: str = "") -> str:
    return SEP.join(["add", name, _type_json(type_json), desc, str(first).lower(), after])


def rename(old: str, new: str) -> str:
    return SEP.join(["rename", old, new])


def drop(name: str) -> str:
    return SEP.join(["drop", name])


def retype(name: str, type_json: Any) -> str:
    return SEP.join(["type", name, _type_json(type_json)])


def nullability(path: str, nullable: bool) -> str:
    return SEP.join(["null", path, str(nullable).lower()])


def column_comment(path: str, text: str) -> str:
    return SEP.join(["ccomment", path, text])


def set_option(key: str, value: str) -> str:
    return SEP.join(["set", key, value])


def remove_option(key: str) -> str:
    return SEP.join(["remove", key])


def move(name: str, kind: str, reference: str = "") -> str:
    return SEP.join(["move", name, kind, reference])


def comment(text: str) -> str:
    return SEP.join(["comment", text])


class SchemaTagJava:
    """Compiles the helper once; :meth:`run` sends a batch of commands to one JVM."""

    def __init__(self, workdir: Path) -> None:
        self.classpath = compile_java(workdir, SOURCE)

    def run(self, commands: list[list[str]]) -> list[Answer]:
        lines = run_java(self.classpath, "SchemaTagOracle", ["\t".join(c) for c in commands],
                         timeout=600, jvm_args=("-Duser.timezone=UTC",))
        answers: list[Answer] = []
        for line in lines:
            if line.startswith("R "):
                answers[-1].rows.append(line[2:])
            elif line.startswith("OK"):
                answers.append(Answer(True, line[3:], []))
            elif line.startswith("ERR"):
                answers.append(Answer(False, line[4:], []))
            else:
                raise AssertionError(f"unexpected output line {line!r}")
        assert len(answers) == len(commands), "\n".join(lines)
        return answers

    def alter(self, warehouse: Path, table: str, *changes: str) -> Answer:
        return self.run([["ALTER", str(warehouse), table, *changes]])[0]
