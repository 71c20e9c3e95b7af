"""A calendar file sent in chat, as an import the user confirms with one tap (change kind
``import_events``).

The orchestrator, not the model, hands the file's text to ``stage_import``
(``import_tools.py``). :meth:`Imports.stage` reads it event by event (``ics_reader``; floating
times in the user's zone), keeps what the reading gave in the store (``staged_imports``: the
rows, the file's sha256, the agent, the calendar, when) and returns the Proposal: "Import 12
events into personal?" (one event: its title and first time), with the events, what was
skipped and what was repaired folded under it (``detail``; the words: ``import_words``).
The payload names the staged file (:class:`~mcp_calendar.models.ImportPayload`) and never
carries it: payloads travel through pending-actions and the approval, and stay small.

After the tap, :meth:`Imports.execute` writes the staged rows in the store's confirm-once
transaction: a replayed approval answers the first result. Events are keyed by UID, so one in
the calendar already as the file has it is left alone and nothing is there twice, however
often a file is imported. Events stored in another calendar move here, as ``clawmesh calendar
import`` moves them, but never out of a read-only calendar (a subscription): those stay, and
count as skipped.

Every import waits for the user's tap (``tap_only``): the file is someone else's words (an
invitation, another person's export), so neither an ``auto`` policy nor a running grant for
the calendar's changes lets dozens of events in unseen. A staged file is kept for its
proposal's time to decide (IMPORT_TTL_S) and an hour more (an approval minted at the last
moment, a tap retried); an agent has at most MAX_WAITING files waiting, the oldest forgotten
first.

Only the local calendar imports: on Google or CalDAV an import is a request per event, any of
which can fail halfway, with no transaction to make the whole once; the refusal says to use
the calendar's own import there.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import anyio.to_thread

from mcp_calendar import import_words as words
from mcp_calendar import times
from mcp_calendar.backend import Backend
from mcp_calendar.errors import InvalidRequest, NotWritable, Stale
from mcp_calendar.ics_reader import ImportProblems, Read, read_events
from mcp_calendar.import_words import NOTHING
from mcp_calendar.models import IMPORT, ImportedEvents, ImportPayload
from mcp_calendar.proposals import writable_calendar
from mcp_calendar.settings import CalendarSettings
from mcp_calendar.store import CalendarStore, Changes, StagedImport, Written
from meshkit.consent import ChangeKind
from meshkit.proposals import Approval, Confirmed
from meshkit.wire.proposals import Proposal

logger = logging.getLogger(__name__)

MAX_ICS_CHARS = 900_000  # what fits in a request (MESH_MAX_BODY_BYTES, 1 MiB) with its JSON
IMPORT_TTL_S = 24 * 3600  # the proposal's time to decide
KEEP_S = IMPORT_TTL_S + 3600  # a staged file outlives its proposal by the approval's margin
MAX_WAITING = 20  # files an agent has waiting for a tap
CONFIRM_LABEL = "📥 Import"
CANCEL_LABEL = "Skip"
ELSEWHERE = {
    "google": "this one is Google Calendar: import the file there (calendar.google.com, "
    "Settings, Import & export)",
    "caldav": "this one is on a CalDAV server: import the file with your calendar app",
}


def import_kind(imports: Imports) -> ChangeKind[ImportPayload]:
    """``import_events``: a staged file into its calendar, once, after the user's tap."""
    return ChangeKind(
        IMPORT,
        ImportPayload,
        ImportedEvents,
        title="Import calendar events",
        execute=imports.execute,
        summary=lambda change: f"Import {words.events(change.events)} into {change.calendar}?",
        confirm_label=CONFIRM_LABEL,
        cancel_label=CANCEL_LABEL,
        description="Imports the calendar file stage_import staged into its calendar.",
        tap_only=True,
    )


