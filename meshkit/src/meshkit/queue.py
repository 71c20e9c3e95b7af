"""The leased queue: a server declares its table, meshkit leases, acks and fences.

    put (insert-or-ignore by key) ─► waiting ─► next: leased to (consumer, run) until
    now + lease_s ─► handled ─► acked (carried by the next ``next``, or ``ack``)

A server keeps its own table and schema; it declares a :class:`QueueSpec` (the table, the
columns naming an item, the lease's columns, what "waiting", "done" and "may go now" mean
in its SQL) and builds one :class:`LeasedQueue` over its ``SQLiteStore``:

- **next** (long-polled): the acks of the last batch, the server's own work (``before``),
  and the lease, in one transaction; with nothing to hand out it waits for a wake-up
  (:meth:`LeasedQueue.wake`, called after a put) or for the soonest time something may go
  (a lease that runs out, the server's ``wake_at``), up to ``wait_s``.
- **extend** keeps what a run still works on; **ack** marks items done (by key, once).
- **fencing**: each consumer's runs are rows of the server's runs table
  (:data:`RUNS_SCHEMA`). The first ``next`` of a new run makes it current: what the
  consumer's earlier runs held is released at once (they crashed or stopped), and those
  runs are fenced: their ``next`` fails (:class:`Fenced`), their acks change nothing, and
  they hold nothing left to extend.
- **per-key order** (``group``): of the items of one group (a chat), only the oldest
  waiting one may be leased: they are handed out in order, never two at once.

An item leased and never acked is handed out again when its lease runs out: at least once.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar

import anyio

from meshkit.errors import ModelError
from meshkit.sqlite import SQLiteStore

T = TypeVar("T")
logger = logging.getLogger(__name__)

RUNS_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    consumer TEXT NOT NULL,
    run TEXT NOT NULL,
    started_at REAL NOT NULL,
    superseded_at REAL,
    PRIMARY KEY (consumer, run)
);
"""
Key = str | int | tuple[Any, ...]


class Fenced(ModelError):
    """A newer run of the same consumer has started: this run gets nothing more."""


@dataclass(frozen=True)
class Holder:
    """Who holds a lease: a consumer (a stable name) and one run of it (new at each start)."""

    consumer: str
    run: str


@dataclass(frozen=True)
class QueueSpec:
    """A server's queue table. SQL fragments may use ``:now``; ``columns`` is what a lease
    reads (the rows ``next`` converts)."""

    table: str
    key: tuple[str, ...]  # the columns that name an item
    columns: str
    order: tuple[str, ...]  # handed out oldest first, by these
    noun: str = "items"  # in log lines and errors: "updates", "firings"
    waiting: str = "acked_at IS NULL"  # not done yet
    done: str = "acked_at = :now"  # SET when acked
    ready: str = "1"  # may go now (an agent not paused, a time reached)
    recheck_s: float | None = None  # while an item is not ready, look again this often
    leased: str = ""  # SET too at each lease (a delivery count)
    holder: str = "holder"
    run: str = "run"
    until: str = "lease_until"  # NULL or 0: not leased
    group: str | None = None  # per-key order: one at a time, in order, per value


@dataclass(frozen=True)
class Batch(Generic[T]):
    items: list[T]
    acked: int  # of the acks carried by the call, how many were waiting


