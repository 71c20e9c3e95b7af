"""A client bound to a person (Claude Desktop over stdio) proposes reminders through the
consent kernel: each is staged at once with pending-actions (MESH_RELAY_URL) for that person
to confirm on Telegram, and nothing is set by the proposal or by the client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import Clock
from fakes.pending_relay import PendingRelay, pending_relay
from fakes.tool_calls import call, call_error
from mcp_scheduler.server import build_server
from meshkit.bindings import bind_local_client
from meshkit.credentials import Binding, Caller
from meshkit.proposals import SHOWN_NOTE
from meshkit.tool_classes import PRODUCER, READ
from scheduler.calls import AGENT, local, mint, settings_for

pytestmark = pytest.mark.anyio
NO_JOBS = "agents: {}\n"
BERLIN = "Europe/Berlin"
DESKTOP = Caller("claude-desktop", frozenset({READ, PRODUCER}), Binding(AGENT, "1001"))
NOW = local("2026-05-04T12:00")


@pytest.fixture
def relay() -> Iterator[tuple[PendingRelay, str]]:
    with pending_relay(NOW) as served:
        yield served


@pytest.fixture
async def desktop(tmp_path: Path, relay: tuple[PendingRelay, str]) -> AsyncIterator[Client[Any]]:
    settings = settings_for(tmp_path, NO_JOBS).model_copy(update={"relay_url": relay[1]})
    server = build_server(settings, clock=Clock(NOW))
    bind_local_client(server, DESKTOP)
    async with Client(server) as client:
        yield client


async def test_a_clients_reminder_is_staged_for_its_person_and_set_by_nobody(
    desktop: Client[Any], relay: tuple[PendingRelay, str]
) -> None:
    fake, _ = relay
    proposal = await call(
        desktop, "propose_reminder", text="call mum", when="2026-05-04T17:00", timezone=BERLIN
    )
    assert proposal["staged"]["action_id"] == "act_000000000001"
    assert proposal["staged"]["state"] == "pending"
    assert proposal["note"] == SHOWN_NOTE
    [staged] = fake.staged
    assert (staged.server, staged.agent, staged.user_id, staged.client) == (
        "scheduler",
        AGENT,
        "1001",
        "claude-desktop",
    )
    assert staged.proposal.payload["agent"] == AGENT
    assert staged.proposal.summary.startswith("⏰ Remind you “call mum”")
    assert (await call(desktop, "list_reminders"))["reminders"] == []

    status = await call(desktop, "get_action", action_id="act_000000000001")
    assert (status["state"], status["kind"], status["client"]) == (
        "pending",
        "reminder",
        "claude-desktop",
    )
    token = mint(Clock(NOW), "reminder", proposal["payload"])
    refused = await call_error(
        desktop, "confirm_reminder", payload=proposal["payload"], approval=token
    )
    assert refused.startswith("forbidden (403)")
    assert (await call(desktop, "list_reminders"))["reminders"] == []


async def test_without_a_relay_the_client_is_told_and_nothing_is_staged(tmp_path: Path) -> None:
    server = build_server(settings_for(tmp_path, NO_JOBS), clock=Clock(NOW))
    bind_local_client(server, DESKTOP)
    async with Client(server) as client:
        refused = await call_error(
            client, "propose_reminder", text="call mum", when="2026-05-04T17:00", timezone=BERLIN
        )
    assert "MESH_RELAY_URL is not set" in refused
