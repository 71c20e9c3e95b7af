"""Long-term memory in SQLite: rules and notes, written only inside a confirmed proposal.

Tables:

    memories       (id, agent, scope, user, text, created_at, forgotten_at, set_by)
    memories_fts   FTS5 over the text of the memories not forgotten (recall)
    buttons        (agent, chat_id, message_key, memory_id, user, shown, at): the /memory
                   messages, by the key each is sent under, and the 🗑 buttons each shows
                   (shown 0: removed by a redraw)
    confirmations  meshkit's confirm-once record (one row per approved action)

``scope`` is ``agent`` (how the agent behaves for everyone; ``user`` is '') or ``user``
(about one user). ``set_by`` is the user whose tap remembered it (null: imported, or
remembered before it was recorded): an agent rule may be forgotten by that user, or by
the agent's owner (the orchestrator vouches for that). A forgotten memory keeps its row
(``forgotten_at`` set): the audit trail of what was remembered stays, and no list,
instruction or recall shows it.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Callable
from typing import Any

from meshkit.proposals import CONFIRMATIONS_SCHEMA, Approval, Confirmed, confirm_once
from meshkit.sqlite import SQLiteStore
from meshkit.wire.memory import Memory

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS memories (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    scope TEXT NOT NULL CHECK (scope IN ('user', 'agent')),
    user TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at REAL NOT NULL,
    forgotten_at REAL,
    set_by TEXT
);
CREATE INDEX IF NOT EXISTS memories_by_agent ON memories (agent, scope, user, created_at);
CREATE TABLE IF NOT EXISTS buttons (
    agent TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    message_key TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    user TEXT NOT NULL,
    shown INTEGER NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (agent, chat_id, message_key, memory_id)
);
CREATE INDEX IF NOT EXISTS buttons_by_age ON buttons (at);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    memory_id UNINDEXED, text, tokenize = 'unicode61'
);
"""
    + CONFIRMATIONS_SCHEMA
)
MIGRATIONS = {
    2: "ALTER TABLE memories ADD COLUMN set_by TEXT;",
    3: "DROP TABLE IF EXISTS buttons;",  # bound by message id: their messages' buttons act no more
}
# The memories a user sees; the fifth column: theirs to forget (a note, a rule they set).
_VISIBLE = (
    "SELECT id, scope, text, created_at, (scope = 'user' OR set_by = :user) FROM memories"
    " WHERE agent = :agent AND forgotten_at IS NULL AND (scope = 'agent' OR user = :user)"
)
BUTTONS_KEPT_S = 30 * 24 * 3600  # a /memory message's buttons work this long


def _memory(row: tuple[Any, ...]) -> Memory:
    return Memory(id=row[0], scope=row[1], text=row[2], created_at=row[3], yours=bool(row[4]))


