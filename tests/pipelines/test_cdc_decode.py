"""The CDC decoder's fast paths: byte-level line splitting, whole-file decoding without
Python lines, deferred before-image conversion, vectorised unknown-column names, the Arrow
IPC blobs the job ships through the shuffle and the numpy deduplication of the write tasks.
Each is checked against its per-row / reference counterpart, and with exact values."""

from __future__ import annotations

import datetime
import decimal
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from paimon_core.errors import ConfigError
from paimon_core.read.merge import deduplicate
from paimon_core.schema_builder import Schema
from paimon_core.spec.schema import TableSchema
from pipelines.cdc.batch.rows import last_changes
from pipelines.cdc.batch.stage import blob_tables, ipc_blob
from pipelines.cdc.decode import decode_events, decode_file
from pipelines.cdc.events import position_columns
from pipelines.cdc.ingest import CdcOptions
from pipelines.cdc.lines import BAD_UTF8, split_lines, split_text
from pipelines.cdc.settings import DecodeSettings
from tests.pipelines.cdcgen import SCHEMA, generate
from tests.pipelines.cdcref import compared_rows, spark_changes

SPLIT_CASES: list[tuple[bytes, list[str]]] = [
    (b"", []),
    (b"\n", [""]),
    (b"a", ["a"]),
    (b"a\n", ["a"]),
    (b"a\r\nb\n", ["a", "b"]),
    (b"a\r\r\nb", ["a\r", "b"]),  # one CR goes
    (b"a\rb\n", ["a\rb"]),  # a CR inside a line stays
    (b"\r", []),  # an empty last line after CR removal: no line
    (b"a\n\r", ["a"]),
    (b"\r\n\r\n", ["", ""]),
    (b"x\n\n", ["x", ""]),
    (b"ok\n\xff\xfe\nfine", ["ok", BAD_UTF8, "fine"]),
    ("é\r\n{}\r".encode(), ["é", "{}"]),
]


@pytest.mark.parametrize(("data", "expected"), SPLIT_CASES)
def test_split_lines_exact(data: bytes, expected: list[str]) -> None:
    assert split_lines(data).to_pylist() == expected
    reference = split_text(data)
    if reference and reference[-1] == "":
        reference.pop()  # what read_lines drops
    assert expected == reference


def _schema() -> TableSchema:
    return Schema.from_json(SCHEMA).to_table_schema(0)


def _event(op: str, lsn: int, before: dict[str, Any] | None,
           after: dict[str, Any] | None) -> str:
    return json.dumps({"op": op, "ts_ms": 1000 + lsn, "before": before, "after": after,
                       "source": {"lsn": lsn}})


def test_decode_file_equals_decode_events_on_generated_streams() -> None:
    schema = _schema()
    stream = generate(seed=5, keys=40, events=900, batches=3, evolve_from_batch=1,
                      malformed_per_batch=4)
    for b, lines in enumerate(stream.batches):
        for variant in (lines, [*lines[:5], "null", "", "  ", *lines[5:]]):
            for sep in ("\n", "\r\n"):
                data = (sep.join(variant) + sep).encode()
                got = decode_file(data, schema, file_index=b,
                                  settings=DecodeSettings(sequence_column="_seq"))
                ref = decode_events(split_text(data), schema, file_index=b,
                                    settings=DecodeSettings(sequence_column="_seq"))
                assert got.equals(ref)
                assert got.num_rows >= len(lines) - 4
                events = [i for i, x in enumerate(variant, 1) if x.strip() not in ("", "null")]
                lines_seen = sorted(set(got.column("_pos_line").to_pylist()))
                assert lines_seen == sorted({*events, *[i for i, x in enumerate(variant, 1)
                                                        if x.strip() == "null"]})


def test_whole_file_path_positions_and_values() -> None:
    schema = _schema()
    lines = [
        _event("c", 7, None, {"region": "emea", "id": 1, "name": "a", "amount": "1.50",
                              "qty": 2, "ts": 1704067200000}),
        _event("d", 9, {"region": "emea", "id": 1, "name": "gone", "amount": "2.25"}, None),
    ]
    out = decode_file(("\n".join(lines)).encode(), schema, file_index=3,
                      settings=DecodeSettings(sequence_column="_seq"))
    assert out.column("_pos_file").to_pylist() == [3, 3]
    assert out.column("_pos_line").to_pylist() == [1, 2]
    assert out.column("_kind").to_pylist() == ["+I", "-D"]
    assert out.column("_pos_n0").to_pylist() == [7, 9]
    assert out.column("_pos_s0").to_pylist() == [None, None]
    assert out.column("_seq").to_pylist() == [7, 9]  # filled from the position
    assert out.column("name").to_pylist() == ["a", "gone"]  # a delete: the before image
    assert out.column("amount").to_pylist() == [decimal.Decimal("1.50"),
                                                decimal.Decimal("2.25")]
    assert out.column("ts").to_pylist() == [datetime.datetime(2024, 1, 1), None]
    assert out.column("_error").to_pylist() == [None, None]
    assert out.column("_value").to_pylist() == [None, None]


