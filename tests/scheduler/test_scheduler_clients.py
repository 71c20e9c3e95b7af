"""Claude Desktop (a client bound to a person, over stdio) asks the scheduler for a reminder:
the proposal reaches its person through the real pending-actions (MESH_RELAY_URL, the
scheduler's relay credential), nothing is set until the tap, the tap sets it once, and the
client follows it with get_action."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import Clock
from fakes.pending_relay import Relayed, bound_stdio, relayed
from fakes.tool_calls import call, call_error
from mcp_scheduler.server import build_server
from mcp_scheduler.settings import SchedulerSettings
from meshkit.credentials import Binding, Caller
from meshkit.tool_classes import PRODUCER, READ
from meshkit.wire.proposals import QUEUED_NOTE
from scheduler.calls import AGENT, local, mint, settings_for

pytestmark = pytest.mark.anyio
NO_JOBS = "agents: {}\n"
BERLIN = "Europe/Berlin"
ALICE = Binding(AGENT, "1001")
DESKTOP = Caller("claude-desktop", frozenset({READ, PRODUCER}), ALICE)
NOW = local("2026-05-04T12:00")


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW)


@pytest.fixture
def settings(tmp_path: Path) -> SchedulerSettings:
    return settings_for(tmp_path, NO_JOBS)


@pytest.fixture
async def pending(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Relayed]:
    async with relayed(tmp_path, clock, monkeypatch, "scheduler") as served:
        yield served


@pytest.fixture
async def desktop(
    settings: SchedulerSettings, pending: Relayed, clock: Clock
) -> AsyncIterator[Client[Any]]:
    """scheduler --stdio bound to user 1001 of clawdia, with MESH_RELAY_URL and its token."""
    async with bound_stdio(
        build_server(pending.configure(settings), clock=clock), DESKTOP
    ) as client:
        yield client


async def test_a_reminder_from_claude_desktop_waits_for_the_tap_then_is_set_once(
    desktop: Client[Any], pending: Relayed, settings: SchedulerSettings, clock: Clock
) -> None:
    proposal = await call(
        desktop, "propose_reminder", text="call mum", when="2026-05-04T17:00", timezone=BERLIN
    )
    staged = proposal["staged"]
    assert staged["state"] == "pending"
    assert staged["summary"].startswith("⏰ Remind you “call mum” on Mon 4 May, 17:00")
    assert proposal["note"] == QUEUED_NOTE
    assert (await call(desktop, "list_reminders"))["reminders"] == []
    token = mint(clock, "reminder", proposal["payload"])
    refused = await call_error(
        desktop, "confirm_reminder", payload=proposal["payload"], approval=token
    )
    assert refused.startswith("forbidden (403)")
    assert (await call(desktop, "get_action", action_id=staged["action_id"]))["state"] == (
        "pending"
    )

    decision = await pending.tap_confirm("1001", AGENT)
    async with Client(build_server(settings, clock=clock)) as orchestrator:
        confirm = {"payload": decision["payload"], "approval": decision["approval"]}
        done = await call(orchestrator, "confirm_reminder", **confirm)
        again = await call(orchestrator, "confirm_reminder", **confirm)
    await pending.complete(staged["action_id"], done)
    followed = await call(desktop, "get_action", action_id=staged["action_id"])

    assert done["message"] == "Reminder set for Mon 4 May, 17:00"
    assert again == {**done, "replayed": True}
    [reminder] = (await call(desktop, "list_reminders"))["reminders"]
    assert (reminder["text"], reminder["id"]) == ("call mum", done["reminder_id"])
    assert (followed["state"], followed["result"]["message"]) == ("done", done["message"])


async def test_without_a_relay_the_client_is_told_and_nothing_is_staged(
    settings: SchedulerSettings, clock: Clock
) -> None:
    async with bound_stdio(build_server(settings, clock=clock), DESKTOP) as client:
        refused = await call_error(
            client, "propose_reminder", text="call mum", when="2026-05-04T17:00", timezone=BERLIN
        )
    assert "MESH_RELAY_URL is not set" in refused
