"""Conversation items in SQLite: one file, one connection, WAL.

Tables:

    items   (id, agent, chat_id, created_at, body)   every item ever appended, body = JSON text
    resets  (id, agent, chat_id, after_item_id, at)  a conversation starts after its last reset
    turns   (agent, chat_id, turn_id, at)            turns appended with an id: never twice
    items_fts (rowid = items.id, text)               FTS5 over the messages' text (recall)
    summaries (agent, chat_id, text, up_to_id, up_to_at, at)
                                                     what left the window, summarized up to
                                                     item up_to_id; a reset deletes it
    held    (id, agent, chat_id, turn_id, user_id, purpose, text, at)
                                                     messages the allowance's cap held back;
                                                     answered once a turn is stored under
                                                     their turn id (``turns``)

A reset keeps the old rows (a later summary reads them): it records the highest item
id of the chat, and the current conversation is the chat's items above that id.
Ids come from AUTOINCREMENT, so they only grow, even after deletions.

Connection handling is meshkit's (``meshkit.sqlite``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from meshkit.sqlite import SQLiteStore

SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS items_by_chat ON items (agent, chat_id, id);
CREATE TABLE IF NOT EXISTS resets (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    after_item_id INTEGER NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS resets_by_chat ON resets (agent, chat_id, after_item_id);
CREATE VIRTUAL TABLE IF NOT EXISTS items_fts USING fts5(text, tokenize = 'unicode61');
CREATE TABLE IF NOT EXISTS summaries (
    agent TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    text TEXT NOT NULL,
    up_to_id INTEGER NOT NULL,
    up_to_at REAL NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (agent, chat_id)
);
CREATE TABLE IF NOT EXISTS turns (
    agent TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (agent, chat_id, turn_id)
);
CREATE TABLE IF NOT EXISTS held (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    user_id TEXT,
    purpose TEXT NOT NULL,
    text TEXT NOT NULL,
    at REAL NOT NULL,
    UNIQUE (agent, chat_id, turn_id)
);
"""
# Version 2 indexes the text of the messages stored so far (plain-text content).
MIGRATIONS = {
    2: "CREATE VIRTUAL TABLE IF NOT EXISTS items_fts USING fts5(text, tokenize = 'unicode61');"
    " INSERT INTO items_fts (rowid, text) SELECT id, json_extract(body, '$.content') FROM items"
    " WHERE json_extract(body, '$.type') = 'message'"
    " AND json_extract(body, '$.role') IN ('user', 'assistant')"
    " AND json_type(body, '$.content') = 'text';"
}
_START = "SELECT COALESCE(MAX(after_item_id), 0) FROM resets WHERE agent = ? AND chat_id = ?"
# A held message still waits: no turn stored under its id yet, and held since ``at``.
_WAITING = (
    "FROM held WHERE agent = ? AND chat_id = ? AND at > ? AND NOT EXISTS (SELECT 1 FROM turns"
    " WHERE turns.agent = held.agent AND turns.chat_id = held.chat_id"
    " AND turns.turn_id = held.turn_id)"
)


@dataclass(frozen=True)
class Found:
    """A recall hit in the conversation: when, who said it, the matching words marked."""

    created_at: float
    body: str
    snippet: str


@dataclass(frozen=True)
class Summary:
    text: str
    up_to_id: int
    up_to_at: float  # when the last item it covers was stored


@dataclass(frozen=True)
class Row:
    id: int
    created_at: float
    body: str


@dataclass(frozen=True)
class HeldRow:
    turn_id: str
    user_id: str | None
    purpose: str
    text: str
    at: float


@dataclass(frozen=True)
class Tail:
    """The newest rows of a chat's current conversation, read at one moment with what the
    window and the next summary round need to know of the rest."""

    rows: list[Row]  # newest first
    total: int  # rows of the current conversation
    summary: Summary | None
    unsummarized: int  # rows of the current conversation that no summary covers yet


