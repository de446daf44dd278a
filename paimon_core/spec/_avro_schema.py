"""Writer-schema handling for Paimon's Avro metadata files.

* safety checks run before any record is decoded: arrays of zero-size items and zero-size
  records are rejected (a corrupt count could otherwise make a decoder loop without consuming
  input);
* reader-side expectations: readers match fields by name, as Java's
  ``FieldReaderFactory.RowReader`` does; the writer schema is checked against what the reader
  expects, so that a file of the wrong shape fails with one clear
  :class:`~paimon_core.errors.CorruptMetadataError` instead of odd values later.

A type descriptor (``TypeDesc``) is ``"int"``/``"long"`` (either Avro integer type accepted),
``"string"``, ``"bytes"``, ``("array", item descriptor, items nullable)`` or
``("record", {field name: (descriptor, required)})``; optional (not required) fields may be
absent from the writer schema and may be null.
"""

from __future__ import annotations

import json
from typing import Any

from paimon_core.errors import CorruptMetadataError

__all__ = [
    "SchemaProblem",
    "TypeDesc",
    "check_required",
    "check_schema",
    "check_writer_schema",
    "match_schema",
    "min_size",
    "strip_logical_types",
]

#: Reader-side type descriptor, see the module docstring.
TypeDesc = Any
_INTEGER = ("int", "long")


class SchemaProblem(Exception):
    """Internal: the writer schema is unusable; callers turn it into CorruptMetadataError."""


