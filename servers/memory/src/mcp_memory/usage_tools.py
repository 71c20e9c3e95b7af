"""The usage tools, internal (the orchestrator's): recording model calls, the totals an
allowance is checked against, reports; and the ``allow_more`` change kind (its confirm
tool comes from the consent kernel). A stored turn's records come with its append_items
(conversation_tools)."""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from mcp_memory.usage import (
    MAX_RECORDS,
    MAX_TOP,
    MAX_WARNED,
    WARNING_KEY,
    UsageService,
    allow_more_summary,
)
from meshkit.consent import ChangeKind, Consent
from meshkit.params import Agent
from meshkit.tool_classes import internal
from meshkit.wire.usage import (
    ALLOW_MORE,
    DAY,
    MAX_TIME,
    MONTH,
    AllowedMore,
    AllowMorePayload,
    Bounds,
    Recorded,
    UsageRecord,
    UsageReport,
    UsageTotals,
)

Records = Annotated[
    list[UsageRecord],
    Field(max_length=MAX_RECORDS, description="Model calls; one recorded before is skipped"),
]
Warned = Annotated[
    list[Annotated[str, Field(pattern=WARNING_KEY, max_length=300)]],
    Field(
        max_length=MAX_WARNED,
        description="Allowance warnings given now (shown in the chat), keyed "
        "<day|month name>:<scope>:<period>[:<user>], e.g. 2026-11-27:agent:day: "
        "usage_totals lists them in their period",
    ),
]
Instant = Annotated[float, Field(ge=0, le=MAX_TIME, description="Unix seconds")]
User = Annotated[str, Field(min_length=1, max_length=200)]


def declare_usage_changes(consent: Consent, service: UsageService) -> None:
    """allow_more, performed by ``service``: a grant recorded once. Tap-only: an assistant
    never raises its own allowance, so every proposal of it waits for the user's tap,
    whatever the fleet's policy (auto) or a running grant says."""
    consent.declare(
        ChangeKind(
            ALLOW_MORE,
            AllowMorePayload,
            AllowedMore,
            title="Allow more",
            summary=allow_more_summary,
            execute=service.allow_more,
            confirm_label="➕ Allow more",
            cancel_label="Not now",
            tap_only=True,
            description="Records a grant: that much more of the agent's allowance for the "
            "user on that day.",
        )
    )


def add_usage_tools(mcp: FastMCP[Any], service: UsageService) -> None:
    @mcp.tool(**internal(title="Record usage", idempotent=True))
    async def record_usage(
        records: Records,
        warned: Warned | None = None,
        agent: Annotated[
            Agent | None,
            Field(description="Whose warnings warned are (default: the records' one agent)"),
        ] = None,
    ) -> Recorded:
        """Keep model calls outside a stored turn (a failed or cut turn, a summary, a
        briefing) and the warnings given; each record is stored once by its id."""
        return await service.record(records, warned or [], agent)

    @mcp.tool(**internal(title="Usage totals", read_only=True, idempotent=True))
    async def usage_totals(
        agent: Agent,
        day: Annotated[
            str, Field(pattern=DAY, max_length=10, description="The agent's day: 2026-11-27")
        ],
        month: Annotated[
            str, Field(pattern=MONTH, max_length=7, description="The agent's month: 2026-11")
        ],
        bounds: Annotated[Bounds, Field(description="That day's and month's bounds")],
    ) -> UsageTotals:
        """The agent's spend in its current day and month, as a whole and per user, with
        the day's grants and the warnings given in these periods."""
        return await service.totals(agent, day, month, bounds)

    @mcp.tool(**internal(title="Usage report", read_only=True, idempotent=True))
    async def usage_report(
        since: Instant,
        until: Instant,
        agent: Annotated[Agent | None, Field(description="Only this agent")] = None,
        user: Annotated[User | None, Field(description="Only this user")] = None,
        top: Annotated[
            int, Field(ge=0, le=MAX_TOP, description="How many of the costliest turns")
        ] = 5,
    ) -> UsageReport:
        """Usage from since (inclusive) to until (exclusive): in total, by purpose, model,
        agent and user, the costliest turns, and the grants made."""
        return await service.report(since, until, agent, user, top)
