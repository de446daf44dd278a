"""Predicate model, builders, literal binding and row evaluation.

Mirrors ``org.apache.paimon.predicate``: :class:`Leaf` is ``LeafPredicate`` (with the
``LeafFunction`` singletons ``Equal``, ``NotEqual``, ``LessThan``, ``LessOrEqual``,
``GreaterThan``, ``GreaterOrEqual``, ``In``, ``NotIn``, ``IsNull``, ``IsNotNull``,
``StartsWith``), :class:`And`/:class:`Or` are ``CompoundPredicate``; the builders mirror
``PredicateBuilder``. Import everything from :mod:`paimon_core.scan.predicate`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from paimon_core.errors import FilterError
from paimon_core.scan.predicate_literal import coerce_literal, is_nested, java_compare
from paimon_core.types import BINARY_ROOTS, STRING_ROOTS, DataField, DataType

__all__ = [
    "COMPARISON_OPS",
    "LIST_OPS",
    "UNARY_OPS",
    "And",
    "ColumnStats",
    "Leaf",
    "Op",
    "Or",
    "Predicate",
    "and_",
    "bind",
    "equal",
    "eval_leaf",
    "evaluate_row",
    "field_types",
    "greater_or_equal",
    "greater_than",
    "is_in",
    "is_not_in",
    "is_not_null",
    "is_null",
    "less_or_equal",
    "less_than",
    "not_equal",
    "or_",
    "referenced_fields",
    "split_and",
    "starts_with",
]


class Op(enum.Enum):
    """Leaf operators (Paimon's ``LeafFunction`` singletons)."""

    EQ = "="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    IN = "IN"
    NOT_IN = "NOT IN"
    IS_NULL = "IS NULL"
    IS_NOT_NULL = "IS NOT NULL"
    STARTS_WITH = "STARTSWITH"


UNARY_OPS = frozenset({Op.IS_NULL, Op.IS_NOT_NULL})
LIST_OPS = frozenset({Op.IN, Op.NOT_IN})
COMPARISON_OPS = frozenset({Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE})


@dataclass(frozen=True, slots=True)
class Leaf:
    """A predicate on one column (``org.apache.paimon.predicate.LeafPredicate``).

    Attributes:
        field: the column name.
        op: the operator.
        literals: no literal for IS [NOT] NULL, the list for [NOT] IN, else exactly one.
    """

    field: str
    op: Op
    literals: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.literals, tuple):
            object.__setattr__(self, "literals", tuple(self.literals))
        n = len(self.literals)
        if self.op in UNARY_OPS and n != 0:
            raise FilterError(f"{self.op.value} takes no literal, got {self.literals!r}")
        if self.op not in UNARY_OPS and self.op not in LIST_OPS and n != 1:
            raise FilterError(f"{self.op.value} takes one literal, got {self.literals!r}")

    def __str__(self) -> str:
        if self.op in UNARY_OPS:
            return f"{self.field} {self.op.value}"
        if self.op in LIST_OPS:
            return f"{self.field} {self.op.value} ({', '.join(map(repr, self.literals))})"
        return f"{self.field} {self.op.value} {self.literals[0]!r}"


@dataclass(frozen=True, slots=True)
class And:
    """Conjunction (``CompoundPredicate`` with ``And``); at least one child."""

    children: tuple[Predicate, ...]

    def __post_init__(self) -> None:
        _check_children(self, self.children)

    def __str__(self) -> str:
        return "(" + " AND ".join(map(str, self.children)) + ")"


@dataclass(frozen=True, slots=True)
class Or:
    """Disjunction (``CompoundPredicate`` with ``Or``); at least one child."""

    children: tuple[Predicate, ...]

    def __post_init__(self) -> None:
        _check_children(self, self.children)

    def __str__(self) -> str:
        return "(" + " OR ".join(map(str, self.children)) + ")"


Predicate = Leaf | And | Or


