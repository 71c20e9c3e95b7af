"""Jobs, reminders and firings in SQLite: one file, one connection, WAL.

- ``jobs``: each configured job and its next firing (``next_at``). A job whose definition
  is unchanged since the last start keeps its ``next_at``, so a firing that came due
  while nothing ran is found at the next ``next_due``.
- ``reminders``: set by a confirmed proposal; ``active`` (waiting for its time),
  ``waiting`` (delivered, not yet done or snoozed), ``done``, ``cancelled``.
- ``firings``: one row per firing, primary key the idempotency key
  (``<job or reminder id>@<scheduled time>``), inserted or ignored: whatever happens,
  a firing exists once. ``due`` until acked (``done``) or skipped; leased through
  ``meshkit.queue`` (``FIRINGS``; each consumer's runs in ``runs``). A reminder's firing
  records the tap that followed it up (``followed_by``), so that tap handed over again
  still counts (``chat_id`` and ``message_id`` are no longer written: its buttons are
  bound by the key its message is sent under).
- ``paused``: agents the operator paused (``clawmesh agent stop``): nothing of theirs
  fires or is handed out until they are resumed.

The business rules are the service's; these are the queries, as functions of the
connection, run by the service inside one transaction (``SQLiteStore.transact``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from meshkit.proposals import CONFIRMATIONS_SCHEMA, Approval, Confirmed, confirm_once
from meshkit.queue import RUNS_SCHEMA, QueueSpec, put
from meshkit.sqlite import SQLiteStore

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    kind TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    next_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS reminders (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    text TEXT NOT NULL,
    timezone TEXT NOT NULL,
    repeat TEXT,
    anchor REAL NOT NULL,
    due_at REAL NOT NULL,
    state TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS reminders_due ON reminders (state, due_at);
CREATE TABLE IF NOT EXISTS firings (
    key TEXT PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    agent TEXT NOT NULL,
    kind TEXT NOT NULL,
    source TEXT NOT NULL,
    scheduled_at REAL NOT NULL,
    timezone TEXT NOT NULL,
    state TEXT NOT NULL,
    late INTEGER NOT NULL,
    payload TEXT NOT NULL,
    holder TEXT,
    run TEXT,
    lease_until REAL,
    outcome TEXT,
    created_at REAL NOT NULL,
    done_at REAL,
    chat_id TEXT,
    message_id TEXT,
    followed_by TEXT
);
CREATE INDEX IF NOT EXISTS firings_due ON firings (state, scheduled_at);
CREATE TABLE IF NOT EXISTS paused (agent TEXT PRIMARY KEY, since REAL NOT NULL);
"""
    + CONFIRMATIONS_SCHEMA
    + RUNS_SCHEMA
)
MIGRATIONS = {
    2: "ALTER TABLE firings ADD COLUMN chat_id TEXT; "
    "ALTER TABLE firings ADD COLUMN message_id TEXT; "
    "ALTER TABLE firings ADD COLUMN followed_by TEXT;",
    3: "",  # the paused table (SCHEMA creates it)
    4: "",  # the runs table
}


@dataclass(frozen=True)
class JobRow:
    id: str
    agent: str
    kind: str
    fingerprint: str
    next_at: float


@dataclass(frozen=True)
class ReminderRow:
    id: str
    agent: str
    text: str
    timezone: str
    repeat: str | None
    anchor: float
    due_at: float
    state: str
    created_at: float


@dataclass(frozen=True)
class FiringRow:
    key: str
    id: str
    agent: str
    kind: str
    source: str
    scheduled_at: float
    timezone: str
    state: str
    late: bool
    payload: dict[str, Any]
    outcome: str | None


_FIRING_COLUMNS = (
    "key, id, agent, kind, source, scheduled_at, timezone, state, late, payload, outcome"
)
_REMINDER_COLUMNS = "id, agent, text, timezone, repeat, anchor, due_at, state, created_at"


