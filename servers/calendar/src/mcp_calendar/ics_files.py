"""``.ics`` files into and out of the local calendar's store: an import stores what the reader
read (``ics_reader``), keyed by UID; an export writes every stored event.

Export writes the stored components with the VTIMEZONEs their files gave (custom zones
with their own rules), generating one only for a zone no file gave; events whose custom
zones share a TZID with other rules go into a VCALENDAR of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast
from zoneinfo import ZoneInfo

from icalendar import Calendar, Event, Timezone

from mcp_calendar import zones
from mcp_calendar.ics_reader import Skipped, read_events, tzid_of
from mcp_calendar.local import parse
from mcp_calendar.settings import CalendarSettings
from mcp_calendar.store import CalendarStore, StoredCalendar, StoredEvent


@dataclass(frozen=True)
class Imported:
    changed: int
    unchanged: int
    moved: int
    calendar: str
    skipped: list[Skipped]
    warnings: list[str]
    moved_from: dict[str, int] = field(default_factory=dict)  # calendar -> events moved


async def import_file(
    settings: CalendarSettings, text: bytes, calendar: str, *, writable: bool, at: float
) -> Imported:
    read = read_events(text, calendar, ZoneInfo(settings.timezone))
    store = _store(settings)
    try:
        target = StoredCalendar(calendar, calendar.capitalize(), writable=writable)
        written = await store.import_rows(target, read.rows, at)
    finally:
        await store.aclose()
    return Imported(
        changed=written.changed,
        unchanged=len(read.rows) - written.changed,
        moved=sum(written.moved.values()),
        calendar=calendar,
        skipped=read.skipped,
        warnings=read.warnings,
        moved_from=written.moved,
    )


async def export_calendar(settings: CalendarSettings, calendar: str | None) -> bytes:
    """Every stored event (of ``calendar``, else of all) as one iCalendar file; events
    whose custom zones share a TZID with different rules go into a VCALENDAR of their own."""
    store = _store(settings)
    try:
        events = await store.events_between(float("-inf"), float("inf"))
    finally:
        await store.aclose()
    parts: list[tuple[Calendar, dict[str, str]]] = []
    for event in events:
        if calendar is None or event.calendar == calendar:
            _export(event, parts)
    if not parts:
        parts.append((_vcalendar(), {}))
    data = b""
    for out, given in parts:
        for text in given.values():
            out.add_component(Timezone.from_ical(text))
        out.add_missing_timezones()
        data += out.to_ical()
    return data


def _export(event: StoredEvent, parts: list[tuple[Calendar, dict[str, str]]]) -> None:
    try:
        components = parse(event)
    except zones.ZoneRefused:
        # Stored by an older version: written back as it came, its zone never used here.
        components = [cast(Event, Event.from_ical(text)) for text in event.components]
    needed = zones.tzids(components)
    given = {t: text for t in needed for text in event.zones if tzid_of(text) == t}
    fits = [p for p in parts if all(p[1].get(t, text) == text for t, text in given.items())]
    if not fits:
        parts.append((_vcalendar(), {}))
    out, zones_of = fits[0] if fits else parts[-1]
    zones_of.update(given)
    for component in components:
        out.add_component(component)


def _vcalendar() -> Calendar:
    out = Calendar()
    out.add("prodid", "-//clawmesh//mcp_calendar//EN")
    out.add("version", "2.0")
    return out


def _store(settings: CalendarSettings) -> CalendarStore:
    """The calendar's database, checked as the server checks it: StorageUnavailable (one
    line for the operator) when it is damaged or DATA_DIR cannot be written."""
    store = CalendarStore(settings.db_path, max_bytes=settings.max_db_bytes)
    store.verify()
    return store
