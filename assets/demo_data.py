"""A realistic CDC feed for the demo and the tests: a small shop's ``customers`` and ``orders``
replicated by Debezium (Postgres connector style: ``source.lsn``), one landing directory per
table and day, plus a daily exchange-rate extract.

Day by day: the first day is the initial snapshot (``op = r``), later days bring new
customers and orders (``c``), profile changes and order status transitions
(``u``: new -> paid -> shipped -> delivered, some cancelled or refunded), deletions (``d``:
erased customers, test orders), and the mess of a real feed: events shuffled within a file
(ordered again by ``lsn``), duplicated deliveries, the odd malformed line (quarantined).

:func:`generate` writes everything and returns the expected final state of both tables
(:class:`Feed`), which the demo and the tests compare with what the pipeline produced.

Layout (``LandingZone``)::

    <landing>/cdc.customers/dt=2025-01-06/part-0.json      Debezium JSON lines
    <landing>/cdc.orders/dt=2025-01-06/part-0.json
    <landing>/ref.fx_rates/dt=2025-01-06/rates.csv           dt,currency,rate_to_eur,source

One command writes it onto a deployment's landing zone (S3 settings from the production
environment, :data:`assets.resources.S3_ENV`)::

    python -m assets.demo_data --landing s3://lake/landing      # default: $PAIMON_LANDING
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from paimon_core.integration import FileIO, join

__all__ = ["DEMO_DAYS", "Feed", "epoch_millis", "generate", "main"]

DEMO_DAYS = ("2025-01-06", "2025-01-07", "2025-01-08")
COUNTRIES = ("DE", "FR", "NL", "ES", "IT", "PL", "SE", "GB", "US")
TIERS = ("basic", "silver", "gold")
CURRENCIES = ("EUR", "USD", "GBP", "SEK", "PLN")
FX_BASE = {"EUR": "1.000000", "USD": "0.912300", "GBP": "1.183400", "SEK": "0.087100",
           "PLN": "0.229800"}
NEXT_STATUS = {"new": "paid", "paid": "shipped", "shipped": "delivered"}


def epoch_millis(ts: dt.datetime) -> int:
    return int(ts.replace(tzinfo=dt.UTC).timestamp() * 1000)


@dataclass
class Feed:
    """What :func:`generate` wrote, and the state the tables must end up in.

    Attributes:
        days: the landing days, in order.
        customers / orders: expected final rows per key (table column names; timestamps as
            naive UTC datetimes, amounts as Decimal).
        events: events written per table and day (including duplicates and malformed lines).
        malformed: malformed lines per table and day.
    """

    days: tuple[str, ...]
    customers: dict[int, dict[str, Any]] = field(default_factory=dict)
    orders: dict[int, dict[str, Any]] = field(default_factory=dict)
    events: dict[str, dict[str, int]] = field(default_factory=dict)
    malformed: dict[str, dict[str, int]] = field(default_factory=dict)

    def expected(self, table: str) -> dict[int, dict[str, Any]]:
        return self.customers if table == "cdc.customers" else self.orders


class _Log:
    """Events of one table and day, with the global log position."""

    def __init__(self, state: dict[str, int]) -> None:
        self.state = state
        self.events: list[dict[str, Any]] = []

    def emit(self, op: str, before: dict[str, Any] | None, after: dict[str, Any] | None,
             ts: dt.datetime) -> None:
        self.state["lsn"] += 8
        self.events.append({
            "before": before, "after": after, "op": op, "ts_ms": epoch_millis(ts),
            "source": {"connector": "postgresql", "db": "shop", "lsn": self.state["lsn"],
                       "ts_ms": epoch_millis(ts)},
        })


def _image(row: dict[str, Any]) -> dict[str, Any]:
    """A Debezium image: timestamps as epoch millis, decimals as text."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, dt.datetime):
            out[k] = epoch_millis(v)
        elif isinstance(v, Decimal):
            out[k] = str(v)
        else:
            out[k] = v
    return out


def _day_start(day: str) -> dt.datetime:
    return dt.datetime.fromisoformat(day).replace(hour=6)