class SchedulerStore(SQLiteStore):
    SCHEMA = SCHEMA
    SCHEMA_VERSION = 4
    MIGRATIONS = MIGRATIONS

    async def confirm(
        self, approval: Approval, perform: Callable[[sqlite3.Connection], dict[str, Any]], at: float
    ) -> Confirmed:
        return await self._run(lambda db: confirm_once(db, approval, perform, at=at))


# --- jobs ---------------------------------------------------------------------------------


NOT_PAUSED = "agent NOT IN (SELECT agent FROM paused)"
FIRINGS = QueueSpec(
    table="firings",
    key=("key",),
    columns=_FIRING_COLUMNS,
    order=("scheduled_at", "key"),
    noun="firings",
    waiting="state = 'due'",
    done="state = 'done', done_at = :now",
    ready=NOT_PAUSED,
)


def jobs(db: sqlite3.Connection, agent: str | None = None) -> list[JobRow]:
    where, params = ("WHERE agent = ?", (agent,)) if agent else ("", ())
    rows = db.execute(
        f"SELECT id, agent, kind, fingerprint, next_at FROM jobs {where} ORDER BY id",  # noqa: S608
        params,
    ).fetchall()
    return [JobRow(*row) for row in rows]


def put_job(db: sqlite3.Connection, job: JobRow) -> None:
    db.execute(
        "INSERT INTO jobs (id, agent, kind, fingerprint, next_at) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET agent = excluded.agent, kind = excluded.kind,"
        " fingerprint = excluded.fingerprint, next_at = excluded.next_at",
        (job.id, job.agent, job.kind, job.fingerprint, job.next_at),
    )


def delete_jobs_except(db: sqlite3.Connection, keep: set[str]) -> list[str]:
    gone = [row[0] for row in db.execute("SELECT id FROM jobs").fetchall() if row[0] not in keep]
    db.executemany("DELETE FROM jobs WHERE id = ?", [(job_id,) for job_id in gone])
    return gone


# --- reminders ----------------------------------------------------------------------------


def add_reminder(db: sqlite3.Connection, reminder: ReminderRow) -> None:
    db.execute(
        f"INSERT INTO reminders ({_REMINDER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",  # noqa: S608
        (
            reminder.id,
            reminder.agent,
            reminder.text,
            reminder.timezone,
            reminder.repeat,
            reminder.anchor,
            reminder.due_at,
            reminder.state,
            reminder.created_at,
        ),
    )


def reminder(db: sqlite3.Connection, reminder_id: str) -> ReminderRow | None:
    row = db.execute(
        f"SELECT {_REMINDER_COLUMNS} FROM reminders WHERE id = ?",  # noqa: S608
        (reminder_id,),
    ).fetchone()
    return None if row is None else ReminderRow(*row)


def reminders(db: sqlite3.Connection, agent: str, states: tuple[str, ...]) -> list[ReminderRow]:
    marks = ", ".join("?" for _ in states)
    rows = db.execute(
        f"SELECT {_REMINDER_COLUMNS} FROM reminders"  # noqa: S608
        f" WHERE agent = ? AND state IN ({marks}) ORDER BY due_at, id",
        (agent, *states),
    ).fetchall()
    return [ReminderRow(*row) for row in rows]


def due_reminders(db: sqlite3.Connection, now: float) -> list[ReminderRow]:
    rows = db.execute(
        f"SELECT {_REMINDER_COLUMNS} FROM reminders"  # noqa: S608
        f" WHERE state = 'active' AND due_at <= ? AND {NOT_PAUSED} ORDER BY due_at",
        (now,),
    ).fetchall()
    return [ReminderRow(*row) for row in rows]


