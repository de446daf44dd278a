"""A deterministic generator of Debezium-style change streams and their model state.

Used by the CDC tests and by ``bench/cdc.py``. Events carry a global, strictly increasing
source position (``source.lsn``); the model applies them in that order, so it is what the
table must hold whatever order the batches deliver them in (given ``sequence.field = _seq``).
"""

from __future__ import annotations

import base64
import decimal
import json
import random
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA: dict[str, Any] = {
    "fields": [
        {"name": "region", "type": "STRING"},
        {"name": "id", "type": "BIGINT"},
        {"name": "name", "type": "STRING"},
        {"name": "amount", "type": "DECIMAL(12, 2)"},
        {"name": "qty", "type": "INT"},
        {"name": "ts", "type": "TIMESTAMP(3)"},
        {"name": "_seq", "type": "BIGINT"},
    ],
    "partition_keys": ["region"],
    "primary_keys": ["region", "id"],
    "options": {"bucket": "4", "sequence.field": "_seq"},
}
#: Debezium's envelope schema of these events with ``encoding="connect"`` (JSON converter
#: with ``schemas.enable=true``, ``decimal.handling.mode=precise``,
#: ``time.precision.mode=adaptive_time_microseconds``): ``amount`` a Kafka Connect ``Decimal``
#: (base64 of the big-endian two's-complement unscaled value), ``ts`` an
#: ``io.debezium.time.MicroTimestamp`` (epoch microseconds)
_COLUMNS_SCHEMA = [
    {"type": "string", "optional": False, "field": "region"},
    {"type": "int64", "optional": False, "field": "id"},
    {"type": "string", "optional": True, "field": "name"},
    {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal",
     "version": 1, "parameters": {"scale": "2", "connect.decimal.precision": "12"},
     "field": "amount"},
    {"type": "int32", "optional": True, "field": "qty"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp",
     "version": 1, "field": "ts"},
]
ENVELOPE_SCHEMA: dict[str, Any] = {
    "type": "struct", "optional": False, "name": "shop.public.orders.Envelope", "version": 1,
    "fields": [
        {"type": "struct", "fields": _COLUMNS_SCHEMA, "optional": True,
         "name": "shop.public.orders.Value", "field": "before"},
        {"type": "struct", "fields": _COLUMNS_SCHEMA, "optional": True,
         "name": "shop.public.orders.Value", "field": "after"},
        {"type": "struct", "optional": False, "name": "io.debezium.connector.postgresql.Source",
         "field": "source", "fields": [
             {"type": "string", "optional": False, "field": "connector"},
             {"type": "int64", "optional": True, "field": "lsn"},
             {"type": "string", "optional": False, "field": "db"}]},
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"},
    ],
}
REGIONS = ("emea", "amer", "apac", "latam")
BASE_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z


def region_of(key: int) -> str:
    return REGIONS[key % len(REGIONS)]


@dataclass
class CdcStream:
    """Batches of JSON lines, the model (key -> row) and what was injected."""

    batches: list[list[str]] = field(default_factory=list)
    model: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    deleted_keys: list[tuple[str, int]] = field(default_factory=list)  # last event: delete
    malformed: list[int] = field(default_factory=list)  # per batch
    events: int = 0
    evolve_from: int | None = None


