"""What the calendar tools return, and the payloads their proposals carry.

Times in results are ISO 8601 in the user's zone, with the offset
(``2026-03-27T15:00:00+01:00``); every result names the zone. All-day events have dates:
``start`` is the first day and ``end`` the last day (inclusive).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SERVER = "calendar"  # as approval tokens name it
ADD = "event_add"  # proposal kinds: each performed by confirm_<kind>
MOVE = "event_move"
CANCEL = "event_cancel"
IMPORT = "import_events"  # a calendar file sent in chat (imports.py)

ScopeName = Literal["this", "following", "series"]


class CalendarOut(BaseModel):
    id: str
    name: str
    writable: bool = Field(description="False: read-only (e.g. an imported holiday calendar)")


class Calendars(BaseModel):
    calendars: list[CalendarOut]
    default: str = Field(description="Where new events go when no calendar is named")
    timezone: str = Field(description="The zone the times of this user are read in")


class EventOut(BaseModel):
    id: str = Field(description="The event's id (a series has one id for every occurrence)")
    occurrence: str | None = Field(
        description="For an occurrence of a recurring event: its original start, which "
        "names it in propose_event_move/cancel; null for a single event"
    )
    calendar: str
    title: str
    start: str = Field(description="ISO time in the user's zone, or a date (all day)")
    end: str = Field(description="ISO time in the user's zone, or the last day (all day)")
    all_day: bool
    when: str = Field(description="The same in words, local time")
    recurring: bool
    rule: str | None = Field(default=None, description="The RRULE of a recurring event")
    event_timezone: str | None = Field(
        default=None, description="The event's own zone (it keeps its wall-clock time there)"
    )
    location: str | None = None


class Events(BaseModel):
    timezone: str
    start: str
    end: str
    events: list[EventOut] = Field(description="In start order")
    message: str | None = Field(default=None, description="Says so plainly when there are none")


class Slot(BaseModel):
    start: str
    end: str
    when: str


class FreeTime(BaseModel):
    timezone: str
    duration_minutes: int
    working_hours: str = Field(description="The hours searched each day, e.g. '09:00–17:00'")
    slots: list[Slot] = Field(description="Free stretches at least that long, earliest first")
    message: str | None = None


# Proposal payloads: what a confirm tool receives back, checked after the approval.


class Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str = Field(min_length=1, max_length=200)
    timezone: str = Field(description="The user's zone, for the words of the result")


class AddPayload(Payload):
    uid: str
    calendar: str
    title: str
    start: str  # ISO with offset, or a date
    end: str  # exclusive (a date: the day after the last)
    zone: str | None  # the event's IANA zone; None for all-day
    rule: str | None
    location: str | None
    description: str | None


class TargetPayload(Payload):
    uid: str
    version: int | str  # local: a counter; Google: the ETag
    occurrence: str | None  # recurrence id, ISO (with offset) or a date
    zone: str | None  # the event's IANA zone; None for all-day
    scope: ScopeName
    title: str
    was: str  # the occurrence in words, as proposed


class MovePayload(TargetPayload):
    start: str
    end: str


class CancelPayload(TargetPayload):
    pass


class ImportPayload(BaseModel):
    """A calendar file staged for import: the server keeps the file (its store's
    ``staged_imports``); the payload names it, small enough for any approval's path."""

    model_config = ConfigDict(extra="forbid")

    agent: str = Field(min_length=1, max_length=200)
    import_id: str = Field(pattern=r"^imp_[0-9a-f]{16}$")
    calendar: str = Field(min_length=1, max_length=60)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="Of the file's text, UTF-8")
    events: int = Field(ge=1, description="The events the file gives (to import or unchanged)")


# What the confirm tools return. A replayed approval returns the first result.


class Confirmed(BaseModel):
    message: str = Field(description="One line for the user: what was done")
    replayed: bool = Field(
        description="This approval was used before: the first result, nothing done now"
    )
    event_id: str


class Added(Confirmed):
    pass


class Moved(Confirmed):
    scope: ScopeName


class Cancelled(Confirmed):
    scope: ScopeName


class ImportedEvents(BaseModel):
    message: str = Field(description="One line for the user: what was imported")
    replayed: bool = Field(
        description="This approval was used before: the first result, nothing done now"
    )
    calendar: str
    imported: int = Field(description="Events added, or changed to the file's version")
    unchanged: int = Field(description="Events in the calendar already, as the file has them")
    moved: int = Field(description="Of those imported, events moved here from other calendars")
    skipped: int = Field(
        description="Events not imported: unreadable, or kept in a read-only calendar"
    )
