"""A read-only file of known size on an object store, read in as few GETs as possible.

Format readers (Parquet through ``pa.PythonFile``) ask for a file's size, then its tail (the
footer), then the column chunks. Opened through fsspec, each open costs a ``HEAD`` for the
size and each read its own ranged ``GET``. The manifests already record every data file's
size, so :class:`RangeReader` takes it and never asks the store; its first read fetches the
whole file when the file is at most ``whole_file_bytes`` (one ``GET`` serves footer and data:
a small file is one request), else the requested range widened to at least the last
``tail_bytes`` of the file (the footer and, often, the last column chunks); later reads are
served from the blocks fetched before when one covers them, else by one ranged ``GET`` (Arrow's
pre-buffering coalesces neighbouring column chunks into one read).

A streamed read (``ParquetFile(buffer_size=...)``) reads every column chunk as its own
sequential stream of small reads (256 KiB), interleaved across the columns. A read that
continues where an earlier one ended is such a stream: it fetches ahead, an equal share of
``cache_bytes`` per stream (at most ``read_ahead_bytes``), and the blocks stay in a
least-recently-used cache of at most ``cache_bytes``. So an 87 MB file of four columns streams
in about a dozen ``GET``s, not one per 256 KiB, with at most ``cache_bytes`` held per open file.
"""

from __future__ import annotations

import io
from collections import OrderedDict
from collections.abc import Callable

#: files up to this size are fetched whole by their first read
WHOLE_FILE_BYTES = 1 << 20
#: the least a first read of a larger file fetches from its end (footer + last chunks)
TAIL_BYTES = 64 << 10
#: the most one sequential stream (a column chunk read in small pieces) fetches ahead
READ_AHEAD_BYTES = 8 << 20
#: the fetched blocks one open file keeps (least recently used dropped first)
CACHE_BYTES = 32 << 20
#: read positions remembered to tell a continuing stream from a new one
_CURSORS = 256
#: a stream counts as active (sharing the cache) while it was read within this many reads
_ACTIVE_WINDOW = 64

#: ``fetch(start, end)``: bytes ``[start, end)`` of the file, one request
Fetch = Callable[[int, int], bytes]


class RangeReader(io.RawIOBase):
    """Seekable, read-only view of ``size`` bytes fetched through ``fetch``.

    Args:
        path: for messages.
        size: the file's exact size (from its manifest entry).
        fetch: reads ``[start, end)`` in one request.
    """

    def __init__(self, path: str, size: int, fetch: Fetch, *,
                 whole_file_bytes: int = WHOLE_FILE_BYTES,
                 tail_bytes: int = TAIL_BYTES,
                 read_ahead_bytes: int = READ_AHEAD_BYTES,
                 cache_bytes: int = CACHE_BYTES) -> None:
        super().__init__()
        if size < 0:
            raise ValueError(f"negative size {size} for {path}")
        self.path = path
        self.size = size
        self._fetch = fetch
        self._whole = whole_file_bytes
        self._tail = tail_bytes
        self._ahead = read_ahead_bytes
        self._cache_cap = cache_bytes
        self._pos = 0
        #: fetched blocks by start offset, least recently used first
        self._blocks: OrderedDict[int, bytes] = OrderedDict()
        self._cached = 0
        #: where recent reads ended (a read starting there continues a stream) -> read number
        self._cursors: OrderedDict[int, int] = OrderedDict()
        self._reads = 0
        #: requests made (for tests and diagnostics)
        self.fetches = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self.size + offset
        else:
            raise ValueError(f"bad whence {whence}")
        if pos < 0:
            raise ValueError(f"negative seek position {pos} in {self.path}")
        self._pos = pos
        return pos

    def read(self, n: int | None = -1) -> bytes:
        start = min(self._pos, self.size)
        end = self.size if n is None or n < 0 else min(self.size, start + n)
        data = self._range(start, end)
        self._pos = start + len(data)
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        memoryview(buffer)[: len(data)] = data
        return len(data)

    def _range(self, start: int, end: int) -> bytes:
        if start >= end:
            return b""
        data = self._cached_range(start, end)
        if data is None:
            data = self._miss(start, end)
        self._reads += 1
        self._cursors.pop(start, None)
        self._cursors[end] = self._reads
        while len(self._cursors) > _CURSORS:
            self._cursors.popitem(last=False)
        return data

    def _cached_range(self, start: int, end: int) -> bytes | None:
        for b0, block in reversed(self._blocks.items()):
            if b0 <= start and end <= b0 + len(block):
                self._blocks.move_to_end(b0)
                return block[start - b0 : end - b0]
        return None

    def _miss(self, start: int, end: int) -> bytes:
        if self.fetches == 0 and (self.size <= self._whole or end > self.size - self._tail):
            # the first read: the whole of a small file, else at least the tail
            lo = 0 if self.size <= self._whole else min(start, self.size - self._tail)
            self._keep(lo, self._get(lo, self.size))
            return self._cached_range(start, end) or b""
        if start not in self._cursors:
            return self._get(start, end)  # a new stream, or a one-off read: exactly that
        # a stream continues: fetch ahead, an equal share of the cache per active stream
        streams = 0
        for n in reversed(self._cursors.values()):
            if n <= self._reads - _ACTIVE_WINDOW:
                break
            streams += 1
        streams = max(1, streams)
        ahead = min(self._ahead, max(end - start, self._cache_cap // streams))
        hi = min(self.size, max(end, start + ahead))
        self._keep(start, self._get(start, hi))
        return self._cached_range(start, end) or b""

    def _keep(self, start: int, block: bytes) -> None:
        old = self._blocks.pop(start, None)
        self._cached += len(block) - (len(old) if old is not None else 0)
        self._blocks[start] = block
        while self._cached > self._cache_cap and len(self._blocks) > 1:
            _, dropped = self._blocks.popitem(last=False)
            self._cached -= len(dropped)

    def _get(self, start: int, end: int) -> bytes:
        self.fetches += 1
        data = self._fetch(start, end)
        if len(data) != end - start:
            raise OSError(
                f"{self.path}: read {len(data)} bytes at {start}, expected {end - start} "
                f"(the file is shorter than the {self.size} bytes its metadata records)"
            )
        return data
