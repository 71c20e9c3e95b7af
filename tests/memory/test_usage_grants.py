""" "Allow more": the orchestrator stages memory's allow_more proposal with ask=True in the
real pending-actions server, the user's tap there mints the approval, and memory's
confirm_allow_more records one grant for the day, once, whatever replays it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastmcp import Client

from fakes.clock import Clock
from fakes.tool_calls import call, call_error
from mcp_memory.server import build_server
from mcp_memory.settings import MemorySettings
from mcp_pending_actions.server import build_server as build_pending
from mcp_pending_actions.settings import PendingSettings
from memory.usage_calls import ADA, AGENT, BOB, BOUNDS, DAY, PERIODS, record

pytestmark = pytest.mark.anyio

MESSAGE = "reply:1:900"
MORE = {"agent": AGENT, "user": ADA, "day": DAY, "amount": 0.5, "unit": "money"}


@pytest.fixture
async def memory(settings: MemorySettings, clock: Clock) -> AsyncIterator[Client[Any]]:
    async with Client(build_server(settings, clock=clock)) as client:
        yield client


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    """The agent's consent policy: memory's changes go through without a tap (auto)."""
    path = tmp_path / "agents.yaml"
    consent = {"memory.*": "auto"}
    path.write_text(yaml.safe_dump({"agents": {AGENT: {"consent": consent}}}), encoding="utf-8")
    return path


@pytest.fixture
async def pending(
    settings: MemorySettings, fleet: Path, clock: Clock
) -> AsyncIterator[Client[Any]]:
    """pending-actions on the same DATA_DIR, as in embedded mode: it makes the approval key
    pair there, and memory checks its tokens with the public half."""
    pending_settings = PendingSettings(
        max_ttl_s=7 * 24 * 3600,
        executing_lease_s=60,
        notice_lease_s=30,
        data_dir=settings.data_dir,
        agents=fleet,
        approval_signing_key_file=None,
    )
    async with Client(build_pending(pending_settings, clock=clock)) as client:
        yield client


async def tapped(pending: Client[Any], more: dict[str, Any] = MORE) -> tuple[str, str]:
    """The allow_more proposal staged with ask and approved by its user's tap: (action id,
    approval token)."""
    proposal = {
        "kind": "allow_more",
        "summary": "Allow $0.50 more today",
        "payload": more,
        "confirm_label": "➕ Allow $0.50 more today",
    }
    staged = await call(
        pending, "stage", agent=AGENT, chat_id=more["user"], server="memory", proposal=proposal,
        user_id=more["user"], message_key=MESSAGE, ask=True,
    )  # fmt: skip
    assert staged["state"] == "pending"  # asked, though the policy says auto
    decision = await call(
        pending, "approve", action_id=staged["action_id"], user_id=more["user"],
        chat_id=more["user"], agent=AGENT, message_key=MESSAGE,
    )  # fmt: skip
    assert decision["ok"] is True
    return staged["action_id"], decision["approval"]


async def test_an_allow_more_tap_records_one_grant_and_a_replay_grants_nothing_more(
    memory: Client[Any], pending: Client[Any], clock: Clock
) -> None:
    action_id, approval = await tapped(pending)

    first = await call(memory, "confirm_allow_more", payload=MORE, approval=approval)
    clock.advance(10)
    again = await call(memory, "confirm_allow_more", payload=MORE, approval=approval)
    found = await call(memory, "usage_totals", **PERIODS)

    grant = {**MORE, "id": action_id, "at": clock.now - 10}
    granted = {"grant": grant, "needed": True, "message": None}
    assert (first, again) == ({**granted, "replayed": False}, {**granted, "replayed": True})
    assert found["grants"] == [grant]


async def test_the_days_grants_are_in_its_totals_and_the_ranges_in_its_report(
    memory: Client[Any], pending: Client[Any]
) -> None:
    for more in (MORE, {**MORE, "user": BOB}, {**MORE, "day": "2027-01-16"}):
        _, approval = await tapped(pending, more)
        await call(memory, "confirm_allow_more", payload=more, approval=approval)

    today = await call(memory, "usage_totals", **PERIODS)
    since, until = BOUNDS["day_start"], BOUNDS["day_end"]
    everyone = await call(memory, "usage_report", since=since, until=until)
    bobs = await call(memory, "usage_report", since=since, until=until, user=BOB)

    assert sorted(g["user"] for g in today["grants"]) == [ADA, BOB]  # not tomorrow's
    assert len(everyone["grants"]) == 3  # all three were made today
    assert [g["user"] for g in bobs["grants"]] == [BOB]


async def test_a_token_for_another_payload_or_none_at_all_grants_nothing(
    memory: Client[Any], pending: Client[Any]
) -> None:
    _, approval = await tapped(pending)

    more = await call_error(
        memory, "confirm_allow_more", payload={**MORE, "amount": 500.0}, approval=approval
    )
    forged = await call_error(memory, "confirm_allow_more", payload=MORE, approval="yes")
    found = await call(memory, "usage_totals", **PERIODS)

    assert "does not match this change" in more
    assert "needs an approval token" in forged
    assert found["grants"] == []


async def test_a_grant_leaves_the_spend_as_it_was(
    memory: Client[Any], pending: Client[Any]
) -> None:
    await call(memory, "record_usage", records=[record(cost=0.75)])
    _, approval = await tapped(pending)
    await call(memory, "confirm_allow_more", payload=MORE, approval=approval)

    found = await call(memory, "usage_totals", **PERIODS)

    assert found["total"]["day"]["cost"] == 0.75
    assert [g["amount"] for g in found["grants"]] == [0.5]


async def test_an_offer_made_before_another_was_granted_grants_nothing_more(
    memory: Client[Any], pending: Client[Any]
) -> None:
    first = {**MORE, "seen_grants": 0}  # two offers, made before either was granted
    second = {**MORE, "seen_grants": 0}
    _, one = await tapped(pending, first)
    _, two = await tapped(pending, second)

    granted = await call(memory, "confirm_allow_more", payload=first, approval=one)
    again = await call(memory, "confirm_allow_more", payload=second, approval=two)
    found = await call(memory, "usage_totals", **PERIODS)

    assert (granted["needed"], again["needed"]) == (True, False)
    assert again["grant"] == granted["grant"]  # the one that made it unnecessary
    assert again["message"].startswith("no longer needed")
    assert len(found["grants"]) == 1