def generate(
    file_io: FileIO,
    landing: str,
    *,
    days: Sequence[str] = DEMO_DAYS,
    customers: int = 300,
    orders_per_day: int = 900,
    seed: int = 7,
) -> Feed:
    """Write the feed under ``landing`` (see the module docs) and return the expected state."""
    rng = random.Random(seed)
    feed = Feed(tuple(days))
    state = {"lsn": 10_000_000}
    cust: dict[int, dict[str, Any]] = {}
    orders: dict[int, dict[str, Any]] = {}
    next_customer, next_order = 1, 1
    for i, day in enumerate(days):
        clock = _day_start(day)
        tick = dt.timedelta(seconds=29)
        clog, olog = _Log(state), _Log(state)
        new_customers = customers if i == 0 else customers // 10
        op_new = "r" if i == 0 else "c"
        for _ in range(new_customers):
            cid = next_customer
            next_customer += 1
            clock += tick
            row = {"customer_id": cid, "name": f"Customer {cid:05d}",
                   "email": f"c{cid:05d}@example.com", "country": rng.choice(COUNTRIES),
                   "tier": rng.choices(TIERS, (6, 3, 1))[0], "updated_at": clock}
            cust[cid] = row
            clog.emit(op_new, None, _image(row), clock)
        if i > 0:
            for cid in rng.sample(sorted(cust), k=len(cust) // 8):  # profile changes
                clock += tick
                old = cust[cid]
                new = dict(old, tier=rng.choice(TIERS), updated_at=clock)
                if rng.random() < 0.3:
                    new["email"] = f"c{cid:05d}.{i}@example.org"
                cust[cid] = new
                clog.emit("u", _image(old), _image(new), clock)
            for cid in rng.sample(sorted(cust), k=3):  # erased on request
                clock += tick
                clog.emit("d", _image(cust.pop(cid)), None, clock)
        for _ in range(orders_per_day if i > 0 else orders_per_day // 2):
            oid = next_order
            next_order += 1
            clock += dt.timedelta(seconds=rng.randint(1, 40))
            row = {"order_id": oid, "customer_id": rng.choice(sorted(cust)), "status": "new",
                   "amount": Decimal(rng.randrange(500, 150_000)) / 100,
                   "currency": rng.choices(CURRENCIES, (8, 4, 2, 1, 1))[0],
                   "created_at": clock, "updated_at": clock}
            orders[oid] = row
            olog.emit(op_new, None, _image(row), clock)
        open_ids = [o for o, r in orders.items() if r["status"] in NEXT_STATUS]
        for oid in rng.sample(open_ids, k=int(len(open_ids) * 0.6)):  # status transitions
            for _ in range(rng.randint(1, 3)):
                old = orders[oid]
                if old["status"] not in NEXT_STATUS:
                    break
                clock += dt.timedelta(seconds=rng.randint(1, 20))
                status = "cancelled" if rng.random() < 0.05 else NEXT_STATUS[old["status"]]
                new = dict(old, status=status, updated_at=clock)
                orders[oid] = new
                olog.emit("u", _image(old), _image(new), clock)
        done = [o for o, r in orders.items() if r["status"] == "delivered"]
        for oid in rng.sample(done, k=min(len(done), 10)):  # refunds
            clock += tick
            old = orders[oid]
            new = dict(old, status="refunded", updated_at=clock)
            orders[oid] = new
            olog.emit("u", _image(old), _image(new), clock)
        for oid in rng.sample(sorted(orders), k=5):  # test orders removed
            clock += tick
            olog.emit("d", _image(orders.pop(oid)), None, clock)
        for name, log in (("cdc.customers", clog), ("cdc.orders", olog)):
            lines = [json.dumps(e, separators=(",", ":")) for e in log.events]
            lines += rng.sample(lines, k=max(1, len(lines) // 50))  # at-least-once delivery
            rng.shuffle(lines)  # arrival order is not log order
            bad = (['{"op":"u","after":{"broken":', '{"op":"x","ts_ms":1}']
                   if i > 0 and name == "cdc.orders" else [])
            lines[len(lines) // 2:len(lines) // 2] = bad
            feed.events.setdefault(name, {})[day] = len(lines)
            feed.malformed.setdefault(name, {})[day] = len(bad)
            _write(file_io, join(landing, name, f"dt={day}", "part-0.json"), lines)
        rates = [
            f"{day},{c},{Decimal(FX_BASE[c]) * Decimal(1 + rng.uniform(-0.01, 0.01)):.6f},ecb"
            for c in CURRENCIES]
        _write(file_io, join(landing, "ref.fx_rates", f"dt={day}", "rates.csv"),
               ["dt,currency,rate_to_eur,source", *rates])
    feed.customers = cust
    feed.orders = orders
    return feed


def _write(file_io: FileIO, path: str, lines: Sequence[str]) -> None:
    file_io.write_bytes(path, ("\n".join(lines) + "\n").encode("utf-8"))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m assets.demo_data [--landing URL] [--days D1,D2]``: write the feed."""
    parser = argparse.ArgumentParser(
        prog="python -m assets.demo_data",
        description="Write the demo's CDC feed and rates extract onto a landing zone.")
    parser.add_argument("--landing", default=os.environ.get("PAIMON_LANDING"),
                        help="landing root (local path or s3://...; default $PAIMON_LANDING)")
    parser.add_argument("--days", default=",".join(DEMO_DAYS),
                        help="comma-separated landing days (default %(default)s)")
    args = parser.parse_args(argv)
    if not args.landing:
        parser.error("--landing is required when PAIMON_LANDING is not set")
    options: dict[str, str] = {}
    if args.landing.startswith(("s3://", "s3a://")):
        from assets.resources import S3_ENV, S3Storage  # dagster: only for S3 settings

        options = S3Storage(**{f: os.environ[v] for f, v in S3_ENV.items()
                               if os.environ.get(v)}).options()
    days = tuple(d.strip() for d in args.days.split(",") if d.strip())
    feed = generate(FileIO(args.landing, options), args.landing, days=days)
    for table, per_day in sorted(feed.events.items()):
        for day, n in sorted(per_day.items()):
            print(f"{table} dt={day}: {n} events")
    print(f"ref.fx_rates: {len(days)} day(s) -> {args.landing}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
