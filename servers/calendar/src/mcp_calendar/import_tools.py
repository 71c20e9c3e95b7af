"""The orchestrator's tool for a calendar file a user sends in chat (``imports.py``).

``stage_import`` is internal: the orchestrator calls it with the file's text, never the model.
It returns the import's Proposal through the consent kernel, as a producer tool does, and
the orchestrator stages it in the chat like any other; ``confirm_import_events`` (the
kernel's) performs it after the user's tap.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from mcp_calendar.imports import MAX_ICS_CHARS, Imports
from mcp_calendar.tools import Zone
from meshkit.consent import Consent
from meshkit.params import Agent
from meshkit.tool_classes import internal
from meshkit.wire.proposals import Proposal

# No string in a request is longer than the request (MESH_MAX_BODY_BYTES): the schema's bound.
# The file's own, MAX_ICS_CHARS, is checked by the tool, whose refusal is one line a person reads.
MAX_REQUEST_CHARS = 1_048_576
IcsText = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_REQUEST_CHARS,
        description=f"The file's text, as the user sent it (at most {MAX_ICS_CHARS:,} characters)",
    ),
]
CalendarId = Annotated[
    str | None,
    Field(max_length=60, description="The calendar to import into (default: the default one)"),
]
FileName = Annotated[
    str | None, Field(max_length=255, description="The file's name, as the user sent it")
]


def add_import_tools(
    mcp: FastMCP[Any], imports: Imports, consent: Consent, zone_default: str
) -> None:
    @mcp.tool(**internal(title="Stage a calendar file for import"))
    async def stage_import(
        agent: Agent,
        ics: IcsText,
        calendar: CalendarId = None,
        file_name: FileName = None,
        timezone: Zone = zone_default,
    ) -> Proposal:
        """Read an iCalendar (.ics) file a user sent and propose importing its events;
        nothing is imported before the user's tap (confirm_import_events)."""
        proposal = await imports.stage(
            agent, ics, calendar=calendar, file_name=file_name, timezone=timezone
        )
        return await consent.offer(proposal)
