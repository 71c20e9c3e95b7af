"""The ``local`` backend: iCalendar components in SQLite, expanded by recurring-ical-events.

Every event is stored as the VEVENTs a calendar file would hold (``store.py``), so
recurrence (RRULE, EXDATE, overridden occurrences, DST in the event's IANA zone) is
expanded by ``recurring_ical_events`` exactly as for an imported ``.ics``, and changes are
``edits.py``'s iCalendar edits.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

import recurring_ical_events  # type: ignore[import-untyped]
from icalendar import Calendar, Event

from mcp_calendar import edits
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
from mcp_calendar.store import CalendarStore, Changes, EventRow, StoredCalendar, StoredEvent
from meshkit.proposals import Approval, Confirmed

DAY_MARGIN = timedelta(hours=14)  # a date is a day somewhere between UTC-12 and UTC+14


class LocalBackend:
    def __init__(self, store: CalendarStore) -> None:
        self._store = store

    async def calendars(self) -> list[CalendarInfo]:
        return [CalendarInfo(c.id, c.name, c.writable) for c in await self._store.calendars()]

    async def occurrences(self, start: datetime, end: datetime) -> list[Occurrence]:
        stored = await self._store.events_between(start.timestamp(), end.timestamp())
        found = [o for event in stored for o in expand(event, start, end)]
        return sorted(found, key=lambda o: (_instant(o.start), o.title))

    async def occurrence(self, uid: str, recurrence_id: Moment | None) -> Occurrence | None:
        event = await self._store.event(uid)
        if event is None:
            return None
        components = parse(event)
        master = edits.master_of(components)
        if recurrence_id is None or "RRULE" not in master:
            return _occurrence(event, master, master)
        wanted = edits.rid_key(recurrence_id)
        for component in components:
            if (
                "RECURRENCE-ID" in component
                and edits.rid_key(component.decoded("RECURRENCE-ID")) == wanted
            ):
                return _occurrence(event, master, component)
        start = _instant(recurrence_id)
        for found in expand(event, start, start + timedelta(days=1)):
            if found.recurrence_id is not None and edits.rid_key(found.recurrence_id) == wanted:
                return found
        return None

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

    async def check(self) -> None:
        await self._store.ping()


def expand(event: StoredEvent, start: datetime, end: datetime) -> list[Occurrence]:
    components = parse(event)
    master = edits.master_of(components)
    calendar = Calendar()
    for component in components:
        calendar.add_component(component)
    return [
        _occurrence(event, master, found)
        for found in recurring_ical_events.of(calendar).between(start, end)
    ]


def parse(event: StoredEvent) -> list[Event]:
    return [cast(Event, Event.from_ical(text)) for text in event.components]


def row(calendar: str, components: list[Event]) -> EventRow:
    """What the store writes for these components: bounds for range reads included."""
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
    )


def _occurrence(event: StoredEvent, master: Event, found: Event) -> Occurrence:
    start: Moment = found.decoded("DTSTART")
    series = "RRULE" in master or "RDATE" in master
    rid: Moment | None = None
    if series:
        rid = found.decoded("RECURRENCE-ID") if "RECURRENCE-ID" in found else start
    zone = getattr(start.tzinfo, "key", "UTC") if isinstance(start, datetime) else None
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


def _end(component: Event) -> Moment:
    if "DTEND" in component:
        end: Moment = component.decoded("DTEND")
        return end
    start: Moment = component.decoded("DTSTART")
    if "DURATION" in component:
        return start + component.decoded("DURATION")  # type: ignore[no-any-return]
    return start if isinstance(start, datetime) else start + timedelta(days=1)


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
