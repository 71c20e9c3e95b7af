"""The ``local`` backend: iCalendar components in SQLite, expanded by recurring-ical-events.

Every event is stored as the VEVENTs a calendar file would hold (``store.py``), so
recurrence (RRULE, EXDATE, overridden occurrences, DST in the event's zone: IANA, or the
VTIMEZONE its file gave) is expanded by ``recurring_ical_events`` exactly as for an
imported ``.ics``, and changes are ``edits.py``'s iCalendar edits.

One event that cannot be expanded (a stored ``RDATE;VALUE=TIME``, anything icalendar,
recurring-ical-events or dateutil raise on) never breaks a read: :func:`expand` and the
backend's reads leave it out, log it once per version and count it (:class:`Skipped`) for
the server's ``/health`` details. A CalDAV backend expands its objects with the same
:func:`expand`. An all-day event ends at least a day after it starts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from functools import partial
from typing import Any, Protocol, cast

import recurring_ical_events  # type: ignore[import-untyped]
from icalendar import Calendar, Event

from mcp_calendar import edits, rules, zones
from mcp_calendar.backend import (
    Add,
    CalendarInfo,
    Cancel,
    Change,
    Moment,
    Move,
    Occurrence,
    Version,
)
from mcp_calendar.errors import InvalidRequest, NotWritable, Stale
from mcp_calendar.store import CalendarStore, Changes, EventRow, StoredCalendar, StoredEvent
from meshkit.proposals import Approval, Confirmed

logger = logging.getLogger(__name__)

DAY_MARGIN = timedelta(hours=14)  # a date is a day somewhere between UTC-12 and UTC+14
MAX_PARSED = 20_000  # events whose parsed form is kept (a few kB each)
EXPAND_MARGIN = timedelta(days=1)  # around a range a series is expanded over, for the next
MAX_EXPANDED_SPAN = timedelta(days=800)  # a cached expansion grows to cover ranges up to this
# One query's bounds: rules.py keeps each series to 24 occurrences a day at most, and the
# reads to about a year (service.py); these bound the sum over every series in range.
MAX_OCCURRENCES = 20_000  # an hourly series over the longest read (397 days) fits
EXPAND_BUDGET_S = 2.0  # checked between series: one series alone costs well under a second


@dataclass(frozen=True)
class Parsed:
    """An event's components as parsed, and a single event's one occurrence."""

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


class Source(Protocol):
    """The event occurrences are read from, as they name it: a stored row here
    (:class:`~mcp_calendar.store.StoredEvent`), a calendar object on a CalDAV server."""

    @property
    def uid(self) -> str: ...

    @property
    def calendar(self) -> str: ...

    @property
    def version(self) -> Version: ...


class Skipped:
    """Events reads leave out because they cannot be expanded: each logged once per version
    (one line, no traceback), and counted for ``/health`` until a version expands."""

    def __init__(self) -> None:
        self._versions: dict[str, Version] = {}

    def guard(
        self, uid: str, version: Version, read: Callable[[], list[Occurrence]]
    ) -> list[Occurrence]:
        """``read()``'s occurrences, or none when reading this event raises."""
        try:
            found = read()
        except Exception as error:  # one event's fault, whatever raised it: the read goes on
            self._note(uid, version, error)
            return []
        self._versions.pop(uid, None)
        return found

    def _note(self, uid: str, version: Version, error: Exception) -> None:
        if self._versions.get(uid) == version:
            return
        self._versions[uid] = version
        reason = " ".join(str(error).split()) or "no message"
        logger.warning(
            "event %s (version %s) is left out of reads: it cannot be expanded (%s: %s)",
            uid,
            version,
            type(error).__name__,
            reason[:300],
        )

    def detail(self) -> str | None:
        """What ``/health`` says while some event is left out (no UIDs: /health is public)."""
        count = len(self._versions)
        if not count:
            return None
        events = "event" if count == 1 else "events"
        return f"reads skip {count} {events} that cannot be expanded (named in the log)"


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

    async def calendars(self) -> list[CalendarInfo]:
        return [CalendarInfo(c.id, c.name, c.writable) for c in await self._store.calendars()]

    async def occurrences(self, start: datetime, end: datetime) -> list[Occurrence]:
        stored = await self._store.events_between(start.timestamp(), end.timestamp())
        deadline = time.monotonic() + EXPAND_BUDGET_S
        found: list[Occurrence] = []
        for event in stored:
            read = partial(self._expand, event, start, end)
            found.extend(self._skipped.guard(event.uid, event.version, read))
            if len(found) > MAX_OCCURRENCES:
                raise InvalidRequest(
                    f"More than {MAX_OCCURRENCES} events in this range: ask for a shorter one."
                )
            if time.monotonic() > deadline:
                raise InvalidRequest(
                    "This range holds more than the calendar can go through at once: ask "
                    "for a shorter one."
                )
        return sorted(found, key=lambda o: (_instant(o.start), o.title))

    def _parse(self, event: StoredEvent) -> Parsed:
        cached = self._parsed.get(event.uid)
        if cached is not None and cached.version == event.version:
            return cached
        if len(self._parsed) >= MAX_PARSED:
            self._parsed.clear()
        components = parse(event)
        master = edits.master_of(components)
        series = "RRULE" in master or "RDATE" in master
        single = None if series else _occurrence(event, master, master)
        refused = _refused_rule(master)
        if refused is not None:
            # Stored before rules were checked (or written by hand): shown once, at its
            # start, rather than expanded at a cost no query can bound.
            logger.warning("event %s: its RRULE is not expanded: %s", event.uid, refused)
            single = _occurrence(event, master, master)
        parsed = self._parsed[event.uid] = Parsed(event.version, components, single)
        return parsed

    def _expand(self, event: StoredEvent, start: datetime, end: datetime) -> list[Occurrence]:
        parsed = self._parse(event)
        if parsed.single is not None:
            return [parsed.single] if _overlaps(parsed.single, start, end) else []
        cached = self._expanded.get(event.uid)
        if cached is None or cached.version != event.version:
            cached = None
        if cached is None or not cached.start <= start <= end <= cached.end:
            low, high = start - EXPAND_MARGIN, end + EXPAND_MARGIN
            if cached is not None and max(high, cached.end) - min(low, cached.start) <= (
                MAX_EXPANDED_SPAN
            ):
                low, high = min(low, cached.start), max(high, cached.end)
            if len(self._expanded) >= MAX_PARSED:
                self._expanded.clear()
            found = _expand_event(event, parsed.components, low, high)
            cached = self._expanded[event.uid] = Expanded(event.version, low, high, found)
        return [o for o in cached.occurrences if _overlaps(o, start, end)]

    async def occurrence(self, uid: str, recurrence_id: Moment | None) -> Occurrence | None:
        event = await self._store.event(uid)
        if event is None:
            return None
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
            return [_occurrence(event, master, master)]
        wanted = edits.rid_key(recurrence_id)
        for component in components:
            if (
                "RECURRENCE-ID" in component
                and edits.rid_key(component.decoded("RECURRENCE-ID")) == wanted
            ):
                return [_occurrence(event, master, component)]
        start = _instant(recurrence_id)
        for found in _expand_event(event, components, start, start + timedelta(days=1)):
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


