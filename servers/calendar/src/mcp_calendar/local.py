"""The ``local`` backend: iCalendar components in SQLite, expanded by recurring-ical-events.

Every event is stored as the VEVENTs a calendar file would hold (``store.py``), so
recurrence (RRULE, EXDATE, overridden occurrences, DST in the event's zone: IANA, or the
VTIMEZONE its file gave) is expanded by ``recurring_ical_events`` exactly as for an
imported ``.ics``, and changes are ``edits.py``'s iCalendar edits.

A read runs in a worker thread (one at a time: the event loop keeps answering, ``/health``
included) within the bounds of ``expansion.py``: a series whose rules are refused is shown
once, at its start; an event that cannot be expanded, or whose custom time zone is refused
(``zone_rules.py``), is left out; both are logged once per version and counted for the
server's ``/health`` details; a read that would pass MAX_OCCURRENCES or EXPAND_BUDGET_S
ends with a line asking for a shorter range.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar, cast

import anyio
from icalendar import Event

from mcp_calendar import edits, expansion, zones
from mcp_calendar.backend import (
    Add,
    CalendarInfo,
    Cancel,
    Change,
    Moment,
    Move,
    Occurrence,
)
from mcp_calendar.errors import NotWritable, Stale
from mcp_calendar.expansion import Budget, Skipped, end_of, instant, overlaps
from mcp_calendar.store import CalendarStore, Changes, EventRow, StoredCalendar, StoredEvent
from meshkit.proposals import Approval, Confirmed

logger = logging.getLogger(__name__)

T = TypeVar("T")

DAY_MARGIN = timedelta(hours=14)  # a date is a day somewhere between UTC-12 and UTC+14
MAX_PARSED = 20_000  # events whose parsed form is kept (a few kB each)
MAX_KEPT = expansion.MAX_OCCURRENCES  # occurrences kept from earlier reads, all series
EXPAND_MARGIN = timedelta(days=1)  # around a range a series is expanded over, for the next
MAX_EXPANDED_SPAN = timedelta(days=800)  # a cached expansion grows to cover ranges up to this


@dataclass(frozen=True)
class Parsed:
    """An event's components as parsed, and a single event's one occurrence (a series
    whose rules are refused is one too, at its start)."""

    version: int
    components: list[Event]
    single: Occurrence | None


@dataclass(frozen=True)
class Expanded:
    """A series' occurrences over [start, end), for the version they were expanded from."""

    version: int
    start: datetime
    end: datetime
    occurrences: list[Occurrence]


