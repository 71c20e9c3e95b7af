"""SQLite for servers: one file, one connection, WAL, work off the event loop.

SQLite calls block. They run in the store's own worker thread, one at a time, so a
slow disk (an SD card on a Pi) stalls one request and never the event loop. A store
subclasses :class:`SQLiteStore` with its ``SCHEMA`` (idempotent ``CREATE ... IF NOT
EXISTS``) and version, and writes its queries as functions of the connection passed to
``_run``: one function is one hand-off to that thread, so a call's statements go in one.

One thread per store, rather than ``anyio.to_thread``'s shared pool: a hand-off costs
about half the CPU (no capacity limiter, no pool lookup; ~25 µs instead of ~45 µs), and
the connection is only ever used from that thread. An awaiting request that is cancelled
still waits for its work to finish (as ``to_thread.run_sync`` does), so a write is never
left running behind a request that has already answered.

A schema that changes raises ``SCHEMA_VERSION`` and gives ``MIGRATIONS[v]``: the
statements that bring a database of version v-1 to v (``ALTER TABLE ... ADD COLUMN``).
An existing file runs the steps it lacks, then ``SCHEMA`` (for new tables and indexes),
in one transaction: its rows stay. A new file gets ``SCHEMA`` alone.

Checkpoints (copying the WAL into the database file, with an fsync) would otherwise
run inside whichever commit crosses 1000 pages, stalling that request for the
length of an fsync (tens of ms here, far more on an SD card). While a server runs
(:meth:`SQLiteStore.lifespan`), a background task checkpoints on a connection of its
own, every few seconds, in a quiet moment (no request for a second; a minute late at
most under constant load); the commit-time checkpoint stays as a backstop for a WAL
that grows past ``BACKSTOP_PAGES``.

Storage faults (``meshkit.storage``): :meth:`SQLiteStore.verify` opens and checks the file
when the server is built, so a read-only ``DATA_DIR`` or a damaged file stops the start
with one line; at run time every call goes through ``_run``, which turns a full disk or a
failed write into a :class:`StorageFailed` tool error and keeps ``storage`` (the health
check) failing until a write succeeds again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

import anyio
import anyio.to_thread
from pydantic import BaseModel

from meshkit.private import private_database
from meshkit.storage import (
    DAMAGED_FILE,
    Fault,
    StorageFailed,
    StorageState,
    StorageUnavailable,
    capped,
    fault,
)

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
logger = logging.getLogger(__name__)

BACKSTOP_PAGES = 10_000  # ~40 MB of WAL before a commit checkpoints by itself


class SQLiteStore:
    """Opened by ``open`` or on first use, closed by the server's lifespan; reopens when used."""

    SCHEMA: ClassVar[str] = ""
    SCHEMA_VERSION: ClassVar[int] = 1
    MIGRATIONS: ClassVar[Mapping[int, str]] = {}  # version → statements from the one before
    checkpoint_every_s: float = 5.0
    checkpoint_quiet_s: float = 1.0  # no request for this long: a quiet moment
    checkpoint_late_s: float = 60.0  # under constant load, checkpoint anyway after this

    def __init__(
        self,
        path: Path,
        *,
        max_bytes: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``max_bytes`` caps the database file (``DATA_MAX_MB``): past it, writes fail as on
        a full disk; ``clock`` paces the fault reports in the log."""
        self._path = path
        self._max_bytes = max_bytes
        self.storage = StorageState(path, clock=clock)
        # One worker runs every request, but after aclose() the next one may start while the
        # old one ends its last: the lock keeps the connection to one thread at a time.
        self._lock = threading.Lock()
        self._worker: ThreadPoolExecutor | None = None
        self._db: sqlite3.Connection | None = None
        self._checkpointer: sqlite3.Connection | None = None
        # The checkpointer runs in a thread of anyio's, not the store's: closing it while a
        # checkpoint is at work on it would free what SQLite is using (a crash, not an error).
        self._checkpointing = threading.Lock()
        self._used_at = 0.0  # time.monotonic() of the last request

    @property
    def path(self) -> Path:
        return self._path

    def verify(self) -> None:
        """Open the file (creating it and ``DATA_DIR`` when missing) and check it whole
        (``PRAGMA quick_check``), then close it again: called when a server is built, so a
        directory it cannot write or a damaged file stops the start with
        :class:`StorageUnavailable`, one line naming the path and the fix."""
        try:
            db = self._connect()
        except (sqlite3.Error, OSError) as error:
            raise self._unavailable(error) from None
        try:
            problems = [row[0] for row in db.execute("PRAGMA quick_check").fetchall()]
        except sqlite3.Error as error:
            raise self._unavailable(error) from None
        finally:
            db.close()
        if problems != ["ok"]:
            raise StorageUnavailable(self._path, DAMAGED_FILE)

    async def open(self) -> None:
        try:
            await self._run(lambda db: None)
        except StorageFailed:
            raise StorageUnavailable(self._path, self.storage.failing or DAMAGED_FILE) from None

    def _unavailable(self, error: Exception) -> Exception:
        found = fault(error)
        return error if found is None else StorageUnavailable(self._path, found)

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """The store's part of a server's lifespan (``create_server(stores=[store])`` enters
        it): opened at start, so a bad ``DATA_DIR`` fails then rather than at the first call;
        checkpointed in the background while it runs; closed at the end."""
        await self.open()
        # A task of its own, not a task group around the yield: fastmcp closes lifespans
        # inside a shielded cancel scope, which a task group opened here cannot exit from.
        task = asyncio.get_running_loop().create_task(self._checkpoints(), name="checkpoints")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await self.aclose()

    async def checkpoint(self) -> None:
        """Copy what the WAL holds into the database file, on a connection of its own
        (PASSIVE: requests go on meanwhile; what they hold back waits for the next one)."""
        await anyio.to_thread.run_sync(self._checkpoint)

    async def _checkpoints(self) -> None:
        while True:
            await anyio.sleep(self.checkpoint_every_s)
            late = time.monotonic() + self.checkpoint_late_s
            while self._busy() and time.monotonic() < late:  # noqa: ASYNC110 (polled: a request sets no event)
                await anyio.sleep(self.checkpoint_quiet_s)
            try:
                await self.checkpoint()
            except sqlite3.Error as error:  # the next round, or the backstop, tries again
                found = fault(error)
                if found is None:
                    logger.warning("%s: checkpoint failed: %s", self._path.name, error)
                else:
                    self.storage.failed(found)  # said once a minute, not every round

    def _busy(self) -> bool:
        return time.monotonic() - self._used_at < self.checkpoint_quiet_s

    def _checkpoint(self) -> None:
        with self._checkpointing:
            if self._checkpointer is None:
                self._checkpointer = sqlite3.connect(
                    self._path, isolation_level=None, check_same_thread=False
                )
                self._checkpointer.execute("PRAGMA busy_timeout = 5000")
            self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()

    async def aclose(self) -> None:
        await self._in_worker(self._close)
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.shutdown(wait=False)  # idle now; the next use starts another

    async def ping(self) -> None:
        await self._run(lambda db: db.execute("SELECT 1").fetchone())

    async def transact(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` inside one IMMEDIATE transaction: all of it commits, or none."""

        def run(db: sqlite3.Connection) -> T:
            with transaction(db, "IMMEDIATE"):
                return work(db)

        return await self._run(run)

    async def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` on one snapshot."""

        def snapshot(db: sqlite3.Connection) -> T:
            with transaction(db, "DEFERRED"):
                return work(db)

        return await self._run(snapshot)

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await self._in_worker(self._locked, work)

    async def _in_worker(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` in the store's thread; a cancelled caller waits for its end."""
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix=f"sqlite-{self._path.name}")
        done = asyncio.get_running_loop().run_in_executor(self._worker, function, *args)
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await done  # its outcome, a result or an error, is read below
        return done.result()

    def _locked(self, work: Callable[[sqlite3.Connection], T]) -> T:
        self._used_at = time.monotonic()
        with self._lock:
            try:
                if self._db is None:
                    self._db = self._connect()
                changes = self._db.total_changes
                result = work(self._db)
            except (sqlite3.Error, OSError) as error:
                if self._db is not None and self._db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):  # the error at hand says more
                        self._db.rollback()  # a failed COMMIT may leave one open
                found = fault(error)
                if found is None:
                    raise
                found = capped(found, self._max_bytes)
                self.storage.failed(found)
                raise StorageFailed(found) from None
            if self._db.total_changes != changes:
                self.storage.succeeded()  # only a write proves the storage works again
            return result

    def _close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
        with self._checkpointing:  # after a checkpoint at work on it, never during
            if self._checkpointer is not None:
                self._checkpointer.close()
                self._checkpointer = None

    def _connect(self) -> sqlite3.Connection:
        # Created here (0700 / 0600, see meshkit.private) so an unwritable DATA_DIR is
        # named by the OS's own words.
        private_database(self._path)
        # Autocommit (isolation_level=None): transactions are explicit, see transaction().
        # check_same_thread=False: worker threads take turns, serialised by the store's lock.
        db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode = WAL")
            # NORMAL in WAL mode never corrupts; a power cut may lose the last commits only.
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute("PRAGMA busy_timeout = 5000")
            db.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_PAGES}")
            if self._max_bytes is not None:
                (page,) = db.execute("PRAGMA page_size").fetchone()
                db.execute(f"PRAGMA max_page_count = {max(1, self._max_bytes // page)}")
            (found,) = db.execute("PRAGMA user_version").fetchone()
            if found > self.SCHEMA_VERSION:
                raise StorageUnavailable(
                    self._path,
                    Fault(
                        f"it has schema {found}, written by a newer version of this server",
                        "run that version, or restore a backup this version wrote",
                    ),
                )
            db.executescript(
                f"BEGIN IMMEDIATE; {self._upgrade(found)} {self.SCHEMA} "
                f"PRAGMA user_version = {self.SCHEMA_VERSION}; COMMIT;"
            )
        except BaseException:
            db.close()
            raise
        return db

    def _upgrade(self, found: int) -> str:
        """The migration steps a file of version ``found`` lacks (0: a new file, none)."""
        if found == 0:
            return ""
        return " ".join(self.MIGRATIONS[v] for v in range(found + 1, self.SCHEMA_VERSION + 1))


@contextmanager
def transaction(db: sqlite3.Connection, mode: Literal["DEFERRED", "IMMEDIATE"]) -> Iterator[None]:
    """``BEGIN <mode>`` ... ``COMMIT``, or ``ROLLBACK`` when the block raises."""
    db.execute(f"BEGIN {mode}")
    try:
        yield
    except BaseException:
        if db.in_transaction:  # SQLite rolls back by itself after some errors (SQLITE_FULL)
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def row_model(model: type[M], row: Sequence[Any]) -> M:
    """The model a row holds, its columns selected in the order of the model's fields."""
    return model.model_validate(dict(zip(model.model_fields, row, strict=True)))
