"""A minimal phase-one writer producing real Parquet data files and commit messages.

Used only while ``paimon_core.write.table_write`` is not available (``writer_for`` prefers the
real ``FileStoreTable.new_write``). Supports append tables (unaware bucket) and primary-key
tables with a fixed bucket count; sequence numbers are restored per (partition, bucket) from
the latest snapshot when the writer first touches the bucket, as Java's writers do.
All files are written through the table's FileIO (so fault injection sees them).
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from paimon_core.bucket import bucket_ids
from paimon_core.commit_message import CommitMessage
from paimon_core.io.file_io import join
from paimon_core.options import CoreOptions
from paimon_core.spec.binary_row import EMPTY_ROW_SERIALIZED, serialize_binary_row
from paimon_core.spec.file_entries import live_files
from paimon_core.spec.manifest import DataFileMeta, FileSource
from paimon_core.spec.partition import partition_path
from paimon_core.spec.stats import EMPTY_STATS, unknown_stats
from paimon_core.table import FileStoreTable
from paimon_core.types import to_arrow_type

SEQ, KIND = "_SEQUENCE_NUMBER", "_VALUE_KIND"


class MiniTableWrite:
    def __init__(self, table: FileStoreTable, commit_user: str) -> None:
        self.table = table
        self.commit_user = commit_user
        self.schema = table.schema
        self.pending: dict[tuple[bytes, int], list[pa.Table]] = defaultdict(list)
        self.part_values: dict[bytes, list[Any]] = {}
        self.next_seq: dict[tuple[bytes, int], int] = {}
        self.written: list[CommitMessage] = []

    # ---- API shaped like paimon_core.write.table_write.TableWrite
    def write_arrow(self, data: pa.Table, row_kind_column: str | None = None) -> None:
        kinds = None
        if row_kind_column is not None:
            codes = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}
            kinds = pa.array([codes[k] for k in data.column(row_kind_column).to_pylist()],
                             pa.int8())
            data = data.drop([row_kind_column])
        s = self.schema
        cols = [data.column(f.name).cast(to_arrow_type(f.type)) for f in s.fields]
        data = pa.Table.from_arrays(cols, names=[f.name for f in s.fields])
        if kinds is None:
            kinds = pa.array(np.zeros(data.num_rows, np.int8))
        data = data.append_column(KIND, kinds)
        pkeys = list(s.partition_keys)
        ptypes = [s.field(k).type for k in pkeys]
        nb = s.num_buckets
        if s.primary_keys and nb > 0:
            bk = list(s.bucket_keys)
            buckets = bucket_ids([data.column(k) for k in bk], [s.field(k).type for k in bk], nb)
        else:
            buckets = np.zeros(data.num_rows, np.int32)
        part_rows = [tuple(r.values()) for r in data.select(pkeys).to_pylist()] if pkeys else [
            ()] * data.num_rows
        groups: dict[tuple[tuple[Any, ...], int], list[int]] = defaultdict(list)
        for i, (pv, b) in enumerate(zip(part_rows, buckets.tolist())):
            groups[(pv, b)].append(i)
        for (pv, b), idx in groups.items():
            pbytes = serialize_binary_row(list(pv), ptypes)
            self.part_values[pbytes] = list(pv)
            self.pending[(pbytes, b)].append(data.take(pa.array(idx)))

    def prepare_commit(self) -> list[CommitMessage]:
        out = []
        for (pbytes, bucket), parts in self.pending.items():
            t = pa.concat_tables(parts)
            meta = self._write_file(pbytes, bucket, t)
            out.append(CommitMessage(pbytes, bucket, self._total_buckets(), new_files=(meta,),
                                     table_path=self.table.path, schema_id=self.schema.id))
        self.pending.clear()
        self.written += out
        return out

    def abort(self) -> None:
        self.table.new_commit(self.commit_user).abort(self.written)
        self.written = []

    # ---- internals
    def _total_buckets(self) -> int:
        return self.schema.num_buckets if self.schema.primary_keys else -1

    def bucket_dir(self, pbytes: bytes, bucket: int) -> str:
        s = self.schema
        pp = partition_path(self.part_values[pbytes], list(s.partition_keys),
                            [s.field(k).type for k in s.partition_keys],
                            CoreOptions(s.options).partition_default_name)
        return join(self.table.path, pp, f"bucket-{bucket}") if pp else join(
            self.table.path, f"bucket-{bucket}")

    def _restore_seq(self, pbytes: bytes, bucket: int) -> int:
        key = (pbytes, bucket)
        if key not in self.next_seq:
            snap = self.table.snapshot_manager.latest_snapshot()
            mx = -1
            if snap is not None:
                mio = self.table.manifest_io
                metas = mio.manifest_list(snap.base_manifest_list) + mio.manifest_list(
                    snap.delta_manifest_list)
                entries = [e for m in metas for e in mio.manifest(m.file_name)]
                for e in live_files(entries):
                    if e.partition == pbytes and e.bucket == bucket:
                        mx = max(mx, e.file.max_sequence_number)
            self.next_seq[key] = mx + 1
        return self.next_seq[key]

    def _write_file(self, pbytes: bytes, bucket: int, t: pa.Table) -> DataFileMeta:
        s = self.schema
        n = t.num_rows
        name = f"data-{uuid.uuid4()}-0.parquet"
        min_key = max_key = EMPTY_ROW_SERIALIZED
        key_stats = EMPTY_STATS
        min_seq, max_seq = 0, max(n - 1, 0)
        kinds = t.column(KIND)
        values = t.drop([KIND])
        if s.primary_keys:
            keys = list(s.trimmed_primary_keys)
            ktypes = [s.field(k).type.with_nullable(False) for k in keys]
            order = pc.sort_indices(values, [(k, "ascending") for k in keys])
            values, kinds = values.take(order), kinds.take(order)
            start = self._restore_seq(pbytes, bucket)
            seqs = pa.array(np.arange(start, start + n, dtype=np.int64))
            self.next_seq[(pbytes, bucket)] = start + n
            min_seq, max_seq = start, start + n - 1
            arrays = [values.column(k).cast(to_arrow_type(t_)) for k, t_ in zip(keys, ktypes)]
            names = ["_KEY_" + k for k in keys]
            file_t = pa.Table.from_arrays([*arrays, seqs, kinds, *values.columns],
                                          names=[*names, SEQ, KIND, *values.column_names])
            lo = [values.column(k)[0].as_py() for k in keys]
            hi = [values.column(k)[n - 1].as_py() for k in keys]
            min_key, max_key = serialize_binary_row(lo, ktypes), serialize_binary_row(hi, ktypes)
            key_stats = unknown_stats(len(keys))
        else:
            file_t = values
        sink = pa.BufferOutputStream()
        pq.write_table(file_t, sink)
        data = sink.getvalue().to_pybytes()
        self.table.file_io.write_bytes(join(self.bucket_dir(pbytes, bucket), name), data)
        return DataFileMeta(
            name, len(data), n, min_key, max_key, key_stats, unknown_stats(len(s.fields)),
            min_seq, max_seq, s.id, 0, (), int(time.time() * 1000), 0, None, FileSource.APPEND,
            None, None, None, None,
        )


def writer_for(table: FileStoreTable, commit_user: str) -> Any:
    """The real TableWrite when it exists, else :class:`MiniTableWrite`."""
    new_write = getattr(table, "new_write", None)
    if new_write is not None:
        return new_write(commit_user)
    return MiniTableWrite(table, commit_user)
