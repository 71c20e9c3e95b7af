"""Conversation items in SQLite: one file, one connection, WAL.

Tables:

    items   (id, agent, chat_id, created_at, body)   every item ever appended, body = JSON text
    resets  (id, agent, chat_id, after_item_id, at)  a conversation starts after its last reset
    turns   (agent, chat_id, turn_id, at)            turns appended with an id: never twice

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
from meshkit.sqlite import transaction as _transaction

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
CREATE TABLE IF NOT EXISTS turns (
    agent TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (agent, chat_id, turn_id)
);
"""
_START = "SELECT COALESCE(MAX(after_item_id), 0) FROM resets WHERE agent = ? AND chat_id = ?"


@dataclass(frozen=True)
class Row:
    id: int
    created_at: float
    body: str


@dataclass(frozen=True)
class Tail:
    """The newest rows of a chat's current conversation, and how many rows it has in all."""

    rows: list[Row]  # newest first
    total: int


class ConversationStore(SQLiteStore):
    SCHEMA = SCHEMA

    async def append(
        self,
        agent: str,
        chat_id: str,
        created_at: float,
        bodies: Sequence[str],
        turn_id: str | None = None,
    ) -> bool:
        """Store all the bodies, in order, or none of them; False when ``turn_id`` was
        appended before (then nothing is stored)."""
        rows = [(agent, chat_id, created_at, body) for body in bodies]

        def write(db: sqlite3.Connection) -> bool:
            with _transaction(db, "IMMEDIATE"):
                if turn_id is not None:
                    new = db.execute(
                        "INSERT OR IGNORE INTO turns (agent, chat_id, turn_id, at)"
                        " VALUES (?, ?, ?, ?)",
                        (agent, chat_id, turn_id, created_at),
                    ).rowcount
                    if not new:
                        return False
                db.executemany(
                    "INSERT INTO items (agent, chat_id, created_at, body) VALUES (?, ?, ?, ?)",
                    rows,
                )
            return True

        return await self._run(write)

    async def tail(self, agent: str, chat_id: str, limit: int) -> Tail:
        def read(db: sqlite3.Connection) -> Tail:
            with _transaction(db, "DEFERRED"):  # one snapshot for both queries
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
            return Tail(rows=[Row(*row) for row in found], total=total)

        return await self._run(read)

    async def reset(self, agent: str, chat_id: str, at: float) -> int:
        """Start a new conversation; returns how many items the one that ended had."""

        def write(db: sqlite3.Connection) -> int:
            with _transaction(db, "IMMEDIATE"):
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
            return int(ended)

        return await self._run(write)