def set_reminder(
    db: sqlite3.Connection, reminder_id: str, *, state: str, due_at: float | None = None
) -> None:
    if due_at is None:
        db.execute("UPDATE reminders SET state = ? WHERE id = ?", (state, reminder_id))
    else:
        db.execute(
            "UPDATE reminders SET state = ?, due_at = ? WHERE id = ?", (state, due_at, reminder_id)
        )


# --- firings ------------------------------------------------------------------------------


def add_firing(db: sqlite3.Connection, firing: FiringRow, now: float) -> bool:
    """Insert-or-ignore by key: False when this firing exists already."""
    row = {name: getattr(firing, name) for name in _FIRING_COLUMNS.split(", ")}
    late, payload = int(firing.late), json.dumps(firing.payload, ensure_ascii=False)
    return put(db, FIRINGS, {**row, "late": late, "payload": payload, "created_at": now})


def firing(db: sqlite3.Connection, firing_id: str) -> FiringRow | None:
    row = db.execute(
        f"SELECT {_FIRING_COLUMNS} FROM firings WHERE id = ?",  # noqa: S608
        (firing_id,),
    ).fetchone()
    return None if row is None else firing_of(row)


def follow_up(
    db: sqlite3.Connection, firing_id: str, outcome: str, tap_id: str | None = None
) -> bool:
    """Record a reminder firing's outcome once (and the tap that gave it): False when it has
    one already."""
    cursor = db.execute(
        "UPDATE firings SET outcome = ?, followed_by = ? WHERE id = ? AND outcome IS NULL",
        (outcome, tap_id, firing_id),
    )
    return cursor.rowcount == 1


def followed_by(db: sqlite3.Connection, firing_id: str) -> str | None:
    """The tap that followed the firing up (None: none recorded)."""
    row = db.execute("SELECT followed_by FROM firings WHERE id = ?", (firing_id,)).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def next_due_at(db: sqlite3.Connection) -> float | None:
    """The earliest time something of an agent not paused comes due (a job, an active
    reminder)."""
    row = db.execute(
        f"SELECT min(t) FROM (SELECT min(next_at) AS t FROM jobs WHERE {NOT_PAUSED}"  # noqa: S608
        f" UNION ALL SELECT min(due_at) FROM reminders WHERE state = 'active' AND {NOT_PAUSED})"
    ).fetchone()
    return None if row is None or row[0] is None else float(row[0])


def paused(db: sqlite3.Connection) -> set[str]:
    return {agent for (agent,) in db.execute("SELECT agent FROM paused")}


def set_paused(db: sqlite3.Connection, agent: str, pause: bool, now: float) -> bool:
    """Pause or resume ``agent``: whether that changed anything."""
    if pause:
        cursor = db.execute(
            "INSERT OR IGNORE INTO paused (agent, since) VALUES (?, ?)", (agent, now)
        )
    else:
        cursor = db.execute("DELETE FROM paused WHERE agent = ?", (agent,))
    return cursor.rowcount == 1


def held(db: sqlite3.Connection, agent: str | None, now: float) -> int:
    """What of a paused agent (``agent``, or any) is due now and held: firings, jobs and
    reminders whose time has come."""
    who = "agent = ?" if agent else "agent IN (SELECT agent FROM paused)"
    params: tuple[Any, ...] = (agent,) if agent else ()
    row = db.execute(
        f"SELECT (SELECT COUNT(*) FROM firings WHERE state = 'due' AND {who})"  # noqa: S608
        f" + (SELECT COUNT(*) FROM jobs WHERE next_at <= ? AND {who})"
        f" + (SELECT COUNT(*) FROM reminders WHERE state = 'active' AND due_at <= ? AND {who})",
        (*params, now, *params, now, *params),
    ).fetchone()
    return int(row[0])


def firing_of(row: tuple[Any, ...]) -> FiringRow:
    key, fid, agent, kind, source, at, tz, state, late, payload, outcome = row
    return FiringRow(
        key, fid, agent, kind, source, at, tz, state, bool(late), json.loads(payload), outcome
    )
