"""What a calendar backend is: the service and the tools see only this.

A backend (``local`` here; Google and CalDAV fit the same shape) lists calendars,
expands events into occurrences over a range, finds one occurrence again, and performs
an approved :data:`Change` once per approval (replays answer the first result). It
raises :class:`~mcp_calendar.errors.Stale` when the event's version is not the one the
change was proposed against, and :class:`~mcp_calendar.errors.NotWritable` for a
read-only calendar, and changes nothing then.

Times: a timed occurrence's ``start``/``end`` are aware datetimes in the event's own zone
(``zone``: an IANA name, or the TZID of a zone its calendar file defines), an all-day one's
are dates (``end`` exclusive, as in iCalendar).
``recurrence_id`` is the original start of an occurrence of a series (it names the
occurrence even after it was moved), None for a single event.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal, Protocol

from meshkit.proposals import Approval, Confirmed

Moment = datetime | date
Scope = Literal["this", "following", "series"]
Version = int | str  # local: a counter; Google: the ETag


@dataclass(frozen=True)
class CalendarInfo:
    id: str
    name: str
    writable: bool


@dataclass(frozen=True)
class Occurrence:
    uid: str
    calendar: str
    title: str
    start: Moment
    end: Moment
    recurrence_id: Moment | None
    zone: str | None  # the event's zone (IANA, or a custom TZID); None for all-day events
    rule: str | None  # the series' RRULE, None for a single event
    location: str | None
    description: str | None
    busy: bool  # False for transparent events (TRANSP:TRANSPARENT)
    version: Version

    @property
    def all_day(self) -> bool:
        return not isinstance(self.start, datetime)


@dataclass(frozen=True)
class NewEvent:
    uid: str
    calendar: str
    title: str
    start: Moment
    end: Moment
    rule: str | None
    location: str | None
    description: str | None


@dataclass(frozen=True)
class Target:
    """The occurrence a change is for, and the series version it was proposed against."""

    uid: str
    version: Version
    recurrence_id: Moment | None
    scope: Scope


@dataclass(frozen=True)
class Add:
    event: NewEvent


@dataclass(frozen=True)
class Move:
    target: Target
    start: Moment  # the occurrence's new start and end, in the event's zone
    end: Moment


@dataclass(frozen=True)
class Cancel:
    target: Target


Change = Add | Move | Cancel


class Backend(Protocol):
    async def calendars(self) -> list[CalendarInfo]: ...

    async def occurrences(self, start: datetime, end: datetime) -> list[Occurrence]:
        """Every occurrence that overlaps [start, end), in start order."""
        ...

    async def occurrence(self, uid: str, recurrence_id: Moment | None) -> Occurrence | None:
        """That occurrence as it stands now; None when the event or occurrence is gone."""
        ...

    async def perform(
        self, approval: Approval, change: Change, result: dict[str, Any], at: float
    ) -> Confirmed:
        """Make the change and record ``result`` as the approval's answer, once."""
        ...

    async def check(self) -> str | None:
        """Health: the backend answers (else raises); a line for ``/health``'s details,
        such as events its reads skip, or None."""
        ...
