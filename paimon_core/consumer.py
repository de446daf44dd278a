"""Consumers: named, persisted reading positions (``org.apache.paimon.consumer.ConsumerManager``).

A consumer is the file ``consumer/consumer-<id>`` holding ``{"nextSnapshot": N}``: the next
snapshot its reader will read. Snapshot expiry never removes snapshots ``>= N`` of any
consumer; consumers not updated for ``consumer.expiration-time`` may be removed.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from paimon_core.errors import CorruptMetadataError, FileNotFoundInTableError
from paimon_core.identifier import validate_name
from paimon_core.io.file_io import FileIO, join
from paimon_core.layout import TableLayout

CONSUMER_PREFIX = "consumer-"


@dataclass(frozen=True, slots=True)
class Consumer:
    """``org.apache.paimon.consumer.Consumer``: the next snapshot id to read."""

    next_snapshot: int

    def to_json(self) -> str:
        return json.dumps({"nextSnapshot": self.next_snapshot}, indent=2)

    @staticmethod
    def from_json(text: str, path: str) -> Consumer:
        try:
            data = json.loads(text)
            value = data["nextSnapshot"]
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptMetadataError(path, f"not a consumer file: {e}") from e
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise CorruptMetadataError(path, f"nextSnapshot must be a non-negative int: {value!r}")
        return Consumer(value)


class ConsumerManager:
    """Reads and writes ``<table>/consumer/consumer-<id>``.

    Example:
        >>> mgr = ConsumerManager(file_io, table.path)  # doctest: +SKIP
        >>> mgr.reset_consumer("etl", Consumer(next_snapshot=7))  # doctest: +SKIP
        >>> mgr.consumer("etl")  # doctest: +SKIP
        Consumer(next_snapshot=7)
    """

    def __init__(self, file_io: FileIO, table_path: str) -> None:
        self.file_io = file_io
        self.table_path = table_path
        self.consumer_dir = TableLayout(table_path).consumer_dir

    def consumer_path(self, consumer_id: str) -> str:
        validate_name(consumer_id, "consumer id")
        return join(self.consumer_dir, CONSUMER_PREFIX + consumer_id)

    def consumer(self, consumer_id: str) -> Consumer | None:
        """The stored consumer, or None when there is none."""
        path = self.consumer_path(consumer_id)
        try:
            text = self.file_io.read_text(path)
        except FileNotFoundInTableError:
            return None
        return Consumer.from_json(text, path)

    def reset_consumer(self, consumer_id: str, consumer: Consumer) -> None:
        """Store (overwrite) a consumer's position."""
        self.file_io.write_bytes(self.consumer_path(consumer_id), consumer.to_json().encode())

    def delete_consumer(self, consumer_id: str) -> None:
        self.file_io.delete(self.consumer_path(consumer_id))

    def consumers(self) -> dict[str, int]:
        """Every consumer id with its ``nextSnapshot``."""
        out: dict[str, int] = {}
        for status in self.file_io.list_status(self.consumer_dir):
            name = status.path.rstrip("/").rsplit("/", 1)[-1]
            if status.is_dir or not name.startswith(CONSUMER_PREFIX):
                continue
            consumer_id = name[len(CONSUMER_PREFIX) :]
            c = self.consumer(consumer_id)
            if c is not None:
                out[consumer_id] = c.next_snapshot
        return out

    def min_next_snapshot(self) -> int | None:
        """The smallest ``nextSnapshot`` over all consumers (None without consumers)."""
        values = self.consumers().values()
        return min(values) if values else None

    def expire(
        self,
        older_than_millis: int | None = None,
        *,
        now_millis: int | None = None,
        expiration_millis: int | None = None,
    ) -> list[str]:
        """Delete consumers whose file was last modified before ``older_than_millis`` (or
        before ``now - expiration_millis``). Returns the removed ids."""
        if older_than_millis is None:
            if expiration_millis is None:
                return []
            now = int(time.time() * 1000) if now_millis is None else now_millis
            older_than_millis = now - expiration_millis
        removed = []
        for status in self.file_io.list_status(self.consumer_dir):
            name = status.path.rstrip("/").rsplit("/", 1)[-1]
            if status.is_dir or not name.startswith(CONSUMER_PREFIX):
                continue
            if status.mtime_millis is not None and status.mtime_millis < older_than_millis:
                self.file_io.delete(status.path)
                removed.append(name[len(CONSUMER_PREFIX) :])
        return sorted(removed)
