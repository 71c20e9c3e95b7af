"""The model's usage in SQLite (``usage.sqlite3``): calls, grants, warnings given.

Tables:

    usage          one row per model call (``UsageRecord``), keyed by the call's own id:
                   recorded again, it stores nothing
    grants         (id, agent, user, day, amount, unit, at): "allow more" taps; id = the
                   pending action that granted it
    warnings       (agent, key, at): the 80 % warnings given, keyed
                   ``<day|month name>:<scope>:<period>[:<user>]``
    confirmations  meshkit's confirm-once record (one row per approved action)

A call that reported no usage has every token column null; one with usage but no price
has a null cost. Sums count the known and count the rest (``Spend``), never guess.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from meshkit.proposals import CONFIRMATIONS_SCHEMA, Approval, Confirmed, confirm_once
from meshkit.sqlite import SQLiteStore, row_model
from meshkit.wire.usage import Bounds, Grant, Spend, TurnCost, UsageRecord, UsageReport

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS usage (
    id TEXT PRIMARY KEY,
    at REAL NOT NULL,
    agent TEXT NOT NULL,
    user TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    purpose TEXT NOT NULL,
    model TEXT NOT NULL,
    turn_id TEXT,
    input_tokens INTEGER,
    cached_input_tokens INTEGER,
    output_tokens INTEGER,
    reasoning_tokens INTEGER,
    cost REAL,
    recorded_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS usage_by_agent ON usage (agent, at);
CREATE INDEX IF NOT EXISTS usage_by_time ON usage (at);
CREATE TABLE IF NOT EXISTS grants (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    user TEXT NOT NULL,
    day TEXT NOT NULL,
    amount REAL NOT NULL,
    unit TEXT NOT NULL CHECK (unit IN ('money', 'tokens')),
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS grants_by_day ON grants (agent, day);
CREATE INDEX IF NOT EXISTS grants_by_time ON grants (at);
CREATE TABLE IF NOT EXISTS warnings (
    agent TEXT NOT NULL,
    key TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (agent, key)
);
"""
    + CONFIRMATIONS_SCHEMA
)
_COLUMNS = ", ".join(UsageRecord.model_fields)
_UNKNOWN = "(input_tokens IS NULL AND output_tokens IS NULL)"
# A Spend's fields, in order, as aggregates over usage rows.
SPEND = (
    "COALESCE(SUM(cost), 0.0), COALESCE(SUM(COALESCE(input_tokens, 0)"
    f" + COALESCE(output_tokens, 0)), 0), COUNT(*), COALESCE(SUM({_UNKNOWN}), 0),"
    f" COALESCE(SUM(cost IS NULL AND NOT {_UNKNOWN}), 0)"
)
_GRANT_COLUMNS = ", ".join(Grant.model_fields)
GROUPS = ("purpose", "model", "agent", "user")  # what a report sums by


def spend(row: Sequence[Any]) -> Spend:
    return row_model(Spend, row)


def added(a: Spend, b: Spend) -> Spend:
    return Spend(
        cost=a.cost + b.cost,
        tokens=a.tokens + b.tokens,
        calls=a.calls + b.calls,
        unknown_usage=a.unknown_usage + b.unknown_usage,
        unknown_cost=a.unknown_cost + b.unknown_cost,
    )


class Filter:
    """A WHERE clause over usage (or grants) rows: a time range, an agent, a user."""

    def __init__(self, since: float, until: float, agent: str | None, user: str | None) -> None:
        self.since, self.until = since, until
        clauses = ["at >= :since", "at < :until"]
        if agent is not None:
            clauses.append("agent = :agent")
        if user is not None:
            clauses.append("user = :user")
        self.where = " WHERE " + " AND ".join(clauses)
        self.params = {"since": since, "until": until, "agent": agent, "user": user}


