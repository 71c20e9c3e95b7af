"""Times as people give them, read in the user's zone, and written back in words.

A time without an offset (``2026-03-27T15:00``) is wall-clock time in the user's IANA
zone; one with an offset (``...+01:00``, ``...Z``) is that instant. A date alone
(``2026-03-27``, or ``today`` / ``tomorrow``) is a day: all day long for an event, the
whole day for a range. Parsing is the standard library's ISO 8601 reader; zones are
``zoneinfo``. A wall-clock time that does not exist in the zone (the hour skipped when
clocks go forward) is refused; one that happens twice (clocks go back) is the first.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mcp_calendar.errors import InvalidTime

DAY_WORDS = {"today": 0, "tomorrow": 1, "yesterday": -1}
Moment = datetime | date  # an aware datetime, or a date (all day)
# Years a calendar holds: within them a day and its zone's offsets never reach the edge of
# datetime (the year 1 or 9999, where adding a day or an offset overflows).
FIRST_YEAR, LAST_YEAR = 1900, 2199


def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name``; InvalidTime names the fix."""
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name too long for a path
        shown = name if len(name) <= 64 else f"{name[:60]}…"
        raise InvalidTime(
            f"{shown!r} is not an IANA time zone: use a name such as Europe/Berlin."
        ) from None


def parse(text: str, tz: ZoneInfo, now: datetime) -> Moment:
    """A datetime (aware) or a date, from ISO 8601 or a day word."""
    cleaned = text.strip()
    offset = DAY_WORDS.get(cleaned.casefold())
    if offset is not None:
        return now.astimezone(tz).date() + timedelta(days=offset)
    try:
        value: Moment = (
            date.fromisoformat(cleaned)  # YYYY-MM-DD
            if len(cleaned) == 10
            else datetime.fromisoformat(cleaned)
        )
    except ValueError:
        raise InvalidTime(
            f"{text!r} is not a time I can read: use YYYY-MM-DD for a day, "
            "YYYY-MM-DDTHH:MM for a time in the user's zone, or add an offset (+01:00)."
        ) from None
    if not supported(value):
        raise InvalidTime(
            f"{text!r} is outside the years {FIRST_YEAR}–{LAST_YEAR} this calendar holds."
        )
    if not isinstance(value, datetime) or value.tzinfo is not None:
        return value
    return localize(value, tz)


def supported(moment: Moment) -> bool:
    """Whether ``moment`` lies in the years the calendar holds."""
    return FIRST_YEAR <= moment.year <= LAST_YEAR


def localize(wall: datetime, tz: tzinfo) -> datetime:
    """A wall-clock time in ``tz``; InvalidTime when the clocks skip it."""
    aware = wall.replace(tzinfo=tz, fold=0)
    if aware.astimezone(UTC).astimezone(tz).replace(tzinfo=None) != wall:
        raise InvalidTime(
            f"{wall:%Y-%m-%d %H:%M} does not exist in {tz}: the clocks skip that hour "
            "(daylight saving time). Pick a time outside it."
        )
    return aware


def day_start(day: date, tz: tzinfo) -> datetime:
    """The first instant of ``day`` in ``tz`` (midnight, or later when midnight is skipped)."""
    wall = datetime.combine(day, time())
    for minutes in range(0, 180, 30):
        try:
            return localize(wall + timedelta(minutes=minutes), tz)
        except InvalidTime:
            continue
    return wall.replace(tzinfo=tz)


def at(day: date, clock: time, tz: tzinfo) -> datetime:
    return datetime.combine(day, clock).replace(tzinfo=tz)


def instant(moment: Moment, tz: tzinfo) -> datetime:
    """A moment as an instant: a date is its first instant in ``tz``."""
    if isinstance(moment, datetime):
        return moment
    return day_start(moment, tz)


def iso(moment: Moment, tz: tzinfo) -> str:
    """A datetime in ``tz`` with its offset (``2026-03-27T15:00:00+01:00``), a date as is."""
    if isinstance(moment, datetime):
        return moment.astimezone(tz).isoformat()
    return moment.isoformat()


def words(start: Moment, end: Moment, tz: tzinfo) -> str:
    """'Fri 27 Mar 2026, 15:00–16:00', 'Fri 27 Mar 2026 (all day)', 'Fri 20 – Sun 22 Mar
    2026 (all day)': local times of ``tz``, end of an all-day span inclusive."""
    if not isinstance(start, datetime) or not isinstance(end, datetime):
        first = _date(start)
        last = _date(end) - timedelta(days=1)
        if last <= first:
            return f"{first:%a %-d %b %Y} (all day)"
        return f"{first:%a %-d %b} – {last:%a %-d %b %Y} (all day)"
    begin, finish = start.astimezone(tz), end.astimezone(tz)
    if finish.date() == begin.date():
        return f"{begin:%a %-d %b %Y, %H:%M}–{finish:%H:%M}"
    return f"{begin:%a %-d %b %Y, %H:%M} – {finish:%a %-d %b, %H:%M}"


def _date(moment: Moment) -> date:
    return moment.date() if isinstance(moment, datetime) else moment
