"""The catalog's manifest cache (Java's ``CachingCatalog``): shared by the catalog's tables,
bounded, keyed by path and checked against the recorded size, and off with
``cache-enabled=false``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_core.catalog import FileSystemCatalog
from paimon_core.errors import CorruptMetadataError
from paimon_core.manifest_io import ManifestCache
from tests.tables import make_catalog, make_table, write_rows


def _table(wh: Path, options: dict[str, str] | None = None) -> FileSystemCatalog:
    cat = make_catalog(wh, options)
    t = make_table(cat, [("id", "BIGINT"), ("v", "STRING")], primary_keys=["id"],
                   options={"bucket": "2"})
    for i in range(3):
        write_rows(t, pa.table({"id": pa.array([i, i + 10], pa.int64()), "v": ["a", "b"]}), i)
    return cat


def _count_decodes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import paimon_core.manifest_io as mio

    seen: list[str] = []
    real_m, real_l, real_ms = mio.decode_manifest, mio.decode_manifest_list, mio.decode_manifests

    def m(data: bytes, path: str, *args: Any) -> object:
        seen.append(path)
        return real_m(data, path, *args)

    def ms(files: Sequence[tuple[bytes, str]], *args: Any) -> object:
        seen.extend(path for _, path in files)  # several manifests decoded together
        return real_ms(files, *args)

    def lst(data: bytes, path: str) -> object:
        seen.append(path)
        return real_l(data, path)

    monkeypatch.setattr(mio, "decode_manifest", m)
    monkeypatch.setattr(mio, "decode_manifests", ms)
    monkeypatch.setattr(mio, "decode_manifest_list", lst)
    return seen


def test_tables_of_one_catalog_share_decoded_manifests(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    writer = _table(tmp_path / "wh")
    seen = _count_decodes(monkeypatch)
    # the writing catalog cached what its commits wrote: its reads decode nothing
    first = writer.get_table("db.t").to_arrow().sort_by("id")
    assert seen == []
    cat = FileSystemCatalog(str(tmp_path / "wh"))
    assert cat.get_table("db.t").to_arrow().sort_by("id").equals(first)
    n = len(seen)
    assert n > 0
    again = cat.get_table("db.t").to_arrow().sort_by("id")  # a new table object
    assert seen[n:] == [] and again.equals(first)
    # another catalog has its own cache: it decodes every list and manifest of the snapshot
    t = FileSystemCatalog(str(tmp_path / "wh")).get_table("db.t")
    t.to_arrow()
    snap = t.latest_snapshot()
    assert snap is not None
    metas = t.manifest_io.data_manifests(snap)
    assert len(seen) - n == 2 + len(metas)


def test_cache_disabled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cat = _table(tmp_path / "wh", {"cache-enabled": "false"})
    assert cat.manifest_cache is None
    seen = _count_decodes(monkeypatch)
    cat.get_table("db.t").to_arrow()
    n = len(seen)
    cat.get_table("db.t").to_arrow()
    assert len(seen) == 2 * n  # a fresh table object decodes again


def test_size_mismatch_is_not_served_from_the_cache(tmp_path: Path) -> None:
    cat = _table(tmp_path / "wh")
    t = cat.get_table("db.t")
    t.to_arrow()
    snap = t.latest_snapshot()
    assert snap is not None
    metas = t.manifest_io.data_manifests(snap)
    m = metas[0]
    assert t.manifest_io.is_cached(m.file_name, m.file_size)
    assert not t.manifest_io.is_cached(m.file_name, m.file_size + 1)
    with pytest.raises(CorruptMetadataError, match="bytes, but"):
        t.manifest_io.manifest(m.file_name, m.file_size + 1)


def test_bounded_by_bytes_and_threshold() -> None:
    c = ManifestCache(memory=100, threshold=60)
    c.put("a", 50, "A")
    c.put("b", 40, "B")
    assert c.get("a", 50) == "A" and c.get("b", None) == "B"
    c.put("big", 61, "X")  # above the threshold: not kept
    assert c.get("big", None) is None
    c.put("c", 30, "C")  # 50 + 40 + 30 > 100: the least recently used ("a"... read first) goes
    assert c.get("a", None) is None
    assert c.get("b", 40) == "B" and c.get("c", 30) == "C"
    assert c.get("c", 31) is None  # size recorded elsewhere differs: not a hit
