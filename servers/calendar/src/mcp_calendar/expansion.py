"""One event's occurrences over a range, within a read's bounds: the expansion every backend
that holds iCalendar uses (the local calendar's stored events, a CalDAV server's objects).

A read costs at most what its :class:`Budget` allows, however the events were written and
whoever wrote them (an import by an older version, another CalDAV client):

- a series whose rules are refused (``rules.py``: SECONDLY, ``INTERVAL=0``, more than 24 a
  day, more than MAX_DATES RDATEs...) is not expanded: it is shown once, at its start, as
  it was written, logged once and counted for ``/health`` (:class:`Skipped`); a time zone
  refused by ``zone_rules.py`` leaves its event out (``local.parse``, ``dav.py``);
- what is left makes at most 24 occurrences a day, and is expanded piece by piece (a piece
  of PIECE days for a series of several a day, else the whole range), its start moved up
  to each piece (``forward.py``) so that dateutil does not walk the years before it;
- each occurrence made is counted against the read's Budget as it is made: more than
  MAX_OCCURRENCES in the range, or more than EXPAND_BUDGET_S of expanding, ends the read
  with a line asking for a shorter range (:class:`OverBudget`). Between two checks there is
  at most one piece's work: PIECE days of one series of several a day (744 occurrences at
  most), or one series of one a day at most over the range (and its RDATEs, MAX_DATES at
  most), tens of milliseconds.

One event that cannot be expanded (a stored ``RDATE;VALUE=TIME``, anything icalendar,
recurring-ical-events or dateutil raise on) never breaks a read: :meth:`Skipped.guard`
leaves it out, logs it once per version and counts it. An all-day event ends at least a
day after it starts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any, Protocol

import recurring_ical_events  # type: ignore[import-untyped]
from icalendar import Calendar, Event

from mcp_calendar import edits, rules, zones
from mcp_calendar.backend import Moment, Occurrence, Version
from mcp_calendar.errors import InvalidRequest
from mcp_calendar.forward import forward

logger = logging.getLogger(__name__)

# One read's bounds: rules.py keeps each series to 24 occurrences a day at most, and the
# reads to about a year (service.py); these bound the sum over every series in range.
MAX_OCCURRENCES = 20_000  # an hourly series over the longest read (397 days) fits
EXPAND_BUDGET_S = 2.0
PIECE = timedelta(days=31)  # a series of several a day is expanded this much at a time


class OverBudget(InvalidRequest):
    """The read would make more occurrences, or take longer, than one read may."""


class Budget:
    """What one read may still make: occurrences in [start, end) and seconds of expanding
    (from when the budget is made), checked at every occurrence made."""

    def __init__(
        self,
        start: datetime,
        end: datetime,
        *,
        occurrences: int = MAX_OCCURRENCES,
        seconds: float = EXPAND_BUDGET_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._start, self._end = start, end
        self._limit = self._left = occurrences
        self._clock = clock
        self._deadline = clock() + seconds

    def made(self, occurrence: Occurrence) -> None:
        """One occurrence made (counted when it overlaps the read's range)."""
        if overlaps(occurrence, self._start, self._end):
            self.served(1)
        elif self._clock() > self._deadline:
            raise self._too_long()

    def served(self, count: int) -> None:
        """``count`` occurrences of the range given (made now, or kept from before)."""
        self._left -= count
        if self._left < 0:
            raise OverBudget(
                f"More than {self._limit} events in this range: ask for a shorter one."
            )
        if self._clock() > self._deadline:
            raise self._too_long()

    def _too_long(self) -> OverBudget:
        return OverBudget(
            "This range holds more than the calendar can go through at once: ask for a shorter one."
        )


class Source(Protocol):
    """The event occurrences are read from, as they name it: a stored row
    (:class:`~mcp_calendar.store.StoredEvent`), a calendar object on a CalDAV server."""

    @property
    def uid(self) -> str: ...

    @property
    def calendar(self) -> str: ...

    @property
    def version(self) -> Version: ...


class Skipped:
    """Events reads leave out because they cannot be expanded, and series shown once
    because their rules are refused: each logged once per version (one line, no
    traceback), and counted for ``/health`` until a version reads in full."""

    def __init__(self) -> None:
        self._versions: dict[str, Version] = {}
        self._refused: dict[str, Version] = {}

    def guard(
        self, uid: str, version: Version, read: Callable[[], list[Occurrence]]
    ) -> list[Occurrence]:
        """``read()``'s occurrences, or none when reading this event raises (a read over
        its budget is the whole read's fault: it goes on up)."""
        try:
            found = read()
        except OverBudget:
            raise
        except Exception as error:  # one event's fault, whatever raised it: the read goes on
            self.left_out(uid, version, error)
            return []
        self._versions.pop(uid, None)
        return found

    def refused(self, uid: str, version: Version, why: str | None) -> None:
        """The series' rules are refused (``why``), or not (None)."""
        if why is None:
            self._refused.pop(uid, None)
            return
        if self._refused.get(uid) != version:
            self._refused[uid] = version
            logger.warning("event %s: its rules are not expanded: %s", uid, why)

    def left_out(self, uid: str, version: Version, error: Exception) -> None:
        """The event is left out of reads because of ``error`` (logged once a version)."""
        if self._versions.get(uid) == version:
            return
        self._versions[uid] = version
        reason = " ".join(str(error).split()) or "no message"
        logger.warning(
            "event %s (version %s) is left out of reads: it cannot be expanded (%s: %s)",
            uid,
            version,
            type(error).__name__,
            reason[:300],
        )

    def detail(self) -> str | None:
        """What ``/health`` says while some event is left out or shown once (no UIDs:
        /health is public)."""
        said = []
        if self._versions:
            count = len(self._versions)
            events = "event" if count == 1 else "events"
            said.append(f"reads skip {count} {events} that cannot be expanded")
        if self._refused:
            count = len(self._refused)
            series = "series is shown once: its rules are"
            if count > 1:
                series = "series are shown once: their rules are"
            said.append(f"{count} {series} refused")
        return f"{'; '.join(said)} (named in the log)" if said else None


def expand(
    event: Source,
    components: list[Event],
    start: datetime,
    end: datetime,
    *,
    skipped: Skipped,
    budget: Budget,
) -> list[Occurrence]:
    """The occurrences of one event (its master and changed occurrences, duplicates by
    RECURRENCE-ID resolved by ``edits.deduplicate``) that fall in [start, end); none when
    it cannot be expanded, noted in ``skipped``; a series whose rules are refused once, at
    its start."""

    def read() -> list[Occurrence]:
        found = edits.deduplicate(components)
        master = edits.master_of(found)
        why = refusal(master)
        skipped.refused(event.uid, event.version, why)
        if why is None and ("RRULE" in master or "RDATE" in master):
            return occurrences(event, found, start, end, budget)
        single = occurrence(event, master, master)
        if not overlaps(single, start, end):
            return []
        budget.made(single)
        return [single]

    return skipped.guard(event.uid, event.version, read)


def refusal(master: Event) -> str | None:
    """Why the series' rules are not expanded (``rules.py``), or None. Several RRULEs (RFC
    5545 allows them) are expanded together when each is one a person means."""
    if "RDATE" in master and len(zones.moments(master["RDATE"])) > rules.MAX_DATES:
        return f"it has more than {rules.MAX_DATES} RDATEs"
    if "RRULE" not in master:
        return None
    found: Any = master["RRULE"]
    start: Moment = master.decoded("DTSTART")
    for rule in found if isinstance(found, list) else [found]:
        refused = rules.problem(rule, start)
        if refused is not None:
            return refused
    return None


def occurrences(
    event: Source, components: list[Event], start: datetime, end: datetime, budget: Budget
) -> list[Occurrence]:
    """The series' occurrences in [start, end) (rules not refused: the caller checks),
    counted against ``budget`` as they are made."""
    master = edits.master_of(components)
    changed = {edits.component_rid(c) for c in components if c is not master}
    template = occurrence(event, master, master)
    found: list[Occurrence] = []
    pieces = list(_pieces(master, start, end))
    for number, (low, high) in enumerate(pieces):
        calendar = Calendar()
        for component in components:
            calendar.add_component(forward(component, low) if component is master else component)
        for each in recurring_ical_events.of(calendar).between(low, high):
            if "RECURRENCE-ID" in each and edits.component_rid(each) not in changed:
                # An occurrence as the rule made it: the master's, at another time.
                first: Moment = each.decoded("DTSTART")
                rid: Moment = each.decoded("RECURRENCE-ID")
                made = replace(template, start=first, end=end_of(each), recurrence_id=rid)
            else:
                made = occurrence(event, master, each)
            at = _at(made.start, low)
            if (number and at < low) or (number < len(pieces) - 1 and at >= high):
                continue  # the piece before or after gives it
            budget.made(made)
            found.append(made)
    return found


def _pieces(master: Event, start: datetime, end: datetime) -> Iterator[tuple[datetime, datetime]]:
    """[start, end) in pieces of PIECE days for a series of several occurrences a day, else
    whole."""
    if not several_a_day(master):
        yield start, end
        return
    low = start
    while low < end:
        high = min(low + PIECE, end)
        yield low, high
        low = high


def several_a_day(master: Event) -> bool:
    """Whether one of the series' rules makes several occurrences a day (HOURLY, or
    several BYHOUR, BYMINUTE or BYSECOND): up to 24, where others make one at most."""
    found: Any = master.get("RRULE")
    return any(
        str(rule.get("FREQ", [""])[0]).upper() == "HOURLY"
        or any(len(rule.get(name, [0])) > 1 for name in ("BYHOUR", "BYMINUTE", "BYSECOND"))
        for rule in (found if isinstance(found, list) else [] if found is None else [found])
    )


def occurrence(event: Source, master: Event, found: Event) -> Occurrence:
    """The occurrence ``found`` (the master itself, or a changed occurrence) of ``event``."""
    start: Moment = found.decoded("DTSTART")
    series = "RRULE" in master or "RDATE" in master
    rid: Moment | None = None
    if series:
        rid = found.decoded("RECURRENCE-ID") if "RECURRENCE-ID" in found else start
    zone = zones.name(start.tzinfo) if isinstance(start, datetime) else None
    return Occurrence(
        uid=event.uid,
        calendar=event.calendar,
        title=str(found.get("SUMMARY", "")),
        start=start,
        end=end_of(found),
        recurrence_id=rid,
        zone=zone,
        rule=edits.rule_text(master) if "RRULE" in master else None,
        location=_text(found, "LOCATION"),
        description=_text(found, "DESCRIPTION"),
        busy=str(found.get("TRANSP", "OPAQUE")).upper() != "TRANSPARENT",
        version=event.version,
    )


def overlaps(o: Occurrence, start: datetime, end: datetime) -> bool:
    """As recurring-ical-events counts it: a date is a day in the zone of the range."""
    first, last = _at(o.start, start), _at(o.end, start)
    return first < end and (last > start or (first == last and first >= start))


def _at(moment: Moment, reference: datetime) -> datetime:
    """A moment comparable with ``reference``: a date, or a floating time, in its zone."""
    if isinstance(moment, datetime):
        return moment if moment.tzinfo else moment.replace(tzinfo=reference.tzinfo)
    return datetime.combine(moment, datetime.min.time(), tzinfo=reference.tzinfo)


def end_of(component: Event) -> Moment:
    """The component's end: DTEND, else DTSTART + DURATION, else its start (a day long for
    an all-day event)."""
    start: Moment = component.decoded("DTSTART")
    end: Moment
    if "DTEND" in component:
        end = component.decoded("DTEND")
    elif "DURATION" in component:
        end = start + component.decoded("DURATION")
    else:
        end = start
    return end if isinstance(start, datetime) else _day_end(start, end)


def _day_end(start: date, end: Moment) -> date:
    """An all-day event's exclusive end: a whole day at least (an end at or before the
    start, or a part of a day, as some producers write, is the start's day)."""
    if isinstance(end, datetime):
        end = end.date() + timedelta(days=1 if end.time() != datetime.min.time() else 0)
    return max(end, start + timedelta(days=1))


def instant(moment: Moment) -> datetime:
    """A moment as an aware datetime: a floating time or a date in UTC."""
    if isinstance(moment, datetime):
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return datetime.combine(moment, datetime.min.time(), tzinfo=UTC)


def _text(component: Event, name: str) -> str | None:
    value = component.get(name)
    return None if value is None else str(value)
