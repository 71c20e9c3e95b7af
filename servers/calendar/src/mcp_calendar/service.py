"""The calendar's reads over a backend: events of a range, search, free time.

Every time is read in the user's zone (``timezone``, which the orchestrator fills in from
the agent) unless it carries an offset, and every result states that zone. Proposals are
``proposals.py``'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

from mcp_calendar import free, lookup, times
from mcp_calendar.backend import Backend, Occurrence
from mcp_calendar.errors import InvalidRequest, InvalidTime, NotFound
from mcp_calendar.models import CalendarOut, Calendars, EventOut, Events, FreeTime
from mcp_calendar.settings import CalendarSettings

MAX_RANGE = timedelta(days=93)
SEARCH_BEHIND, SEARCH_AHEAD = timedelta(days=31), timedelta(days=366)
MAX_EVENTS = 200


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
            default=self._settings.new_events_calendar,
            timezone=times.zone(timezone).key,
        )

    async def events(
        self, start: str, end: str | None, calendar: str | None, timezone: str
    ) -> Events:
        tz = times.zone(timezone)
        begin, finish = self.range(start, end, tz)
        if calendar is not None:
            known = sorted(c.id for c in await self._backend.calendars())
            if calendar not in known:
                listed = ", ".join(known)
                raise NotFound(f"There is no calendar {calendar!r}. Calendars: {listed}.")
        found = [
            o
            for o in await self._backend.occurrences(begin, finish)
            if calendar is None or o.calendar == calendar
        ]
        message = None if found else f"Nothing in the calendar {_span(begin, finish, tz)}."
        if len(found) > MAX_EVENTS:
            message = (
                f"{len(found)} events in this range; the first {MAX_EVENTS} are shown. "
                "Ask for a shorter range to see the rest."
            )
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
        titles: dict[str, bool] = {}  # a series repeats its title: score each title once
        for o in await self._backend.occurrences(begin, finish):
            if o.title not in titles:
                titles[o.title] = lookup.score(wanted, o.title) >= lookup.TYPO_RATIO
            matched = titles[o.title] or wanted.casefold() in (o.location or "").casefold()
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

    async def check(self) -> str | None:
        return await self._backend.check()


def out(o: Occurrence, tz: tzinfo) -> EventOut:
    end = o.end if isinstance(o.end, datetime) else max(o.start, o.end - timedelta(days=1))
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


def _span(begin: datetime, finish: datetime, tz: ZoneInfo) -> str:
    last = (finish - timedelta(microseconds=1)).astimezone(tz)
    return f"from {begin.astimezone(tz):%a %-d %b %Y %H:%M} to {last:%a %-d %b %Y %H:%M} ({tz.key})"
