"""The durable inbox, the poll offsets, the record of sends, and blocked chats, in SQLite.

Tables:

    updates  (bot, update_id, agent, received_at, body, leased_until, deliveries, acked_at,
              leased_by, lease_run)
             every update Telegram handed over; primary key (bot, update_id), insert-or-ignore;
             a lease names the consumer and the run of it that holds it
    runs     (consumer, run, started_at, superseded_at)   each run of each named consumer;
             the newest is current, the ones before it are superseded
    offsets  (bot, next_offset)     the getUpdates offset, written with the updates it confirms
    sends    (key, part, message_id, at, bot, chat_id)   what a send with an idempotency key
             delivered, and where: a tap on one of those messages reports its key
    blocked  (agent, chat_id, at)   chats whose user blocked the bot (403): never retried
    paused   (agent, since)         agents paused by the operator: their updates are kept
             and handed to no one until the agent is resumed, then in the order they came

``record`` stores a batch of updates and the new offset in one transaction, before
the next getUpdates confirms them to Telegram: a crash at any point loses nothing,
and a batch Telegram hands over twice is stored once.

The updates are a ``meshkit.queue`` (``UPDATES``): a consumer (the orchestrator) names
itself and its run; the first lease of a new run releases what its earlier runs held (they
crashed or stopped: nobody works on it) and fences them: they lease nothing more. The
current run extends the leases of what it works on.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from meshkit.queue import RUNS_SCHEMA, QueueSpec
from meshkit.sqlite import SQLiteStore

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS updates (
    bot TEXT NOT NULL,
    update_id INTEGER NOT NULL,
    agent TEXT NOT NULL,
    received_at REAL NOT NULL,
    body TEXT NOT NULL,
    leased_until REAL NOT NULL DEFAULT 0,
    deliveries INTEGER NOT NULL DEFAULT 0,
    acked_at REAL,
    leased_by TEXT,
    lease_run TEXT,
    PRIMARY KEY (bot, update_id)
);
CREATE INDEX IF NOT EXISTS updates_waiting ON updates (acked_at, leased_until, received_at);
CREATE INDEX IF NOT EXISTS updates_holder ON updates (leased_by, lease_run)
    WHERE acked_at IS NULL;
CREATE TABLE IF NOT EXISTS offsets (bot TEXT PRIMARY KEY, next_offset INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS sends (
    key TEXT NOT NULL,
    part INTEGER NOT NULL,
    message_id INTEGER NOT NULL,
    at REAL NOT NULL,
    bot TEXT,
    chat_id TEXT,
    PRIMARY KEY (key, part)
);
CREATE INDEX IF NOT EXISTS sends_by_message ON sends (bot, chat_id, message_id);
CREATE TABLE IF NOT EXISTS blocked (
    agent TEXT NOT NULL,
    chat_id TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (agent, chat_id)
);
CREATE TABLE IF NOT EXISTS paused (agent TEXT PRIMARY KEY, since REAL NOT NULL);
"""
    + RUNS_SCHEMA
)
MIGRATIONS = {
    2: "ALTER TABLE updates ADD COLUMN leased_by TEXT; "
    "ALTER TABLE updates ADD COLUMN lease_run TEXT;",
    3: "ALTER TABLE sends ADD COLUMN bot TEXT; ALTER TABLE sends ADD COLUMN chat_id TEXT;",
    4: "",  # the paused table (SCHEMA creates it)
}


UPDATES = QueueSpec(
    table="updates",
    key=("bot", "update_id"),
    columns="agent, bot, update_id, body, deliveries + 1",  # as normalize takes them
    order=("received_at", "bot", "update_id"),
    noun="updates",
    ready="agent NOT IN (SELECT agent FROM paused)",
    recheck_s=1.0,  # a resume by another process (the operator's command) wakes no event here
    leased="deliveries = deliveries + 1",
    holder="leased_by",
    run="lease_run",
    until="leased_until",
)


@dataclass(frozen=True)
class AgentRow:
    agent: str
    paused: bool
    waiting: int  # its updates not acked
    last_update_at: float | None  # when its newest update came (Unix seconds)


