"""A read-only file of known size on an object store, read in as few GETs as possible.

Format readers (Parquet through ``pa.PythonFile``) ask for a file's size, then its tail (the
footer), then the column chunks. Opened through fsspec, each open costs a ``HEAD`` for the
size and each read its own ranged ``GET``. The manifests already record every data file's
size, so :class:`RangeReader` takes it and never asks the store; its first read fetches the
whole file when the file is at most ``whole_file_bytes`` (one ``GET`` serves footer and data:
a small file is one request), else the requested range widened to at least the last
``tail_bytes`` of the file (the footer and, often, the last column chunks); later reads are
served from that block when it covers them and by one ranged ``GET`` each otherwise (Arrow's
pre-buffering coalesces neighbouring column chunks into one read).
"""

from __future__ import annotations

import io
from collections.abc import Callable

#: files up to this size are fetched whole by their first read
WHOLE_FILE_BYTES = 1 << 20
#: the least a first read of a larger file fetches from its end (footer + last chunks)
TAIL_BYTES = 64 << 10

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
                 tail_bytes: int = TAIL_BYTES) -> None:
        super().__init__()
        if size < 0:
            raise ValueError(f"negative size {size} for {path}")
        self.path = path
        self.size = size
        self._fetch = fetch
        self._whole = whole_file_bytes
        self._tail = tail_bytes
        self._pos = 0
        self._block_start = 0
        self._block = b""
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
        b0, b1 = self._block_start, self._block_start + len(self._block)
        if b0 <= start and end <= b1:
            return self._block[start - b0 : end - b0]
        if self.fetches == 0 and (self.size <= self._whole or end > self.size - self._tail):
            # the first read: the whole of a small file, else at least the tail
            lo = 0 if self.size <= self._whole else min(start, self.size - self._tail)
            self._block_start, self._block = lo, self._get(lo, self.size)
            return self._block[start - lo : end - lo]
        return self._get(start, end)

    def _get(self, start: int, end: int) -> bytes:
        self.fetches += 1
        data = self._fetch(start, end)
        if len(data) != end - start:
            raise OSError(
                f"{self.path}: read {len(data)} bytes at {start}, expected {end - start} "
                f"(the file is shorter than the {self.size} bytes its metadata records)"
            )
        return data
