"""Manifest codecs against real tables written by Java Paimon 0.9 and pypaimon 2.1 (oracle).

(a) Every manifest list, manifest, index manifest and deletion-vector file the engines wrote is
    decoded; the folded live files must account for the snapshot's record counts, sizes must
    match the files on disk, and (deletion-vector table) live rows minus deleted positions must
    equal the number of rows the engines read.
(b) Every manifest, manifest list, index manifest and DV file of each table is re-encoded with
    our encoders and put in place (sizes updated in manifest lists and snapshots); Java 0.9 and
    pypaimon 2.1 must then read every snapshot exactly as before. pypaimon reads the Java 0.9
    tables before the rewrite only with ``--pypaimon-compat`` (0.9 manifests lack
    ``_VALUE_STATS_COLS``) and after it without.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from paimon_core.spec.deletion_vector import decode_deletion_vectors, encode_deletion_vectors
from paimon_core.spec.index_manifest import (
    DELETION_VECTORS_INDEX,
    HASH_INDEX,
    IndexManifestEntry,
    decode_index_manifest,
    encode_index_manifest,
)
from paimon_core.spec.manifest import FileKind, ManifestEntry, decode_manifest, encode_manifest
from paimon_core.spec.manifest_list import decode_manifest_list, encode_manifest_list
from tests.interop.oracle import ensure_ready, run_batches

pytestmark = pytest.mark.oracle

PK_DV = {
    "fields": [
        {"name": "id", "type": "INT NOT NULL"},
        {"name": "v", "type": "STRING"},
        {"name": "n", "type": "BIGINT"},
        {"name": "pt", "type": "STRING NOT NULL"},
    ],
    "partition_keys": ["pt"],
    "primary_keys": ["pt", "id"],
    "options": {"bucket": "2", "deletion-vectors.enabled": "true"},
}
APPEND = {
    "fields": [
        {"name": "id", "type": "INT"},
        {"name": "v", "type": "STRING"},
        {"name": "n", "type": "BIGINT"},
        {"name": "pt", "type": "STRING"},
    ],
    "partition_keys": ["pt"],
    "options": {"bucket": "-1"},
}
PK_PLAIN = {**PK_DV, "options": {"bucket": "2", "metadata.stats-mode": "full"}}
PK_DYNAMIC = {**PK_DV, "options": {"bucket": "-1"}}  # dynamic bucket: HASH index files


def _rows(ids: range, version: int) -> list[dict[str, Any]]:
    return [
        {"id": i, "v": f"v{version}-{i}", "n": i * 10 + version, "pt": "ab"[i % 2]} for i in ids
    ]


# table -> (engine, schema, list of steps: rows to write or "compact")
_JPK_STEPS = [
    _rows(range(0, 40), 1), "compact", _rows(range(0, 40, 3), 2), "compact",
    _rows(range(30, 60), 3), "compact", _rows(range(5, 15), 4),
]  # fmt: skip
TABLES: dict[str, tuple[str, dict[str, Any], list[Any]]] = {
    "jpk": ("java", PK_DV, _JPK_STEPS),
    "japp": ("java", APPEND, [_rows(range(0, 10), 1), _rows(range(10, 25), 2)]),
    "pdyn": ("pypaimon", PK_DYNAMIC, [_rows(range(0, 30), 1), _rows(range(20, 45), 2)]),
    "ppk": ("pypaimon", PK_PLAIN, [_rows(range(0, 30), 1), _rows(range(10, 50), 2)]),
    "papp": ("pypaimon", APPEND, [_rows(range(0, 10), 1), _rows(range(5, 20), 2)]),
}


@dataclass
class Table:
    name: str
    engine: str
    path: Path
    snapshots: list[dict[str, Any]]
    reads: dict[tuple[str, int], list[str]] = field(default_factory=dict)


@dataclass
class World:
    work: Path
    warehouse: Path
    tables: dict[str, Table]


def _read_cmds(work: Path, warehouse: Path, name: str, ids: list[int], tag: str,
               compat: bool) -> list[dict[str, Any]]:  # fmt: skip
    cmds = []
    for engine in ("java", "pypaimon"):
        for sid in ids:
            cmd = {"cmd": "read", "engine": engine, "warehouse": str(warehouse),
                   "table": f"db.{name}", "snapshot": sid,
                   "output": str(work / f"{tag}-{name}-{engine}-{sid}.jsonl")}  # fmt: skip
            if engine == "pypaimon" and compat:
                cmd["pypaimon_compat"] = True
            cmds.append(cmd)
    return cmds


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    ensure_ready()
    work = tmp_path_factory.mktemp("manifest-interop")
    warehouse = work / "wh"
    batches: dict[str, list[dict[str, Any]]] = {"java": [], "pypaimon": []}
    for name, (engine, schema, steps) in TABLES.items():
        (work / f"{name}.schema.json").write_text(json.dumps(schema))
        cmds = batches[engine]
        common = {"engine": engine, "warehouse": str(warehouse), "table": f"db.{name}"}
        cmds.append({"cmd": "create", **common, "schema": str(work / f"{name}.schema.json")})
        for i, step in enumerate(steps):
            if step == "compact":
                cmds.append({"cmd": "compact", **common})
                continue
            rows_file = work / f"{name}.{i}.jsonl"
            rows_file.write_text("".join(json.dumps(r) + "\n" for r in step))
            cmds.append({"cmd": "write", **common, "input": str(rows_file)})
        cmds.append({"cmd": "snapshots", **common, "verbose": True,
                     "output": str(work / f"{name}.snapshots.jsonl")})  # fmt: skip
    for result in run_batches(batches, work).values():
        assert not result.failures(), result.failures()
    tables = {}
    for name, (engine, _, _) in TABLES.items():
        lines = (work / f"{name}.snapshots.jsonl").read_text().splitlines()
        snaps = [json.loads(line) for line in lines]
        assert snaps, name
        tables[name] = Table(name, engine, warehouse / "db.db" / name, snaps)
    # every snapshot of every table read by both engines, before any rewrite
    cmds = []
    for name, t in tables.items():
        ids = [s["id"] for s in t.snapshots]
        cmds += _read_cmds(work, warehouse, name, ids, "before", compat=t.engine == "java")
    result = run_batches({"reads": cmds}, work)["reads"]
    assert not result.failures(), result.failures()
    for name, t in tables.items():
        for engine in ("java", "pypaimon"):
            for s in t.snapshots:
                out = work / f"before-{name}-{engine}-{s['id']}.jsonl"
                t.reads[(engine, s["id"])] = out.read_text().splitlines()
    yield World(work, warehouse, tables)


# ---- (a) decode what the engines wrote ------------------------------------------------------


def _fold(entries: list[ManifestEntry]) -> dict[Any, ManifestEntry]:
    live: dict[Any, ManifestEntry] = {}
    for e in entries:
        ident = e.identifier()
        if e.kind is FileKind.ADD:
            assert ident not in live, f"{e.file.file_name} added twice"
            live[ident] = e
        else:
            assert ident in live, f"DELETE of {e.file.file_name} without ADD"
            del live[ident]
    return live


def _snapshot_json(t: Table, sid: int) -> dict[str, Any]:
    return json.loads((t.path / "snapshot" / f"snapshot-{sid}").read_text())  # type: ignore[no-any-return]


def _manifests_of(t: Table, list_name: str | None) -> list[ManifestEntry]:
    if not list_name:
        return []
    path = t.path / "manifest" / list_name
    entries: list[ManifestEntry] = []
    for meta in decode_manifest_list(path.read_bytes(), str(path)):
        mpath = t.path / "manifest" / meta.file_name
        assert meta.file_size == mpath.stat().st_size
        m = decode_manifest(mpath.read_bytes(), str(mpath))
        assert meta.num_added_files == sum(e.kind is FileKind.ADD for e in m)
        assert meta.num_deleted_files == sum(e.kind is FileKind.DELETE for e in m)
        entries += m
    return entries


def _delta(entries: list[ManifestEntry]) -> int:
    return sum(e.file.row_count * (1 if e.kind is FileKind.ADD else -1) for e in entries)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_decode_engine_metadata(world: World, name: str) -> None:
    t = world.tables[name]
    deleted_rows_seen = 0
    for snap in t.snapshots:
        js = _snapshot_json(t, snap["id"])
        base = _manifests_of(t, js["baseManifestList"])
        delta = _manifests_of(t, js["deltaManifestList"])
        live = _fold(base + delta)
        assert sum(e.file.row_count for e in live.values()) == snap["total_record_count"]
        assert _delta(delta) == snap["delta_record_count"]
        changelog = _manifests_of(t, js.get("changelogManifestList"))
        if changelog:
            assert _delta(changelog) == snap["changelog_record_count"]
        for e in live.values():
            data_file = _data_path(t, e)
            assert data_file.stat().st_size == e.file.file_size
        if js.get("indexManifest"):
            deleted_rows_seen += _check_index(t, js["indexManifest"], live, snap["id"])
    if name == "jpk":
        assert deleted_rows_seen > 0  # the DV table did produce deletion vectors
    if name == "pdyn":  # the dynamic-bucket table did produce HASH index files
        assert _snapshot_json(t, t.snapshots[-1]["id"]).get("indexManifest")


def _data_path(t: Table, e: ManifestEntry) -> Path:
    part = e.partition  # one STRING partition column, short values: inline in the slot
    assert part[:4] == b"\x00\x00\x00\x01"
    slot = part[12:20]
    value = slot[: slot[7] & 0x7F].decode()
    return t.path / f"pt={value}" / f"bucket-{e.bucket}" / e.file.file_name


def _check_index(t: Table, name: str, live: dict[Any, ManifestEntry], sid: int) -> int:
    path = t.path / "manifest" / name
    entries = decode_index_manifest(path.read_bytes(), str(path))
    files = {(e.partition, e.bucket, e.file.file_name): e for e in live.values()}
    deleted_total = 0
    hashed = 0
    for ie in entries:
        assert ie.kind is FileKind.ADD
        dv_path = t.path / "index" / ie.file_name
        data = dv_path.read_bytes()
        assert len(data) == ie.file_size
        if ie.index_type == HASH_INDEX:  # big-endian int32 key hashes, one per key (§4.8)
            assert ie.file_size == 4 * ie.row_count
            assert ie.dv_ranges is None
            hashed += ie.row_count
            continue
        assert ie.index_type == DELETION_VECTORS_INDEX
        ranges = ie.dv_ranges or ()
        assert ie.row_count == len(ranges)
        vectors = decode_deletion_vectors(data, ranges, str(dv_path))
        for file_name, positions in vectors.items():
            owner = files[(ie.partition, ie.bucket, file_name)]
            assert positions.size > 0
            assert int(positions[-1]) < owner.file.row_count
            deleted_total += int(positions.size)
    if hashed:  # dynamic bucket: every key of the table is hashed exactly once
        assert hashed == len(t.reads[("java", sid)]), f"snapshot {sid}"
        return deleted_total
    # with deletion vectors, readers skip level-0 files and drop deleted positions
    visible = sum(e.file.row_count for e in live.values() if e.file.level > 0) - deleted_total
    assert visible == len(t.reads[("java", sid)]), f"snapshot {sid}"
    return deleted_total


# ---- (b) re-encode everything, the engines must not notice ----------------------------------


def _rewrite_table(t: Table) -> None:
    mdir = t.path / "manifest"
    sizes: dict[str, int] = {}
    for p in sorted(mdir.glob("manifest-*")):
        if p.name.startswith("manifest-list-"):
            continue
        data = encode_manifest(decode_manifest(p.read_bytes(), str(p)))
        p.write_bytes(data)
        sizes[p.name] = len(data)
    new_dv: dict[str, tuple[int, tuple[Any, ...]]] = {}
    index_manifests = {p: decode_index_manifest(p.read_bytes(), str(p))
                       for p in sorted(mdir.glob("index-manifest-*"))}  # fmt: skip
    for entries in index_manifests.values():
        for ie in entries:
            if ie.index_type != DELETION_VECTORS_INDEX or ie.file_name in new_dv:
                continue
            dv_path = t.path / "index" / ie.file_name
            ranges = ie.dv_ranges or ()
            vectors = decode_deletion_vectors(dv_path.read_bytes(), ranges, str(dv_path))
            data, metas = encode_deletion_vectors({r.data_file_name: vectors[r.data_file_name]
                                                   for r in ranges})  # fmt: skip
            dv_path.write_bytes(data)
            new_dv[ie.file_name] = (len(data), tuple(metas))
    for p, entries in index_manifests.items():
        rewritten: list[IndexManifestEntry] = []
        for ie in entries:
            if ie.file_name in new_dv:
                size, metas = new_dv[ie.file_name]
                keep_null = ie.dv_ranges is None
                ie = dataclasses.replace(ie, file_size=size, dv_ranges=None if keep_null else metas)
            rewritten.append(ie)
        p.write_bytes(encode_index_manifest(rewritten))
    list_sizes: dict[str, int] = {}
    for p in sorted(mdir.glob("manifest-list-*")):
        metas = [dataclasses.replace(m, file_size=sizes[m.file_name])
                 for m in decode_manifest_list(p.read_bytes(), str(p))]  # fmt: skip
        data = encode_manifest_list(metas)
        p.write_bytes(data)
        list_sizes[p.name] = len(data)
    for p in sorted((t.path / "snapshot").glob("snapshot-*")):
        js = json.loads(p.read_text())
        for key in ("baseManifestList", "deltaManifestList", "changelogManifestList"):
            if f"{key}Size" in js and js.get(key):
                js[f"{key}Size"] = list_sizes[js[key]]
        p.write_text(json.dumps(js, indent=2))


def test_reencoded_tables_read_identically(world: World) -> None:
    for t in world.tables.values():
        _rewrite_table(t)
    cmds = []
    for name, t in world.tables.items():
        ids = [s["id"] for s in t.snapshots]
        cmds += _read_cmds(world.work, world.warehouse, name, ids, "after", compat=False)
    result = run_batches({"reads-after": cmds}, world.work)["reads-after"]
    assert not result.failures(), result.failures()
    for name, t in world.tables.items():
        for engine in ("java", "pypaimon"):
            for s in t.snapshots:
                out = world.work / f"after-{name}-{engine}-{s['id']}.jsonl"
                after = out.read_text().splitlines()
                assert after == t.reads[(engine, s["id"])], (name, engine, s["id"])
                assert after == t.reads[("java", s["id"])], (name, engine, s["id"])
    # and our decoders still account for the same totals
    for name in world.tables:
        test_decode_engine_metadata(world, name)
