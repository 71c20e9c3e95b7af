"""Confirm-once for a backend whose events live elsewhere (Google, CalDAV): meshkit's
confirmations table in its own SQLite file, around a change made over the network.

The change cannot share the record's SQLite transaction, so :meth:`ConfirmationRecords.once`
performs it between reading and writing the record, one confirm at a time. Were the
process to die between the two, a replay finds the change made already: its If-Match (the
ETag as proposed) answers 412, or its event id 409 (If-None-Match on CalDAV), and nothing
happens twice.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from meshkit.proposals import CONFIRMATIONS_SCHEMA, Approval, Confirmed
from meshkit.sqlite import SQLiteStore


class ConfirmationRecords(SQLiteStore):
    SCHEMA = CONFIRMATIONS_SCHEMA
    _confirming: anyio.Lock | None = None

    async def once(
        self,
        approval: Approval,
        result: dict[str, Any],
        at: float,
        change: Callable[[], Awaitable[None]],
    ) -> Confirmed:
        """Make ``change`` and record ``result`` for the approval, one confirm at a time; a
        replayed approval answers its first result and changes nothing."""
        if self._confirming is None:
            self._confirming = anyio.Lock()
        async with self._confirming:
            first = await self.first(approval.action_id)
            if first is not None:
                return Confirmed(first, replayed=True)
            await change()
            await self.record(approval, result, at)
            return Confirmed(result, replayed=False)

    async def first(self, action_id: str) -> dict[str, Any] | None:
        """The result recorded for this approval, if it was used before."""

        def read(db: sqlite3.Connection) -> dict[str, Any] | None:
            row = db.execute(
                "SELECT result FROM confirmations WHERE action_id = ?", (action_id,)
            ).fetchone()
            return None if row is None else dict(json.loads(row[0]))

        return await self._run(read)

    async def record(self, approval: Approval, result: dict[str, Any], at: float) -> None:
        stored = json.dumps(result, ensure_ascii=False)
        await self._run(
            lambda db: db.execute(
                "INSERT OR IGNORE INTO confirmations (action_id, kind, result, at)"
                " VALUES (?, ?, ?, ?)",
                (approval.action_id, approval.kind, stored, at),
            )
        )
