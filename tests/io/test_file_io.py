from __future__ import annotations

import pickle
import threading

import pytest

from paimon_core.errors import FileNotFoundInTableError, StorageError
from paimon_core.io.file_io import FileIO, join


@pytest.fixture(params=["local", "memory", "s3"])
def fio(request: pytest.FixtureRequest, tmp_path: object) -> tuple[FileIO, str]:
    if request.param == "local":
        root = str(tmp_path)
        return FileIO(root), root
    if request.param == "memory":
        import uuid

        root = f"memory://t{uuid.uuid4().hex}"
        return FileIO(root), root
    root, opts = request.getfixturevalue("s3_root")
    return FileIO(root, opts), root


def test_round_trip_and_listing(fio: tuple[FileIO, str]) -> None:
    io, root = fio
    p = join(root, "a", "b.txt")
    io.write_bytes(p, b"hello")
    assert io.read_bytes(p) == b"hello"
    assert io.exists(p)
    assert io.size(p) == 5
    assert io.list_names(join(root, "a")) == ["b.txt"]
    # a listing right after a new write sees it (no stale cache)
    io.write_bytes(join(root, "a", "c.txt"), b"x")
    assert sorted(io.list_names(join(root, "a"))) == ["b.txt", "c.txt"]
    assert io.delete(p) is True
    assert io.delete(p) is False
    assert not io.exists(p)
    assert io.list_names(join(root, "missing")) == []


def test_missing_file_is_typed(fio: tuple[FileIO, str]) -> None:
    io, root = fio
    with pytest.raises(FileNotFoundInTableError) as ei:
        io.read_bytes(join(root, "nope"))
    assert "nope" in str(ei.value)


def test_read_range(fio: tuple[FileIO, str]) -> None:
    io, root = fio
    p = join(root, "r.bin")
    data = bytes(range(256)) * 40
    io.write_bytes(p, data)
    assert io.read_range(p, 0, 10) == data[:10]
    assert io.read_range(p, 1000, 2000) == data[1000:3000]
    assert io.read_range(p, len(data) - 5, 100) == data[-5:]  # fewer at the end
    assert io.read_range(p, 7, 0) == b""
    with pytest.raises(ValueError, match="range"):
        io.read_range(p, -1, 5)
    with pytest.raises(FileNotFoundInTableError):
        io.read_range(join(root, "nope"), 0, 5)


def test_try_create_is_exclusive(fio: tuple[FileIO, str]) -> None:
    io, root = fio
    p = join(root, "snapshot", "snapshot-1")
    assert io.try_create(p, b"first") is True
    assert io.try_create(p, b"second") is False
    assert io.read_bytes(p) == b"first"


def test_try_create_race_has_one_winner(fio: tuple[FileIO, str]) -> None:
    io, root = fio
    p = join(root, "race", "snapshot-7")
    wins: list[int] = []
    barrier = threading.Barrier(16)

    def attempt(i: int) -> None:
        barrier.wait()
        if io.try_create(p, str(i).encode()):
            wins.append(i)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
    assert io.read_bytes(p) == str(wins[0]).encode()


def test_pickles_without_live_filesystem(fio: tuple[FileIO, str]) -> None:
    io, root = fio
    io.write_bytes(join(root, "x"), b"1")
    clone = pickle.loads(pickle.dumps(io))
    assert clone.root == io.root
    if io.scheme != "memory":  # memory:// is per process
        assert clone.read_bytes(join(root, "x")) == b"1"


def test_unknown_scheme() -> None:
    with pytest.raises(StorageError):
        FileIO("ftp://host/x")
