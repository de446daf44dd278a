"""Run with the oracle's Python (pypaimon 2.1): print the canonical lines of a table read at a
tag (``scan.tag-name``), the same format as ``paimon read``. Usage:
``python pypaimon_tag_read.py ORACLE_PY WAREHOUSE DB.TABLE TAG``."""

from __future__ import annotations

import importlib.util
import sys


def main() -> None:
    oracle_py, warehouse, table, tag = sys.argv[1:5]
    spec = importlib.util.spec_from_file_location("paimon_oracle", oracle_py)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod._PYPAIMON_COMPAT["on"] = True  # Java 0.9 manifests (oracle README 4.1)
    eng = mod.PyPaimonEngine()
    t = eng.get_table(warehouse, table)
    fields = eng._schema_fields(t)
    rb = t.copy({"scan.tag-name": tag}).new_read_builder()
    splits = rb.new_scan().plan().splits()
    for line in mod.canonical_lines(eng._to_arrow(rb, splits), fields):
        print(line)


if __name__ == "__main__":
    main()