def test_key_change_carries_the_converted_before_image() -> None:
    schema = _schema()
    before = {"region": "emea", "id": 6, "name": "was", "amount": "1.25", "qty": 3,
              "ts": 1704067200000}
    after = {**before, "id": 7, "name": "now", "amount": "9.99"}
    lines = [_event("u", 40, before, after),
             _event("u", 41, before, {**before, "name": "same key"})]
    out = decode_file("\n".join(lines).encode(), schema,
                      settings=DecodeSettings(sequence_column="_seq"))
    rows = sorted(out.to_pylist(), key=lambda r: (r["_pos_line"], r["_event"]))
    assert [(r["_kind"], r["id"], r["_event"]) for r in rows] == [
        ("+U", 7, 0), ("-D", 6, 1), ("+U", 6, 0)]
    old = rows[1]
    assert old["name"] == "was" and old["amount"] == decimal.Decimal("1.25")
    assert old["qty"] == 3 and old["ts"] == datetime.datetime(2024, 1, 1)
    assert old["_seq"] == 40 and old["_pos_line"] == 1 and old["_error"] is None


def test_bad_before_value_of_a_delete_is_rejected_and_after_of_insert_is_not_needed() -> None:
    schema = _schema()
    lines = [_event("d", 1, {"region": "emea", "id": 1, "qty": "many"}, None),
             _event("c", 2, {"region": "emea", "id": 2, "qty": "many"},
                    {"region": "emea", "id": 2, "qty": 5})]
    out = decode_file("\n".join(lines).encode(), schema)
    assert out.column("_error").to_pylist() == ["bad value for qty", None]
    assert out.column("qty").to_pylist() == [None, 5]
    assert out.column("_value").to_pylist() == [lines[0], None]


def test_unknown_columns_named_once_in_order() -> None:
    schema = _schema()
    img = {"region": "emea", "id": 1}
    lines = [
        _event("u", 1, {**img, "b_only": 1, "both": 2}, {**img, "a_only": 1, "both": 3}),
        _event("c", 2, None, {**img, "both": None}),  # JSON null: not present
        _event("c", 3, None, img),
        _event("d", 4, {**img, "b_only": "x"}, None),
    ]
    out = decode_file("\n".join(lines).encode(), schema)
    assert out.column("_unknown").to_pylist() == ["a_only\nboth\nb_only", None, None, "b_only"]
    assert out.column("_value").to_pylist() == [lines[0], None, None, lines[3]]


def test_ipc_blobs_round_trip() -> None:
    schema = _schema()
    stream = generate(seed=2, keys=30, events=300, batches=1, evolve_from_batch=None)
    rows = decode_file(("\n".join(stream.batches[0]) + "\n").encode(), schema)
    parts = [rows.slice(0, 100), rows.slice(100)]
    batch = pa.RecordBatch.from_pydict({"bucket": pa.array([0, 1], pa.int32()),
                                        "data": pa.array([ipc_blob(p) for p in parts],
                                                         pa.binary())})
    got = list(blob_tables(iter([batch])))
    assert [t.num_rows for t in got] == [100, rows.num_rows - 100]
    assert pa.concat_tables(got).equals(rows)


def test_last_changes_equals_deduplicate() -> None:
    schema = _schema()
    stream = generate(seed=9, keys=25, events=2000, batches=2, late=0.2, duplicates=0.1,
                      evolve_from_batch=None)
    pos = position_columns(("lsn",))
    tables = [decode_file(("\n".join(b) + "\n").encode(), schema, file_index=i,
                          settings=DecodeSettings(sequence_column="_seq"))
              for i, b in enumerate(stream.batches)]
    data = pa.concat_tables(tables)
    data = data.filter(pc.is_null(data.column("_error")))
    keys = list(schema.primary_keys)
    fast = last_changes(data, keys, pos)
    ref = deduplicate(data, keys, pos)
    order = [("region", "ascending"), ("id", "ascending")]
    assert fast.num_rows == ref.num_rows == len({(r, i) for r, i in zip(
        data.column("region").to_pylist(), data.column("id").to_pylist())})
    assert fast.sort_by(order).equals(ref.sort_by(order))
    # exact: the winner of every key is its largest position
    best: dict[tuple[str, int], int] = {}
    for r in data.select(["region", "id", "_pos_n0"]).to_pylist():
        k = (r["region"], r["id"])
        best[k] = max(best.get(k, -1), r["_pos_n0"])
    assert {(r["region"], r["id"]): r["_pos_n0"] for r in fast.to_pylist()} == best
    # a text position (NULL numbers in places) takes paimon_core's path: same rows
    mixed = data.set_column(data.schema.get_field_index("_pos_n0"), "_pos_n0",
                            pc.if_else(pa.array(np.arange(data.num_rows) % 7 == 0),
                                       pa.scalar(None, pa.int64()), data.column("_pos_n0")))
    assert last_changes(mixed, keys, pos).sort_by(order).equals(
        deduplicate(mixed, keys, pos).sort_by(order))