class ConversationStore(SQLiteStore):
    SCHEMA = SCHEMA
    SCHEMA_VERSION = 2
    MIGRATIONS = MIGRATIONS

    async def append(  # noqa: PLR0917 (the rows' columns, the turn, the search text)
        self,
        agent: str,
        chat_id: str,
        created_at: float,
        bodies: Sequence[str],
        turn_id: str | None = None,
        texts: Sequence[str | None] = (),
        *,
        tail: int | None = None,
    ) -> tuple[bool, Tail | None]:
        """Store all the bodies, in order, or none of them; False when ``turn_id`` was
        appended before (then nothing is stored). ``texts[i]`` is the searchable text of
        ``bodies[i]`` (None: nothing to find in it). With ``tail``, also the chat's tail of
        that many rows as the write left it (``tail()``), read in the same transaction."""
        rows = [(agent, chat_id, created_at, body) for body in bodies]
        searchable = list(texts) + [None] * (len(bodies) - len(texts))

        def write(db: sqlite3.Connection) -> tuple[bool, Tail | None]:
            fresh = turn_id is None or bool(
                db.execute(
                    "INSERT OR IGNORE INTO turns (agent, chat_id, turn_id, at) VALUES (?, ?, ?, ?)",
                    (agent, chat_id, turn_id, created_at),
                ).rowcount
            )
            if fresh:  # else a turn stored before: nothing again
                for row, text in zip(rows, searchable, strict=True):
                    cursor = db.execute(
                        "INSERT INTO items (agent, chat_id, created_at, body) VALUES (?, ?, ?, ?)",
                        row,
                    )
                    if text:
                        db.execute(
                            "INSERT INTO items_fts (rowid, text) VALUES (?, ?)",
                            (cursor.lastrowid, text),
                        )
            return fresh, None if tail is None else _tail(db, agent, chat_id, tail)

        return await self.transact(write)

    async def tail(self, agent: str, chat_id: str, limit: int) -> Tail:
        """The newest ``limit`` rows of the chat's current conversation, with its summary
        and counts, from one snapshot (one read, one hand-off to the database thread)."""
        return await self.read(lambda db: _tail(db, agent, chat_id, limit))

    async def reset(self, agent: str, chat_id: str, at: float) -> int:
        """Start a new conversation; returns how many items the one that ended had."""

        def write(db: sqlite3.Connection) -> int:
            (start,) = db.execute(_START, (agent, chat_id)).fetchone()
            ended, last = db.execute(
                "SELECT COUNT(*), COALESCE(MAX(id), ?) FROM items"
                " WHERE agent = ? AND chat_id = ? AND id > ?",
                (start, agent, chat_id, start),
            ).fetchone()
            db.execute(
                "INSERT INTO resets (agent, chat_id, after_item_id, at) VALUES (?, ?, ?, ?)",
                (agent, chat_id, last, at),
            )
            db.execute("DELETE FROM summaries WHERE agent = ? AND chat_id = ?", (agent, chat_id))
            return int(ended)

        return await self.transact(write)

    async def hold(
        self, agent: str, chat_id: str, message: HeldRow, *, since: float, most: int
    ) -> tuple[bool, int]:
        """Keep ``message`` until a turn is stored under its turn id, unless ``most`` of the
        chat's held since ``since`` wait already (held again: kept as it was). Whether it is
        kept, and how many wait. What was answered or held before ``since`` is let go."""

        def write(db: sqlite3.Connection) -> tuple[bool, int]:
            db.execute(
                "DELETE FROM held WHERE agent = ? AND chat_id = ? AND (at <= ? OR EXISTS"
                " (SELECT 1 FROM turns WHERE turns.agent = held.agent AND turns.chat_id"
                " = held.chat_id AND turns.turn_id = held.turn_id))",
                (agent, chat_id, since),
            )
            (waiting,) = db.execute(
                f"SELECT COUNT(*) {_WAITING}", (agent, chat_id, since)
            ).fetchone()
            known = db.execute(
                "SELECT 1 FROM held WHERE agent = ? AND chat_id = ? AND turn_id = ?",
                (agent, chat_id, message.turn_id),
            ).fetchone()
            if known is not None:
                return True, int(waiting)
            if waiting >= most:
                return False, int(waiting)
            db.execute(
                "INSERT INTO held (agent, chat_id, turn_id, user_id, purpose, text, at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (agent, chat_id, message.turn_id, message.user_id, message.purpose,
                 message.text, message.at),
            )  # fmt: skip
            return True, int(waiting) + 1

        return await self.transact(write)

    async def held(self, agent: str, chat_id: str, since: float, limit: int) -> list[HeldRow]:
        """The chat's messages still held (held after ``since``), oldest first."""

        def read(db: sqlite3.Connection) -> list[HeldRow]:
            rows = db.execute(
                f"SELECT turn_id, user_id, purpose, text, at {_WAITING} ORDER BY id LIMIT ?",
                (agent, chat_id, since, limit),
            ).fetchall()
            return [HeldRow(*row) for row in rows]

        return await self._run(read)

    async def search(  # noqa: PLR0917 (whose, what, from when, below which item, how many)
        self, agent: str, chat_id: str, match: str, since: float, below_id: int, limit: int
    ) -> list[Found]:
        """The chat's items below ``below_id`` (older than the window) that match the FTS5
        query ``match``, stored from ``since`` on, best first."""

        def read(db: sqlite3.Connection) -> list[Found]:
            rows = db.execute(
                "SELECT items.created_at, items.body,"
                " snippet(items_fts, 0, '[', ']', '…', 16) FROM items_fts"
                " JOIN items ON items.id = items_fts.rowid"
                " WHERE items_fts MATCH ? AND items.agent = ? AND items.chat_id = ?"
                " AND items.id < ? AND items.created_at >= ?"
                " ORDER BY bm25(items_fts) LIMIT ?",
                (match, agent, chat_id, below_id, since, limit),
            ).fetchall()
            return [Found(*row) for row in rows]

        return await self._run(read)

    async def summary(self, agent: str, chat_id: str) -> Summary | None:
        return await self._run(lambda db: _summary(db, agent, chat_id))

    async def unsummarized(self, agent: str, chat_id: str, below_id: int, limit: int) -> list[Row]:
        """The current conversation's items below ``below_id`` (out of the window) that no
        summary covers yet, oldest first."""

        def read(db: sqlite3.Connection) -> list[Row]:
            (start,) = db.execute(_START, (agent, chat_id)).fetchone()
            done = db.execute(
                "SELECT up_to_id FROM summaries WHERE agent = ? AND chat_id = ?", (agent, chat_id)
            ).fetchone()
            after = max(start, done[0] if done else 0)
            rows = db.execute(
                "SELECT id, created_at, body FROM items WHERE agent = ? AND chat_id = ?"
                " AND id > ? AND id < ? ORDER BY id LIMIT ?",
                (agent, chat_id, after, below_id, limit),
            ).fetchall()
            return [Row(*row) for row in rows]

        return await self._run(read)

    async def save_summary(
        self, agent: str, chat_id: str, text: str, up_to_id: int, at: float
    ) -> bool:
        """Keep a summary of the conversation up to item ``up_to_id``, unless one reaching
        as far is kept already or the conversation was reset past it."""

        def write(db: sqlite3.Connection) -> bool:
            (start,) = db.execute(_START, (agent, chat_id)).fetchone()
            found = db.execute(
                "SELECT created_at FROM items WHERE id = ? AND agent = ? AND chat_id = ?",
                (up_to_id, agent, chat_id),
            ).fetchone()
            if found is None or up_to_id <= start:
                return False
            return bool(
                db.execute(
                    "INSERT INTO summaries (agent, chat_id, text, up_to_id, up_to_at, at)"
                    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (agent, chat_id) DO UPDATE SET"
                    " text = excluded.text, up_to_id = excluded.up_to_id,"
                    " up_to_at = excluded.up_to_at, at = excluded.at"
                    " WHERE excluded.up_to_id > summaries.up_to_id",
                    (agent, chat_id, text, up_to_id, found[0], at),
                ).rowcount
            )

        return await self.transact(write)


