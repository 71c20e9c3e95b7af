"""Conversation items in SQLite: one file, one connection, WAL.

Tables:

    items   (id, agent, chat_id, created_at, body)   every item ever appended, body = JSON text
    resets  (id, agent, chat_id, after_item_id, at)  a conversation starts after its last reset

A reset keeps the old rows (a later summary reads them): it records the highest item
id of the chat, and the current conversation is the chat's items above that id.
Ids come from AUTOINCREMENT, so they only grow, even after deletions.

SQLite calls block. They run in a worker thread (``anyio.to_thread``), one at a
time behind a lock, so a slow disk (an SD card on a Pi, a WAL checkpoint) stalls
one request and never the event loop.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

import anyio.to_thread

T = TypeVar("T")

SCHEMA_VERSION = 1
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


class ConversationStore:
    """Opened by ``open`` or on first use, closed by the server's lifespan; reopens when used."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    async def open(self) -> None:
        await self._run(lambda db: None)

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self._close)

    async def ping(self) -> None:
        await self._run(lambda db: db.execute("SELECT 1").fetchone())

    async def append(
        self, agent: str, chat_id: str, created_at: float, bodies: Sequence[str]
    ) -> None:
        """Store all the bodies, in order, or none of them."""
        rows = [(agent, chat_id, created_at, body) for body in bodies]

        def write(db: sqlite3.Connection) -> None:
            with _transaction(db, "IMMEDIATE"):
                db.executemany(
                    "INSERT INTO items (agent, chat_id, created_at, body) VALUES (?, ?, ?, ?)",
                    rows,
                )

        await self._run(write)

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

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await anyio.to_thread.run_sync(self._locked, work)

    def _locked(self, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            if self._db is None:
                self._db = _connect(self._path)
            return work(self._db)

    def _close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Autocommit (isolation_level=None): transactions are explicit, see _transaction.
    # check_same_thread=False: worker threads take turns, serialised by the store's lock.
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode never corrupts; a power cut may lose the last commits only.
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA busy_timeout = 5000")
        (found,) = db.execute("PRAGMA user_version").fetchone()
        if found > SCHEMA_VERSION:
            raise RuntimeError(f"{path} has schema {found}, newer than this server's")
        db.executescript(
            f"BEGIN IMMEDIATE; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        )
    except BaseException:
        db.close()
        raise
    return db


@contextmanager
def _transaction(db: sqlite3.Connection, mode: Literal["DEFERRED", "IMMEDIATE"]) -> Iterator[None]:
    """``BEGIN <mode>`` ... ``COMMIT``, or ``ROLLBACK`` when the block raises."""
    db.execute(f"BEGIN {mode}")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