def _check_children(owner: And | Or, children: Any) -> None:
    if not isinstance(children, tuple):
        children = tuple(children)
        object.__setattr__(owner, "children", children)
    if not children:
        raise FilterError(f"{type(owner).__name__} needs at least one child")
    for c in children:
        if not isinstance(c, (Leaf, And, Or)):
            raise FilterError(f"not a predicate: {c!r}")


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """Decoded statistics of one column in one file (a slice of ``SimpleStats``).

    Attributes:
        min: the minimum in the Python value convention, ``None`` = unknown.
        max: the maximum, ``None`` = unknown.
        null_count: the number of nulls, ``None`` = unknown.
    """

    min: Any = None
    max: Any = None
    null_count: int | None = None


# ---------------------------------------------------------------------------------------------
# builders (PredicateBuilder)


def equal(field: str, value: Any) -> Leaf:
    """``field = value`` (``PredicateBuilder.equal``)."""
    return Leaf(field, Op.EQ, (value,))


def not_equal(field: str, value: Any) -> Leaf:
    """``field != value`` (``PredicateBuilder.notEqual``); excludes nulls."""
    return Leaf(field, Op.NE, (value,))


def less_than(field: str, value: Any) -> Leaf:
    """``field < value``."""
    return Leaf(field, Op.LT, (value,))


def less_or_equal(field: str, value: Any) -> Leaf:
    """``field <= value``."""
    return Leaf(field, Op.LE, (value,))


def greater_than(field: str, value: Any) -> Leaf:
    """``field > value``."""
    return Leaf(field, Op.GT, (value,))


def greater_or_equal(field: str, value: Any) -> Leaf:
    """``field >= value``."""
    return Leaf(field, Op.GE, (value,))


def is_in(field: str, values: Iterable[Any]) -> Leaf:
    """``field IN (values)`` (``PredicateBuilder.in``); null literals never match."""
    return Leaf(field, Op.IN, tuple(values))


def is_not_in(field: str, values: Iterable[Any]) -> Leaf:
    """``field NOT IN (values)``; excludes nulls, and matches nothing if a value is null."""
    return Leaf(field, Op.NOT_IN, tuple(values))


def is_null(field: str) -> Leaf:
    """``field IS NULL``."""
    return Leaf(field, Op.IS_NULL)


def is_not_null(field: str) -> Leaf:
    """``field IS NOT NULL``."""
    return Leaf(field, Op.IS_NOT_NULL)


def starts_with(field: str, prefix: str | bytes) -> Leaf:
    """``field STARTSWITH prefix`` (``PredicateBuilder.startsWith``)."""
    return Leaf(field, Op.STARTS_WITH, (prefix,))


def _combine(kind: type[And] | type[Or], preds: Sequence[Predicate]) -> Predicate:
    flat: list[Predicate] = []
    for p in preds:
        if isinstance(p, kind):
            flat.extend(p.children)
        else:
            flat.append(p)
    if not flat:
        raise FilterError(f"{kind.__name__.lower()}_ needs at least one predicate")
    return flat[0] if len(flat) == 1 else kind(tuple(flat))


def and_(*preds: Predicate) -> Predicate:
    """Conjunction of ``preds``, nested ``And``\\ s flattened; one predicate is returned as is.

    Raises:
        FilterError: no predicate given.
    """
    return _combine(And, preds)


def or_(*preds: Predicate) -> Predicate:
    """Disjunction of ``preds``, nested ``Or``\\ s flattened; one predicate is returned as is.

    Raises:
        FilterError: no predicate given.
    """
    return _combine(Or, preds)


def split_and(pred: Predicate | None) -> list[Predicate]:
    """The conjuncts of ``pred`` (``PredicateBuilder.splitAnd``); ``[]`` for ``None``."""
    if pred is None:
        return []
    if isinstance(pred, And):
        return [c for child in pred.children for c in split_and(child)]
    return [pred]


def referenced_fields(pred: Predicate) -> set[str]:
    """The column names ``pred`` references."""
    if isinstance(pred, Leaf):
        return {pred.field}
    out: set[str] = set()
    for c in pred.children:
        out |= referenced_fields(c)
    return out


# ---------------------------------------------------------------------------------------------
# binding literals to column types


def field_types(fields: Sequence[DataField]) -> dict[str, DataType]:
    """Column name -> type."""
    return {f.name: f.type for f in fields}


