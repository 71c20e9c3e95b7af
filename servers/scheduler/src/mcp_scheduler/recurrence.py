"""When a job fires next: wall-clock rules of one time zone, computed by kept libraries.

A rule yields wall-clock times (naive datetimes of the agent's zone): ``Weekly`` through
dateutil's rrule, ``Cron`` through croniter. :func:`next_after` turns them into instants
with zoneinfo, which is what makes daylight saving time neither skip nor double a job:

- a wall time the clocks skip (02:30 on the night they go forward) is read with the
  offset before the change, so it fires once, an hour later on the wall (03:30);
- a wall time that happens twice (the night they go back) is its first occurrence
  (``fold=0``), and a job fires at the first instant *after* the one it last fired at,
  so the second 02:30 is never a second firing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from croniter import croniter
from dateutil.rrule import DAILY, MONTHLY, rrule

# Walls are looked for from this long before ``after`` on the wall: a time the clocks
# skipped fires later than its wall time, and must still be found.
WINDOW = timedelta(hours=3)
MAX_STEPS = 10_000  # a rule that never yields a later instant is a bug, not a loop


@dataclass(frozen=True)
class Weekly:
    """At ``at`` on each of ``weekdays`` (0 = Monday)."""

    at: time
    weekdays: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6)

    def walls(self, start: datetime) -> Iterator[datetime]:
        return _walls(start, self.at, freq=DAILY, byweekday=self.weekdays)


@dataclass(frozen=True)
class Monthly:
    """At ``at`` on day ``day`` of every month that has it."""

    at: time
    day: int

    def walls(self, start: datetime) -> Iterator[datetime]:
        return _walls(start, self.at, freq=MONTHLY, bymonthday=self.day)


@dataclass(frozen=True)
class Cron:
    """A five-field cron expression (minute hour day-of-month month day-of-week)."""

    expression: str

    def walls(self, start: datetime) -> Iterator[datetime]:
        it = croniter(self.expression, start)
        while True:
            yield it.get_next(datetime)


Rule = Weekly | Monthly | Cron


def _walls(start: datetime, at: time, **rule: Any) -> Iterator[datetime]:
    """The times of an rrule (``freq`` and the days it names) at ``at``, after ``start``."""
    return rrule(
        dtstart=start.replace(second=0, microsecond=0),
        byhour=at.hour,
        byminute=at.minute,
        bysecond=0,
        **rule,
    ).xafter(start)


def next_after(rule: Rule, after: float, tz: ZoneInfo) -> float:
    """The first instant (Unix seconds) of ``rule`` in ``tz`` strictly after ``after``."""
    start = datetime.fromtimestamp(after, tz).replace(tzinfo=None) - WINDOW
    for step, wall in enumerate(rule.walls(start)):
        instant = wall.replace(tzinfo=tz, fold=0).timestamp()
        if instant > after:
            return instant
        if step >= MAX_STEPS:
            break
    raise ValueError(f"{rule} yields no time after {after}")


def valid_cron(expression: str) -> bool:
    """Five fields that croniter reads (no seconds field, no @-nicknames)."""
    return len(expression.split()) == 5 and croniter.is_valid(expression)
