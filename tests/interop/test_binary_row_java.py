"""Cross-check against real Paimon 0.9 code (the oracle's bridge jar): BinaryRow bytes from
Paimon's generated projection (the code path of partitions, keys and bucket keys), their
``hashCode()``, partition paths from ``InternalRowPartitionComputer`` + ``PartitionPathUtils``,
and ``Double/Float.toString`` of the JDK that runs it (17: the legacy algorithm)."""

from __future__ import annotations

import math
import random
import struct

import numpy as np
import pytest

from paimon_core.bucket import hash_binary_row, hash_codes
from paimon_core.spec.binary_row import decode_binary_row, encode_binary_row
from paimon_core.spec.partition import (
    java_double_to_string,
    java_float_to_string,
    partition_path,
)
from paimon_core.types import AtomicType, TypeRoot
from tests.interop.java_harness import JavaHarness
from tests.rowgen import ALL_TYPES, arrow_column, java_value, parse, random_rows

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> JavaHarness:
    return JavaHarness(tmp_path_factory.mktemp("java"))


def _schemas() -> list[list[str]]:
    rnd = random.Random(7)
    schemas = [[t] for t in ALL_TYPES]
    schemas.append(ALL_TYPES)  # one wide row with every type
    schemas += [rnd.sample(ALL_TYPES, rnd.randint(2, 6)) for _ in range(12)]
    schemas.append(["INT"] * 60)  # two-word null bit set (W = 16)
    schemas.append(["STRING", "DECIMAL(38, 10)", "TIMESTAMP(9)", "STRING", "TIMESTAMP(6)"])
    return schemas


def test_rows_and_hashes_match_java(java: JavaHarness) -> None:
    schemas = _schemas()
    lines: list[str] = []
    cases = []
    for i, names in enumerate(schemas):
        types = parse(names)
        rows = random_rows(types, 40, seed=i, null_rate=0.15)
        lines.append("T " + ";".join(names))
        lines += ["V " + ";".join(java_value(v, t) for v, t in zip(r, types)) for r in rows]
        cases.append((types, rows))
    out = iter(java.run(lines))
    checked = 0
    for types, rows in cases:
        assert next(out) == "ok"
        hashes = []
        for row in rows:
            hexbytes, jhash = next(out).split(" ")
            ours = encode_binary_row(row, types)
            assert ours.hex() == hexbytes, (types, row)
            assert hash_binary_row(ours) == int(jhash)
            back = decode_binary_row(bytes.fromhex(hexbytes), types, exact_timestamps=True)
            again = encode_binary_row(back, types)
            assert again.hex() == hexbytes
            hashes.append(int(jhash))
            checked += 1
        cols = [arrow_column([r[j] for r in rows], t) for j, t in enumerate(types)]
        assert hash_codes(cols, types).tolist() == hashes, types
    assert checked == 40 * len(schemas)


PARTITION_TYPES = [n for n in ALL_TYPES if not n.startswith(("BINARY", "VARBINARY", "BYTES"))]


def test_partition_paths_match_java(java: JavaHarness) -> None:
    lines: list[str] = []
    cases = []
    for i, name in enumerate(PARTITION_TYPES):
        types = parse([name, "STRING"])
        rows = random_rows(types, 30, seed=100 + i, null_rate=0.15)
        rows += [[None, ""], [None, "  "], [None, "\t\n"], [None, "../../x"], [None, "a/b=c"],
                 [None, "\u3000"], [None, "\u00a0"], [None, ".."]]
        lines.append("T " + ";".join([name, "STRING"]))
        lines += ["P " + ";".join(java_value(v, t) for v, t in zip(r, types)) for r in rows]
        cases.append((types, rows))
    out = iter(java.run(lines))
    for types, rows in cases:
        assert next(out) == "ok"
        for row in rows:
            expected = next(out)
            assert expected.endswith("/")
            assert partition_path(row, ["f0", "f1"], types) == expected[:-1], (types, row)


def test_float_to_string_matches_jdk(java: JavaHarness) -> None:
    rnd = random.Random(3)
    doubles = [1.0, 1e10, 1e-5, 1e-3, 100.0, 1e7, 9999999.0, 0.1, 5e-324, 1e-323, 2e23,
               1.7976931348623157e308, 2.2250738585072014e-308, -0.0, math.inf, -math.inf]
    doubles += [struct.unpack("<d", struct.pack("<Q", rnd.getrandbits(64)))[0]
                for _ in range(3000)]
    doubles += [round(rnd.uniform(-1e4, 1e4), rnd.randint(0, 4)) for _ in range(1000)]
    floats = [1.0, 1e10, 1e-5, 0.1, 1.1, 1e-45, 3.4028235e38, 1.17549435e-38, 16777216.0]
    floats += [float(np.array(rnd.getrandbits(32), dtype=np.uint32).view(np.float32))
               for _ in range(3000)]
    doubles = [d for d in doubles if not math.isnan(d)] + [math.nan]
    floats = [f for f in floats if not math.isnan(f)] + [math.nan]
    lines = [f"D {struct.unpack('<Q', struct.pack('<d', d))[0]:016x}" for d in doubles]
    lines += [f"F {struct.unpack('<I', struct.pack('<f', f))[0]:08x}" for f in floats]
    out = java.run(lines)
    ours = [java_double_to_string(d) for d in doubles] + [java_float_to_string(f) for f in floats]
    mismatches = [(v, j, o) for v, j, o in zip(doubles + floats, out, ours) if j != o]
    assert not mismatches[:10]


def test_decimal_and_timestamp_null_forms_match_java(java: JavaHarness) -> None:
    names = ["DECIMAL(20, 2)", "TIMESTAMP(6)", "TIMESTAMP_LTZ(9)", "DECIMAL(5, 1)", "TIMESTAMP(3)"]
    types = parse(names)
    out = java.run(["T " + ";".join(names), "V " + ";".join(["\\N"] * 5)])
    ours = encode_binary_row([None] * 5, types)
    assert out[1].split(" ")[0] == ours.hex()
    # fixed part 8 + 5*8 = 48, then 16 + 8 + 8 reserved zero bytes
    assert len(ours) == 48 + 32
    assert all(isinstance(t, AtomicType) and t.root is not TypeRoot.ARRAY for t in types)
