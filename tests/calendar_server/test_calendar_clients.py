"""A client bound to a person (Claude Desktop over stdio) proposes calendar changes through
the consent kernel: each is staged at once with pending-actions (MESH_RELAY_URL) for that
person to confirm on Telegram, and nothing changes by the proposal or by the client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from fastmcp import Client

from calendar_server.calls import START, mint
from fakes.clock import Clock
from fakes.pending_relay import PendingRelay, pending_relay
from fakes.tool_calls import call, call_error
from mcp_calendar.server import build_server
from mcp_calendar.settings import CalendarSettings
from meshkit.bindings import bind_local_client
from meshkit.credentials import Binding, Caller
from meshkit.proposals import SHOWN_NOTE
from meshkit.tool_classes import PRODUCER, READ

pytestmark = pytest.mark.anyio
AGENT = "clawdia"
DESKTOP = Caller("claude-desktop", frozenset({READ, PRODUCER}), Binding(AGENT, "1001"))


@pytest.fixture
def relay() -> Iterator[tuple[PendingRelay, str]]:
    with pending_relay(START) as served:
        yield served


@pytest.fixture
async def desktop(
    settings: CalendarSettings, clock: Clock, relay: tuple[PendingRelay, str]
) -> AsyncIterator[Client[Any]]:
    server = build_server(settings.model_copy(update={"relay_url": relay[1]}), clock=clock)
    bind_local_client(server, DESKTOP)
    async with Client(server) as client:
        yield client


async def test_a_clients_event_is_staged_for_its_person_and_added_by_nobody(
    desktop: Client[Any], relay: tuple[PendingRelay, str], clock: Clock
) -> None:
    fake, _ = relay
    proposal = await call(desktop, "propose_event_add", title="Dentist", start="2026-03-18T15:00")
    assert proposal["staged"]["action_id"] == "act_000000000001"
    assert proposal["note"] == SHOWN_NOTE
    [staged] = fake.staged
    assert (staged.server, staged.agent, staged.user_id, staged.client) == (
        "calendar",
        AGENT,
        "1001",
        "claude-desktop",
    )
    assert staged.proposal.kind == "event_add"
    assert staged.proposal.summary.startswith("Add “Dentist” Wed 18 Mar")

    status = await call(desktop, "get_action", action_id="act_000000000001")
    assert (status["state"], status["kind"]) == ("pending", "event_add")
    token = mint(clock, "event_add", proposal["payload"])
    refused = await call_error(
        desktop, "confirm_event_add", payload=proposal["payload"], approval=token
    )
    assert refused.startswith("forbidden (403)")
    events = await call(desktop, "get_events", start="2026-03-18")
    assert events["events"] == []


async def test_a_clients_proposal_is_checked_before_it_is_staged(
    desktop: Client[Any], relay: tuple[PendingRelay, str]
) -> None:
    fake, _ = relay
    refused = await call_error(desktop, "propose_event_cancel", event="Dentist")
    assert "Dentist" in refused
    assert fake.staged == []
