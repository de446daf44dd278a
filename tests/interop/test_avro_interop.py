"""Avro data files both ways with Paimon Java 0.9 and pypaimon 2.1.

Read: a primary-key table Java 0.9 writes in Parquet, then ORC, then Avro (``file.format``
altered between its writes, as issue 31 describes), and an append table Java writes in Avro;
we read every snapshot as Java does. Written: see the second half (``ours``)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastavro
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.fsck import fsck
from tests.interop import oracle as orc
from tests.interop import test_orc_interop as toc
from tests.interop.oracle import command_output, write_rows
from tests.interop.test_write_interop import cli_ok

pytestmark = pytest.mark.oracle

Row = dict[str, Any]
KIND = "_kind"
FIELDS = [("k", "INT NOT NULL"), ("ti", "TINYINT"), ("v", "STRING"), ("amount", "DECIMAL(10, 2)"),
          ("dt", "DATE"), ("tm", "TIME"), ("ts", "TIMESTAMP(3)"), ("ts6", "TIMESTAMP(6)"),
          ("ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("b", "BOOLEAN"), ("bin", "BYTES"),
          ("tags", "ARRAY<STRING>"), ("m", "MAP<STRING, INT>"), ("r", "ROW<a INT, b DATE>")]


def _row(k: int, v: str, amount: str | None = "1.50") -> Row:
    return {"k": k, "ti": -k, "v": v, "amount": amount, "dt": "2024-02-29", "tm": "12:34:56",
            "ts": f"2024-01-01 00:00:0{k % 10}.123", "ts6": "1969-07-20 20:17:40.000001",
            "ltz": "2024-01-01 00:00:00.000001Z", "b": k % 2 == 0, "bin": "AAE=",
            "tags": [v, None], "m": {"x": k}, "r": {"a": k, "b": "1900-01-01"}}


# (format in force, the changes Java writes in it)
STEPS: list[tuple[str, list[tuple[str, Row]]]] = [
    ("parquet", [("+I", _row(k, f"p{k}")) for k in range(1, 5)]),
    ("orc", [("+U", _row(1, "o1", "-7.25")), ("-D", _row(2, "p2")), ("+I", _row(5, "o5"))]),
    ("avro", [("+U", _row(3, "a3", None)), ("-D", _row(5, "o5")), ("+I", _row(6, "a6"))]),
]
APPEND_ROWS = [_row(i, f"x{i}") for i in range(1, 4)] + [
    {"k": 9} | {n: None for n, _ in FIELDS[1:]}]


def _canonical(row: Row) -> str:
    """The read's line of an input row (a MAP as key/value pairs)."""
    m = row.get("m")
    out = {**row, "m": None if m is None else [[k, v] for k, v in m.items()]}
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def _expected(upto: int) -> list[str]:
    model: dict[int, Row] = {}
    for _, changes in STEPS[:upto]:
        for kind, row in changes:
            if kind in ("-D", "-U"):
                model.pop(row["k"], None)
            else:
                model[row["k"]] = row
    return sorted(_canonical(r) for r in model.values())


