"""The local calendar in SQLite: one file, one connection, WAL (meshkit.sqlite).

calendars      (id, name, writable)
events         (uid, calendar, title, version, starts_at, ends_at, updated_at): one row per
               event or series; ``version`` grows with every change (conflict detection);
               ``starts_at``/``ends_at`` (Unix s, ``ends_at`` NULL for a series) bound the
               rows a range must read
components     (uid, rid, ics): the event's VEVENTs as iCalendar text, ``rid`` '' for the
               master, else its RECURRENCE-ID (mcp_calendar.edits.rid_key)
timezones      (uid, tzid, ics): the VTIMEZONEs the event's file gave for its TZIDs, kept
               per event (two files may give the same custom TZID different rules): reads
               use a custom zone's own rules, exports write them back as they came
staged_imports (id, agent, calendar, sha256, file_name, events, skipped, rows, created_at,
               imported_at): a calendar file sent in chat, waiting for the user's tap
               (``imports.py``): the rows its reading gave, as JSON (NULL once imported)
confirmations  meshkit's confirm-once record

The store keeps text and numbers; what they mean is the backend's (``local.py``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from meshkit.proposals import CONFIRMATIONS_SCHEMA, Approval, Confirmed, confirm_once
from meshkit.sqlite import SQLiteStore

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS calendars (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    writable INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS events (
    uid TEXT PRIMARY KEY,
    calendar TEXT NOT NULL REFERENCES calendars (id),
    title TEXT NOT NULL,
    version INTEGER NOT NULL,
    starts_at REAL NOT NULL,
    ends_at REAL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_start ON events (starts_at);
CREATE TABLE IF NOT EXISTS components (
    uid TEXT NOT NULL REFERENCES events (uid) ON DELETE CASCADE,
    rid TEXT NOT NULL,
    ics TEXT NOT NULL,
    PRIMARY KEY (uid, rid)
);
CREATE TABLE IF NOT EXISTS timezones (
    uid TEXT NOT NULL REFERENCES events (uid) ON DELETE CASCADE,
    tzid TEXT NOT NULL,
    ics TEXT NOT NULL,
    PRIMARY KEY (uid, tzid)
);
CREATE TABLE IF NOT EXISTS staged_imports (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    calendar TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    file_name TEXT,
    events INTEGER NOT NULL,
    skipped INTEGER NOT NULL,
    rows TEXT,
    created_at REAL NOT NULL,
    imported_at REAL
);
CREATE INDEX IF NOT EXISTS staged_imports_by_age ON staged_imports (created_at);
"""
    + CONFIRMATIONS_SCHEMA
)


@dataclass(frozen=True)
class StoredCalendar:
    id: str
    name: str
    writable: bool


@dataclass(frozen=True)
class StoredEvent:
    uid: str
    calendar: str
    version: int
    components: list[str]  # iCalendar text, master first
    zones: list[str] = field(default_factory=list)  # VTIMEZONE texts


@dataclass(frozen=True)
class EventRow:
    """An event to write: its components and the bounds ``events`` indexes."""

    uid: str
    calendar: str
    title: str
    starts_at: float
    ends_at: float | None
    components: dict[str, str]  # rid -> iCalendar text
    zones: dict[str, str] = field(default_factory=dict)  # TZID -> VTIMEZONE text


@dataclass(frozen=True)
class Written:
    """What an import wrote (or, as a preview, would write): events changed, those moved
    here from other calendars, those stored as given already, and those left where they
    are because their calendar is read-only (a chat's import only)."""

    changed: int
    moved: dict[str, int]  # calendar it came from -> events
    unchanged: int = 0
    left: dict[str, int] = field(default_factory=dict)  # read-only calendar -> events
    rows: list[EventRow] = field(default_factory=list)  # the ones changed


@dataclass(frozen=True)
class StagedImport:
    """A calendar file waiting for the user's tap: the rows its reading gave (None once
    imported), the events that reading skipped, and whose it is."""

    id: str
    agent: str
    calendar: str
    sha256: str
    file_name: str | None
    events: int
    skipped: int
    rows: list[EventRow] | None
    created_at: float
    imported_at: float | None = None