class InboxStore(SQLiteStore):
    SCHEMA = SCHEMA
    SCHEMA_VERSION = 4
    MIGRATIONS = MIGRATIONS

    async def offset(self, bot: str) -> int | None:
        def read(db: sqlite3.Connection) -> int | None:
            row = db.execute("SELECT next_offset FROM offsets WHERE bot = ?", (bot,)).fetchone()
            return None if row is None else int(row[0])

        return await self._run(read)

    async def record(  # noqa: PLR0917
        self,
        bot: str,
        agent: str,
        updates: Sequence[tuple[int, str]],
        next_offset: int,
        now: float,
        writers: Sequence[str] = (),
    ) -> int:
        """Store the updates (once each) and the offset after them; returns how many were new.

        ``writers``: the chats that wrote, which have unblocked the bot if they had blocked it.
        """
        rows = [(bot, update_id, agent, now, body) for update_id, body in updates]

        def write(db: sqlite3.Connection) -> int:
            before = db.total_changes
            db.executemany(
                "INSERT OR IGNORE INTO updates (bot, update_id, agent, received_at, body)"
                " VALUES (?, ?, ?, ?, ?)",
                rows,
            )
            new = db.total_changes - before
            db.execute(
                "INSERT INTO offsets (bot, next_offset) VALUES (?, ?) ON CONFLICT (bot)"
                " DO UPDATE SET next_offset = MAX(next_offset, excluded.next_offset)",
                (bot, next_offset),
            )
            db.executemany(
                "DELETE FROM blocked WHERE agent = ? AND chat_id = ?",
                [(agent, chat) for chat in writers],
            )
            return new

        return await self.transact(write)

    async def kept(self, bot: str, update_id: int) -> tuple[str, str] | None:
        """The agent and the body of the bot's update ``update_id``, waiting or acked (None:
        never received, or forgotten: acked updates are kept ``keep_s``)."""

        def fetch(db: sqlite3.Connection) -> tuple[str, str] | None:
            row = db.execute(
                "SELECT agent, body FROM updates WHERE bot = ? AND update_id = ?",
                (bot, update_id),
            ).fetchone()
            return None if row is None else (str(row[0]), str(row[1]))

        return await self.read(fetch)

    async def pending(self) -> int:
        def read(db: sqlite3.Connection) -> int:
            (count,) = db.execute("SELECT COUNT(*) FROM updates WHERE acked_at IS NULL").fetchone()
            return int(count)

        return await self._run(read)

    async def set_paused(self, agent: str, paused: bool, now: float) -> tuple[bool, int]:
        """Pause the agent (its updates kept, handed to no one) or resume it: whether that
        changed anything, and how many of its updates wait."""

        def write(db: sqlite3.Connection) -> tuple[bool, int]:
            if paused:
                cursor = db.execute(
                    "INSERT OR IGNORE INTO paused (agent, since) VALUES (?, ?)", (agent, now)
                )
            else:
                cursor = db.execute("DELETE FROM paused WHERE agent = ?", (agent,))
            (waiting,) = db.execute(
                "SELECT COUNT(*) FROM updates WHERE agent = ? AND acked_at IS NULL", (agent,)
            ).fetchone()
            return cursor.rowcount == 1, int(waiting)

        return await self.transact(write)

    async def agents(self) -> list[AgentRow]:
        """Each agent that is paused or has updates here: waiting, and when the last came."""

        def read(db: sqlite3.Connection) -> list[AgentRow]:
            rows = db.execute(
                "SELECT agent, SUM(acked_at IS NULL), MAX(received_at) FROM updates GROUP BY agent"
            ).fetchall()
            seen = {agent: (int(waiting), float(last)) for agent, waiting, last in rows}
            paused = {agent for (agent,) in db.execute("SELECT agent FROM paused")}
            return [
                AgentRow(agent, agent in paused, *seen.get(agent, (0, None)))
                for agent in sorted(set(seen) | paused)
            ]

        return await self._run(read)

    async def prune(self, before: float) -> int:
        """Forget acked updates older than ``before`` (Telegram never resends them that late)."""

        def write(db: sqlite3.Connection) -> int:
            cursor = db.execute(
                "DELETE FROM updates WHERE acked_at IS NOT NULL AND acked_at < ?", (before,)
            )
            db.execute("DELETE FROM sends WHERE at < ?", (before,))
            db.execute("DELETE FROM runs WHERE superseded_at < ?", (before,))
            return cursor.rowcount

        return await self.transact(write)

    async def before_send(
        self, agent: str, chat_id: str, key: str | None
    ) -> tuple[bool, dict[int, int]]:
        """Whether the chat blocked the bot, and the parts of ``key`` already delivered:
        what a send needs to know first, in one read."""

        def read(db: sqlite3.Connection) -> tuple[bool, dict[int, int]]:
            blocked = db.execute(
                "SELECT 1 FROM blocked WHERE agent = ? AND chat_id = ?", (agent, chat_id)
            ).fetchone()
            return blocked is not None, _sent_parts(db, key) if key else {}

        return await self._run(read)

    async def record_part(
        self, key: str, part: int, message_id: int, now: float, *, bot: str, chat_id: str
    ) -> None:
        """Part ``part`` of the send under ``key`` is message ``message_id`` of the bot's chat."""
        await self._run(
            lambda db: db.execute(
                "INSERT OR IGNORE INTO sends (key, part, message_id, at, bot, chat_id)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (key, part, message_id, now, bot, chat_id),
            )
        )

    async def sent_under(self, bot: str, chat_id: str, message_id: int) -> str | None:
        """The key the bot's message ``message_id`` in the chat was sent under (None: not
        sent with one, or forgotten: sends are kept as long as acked updates)."""

        def read(db: sqlite3.Connection) -> str | None:
            row = db.execute(
                # The latest: a reply sent in place of its placeholder took the message over.
                "SELECT key FROM sends WHERE bot = ? AND chat_id = ? AND message_id = ?"
                " ORDER BY rowid DESC LIMIT 1",
                (bot, chat_id, message_id),
            ).fetchone()
            return None if row is None else str(row[0])

        return await self._run(read)

    async def block(self, agent: str, chat_id: str, now: float) -> None:
        await self._run(
            lambda db: db.execute(
                "INSERT OR REPLACE INTO blocked (agent, chat_id, at) VALUES (?, ?, ?)",
                (agent, chat_id, now),
            )
        )


def _sent_parts(db: sqlite3.Connection, key: str) -> dict[int, int]:
    """Part number → message id, for the parts of ``key`` already delivered."""
    found = db.execute("SELECT part, message_id FROM sends WHERE key = ?", (key,))
    return {int(part): int(message_id) for part, message_id in found}