@dataclass
class Built:
    root: Path
    wh: str
    records: dict[str, dict[str, Any]]

    def out(self, key: str) -> list[str]:
        return command_output(self.root, self.records, key)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    orc.ensure_ready()
    root = tmp_path_factory.mktemp("avro-interop")
    (root / "out").mkdir()
    wh = str(root / "wh")
    schema = {"fields": [{"name": n, "type": t} for n, t in FIELDS], "primary_keys": ["k"],
              "options": {"bucket": "1", "file.format": "parquet"}}
    (root / "pk.json").write_text(json.dumps(schema), "utf-8")
    append = {"fields": schema["fields"], "options": {"bucket": "-1", "file.format": "avro"}}
    (root / "append.json").write_text(json.dumps(append), "utf-8")
    records: dict[str, dict[str, Any]] = {}
    pk = {"engine": "java", "warehouse": wh, "table": "db.pk"}
    for i, (fmt, changes) in enumerate(STEPS):
        cmds: list[tuple[str, dict[str, Any]]] = []
        if i == 0:
            cmds.append(("create", {"cmd": "create", **pk, "schema": str(root / "pk.json")}))
            cmds.append(("append-create", {"cmd": "create", **pk, "table": "db.append",
                                           "schema": str(root / "append.json")}))
            cmds.append(("append-write", {"cmd": "write", **pk, "table": "db.append",
                                          "input": write_rows(root / "append.jsonl", APPEND_ROWS)}))
        else:
            cli_ok(["alter", "--warehouse", wh, "--table", "db.pk",
                    "--set-option", f"file.format={fmt}"])
        rows = [{**r, KIND: kind} for kind, r in changes]
        cmds.append((f"write-{fmt}", {"cmd": "write", **pk, "kind": KIND,
                                      "input": write_rows(root / f"{fmt}.jsonl", rows)}))
        if i == len(STEPS) - 1:
            for sid in range(1, len(STEPS) + 1):
                cmds.append((f"java-{sid}", {"cmd": "read", **pk, "snapshot": sid,
                                             "output": str(root / "out" / f"java-{sid}.jsonl")}))
            cmds.append(("java-append", {"cmd": "read", **pk, "table": "db.append",
                                         "output": str(root / "out" / "java-append.jsonl")}))
        result = orc.run_batches({f"step-{i}": [c for _, c in cmds]}, root)[f"step-{i}"]
        for rec in result.records:
            records[cmds[rec["i"] - 1][0]] = rec
    yield Built(root, wh, records)


def test_we_read_a_table_java_wrote_in_parquet_orc_and_avro(built: Built) -> None:
    for key in ("create", "write-parquet", "write-orc", "write-avro"):
        assert built.records[key].get("status") == "ok", built.records[key]
    files = {p.suffix for p in Path(built.wh, "db.db", "pk", "bucket-0").glob("data-*")}
    assert files == {".parquet", ".orc", ".avro"}
    for sid in range(1, len(STEPS) + 1):
        want = _expected(sid)
        assert built.out(f"java-{sid}") == want, sid
        ours = cli_ok(["read", "--warehouse", built.wh, "--table", "db.pk", "--snapshot",
                       str(sid)])
        assert ours == want, sid


def test_we_read_javas_avro_append_table(built: Built) -> None:
    want = sorted(_canonical(r) for r in APPEND_ROWS)
    assert built.out("java-append") == want
    assert cli_ok(["read", "--warehouse", built.wh, "--table", "db.append"]) == want


# ---------------------------------------------------------------------------------------------
# Avro data files WRITTEN by us (issue 31): the ORC module's tables and rows, in Avro
#
# * ``all`` (append, ours): every Paimon type Java writes in Avro (TIME up to precision 3,
#   timestamps up to 6); Java and pypaimon read it, Java also with filters its pruning
#   decides on our manifest stats.
# * ``pk`` (created and first written by Java with ``file.format=avro``): we upsert and
#   delete, fully compact, write again and expire; Java reads every snapshot as we do, then
#   Java appends to and compacts a copy; Java, pypaimon and we read the result.
# * ``mixed`` (ours, then both): parquet files (ours), ALTER to orc and Java's files, ALTER
#   to avro and ours, then Java's Avro files; read by all three, then our full compaction
#   rewrites everything into Avro.

AVRO_FIELDS = [(n, t) for n, t in toc.ALL_FIELDS if n not in ("ts9", "ltz9")]
AVRO_SCHEMA = {"fields": [{"name": n, "type": t} for n, t in AVRO_FIELDS],
               "options": {"bucket": "-1", "file.format": "avro"}}


def _no_nanos(pairs: list[tuple[Row, Row]]) -> list[tuple[Row, Row]]:
    drop = ("ts9", "ltz9")
    return [({k: v for k, v in r.items() if k not in drop},
             {k: v for k, v in f.items() if k not in drop}) for r, f in pairs]


