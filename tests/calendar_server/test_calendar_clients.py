"""Claude Desktop (a client bound to a person, over stdio) asks the calendar for an event:
the proposal reaches its person through the real pending-actions (MESH_RELAY_URL, the
calendar's relay credential), nothing changes until the tap, the tap adds it once, and the
client follows it with get_action."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from calendar_server.calls import mint
from fakes.clock import Clock
from fakes.pending_relay import Relayed, bound_stdio, relayed
from fakes.tool_calls import call, call_error
from mcp_calendar.server import build_server
from mcp_calendar.settings import CalendarSettings
from meshkit.credentials import Binding, Caller
from meshkit.tool_classes import PRODUCER, READ
from meshkit.wire.proposals import QUEUED_NOTE

pytestmark = pytest.mark.anyio
AGENT = "clawdia"
ALICE = Binding(AGENT, "1001")
DESKTOP = Caller("claude-desktop", frozenset({READ, PRODUCER}), ALICE)


@pytest.fixture
async def pending(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Relayed]:
    async with relayed(tmp_path, clock, monkeypatch, "calendar") as served:
        yield served


@pytest.fixture
async def desktop(
    settings: CalendarSettings, clock: Clock, pending: Relayed
) -> AsyncIterator[Client[Any]]:
    """calendar --stdio bound to user 1001 of clawdia, with MESH_RELAY_URL and its token."""
    async with bound_stdio(
        build_server(pending.configure(settings), clock=clock), DESKTOP
    ) as client:
        yield client


async def test_an_event_from_claude_desktop_waits_for_the_tap_then_is_added_once(
    desktop: Client[Any], client: Client[Any], pending: Relayed, clock: Clock
) -> None:
    proposal = await call(desktop, "propose_event_add", title="Dentist", start="2026-03-18T15:00")
    staged = proposal["staged"]
    assert staged["state"] == "pending"
    assert staged["summary"] == "Add “Dentist” Wed 18 Mar 2026, 15:00–16:00 (Europe/Berlin)"
    assert proposal["note"] == QUEUED_NOTE
    token = mint(clock, "event_add", proposal["payload"])
    refused = await call_error(
        desktop, "confirm_event_add", payload=proposal["payload"], approval=token
    )
    assert refused.startswith("forbidden (403)")
    assert (await call(desktop, "get_events", start="2026-03-18"))["events"] == []

    decision = await pending.tap_confirm("1001", AGENT)
    confirm = {"payload": decision["payload"], "approval": decision["approval"]}
    done = await call(client, "confirm_event_add", **confirm)
    again = await call(client, "confirm_event_add", **confirm)
    await pending.complete(staged["action_id"], done)
    followed = await call(desktop, "get_action", action_id=staged["action_id"])

    assert done["replayed"] is False
    assert again == {**done, "replayed": True}
    [event] = (await call(desktop, "get_events", start="2026-03-18"))["events"]
    assert (event["title"], event["start"]) == ("Dentist", "2026-03-18T15:00:00+01:00")
    assert (followed["state"], followed["result"]["message"]) == ("done", done["message"])


async def test_a_clients_proposal_is_checked_before_it_is_staged(desktop: Client[Any]) -> None:
    refused = await call_error(desktop, "propose_event_cancel", event="Dentist")
    assert "Dentist" in refused
