"""A series' start moved forward by whole periods of its rule, up to shortly before a range.

dateutil (under recurring-ical-events) finds a series' occurrences in a range by walking its
rule from DTSTART: an hourly series from 1900 read in 2026 walks 1.1 million hours, seconds
of CPU, to give the day's 24, and the walk grows with every year the series has run. Moving
DTSTART forward by a whole number of the rule's periods (INTERVAL × FREQ) keeps every later
occurrence where it was, when:

- the rule is the series' only one and has no COUNT (a count runs from DTSTART);
- what dateutil derives from DTSTART stays: its time of day, minute and second (whole days
  or hours keep them), its weekday for WEEKLY (whole weeks keep it), its day of the month
  (and month) for MONTHLY and YEARLY: written out as BYMONTHDAY (and BYMONTH) before the
  start moves to the first day of a period. BYHOUR with HOURLY keeps the hours INTERVAL
  reaches, as whole multiples of INTERVAL hours keep the start's hour among them;
- the moved start, with the event's length, ends before the range (RFC 5545 makes DTSTART
  an occurrence whether the rule gives it or not, so it must not land in the range).

Periods are counted on the wall clock, as dateutil counts them, so a DST change moves
nothing. The walk left is the range itself and SLACK before it.
"""

from __future__ import annotations

import copy
from datetime import UTC, date, datetime, timedelta
from typing import Any

from icalendar import Event

SLACK = timedelta(days=2)  # more than any UTC offset, so the range is compared in UTC
MAX_LENGTH = timedelta(days=400)  # longer events keep their start (rare, and few periods)
_FIXED = {"HOURLY": timedelta(hours=1), "DAILY": timedelta(days=1), "WEEKLY": timedelta(weeks=1)}
_DAY_PARTS = ("BYWEEKNO", "BYYEARDAY", "BYMONTHDAY", "BYDAY")


def forward(master: Event, before: datetime) -> Event:
    """``master``, or a copy whose DTSTART (and DTEND) moved forward by whole periods of its
    RRULE to end before ``before`` (aware), with every occurrence from ``before`` on kept."""
    rule: Any = master.get("RRULE")
    if rule is None or isinstance(rule, list) or "COUNT" in rule or "EXRULE" in master:
        return master
    start = master.decoded("DTSTART")
    length = _length(master, start)
    if length is None or not timedelta(0) <= length <= MAX_LENGTH:
        return master
    frequency = str(_one(rule, "FREQ", "")).upper()
    step = _one(rule, "INTERVAL", 1)
    if not isinstance(step, int) or step < 1:
        return master
    wall = _wall(start)
    limit = before.astimezone(UTC).replace(tzinfo=None) - length - SLACK
    moved = _moved(wall, limit, frequency, step)
    if moved is None or moved <= wall:
        return master
    ahead = copy.deepcopy(master)
    if frequency in ("MONTHLY", "YEARLY") and not any(part in rule for part in _DAY_PARTS):
        parts: Any = ahead["RRULE"]
        parts["BYMONTHDAY"] = [wall.day]
        if frequency == "YEARLY" and "BYMONTH" not in parts:
            parts["BYMONTH"] = [wall.month]
    first: Any = moved.replace(tzinfo=start.tzinfo) if isinstance(start, datetime) else moved.date()
    ahead.pop("DTSTART")
    ahead.add("dtstart", first)
    if "DTEND" in ahead:
        ahead.pop("DTEND")
        ahead.add("dtend", first + length)
    return ahead


def _moved(wall: datetime, limit: datetime, frequency: str, step: int) -> datetime | None:
    """The latest start ``wall`` + n periods (n ≥ 0) at or before ``limit``, or None."""
    if frequency in _FIXED:
        period = _FIXED[frequency] * step
        steps = (limit - wall) // period
        return wall + steps * period if steps > 0 else None
    if frequency == "MONTHLY":
        months = ((limit.year - wall.year) * 12 + limit.month - wall.month - 1) // step * step
        if months <= 0:
            return None
        year, month = divmod(wall.month - 1 + months, 12)
        return wall.replace(year=wall.year + year, month=month + 1, day=1)
    if frequency == "YEARLY":
        years = (limit.year - wall.year - 1) // step * step
        return wall.replace(year=wall.year + years, month=1, day=1) if years > 0 else None
    return None


def _length(master: Event, start: date) -> timedelta | None:
    if "DTEND" in master:
        end = master.decoded("DTEND")
        if isinstance(end, datetime) != isinstance(start, datetime):
            return None
        found: timedelta = end - start
        return found
    if "DURATION" in master:
        duration = master.decoded("DURATION")
        return duration if isinstance(duration, timedelta) else None
    return timedelta(0)


def _wall(moment: date) -> datetime:
    if isinstance(moment, datetime):
        return moment.replace(tzinfo=None)
    return datetime.combine(moment, datetime.min.time())


def _one(rule: Any, name: str, default: Any) -> Any:
    values = rule.get(name)
    if not values:
        return default
    return values[0] if isinstance(values, list) else values
