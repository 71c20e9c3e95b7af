"""The gateway's record of the calls it made after a tap: each approved action at most once.

A call to the server behind the gateway cannot share an SQLite transaction, and nothing says
doing it twice is harmless. So the action is claimed first (``started``, in its own
transaction), then the call is made, then its outcome recorded (``done`` or ``failed``).
A second confirm of the same action answers the first outcome; one that finds the action
``started`` (a call in flight, or a crash in the middle of one) is refused, and the call is
never sent again: the user is told it may or may not have happened.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any, Literal

from meshkit.sqlite import SQLiteStore, transaction

State = Literal["new", "started", "done", "failed"]


@dataclass(frozen=True)
class Claim:
    state: State  # new: this confirm makes the call; else how the first one stands
    result: dict[str, Any] | None = None


class CallRecords(SQLiteStore):
    SCHEMA = """
    CREATE TABLE IF NOT EXISTS calls (
        action_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        tool TEXT NOT NULL,
        agent TEXT NOT NULL,
        arguments_sha256 TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('started', 'done', 'failed')),
        result TEXT,
        started_at REAL NOT NULL,
        ended_at REAL
    );
    """

    async def claim(  # noqa: PLR0917 (what the record names)
        self, action_id: str, kind: str, tool: str, agent: str, digest: str, at: float
    ) -> Claim:
        """Claim ``action_id`` for a call now (``new``), or how it stands already."""

        def claim(db: sqlite3.Connection) -> Claim:
            with transaction(db, "IMMEDIATE"):
                row = db.execute(
                    "SELECT state, result FROM calls WHERE action_id = ?", (action_id,)
                ).fetchone()
                if row is not None:
                    state, result = row
                    return Claim(state, None if result is None else json.loads(result))
                db.execute(
                    "INSERT INTO calls (action_id, kind, tool, agent, arguments_sha256, state,"
                    " started_at) VALUES (?, ?, ?, ?, ?, 'started', ?)",
                    (action_id, kind, tool, agent, digest, at),
                )
                return Claim("new")

        return await self._run(claim)

    async def release(self, action_id: str) -> None:
        """Give back a claim whose call was never sent (the server could not be reached)."""
        await self._run(
            lambda db: db.execute(
                "DELETE FROM calls WHERE action_id = ? AND state = 'started'", (action_id,)
            )
        )

    async def finish(
        self, action_id: str, state: Literal["done", "failed"], result: dict[str, Any], at: float
    ) -> None:
        stored = json.dumps(result, ensure_ascii=False)
        await self._run(
            lambda db: db.execute(
                "UPDATE calls SET state = ?, result = ?, ended_at = ?"
                " WHERE action_id = ? AND state = 'started'",
                (state, stored, at, action_id),
            )
        )