def expand(
    event: Source,
    components: list[Event],
    start: datetime,
    end: datetime,
    *,
    skipped: Skipped,
) -> list[Occurrence]:
    """The occurrences of one event (its master and changed occurrences, duplicates by
    RECURRENCE-ID resolved by ``edits.deduplicate``) that fall in [start, end); none when
    it cannot be expanded, noted in ``skipped``."""
    read = partial(_expand_event, event, edits.deduplicate(components), start, end)
    return skipped.guard(event.uid, event.version, read)


def _expand_event(
    event: Source, components: list[Event], start: datetime, end: datetime
) -> list[Occurrence]:
    master = edits.master_of(components)
    calendar = Calendar()
    for component in components:
        calendar.add_component(component)
    changed = {_rid(c) for c in components if c is not master}
    template = _occurrence(event, master, master)
    found = []
    for each in recurring_ical_events.of(calendar).between(start, end):
        if "RECURRENCE-ID" in each and _rid(each) not in changed:
            # An occurrence as the rule made it: the master's, at another time.
            first: Moment = each.decoded("DTSTART")
            rid: Moment = each.decoded("RECURRENCE-ID")
            found.append(replace(template, start=first, end=_end(each), recurrence_id=rid))
        else:
            found.append(_occurrence(event, master, each))
    return found