def test_later_row_wins_a_tie() -> None:
    t = pa.table({"k": pa.array(["a", "a", "b"]), "p": pa.array([1, 1, 0], pa.int64()),
                  "v": pa.array([1, 2, 3])})
    out = last_changes(t, ["k"], ["p"])
    assert sorted(out.to_pylist(), key=lambda r: r["k"]) == [
        {"k": "a", "p": 1, "v": 2}, {"k": "b", "p": 0, "v": 3}]


@pytest.mark.spark
def test_decode_file_agrees_with_spark_reference_on_hard_lines(spark: Any,
                                                               tmp_path: Path) -> None:
    """Lines the ingest reference test lacks: key changes with full before images, new
    columns in both images, CRLF line ends, a tombstone and blanks."""
    schema = _schema()
    base = {"region": "emea", "id": 6, "name": "was", "amount": "1.25", "qty": 3,
            "ts": 1704067200000}
    lines = [
        _event("u", 40, base, {**base, "id": 7, "name": "now", "amount": "9.99"}),
        _event("u", 41, {**base, "x": 1}, {**base, "y": "2", "x": 3}),
        _event("d", 42, {**base, "qty": "many"}, None),
        _event("c", 43, None, {**base, "amount": "1.005"}),
        "null",
        "",
        _event("r", 44, None, {**base, "id": 8, "ts": "2024-01-01T00:00:01"}),
    ]
    data = ("\r\n".join(lines) + "\r\n").encode()
    f = tmp_path / "events.jsonl"
    f.write_bytes(data)
    opts = {"position_fields": ["lsn"], "epoch_unit": "ms"}
    ref = spark_changes(spark, f, schema, **opts)
    ours = decode_file(data, schema, file_index=0, settings=DecodeSettings.of(opts))
    assert compared_rows(ours, schema) == compared_rows(ref, schema)
    assert len(compared_rows(ours, schema)) == 7  # 5 events + the key change's -D + tombstone
    errors = dict(zip(ours.column("_pos_line").to_pylist(), ours.column("_error").to_pylist()))
    assert errors == {1: None, 2: None, 3: "bad value for qty", 4: "bad value for amount",
                      5: "tombstone", 7: None}
    moved = ours.filter(pc.equal(ours.column("_event"), 1)).to_pylist()
    assert [(r["id"], r["name"], r["_kind"]) for r in moved] == [(6, "was", "-D")]


@pytest.mark.parametrize(("root", "arrow", "bits"), [
    ("TINYINT", pa.int8(), 8), ("SMALLINT", pa.int16(), 16), ("INT", pa.int32(), 32),
    ("BIGINT", pa.int64(), 64)])
def test_integers_from_text_exact(root: str, arrow: pa.DataType, bits: int) -> None:
    import re

    from paimon_core.types import AtomicType, TypeRoot
    from pipelines.cdc.values.convert import convert

    texts = ["1", "-1", "007", "-0", "127", "128", "-129", "32767", "32768", "2147483647",
             "2147483648", "-2147483648", "-2147483649", "x", None, "1.0", " 1", "+5", "",
             "9223372036854775807", "9223372036854775808", "-9223372036854775808",
             "000000000000000000000000012", "123456789012345678", "1234567890123456789",
             "\u0967\u0968"]

    def expected(v: str | None) -> int | None:
        if v is None or not re.fullmatch(r"-?[0-9]+", v):
            return None
        x = int(v)
        return x if -(2 ** (bits - 1)) <= x < 2 ** (bits - 1) else None

    got = convert(pa.array(texts, pa.string()), AtomicType(TypeRoot[root]), arrow, "ms")
    assert got.type == arrow
    assert got.to_pylist() == [expected(v) for v in texts]