class UsageStore(SQLiteStore):
    SCHEMA = SCHEMA

    async def record(
        self, records: Sequence[UsageRecord], warned: Sequence[tuple[str, str]], at: float
    ) -> int:
        """Store the records whose id is new, and the (agent, key) warnings not given
        before, in one transaction; how many records were stored."""
        rows = [(*r.model_dump().values(), at) for r in records]
        marks = ", ".join("?" * (len(UsageRecord.model_fields) + 1))

        def write(db: sqlite3.Connection) -> int:
            stored = 0
            for row in rows:
                stored += db.execute(
                    f"INSERT OR IGNORE INTO usage ({_COLUMNS}, recorded_at)"  # noqa: S608 (column names, not input)
                    f" VALUES ({marks})",
                    row,
                ).rowcount
            db.executemany(
                "INSERT OR IGNORE INTO warnings (agent, key, at) VALUES (?, ?, ?)",
                [(agent, key, at) for agent, key in warned],
            )
            return stored

        return await self.transact(write)

    async def totals(
        self, agent: str, day: str, month: str, bounds: Bounds
    ) -> tuple[dict[str, tuple[Spend, Spend]], list[Grant], list[str]]:
        """Per user, the (day, month) spend of ``agent`` within ``bounds``; the grants for
        ``day``; the warning keys of ``day`` or ``month``. One snapshot."""

        def per_user(db: sqlite3.Connection, start: float, end: float) -> dict[str, Spend]:
            rows = db.execute(
                f"SELECT user, {SPEND} FROM usage WHERE agent = ? AND at >= ? AND at < ?"  # noqa: S608 (aggregates, not input)
                " GROUP BY user",
                (agent, start, end),
            ).fetchall()
            return {str(row[0]): spend(row[1:]) for row in rows}

        def read(
            db: sqlite3.Connection,
        ) -> tuple[dict[str, tuple[Spend, Spend]], list[Grant], list[str]]:
            days = per_user(db, bounds.day_start, bounds.day_end)
            months = per_user(db, bounds.month_start, bounds.month_end)
            grants = db.execute(
                f"SELECT {_GRANT_COLUMNS} FROM grants WHERE agent = ? AND day = ?"  # noqa: S608 (column names, not input)
                " ORDER BY at, id",
                (agent, day),
            ).fetchall()
            warned = db.execute(
                "SELECT key FROM warnings WHERE agent = :agent"
                " AND (substr(key, 1, length(:day) + 1) = :day || ':'"
                " OR substr(key, 1, length(:month) + 1) = :month || ':') ORDER BY at, key",
                {"agent": agent, "day": day, "month": month},
            ).fetchall()
            users = {
                user: (days.get(user, Spend()), months.get(user, Spend()))
                for user in sorted(days.keys() | months.keys())
            }
            return users, [row_model(Grant, g) for g in grants], [str(w[0]) for w in warned]

        return await self.read(read)

    async def report(self, where: Filter, top: int) -> UsageReport:
        """For the rows ``where`` selects, in one snapshot: the spend in total and by each
        of purpose, model, agent, user; the ``top`` costliest turns (the calls of one turn
        id together, a call without one alone); the grants made in the range."""

        def grouped(db: sqlite3.Connection, column: str) -> dict[str, Spend]:
            rows = db.execute(
                f"SELECT {column}, {SPEND} FROM usage{where.where}"  # noqa: S608 (a known column)
                f" GROUP BY {column} ORDER BY {column}",
                where.params,
            ).fetchall()
            return {str(row[0]): spend(row[1:]) for row in rows}

        def read(db: sqlite3.Connection) -> UsageReport:
            total = db.execute(
                f"SELECT {SPEND} FROM usage{where.where}",  # noqa: S608 (aggregates, not input)
                where.params,
            ).fetchone()
            groups = {column: grouped(db, column) for column in GROUPS}
            # One min() among the aggregates: SQLite takes the bare columns (user, chat,
            # purpose) from the row of the turn's first call.
            turns = db.execute(
                f"SELECT turn_id, agent, user, chat_id, purpose, min(at) AS first, {SPEND},"  # noqa: S608 (aggregates, not input)
                " COALESCE(SUM(cost), 0.0) AS known,"
                " COALESCE(SUM(COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0)), 0)"
                f" AS tokens FROM usage{where.where}"
                " GROUP BY agent, turn_id IS NULL, COALESCE(turn_id, id)"
                " ORDER BY known DESC, tokens DESC, first LIMIT :top",
                where.params | {"top": top},
            ).fetchall()
            grants = db.execute(
                f"SELECT {_GRANT_COLUMNS} FROM grants{where.where} ORDER BY at, id",  # noqa: S608 (column names, not input)
                where.params,
            ).fetchall()
            return UsageReport(
                since=where.since,
                until=where.until,
                total=spend(total),
                by_purpose=groups["purpose"],
                by_model=groups["model"],
                by_agent=groups["agent"],
                by_user=groups["user"],
                top=[_turn_cost(row) for row in turns],
                grants=[row_model(Grant, g) for g in grants],
            )

        return await self.read(read)

    async def confirm(
        self,
        approval: Approval,
        perform: Callable[[sqlite3.Connection], dict[str, Any]],
        *,
        at: float,
    ) -> Confirmed:
        """Perform an approved change once: a replayed approval returns the first result."""
        return await self._run(lambda db: confirm_once(db, approval, perform, at=at))


def _turn_cost(row: Sequence[Any]) -> TurnCost:
    turn_id, agent, user, chat_id, purpose, first = row[:6]
    return TurnCost(
        turn_id=turn_id, agent=agent, user=user, chat_id=chat_id, purpose=purpose, at=first,
        spend=spend(row[6:11]),
    )  # fmt: skip


def add_grant(db: sqlite3.Connection, grant: Grant) -> None:
    """Inside a confirm transaction: keep ``grant``."""
    values = grant.model_dump()
    db.execute(
        f"INSERT INTO grants ({_GRANT_COLUMNS}) VALUES"  # noqa: S608 (column names, not input)
        f" ({', '.join(':' + name for name in values)})",
        values,
    )


def grants_of(db: sqlite3.Connection, agent: str, user: str, day: str, unit: str) -> list[Grant]:
    """Inside a confirm transaction: the user's grants of ``day`` in ``unit``, oldest first."""
    rows = db.execute(
        f"SELECT {_GRANT_COLUMNS} FROM grants WHERE agent = ? AND user = ? AND day = ?"  # noqa: S608 (column names, not input)
        " AND unit = ? ORDER BY at, id",
        (agent, user, day, unit),
    ).fetchall()
    return [row_model(Grant, row) for row in rows]
