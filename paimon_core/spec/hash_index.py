"""Dynamic-bucket hash index files: ``index/index-<uuid>-<n>``.

Mirrors ``org.apache.paimon.index.HashIndexFile`` (``IntFileUtils.writeInts`` / ``readInts``):
the file is the concatenation of big-endian int32 hash codes, one per primary key stored in
the bucket (``BinaryRow.hashCode()`` of the trimmed primary key, :func:`paimon_core.bucket.
hash_codes`), no header and no footer; its index manifest entry (type ``HASH``) records the
byte size and ``_ROW_COUNT`` = the number of ints. Java writes the ints of an ``IntHashSet``
(any order, no duplicates); we write them ascending.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from paimon_core.errors import CorruptMetadataError

__all__ = ["decode_hash_index", "encode_hash_index"]

_BE_INT32 = np.dtype(">i4")


def encode_hash_index(hashes: npt.NDArray[np.int32]) -> bytes:
    """The bytes of a hash index file holding ``hashes`` (in the given order)."""
    return np.asarray(hashes, dtype=np.int32).astype(_BE_INT32).tobytes()


def decode_hash_index(data: bytes, path: str) -> npt.NDArray[np.int32]:
    """The hash codes of a hash index file (int32, in file order).

    Raises:
        CorruptMetadataError: a length that is not a multiple of 4.
    """
    if len(data) % 4:
        raise CorruptMetadataError(
            path, f"hash index of {len(data)} bytes is not a sequence of int32 values")
    return np.frombuffer(data, dtype=_BE_INT32).astype(np.int32)
