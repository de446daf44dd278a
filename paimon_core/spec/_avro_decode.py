"""Decoding Avro container files into columns: the record-by-record (fastavro) and lock-step
(``_avro_columns``) decoders, the choice between them, and the decoding of several files of
one writer schema in one lock-step pass (:func:`decode_columns_batch`).

The lock-step decoder's first pass (finding where records start) takes one numpy step per
record of the largest block, whatever the number of blocks: decoding the blocks of many files
together costs those steps once instead of once per file.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import fastavro
import numpy as np

from paimon_core.errors import CorruptMetadataError
from paimon_core.spec import _avro_columns as columns
from paimon_core.spec._avro import (
    AvroContainer,
    _Corrupt,
    _fastavro_records,
    _parse,
    _plain_blocks,
)
from paimon_core.spec._avro_schema import (
    SchemaProblem,
    TypeDesc,
    check_required,
    check_writer_schema,
    match_schema,
    strip_logical_types,
)

__all__ = ["Prepared", "decode_columns", "decode_columns_batch", "decode_prepared", "prepare"]

# below this many records plain fastavro decoding is faster (measured: 16 entries took
# 16 ms in lock-step, ~1 ms record by record)
_SMALL_FILE_RECORDS = 256
#: costs (µs) of the decoders, per step of the lock-step pass 1 and per record otherwise,
#: measured on manifests of 1k-37k entries in 4-143 blocks of 259 (lock-step 0.15-0.42 s,
#: fastavro 0.03-0.97 s; they cross at ~30 blocks, as the old rule of thumb of 8 did not)
_LOCKSTEP_STEP_US = 550
_LOCKSTEP_RECORD_US = 8
_FASTAVRO_RECORD_US = 25


def _small_file_rows(schema: Any, blocks: list[tuple[int, bytes]]) -> list[Any] | None:
    """Strict record-by-record decoding of a small file (every block must hold exactly its
    records, every record must be a record) with a :func:`fastavro.parse_schema` schema. None
    on any doubt: the lock-step decoder then decodes it again and names the problem."""
    try:
        rows: list[Any] = []
        for count, raw in blocks:
            bio = io.BytesIO(raw)
            for _ in range(count):
                row = fastavro.schemaless_reader(bio, schema, None)
                if not isinstance(row, dict):
                    return None
                rows.append(row)
            if bio.tell() != len(raw):
                return None
        return rows
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception:
        return None


def _top_record(node: columns.Node) -> columns.Node:
    """The record node of a top-level record or ``["null", record]`` union (pypaimon notes
    that paimon-rust may write the latter)."""
    if node[0] == "record":
        return node
    if node[0] == "union":
        records = [b for b in node[1] if b[0] == "record"]
        if len(records) == 1 and all(b[0] in ("record", "null") for b in node[1]):
            return records[0]  # type: ignore[no-any-return]
    raise _Corrupt("top-level Avro type is not a record")


class _SchemaPlan:
    """What decoding needs from one writer schema, worked out once per distinct schema (a
    table's manifests all share theirs): the nullable paths ``expected`` requires, the
    logical-type free schema, its compiled decoder nodes, and fastavro's parsed form."""

    __slots__ = ("_parsed", "expected", "loose", "node", "record", "stripped")

    def __init__(self, container: AvroContainer, expected: TypeDesc | None) -> None:
        self.expected = expected
        self.loose = (
            match_schema(container.schema, expected, (), {}) if expected is not None else set()
        )
        self.stripped = strip_logical_types(container.schema)
        check_writer_schema(self.stripped)
        try:
            self.node = columns.compile_schema(self.stripped)
        except columns.Unsupported as e:
            raise _Corrupt(f"unsupported writer schema: {e}") from e
        self.record = _top_record(self.node)
        self._parsed: Any = None

    def parsed(self) -> Any:
        if self._parsed is None:
            self._parsed = fastavro.parse_schema(self.stripped)
        return self._parsed


#: accepted writer schemas, by (schema JSON as stored, id of the expected descriptor); the
#: descriptor itself is kept in the plan and compared by identity (ids may be reused)
_PLANS: dict[tuple[bytes, int], _SchemaPlan] = {}
_MAX_PLANS = 64


def _schema_plan(container: AvroContainer, expected: TypeDesc | None) -> _SchemaPlan:
    """The (cached) plan of a container's writer schema; a schema that fails its checks is
    never cached, so it raises again for every file that carries it."""
    key = (container.schema_json, id(expected))
    plan = _PLANS.get(key) if container.schema_json else None
    if plan is not None and plan.expected is expected:
        return plan
    plan = _SchemaPlan(container, expected)
    if container.schema_json:
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        _PLANS[key] = plan
    return plan


def decode_columns(
    data: bytes,
    path: str,
    expected: TypeDesc | None = None,
    select: columns.Select | None = None,
    blocks_kept: BlockFilter | None = None,
) -> tuple[Any, int, Any]:
    """Decode an Avro container file into columns (see ``paimon_core.spec._avro_columns``).

    Args:
        data: the whole file.
        path: its path, for error messages.
        expected: a record descriptor (see :func:`check_schema`): the writer schema is checked
            against it before any block is decoded, and required values that the writer
            declared nullable are checked after.
        select: only the records it keeps are returned (and, in the lock-step decoder, only
            they are decoded beyond the fields it looks at); see ``_avro_columns.Select``.
        blocks_kept: only the records of the blocks it keeps are decoded (see
            :data:`BlockFilter`).

    Returns:
        (writer schema as stored, number of records returned, columns of the root record: a
        dict of field name -> column; non-nullable nested records are dicts of columns again,
        every other column is a list with one plain Python value per record).

    Raises:
        CorruptMetadataError: any structural or decoding problem, a writer schema that does not
            match ``expected``, or an unsupported (recursive) writer schema.
    """
    f = prepare(data, path, expected, blocks_kept)
    n, cols = decode_prepared(f, select)
    return f.schema, n, cols


@dataclass(frozen=True, slots=True)
class Prepared:
    """A container file parsed and checked, its blocks decompressed, not decoded yet."""

    path: str
    schema: Any
    sync: bytes
    plan: _SchemaPlan
    blocks: list[tuple[int, bytes]]
    records: int
    largest_block: int

    @property
    def lockstep(self) -> bool:
        """Whether the lock-step decoder pays off for these blocks (see :func:`lockstep_pays`;
        small files always go record by record)."""
        return self.records > _SMALL_FILE_RECORDS and lockstep_pays(
            self.records, self.largest_block
        )


def lockstep_pays(records: int, largest_block: int) -> bool:
    """Whether decoding ``records`` records whose largest block holds ``largest_block`` in
    lock-step beats fastavro: pass 1 costs one step per record of the largest block, then
    every record costs a little in lock-step and more in fastavro (see the constants)."""
    return largest_block * _LOCKSTEP_STEP_US + records * _LOCKSTEP_RECORD_US < (
        records * _FASTAVRO_RECORD_US
    )


#: Which blocks of a container to decode (indices, ascending), from its header and block
#: counts; None: all. Records of the other blocks are neither decompressed nor decoded.
BlockFilter = Callable[[AvroContainer], "list[int] | None"]


def prepare(
    data: bytes, path: str, expected: TypeDesc | None, blocks_kept: BlockFilter | None = None
) -> Prepared:
    """Parse ``data``, check its writer schema against ``expected``, decompress its blocks
    (those ``blocks_kept`` keeps).

    Raises:
        CorruptMetadataError: as :func:`decode_columns`.
    """
    try:
        container = _parse(data)
        plan = _schema_plan(container, expected)
        kept = blocks_kept(container) if blocks_kept is not None else None
        if kept is not None:
            container = replace(container, blocks=tuple(container.blocks[i] for i in kept))
        blocks = _plain_blocks(container)
    except (_Corrupt, SchemaProblem) as e:
        raise CorruptMetadataError(path, str(e)) from e
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception as e:  # a malformed writer schema trips the schema checks in many ways
        reason = f"cannot read the Avro container: {type(e).__name__}: {e}"
        raise CorruptMetadataError(path, reason) from e
    return Prepared(
        path, container.schema, container.sync, plan, blocks, sum(c for c, _ in blocks),
        max((c for c, _ in blocks), default=0),
    )


def decode_prepared(f: Prepared, select: columns.Select | None) -> tuple[int, Any]:
    """The (number of records returned, columns) of :func:`decode_columns` for ``f``."""
    plan, blocks = f.plan, f.blocks
    try:
        small = (
            _small_file_rows(plan.parsed(), blocks) if f.records <= _SMALL_FILE_RECORDS else None
        )
        if small is not None:
            n, cols = _selected_rows(plan.record, small, select)
        elif f.records > _SMALL_FILE_RECORDS and not f.lockstep:
            rows = _fastavro_records(plan.stripped, f.sync, blocks)
            n, cols = _selected_rows(plan.record, rows, select)
        elif plan.node is not plan.record:  # top-level ["null", record]: values are dicts
            _, rows, _ = columns.decode_columns(plan.node, blocks)
            if any(r is None for r in rows):
                raise _Corrupt("null top-level record")
            n, cols = _selected_rows(plan.record, rows, select)
        else:
            total, cols, kept = columns.decode_columns(plan.node, blocks, select)
            n = total if kept is None else int(kept.size)
    except (_Corrupt, SchemaProblem, columns.Malformed) as e:
        raise CorruptMetadataError(f.path, str(e)) from e
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception as e:  # fastavro raises many kinds (EOFError, ValueError, IndexError, ...)
        reason = f"cannot decode Avro records: {type(e).__name__}: {e}"
        raise CorruptMetadataError(f.path, reason) from e
    if plan.loose:
        check_required(cols, plan.loose, f.path)
    return n, cols


def _selected_rows(
    record: columns.Node, rows: list[Any], select: columns.Select | None
) -> tuple[int, Any]:
    """Columns of the record dicts ``select`` keeps (all without one)."""
    if select is not None:
        names, pick = select
        kept = pick({name: [r.get(name) for r in rows] for name in names})
        if kept is not None:
            rows = [rows[i] for i in kept.tolist()]
    return len(rows), columns.rows_to_columns(record, rows)


#: decompressed bytes decoded together at most: whole records become Python values (about
#: 10x their encoded size while a batch is turned into objects), selected ones rarely
_BATCH_BYTES = 8 << 20
_SELECTIVE_BATCH_BYTES = 32 << 20


def decode_columns_batch(
    files: Iterable[tuple[bytes, str]],
    expected: TypeDesc | None = None,
    select: columns.Select | None = None,
    blocks_kept: BlockFilter | None = None,
) -> Iterator[tuple[int, Any]]:
    """:func:`decode_columns` of each file in turn -- ``(number of records returned,
    columns)``, same values, same errors --, consecutive files of one writer schema that the
    lock-step decoder suits decoded together (up to :data:`_BATCH_BYTES` of blocks at a time,
    :data:`_SELECTIVE_BATCH_BYTES` with ``select``). Files are decompressed batch by batch and
    each result is handed over as soon as its batch is decoded."""
    limit = _BATCH_BYTES if select is None else _SELECTIVE_BATCH_BYTES
    pending: list[Prepared] = []
    size = 0
    for data, path in files:
        f = prepare(data, path, expected, blocks_kept)
        n = sum(len(b) for _, b in f.blocks)
        if pending and (f.plan is not pending[0].plan or size + n > limit):
            yield from _decode_pending(pending, select)
            pending, size = [], 0
        if f.records > _SMALL_FILE_RECORDS and f.plan.node is f.plan.record:
            pending.append(f)
            size += n
        else:  # decoded alone, after the files before it (results stay in file order)
            yield from _decode_pending(pending, select)
            pending, size = [], 0
            yield decode_prepared(f, select)
    yield from _decode_pending(pending, select)


def _decode_pending(files: list[Prepared], select: columns.Select | None) -> list[tuple[int, Any]]:
    records = sum(f.records for f in files)
    largest = max((f.largest_block for f in files), default=0)
    if len(files) > 1 and lockstep_pays(records, largest):
        return _decode_together(files, select)
    return [decode_prepared(f, select) for f in files]


def _decode_together(
    files: list[Prepared], select: columns.Select | None
) -> list[tuple[int, Any]]:
    """Files of one (record) writer schema in one lock-step pass, the columns split back per
    file; when the pass fails, file by file (so that the error names the broken file)."""
    try:
        _, cols, kept = columns.decode_columns(
            files[0].plan.node, [b for f in files for b in f.blocks], select
        )
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception:
        return [decode_prepared(f, select) for f in files]
    bounds = np.cumsum([0] + [f.records for f in files])
    if kept is not None:
        bounds = np.searchsorted(kept, bounds)
    out = []
    for f, lo, hi in zip(files, bounds[:-1].tolist(), bounds[1:].tolist()):
        part = _rows(cols, lo, hi)
        if f.plan.loose:
            check_required(part, f.plan.loose, f.path)
        out.append((hi - lo, part))
    return out


def _rows(cols: Any, lo: int, hi: int) -> Any:
    if isinstance(cols, dict):
        return {name: _rows(col, lo, hi) for name, col in cols.items()}
    return cols[lo:hi]
