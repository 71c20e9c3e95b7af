"""The calendar MCP surface: read and producer tools over CalendarService, confirm tools over
Confirmations, whatever the backend."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from mcp_calendar.backend import Backend
from mcp_calendar.confirmations import Confirmations
from mcp_calendar.local import LocalBackend, default_calendar
from mcp_calendar.models import Added, Calendars, Cancelled, Events, FreeTime, Moved, ScopeName
from mcp_calendar.proposals import Proposals
from mcp_calendar.records import ConfirmationRecords
from mcp_calendar.service import CalendarService
from mcp_calendar.settings import CalendarSettings
from mcp_calendar.store import CalendarStore
from meshkit.approval_keys import public_key
from meshkit.proposals import Approvals, Proposal
from meshkit.server import create_server
from meshkit.settings import load_settings
from meshkit.tool_classes import confirm, producer, read

INSTRUCTIONS = (
    "The user's calendar. Times without an offset are the user's local time; every answer "
    "names its zone. Find an event with search_events or get_events before changing it. "
    "Changes are proposals the user confirms with a tap; recurring events take a scope "
    "(this occurrence, this and following, or the whole series)."
)
CONTEXT = ("agent", "timezone")
GOOGLE_DB_FILE = "calendar_google.sqlite3"  # the google backend's confirm-once record

Agent = Annotated[
    str, Field(description="filled in by the assistant", min_length=1, max_length=200)
]
Time = Annotated[
    str,
    Field(
        min_length=1,
        max_length=40,
        description="YYYY-MM-DDTHH:MM in the user's zone (or with an offset), or a date "
        "YYYY-MM-DD / today / tomorrow for a whole day",
    ),
]
EndTime = Annotated[
    str | None,
    Field(
        max_length=40,
        description="Like start; a date is the last day, inclusive (default: one day, or "
        "for a timed start one hour / the event's length)",
    ),
]
EventName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="The event's title in the user's words ('the dentist') or its id",
    ),
]
Occurrence = Annotated[
    str | None,
    Field(
        max_length=40,
        description="Which occurrence: its 'occurrence' from get_events, or its date "
        "(default: the next one)",
    ),
]
Scope = Annotated[
    ScopeName,
    Field(
        description="For a recurring event: 'this' occurrence, 'following' (this and every "
        "later one) or the whole 'series'; ignored for a single event"
    ),
]
Zone = Annotated[
    str, Field(max_length=64, description="The user's IANA time zone (filled in by the assistant)")
]
Payload = Annotated[
    dict[str, Any], Field(description="The proposal's payload, exactly as it was proposed")
]
ApprovalToken = Annotated[
    str,
    Field(
        max_length=500,
        description="The approval token pending-actions minted when the user tapped Confirm",
    ),
]


def build_server(
    settings: CalendarSettings | None = None, *, clock: Callable[[], float] = time.time
) -> FastMCP[Any]:
    """The calendar server; ``settings`` default to the environment (embedded mode)."""
    settings = settings or load_settings(CalendarSettings)
    store: CalendarStore | ConfirmationRecords
    backend: Backend
    if settings.backend == "google":
        store, backend = _google_backend(settings, clock)
    else:
        store = CalendarStore(settings.db_path, max_bytes=settings.max_db_bytes, clock=clock)
        backend = LocalBackend(store)
    service = CalendarService(settings, backend, clock=clock)
    proposals = Proposals(settings, backend, service)
    confirmations = Confirmations(backend, Approvals(public_key(settings), clock=clock))
    zone_default = settings.timezone

    @asynccontextmanager
    async def lifespan(_: FastMCP[Any]) -> AsyncIterator[None]:
        async with store.lifespan():
            if isinstance(store, CalendarStore):
                await store.ensure_calendar(default_calendar(settings.default_calendar))
            yield

    mcp = create_server(
        "calendar",
        version=version("mcp-calendar"),
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        checks={"calendar": service.check},
        stores=[store],
    )

    # --- read ----------------------------------------------------------------------------

    @mcp.tool(**read(title="Calendars", context=("timezone",)))
    async def list_calendars(timezone: Zone = zone_default) -> Calendars:
        """The calendars, which of them can be changed, and the one new events go to."""
        return await service.calendars(timezone)

    @mcp.tool(**read(title="Events", context=("timezone",)))
    async def get_events(
        start: Time,
        end: EndTime = None,
        calendar: Annotated[str | None, Field(max_length=60)] = None,
        timezone: Zone = zone_default,
    ) -> Events:
        """The events between start and end (a date alone: that whole day), recurring ones
        expanded, in local time. 'What's on tomorrow?' is start='tomorrow'."""
        return await service.events(start, end, calendar, timezone)

    @mcp.tool(**read(title="Search events", context=("timezone",)))
    async def search_events(
        query: Annotated[str, Field(min_length=1, max_length=200, description="Title words")],
        start: Annotated[
            str | None, Field(max_length=40, description="Default: a month ago")
        ] = None,
        end: EndTime = None,
        timezone: Zone = zone_default,
    ) -> Events:
        """Events whose title (or place) matches the words, typos too; by default from a
        month ago to a year ahead."""
        return await service.search(query, start, end, timezone)

    @mcp.tool(**read(title="Free time", context=("timezone",)))
    async def find_free_time(
        duration_minutes: Annotated[int, Field(ge=5, le=24 * 60)],
        start: Time,
        *,
        end: EndTime = None,
        work_start: Annotated[str | None, Field(max_length=5, description="HH:MM")] = None,
        work_end: Annotated[str | None, Field(max_length=5, description="HH:MM")] = None,
        include_weekends: bool = False,
        timezone: Zone = zone_default,
    ) -> FreeTime:
        """Free stretches of at least that many minutes within working hours (default
        from the settings), between start and end. All-day events do not block time."""
        return await service.free_time(
            duration_minutes,
            start,
            end=end,
            work_start=work_start,
            work_end=work_end,
            weekends=include_weekends,
            timezone=timezone,
        )

    # --- producer ------------------------------------------------------------------------

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
            Field(max_length=200, description="An RRULE, e.g. FREQ=WEEKLY;BYDAY=MO (optional)"),
        ] = None,
        location: Annotated[str | None, Field(max_length=200)] = None,
        description: Annotated[str | None, Field(max_length=2000)] = None,
        agent: Agent = "default",
        timezone: Zone = zone_default,
    ) -> Proposal:
        """Propose adding an event (a date alone: all day). Nothing changes until the user
        taps Add; the proposal lists the events it overlaps."""
        return await proposals.propose_add(
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

    @mcp.tool(**producer(title="Propose moving an event", context=CONTEXT))
    async def propose_event_move(
        event: EventName,
        start: Annotated[Time, Field(description="The new start (local time, or a date)")],
        *,
        end: EndTime = None,
        occurrence: Occurrence = None,
        scope: Scope = "this",
        agent: Agent = "default",
        timezone: Zone = zone_default,
    ) -> Proposal:
        """Propose moving an event to a new start (it keeps its length unless end is given).
        Nothing changes until the user taps Move. When several events match, the error
        lists them: ask the user which one."""
        return await proposals.propose_move(
            agent, timezone, event=event, occurrence=occurrence, scope=scope, start=start, end=end
        )

    @mcp.tool(**producer(title="Propose cancelling an event", context=CONTEXT))
    async def propose_event_cancel(
        event: EventName,
        occurrence: Occurrence = None,
        scope: Scope = "this",
        agent: Agent = "default",
        timezone: Zone = zone_default,
    ) -> Proposal:
        """Propose cancelling (deleting) an event. Nothing changes until the user taps
        Cancel event. When several events match, the error lists them: ask which one."""
        return await proposals.propose_cancel(agent, timezone, event, occurrence, scope)

    # --- confirm (only the orchestrator, after a tap) --------------------------------------

    @mcp.tool(**confirm(title="Add an event"))
    async def confirm_event_add(payload: Payload, approval: ApprovalToken) -> Added:
        """Perform an approved event_add proposal. Needs the user's approval token."""
        return await confirmations.add(payload, approval)

    @mcp.tool(**confirm(title="Move an event"))
    async def confirm_event_move(payload: Payload, approval: ApprovalToken) -> Moved:
        """Perform an approved event_move proposal. Needs the user's approval token."""
        return await confirmations.move(payload, approval)

    @mcp.tool(**confirm(title="Cancel an event", destructive=True))
    async def confirm_event_cancel(payload: Payload, approval: ApprovalToken) -> Cancelled:
        """Perform an approved event_cancel proposal. Needs the user's approval token."""
        return await confirmations.cancel(payload, approval)

    return mcp


def _google_backend(
    settings: CalendarSettings, clock: Callable[[], float]
) -> tuple[ConfirmationRecords, Backend]:
    """The Google backend and its confirm-once record. Google's client libraries
    (google-api-python-client, google-auth, httplib2: about 250 modules and 15 MiB) are
    imported here, where this backend is built, so a local calendar never loads them."""
    from mcp_calendar.google import GoogleBackend  # noqa: PLC0415 (an optional backend)
    from mcp_calendar.google_api import GoogleClient  # noqa: PLC0415 (an optional backend)

    records = ConfirmationRecords(
        settings.data_dir / GOOGLE_DB_FILE, max_bytes=settings.max_db_bytes, clock=clock
    )
    return records, GoogleBackend(settings.ids, GoogleClient(settings), records)
