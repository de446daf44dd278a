"""Typed access to table options (``org.apache.paimon.CoreOptions``), validated on read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from paimon_core.errors import SchemaError

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"


def parse_bool(key: str, raw: str) -> bool:
    """``true`` / ``false`` (any case) -> bool; anything else is a :class:`SchemaError`."""
    v = raw.strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise SchemaError(f"option {key}={raw!r} is not a boolean")


_parse_bool = parse_bool


def parse_memory_size(key: str, raw: str) -> int:
    """``256 mb``, ``8MiB``, ``1024`` (bytes) -> bytes."""
    text = raw.strip().lower().replace(" ", "")
    units = {
        "b": 1,
        "k": 1024,
        "kb": 1024,
        "kib": 1024,
        "m": 1024**2,
        "mb": 1024**2,
        "mib": 1024**2,
        "g": 1024**3,
        "gb": 1024**3,
        "gib": 1024**3,
        "t": 1024**4,
        "tb": 1024**4,
        "tib": 1024**4,
        "bytes": 1,
    }
    num = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(num) :] or "b"
    if not num or unit not in units:
        raise SchemaError(f"option {key}={raw!r} is not a memory size")
    try:
        return int(float(num) * units[unit])
    except ValueError as e:
        raise SchemaError(f"option {key}={raw!r} is not a memory size") from e


def parse_duration_millis(key: str, raw: str) -> int:
    """``1 h``, ``30min``, ``10 s``, ``500ms``, ``2 d``, plain number = millis."""
    text = raw.strip().lower().replace(" ", "")
    units = {
        "ms": 1,
        "milli": 1,
        "millis": 1,
        "millisecond": 1,
        "milliseconds": 1,
        # Java's TimeUtils also takes sub-millisecond units (rounded down to millis here)
        "us": 0.001,
        "µs": 0.001,
        "micro": 0.001,
        "micros": 0.001,
        "microsecond": 0.001,
        "microseconds": 0.001,
        "ns": 0.000001,
        "nano": 0.000001,
        "nanos": 0.000001,
        "nanosecond": 0.000001,
        "nanoseconds": 0.000001,
        "s": 1000,
        "sec": 1000,
        "secs": 1000,
        "second": 1000,
        "seconds": 1000,
        "min": 60000,
        "m": 60000,
        "mins": 60000,
        "minute": 60000,
        "minutes": 60000,
        "h": 3600000,
        "hour": 3600000,
        "hours": 3600000,
        "d": 86400000,
        "day": 86400000,
        "days": 86400000,
    }
    num = text.rstrip("abcdefghijklmnopqrstuvwxyzµ")
    unit = text[len(num) :] or "ms"
    if not num or unit not in units:
        raise SchemaError(f"option {key}={raw!r} is not a duration")
    try:
        return int(float(num) * units[unit])
    except ValueError as e:
        raise SchemaError(f"option {key}={raw!r} is not a duration") from e


@dataclass(frozen=True)
class CoreOptions:
    raw: Mapping[str, str]

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.raw.get(key, default)

    def get_int(self, key: str, default: int, *, minimum: int | None = None) -> int:
        raw = self.raw.get(key)
        if raw is None:
            return default
        try:
            value = int(raw.strip())
        except ValueError as e:
            raise SchemaError(f"option {key}={raw!r} is not an integer") from e
        if minimum is not None and value < minimum:
            raise SchemaError(f"option {key}={raw!r} must be >= {minimum}")
        if not -(2**31) <= value < 2**31:
            raise SchemaError(f"option {key}={raw!r} is out of the int range")
        return value

    def get_bool(self, key: str, default: bool, *fallback_keys: str) -> bool:
        for k in (key, *fallback_keys):
            raw = self.raw.get(k)
            if raw is not None:
                return _parse_bool(k, raw)
        return default

    @property
    def partition_default_name(self) -> str:
        return self.raw.get("partition.default-name", DEFAULT_PARTITION_NAME)

    @property
    def merge_engine(self) -> str:
        return self.raw.get("merge-engine", "deduplicate").strip().lower()

    @property
    def deletion_vectors_enabled(self) -> bool:
        return self.get_bool("deletion-vectors.enabled", False)

    @property
    def sequence_fields(self) -> tuple[str, ...]:
        raw = self.raw.get("sequence.field")
        return tuple(s.strip() for s in raw.split(",") if s.strip()) if raw else ()

    def ignore_delete(self) -> bool:
        return self.get_bool(
            "ignore-delete",
            False,
            "first-row.ignore-delete",
            "deduplicate.ignore-delete",
            "partial-update.ignore-delete",
        )

    # ---- merge-engine options (``CoreOptions.fieldAggFunc`` & co. and the sequence groups of
    # ``PartialUpdateMergeFunction``): values are taken verbatim, as Java does
    def field_aggregate_function(self, field: str) -> str | None:
        """``fields.<field>.aggregate-function``, else ``fields.default-aggregate-function``."""
        own = self.raw.get(f"fields.{field}.aggregate-function")
        return own if own is not None else self.raw.get("fields.default-aggregate-function")

    def field_ignore_retract(self, field: str) -> bool:
        """``fields.<field>.ignore-retract``."""
        return self.get_bool(f"fields.{field}.ignore-retract", False)

    def field_list_agg_delimiter(self, field: str) -> str:
        """``fields.<field>.list-agg-delimiter`` (default ``,``)."""
        return self.raw.get(f"fields.{field}.list-agg-delimiter", ",")

    @property
    def partial_update_remove_record_on_delete(self) -> bool:
        return self.get_bool("partial-update.remove-record-on-delete", False)

    def sequence_groups(self) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
        """``fields.<s1,s2>.sequence-group = f1,f2``: (sequence fields, grouped fields) pairs,
        in option-key order."""
        out = []
        for key in sorted(self.raw):
            if key.startswith("fields.") and key.endswith(".sequence-group"):
                seq = tuple(key[len("fields.") : -len(".sequence-group")].split(","))
                out.append((seq, tuple(self.raw[key].split(","))))
        return out

    @property
    def changelog_producer(self) -> str:
        return self.raw.get("changelog-producer", "none").strip().lower()
