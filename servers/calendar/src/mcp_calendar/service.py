"""The calendar: reads over a backend, and proposals that change nothing.

Every time is read in the user's zone (``timezone``, which the orchestrator fills in from
the agent) unless it carries an offset, and every result states that zone. A
``propose_*`` call resolves the event, checks the calendar takes changes, and returns a
:class:`~meshkit.proposals.Proposal` whose summary says the change in local time and
names the events it overlaps; the change waits for the user's tap
(``mcp_calendar.confirmations``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

from mcp_calendar import free, lookup, times
from mcp_calendar.backend import Backend, Moment, Occurrence
from mcp_calendar.edits import parse_rule
from mcp_calendar.errors import InvalidRequest, InvalidTime, NotFound, NotWritable
from mcp_calendar.models import (
    ADD,
    CANCEL,
    MOVE,
    AddPayload,
    CalendarOut,
    Calendars,
    CancelPayload,
    EventOut,
    Events,
    FreeTime,
    MovePayload,
    ScopeName,
)
from mcp_calendar.settings import CalendarSettings
from meshkit.proposals import Proposal

MAX_RANGE = timedelta(days=93)
SEARCH_BEHIND, SEARCH_AHEAD = timedelta(days=31), timedelta(days=366)
MAX_EVENTS = 200
MAX_SUMMARY = 500


class CalendarService:
    def __init__(
        self,
        settings: CalendarSettings,
        backend: Backend,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        self._backend = backend
        self._clock = clock

    def now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), UTC)

    # --- reads ----------------------------------------------------------------------------

    async def calendars(self, timezone: str) -> Calendars:
        found = await self._backend.calendars()
        return Calendars(
            calendars=[CalendarOut(id=c.id, name=c.name, writable=c.writable) for c in found],
            default=self._settings.default_calendar,
            timezone=times.zone(timezone).key,
        )

    async def events(
        self, start: str, end: str | None, calendar: str | None, timezone: str
    ) -> Events:
        tz = times.zone(timezone)
        begin, finish = self.range(start, end, tz)
        found = [
            o
            for o in await self._backend.occurrences(begin, finish)
            if calendar is None or o.calendar == calendar
        ]
        message = None if found else f"Nothing in the calendar {_span(begin, finish, tz)}."
        return _events(found[:MAX_EVENTS], begin, finish, tz, message)

    async def search(self, query: str, start: str | None, end: str | None, timezone: str) -> Events:
        tz = times.zone(timezone)
        if start is None:
            begin, finish = self.now() - SEARCH_BEHIND, self.now() + SEARCH_AHEAD
        else:
            begin, finish = self.range(start, end, tz, limit=SEARCH_BEHIND + SEARCH_AHEAD)
        wanted = " ".join(query.split())
        if not wanted:
            raise InvalidRequest("query must not be empty.")
        now, firsts = self.now(), dict[str, Occurrence]()
        for o in await self._backend.occurrences(begin, finish):
            matched = lookup.score(wanted, o.title) >= lookup.TYPO_RATIO or (
                wanted.casefold() in (o.location or "").casefold()
            )
            # One entry per event: its next occurrence (a series would fill the answer).
            if matched and (o.uid not in firsts or times.instant(firsts[o.uid].end, tz) <= now):
                firsts[o.uid] = o
        found = list(firsts.values())
        message = None if found else f"No event matches {wanted!r} {_span(begin, finish, tz)}."
        return _events(found[:MAX_EVENTS], begin, finish, tz, message)

    async def free_time(
        self,
        minutes: int,
        start: str,
        *,
        end: str | None,
        work_start: str | None,
        work_end: str | None,
        weekends: bool,
        timezone: str,
    ) -> FreeTime:
        tz = times.zone(timezone)
        begin, finish = self.range(start, end, tz)
        hours = free.hours(
            work_start or self._settings.work_start.isoformat("minutes"),
            work_end or self._settings.work_end.isoformat("minutes"),
        )
        busy = [
            (times.instant(o.start, tz), times.instant(o.end, tz))
            for o in await self._backend.occurrences(begin, finish)
            if o.busy and not o.all_day
        ]
        slots = free.slots(
            busy,
            begin,
            finish,
            window=hours,
            length=timedelta(minutes=minutes),
            weekends=weekends,
            tz=tz,
        )
        return FreeTime(
            timezone=tz.key,
            duration_minutes=minutes,
            working_hours=f"{hours[0]:%H:%M}–{hours[1]:%H:%M}",
            slots=slots,
            message=None if slots else f"No free {minutes} minutes {_span(begin, finish, tz)}.",
        )

    def range(
        self, start: str, end: str | None, tz: ZoneInfo, limit: timedelta = MAX_RANGE
    ) -> tuple[datetime, datetime]:
        """[begin, finish) from a start and optional end; a date is a whole day."""
        first = times.parse(start, tz, self.now())
        begin = times.instant(first, tz)
        if end is None:
            finish = (
                times.day_start(first + timedelta(days=1), tz)
                if not isinstance(first, datetime)
                else begin + timedelta(days=1)
            )
        else:
            last = times.parse(end, tz, self.now())
            finish = (
                times.instant(last, tz)
                if isinstance(last, datetime)
                else times.day_start(last + timedelta(days=1), tz)
            )
        if finish <= begin:
            raise InvalidTime(f"The end ({end}) must come after the start ({start}).")
        if finish - begin > limit:
            raise InvalidRequest(f"Ask for at most {limit.days} days at once.")
        return begin, finish

    # --- proposals: they change nothing -------------------------------------------------

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
        calendar_id = await self._writable(calendar or self._settings.default_calendar)
        first = times.parse(start, tz, self.now())
        last = self._end_of(first, end, minutes, tz)
        zone = tz.key
        if isinstance(first, datetime) and isinstance(last, datetime):
            if first.utcoffset() != first.astimezone(tz).utcoffset():
                zone = "UTC"  # an offset that is not the user's zone: kept as that instant
            event_tz = ZoneInfo(zone)
            first, last = first.astimezone(event_tz), last.astimezone(event_tz)
        if rule:
            parse_rule(rule)
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
            event_tz = ZoneInfo(found.zone or "UTC")
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

    async def check(self) -> None:
        await self._backend.check()

    # --- helpers --------------------------------------------------------------------------

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
        known = {c.id: c for c in await self._backend.calendars()}
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


def out(o: Occurrence, tz: tzinfo) -> EventOut:
    end = o.end if isinstance(o.end, datetime) else o.end - timedelta(days=1)
    return EventOut(
        id=o.uid,
        occurrence=None if o.recurrence_id is None else o.recurrence_id.isoformat(),
        calendar=o.calendar,
        title=o.title,
        start=times.iso(o.start, tz),
        end=times.iso(end, tz),
        all_day=o.all_day,
        when=times.words(o.start, o.end, tz),
        recurring=o.recurrence_id is not None,
        rule=o.rule,
        event_timezone=o.zone,
        location=o.location,
    )


def _events(
    found: list[Occurrence], begin: datetime, finish: datetime, tz: ZoneInfo, message: str | None
) -> Events:
    ordered = sorted(found, key=lambda o: (times.instant(o.start, tz), not o.all_day, o.title))
    return Events(
        timezone=tz.key,
        start=begin.astimezone(tz).isoformat(),
        end=finish.astimezone(tz).isoformat(),
        events=[out(o, tz) for o in ordered],
        message=message,
    )


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


def _span(begin: datetime, finish: datetime, tz: ZoneInfo) -> str:
    last = (finish - timedelta(microseconds=1)).astimezone(tz)
    return f"from {begin.astimezone(tz):%a %-d %b %Y %H:%M} to {last:%a %-d %b %Y %H:%M} ({tz.key})"


def _required(what: str, text: str) -> str:
    cleaned = " ".join(text.split())
    if not cleaned:
        raise InvalidRequest(f"{what} must not be empty.")
    return cleaned


def _optional(text: str | None) -> str | None:
    cleaned = (text or "").strip()
    return cleaned or None
