"""Database / table identifiers, validated before any storage call (reliability rule 7)."""

from __future__ import annotations

from dataclasses import dataclass

from paimon_core.errors import InvalidIdentifierError

_FORBIDDEN = set("/\\") | {chr(c) for c in range(0x20)} | {"\x7f"}


def validate_name(name: str, what: str) -> str:
    """Reject empty, ``.``, ``..``, path separators and control characters."""
    if not isinstance(name, str) or name == "":
        raise InvalidIdentifierError(str(name), f"{what} name must be a non-empty string")
    if name.strip() != name or name.strip() == "":
        raise InvalidIdentifierError(name, f"{what} name must not start or end with whitespace")
    if name in (".", ".."):
        raise InvalidIdentifierError(name, f"{what} name must not be '.' or '..'")
    bad = sorted({c for c in name if c in _FORBIDDEN})
    if bad:
        raise InvalidIdentifierError(
            name, f"{what} name contains forbidden characters {[hex(ord(c)) for c in bad]}"
        )
    if name.startswith("."):
        raise InvalidIdentifierError(name, f"{what} name must not start with '.'")
    return name


@dataclass(frozen=True, slots=True)
class Identifier:
    """``database.table`` (``org.apache.paimon.catalog.Identifier``)."""

    database: str
    table: str

    def __post_init__(self) -> None:
        validate_name(self.database, "database")
        validate_name(self.table, "table")
        if "$" in self.table:
            raise InvalidIdentifierError(self.table, "system tables ($) are not supported")

    @classmethod
    def parse(cls, text: str | Identifier) -> Identifier:
        if isinstance(text, Identifier):
            return text
        if not isinstance(text, str) or text.count(".") != 1:
            raise InvalidIdentifierError(str(text), "expected 'database.table'")
        db, tbl = text.split(".")
        return cls(db, tbl)

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"
