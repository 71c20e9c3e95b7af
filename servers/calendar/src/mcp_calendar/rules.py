"""Recurrence rules a person means: what is refused before a rule is stored or expanded.

An RRULE is a tiny program, and dateutil (under recurring-ical-events) runs it candidate
by candidate from DTSTART: ``FREQ=SECONDLY;COUNT=100000000`` makes a hundred million
occurrences, ``INTERVAL=0`` never advances, ``BYMONTH=2;BYMONTHDAY=30`` tries every day
until the year 9999 without finding one. None of these is what a person asks of a
calendar, so they are refused, naming the part at fault:

    FREQ          HOURLY, DAILY, WEEKLY, MONTHLY or YEARLY (not SECONDLY or MINUTELY)
    per day       at most MAX_PER_DAY occurrences (hourly, or 24 times in BYHOUR...)
    INTERVAL      1 to MAX_INTERVAL
    COUNT         1 to MAX_COUNT
    BYSETPOS      not with HOURLY (an hour holds one occurrence)
    the BY parts  must give a date within SEARCH_YEARS of the start

A series' RDATEs are at most MAX_DATES. What is left costs at most MAX_PER_DAY occurrences
a day; each read is bounded in count and time on top (``expansion.py``). The checks read
the rule's parts (icalendar's ``vRecur``) before dateutil runs the rule (``INTERVAL=0``
makes it yield the start forever). A time zone's parts are rules too (``zone_rules.py``).

A rule that is valid but not what its words suggest is said, not refused: "every month on
the 31st" (``FREQ=MONTHLY;BYMONTHDAY=31``, or a monthly series from a 31st) skips the months
without a 31st, as RFC 5545 asks. :func:`months_note` names the months it fires in and the
rule for the last day of every month (``BYMONTHDAY=-1``; for the 29th or 30th,
``BYMONTHDAY=28,29,30;BYSETPOS=-1``: that day, or the last of a shorter month).
"""

from __future__ import annotations

import calendar
from datetime import date, datetime
from typing import Any

from dateutil.rrule import rrulestr
from icalendar import vRecur

FREQUENCIES = ("HOURLY", "DAILY", "WEEKLY", "MONTHLY", "YEARLY")
MAX_INTERVAL = 1000
MAX_COUNT = 5000  # a daily event for 13 years; a series without end needs no COUNT
MAX_DATES = MAX_COUNT  # RDATEs of one series: as many as its COUNT may give
MAX_PER_DAY = 24  # BYHOUR x BYMINUTE x BYSECOND
SEARCH_YEARS = 100  # a rule with no date in this long never has one (Feb 29 has, within 8)
CYCLE_YEARS = 400
_SUB_DAY = ("BYHOUR", "BYMINUTE", "BYSECOND")
_NOT_A_PATTERN = ("FREQ", "INTERVAL", "COUNT", "UNTIL", "WKST")
_OTHER_DAYS = ("BYDAY", "BYYEARDAY", "BYWEEKNO", "BYSETPOS")  # a monthly rule by other days
_MONTHS = [calendar.month_abbr[m] for m in range(13)]
_ORDINALS = {29: "29th", 30: "30th", 31: "31st"}


def problem(parts: vRecur, start: date) -> str | None:
    """What makes the rule ``parts`` for a series from ``start`` one no person means, in a
    few words naming the part; None when it is a rule the calendar expands."""
    if _one(parts, "FREQ") is None:
        return "it needs a FREQ, e.g. FREQ=WEEKLY"
    for check in (_frequency, _numbers, _per_day):
        found = check(parts)
        if found is not None:
            return found
    if _never(parts, start):
        pattern = ";".join(
            f"{name}={_values(values)}"
            for name, values in parts.items()
            if name not in _NOT_A_PATTERN
        )
        return (
            f"{pattern or 'the rule'} never happens: no date within {SEARCH_YEARS} years of "
            "the start matches it"
        )
    return None


def months_note(parts: vRecur, start: date) -> str | None:
    """For a monthly rule on the 29th, 30th or 31st that some of its months lack: the
    months it fires in, and the rule for that day or the last of a shorter month
    (``BYMONTHDAY=-1`` for the 31st). None for any other rule."""
    day = _month_day(parts, start)
    if day is None:
        return None
    visited = _months_visited(parts, start)
    always = [m for m in visited if calendar.monthrange(2027, m)[1] >= day]  # 2027: not leap
    leap = day == 29 and 2 in visited
    if len(always) == len(visited):
        return None
    fired = _listed([_MONTHS[m] for m in always])
    if leap:
        fired = f"it fires in {fired}, and in Feb only in leap years{_next_leap(parts, start)}"
    else:
        fired = f"it fires in {fired} only (the months with a {_ORDINALS[day]})"
    instead: Any = vRecur({k: v for k, v in parts.items() if k != "BYMONTHDAY"})
    if day == 31:
        instead["BYMONTHDAY"] = [-1]
        meaning = "the last day of the month"
    else:
        instead["BYMONTHDAY"] = list(range(28, day + 1))
        instead["BYSETPOS"] = [-1]
        meaning = f"the {_ORDINALS[day]}, or the last day of a shorter month"
    return f"{fired}; for {meaning}, the rule is {as_text(instead)}"


