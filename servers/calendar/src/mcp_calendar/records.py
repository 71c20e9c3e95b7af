"""Confirm-once for a backend whose events live elsewhere (Google): meshkit's
confirmations table in ``$DATA_DIR/calendar.sqlite3``, around a change made over the network.

The change cannot share the record's SQLite transaction, so the backend performs it
between :meth:`ConfirmationRecords.first` and :meth:`ConfirmationRecords.record`, one
confirm at a time. Were the process to die between the two, a replay finds the change made
already: its If-Match (the ETag as proposed) answers 412, or its event id 409, and nothing
happens twice.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from meshkit.proposals import CONFIRMATIONS_SCHEMA, Approval
from meshkit.sqlite import SQLiteStore


class ConfirmationRecords(SQLiteStore):
    SCHEMA = CONFIRMATIONS_SCHEMA

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