@pytest.mark.spark
def test_decode_files_rows_equal_the_decoder(spark: Any, tmp_path: Path) -> None:
    """The DataFrame of rows (the blobs expanded) holds exactly the decoder's rows."""
    from paimon_core.catalog import FileSystemCatalog
    from paimon_core.io.file_io import FileIO
    from pipelines.cdc.batch.stage import decode_files
    from pipelines.cdc.ingest import CdcOptions
    from pipelines.config import CatalogSettings, TableHandle

    stream = generate(seed=4, keys=20, events=400, batches=2, evolve_from_batch=1)
    files = []
    for i, lines in enumerate(stream.batches):
        f = tmp_path / f"part-{i}.jsonl"
        f.write_text("\n".join(lines) + "\n")
        files.append(str(f))
    FileSystemCatalog(str(tmp_path / "wh")).create_table("db.cdc", Schema.from_json(SCHEMA))
    handle = TableHandle.load(CatalogSettings(str(tmp_path / "wh")), "db.cdc")
    got = decode_files(spark, FileIO(str(tmp_path)), files, handle, CdcOptions()).toArrow()
    want = pa.concat_tables([
        decode_file(Path(f).read_bytes(), handle.schema, file_index=i,
                    settings=DecodeSettings(sequence_column="_seq"))
        for i, f in enumerate(files)])
    key = [("_pos_file", "ascending"), ("_pos_line", "ascending"), ("_event", "ascending")]
    assert got.num_rows == want.num_rows >= sum(len(b) for b in stream.batches)
    assert got.sort_by(key).to_pylist() == want.sort_by(key).to_pylist()


def test_failing_lines_are_found_wherever_they_are() -> None:
    """A document that fails is split at the rows the JSON reader names (a line holding two
    objects shifts those numbers: the row counts catch it); every line decodes as if alone."""
    schema = _schema()
    lines = list(generate(seed=8, keys=30, events=400, batches=1, malformed_per_batch=0,
                          evolve_from_batch=None).batches[0])
    bad = {0: "this is not json", 57: '{"op":"c"} {"op":"d"}', 58: "[1]",
           200: '{"op":"c","after":{"region":"emea","id":"x"},"source":{"lsn":1}}',
           201: '{"op":"c","after":{"region":"emea","id":1}', len(lines) - 1: "{"}
    for i, text in bad.items():
        lines[i] = text
    got = decode_file("\n".join(lines).encode(), schema,
                      settings=DecodeSettings(sequence_column="_seq"))
    alone = pa.concat_tables([decode_events([x], schema, first_line=i,
                                            settings=DecodeSettings(sequence_column="_seq"))
                              for i, x in enumerate(lines, 1)])
    key = [("_pos_line", "ascending"), ("_event", "ascending")]
    assert got.sort_by(key).equals(alone.sort_by(key))
    errors = {r["_pos_line"] - 1: r["_error"] for r in got.to_pylist() if r["_error"]}
    assert errors == {0: "malformed JSON", 57: "malformed JSON", 58: "malformed JSON",
                      200: "bad value for id", 201: "malformed JSON",
                      len(lines) - 1: "malformed JSON"}


@pytest.mark.parametrize(("given", "named"), [
    ({"epoch_unit": "s"}, "epoch_unit"),  # was taken as microseconds, without a word
    ({"epoch_unit": "ns"}, "epoch_unit"),
    ({"unavailable": "keep"}, "unavailable"),
    ({"position_fields": "lsn"}, "position_fields"),  # a string, not a list of fields
    ({"position_fields": ()}, "position_fields"),
    ({"sequence_column": ""}, "sequence_column"),
])
def test_job_options_refuse_a_decode_setting_by_name(given: dict[str, Any], named: str) -> None:
    """The job's options refuse, when they are made, a decode setting the decoders do not
    know, naming it (before any event is read)."""
    with pytest.raises(ConfigError, match=named) as e:
        CdcOptions(**given)
    assert e.value.setting == named


def test_decode_settings_refuse_an_unknown_name() -> None:
    with pytest.raises(ConfigError, match="epoch_units") as e:
        DecodeSettings.of({"epoch_units": "ms", "sequence_column": "_seq"})
    assert e.value.setting == "epoch_units"
    assert DecodeSettings.of({"position_fields": ["lsn"]}) == DecodeSettings(("lsn",))


def test_decode_settings_choose_the_epoch_unit() -> None:
    """``epoch_unit`` reaches the value decoder: the same number is milliseconds or
    microseconds."""
    schema = Schema.of([("id", "INT NOT NULL"), ("ts", "TIMESTAMP(6)")],
                       primary_keys=["id"], options={"bucket": "1"}).to_table_schema(0)
    line = json.dumps({"op": "c", "after": {"id": 1, "ts": 1_700_000_000_123},
                       "source": {"connector": "postgresql", "lsn": 7}})
    got = {u: decode_events([line], schema, settings=DecodeSettings(epoch_unit=u))
           .column("ts").to_pylist()[0] for u in ("ms", "us")}
    assert got == {"ms": datetime.datetime(2023, 11, 14, 22, 13, 20, 123000),
                   "us": datetime.datetime(1970, 1, 20, 16, 13, 20, 123)}