def strip_logical_types(schema: Any) -> Any:
    """Copy of ``schema`` without ``logicalType`` attributes (values are read as stored)."""
    if isinstance(schema, dict):
        return {k: strip_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [strip_logical_types(s) for s in schema]
    return schema


def min_size(schema: Any, named: dict[str, Any], visiting: frozenset[str]) -> int:
    """Lower bound of the encoded size of one value of ``schema`` (0 for ``null``)."""
    if isinstance(schema, str):
        if schema == "null":
            return 0
        if schema in ("boolean", "int", "long", "string", "bytes"):
            return 1
        if schema in ("float",):
            return 4
        if schema in ("double",):
            return 8
        if schema in visiting:
            return 1
        target = named.get(schema)
        if target is None:
            return 1  # unknown names make fastavro fail anyway
        return min_size(target, named, visiting | {schema})
    if isinstance(schema, list):
        return 1  # the branch index
    if isinstance(schema, dict):
        t = schema.get("type")
        if t == "record" or t == "error":
            name = str(schema.get("name", ""))
            named[name] = schema
            fields = schema.get("fields") or []
            return sum(
                min_size(f.get("type"), named, visiting | {name})
                for f in fields
                if isinstance(f, dict)
            )
        if t in ("array", "map", "enum"):
            return 1
        if t == "fixed":
            size = schema.get("size")
            return size if isinstance(size, int) else 1
        return min_size(t, named, visiting)
    return 1


def check_writer_schema(schema: Any) -> None:
    """Reject zero-size records and arrays of zero-size items (a huge count would never hit EOF).

    Raises:
        SchemaProblem: such a construct is present.
    """
    named: dict[str, Any] = {}
    if min_size(schema, named, frozenset()) == 0:
        raise SchemaProblem("writer schema has records of zero bytes")
    stack = [schema]
    seen: set[int] = set()
    while stack:
        s = stack.pop()
        if id(s) in seen:
            continue
        seen.add(id(s))
        if isinstance(s, list):
            stack.extend(s)
        elif isinstance(s, dict):
            t = s.get("type")
            if t in ("array", "map"):
                item = s.get("items") if t == "array" else s.get("values")
                # map entries carry a key string, so only arrays can have zero-size entries
                if t == "array" and min_size(item, named, frozenset()) == 0:
                    raise SchemaProblem("writer schema has an array of zero-size items")
                stack.append(item)
            elif t in ("record", "error"):
                min_size(s, named, frozenset())
                for f in s.get("fields") or []:
                    if isinstance(f, dict):
                        stack.append(f.get("type"))
            else:
                stack.append(t)


def _base_type(t: Any, named: dict[str, Any]) -> tuple[Any, bool]:
    """Unwrap a ``["null", T]`` union and named references; returns (T, nullable)."""
    nullable = False
    if isinstance(t, list):
        branches = [b for b in t if b != "null"]
        nullable = len(branches) != len(t)
        if len(branches) != 1:
            raise SchemaProblem(f"unsupported union {json.dumps(t)[:200]}")
        t = branches[0]
    if isinstance(t, str) and t in named:
        t = named[t]
    if isinstance(t, dict):
        if t.get("type") in ("record", "error"):
            name = t.get("name")
            if isinstance(name, str):
                named[name] = t
                ns = t.get("namespace")
                if isinstance(ns, str) and ns:
                    named[f"{ns}.{name}"] = t
        elif isinstance(t.get("type"), str) and t["type"] not in ("array", "map", "fixed", "enum"):
            t = t["type"]  # {"type": "long", "logicalType": ...}
    return t, nullable


def match_schema(
    t: Any, desc: TypeDesc, where: tuple[str, ...], named: dict[str, Any]
) -> set[tuple[str, ...]]:
    """Check writer type ``t`` (at path ``where``) against ``desc``; raises SchemaProblem.

    Returns the paths of required values that the writer declares nullable (``"[]"`` stands
    for the items of an array).
    """
    base, _ = _base_type(t, named)
    shown = ".".join(where)
    if isinstance(desc, str):
        ok = base in _INTEGER if desc in _INTEGER else base == desc
        if not ok:
            raise SchemaProblem(f"field {shown} has type {json.dumps(base)[:200]}, expected {desc}")
        return set()
    if desc[0] == "array":
        if not (isinstance(base, dict) and base.get("type") == "array"):
            raise SchemaProblem(f"field {shown} is not an array")
        _, item_nullable = _base_type(base.get("items"), named)
        loose = match_schema(base.get("items"), desc[1], (*where, "[]"), named)
        if item_nullable and not desc[2]:
            loose.add((*where, "[]"))
        return loose
    if not (isinstance(base, dict) and base.get("type") in ("record", "error")):
        raise SchemaProblem(f"field {shown} is not a record")
    fields = {f.get("name"): f for f in base.get("fields") or [] if isinstance(f, dict)}
    loose = set()
    for name, (sub, required) in desc[1].items():
        f = fields.get(name)
        sub_where = (*where, name)
        if f is None:
            if required:
                raise SchemaProblem(f"writer schema lacks required field {'.'.join(sub_where)}")
            continue
        _, nullable = _base_type(f.get("type"), named)
        loose |= match_schema(f.get("type"), sub, sub_where, named)
        if required and nullable:
            loose.add(sub_where)
    return loose


def check_schema(schema: Any, desc: TypeDesc, path: str) -> set[tuple[str, ...]]:
    """Check a writer schema against a record descriptor.

    Returns:
        Paths of required values that the writer declares nullable; pass them with the decoded
        columns to :func:`check_required`.

    Raises:
        CorruptMetadataError: a required field is missing or a field has an incompatible type.
    """
    try:
        return match_schema(schema, desc, (), {})
    except SchemaProblem as e:
        raise CorruptMetadataError(path, str(e)) from e
    except (AttributeError, TypeError, ValueError, RecursionError) as e:  # odd JSON shapes
        raise CorruptMetadataError(path, f"malformed writer schema: {e}") from e


def _null_in_values(values: list[Any], rest: tuple[str, ...]) -> bool:
    """Whether a value at path ``rest`` below any of ``values`` (plain Python values) is null."""
    if not rest:
        return any(v is None for v in values)
    head, tail = rest[0], rest[1:]
    if head == "[]":
        return _null_in_values([x for v in values if v is not None for x in v], tail)
    return _null_in_values([v.get(head) for v in values if v is not None], tail)


def check_required(cols: Any, loose: set[tuple[str, ...]], path: str) -> None:
    """Raise CorruptMetadataError if a required value on a ``loose`` path is null."""
    for where in sorted(loose):
        col = cols
        i = 0
        while isinstance(col, dict) and i < len(where):
            col = col.get(where[i])
            i += 1
        if col is None or isinstance(col, dict):
            continue
        rest = where[i:]
        if _null_in_values(col, rest):
            raise CorruptMetadataError(path, f"required value {'.'.join(where)} is null")
