"""SQLite for servers: one file, one connection, WAL, work off the event loop.

SQLite calls block. They run in a worker thread (``anyio.to_thread``), one at a
time behind a lock, so a slow disk (an SD card on a Pi, a WAL checkpoint) stalls
one request and never the event loop. A store subclasses :class:`SQLiteStore`
with its ``SCHEMA`` (idempotent ``CREATE ... IF NOT EXISTS``) and version, and
writes its queries as functions of the connection passed to ``_run``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import ClassVar, Literal, TypeVar

import anyio.to_thread

T = TypeVar("T")


class SQLiteStore:
    """Opened by ``open`` or on first use, closed by the server's lifespan; reopens when used."""

    SCHEMA: ClassVar[str] = ""
    SCHEMA_VERSION: ClassVar[int] = 1

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    async def open(self) -> None:
        await self._run(lambda db: None)

    @asynccontextmanager
    async def lifespan(self, _server: object = None) -> AsyncIterator[None]:
        """A server's lifespan (``create_server(lifespan=store.lifespan)``): opened at start,
        so a bad ``DATA_DIR`` fails then rather than at the first call; closed at the end."""
        await self.open()
        try:
            yield
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self._close)

    async def ping(self) -> None:
        await self._run(lambda db: db.execute("SELECT 1").fetchone())

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await anyio.to_thread.run_sync(self._locked, work)

    def _locked(self, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            if self._db is None:
                self._db = self._connect()
            return work(self._db)

    def _close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _connect(self) -> sqlite3.Connection:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit (isolation_level=None): transactions are explicit, see transaction().
        # check_same_thread=False: worker threads take turns, serialised by the store's lock.
        db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode = WAL")
            # NORMAL in WAL mode never corrupts; a power cut may lose the last commits only.
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute("PRAGMA busy_timeout = 5000")
            (found,) = db.execute("PRAGMA user_version").fetchone()
            if found > self.SCHEMA_VERSION:
                raise RuntimeError(f"{self._path} has schema {found}, newer than this server's")
            db.executescript(
                f"BEGIN IMMEDIATE; {self.SCHEMA} PRAGMA user_version = {self.SCHEMA_VERSION}; "
                "COMMIT;"
            )
        except BaseException:
            db.close()
            raise
        return db


@contextmanager
def transaction(db: sqlite3.Connection, mode: Literal["DEFERRED", "IMMEDIATE"]) -> Iterator[None]:
    """``BEGIN <mode>`` ... ``COMMIT``, or ``ROLLBACK`` when the block raises."""
    db.execute(f"BEGIN {mode}")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