class Imports:
    def __init__(
        self,
        settings: CalendarSettings,
        backend: Backend,
        store: CalendarStore | None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``store``: the local calendar's; None for a backend that cannot import."""
        self._settings = settings
        self._backend = backend
        self._store = store
        self._clock = clock
        self._limiter: anyio.CapacityLimiter | None = None

    async def stage(
        self, agent: str, ics: str, *, calendar: str | None, file_name: str | None, timezone: str
    ) -> Proposal:
        """Read the file, keep what it gave, and propose importing it (changes nothing)."""
        store = self._local()
        who = agent.strip()
        if not who:
            raise InvalidRequest("agent must not be empty.")
        if len(ics) > MAX_ICS_CHARS:
            raise InvalidRequest(
                f"This file is too large to import here ({len(ics):,} characters; at most "
                f"{MAX_ICS_CHARS:,}). {NOTHING}"
            )
        tz = times.zone(timezone)
        target = await writable_calendar(
            self._backend, (calendar or "").strip() or self._settings.new_events_calendar
        )
        data = ics.encode("utf-8", errors="replace")
        read = await self._read(data, target, tz)
        if not read.rows:
            raise InvalidRequest(words.no_events(read))
        placed = await store.preview_import(target, read.rows)
        if not placed.rows:
            raise InvalidRequest(words.nothing_new(target, placed))
        now = self._clock()
        staged = StagedImport(
            id=f"imp_{secrets.token_hex(8)}",
            agent=who,
            calendar=target,
            sha256=hashlib.sha256(data).hexdigest(),
            file_name=" ".join((file_name or "").split()) or None,
            events=len(read.rows),
            skipped=len(read.skipped),
            rows=read.rows,
            created_at=now,
        )
        await store.stage_import(staged, before=now - KEEP_S, keep=MAX_WAITING)
        logger.info(
            "staged import %s for %s: %d events (%d to write), %d skipped",
            staged.id,
            who,
            staged.events,
            placed.changed,
            staged.skipped,
        )
        payload = ImportPayload(
            agent=who,
            import_id=staged.id,
            calendar=target,
            sha256=staged.sha256,
            events=staged.events,
        )
        return Proposal(
            kind=IMPORT,
            summary=words.summary(placed.rows, target, tz),
            payload=payload.model_dump(),
            confirm_label=CONFIRM_LABEL,
            cancel_label=CANCEL_LABEL,
            ttl_s=IMPORT_TTL_S,
            tap_only=True,
            detail=words.detail(placed, read, target, tz),
        )

    async def execute(self, change: ImportPayload, approval: Approval) -> Confirmed:
        """Write the staged file's rows once (a replay answers the first result)."""
        store = self._local()
        now = self._clock()

        def work(changes: Changes) -> dict[str, Any]:
            staged = changes.staged_import(change.import_id)
            if staged is None or staged.created_at < now - KEEP_S:
                raise Stale(
                    "This calendar file is no longer waiting to be imported (a file waits "
                    f"{IMPORT_TTL_S // 3600} hours): send it again. {NOTHING}"
                )
            named = (staged.agent, staged.calendar, staged.sha256, staged.events)
            if named != (change.agent, change.calendar, change.sha256, change.events):
                raise InvalidRequest(
                    f"The approval does not match the calendar file staged as "
                    f"{change.import_id}. {NOTHING}"
                )
            if staged.rows is None:
                raise Stale("This calendar file was imported already: nothing was imported twice.")
            writable = changes.writable(staged.calendar)
            if not writable:
                why = "is read-only now" if writable is False else "is gone"
                raise NotWritable(f"The calendar {staged.calendar!r} {why}. {NOTHING}")
            written = changes.import_staged(staged)
            return _result(staged, written)

        done = await store.confirm(approval, work, at=now)
        if not done.replayed:
            logger.info("imported %s: %s", change.import_id, done.result["message"])
        return done

    def _local(self) -> CalendarStore:
        if self._store is None:
            where = ELSEWHERE.get(self._settings.backend, "this one is not local")
            raise NotWritable(
                f"Calendar files are imported into the local calendar only, and {where}. {NOTHING}"
            )
        return self._store

    async def _read(self, data: bytes, calendar: str, tz: ZoneInfo) -> Read:
        """The file read in a worker thread (a large one takes a second or two), one at a
        time; a file that is no iCalendar at all is one line."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(1)
        try:
            return await anyio.to_thread.run_sync(
                read_events, data, calendar, tz, limiter=self._limiter
            )
        except ImportProblems as problems:
            raise InvalidRequest(words.not_ics(problems.lines)) from None
        except Exception:  # the reader's boundary: a file it did not foresee
            logger.exception("a calendar file sent for import cannot be read")
            raise InvalidRequest(
                f"This file cannot be read as an iCalendar (.ics) file. {NOTHING}"
            ) from None


def _result(staged: StagedImport, written: Written) -> dict[str, Any]:
    return {
        "message": words.imported(staged.calendar, written, staged.skipped),
        "calendar": staged.calendar,
        "imported": written.changed,
        "unchanged": written.unchanged,
        "moved": sum(written.moved.values()),
        "skipped": staged.skipped + sum(written.left.values()),
    }
