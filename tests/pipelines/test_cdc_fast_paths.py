"""The decoder's column-wise shortcuts give what the value-by-value paths give: one schema
shared by every line read once (:mod:`pipelines.cdc.values.shared_schema`), Kafka Connect decimals
decoded with numpy (:mod:`pipelines.cdc.values.connect_decimal`)."""

from __future__ import annotations

import base64
import decimal
import json
import random
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_core import Schema
from paimon_core.catalog import FileSystemCatalog
from pipelines.cdc.decode import decode_events, decode_file
from pipelines.cdc.settings import DecodeSettings
from pipelines.cdc.values.connect_decimal import (
    connect_decimal_values,
    connect_unscaled,
    fit_decimal,
)
from pipelines.cdc.values.shared_schema import strip_shared_schema
from tests.pipelines.cdcgen import ENVELOPE_SCHEMA, SCHEMA, generate, write_landing


def _reference(b64: list[str], scales: list[str], p: int, s: int) -> list[object]:
    out: list[object] = []
    for b, sc in zip(b64, scales):
        try:
            out.append(fit_decimal(connect_unscaled(b, int(sc)), p, s))
        except (ValueError, decimal.DecimalException):
            out.append(None)
    return out


@pytest.mark.parametrize(("max_bytes", "scale", "targets"), [
    (6, None, [(12, 2), (38, 4), (18, 0), (5, 3), (20, 1)]),
    (8, 2, [(38, 2), (18, 2), (19, 0)]),
])
def test_connect_decimals_column_wise_equal_value_by_value(
        max_bytes: int, scale: int | None, targets: list[tuple[int, int]]) -> None:
    rng = random.Random(max_bytes)
    b64, scales = [], []
    for _ in range(5000):
        nb = rng.randint(1, max_bytes)
        v = rng.randint(-(1 << (8 * nb - 1)), (1 << (8 * nb - 1)) - 1)
        if rng.random() < 0.1:
            v = rng.choice([0, -1, 1, 127, 128, -128, -129, 255, 256])
        width = max(1, (v.bit_length() + 8) // 8)  # minimal, as Connect writes, or padded
        width = width if rng.random() < 0.5 else max(nb, width)
        b64.append(base64.b64encode(v.to_bytes(width, "big", signed=True)).decode())
        scales.append(str(scale if scale is not None else rng.randint(0, 6)))
    for p, s in targets:
        got = connect_decimal_values(pa.array(b64), pa.array(scales), pa.decimal128(p, s))
        assert got is not None
        assert got.to_pylist() == _reference(b64, scales, p, s), (p, s)


@pytest.mark.parametrize("value", ["A=AA", "AAAAAAAAAAAA", "AA", "", "AA=A", "!!!!", "AAA"])
def test_connect_decimals_outside_the_fast_path_are_left_to_python(value: str) -> None:
    assert connect_decimal_values(pa.array([value]), pa.array(["2"]),
                                  pa.decimal128(12, 2)) is None


def _lines(tmp: Path) -> list[str]:
    stream = generate(seed=5, keys=40, events=300, batches=1, late=0.0, duplicates=0.02,
                      malformed_per_batch=4, evolve_from_batch=None, encoding="connect")
    write_landing(stream, str(tmp / "l"), files_per_batch=1, envelope=True)
    return (tmp / "l" / "batch-000001" / "part-0.jsonl").read_text().splitlines()


def test_one_schema_in_every_line_is_read_once(tmp_path: Path) -> None:
    schema = FileSystemCatalog(str(tmp_path / "wh")).create_table(
        "db.cdc", Schema.from_json(SCHEMA)).schema
    lines = _lines(tmp_path)
    data = ("\n".join(lines) + "\n").encode()
    shared = strip_shared_schema(data, len(lines))
    assert shared is not None
    assert shared.schema.to_pylist()[0]["name"] == ENVELOPE_SCHEMA["name"]
    payloads = shared.doc.to_pybytes().decode().split("\n")
    assert len(payloads) == len(lines)
    assert json.loads(payloads[1]) == json.loads(lines[1])["payload"] or \
        not lines[1].startswith("{")
    # the shortcut and the line-by-line path (each line's own schema) give the same rows,
    # malformed lines included (same line numbers, the event text as it was)
    got = decode_file(data, schema, settings=DecodeSettings(sequence_column="_seq"))
    want = decode_events(lines, schema, settings=DecodeSettings(sequence_column="_seq"))
    assert got.equals(want)
    assert sorted(x for x in got.column("_error").to_pylist() if x) == [
        "bad value for id", "malformed JSON", "missing before", "unknown op"]


def test_lines_with_other_schemas_are_not_shortened(tmp_path: Path) -> None:
    schema = FileSystemCatalog(str(tmp_path / "wh")).create_table(
        "db.cdc", Schema.from_json(SCHEMA)).schema
    lines = _lines(tmp_path)
    # one line's schema differs (the ts column without its logical type): its value is
    # then epoch millis by the table's default, and the file is decoded line by line
    other = json.loads(lines[3])
    for image in other["schema"]["fields"][:2]:
        for f in image["fields"]:
            f.pop("name", None) if f["field"] == "ts" else None
    lines[3] = json.dumps(other, separators=(",", ":"))
    data = ("\n".join(lines) + "\n").encode()
    assert strip_shared_schema(data, len(lines)) is None
    assert decode_file(data, schema, settings=DecodeSettings(sequence_column="_seq")).equals(
        decode_events(lines, schema, settings=DecodeSettings(sequence_column="_seq")))
    assert strip_shared_schema(b'{"payload":{},"schema":{}}\n{"payload":{}}\n', 2) is None
