"""Driver for ``java/SystemTableOracle.java``: Paimon 0.9's system tables (``db.t$files`` ...)
read through Java's own catalog, and the same tables from ``table.inspect`` in one canonical
form, for column-by-column comparison."""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from tests.interop.java_harness import compile_java, run_java

SOURCE = Path(__file__).with_name("java") / "SystemTableOracle.java"

# Java's type strings of the system tables' metadata columns -> Arrow
JAVA_TYPES = {
    "BIGINT": pa.int64(),
    "INT": pa.int32(),
    "STRING": pa.string(),
    "TIMESTAMP(3)": pa.timestamp("ms"),
}


@dataclass
class SystemTable:
    """One answer of ``SYS``: Java's column names and types, and rows (values only)."""

    ok: bool
    error: str
    columns: list[tuple[str, str]]
    rows: list[list[Any]]


class SystemTableJava:
    """Compiles the helper once; :meth:`run` sends a batch of commands to one JVM."""

    def __init__(self, workdir: Path) -> None:
        self.classpath = compile_java(workdir, SOURCE)

    def run(self, commands: list[list[str]]) -> list[SystemTable]:
        lines = run_java(self.classpath, "SystemTableOracle", ["\t".join(c) for c in commands],
                         timeout=900, jvm_args=("-Duser.timezone=UTC",))
        out: list[SystemTable] = []
        for line in lines:
            if line.startswith("S "):
                out[-1].columns = [(n, t) for n, t in json.loads(line[2:])]
            elif line.startswith("R "):
                out[-1].rows.append(json.loads(line[2:])[1:])  # drop the row's own RowKind
            elif line.startswith("OK"):
                out.append(SystemTable(True, "", [], []))
            elif line.startswith("ERR"):
                out.append(SystemTable(False, line[4:], [], []))
            else:
                raise AssertionError(f"unexpected output line {line!r}")
        assert len(out) == len(commands), "\n".join(lines)[-3000:]
        return out

    @staticmethod
    def sys(warehouse: Path, table: str, name: str, **options: str) -> list[str]:
        return ["SYS", str(warehouse), f"{table}${name}",
                *(f"{k}={v}" for k, v in options.items())]

    @staticmethod
    def consumer(warehouse: Path, table: str, consumer_id: str, next_snapshot: int) -> list[str]:
        return ["CONSUMER", str(warehouse), table, consumer_id, str(next_snapshot)]

    @staticmethod
    def tag(warehouse: Path, table: str, name: str, snapshot: int,
            retained_millis: int | None = None) -> list[str]:
        cmd = ["TAG", str(warehouse), table, name, str(snapshot)]
        return cmd if retained_millis is None else [*cmd, str(retained_millis)]


def canonical(value: Any, type_: pa.DataType | None = None) -> Any:
    """An Arrow value in the helper's JSON form (timestamps as epoch micros, DATE as days,
    DECIMAL as its text, BYTES as hex, FLOAT through ``Float.toString``, NaN as a string)."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        delta = value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days
    if isinstance(value, dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 \
            + value.microsecond // 1000
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float):
        if type_ is not None and pa.types.is_float32(type_):
            value = float(str(np.float32(value)))
        if math.isnan(value):
            return "NaN"
        return value
    if isinstance(value, list):
        inner = type_.value_type if type_ is not None and pa.types.is_list(type_) else None
        return [canonical(v, inner) for v in value]
    return value


def canonical_java(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, list):
        return [canonical_java(v) for v in value]
    return value


def rows_of(table: pa.Table) -> list[list[Any]]:
    types = [f.type for f in table.schema]
    return [[canonical(v, t) for v, t in zip(row.values(), types)]
            for row in table.to_pylist()]


def sort_key(row: list[Any]) -> str:
    return json.dumps(row, default=str, sort_keys=True)
