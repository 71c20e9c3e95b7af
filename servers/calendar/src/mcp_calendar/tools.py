"""The calendar tools the model (and any client) calls: reads, and proposals of changes.

``agent`` and ``timezone`` are context arguments: the orchestrator fills them in for its
turn, a client bound to a person gets them from its binding (``meshkit.bindings``). A
proposal goes through the consent kernel (``meshkit.consent``): the orchestrator gets it back
to stage in its chat, a client bound to a person gets it staged for that person on Telegram.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from mcp_calendar.models import Calendars, Events, FreeTime, ScopeName
from mcp_calendar.proposals import Proposals
from mcp_calendar.service import CalendarService
from meshkit.consent import Consent
from meshkit.params import ContextAgent
from meshkit.tool_classes import producer, read
from meshkit.wire.proposals import Proposal

CONTEXT = ("agent", "timezone")

Time = Annotated[
    str,
    Field(
        min_length=1,
        max_length=40,
        description="Local YYYY-MM-DDTHH:MM, or a day: YYYY-MM-DD, today, tomorrow",
    ),
]
EndTime = Annotated[
    str | None,
    Field(
        max_length=40,
        description="Like start; a day is inclusive",
    ),
]
EventName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="Its title in the user's words, or its id",
    ),
]
Occurrence = Annotated[
    str | None,
    Field(
        max_length=40,
        description="Its 'occurrence' from get_events, or its date (default: the next)",
    ),
]
Scope = Annotated[
    ScopeName,
    Field(description="Of a recurring event: this one, following (this and later) or the series"),
]
Zone = Annotated[
    str, Field(max_length=64, description="The user's IANA time zone (filled in by the assistant)")
]


def add_read_tools(mcp: FastMCP[Any], service: CalendarService, zone_default: str) -> None:
    @mcp.tool(**read(title="Calendars", context=("timezone",)))
    async def list_calendars(timezone: Zone = zone_default) -> Calendars:
        """The calendars: which can be changed, which new events go to."""
        return await service.calendars(timezone)

    @mcp.tool(**read(title="Events", context=("timezone",)))
    async def get_events(
        start: Time,
        end: EndTime = None,
        calendar: Annotated[str | None, Field(max_length=60)] = None,
        timezone: Zone = zone_default,
    ) -> Events:
        """Events from start to end (a date alone: that day), recurring ones expanded."""
        return await service.events(start, end, calendar, timezone)

    @mcp.tool(**read(title="Search events", context=("timezone",)))
    async def search_events(
        query: Annotated[str, Field(min_length=1, max_length=200, description="Title words")],
        start: Annotated[str | None, Field(max_length=40)] = None,
        end: EndTime = None,
        timezone: Zone = zone_default,
    ) -> Events:
        """Events whose title or place matches the words, typos too (default: from a month
        ago to a year ahead)."""
        return await service.search(query, start, end, timezone)

    @mcp.tool(**read(title="Free time", context=("timezone",)))
    async def find_free_time(
        duration_minutes: Annotated[int, Field(ge=5, le=24 * 60)],
        start: Time,
        *,
        end: EndTime = None,
        work_start: Annotated[str | None, Field(max_length=5)] = None,
        work_end: Annotated[str | None, Field(max_length=5)] = None,
        include_weekends: bool = False,
        timezone: Zone = zone_default,
    ) -> FreeTime:
        """Free slots of duration_minutes or more from start to end, within working hours
        (HH:MM; default: the settings')."""
        return await service.free_time(
            duration_minutes,
            start,
            end=end,
            work_start=work_start,
            work_end=work_end,
            weekends=include_weekends,
            timezone=timezone,
        )


def add_producer_tools(
    mcp: FastMCP[Any], proposals: Proposals, consent: Consent, zone_default: str
) -> None:
    @mcp.tool(**producer(title="Propose an event", context=CONTEXT))
    async def propose_event_add(
        title: Annotated[str, Field(min_length=1, max_length=200)],
        start: Time,
        *,
        end: EndTime = None,
        duration_minutes: Annotated[int | None, Field(ge=1, le=7 * 24 * 60)] = None,
        calendar: Annotated[str | None, Field(max_length=60)] = None,
        recurrence: Annotated[
            str | None,
            Field(
                max_length=200,
                description=(
                    "RRULE, e.g. FREQ=WEEKLY;BYDAY=MO; the last day of every month (what "
                    "'monthly on the 31st' means): FREQ=MONTHLY;BYMONTHDAY=-1"
                ),
            ),
        ] = None,
        location: Annotated[str | None, Field(max_length=200)] = None,
        description: Annotated[str | None, Field(max_length=2000)] = None,
        agent: ContextAgent = "default",
        timezone: Zone = zone_default,
    ) -> Proposal:
        """Propose adding an event (a date alone: all day); it lists the events it overlaps."""
        proposal = await proposals.propose_add(
            agent,
            timezone,
            title=title,
            start=start,
            end=end,
            minutes=duration_minutes,
            calendar=calendar,
            rule=recurrence,
            location=location,
            description=description,
        )
        return await consent.offer(proposal)

    @mcp.tool(**producer(title="Propose moving an event", context=CONTEXT))
    async def propose_event_move(
        event: EventName,
        start: Annotated[Time, Field(description="The new start")],
        *,
        end: EndTime = None,
        occurrence: Occurrence = None,
        scope: Scope = "this",
        agent: ContextAgent = "default",
        timezone: Zone = zone_default,
    ) -> Proposal:
        """Propose moving an event; it keeps its length unless end is given."""
        proposal = await proposals.propose_move(
            agent, timezone, event=event, occurrence=occurrence, scope=scope, start=start, end=end
        )
        return await consent.offer(proposal)

    @mcp.tool(**producer(title="Propose cancelling an event", context=CONTEXT))
    async def propose_event_cancel(
        event: EventName,
        occurrence: Occurrence = None,
        scope: Scope = "this",
        agent: ContextAgent = "default",
        timezone: Zone = zone_default,
    ) -> Proposal:
        """Propose cancelling (deleting) an event."""
        proposal = await proposals.propose_cancel(agent, timezone, event, occurrence, scope)
        return await consent.offer(proposal)