def bind(pred: Predicate, fields: Sequence[DataField]) -> Predicate:
    """Check ``pred`` against the columns and normalise its literals to the column types
    (HALF_UP decimals, truncated timestamps, float32 FLOAT literals; idempotent).

    Args:
        pred: the predicate.
        fields: the table's columns.

    Returns:
        The bound predicate.

    Raises:
        FilterError: unknown column, an operator that does not apply to the column type
            (value predicates on nested columns, STARTSWITH on non-string/binary columns), or a
            literal that is not a value of the column type.
    """
    return _bind(pred, field_types(fields))


def _bind(pred: Predicate, types: Mapping[str, DataType]) -> Predicate:
    if isinstance(pred, And):
        return And(tuple(_bind(c, types) for c in pred.children))
    if isinstance(pred, Or):
        return Or(tuple(_bind(c, types) for c in pred.children))
    t = types.get(pred.field)
    if t is None:
        raise FilterError(f"filter column {pred.field!r} not in table columns {list(types)}")
    if pred.op in UNARY_OPS:
        return pred
    if is_nested(t):
        raise FilterError(f"{pred.op.value} is not supported on nested column {pred.field!r} ({t})")
    if pred.op is Op.STARTS_WITH and t.root not in STRING_ROOTS and t.root not in BINARY_ROOTS:
        raise FilterError(f"STARTSWITH needs a string or binary column; {pred.field!r} is {t}")
    lits = tuple(coerce_literal(v, t, pred.field) for v in pred.literals)
    return Leaf(pred.field, pred.op, lits)


# ---------------------------------------------------------------------------------------------
# row evaluation (Predicate.test(InternalRow))


def evaluate_row(
    pred: Predicate, values: Mapping[str, Any], *, fields: Sequence[DataField] | None = None
) -> bool:
    """Evaluate ``pred`` on one row (e.g. a partition), exactly as ``Predicate.test(row)``.

    Args:
        pred: the predicate.
        values: column name -> value in the Python value convention (``None`` = null).
        fields: if given, literals are first bound to these columns (see :func:`bind`).

    Returns:
        Whether the row matches.

    Raises:
        FilterError: a referenced column is missing from ``values``, or a value cannot be
            compared with the literal.
    """
    if fields is not None:
        pred = bind(pred, fields)
    return _eval(pred, values)


def _eval(pred: Predicate, values: Mapping[str, Any]) -> bool:
    if isinstance(pred, And):
        return all(_eval(c, values) for c in pred.children)
    if isinstance(pred, Or):
        return any(_eval(c, values) for c in pred.children)
    if pred.field not in values:
        raise FilterError(f"row has no column {pred.field!r}")
    return eval_leaf(pred, values[pred.field])


def _cmp(value: Any, lit: Any, leaf: Leaf) -> int:
    c = java_compare(value, lit)
    if c is None:
        raise FilterError(f"cannot compare value {value!r} with literal {lit!r} in {leaf}")
    return c


def eval_leaf(leaf: Leaf, value: Any) -> bool:
    """``LeafFunction.test(type, field, literals)`` for one column value (``None`` = null)."""
    op = leaf.op
    if op is Op.IS_NULL:
        return value is None
    if op is Op.IS_NOT_NULL:
        return value is not None
    if value is None:
        return False
    if op is Op.IN:
        return any(lit is not None and _cmp(value, lit, leaf) == 0 for lit in leaf.literals)
    if op is Op.NOT_IN:
        return all(lit is not None and _cmp(value, lit, leaf) != 0 for lit in leaf.literals)
    lit = leaf.literals[0]
    if lit is None:
        return False
    if op is Op.STARTS_WITH:
        if isinstance(value, str) and isinstance(lit, str):
            return value.startswith(lit)
        if isinstance(value, (bytes, bytearray)) and isinstance(lit, (bytes, bytearray)):
            return bytes(value).startswith(bytes(lit))
        raise FilterError(f"STARTSWITH needs strings or bytes, got {value!r} and {lit!r}")
    c = _cmp(value, lit, leaf)
    if op is Op.EQ:
        return c == 0
    if op is Op.NE:
        return c != 0
    if op is Op.LT:
        return c < 0
    if op is Op.LE:
        return c <= 0
    if op is Op.GT:
        return c > 0
    return c >= 0  # GE
