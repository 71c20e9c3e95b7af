"""A bound client's proposals on their way to the user's chat: a burst goes in one message,
at most so many wait for the user, a chat gets them at a bounded pace, and a notice that
does not reach its chat is tried again, or, refused for good, fails its proposals saying why.

The in-process server on an injected clock; the orchestrator's part is played by calls of
``next_notices`` (what it would report after trying to send each notice)."""

from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import Clock
from fakes.tool_calls import call
from mcp_pending_actions.server import build_server
from mcp_pending_actions.settings import PendingSettings
from pending_actions.calls import (
    AGENT,
    CLIENT,
    EGGS,
    MILK,
    USER,
    approve,
    approve_batch,
    audit,
    notices,
    stage_for_client,
    write_fleet,
)

pytestmark = pytest.mark.anyio

REFUSED_FOR_GOOD = "Telegram refused the message: chat not found"


@pytest.fixture(autouse=True)
def fleet(settings: PendingSettings) -> Path:
    write_fleet(settings.agents, {})
    return settings.agents


def proposal(number: int) -> dict[str, Any]:
    return {**MILK, "summary": f"Add item {number}", "payload": {"item": f"item {number}"}}


async def status(client: Client[Any], action_id: str) -> dict[str, Any]:
    return await call(
        client, "action_status", action_id=action_id, agent=AGENT, user_id=USER, server="shopping"
    )


async def stage_as(session: Client[Any], name: str, proposed: dict[str, Any]) -> dict[str, Any]:
    """``proposed`` staged for USER as the client ``name`` (another than CLIENT)."""
    defaults = {"server": "shopping", "agent": AGENT, "user_id": USER, "client": name}
    result = await session.call_tool("stage_for_client", {**defaults, "proposal": proposed})
    assert result.structured_content is not None
    return result.structured_content


async def refusal(client: Client[Any], **arguments: Any) -> str:
    """The error of a stage_for_client call that must fail (MILK from CLIENT for USER)."""
    defaults = {"server": "shopping", "agent": AGENT, "user_id": USER, "client": CLIENT}
    result = await client.call_tool(
        "stage_for_client", {**defaults, "proposal": MILK, **arguments}, raise_on_error=False
    )
    assert result.is_error
    return str(result.content[0].text)  # type: ignore[union-attr]


async def test_a_clients_proposals_before_its_notice_is_handed_out_share_one_message_only(
    client: Client[Any], clock: Clock
) -> None:
    first = [await stage_for_client(client, proposal(n)) for n in range(3)]
    [shown] = await notices(client)
    later = await stage_for_client(client, proposal(3))  # after the message was handed out
    clock.advance(5)  # the chat's pace
    [next_one] = await notices(client, ack=[shown["key"]])
    decided = await approve_batch(
        client, shown["batch"]["batch_id"], chat_id=USER, message_key=shown["key"]
    )

    assert [a["action_id"] for a in shown["batch"]["actions"]] == [s["action_id"] for s in first]
    assert [a["action_id"] for a in next_one["batch"]["actions"]] == [later["action_id"]]
    assert next_one["key"] != shown["key"]
    # Confirm all in the first message decides what it shows, never the later proposal.
    assert [d["action_id"] for d in decided["decisions"]] == [s["action_id"] for s in first]
    assert (await status(client, later["action_id"]))["state"] == "pending"
    forged = await approve(client, later["action_id"], chat_id=USER, message_key=shown["key"])
    assert (forged["ok"], forged["reason"]) == (False, "not found")