class LocalBackend:
    def __init__(self, store: CalendarStore) -> None:
        self._store = store
        self._skipped = Skipped()
        # Parsing iCalendar text costs about as much as expanding it: reads keep each
        # event's parsed form until its version changes. Changes parse afresh.
        self._parsed: dict[str, Parsed] = {}
        # Expanding a series costs ~10 ms per year of weekly occurrences: the last expansion
        # of each series serves every range inside it (a lookup's year, then its days).
        self._expanded: dict[str, Expanded] = {}
        self._kept = 0  # occurrences in self._expanded
        self._limiter: anyio.CapacityLimiter | None = None

    async def _worker(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` in a worker thread, one at a time (the caches are shared)."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(1)
        return await anyio.to_thread.run_sync(work, *args, limiter=self._limiter)

    async def calendars(self) -> list[CalendarInfo]:
        return [CalendarInfo(c.id, c.name, c.writable) for c in await self._store.calendars()]

    async def occurrences(self, start: datetime, end: datetime) -> list[Occurrence]:
        stored = await self._store.events_between(start.timestamp(), end.timestamp())
        return await self._worker(self._read, stored, start, end)

    def _read(self, stored: list[StoredEvent], start: datetime, end: datetime) -> list[Occurrence]:
        budget = Budget(start, end)
        found: list[Occurrence] = []
        for event in stored:
            read = partial(self._expand, event, start, end, budget)
            found.extend(self._skipped.guard(event.uid, event.version, read))
        return sorted(found, key=lambda o: (instant(o.start), o.title))

    def _parse(self, event: StoredEvent) -> Parsed:
        cached = self._parsed.get(event.uid)
        if cached is not None and cached.version == event.version:
            return cached
        if len(self._parsed) >= MAX_PARSED:
            self._parsed.clear()
        components = parse(event)
        master = edits.master_of(components)
        series = "RRULE" in master or "RDATE" in master
        # Stored before rules were checked (or written by hand): shown once, at its
        # start, rather than expanded at a cost no read can bound.
        refused = expansion.refusal(master) if series else None
        self._skipped.refused(event.uid, event.version, refused)
        single = expansion.occurrence(event, master, master) if refused or not series else None
        parsed = self._parsed[event.uid] = Parsed(event.version, components, single)
        return parsed

    def _expand(
        self, event: StoredEvent, start: datetime, end: datetime, budget: Budget
    ) -> list[Occurrence]:
        parsed = self._parse(event)
        if parsed.single is not None:
            if not overlaps(parsed.single, start, end):
                return []
            budget.made(parsed.single)
            return [parsed.single]
        cached = self._expanded.get(event.uid)
        if cached is not None and cached.version == event.version:
            if cached.start <= start <= end <= cached.end:
                kept = [o for o in cached.occurrences if overlaps(o, start, end)]
                budget.served(len(kept))
                return kept
        else:
            cached = None
        low, high = start - EXPAND_MARGIN, end + EXPAND_MARGIN
        master = edits.master_of(parsed.components)
        if (
            cached is not None
            and not expansion.several_a_day(master)  # dense: only what is asked
            and max(high, cached.end) - min(low, cached.start) <= MAX_EXPANDED_SPAN
        ):
            low, high = min(low, cached.start), max(high, cached.end)
        found = expansion.occurrences(event, parsed.components, low, high, budget)
        self._keep(event, Expanded(event.version, low, high, found))
        return [o for o in found if overlaps(o, start, end)]

    def _keep(self, event: StoredEvent, expanded: Expanded) -> None:
        """Keep the expansion for later reads, within MAX_PARSED series and MAX_KEPT
        occurrences in all."""
        before = self._expanded.pop(event.uid, None)
        self._kept -= 0 if before is None else len(before.occurrences)
        if len(self._expanded) >= MAX_PARSED or self._kept + len(expanded.occurrences) > MAX_KEPT:
            self._expanded.clear()
            self._kept = 0
        if len(expanded.occurrences) <= MAX_KEPT:
            self._expanded[event.uid] = expanded
            self._kept += len(expanded.occurrences)

    async def occurrence(self, uid: str, recurrence_id: Moment | None) -> Occurrence | None:
        event = await self._store.event(uid)
        if event is None:
            return None
        return await self._worker(self._occurrence, event, recurrence_id)

    def _occurrence(self, event: StoredEvent, recurrence_id: Moment | None) -> Occurrence | None:
        read = partial(self._find, event, recurrence_id)
        found = self._skipped.guard(event.uid, event.version, read)
        return found[0] if found else None  # an event reads skip is not in the calendar

    def _find(self, event: StoredEvent, recurrence_id: Moment | None) -> list[Occurrence]:
        parsed = self._parse(event)
        components = parsed.components
        master = edits.master_of(components)
        if parsed.single is not None:
            return [parsed.single]  # a single event, or a series whose rule is refused
        if recurrence_id is None or "RRULE" not in master:
            return [expansion.occurrence(event, master, master)]
        wanted = edits.rid_key(recurrence_id)
        for component in components:
            if (
                "RECURRENCE-ID" in component
                and edits.rid_key(component.decoded("RECURRENCE-ID")) == wanted
            ):
                return [expansion.occurrence(event, master, component)]
        start = instant(recurrence_id)
        day = start + timedelta(days=1)
        for found in expansion.occurrences(event, components, start, day, Budget(start, day)):
            if found.recurrence_id is not None and edits.rid_key(found.recurrence_id) == wanted:
                return [found]
        return []

    async def perform(
        self, approval: Approval, change: Change, result: dict[str, Any], at: float
    ) -> Confirmed:
        def work(changes: Changes) -> dict[str, Any]:
            if isinstance(change, Add):
                _writable(changes, change.event.calendar)
                if changes.event(change.event.uid) is not None:
                    raise Stale("This event was added already: nothing was added twice.")
                changes.write(row(change.event.calendar, edits.new_components(change.event)))
                return result
            target = change.target
            stored = changes.event(target.uid)
            if stored is None:
                raise Stale("The event is gone.")
            _writable(changes, stored.calendar)
            if stored.version != target.version:
                raise Stale("The event changed.")
            components = parse(stored)
            if isinstance(change, Move):
                edited = edits.move(
                    components, target.recurrence_id, target.scope, change.start, change.end
                )
            else:
                assert isinstance(change, Cancel)
                edited = edits.cancel(components, target.recurrence_id, target.scope)
            if edited.kept:
                changes.write(row(stored.calendar, edited.kept))
            else:
                changes.delete(target.uid)
            if edited.split:
                assert target.recurrence_id is not None
                uid = f"{target.uid}_R{edits.rid_key(target.recurrence_id)}"
                changes.write(row(stored.calendar, edits.rename(edited.split, uid)))
            return result

        return await self._store.confirm(approval, work, at=at)

    async def check(self) -> str | None:
        await self._store.ping()
        return self._skipped.detail()


def parse(event: StoredEvent) -> list[Event]:
    """The event's components; times in a custom zone get that zone's stored rules."""
    components = [cast(Event, Event.from_ical(text)) for text in event.components]
    if event.zones and any(zones.iana(t) is None for t in zones.tzids(components)):
        find = zones.lookup(event.zones)
        for component in components:
            zones.retime(component, find, None)
    return components


def row(calendar: str, components: list[Event]) -> EventRow:
    """What the store writes for these components: bounds for range reads included, and
    the custom zones their times are in."""
    components = edits.deduplicate(components)
    master = edits.master_of(components)
    starts = [instant(c.start) for c in components]
    ends = [instant(end_of(c)) for c in components]
    series = "RRULE" in master or "RDATE" in master
    return EventRow(
        uid=str(master["UID"]),
        calendar=calendar,
        title=str(master.get("SUMMARY", "")),
        starts_at=(min(starts) - DAY_MARGIN).timestamp(),
        ends_at=None if series else (max(ends) + DAY_MARGIN).timestamp(),
        components={edits.component_rid(c): c.to_ical().decode() for c in components},
        zones=zones.used(components),
    )


def _writable(changes: Changes, calendar: str) -> None:
    writable = changes.writable(calendar)
    if writable is None:
        raise NotWritable(f"There is no calendar {calendar!r}: nothing was changed.")
    if not writable:
        raise NotWritable(f"The calendar {calendar!r} is read-only: nothing was changed.")


def default_calendar(calendar_id: str) -> StoredCalendar:
    return StoredCalendar(calendar_id, calendar_id.capitalize(), writable=True)
