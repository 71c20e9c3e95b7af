"""What the calendar tests share: tool calls, approvals as pending-actions mints them."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from fastmcp import Client

from fakes.approval_keys import signer
from fakes.clock import Clock
from fakes.tool_calls import call
from meshkit.wire.proposals import Proposal

BERLIN = "Europe/Berlin"
SYDNEY = "Australia/Sydney"
START = datetime(2026, 3, 16, 8, tzinfo=UTC).timestamp()  # Mon 16 Mar 2026, 09:00 in Berlin

# Each rule the probes sent (and kin), and the words the refusal must name it by.
HOSTILE = [
    ("FREQ=SECONDLY;COUNT=100000000", "FREQ=SECONDLY repeats more often than hourly"),
    ("FREQ=MINUTELY", "FREQ=MINUTELY repeats more often than hourly"),
    ("FREQ=DAILY;INTERVAL=0", "INTERVAL=0 must be a whole number from 1 to 1000"),
    ("FREQ=WEEKLY;COUNT=100000000", "COUNT=100000000 must be a whole number from 1 to 5000"),
    ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", "BYMONTH=2;BYMONTHDAY=30 never happens"),
    ("FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30", "BYMONTH=2;BYMONTHDAY=30 never happens"),
    ("FREQ=MONTHLY;BYDAY=MO;BYSETPOS=6", "BYDAY=MO;BYSETPOS=6 never happens"),
    ("FREQ=HOURLY;BYMINUTE=0,15,30,45", "makes 96 occurrences a day; at most 24"),
    ("FREQ=HOURLY;BYSETPOS=2", "BYSETPOS does not go with FREQ=HOURLY"),
]


def mint(
    clock: Clock,
    kind: str,
    payload: dict[str, Any],
    action_id: str | None = None,
    agent: str | None = None,
) -> str:
    """An approval token, as pending-actions mints it when the user taps Confirm (for the
    agent the action was staged for: the payload's own unless ``agent`` says otherwise)."""
    action = action_id or f"act_{secrets.token_hex(6)}"
    staged_for = payload["agent"] if agent is None else agent
    return signer(clock).mint(action, "calendar", kind, payload, agent=staged_for)


async def propose(client: Client[Any], tool: str, **arguments: Any) -> dict[str, Any]:
    proposal = await call(client, tool, **arguments)
    Proposal.model_validate(proposal)
    return proposal


async def approve(
    client: Client[Any], clock: Clock, proposal: dict[str, Any], action_id: str | None = None
) -> dict[str, Any]:
    """What the orchestrator does after the tap: confirm_<kind> with a fresh token."""
    token = mint(clock, proposal["kind"], proposal["payload"], action_id)
    return await call(
        client, f"confirm_{proposal['kind']}", payload=proposal["payload"], approval=token
    )


async def add(client: Client[Any], clock: Clock, **arguments: Any) -> dict[str, Any]:
    """An event added the way a user does: propose, then tap Add."""
    return await approve(client, clock, await propose(client, "propose_event_add", **arguments))


async def day(client: Client[Any], start: str, **arguments: Any) -> list[tuple[str, str, str]]:
    """(title, start, end) of the events of get_events."""
    found = await call(client, "get_events", start=start, **arguments)
    return [(e["title"], e["start"], e["end"]) for e in found["events"]]