class MemoryStore(SQLiteStore):
    SCHEMA = SCHEMA
    SCHEMA_VERSION = 3
    MIGRATIONS = MIGRATIONS

    async def visible(self, agent: str, user: str) -> list[Memory]:
        """The agent's rules, then the user's notes, each oldest first."""

        def read(db: sqlite3.Connection) -> list[Memory]:
            rows = db.execute(
                _VISIBLE + " ORDER BY scope = 'user', created_at, rowid",
                {"agent": agent, "user": user},
            ).fetchall()
            return [_memory(row) for row in rows]

        return await self._run(read)

    async def find(self, agent: str, user: str, memory_id: str) -> Memory | None:
        def read(db: sqlite3.Connection) -> Memory | None:
            row = db.execute(
                _VISIBLE + " AND id = :id", {"agent": agent, "user": user, "id": memory_id}
            ).fetchone()
            return None if row is None else _memory(row)

        return await self._run(read)

    async def show(  # noqa: PLR0917 (where the message is, whose, what it shows)
        self, agent: str, chat_id: str, message_key: str, user: str, memory_ids: list[str],
        at: float,
    ) -> None:  # fmt: skip
        """Record the 🗑 buttons the message sent under ``message_key`` shows now (for
        ``user``): those it showed before and no longer does stay known as removed."""

        def write(db: sqlite3.Connection) -> None:
            where = (agent, chat_id, message_key)
            db.execute("DELETE FROM buttons WHERE at < ?", (at - BUTTONS_KEPT_S,))
            db.execute(
                "UPDATE buttons SET shown = 0 WHERE agent = ? AND chat_id = ? AND message_key = ?",
                where,
            )
            db.executemany(
                "INSERT INTO buttons (agent, chat_id, message_key, memory_id, user, shown, at)"
                " VALUES (?, ?, ?, ?, ?, 1, ?) ON CONFLICT DO UPDATE SET shown = 1,"
                " user = excluded.user, at = excluded.at",
                [(*where, memory_id, user, at) for memory_id in memory_ids],
            )

        await self.transact(write)

    async def button(
        self, agent: str, chat_id: str, message_key: str, user: str, memory_id: str
    ) -> bool | None:
        """Whether the message sent under ``message_key`` shows ``user`` the 🗑 of
        ``memory_id`` (False: it did, a redraw removed it; None: it never did)."""

        def read(db: sqlite3.Connection) -> bool | None:
            row = db.execute(
                "SELECT shown FROM buttons WHERE agent = ? AND chat_id = ? AND message_key = ?"
                " AND memory_id = ? AND user = ?",
                (agent, chat_id, message_key, memory_id, user),
            ).fetchone()
            return None if row is None else bool(row[0])

        return await self._run(read)

    async def search(
        self, agent: str, user: str, match: str, since: float, limit: int
    ) -> list[tuple[float, str]]:
        """The user's notes (scope user) matching the FTS5 query: (created_at, snippet)."""

        def read(db: sqlite3.Connection) -> list[tuple[float, str]]:
            rows = db.execute(
                "SELECT m.created_at, snippet(memories_fts, 1, '[', ']', '…', 16)"
                " FROM memories_fts JOIN memories AS m ON m.id = memories_fts.memory_id"
                " WHERE memories_fts MATCH ? AND m.agent = ? AND m.scope = 'user'"
                " AND m.user = ? AND m.forgotten_at IS NULL AND m.created_at >= ?"
                " ORDER BY bm25(memories_fts) LIMIT ?",
                (match, agent, user, since, limit),
            ).fetchall()
            return [(float(r[0]), str(r[1])) for r in rows]

        return await self._run(read)

    async def everything(self, agent: str, user: str | None) -> list[tuple[str, str, str]]:
        """(scope, user, text) of the agent's memories not forgotten, rules first, oldest
        first; with ``user``, only that user's notes."""

        def read(db: sqlite3.Connection) -> list[tuple[str, str, str]]:
            rows = db.execute(
                "SELECT scope, user, text FROM memories WHERE agent = ? AND forgotten_at IS NULL"
                " AND (scope = 'agent' OR ? IS NULL OR user = ?)"
                " ORDER BY scope = 'user', user, created_at, rowid",
                (agent, user, user),
            ).fetchall()
            return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]

        return await self._run(read)

    async def load(
        self, agent: str, entries: list[tuple[str, str, str]], at: float
    ) -> tuple[int, int]:
        """Add (scope, user, text) entries in one transaction, skipping those remembered
        already; (added, already present)."""

        def write(db: sqlite3.Connection) -> tuple[int, int]:
            added = 0
            for scope, user, text in entries:
                present = db.execute(
                    "SELECT 1 FROM memories WHERE agent = ? AND scope = ? AND user = ?"
                    " AND text = ? AND forgotten_at IS NULL",
                    (agent, scope, user, text),
                ).fetchone()
                if present is None:
                    Changes(db).remember(
                        f"mem_{secrets.token_hex(6)}", agent, scope, user, text, at
                    )
                    added += 1
            return added, len(entries) - added

        return await self.transact(write)

    async def confirm(
        self,
        approval: Approval,
        perform: Callable[[Changes], dict[str, Any]],
        *,
        at: float,
    ) -> Confirmed:
        """Perform an approved change once: a replayed approval returns the first result."""
        return await self._run(
            lambda db: confirm_once(db, approval, lambda db: perform(Changes(db)), at=at)
        )


class Changes:
    """The writes of one approved change, inside its confirm transaction."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def remember(  # noqa: PLR0917 (the row's columns)
        self,
        memory_id: str,
        agent: str,
        scope: str,
        user: str,
        text: str,
        at: float,
        set_by: str | None = None,
    ) -> Memory:
        self._db.execute(
            "INSERT INTO memories (id, agent, scope, user, text, created_at, set_by)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (memory_id, agent, scope, user if scope == "user" else "", text, at, set_by),
        )
        self._db.execute(
            "INSERT INTO memories_fts (memory_id, text) VALUES (?, ?)", (memory_id, text)
        )
        yours = scope == "user" or (set_by is not None and set_by == user)
        return Memory(id=memory_id, scope=scope, text=text, created_at=at, yours=yours)

    def forget(
        self, agent: str, user: str, memory_id: str, at: float, as_owner: bool = False
    ) -> bool:
        """Whether a memory this user may forget was forgotten now: a note about them, a
        rule they set, or (``as_owner``, the agent's owner) any rule."""
        forgotten = self._db.execute(
            "UPDATE memories SET forgotten_at = :at WHERE id = :id AND agent = :agent"
            " AND forgotten_at IS NULL AND ((scope = 'user' AND user = :user)"
            " OR (scope = 'agent' AND (set_by = :user OR :owner)))",
            {"at": at, "id": memory_id, "agent": agent, "user": user, "owner": as_owner},
        ).rowcount
        if forgotten:
            self._db.execute("DELETE FROM memories_fts WHERE memory_id = ?", (memory_id,))
        return bool(forgotten)

    def remembered(self, agent: str, user: str, memory_id: str) -> bool:
        """Whether this user sees the memory (not forgotten)."""
        found = self._db.execute(
            "SELECT 1 FROM memories WHERE id = ? AND agent = ? AND forgotten_at IS NULL"
            " AND (scope = 'agent' OR user = ?)",
            (memory_id, agent, user),
        ).fetchone()
        return found is not None
