"""Hand-built commit messages for committer tests (no data written: the committer never
opens data files)."""

from __future__ import annotations

import itertools
import uuid

from paimon_core.commit_message import CommitMessage
from paimon_core.spec.binary_row import EMPTY_ROW_SERIALIZED, serialize_binary_row
from paimon_core.spec.manifest import DataFileMeta, FileSource
from paimon_core.spec.stats import EMPTY_STATS, unknown_stats
from paimon_core.types import parse_sql_type

_counter = itertools.count()
STRING = parse_sql_type("STRING")
INT = parse_sql_type("INT NOT NULL")


def data_file(rows: int = 10, *, level: int = 0, key_range: tuple[int, int] | None = None,
              arity: int = 2) -> DataFileMeta:
    if key_range is None:
        lo = hi = EMPTY_ROW_SERIALIZED
    else:
        lo = serialize_binary_row([key_range[0]], [INT])
        hi = serialize_binary_row([key_range[1]], [INT])
    n = next(_counter)
    return DataFileMeta(
        f"data-{uuid.uuid4()}-{n}.parquet", 1000 + n, rows, lo, hi, EMPTY_STATS,
        unknown_stats(arity), 0, rows - 1, 0, level, (), 0, 0, None, FileSource.APPEND, None,
        None, None, None,
    )


def part(value: str | None) -> bytes:
    return serialize_binary_row([value], [STRING])


def message(table_path: str, pt: str | None, *files: DataFileMeta, bucket: int = 0,
            total_buckets: int = -1, **kw: tuple[DataFileMeta, ...]) -> CommitMessage:
    return CommitMessage(part(pt), bucket, total_buckets, new_files=tuple(files),
                         table_path=table_path, schema_id=0, **kw)  # type: ignore[arg-type]
