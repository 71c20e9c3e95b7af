"""Taps that race, an orchestrator that crashes mid-confirm, a server that restarts."""

from typing import Any

import anyio
import pytest
from fastmcp import Client

from fakes.clock import Clock
from fakes.tool_calls import call
from mcp_pending_actions.server import build_server
from mcp_pending_actions.settings import PendingSettings
from meshkit.proposals import Approvals
from pending_actions.calls import AGENT, MILK, USER, approve, cancel, stage, transitions

pytestmark = pytest.mark.anyio

TAPS = 10


async def test_ten_approvals_at_once_let_exactly_one_through(
    client: Client[Any], approvals: Approvals
) -> None:
    action_id = (await stage(client))["action_id"]
    decisions: list[dict[str, Any]] = []

    async def tap() -> None:
        decisions.append(await approve(client, action_id))

    async with anyio.create_task_group() as taps:
        for _ in range(TAPS):
            taps.start_soon(tap)

    [winner] = [d for d in decisions if d["ok"]]
    losers = [(d["state"], d["reason"], d["approval"]) for d in decisions if not d["ok"]]
    assert losers == [("executing", "being done right now", None)] * (TAPS - 1)
    approvals.check(winner["approval"], "shopping", "add_item", MILK["payload"], agent=AGENT)
    assert await transitions(client, action_id) == [(None, "pending"), ("pending", "executing")]


async def test_two_servers_on_one_database_approve_an_action_once(
    settings: PendingSettings, clock: Clock
) -> None:
    """Each server has its own connection: only the conditional update keeps them apart."""
    async with (
        Client(build_server(settings, clock=clock)) as first,
        Client(build_server(settings, clock=clock)) as second,
    ):
        action_id = (await stage(first))["action_id"]
        decisions: list[dict[str, Any]] = []

        async def tap(client: Client[Any]) -> None:
            decisions.append(await approve(client, action_id))

        async with anyio.create_task_group() as taps:
            for index in range(TAPS):
                taps.start_soon(tap, (first, second)[index % 2])

        assert sum(d["ok"] for d in decisions) == 1
        assert await transitions(second, action_id) == [
            (None, "pending"),
            ("pending", "executing"),
        ]


async def test_approve_and_cancel_at_once_decide_the_action_once(client: Client[Any]) -> None:
    action_id = (await stage(client))["action_id"]
    decisions: list[dict[str, Any]] = []

    async def tap(decide: Any) -> None:
        decisions.append(await decide(client, action_id))

    async with anyio.create_task_group() as taps:
        for index in range(TAPS):
            taps.start_soon(tap, (approve, cancel)[index % 2])

    [winner] = [d for d in decisions if d["ok"]]
    assert {d["state"] for d in decisions} == {winner["state"]}
    assert len(await transitions(client, action_id)) == 2


async def test_an_action_stuck_executing_past_the_lease_can_be_approved_again(
    client: Client[Any], clock: Clock, approvals: Approvals
) -> None:
    action_id = (await stage(client, user_id=USER))["action_id"]
    first = await approve(client, action_id)

    clock.advance(59)
    within_lease = await approve(client, action_id)
    clock.advance(1)
    elsewhere = await approve(client, action_id, chat_id="43")
    resumed = await approve(client, action_id)
    twice = await approve(client, action_id)
    done = await call(client, "complete", action_id=action_id, result={"added": "milk"})

    assert (within_lease["ok"], within_lease["reason"]) == (False, "being done right now")
    assert (elsewhere["ok"], elsewhere["reason"]) == (False, "not found")
    assert (resumed["ok"], resumed["resumed"], resumed["state"]) == (True, True, "executing")
    assert resumed["approval"] != first["approval"]
    approvals.check(resumed["approval"], "shopping", "add_item", MILK["payload"], agent=AGENT)
    assert (twice["ok"], twice["reason"]) == (False, "being done right now")
    assert done["state"] == "done"
    history = await call(client, "history", action_id=action_id)
    assert [(e["from_state"], e["to_state"], e["detail"]) for e in history["events"]] == [
        (None, "pending", None),
        ("pending", "executing", None),
        (
            "executing",
            "executing",
            "approved again: the previous approval was never completed",
        ),
        ("executing", "done", None),
    ]


async def test_a_restart_between_stage_and_approve_loses_nothing(
    settings: PendingSettings, clock: Clock, approvals: Approvals
) -> None:
    async with Client(build_server(settings, clock=clock)) as before:
        staged = await stage(before, batch_text="Shall I add milk?")

    clock.advance(30)
    async with Client(build_server(settings, clock=clock)) as after:
        approved = await approve(after, staged["action_id"])
        again = await approve(after, staged["action_id"])
        batch = await call(after, "get_batch", batch_id=staged["batch_id"])

    assert approved["ok"] is True
    approvals.check(approved["approval"], "shopping", "add_item", MILK["payload"], agent=AGENT)
    assert (again["ok"], again["state"]) == (False, "executing")
    assert batch["text"] == "Shall I add milk?"
    assert [a["state"] for a in batch["actions"]] == ["executing"]
