"""Free time: the stretches of working hours, day by day in the user's zone, that no busy
event covers.

Timed events that show as busy count; all-day events (birthdays, holidays, a trip) and
transparent ones do not. Working hours are wall-clock times, so on the day clocks change
the day is an hour shorter or longer, as it is for the user.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from mcp_calendar import times
from mcp_calendar.errors import InvalidTime
from mcp_calendar.models import Slot

MAX_SLOTS = 30
SATURDAY = 5


def hours(start: str, end: str) -> tuple[time, time]:
    """Working hours from 'HH:MM' texts."""
    try:
        first, last = time.fromisoformat(start), time.fromisoformat(end)
    except ValueError:
        raise InvalidTime(
            f"Working hours {start!r}–{end!r} are not times: use HH:MM, e.g. 09:00 and 17:00."
        ) from None
    if last <= first:
        raise InvalidTime("Working hours must end after they start (e.g. 09:00 to 17:00).")
    return first, last


def slots(
    busy: list[tuple[datetime, datetime]],
    begin: datetime,
    finish: datetime,
    *,
    window: tuple[time, time],
    length: timedelta,
    weekends: bool,
    tz: ZoneInfo,
) -> list[Slot]:
    """Free stretches at least ``length`` long inside working hours, earliest first."""
    blocked = _merged(busy)
    found: list[Slot] = []
    day: date = begin.astimezone(tz).date()
    while times.day_start(day, tz) < finish and len(found) < MAX_SLOTS:
        if weekends or day.weekday() < SATURDAY:
            start = max(begin, times.at(day, window[0], tz))
            end = min(finish, times.at(day, window[1], tz))
            for free_start, free_end in _gaps(start, end, blocked):
                if free_end - free_start >= length:
                    found.append(
                        Slot(
                            start=free_start.astimezone(tz).isoformat(),
                            end=free_end.astimezone(tz).isoformat(),
                            when=times.words(free_start, free_end, tz),
                        )
                    )
        day += timedelta(days=1)
    return found[:MAX_SLOTS]


def _merged(busy: list[tuple[datetime, datetime]]) -> list[tuple[datetime, datetime]]:
    merged: list[tuple[datetime, datetime]] = []
    for start, end in sorted(busy):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _gaps(
    start: datetime, end: datetime, blocked: list[tuple[datetime, datetime]]
) -> list[tuple[datetime, datetime]]:
    gaps, cursor = [], start
    for busy_start, busy_end in blocked:
        if busy_end <= cursor or busy_start >= end:
            continue
        if busy_start > cursor:
            gaps.append((cursor, busy_start))
        cursor = max(cursor, busy_end)
    if cursor < end:
        gaps.append((cursor, end))
    return gaps