def _month_day(parts: vRecur, start: date) -> int | None:
    """The one day of the month (29 to 31) a monthly rule fires on, else None."""
    if str(_one(parts, "FREQ")).upper() != "MONTHLY" or any(p in parts for p in _OTHER_DAYS):
        return None
    days = parts.get("BYMONTHDAY") or [start.day]
    listed = days if isinstance(days, list) else [days]
    if len(listed) != 1 or not isinstance(listed[0], int) or listed[0] < 29:
        return None
    day: int = listed[0]
    return day


def _months_visited(parts: vRecur, start: date) -> list[int]:
    """The months (1-12) the rule's INTERVAL and BYMONTH let it fire in, in order."""
    step = _one(parts, "INTERVAL") or 1
    stepped = {(start.month - 1 + k * step) % 12 + 1 for k in range(12)}
    wanted = parts.get("BYMONTH")
    if wanted:
        listed = wanted if isinstance(wanted, list) else [wanted]
        stepped &= {int(m) for m in listed}
    return sorted(stepped)


def _next_leap(parts: vRecur, start: date) -> str:
    if (_one(parts, "INTERVAL") or 1) != 1:
        return ""
    year = start.year if (start.month, start.day) <= (2, 29) else start.year + 1
    while not calendar.isleap(year):
        year += 1
    return f" (next: 29 Feb {year})"


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _frequency(parts: vRecur) -> str | None:
    frequency = str(_one(parts, "FREQ")).upper()
    if frequency not in FREQUENCIES:
        return (
            f"FREQ={frequency} repeats more often than hourly; a calendar event repeats at "
            "most hourly (every few minutes: set a reminder instead)"
        )
    if frequency == "HOURLY" and "BYSETPOS" in parts:
        # An hour holds at most one occurrence here: BYSETPOS picks nothing a person means,
        # and dateutil would try every hour until 9999 for it.
        return "BYSETPOS does not go with FREQ=HOURLY: leave it out"
    return None


def _numbers(parts: vRecur) -> str | None:
    for name, largest in (("INTERVAL", MAX_INTERVAL), ("COUNT", MAX_COUNT)):
        value = _one(parts, name)
        if value is not None and not (isinstance(value, int) and 1 <= value <= largest):
            return f"{name}={value} must be a whole number from 1 to {largest}"
    return None


def _per_day(parts: vRecur) -> str | None:
    """Too many occurrences a day (HOURLY's BYHOUR only filters its hours)."""
    hourly = str(_one(parts, "FREQ")).upper() == "HOURLY"
    count = -(-24 // (_one(parts, "INTERVAL") or 1)) if hourly else 1
    for name in _SUB_DAY:
        if name != "BYHOUR" or not hourly:
            count *= len(parts.get(name, [0]))
    if count <= MAX_PER_DAY:
        return None
    given = ";".join(
        f"{name}={_values(parts[name])}" for name in ("FREQ", *_SUB_DAY) if name in parts
    )
    return f"{given} makes {count} occurrences a day; at most {MAX_PER_DAY}"


def _never(parts: vRecur, start: date) -> bool:
    """Whether the rule's pattern (COUNT and UNTIL aside) gives no date within
    SEARCH_YEARS of ``start``. dateutil checks an UNTIL only against dates it found, so a
    pattern that finds none runs on to the year 9999 whatever the UNTIL: the start is
    moved instead, by whole 400-year cycles (the Gregorian calendar, weekdays and leap
    years included, repeats exactly), to between SEARCH_YEARS and SEARCH_YEARS + 400 years
    before 9999, where dateutil's own end stops the search."""
    pattern: Any = vRecur({k: v for k, v in parts.items() if k not in ("COUNT", "UNTIL")})
    text = as_text(pattern)
    wall = start.replace(tzinfo=None) if isinstance(start, datetime) else midnight(start)
    cycles = (datetime.max.year - SEARCH_YEARS - wall.year) // CYCLE_YEARS
    try:
        moved = wall.replace(year=wall.year + cycles * CYCLE_YEARS)
        first = next(iter(rrulestr(text, dtstart=moved)), None)
    except (ValueError, TypeError):  # not dateutil's syntax: the caller's check says so
        return False
    return first is None


def _one(parts: vRecur, name: str) -> Any:
    values = parts.get(name)
    if not values:
        return None
    return values[0] if isinstance(values, list) else values


def _values(values: Any) -> str:
    listed = values if isinstance(values, list) else [values]
    return ",".join(str(v) for v in listed)


def midnight(day: date) -> datetime:
    return datetime.combine(day, datetime.min.time())


def as_text(rule: Any) -> str:
    """A parsed rule (``vRecur``) as RRULE text: ``FREQ=WEEKLY;BYDAY=MO``."""
    raw = rule.to_ical()
    return raw.decode() if isinstance(raw, bytes) else str(raw)