AVRO_1, AVRO_2 = _no_nanos(toc.ALL_COMMIT_1), _no_nanos(toc.ALL_COMMIT_2)
AVRO_EXPECTED = toc._fix(AVRO_1 + AVRO_2)
AVRO_FILTERS = {f: ids for f, ids in toc.ALL_FILTERS.items() if "ltz9" not in f}
AVRO_PK_SCHEMA = {**toc.PK_SCHEMA, "options": {"bucket": "2", "file.format": "avro"}}
MIXED_3 = [("+U", toc._pk(2, "avro2")), ("-D", toc._pk(6, "orc6")), ("+I", toc._pk(7, "a7"))]
MIXED_4 = [("-D", toc._pk(3, "p3")), ("+I", toc._pk(8, "java-avro8"))]
MIXED_OURS = toc._pk_expected(toc.MIXED_1, toc.MIXED_2, MIXED_3, MIXED_4)
# every codec we write (snappy and xz are refused: Java 0.9's bundle read neither when we
# wrote them, "Unrecognized codec: snappy" and NoClassDefFoundError org/tukaani/xz)
CODECS = ("null", "deflate", "bzip2", "zstandard")


BLOCK_ROWS = [{"id": i, "s": f"row {i} " + "x" * (i % 61), "bi": i * 7919,
               "dt": None if i % 3 else "2024-02-29"} for i in range(40_000)]


def _codec_row(codec: str) -> Row:
    row = toc._all_row(CODECS.index(codec), s=codec * 40, dec="-12.34", bi=2**40)
    return {n: row[n] for n, _ in AVRO_FIELDS}


@dataclass
class Ours:
    root: Path
    records: dict[str, dict[str, Any]]
    wh: str
    wh_before_expire: str
    wh_after_java: str

    def out(self, key: str) -> list[str]:
        return command_output(self.root, self.records, key)