def _connect_decimal(cents: int) -> str:
    """A Kafka Connect ``Decimal``'s JSON value: base64 of the big-endian two's-complement
    unscaled value."""
    raw = cents.to_bytes(max(1, (cents.bit_length() + 8) // 8), "big", signed=True)
    return base64.b64encode(raw).decode("ascii")


def _image(key: int, version: int, lsn: int, note: bool, connect: bool = False
           ) -> dict[str, Any]:
    cents = (key * 37 + version * 11) % 100000
    img: dict[str, Any] = {
        "region": region_of(key),
        "id": key,
        "name": f"name-{key}-v{version}",
        "amount": _connect_decimal(cents) if connect else f"{cents / 100:.2f}",
        "qty": (key + version) % 1000,
        "ts": (BASE_MS + lsn) * 1000 if connect else BASE_MS + lsn,
    }
    if note:
        img["note"] = f"n{version}" if version % 3 else None
    return img


def generate(
    *,
    seed: int = 7,
    keys: int = 200,
    events: int = 2000,
    batches: int = 4,
    late: float = 0.05,
    duplicates: float = 0.03,
    malformed_per_batch: int = 2,
    evolve_from_batch: int | None = 2,
    shuffle: bool = True,
    encoding: str = "plain",
) -> CdcStream:
    """A change stream over ``keys`` keys: inserts, updates and deletes (re-inserts after a
    delete too), split into ``batches``; a fraction of events arrives ``late`` (one batch
    later), some are ``duplicates``; every batch gets ``malformed_per_batch`` bad lines; from
    ``evolve_from_batch`` on the images carry a new column ``note``. ``encoding="connect"``:
    the images hold ``amount`` / ``ts`` as Debezium encodes them with schemas
    (:data:`ENVELOPE_SCHEMA`; the lines are the payloads: :func:`write_landing` with
    ``envelope=True`` wraps them); the model is the same."""
    if encoding not in ("plain", "connect"):
        raise ValueError(f"encoding must be 'plain' or 'connect', not {encoding!r}")
    connect = encoding == "connect"
    rng = random.Random(seed)
    alive: dict[int, int] = {}  # key -> version
    per_batch = max(1, events // batches)
    out = CdcStream(evolve_from=evolve_from_batch)
    raw: list[list[tuple[int, str]]] = [[] for _ in range(batches)]
    final: dict[int, tuple[int, dict[str, Any] | None]] = {}
    for i in range(events):
        lsn = 1000 + i * 3
        b = min(i // per_batch, batches - 1)
        note = evolve_from_batch is not None and b >= evolve_from_batch
        key = rng.randrange(keys)
        before = None
        if key not in alive:
            op, version = "c", 0
        else:
            version = alive[key]
            before = _image(key, version, lsn - 1, note, connect)
            op = "d" if rng.random() < 0.2 else "u"
            version += 1
        if op == "d":
            del alive[key]
            after = None
        else:
            alive[key] = version
            after = _image(key, version, lsn, note, connect)
        ev = {"op": op, "ts_ms": BASE_MS + lsn, "before": before, "after": after,
              "source": {"connector": "postgresql", "lsn": lsn, "db": "shop"}}
        line = json.dumps(ev, separators=(",", ":"))
        final[key] = (lsn, after)
        target = b + 1 if b + 1 < batches and rng.random() < late else b
        raw[target].append((lsn, line))
        if rng.random() < duplicates:
            raw[min(batches - 1, target + rng.randrange(2))].append((lsn, line))
    for items in raw:
        lines = [line for _, line in items]
        bad = [
            '{"op":"c","after":{"region":"emea","id":"not-a-number"},"source":{"lsn":5}}',
            "this is not json",
            '{"op":"x","after":{"region":"emea","id":1},"source":{"lsn":6}}',
            '{"op":"d","source":{"lsn":7}}',
        ]
        n_bad = min(malformed_per_batch, len(bad))
        lines += bad[:n_bad]
        if shuffle:
            rng.shuffle(lines)
        out.batches.append(lines)
        out.malformed.append(n_bad)
        out.events += len(lines)
    for key, (lsn, after) in sorted(final.items()):
        if after is None:
            out.deleted_keys.append((region_of(key), key))
        else:
            row = dict(after)
            if connect:  # the model holds the plain values
                row.update(_image(key, alive[key], lsn, note))
            row["_seq"] = lsn
            out.model[(row["region"], key)] = row
    return out


def model_rows(stream: CdcStream, with_note: bool) -> list[dict[str, Any]]:
    """The model as rows of Python values (amount Decimal, ts epoch millis), sorted by key."""
    rows = []
    for (_, _), r in sorted(stream.model.items()):
        row = dict(r)
        row["amount"] = decimal.Decimal(row["amount"])
        if with_note:
            row.setdefault("note", None)
        else:
            row.pop("note", None)
        rows.append(row)
    return rows


#: the published change events (connectors' documented examples, their test resources)
CORPUS = Path(__file__).parent / "cdc_corpus"


#: the source table the events of each corpus file name (read by hand from the files): what
#: a user gives the job as ``--source-table`` when the target table is named otherwise
CORPUS_TABLES = {
    "canal/flink_inventory.jsonl": "products2", "canal/edited.jsonl": "products2",
    "canal/truncate.jsonl": "products2", "canal/paimon_event_row.jsonl": "schema_evolution_1",
    "maxwell/flink_inventory.jsonl": "product", "maxwell/docs_position.jsonl": "e",
    "maxwell/docs_delete.jsonl": "e", "ogg/flink_inventory.jsonl": "OGG.TBL_TEST",
    "ogg/flink_inventory_reversed.jsonl": "OGG.TBL_TEST", "ogg/truncate.jsonl": "OGG.TBL_TEST",
    "aws_dms/paimon_product.jsonl": "product",
    "debezium_json/flink_inventory_plain.jsonl": "products",
    "debezium_json/flink_inventory_envelope.jsonl": "products",
}


def corpus_source(files: list[list[str]]) -> str | None:
    """The ``--source-table`` pattern of the corpus ``files`` (per batch, as
    :func:`corpus_landing`'s; None: files of no table in :data:`CORPUS_TABLES`)."""
    names = sorted({CORPUS_TABLES[f] for batch in files for f in batch if f in CORPUS_TABLES})
    return "|".join(re.escape(n) for n in names) or None


def corpus_landing(root: Path, files: list[list[str]]) -> Path:
    """``<root>/landing`` holding, per batch, the :data:`CORPUS` files given for it (as
    ``batch-<n>/part-<k>.jsonl``, in the given order)."""
    landing = root / "landing"
    for b, names in enumerate(files, 1):
        d = landing / f"batch-{b:06d}"
        d.mkdir(parents=True)
        for i, name in enumerate(names):
            shutil.copy(CORPUS / name, d / f"part-{i}.jsonl")
    return landing


def write_landing(stream: CdcStream, root: str, *, files_per_batch: int = 2,
                  envelope: bool = False) -> list[str]:
    """Write the batches as ``<root>/batch-<n>/part-<k>.jsonl`` (local); returns the dirs.
    ``envelope``: each line as Debezium's JSON converter with schemas writes it,
    ``{"schema": ENVELOPE_SCHEMA, "payload": <the line>}``."""
    import os

    head = '{"schema":' + json.dumps(ENVELOPE_SCHEMA, separators=(",", ":")) + ',"payload":'
    dirs = []
    for b, lines in enumerate(stream.batches, 1):
        d = os.path.join(root, f"batch-{b:06d}")
        os.makedirs(d, exist_ok=True)
        chunk = max(1, -(-len(lines) // files_per_batch))
        for k in range(files_per_batch):
            part = lines[k * chunk:(k + 1) * chunk]
            with open(os.path.join(d, f"part-{k}.jsonl"), "w", encoding="utf-8") as fh:
                if envelope:
                    fh.write("".join(head + x + "}\n" for x in part))
                else:
                    fh.write("".join(x + "\n" for x in part))
        dirs.append(d)
    return dirs