class LeasedQueue:
    """One server's queue over its store; ``clock`` gives lease times (Unix seconds)."""

    def __init__(
        self,
        store: SQLiteStore,
        spec: QueueSpec,
        *,
        lease_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.spec = spec
        self.lease_s = lease_s
        self.readers = 0  # ``next`` calls waiting right now
        self._store = store
        self._clock = clock
        self._wake = anyio.Event()
        self._handed = anyio.Event()  # set (and replaced) whenever a ``next`` hands some out
        self._stopping = False
        s = spec
        self._where_key = " AND ".join(f"{column} = :k{i}" for i, column in enumerate(s.key))
        self._free = f"{s.waiting} AND COALESCE({s.until}, 0) <= :now AND ({s.ready})"
        if s.group is not None:  # no older item of its group still waits
            mine = ", ".join(f"e.{column}" for column in s.order)
            theirs = ", ".join(f"{s.table}.{column}" for column in s.order)
            older = f"({mine}) < ({theirs})"
            self._free += (
                f" AND NOT EXISTS (SELECT 1 FROM {s.table} AS e WHERE {s.waiting}"  # noqa: S608
                f" AND e.{s.group} = {s.table}.{s.group} AND {older})"
            )
        self._lease = (
            f"UPDATE {s.table} SET {s.holder} = :consumer, {s.run} = :run, {s.until} = :until"  # noqa: S608
            f"{', ' + s.leased if s.leased else ''} WHERE {self._where_key}"
        )

    async def wake(self, hand_over_s: float = 0.0) -> None:
        """Something may go now (put, resumed): waiting ``next`` calls look again. With
        ``hand_over_s``, wait that long at most for one of them to take it."""
        handed = self._handed
        self.woken()
        with anyio.move_on_after(hand_over_s):
            await handed.wait()

    def woken(self) -> None:
        """:meth:`wake` without waiting (from synchronous code)."""
        self._wake.set()
        self._wake = anyio.Event()

    def stop_waiting(self) -> None:
        """The server is stopping: waiting ``next`` calls answer now, with nothing new."""
        self._stopping = True
        self._wake.set()

    async def next(
        self,
        holder: Holder | None,
        limit: int,
        wait_s: float,
        convert: Callable[[sqlite3.Connection, tuple[Any, ...], float], T | None],
        *,
        ack: Sequence[Key] = (),
        before: Callable[[sqlite3.Connection, float], object] | None = None,
        wake_at: Callable[[sqlite3.Connection, float], float | None] | None = None,
    ) -> Batch[T]:
        """Ack ``ack`` (for ``holder``), run ``before``, then lease up to ``limit`` items to
        ``holder`` (None: anonymously), waiting up to ``wait_s`` for one. ``convert`` reads
        a row in the transaction; None leaves it unleased (the server acked or delayed it).
        ``wake_at``: the soonest something of the server's may go (besides a lease ending)."""
        deadline = anyio.current_time() + wait_s
        keys = list(ack)
        while True:
            event = self._wake
            acked, found, soonest = await self._store.transact(
                partial(self._take, holder, limit, convert, keys, before, wake_at)
            )
            if found:
                self._handed.set()
                self._handed = anyio.Event()
                return Batch(found, acked)
            keys, left = [], deadline - anyio.current_time()
            if left <= 0 or self._stopping:
                return Batch([], acked)
            if soonest is not None:
                left = min(left, max(0.01, soonest - self._clock()))
            self.readers += 1
            try:
                with anyio.move_on_after(left):
                    await event.wait()
            finally:
                self.readers -= 1

    async def extend(self, keys: Sequence[Key], holder: Holder) -> int:
        """Keep the leases ``holder`` still holds among ``keys`` another ``lease_s``."""
        s, until = self.spec, self._clock() + self.lease_s
        sql = (
            f"UPDATE {s.table} SET {s.until} = :until WHERE {self._where_key}"  # noqa: S608
            f" AND {s.holder} = :consumer AND {s.run} = :run AND {s.waiting}"
        )
        values = {"until": until, "consumer": holder.consumer, "run": holder.run}
        return await self._store.transact(partial(self._each, sql, keys, values))

    async def ack(self, keys: Sequence[Key], holder: Holder | None = None) -> int:
        """Mark items done, by key (twice is harmless): how many were waiting. From a
        ``holder`` that is fenced, nothing (0)."""
        now = self._clock()

        def work(db: sqlite3.Connection) -> int:
            if holder is not None and self._fenced(db, holder):
                return 0
            return self._ack(db, keys, now)

        return await self._store.transact(work)

    # --- inside the transaction -----------------------------------------------------------

    def _take(  # noqa: PLR0917
        self,
        holder: Holder | None,
        limit: int,
        convert: Callable[[sqlite3.Connection, tuple[Any, ...], float], T | None],
        keys: list[Key],
        before: Callable[[sqlite3.Connection, float], object] | None,
        wake_at: Callable[[sqlite3.Connection, float], float | None] | None,
        db: sqlite3.Connection,
    ) -> tuple[int, list[T], float | None]:
        now = self._clock()
        if holder is not None:
            self._start(db, holder, now)
        acked = self._ack(db, keys, now) if keys else 0
        if before is not None:
            before(db, now)
        s, found, seen = self.spec, list[T](), set[tuple[Any, ...]]()
        who = {"consumer": holder and holder.consumer, "run": holder and holder.run}
        while len(found) < limit:
            rows = db.execute(
                f"SELECT {', '.join(s.key)}, {s.columns} FROM {s.table}"  # noqa: S608
                f" WHERE {self._free} ORDER BY {', '.join(s.order)} LIMIT :limit",
                {"now": now, "limit": limit - len(found) + len(seen)},
            ).fetchall()
            fresh = [row for row in rows if row[: len(s.key)] not in seen]
            if not fresh:
                break
            for row in fresh[: limit - len(found)]:
                key = row[: len(s.key)]
                seen.add(key)
                item = convert(db, row[len(s.key) :], now)
                if item is not None:
                    found.append(item)
                    db.execute(
                        self._lease, {**who, "now": now, "until": now + self.lease_s, **_named(key)}
                    )
        if found or self._stopping:
            return acked, found, None
        (ends,) = db.execute(  # the soonest lease running now ends
            f"SELECT MIN({s.until}) FROM {s.table} WHERE {s.waiting} AND {s.until} > :now",  # noqa: S608
            {"now": now},
        ).fetchone()
        if (
            s.recheck_s is not None
            and db.execute(
                f"SELECT 1 FROM {s.table} WHERE {s.waiting} AND NOT ({s.ready}) LIMIT 1",  # noqa: S608
                {"now": now},
            ).fetchone()
        ):  # another process may make it ready (resume an agent): no wake-up here
            ends = min(ends or now + s.recheck_s, now + s.recheck_s)
        soonest = [t for t in (ends, wake_at and wake_at(db, now)) if t]
        return acked, found, min(soonest, default=None)

    def _ack(self, db: sqlite3.Connection, keys: Sequence[Key], now: float) -> int:
        s = self.spec
        sql = f"UPDATE {s.table} SET {s.done} WHERE {self._where_key} AND {s.waiting}"  # noqa: S608
        return self._each(sql, keys, {"now": now}, db)

    def _each(
        self, sql: str, keys: Sequence[Key], values: dict[str, Any], db: sqlite3.Connection
    ) -> int:
        before = db.total_changes
        db.executemany(sql, [{**values, **_named(key)} for key in keys])
        return db.total_changes - before

    def _start(self, db: sqlite3.Connection, holder: Holder, now: float) -> None:
        """Make ``holder.run`` its consumer's current run (Fenced when a newer one is):
        the earlier runs are fenced, and what they held is released."""
        s, who = self.spec, {"consumer": holder.consumer, "run": holder.run, "now": now}
        fenced = self._fenced(db, holder)
        if fenced:
            raise Fenced(
                f"a newer run of consumer {holder.consumer!r} has started: this run gets no "
                f"more {s.noun}. Stop this process, or give each consumer its own name."
            )
        if fenced is False:
            return
        db.execute("INSERT INTO runs VALUES (:consumer, :run, :now, NULL)", who)
        db.execute(
            "UPDATE runs SET superseded_at = :now"
            " WHERE consumer = :consumer AND run != :run AND superseded_at IS NULL",
            who,
        )
        released = db.execute(
            f"UPDATE {s.table} SET {s.holder} = NULL, {s.run} = NULL, {s.until} = 0"  # noqa: S608
            f" WHERE {s.holder} = :consumer AND {s.run} != :run AND {s.waiting}",
            who,
        ).rowcount
        if released:
            said = "%s: consumer %s started again (run %s): %d %s its last run held, handed out now"
            logger.info(said, s.table, holder.consumer, holder.run, released, s.noun)

    def _fenced(self, db: sqlite3.Connection, holder: Holder) -> bool | None:
        """Whether a newer run of ``holder``'s consumer started (None: a run never seen)."""
        row = db.execute(
            "SELECT superseded_at FROM runs WHERE consumer = ? AND run = ?",
            (holder.consumer, holder.run),
        ).fetchone()
        return None if row is None else row[0] is not None


def put(db: sqlite3.Connection, spec: QueueSpec, row: Mapping[str, Any]) -> bool:
    """Insert ``row`` (column → value) unless its key is there already, inside the caller's
    transaction (then :meth:`LeasedQueue.wake`): whether it was new."""
    names, marks = ", ".join(row), ", ".join(f":{name}" for name in row)
    cursor = db.execute(
        f"INSERT OR IGNORE INTO {spec.table} ({names}) VALUES ({marks})",  # noqa: S608
        dict(row),
    )
    return cursor.rowcount == 1


def _named(key: Key) -> dict[str, Any]:
    parts = key if isinstance(key, tuple) else (key,)
    return {f"k{i}": part for i, part in enumerate(parts)}