def _write(wh: str, table: str, path: str) -> None:
    cli_ok(["write", "--warehouse", wh, "--table", table, "--input", path, "--kind", KIND])


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ours]:
    orc.ensure_ready()
    root = tmp_path_factory.mktemp("avro-write-interop")
    (root / "out").mkdir()
    d = root / "in"
    d.mkdir()
    wh, wh_before, wh_after = (str(root / n) for n in ("wh", "wh-before", "wh-after"))
    schemas = {}
    for name, s in (("all", AVRO_SCHEMA), ("pk", AVRO_PK_SCHEMA), ("mixed", toc.MIXED_SCHEMA)):
        schemas[name] = str(d / f"{name}.json")
        Path(schemas[name]).write_text(json.dumps(s), "utf-8")
    plan = toc.Plan(root)
    java = {"engine": "java", "warehouse": wh}
    plan.add("java", "pk-create", {"cmd": "create", **java, "table": "db.pk",
                                   "schema": schemas["pk"]})
    plan.add("java", "pk-write-1", {"cmd": "write", **java, "table": "db.pk", "kind": KIND,
                                    "input": write_rows(d / "pk-1.jsonl",
                                                        toc._kinds(toc.PK_JAVA_1))})
    records = plan.run("1")
    cli_ok(["create", "--warehouse", wh, "--table", "db.all", "--schema", schemas["all"]])
    for i, rows in enumerate((AVRO_1, AVRO_2)):
        cli_ok(["write", "--warehouse", wh, "--table", "db.all", "--input",
                write_rows(d / f"all-{i}.jsonl", [r for r, _ in rows])])
    if records["pk-write-1"].get("status") == "ok":
        _write(wh, "db.pk", write_rows(d / "pk-2.jsonl", toc._kinds(toc.PK_OURS_2)))
        cli_ok(["compact", "--warehouse", wh, "--table", "db.pk"])
        _write(wh, "db.pk", write_rows(d / "pk-3.jsonl", toc._kinds(toc.PK_OURS_3)))
        shutil.copytree(wh, wh_before)
        cli_ok(["expire", "--warehouse", wh, "--table", "db.pk", "--retain-max", "2",
                "--retain-min", "1"])
        shutil.copytree(wh, wh_after)
    mixed = ["--warehouse", wh, "--table", "db.mixed"]
    cli_ok(["create", *mixed, "--schema", schemas["mixed"]])
    _write(wh, "db.mixed", write_rows(d / "mixed-1.jsonl", toc._kinds(toc.MIXED_1)))
    cli_ok(["alter", *mixed, "--set-option", "file.format=orc"])
    plan.add("java", "mixed-orc", {"cmd": "write", **java, "table": "db.mixed", "kind": KIND,
                                   "input": write_rows(d / "mixed-2.jsonl",
                                                       toc._kinds(toc.MIXED_2))})
    records.update(plan.run("2"))
    cli_ok(["alter", *mixed, "--set-option", "file.format=avro"])
    _write(wh, "db.mixed", write_rows(d / "mixed-3.jsonl", toc._kinds(MIXED_3)))
    plan.add("java", "mixed-avro", {"cmd": "write", **java, "table": "db.mixed", "kind": KIND,
                                    "input": write_rows(d / "mixed-4.jsonl",
                                                        toc._kinds(MIXED_4))})
    records.update(plan.run("3"))
    # a file of several blocks and encoding chunks (avro_encode._BLOCK_BYTES, _CHUNK_ROWS)
    cli_ok(["create", "--warehouse", wh, "--table", "db.blocks", "--schema", schemas["all"]])
    cli_ok(["write", "--warehouse", wh, "--table", "db.blocks", "--input",
            write_rows(d / "blocks.jsonl", BLOCK_ROWS)])
    # a table per codec (``avro.codec``), and one of every codec (altered between writes)
    codecs = ["--warehouse", wh, "--table", "db.codecs"]
    cli_ok(["create", *codecs, "--schema", schemas["all"]])
    for codec in CODECS:
        one = ["--warehouse", wh, "--table", f"db.codec_{codec}"]
        cli_ok(["create", *one, "--schema", schemas["all"]])
        for table in (one, codecs):
            cli_ok(["alter", *table, "--set-option", f"avro.codec={codec}"])
            cli_ok(["write", *table, "--input", write_rows(d / f"codec-{codec}.jsonl",
                                                           [_codec_row(codec)])])
    for engine in ("java", "pypaimon"):
        on = {"engine": engine, "warehouse": wh}
        for table in ("all", "pk", "mixed", "codecs", "blocks",
                      *(f"codec_{c}" for c in CODECS)):
            plan.add(engine, f"{engine}-{table}", {"cmd": "read", **on, "table": f"db.{table}"})
    for i, f in enumerate(AVRO_FILTERS):
        plan.add("java", f"java-all-f{i}", {"cmd": "read", **java, "table": "db.all",
                                            "filter": [f]})
    for sid in toc.PK_SNAPSHOTS:
        for w, tag in ((wh_before, "before"), (wh, "after")):
            if tag == "before" or sid >= 3:
                plan.add("java", f"java-pk-{tag}-{sid}", {
                    "cmd": "read", "engine": "java", "warehouse": w, "table": "db.pk",
                    "snapshot": sid})
    after = {"engine": "java", "warehouse": wh_after, "table": "db.pk"}
    plan.add("java", "after-append", {"cmd": "write", **after, "kind": KIND,
                                      "input": write_rows(d / "pk-4.jsonl",
                                                          toc._kinds(toc.PK_JAVA_4))})
    plan.add("java", "after-compact", {"cmd": "compact", **after})
    plan.add("java", "after-java", {"cmd": "read", **after})
    records.update(plan.run("4"))
    cli_ok(["compact", *mixed])
    plan.add("pypaimon", "after-pypaimon", {"cmd": "read", "engine": "pypaimon",
                                            "warehouse": wh_after, "table": "db.pk"})
    for engine in ("java", "pypaimon"):
        plan.add(engine, f"{engine}-mixed-compacted", {"cmd": "read", "engine": engine,
                                                       "warehouse": wh, "table": "db.mixed"})
    records.update(plan.run("5"))
    yield Ours(root, records, wh, wh_before, wh_after)


def _ours_read(wh: str, table: str, *args: str) -> list[str]:
    return cli_ok(["read", "--warehouse", wh, "--table", table, *args])


def test_java_and_pypaimon_read_our_avro_table_of_every_type(ours: Ours) -> None:
    want = toc.lines(AVRO_EXPECTED)
    assert toc._data_files(ours.wh, "all") == {".avro"}
    assert _ours_read(ours.wh, "db.all") == want
    assert ours.out("java-all") == want
    assert ours.out("pypaimon-all") == want


