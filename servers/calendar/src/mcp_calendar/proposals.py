"""Proposals that change nothing: add, move and cancel, said in the user's local time.

A ``propose_*`` call resolves the event (``lookup.py``), checks the calendar takes changes,
and returns a :class:`~meshkit.wire.proposals.Proposal` whose summary says the change in local
time and names the busy events it overlaps (for a timed change, timed events only; for a
recurring add, its first occurrence). A monthly add on the 29th, 30th or 31st says which
months it fires in and the rule for the last day of every month (``rules.months_note``).
The change waits for the user's tap (``changes.py``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from mcp_calendar import lookup, rules, times, zones
from mcp_calendar.backend import Backend, Moment, Occurrence
from mcp_calendar.edits import parse_rule
from mcp_calendar.errors import InvalidRequest, InvalidTime, NotFound, NotWritable
from mcp_calendar.models import (
    ADD,
    CANCEL,
    MOVE,
    AddPayload,
    CancelPayload,
    MovePayload,
    ScopeName,
)
from mcp_calendar.service import SEARCH_AHEAD, SEARCH_BEHIND, CalendarService
from mcp_calendar.settings import CalendarSettings
from meshkit.wire.proposals import Proposal

MAX_SUMMARY = 500


class Proposals:
    def __init__(
        self, settings: CalendarSettings, backend: Backend, service: CalendarService
    ) -> None:
        self._settings = settings
        self._backend = backend
        self._service = service

    def now(self) -> datetime:
        return self._service.now()

    async def propose_add(
        self,
        agent: str,
        timezone: str,
        *,
        title: str,
        start: str,
        end: str | None,
        minutes: int | None,
        calendar: str | None,
        rule: str | None,
        location: str | None,
        description: str | None,
    ) -> Proposal:
        tz = times.zone(timezone)
        name = _required("title", title)
        calendar_id = await self._writable(calendar or self._settings.new_events_calendar)
        first = times.parse(start, tz, self.now())
        last = self._end_of(first, end, minutes, tz)
        zone = tz.key
        if isinstance(first, datetime) and isinstance(last, datetime):
            if first.utcoffset() != first.astimezone(tz).utcoffset():
                zone = "UTC"  # an offset that is not the user's zone: kept as that instant
            event_tz = ZoneInfo(zone)
            first, last = first.astimezone(event_tz), last.astimezone(event_tz)
        note = None
        if rule:
            note = rules.months_note(parse_rule(rule, first), first)
        payload = AddPayload(
            agent=_required("agent", agent),
            timezone=tz.key,
            uid=f"{uuid.uuid4().hex}@clawmesh",
            calendar=calendar_id,
            title=name,
            start=first.isoformat(),
            end=last.isoformat(),
            zone=zone if isinstance(first, datetime) else None,
            rule=rule.strip().removeprefix("RRULE:") if rule else None,
            location=_optional(location),
            description=_optional(description),
        )
        repeats = f", repeating {payload.rule}" if payload.rule else ""
        repeats += f": {note}" if note else ""
        said = f"Add “{name}” {times.words(first, last, tz)} ({tz.key}){repeats}"
        overlaps = await self._overlaps(first, last, tz, skip=lambda o: False)
        return Proposal(
            kind=ADD,
            summary=_with_overlaps(said, overlaps),
            payload=payload.model_dump(),
            confirm_label="📅 Add",
            cancel_label="Skip",
        )

    async def propose_move(
        self,
        agent: str,
        timezone: str,
        *,
        event: str,
        occurrence: str | None,
        scope: ScopeName,
        start: str,
        end: str | None,
    ) -> Proposal:
        tz = times.zone(timezone)
        found = await self._find(event, occurrence, tz)
        await self._writable(found.calendar)
        first = times.parse(start, tz, self.now())
        if found.all_day != (not isinstance(first, datetime)):
            kind = "an all-day event: give a date" if found.all_day else "at a time: give one"
            raise InvalidTime(
                f"{found.title!r} is {kind} (YYYY-MM-DD or YYYY-MM-DDTHH:MM) for the new start."
            )
        last = self._end_of(first, end, None, tz, keep=(found.start, found.end))
        if isinstance(first, datetime) and isinstance(last, datetime):
            event_tz = zones.named(found.zone or "UTC")
            first, last = first.astimezone(event_tz), last.astimezone(event_tz)
        scope = scope if found.recurrence_id is not None else "this"
        payload = MovePayload(
            **self._target(agent, tz, found, scope), start=first.isoformat(), end=last.isoformat()
        )
        said = (
            f"Move “{found.title}”{_scope_words(found, scope)} from "
            f"{times.words(found.start, found.end, tz)} to {times.words(first, last, tz)} "
            f"({tz.key})"
        )
        overlaps = await self._overlaps(first, last, tz, skip=_same(found, scope))
        return Proposal(
            kind=MOVE,
            summary=_with_overlaps(said, overlaps),
            payload=payload.model_dump(),
            confirm_label="📅 Move",
            cancel_label="Keep",
        )

    async def propose_cancel(
        self, agent: str, timezone: str, event: str, occurrence: str | None, scope: ScopeName
    ) -> Proposal:
        tz = times.zone(timezone)
        found = await self._find(event, occurrence, tz)
        await self._writable(found.calendar)
        scope = scope if found.recurrence_id is not None else "this"
        payload = CancelPayload(**self._target(agent, tz, found, scope))
        return Proposal(
            kind=CANCEL,
            summary=f"Cancel “{found.title}”{_scope_words(found, scope)} "
            f"{times.words(found.start, found.end, tz)} ({tz.key})",
            payload=payload.model_dump(),
            confirm_label="🗑 Cancel event",
            cancel_label="Keep",
        )

    async def _find(self, event: str, occurrence: str | None, tz: ZoneInfo) -> Occurrence:
        wanted = _required("event", event)
        now = self.now()
        named = None if occurrence is None else times.parse(occurrence, tz, now)
        begin, finish = now - SEARCH_BEHIND, now + SEARCH_AHEAD
        if named is not None:
            moment = times.instant(named, tz)
            begin = min(begin, moment - timedelta(days=1))
            finish = max(finish, moment + timedelta(days=2))
        found = await self._backend.occurrences(begin, finish)
        return lookup.resolve(wanted, named, found, tz, now)

    async def _writable(self, calendar: str) -> str:
        return await writable_calendar(self._backend, calendar)

    def _end_of(
        self,
        first: Moment,
        end: str | None,
        minutes: int | None,
        tz: ZoneInfo,
        keep: tuple[Moment, Moment] | None = None,
    ) -> Moment:
        """The exclusive end: given, or ``minutes`` long, or as long as ``keep``, or 1 h / 1 day."""
        if end is not None:
            last = times.parse(end, tz, self.now())
            if isinstance(first, datetime) != isinstance(last, datetime):
                raise InvalidTime("Give start and end both as times, or both as dates (all day).")
            if not isinstance(last, datetime):
                last = last + timedelta(days=1)  # the last day, inclusive
        elif minutes is not None:
            if not isinstance(first, datetime):
                raise InvalidTime("An all-day event has no length in minutes: give an end date.")
            last = first + timedelta(minutes=minutes)
        elif keep is not None:
            last = first + (keep[1] - keep[0])
        else:
            last = first + (
                timedelta(hours=1) if isinstance(first, datetime) else timedelta(days=1)
            )
        if times.instant(last, tz) <= times.instant(first, tz):
            raise InvalidTime("The end must come after the start.")
        return last

    def _target(
        self, agent: str, tz: ZoneInfo, found: Occurrence, scope: ScopeName
    ) -> dict[str, object]:
        rid = found.recurrence_id
        return {
            "agent": _required("agent", agent),
            "timezone": tz.key,
            "uid": found.uid,
            "version": found.version,
            "occurrence": None if rid is None else rid.isoformat(),
            "zone": found.zone,
            "scope": scope,
            "title": found.title,
            "was": times.words(found.start, found.end, tz),
        }

    async def _overlaps(
        self, start: Moment, end: Moment, tz: ZoneInfo, skip: Callable[[Occurrence], bool]
    ) -> list[str]:
        begin, finish = times.instant(start, tz), times.instant(end, tz)
        timed = isinstance(start, datetime)
        return [
            f"“{o.title}” {times.words(o.start, o.end, tz)}"
            for o in await self._backend.occurrences(begin, finish)
            if not skip(o) and o.busy and not (timed and o.all_day)
        ]


async def writable_calendar(backend: Backend, calendar: str) -> str:
    """``calendar``, when it exists and takes changes; else NotFound or NotWritable, which
    name the calendars that do."""
    known = {c.id: c for c in await backend.calendars()}
    if calendar not in known:
        names = ", ".join(sorted(known)) or "none"
        raise NotFound(f"There is no calendar {calendar!r}. Calendars: {names}.")
    if not known[calendar].writable:
        writable = ", ".join(c for c in sorted(known) if known[c].writable) or "none"
        raise NotWritable(
            f"The calendar {calendar!r} is read-only: it cannot be changed here. "
            f"Writable calendars: {writable}."
        )
    return calendar


def _same(found: Occurrence, scope: ScopeName) -> Callable[[Occurrence], bool]:
    if scope == "this":
        return lambda o: o.uid == found.uid and o.recurrence_id == found.recurrence_id
    return lambda o: o.uid == found.uid


def _scope_words(found: Occurrence, scope: ScopeName) -> str:
    if found.recurrence_id is None:
        return ""
    return {
        "this": " (this occurrence only)",
        "following": " (this and every later occurrence)",
        "series": " (every occurrence of the series)",
    }[scope]


def _with_overlaps(said: str, overlaps: list[str]) -> str:
    if not overlaps:
        return said
    text = f"{said}. Overlaps: {'; '.join(overlaps)}"
    return text if len(text) <= MAX_SUMMARY else text[: MAX_SUMMARY - 1] + "…"


def _required(what: str, text: str) -> str:
    cleaned = " ".join(text.split())
    if not cleaned:
        raise InvalidRequest(f"{what} must not be empty.")
    return cleaned


def _optional(text: str | None) -> str | None:
    cleaned = (text or "").strip()
    return cleaned or None
