"""Bitmaps whose pyroaring 1.2 (CRoaring) serializations are stored in data/roaring_pyroaring.npz.

The fixture was written by running, in the oracle's venv (which has pyroaring)::

    for name, (values, run_optimize) in roaring_cases().items():
        b = (pyroaring.BitMap64 if name == "b64" else pyroaring.BitMap)(values.tolist())
        if run_optimize:
            b.run_optimize()
        fixture[name] = b.serialize()

``run_optimize`` turns eligible containers into run containers (cookie 12347), as Java's
``RoaringBitmap32.serialize`` does before writing a deletion vector.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def roaring_cases() -> dict[str, tuple[npt.NDArray[np.int64], bool]]:
    def scattered(n: int, modulus: int) -> npt.NDArray[np.int64]:
        # n distinct pseudo-random values below modulus (a power of two; odd multiplier)
        return (np.arange(n, dtype=np.int64) * 40503 + 17) % modulus

    def arr(values: object) -> npt.NDArray[np.int64]:
        return np.unique(np.asarray(values, dtype=np.int64))

    return {
        "single0": (arr([0]), False),
        "empty": (arr([]), False),
        "run_and_array": (arr([*range(10, 20), 100000]), True),
        "bitmap_run_array": (
            arr(np.concatenate([scattered(5000, 65536), np.arange(70000, 80000), [2**31 - 1]])),
            True,
        ),
        "six_runs": (
            arr([v for k in range(6) for v in range(k * 65536 + 5, k * 65536 + 300)]),
            True,
        ),
        "many_no_run": (arr(scattered(2000, 1 << 20)), False),
        "full_container_run": (arr(np.arange(65536)), True),
        "full_container_bitmap": (arr(np.arange(65536, 2 * 65536)), False),
        "b64": (
            arr([1, 5, (3 << 32) + 7, (3 << 32) + 8, 5 << 32, *range(7 << 32, (7 << 32) + 5000)]),
            True,
        ),
    }