class CalendarStore(SQLiteStore):
    SCHEMA = SCHEMA

    async def ensure_calendar(self, calendar: StoredCalendar) -> None:
        """Create the calendar unless it exists (its name and writability are kept then)."""
        await self._run(lambda db: Changes(db).ensure_calendar(calendar))

    async def calendars(self) -> list[StoredCalendar]:
        def read(db: sqlite3.Connection) -> list[StoredCalendar]:
            rows = db.execute("SELECT id, name, writable FROM calendars ORDER BY id").fetchall()
            return [StoredCalendar(row[0], row[1], bool(row[2])) for row in rows]

        return await self._run(read)

    async def events_between(self, start: float, end: float) -> list[StoredEvent]:
        """Events that may have an occurrence in [start, end): series always."""

        def read(db: sqlite3.Connection) -> list[StoredEvent]:
            rows = db.execute(
                "SELECT e.uid, e.calendar, e.version, c.ics FROM events AS e"
                " JOIN components AS c ON c.uid = e.uid"
                " WHERE e.starts_at < ? AND (e.ends_at IS NULL OR e.ends_at > ?)"
                " ORDER BY e.starts_at, e.uid, c.rid",
                (end, start),
            ).fetchall()
            found: dict[str, StoredEvent] = {}
            for uid, calendar, version, ics in rows:
                event = found.setdefault(uid, StoredEvent(uid, calendar, version, []))
                event.components.append(ics)
            zones = db.execute(
                "SELECT t.uid, t.ics FROM events AS e JOIN timezones AS t ON t.uid = e.uid"
                " WHERE e.starts_at < ? AND (e.ends_at IS NULL OR e.ends_at > ?)"
                " ORDER BY t.uid, t.tzid",
                (end, start),
            ).fetchall()
            for uid, ics in zones:
                if uid in found:
                    found[uid].zones.append(ics)
            return list(found.values())

        return await self._run(read)

    async def event(self, uid: str) -> StoredEvent | None:
        return await self._run(lambda db: Changes(db).event(uid))

    async def confirm(
        self, approval: Approval, perform: Callable[[Changes], dict[str, Any]], *, at: float
    ) -> Confirmed:
        """Perform an approved change once: a replayed approval returns the first result."""
        return await self._run(
            lambda db: confirm_once(db, approval, lambda db: perform(Changes(db, at)), at=at)
        )

    async def import_rows(
        self, calendar: StoredCalendar, rows: Sequence[EventRow], at: float
    ) -> Written:
        """Write ``rows`` into ``calendar`` in one transaction (an import).

        The calendar takes the writability given; an event whose components are already
        stored as given, in this calendar, keeps its version; one stored in another
        calendar moves here."""
        return await self.transact(lambda db: Changes(db, at).import_rows(calendar, rows))

    async def preview_import(self, calendar: str, rows: Sequence[EventRow]) -> Written:
        """What importing ``rows`` into ``calendar`` would write now, events in read-only
        calendars left where they are (a chat's import); nothing is written."""
        return await self.read(lambda db: Changes(db).plan_import(calendar, rows, leave=True))

    async def stage_import(self, staged: StagedImport, *, before: float, keep: int) -> None:
        """Keep ``staged``; forget the imports staged before ``before`` and, of the agent's
        imports still waiting, all but the newest ``keep``."""

        def write(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM staged_imports WHERE created_at < ?", (before,))
            db.execute(
                "INSERT INTO staged_imports (id, agent, calendar, sha256, file_name, events,"
                " skipped, rows, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    staged.id,
                    staged.agent,
                    staged.calendar,
                    staged.sha256,
                    staged.file_name,
                    staged.events,
                    staged.skipped,
                    _rows_json(staged.rows or []),
                    staged.created_at,
                ),
            )
            db.execute(
                "DELETE FROM staged_imports WHERE agent = ? AND rows IS NOT NULL AND id NOT IN"
                " (SELECT id FROM staged_imports WHERE agent = ? AND rows IS NOT NULL"
                " ORDER BY created_at DESC, rowid DESC LIMIT ?)",
                (staged.agent, staged.agent, keep),
            )

        await self.transact(write)


def _same(stored: StoredEvent, row: EventRow) -> bool:
    return sorted(stored.components) == sorted(row.components.values()) and set(
        row.zones.values()
    ) <= set(stored.zones)