@pytest.mark.parametrize("i", range(len(AVRO_FILTERS)))
def test_java_filters_our_avro_table_by_its_stats(ours: Ours, i: int) -> None:
    f, ids = list(AVRO_FILTERS.items())[i]
    want = toc.lines([r for r in AVRO_EXPECTED if r["id"] in ids])
    assert _ours_read(ours.wh, "db.all", "--filter", f) == want
    assert ours.out(f"java-all-f{i}") == want


def test_java_avro_table_written_compacted_expired_by_us(ours: Ours) -> None:
    toc._ok(ours, "pk-create", "pk-write-1")
    assert toc._data_files(ours.wh_before_expire, "pk") == {".avro"}
    for sid, want in toc.PK_SNAPSHOTS.items():
        assert _ours_read(ours.wh_before_expire, "db.pk", "--snapshot", str(sid)) == want, sid
        assert ours.out(f"java-pk-before-{sid}") == want, sid
        if sid >= 3:
            assert _ours_read(ours.wh, "db.pk", "--snapshot", str(sid)) == want, sid
            assert ours.out(f"java-pk-after-{sid}") == want, sid
    assert ours.out("java-pk") == toc.PK_SNAPSHOTS[4]
    assert ours.out("pypaimon-pk") == toc.PK_SNAPSHOTS[4]
    snaps = [json.loads(x)["id"] for x in
             cli_ok(["snapshots", "--warehouse", ours.wh, "--table", "db.pk"])]
    assert snaps == [3, 4]
    assert toc._data_files(ours.wh, "pk") == {".avro"}
    report = fsck(FileSystemCatalog(ours.wh).get_table("db.pk"))
    assert report.ok, report


def test_java_appends_to_and_compacts_our_avro_table(ours: Ours) -> None:
    toc._ok(ours, "after-append", "after-compact")
    assert ours.out("after-java") == toc.PK_AFTER_JAVA
    assert ours.out("after-pypaimon") == toc.PK_AFTER_JAVA
    assert _ours_read(ours.wh_after_java, "db.pk") == toc.PK_AFTER_JAVA


def test_parquet_orc_avro_table_written_by_both(ours: Ours) -> None:
    toc._ok(ours, "mixed-orc", "mixed-avro")
    assert toc._formats(ours.wh, "db.mixed", "4") == {"parquet", "orc", "avro"}
    assert _ours_read(ours.wh, "db.mixed", "--snapshot", "4") == MIXED_OURS
    assert ours.out("java-mixed") == MIXED_OURS
    assert ours.out("pypaimon-mixed") == MIXED_OURS
    # our full compaction (snapshot 5) rewrote the three formats into avro files
    assert _ours_read(ours.wh, "db.mixed") == MIXED_OURS
    assert toc._formats(ours.wh, "db.mixed", "5") == {"avro"}
    assert ours.out("java-mixed-compacted") == MIXED_OURS
    assert ours.out("pypaimon-mixed-compacted") == MIXED_OURS


def test_java_and_pypaimon_read_our_avro_files_of_every_codec(ours: Ours) -> None:
    want = toc.lines([_codec_row(c) for c in CODECS])
    assert _ours_read(ours.wh, "db.codecs") == want
    assert ours.out("java-codecs") == want
    assert ours.out("pypaimon-codecs") == want



def test_java_and_pypaimon_read_our_avro_file_of_many_blocks(ours: Ours) -> None:
    files = list(Path(ours.wh, "db.db", "blocks").glob("bucket-*/data-*.avro"))
    assert len(files) == 1
    with files[0].open("rb") as fh:  # blocks of about 1 MiB before compression
        assert len(list(fastavro.block_reader(fh))) > 1
    want = toc.lines([{n: r.get(n) for n, _ in AVRO_FIELDS} for r in BLOCK_ROWS])
    assert _ours_read(ours.wh, "db.blocks") == want
    assert ours.out("java-blocks") == want
    assert ours.out("pypaimon-blocks") == want