def _tail(db: sqlite3.Connection, agent: str, chat_id: str, limit: int) -> Tail:
    (start,) = db.execute(_START, (agent, chat_id)).fetchone()
    found = db.execute(
        "SELECT id, created_at, body FROM items"
        " WHERE agent = ? AND chat_id = ? AND id > ? ORDER BY id DESC LIMIT ?",
        (agent, chat_id, start, limit),
    ).fetchall()
    (total,) = db.execute(
        "SELECT COUNT(*) FROM items WHERE agent = ? AND chat_id = ? AND id > ?",
        (agent, chat_id, start),
    ).fetchone()
    summary = _summary(db, agent, chat_id)
    unsummarized = total
    if summary is not None and summary.up_to_id > start:
        (unsummarized,) = db.execute(
            "SELECT COUNT(*) FROM items WHERE agent = ? AND chat_id = ? AND id > ?",
            (agent, chat_id, summary.up_to_id),
        ).fetchone()
    return Tail([Row(*r) for r in found], total, summary, unsummarized)


def _summary(db: sqlite3.Connection, agent: str, chat_id: str) -> Summary | None:
    row = db.execute(
        "SELECT text, up_to_id, up_to_at FROM summaries WHERE agent = ? AND chat_id = ?",
        (agent, chat_id),
    ).fetchone()
    return None if row is None else Summary(*row)