def _rows_json(rows: Sequence[EventRow]) -> str:
    """Rows as JSON, without their calendar (the staged import's)."""
    return json.dumps(
        [[r.uid, r.title, r.starts_at, r.ends_at, r.components, r.zones] for r in rows],
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _rows_from(text: str, calendar: str) -> list[EventRow]:
    return [
        EventRow(uid, calendar, title, starts_at, ends_at, components, zones)
        for uid, title, starts_at, ends_at, components, zones in json.loads(text)
    ]


class Changes:
    """Writes inside one transaction (a confirm's, or an import's)."""

    def __init__(self, db: sqlite3.Connection, at: float = 0.0) -> None:
        self._db = db
        self._at = at

    def ensure_calendar(self, calendar: StoredCalendar) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO calendars (id, name, writable) VALUES (?, ?, ?)",
            (calendar.id, calendar.name, int(calendar.writable)),
        )

    def set_calendar(self, calendar: StoredCalendar) -> None:
        self._db.execute(
            "INSERT INTO calendars (id, name, writable) VALUES (?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET writable = excluded.writable",
            (calendar.id, calendar.name, int(calendar.writable)),
        )

    def writable(self, calendar: str) -> bool | None:
        """Whether the calendar takes changes; None when there is no such calendar."""
        row = self._db.execute(
            "SELECT writable FROM calendars WHERE id = ?", (calendar,)
        ).fetchone()
        return None if row is None else bool(row[0])

    def event(self, uid: str) -> StoredEvent | None:
        row = self._db.execute(
            "SELECT calendar, version FROM events WHERE uid = ?", (uid,)
        ).fetchone()
        if row is None:
            return None
        parts = self._db.execute(
            "SELECT ics FROM components WHERE uid = ? ORDER BY rid", (uid,)
        ).fetchall()
        zones = self._db.execute(
            "SELECT ics FROM timezones WHERE uid = ? ORDER BY tzid", (uid,)
        ).fetchall()
        return StoredEvent(uid, row[0], row[1], [ics for (ics,) in parts], [z for (z,) in zones])

    def write(self, row: EventRow) -> int:
        """Store the event as given (its version one higher); the new version. Its zones
        are added to those stored (an edit's components name the same zones)."""
        found = self._db.execute("SELECT version FROM events WHERE uid = ?", (row.uid,)).fetchone()
        version = 1 if found is None else found[0] + 1
        self._db.execute(
            "INSERT INTO events (uid, calendar, title, version, starts_at, ends_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (uid) DO UPDATE SET"
            " calendar = excluded.calendar, title = excluded.title, version = excluded.version,"
            " starts_at = excluded.starts_at, ends_at = excluded.ends_at,"
            " updated_at = excluded.updated_at",
            (row.uid, row.calendar, row.title, version, row.starts_at, row.ends_at, self._at),
        )
        self._db.execute("DELETE FROM components WHERE uid = ?", (row.uid,))
        self._db.executemany(
            "INSERT INTO components (uid, rid, ics) VALUES (?, ?, ?)",
            [(row.uid, rid, ics) for rid, ics in row.components.items()],
        )
        self._db.executemany(
            "INSERT OR REPLACE INTO timezones (uid, tzid, ics) VALUES (?, ?, ?)",
            [(row.uid, tzid, ics) for tzid, ics in row.zones.items()],
        )
        return int(version)

    def import_rows(self, calendar: StoredCalendar, rows: Sequence[EventRow]) -> Written:
        """Write ``rows`` into ``calendar`` (see :meth:`CalendarStore.import_rows`)."""
        self.set_calendar(calendar)
        written = self.plan_import(calendar.id, rows, leave=False)
        for row in written.rows:
            self.write(row)
        return written

    def import_staged(self, staged: StagedImport) -> Written:
        """Write a staged import's rows into its calendar (which must exist), events in
        read-only calendars left where they are, and mark it imported."""
        assert staged.rows is not None
        written = self.plan_import(staged.calendar, staged.rows, leave=True)
        for row in written.rows:
            self.write(row)
        self._db.execute(
            "UPDATE staged_imports SET rows = NULL, imported_at = ? WHERE id = ?",
            (self._at, staged.id),
        )
        return written

    def plan_import(self, calendar: str, rows: Sequence[EventRow], *, leave: bool) -> Written:
        """Which of ``rows`` an import into ``calendar`` writes: new ones, changed ones, and
        those stored in another calendar (moved here; with ``leave``, not those of a
        read-only calendar: they stay there)."""
        changed: list[EventRow] = []
        unchanged = 0
        moved: dict[str, int] = {}
        left: dict[str, int] = {}
        writable: dict[str, bool | None] = {}
        for row in rows:
            stored = self.event(row.uid)
            if stored is not None and stored.calendar != calendar:
                if stored.calendar not in writable:
                    writable[stored.calendar] = self.writable(stored.calendar)
                if leave and writable[stored.calendar] is False:
                    left[stored.calendar] = left.get(stored.calendar, 0) + 1
                    continue
                moved[stored.calendar] = moved.get(stored.calendar, 0) + 1
            elif stored is not None and _same(stored, row):
                unchanged += 1
                continue
            changed.append(row)
        return Written(len(changed), moved, unchanged, left, changed)

    def staged_import(self, import_id: str) -> StagedImport | None:
        row = self._db.execute(
            "SELECT id, agent, calendar, sha256, file_name, events, skipped, rows, created_at,"
            " imported_at FROM staged_imports WHERE id = ?",
            (import_id,),
        ).fetchone()
        if row is None:
            return None
        id_, agent, calendar, sha256, file_name, events, skipped, rows, created, imported = row
        return StagedImport(
            id=id_,
            agent=agent,
            calendar=calendar,
            sha256=sha256,
            file_name=file_name,
            events=events,
            skipped=skipped,
            rows=None if rows is None else _rows_from(rows, calendar),
            created_at=created,
            imported_at=imported,
        )

    def delete(self, uid: str) -> None:
        self._db.execute("DELETE FROM components WHERE uid = ?", (uid,))
        self._db.execute("DELETE FROM timezones WHERE uid = ?", (uid,))
        self._db.execute("DELETE FROM events WHERE uid = ?", (uid,))