def _refused_rule(master: Event) -> str | None:
    """Why the series' rules are not expanded (rules.py), or None. Several RRULEs (RFC 5545
    allows them) are expanded together when each is one a person means."""
    if "RRULE" not in master:
        return None
    found: Any = master["RRULE"]
    start: Moment = master.decoded("DTSTART")
    for rule in found if isinstance(found, list) else [found]:
        refused = rules.problem(rule, start)
        if refused is not None:
            return refused
    return None


def _rid(component: Event) -> str:
    return edits.rid_key(component.decoded("RECURRENCE-ID")) if "RECURRENCE-ID" in component else ""


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
    starts = [_instant(c.start) for c in components]
    ends = [_instant(_end(c)) for c in components]
    series = "RRULE" in master or "RDATE" in master
    return EventRow(
        uid=str(master["UID"]),
        calendar=calendar,
        title=str(master.get("SUMMARY", "")),
        starts_at=(min(starts) - DAY_MARGIN).timestamp(),
        ends_at=None if series else (max(ends) + DAY_MARGIN).timestamp(),
        components={
            edits.rid_key(c.decoded("RECURRENCE-ID")) if "RECURRENCE-ID" in c else "": (
                c.to_ical().decode()
            )
            for c in components
        },
        zones=zones.used(components),
    )


def _occurrence(event: Source, master: Event, found: Event) -> Occurrence:
    start: Moment = found.decoded("DTSTART")
    series = "RRULE" in master or "RDATE" in master
    rid: Moment | None = None
    if series:
        rid = found.decoded("RECURRENCE-ID") if "RECURRENCE-ID" in found else start
    zone = zones.name(start.tzinfo) if isinstance(start, datetime) else None
    return Occurrence(
        uid=event.uid,
        calendar=event.calendar,
        title=str(found.get("SUMMARY", "")),
        start=start,
        end=_end(found),
        recurrence_id=rid,
        zone=zone,
        rule=edits.rule_text(master) if "RRULE" in master else None,
        location=_text(found, "LOCATION"),
        description=_text(found, "DESCRIPTION"),
        busy=str(found.get("TRANSP", "OPAQUE")).upper() != "TRANSPARENT",
        version=event.version,
    )


def _overlaps(o: Occurrence, start: datetime, end: datetime) -> bool:
    """As recurring-ical-events counts it: a date is a day in the zone of the range."""
    first, last = _at(o.start, start), _at(o.end, start)
    return first < end and (last > start or (first == last and first >= start))


def _at(moment: Moment, reference: datetime) -> datetime:
    if isinstance(moment, datetime):
        return moment
    return datetime.combine(moment, datetime.min.time(), tzinfo=reference.tzinfo)


def _end(component: Event) -> Moment:
    start: Moment = component.decoded("DTSTART")
    end: Moment
    if "DTEND" in component:
        end = component.decoded("DTEND")
    elif "DURATION" in component:
        end = start + component.decoded("DURATION")
    else:
        end = start
    return end if isinstance(start, datetime) else _day_end(start, end)


def _day_end(start: date, end: Moment) -> date:
    """An all-day event's exclusive end: a whole day at least (an end at or before the
    start, or a part of a day, as some producers write, is the start's day)."""
    if isinstance(end, datetime):
        end = end.date() + timedelta(days=1 if end.time() != datetime.min.time() else 0)
    return max(end, start + timedelta(days=1))


def _instant(moment: Moment) -> datetime:
    if isinstance(moment, datetime):
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return datetime.combine(moment, datetime.min.time(), tzinfo=UTC)


def _text(component: Event, name: str) -> str | None:
    value = component.get(name)
    return None if value is None else str(value)


def _writable(changes: Changes, calendar: str) -> None:
    writable = changes.writable(calendar)
    if writable is None:
        raise NotWritable(f"There is no calendar {calendar!r}: nothing was changed.")
    if not writable:
        raise NotWritable(f"The calendar {calendar!r} is read-only: nothing was changed.")


def default_calendar(calendar_id: str) -> StoredCalendar:
    return StoredCalendar(calendar_id, calendar_id.capitalize(), writable=True)