async def test_past_the_bound_a_client_is_told_how_many_wait_and_nothing_is_staged(
    settings: PendingSettings, clock: Clock
) -> None:
    bounded = settings.model_copy(update={"client_max_pending": 3})
    async with Client(build_server(bounded, clock=clock)) as client:
        staged = [await stage_for_client(client, proposal(n)) for n in range(3)]
        refused = await refusal(client)
        other_client = await stage_as(client, "nightly-script", MILK)
    async with Client(build_server(bounded, clock=clock)) as restarted:
        after_restart = await refusal(restarted)
        [shown] = await notices(restarted)
        await approve(restarted, staged[0]["action_id"], chat_id=USER, message_key=shown["key"])
        once_decided = await stage_for_client(restarted, EGGS)
        entries = await audit(restarted)

    assert refused.startswith("Not proposed: 3 of your proposals already wait for the user's")
    assert "Nothing was staged" in refused
    assert after_restart == refused  # the bound is in the database, not in a process
    assert other_client["state"] == "pending"  # another client's proposals are its own
    assert once_decided["state"] == "pending"  # one decided: room for one more
    proposed = [e["summary"] for e in entries if e["event"] == "proposed"]
    assert proposed == ["Add item 0", "Add item 1", "Add item 2", MILK["summary"], EGGS["summary"]]


async def test_a_chat_gets_at_most_one_message_of_client_proposals_per_interval(
    client: Client[Any], clock: Clock
) -> None:
    await stage_for_client(client)
    [first] = await notices(client)
    await stage_as(client, "nightly-script", EGGS)  # another client, same chat

    too_soon = await notices(client, ack=[first["key"]])
    clock.advance(4.9)
    still_too_soon = await notices(client)
    clock.advance(0.1)
    [second] = await notices(client)

    assert too_soon == still_too_soon == []
    assert second["client"] == "nightly-script"


async def test_an_undelivered_notice_is_handed_out_again_after_a_doubling_wait(
    client: Client[Any], clock: Clock
) -> None:
    staged = await stage_for_client(client)
    [notice] = await notices(client)
    why = "Telegram rate-limits this chat for 60 s"
    undelivered = [{"key": notice["key"], "reason": why}]

    during_first_wait = await notices(client, undelivered=undelivered)
    waiting = await status(client, staged["action_id"])
    clock.advance(2)
    [again] = await notices(client)
    await notices(client, undelivered=undelivered)
    clock.advance(2)
    during_second_wait = await notices(client)
    clock.advance(2)
    [third] = await notices(client)
    await notices(client, ack=[third["key"]])
    shown = await status(client, staged["action_id"])

    assert during_first_wait == during_second_wait == []
    assert again["key"] == third["key"] == notice["key"]
    assert (waiting["state"], waiting["shown_at"], waiting["not_shown"]) == ("pending", None, why)
    assert (shown["state"], shown["shown_at"], shown["not_shown"]) == ("pending", clock(), None)


async def test_a_notice_refused_for_good_fails_its_proposals_with_the_reason_in_the_ledger(
    settings: PendingSettings, clock: Clock
) -> None:
    bounded = settings.model_copy(update={"client_max_pending": 2})
    async with Client(build_server(bounded, clock=clock)) as client:
        staged = [await stage_for_client(client, proposal(n)) for n in range(2)]
        [notice] = await notices(client)
        refused = [{"key": notice["key"], "reason": REFUSED_FOR_GOOD, "final": True}]

        after = await notices(client, undelivered=refused)
        clock.advance(3600)
        never_again = await notices(client)
        failed = [await status(client, s["action_id"]) for s in staged]
        room_again = await stage_for_client(client, EGGS)  # failed ones no longer wait
        entries = [(e["event"], e["summary"], e["outcome"]) for e in await audit(client)]

    assert after == never_again == []
    assert {f["state"] for f in failed} == {"failed"}
    assert all(REFUSED_FOR_GOOD in f["error"] for f in failed)
    assert failed[0]["error"].startswith("Never shown to the user, so nothing was changed")
    assert (failed[0]["shown_at"], failed[0]["not_shown"]) == (None, None)
    assert room_again["state"] == "pending"
    assert [e for e in entries if e[0] == "failed"] == [
        ("failed", f"Add item {n}", failed[n]["error"]) for n in range(2)
    ]
