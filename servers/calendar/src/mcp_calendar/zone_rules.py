"""A custom ``VTIMEZONE``'s own rules under the limits of ``rules.py``: what is refused
before a zone is used.

A zone's ``STANDARD`` and ``DAYLIGHT`` parts are rules too: each starts at its DTSTART and
repeats by its RRULE and RDATEs, and dateutil (under icalendar's zones) walks every change
from the first one each time it converts a time. A part with ``RRULE:FREQ=HOURLY`` from
1970 is half a million changes, walked on every conversion: one event in such a zone made
a one-day read cost seconds, and ``FREQ=MINUTELY`` never finished importing. A zone
changes its offset a few times a year, so these are refused, naming the part:

    FREQ             YEARLY or MONTHLY (what every producer writes is YEARLY)
    the rule         passes the checks of an event's RRULE (rules.problem: INTERVAL,
                     COUNT, a pattern that never happens...)
    per year         at most MAX_CHANGES_PER_YEAR changes, all parts together
    in all           at most MAX_CHANGES changes before END (the last year a calendar
                     holds), DTSTARTs and RDATEs included

The count walks the changes once, lazily, and stops at the first limit passed: a few
milliseconds for a real zone (Outlook's from 1601: about 1200 changes), never more than
MAX_CHANGES steps for a bad one.
"""

from __future__ import annotations

from collections import Counter
from datetime import date, datetime
from typing import Any

from dateutil.rrule import rrulestr
from icalendar import Component, Timezone

from mcp_calendar import rules, times

FREQUENCIES = ("YEARLY", "MONTHLY")
MAX_CHANGES_PER_YEAR = 12
MAX_CHANGES = 2_000  # Outlook's zones start in 1601: two yearly parts, 1,198 up to END
END = datetime(times.LAST_YEAR + 1, 1, 1)
PARTS = ("STANDARD", "DAYLIGHT")


class _TooMany(Exception):
    pass


def problem(zone: Timezone) -> str | None:
    """What makes ``zone``'s parts change its offset more often than a zone does, in a
    few words naming the part; None when the zone may be used. A part that does not
    parse is not judged here (icalendar and dateutil refuse it where the zone is read)."""
    changes = _Changes()
    try:
        for part in zone.subcomponents:
            if part.name in PARTS:
                found = _part(part, changes)
                if found is not None:
                    return found
    except _TooMany as too_many:
        return str(too_many)
    return None


class _Changes:
    """The zone's changes counted by year, refused at the first limit passed."""

    def __init__(self) -> None:
        self.total = 0
        self.years: Counter[int] = Counter()

    def add(self, moment: Any) -> None:
        year = moment.year
        self.total += 1
        self.years[year] += 1
        if self.years[year] > MAX_CHANGES_PER_YEAR:
            raise _TooMany(
                f"it changes its offset more than {MAX_CHANGES_PER_YEAR} times in {year}, "
                "where a zone changes it a few times a year"
            )
        if self.total > MAX_CHANGES:
            raise _TooMany(f"it changes its offset more than {MAX_CHANGES} times before {END.year}")


def _part(part: Component, changes: _Changes) -> str | None:
    start = _start(part)
    if start is None:
        return None
    changes.add(start)
    for moment in _dates(part):
        if moment < END:
            changes.add(moment)
    found: Any = part.get("RRULE")
    for rule in found if isinstance(found, list) else [] if found is None else [found]:
        refused = _rule_problem(str(part.name), rule, start)
        if refused is not None:
            return refused
        text = rules.as_text(rule)
        try:
            expanded = rrulestr(text, dtstart=start, ignoretz=True)
        except (ValueError, TypeError):
            return None  # not dateutil's syntax: the zone is unreadable, not refused
        for moment in expanded:
            if moment >= END:
                break
            if moment != start:  # the DTSTART is counted once, whether the rule gives it
                changes.add(moment)
    return None


def _rule_problem(name: str, rule: Any, start: datetime) -> str | None:
    frequency = str(rule.get("FREQ", ["?"])[0]).upper()
    if frequency not in FREQUENCIES:
        return (
            f"its {name} part repeats FREQ={frequency}, where a zone changes its offset a few "
            "times a year (FREQ=YEARLY)"
        )
    refused = rules.problem(rule, start)
    return None if refused is None else f"its {name} rule cannot be used: {refused}"


def _start(part: Component) -> datetime | None:
    found = part.get("DTSTART")
    moment = getattr(found, "dt", None)
    if isinstance(moment, datetime):
        return moment.replace(tzinfo=None)
    if isinstance(moment, date):
        return datetime.combine(moment, datetime.min.time())
    return None


def _dates(part: Component) -> list[datetime]:
    found: Any = part.get("RDATE")
    entries = found if isinstance(found, list) else [] if found is None else [found]
    moments = []
    for entry in entries:
        for item in getattr(entry, "dts", []):
            value = item.dt[0] if isinstance(item.dt, tuple) else item.dt
            if isinstance(value, datetime):
                moments.append(value.replace(tzinfo=None))
            elif isinstance(value, date):
                moments.append(datetime.combine(value, datetime.min.time()))
    return moments
