"""The pending-actions MCP surface, through an in-memory MCP client against a real SQLite file."""

from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import Clock
from fakes.tool_calls import call, call_error
from meshkit.proposals import ApprovalRefused, Approvals
from pending_actions.calls import (
    AGENT,
    CHAT,
    EGGS,
    MESSAGE,
    MILK,
    USER,
    approve,
    approve_batch,
    cancel,
    cancel_batch,
    stage,
    tap,
    transitions,
)

pytestmark = pytest.mark.anyio

TOOLS = {
    "stage",
    "screen",
    "approve",
    "cancel",
    "approve_batch",
    "cancel_batch",
    "complete",
    "fail",
    "list_pending",
    "get_batch",
    "history",
    "next_notices",
    "list_grants",
    "end_grant",
    "audit",
}
RELAY_TOOLS = {"stage_for_client", "action_status"}


# The tool list


async def test_every_tool_is_internal_or_relay_with_honest_hints(client: Client[Any]) -> None:
    tools = {tool.name: tool for tool in await client.list_tools()}

    assert set(tools) == TOOLS | RELAY_TOOLS
    for name, tool in tools.items():
        assert tool.meta is not None
        assert tool.meta["fastmcp"]["tags"] == ["relay" if name in RELAY_TOOLS else "internal"]
        assert tool.description
    hints = {
        name: (tool.annotations.read_only_hint, tool.annotations.idempotent_hint)
        for name, tool in tools.items()
        if tool.annotations is not None
    }
    assert hints == {
        "stage": (False, False),
        "screen": (False, False),  # a denial is written to the ledger
        "approve": (False, False),  # a retry would lose the token of the first call
        "cancel": (False, True),
        "approve_batch": (False, False),
        "cancel_batch": (False, True),
        "complete": (False, False),
        "fail": (False, False),
        "list_pending": (True, True),
        "get_batch": (True, True),
        "history": (True, True),
        "stage_for_client": (False, False),
        "action_status": (True, True),
        "next_notices": (False, False),
        "list_grants": (True, True),
        "end_grant": (False, True),
        "audit": (True, True),
    }


# Stage, approve, complete


async def test_an_approved_action_carries_a_token_the_confirm_tool_accepts(
    client: Client[Any], clock: Clock, approvals: Approvals
) -> None:
    staged = await stage(client, batch_text="Shall I add milk?")
    action_id = staged["action_id"]

    decision = await approve(client, action_id)

    assert staged["state"] == "pending"
    assert staged["action_id"].startswith("act_")
    assert staged["batch_id"].startswith("bat_")
    assert staged["expires_at"] == clock.now + 4 * 3600
    assert staged["summary"] == MILK["summary"]
    assert decision["ok"] is True
    assert decision["state"] == "executing"
    assert decision["reason"] is None
    assert decision["resumed"] is False
    assert (decision["server"], decision["kind"], decision["payload"]) == (
        "shopping",
        "add_item",
        MILK["payload"],
    )
    approval = approvals.check(
        decision["approval"], "shopping", "add_item", MILK["payload"], agent=AGENT
    )
    assert approval.action_id == action_id
    with pytest.raises(ApprovalRefused):
        approvals.check(decision["approval"], "shopping", "add_item", EGGS["payload"], agent=AGENT)


async def test_a_completed_action_shows_its_result_in_its_batch(client: Client[Any]) -> None:
    staged = await stage(client, batch_text="Shall I add milk?")
    await approve(client, staged["action_id"])

    done = await call(client, "complete", action_id=staged["action_id"], result={"added": "milk"})
    batch = await call(client, "get_batch", batch_id=staged["batch_id"])

    assert (done["state"], done["result"], done["error"]) == ("done", {"added": "milk"}, None)
    assert batch["text"] == "Shall I add milk?"
    assert (batch["agent"], batch["chat_id"]) == (AGENT, CHAT)
    assert batch["actions"] == [done]
    assert done["confirm_label"] == "✅ Confirm"
    assert (await call(client, "list_pending", agent=AGENT, chat_id=CHAT))["actions"] == []


async def test_a_decision_carries_its_batch_as_it_stands_after_it(client: Client[Any]) -> None:
    first = await stage(client, MILK, batch_text="Two things?")
    second = await stage(client, EGGS, batch_id=first["batch_id"])

    approved = await approve(client, first["action_id"])
    batch = approved["batch"]
    assert batch["batch_id"] == first["batch_id"]
    assert batch["text"] == "Two things?"
    assert [(a["action_id"], a["state"]) for a in batch["actions"]] == [
        (first["action_id"], "executing"),
        (second["action_id"], "pending"),
    ]
    cancelled = await cancel_batch(client, first["batch_id"])
    assert [a["state"] for a in cancelled["batch"]["actions"]] == ["executing", "cancelled"]
    assert all(d.get("batch") is None for d in cancelled["decisions"])


async def test_complete_twice_keeps_the_first_result(client: Client[Any]) -> None:
    staged = await stage(client)
    action_id = staged["action_id"]
    await approve(client, action_id)
    await call(client, "complete", action_id=action_id, result={"added": "milk"})

    error = await call_error(client, "complete", action_id=action_id, result={"added": "oat milk"})
    failed = await call_error(client, "fail", action_id=action_id, error="too late")

    assert error.startswith(f"Action {action_id} is done, not executing: nothing was recorded")
    assert failed.startswith(f"Action {action_id} is done, not executing")
    [view] = (await call(client, "get_batch", batch_id=staged["batch_id"]))["actions"]
    assert (view["state"], view["result"], view["error"]) == ("done", {"added": "milk"}, None)
    assert await transitions(client, action_id) == [
        (None, "pending"),
        ("pending", "executing"),
        ("executing", "done"),
    ]


async def test_a_failed_confirm_is_recorded_with_its_reason(client: Client[Any]) -> None:
    staged = await stage(client)
    await approve(client, staged["action_id"])

    failed = await call(client, "fail", action_id=staged["action_id"], error="the list is full")
    again = await approve(client, staged["action_id"])

    assert (failed["state"], failed["error"], failed["result"]) == (
        "failed",
        "the list is full",
        None,
    )
    assert (again["ok"], again["state"], again["reason"]) == (
        False,
        "failed",
        "already tried, and it failed",
    )


async def test_an_action_that_was_never_approved_cannot_be_completed(client: Client[Any]) -> None:
    action_id = (await stage(client))["action_id"]

    error = await call_error(client, "complete", action_id=action_id, result={})
    unknown = await call_error(client, "fail", action_id="act_000000000000", error="x")

    assert error.startswith(f"Action {action_id} is pending, not executing")
    assert unknown == "There is no action 'act_000000000000'."
    assert await transitions(client, action_id) == [(None, "pending")]


# Refusals


async def test_approve_after_cancel_is_refused_and_the_action_stays_cancelled(
    client: Client[Any],
) -> None:
    action_id = (await stage(client))["action_id"]

    cancelled = await cancel(client, action_id)
    approved = await approve(client, action_id)
    cancelled_again = await cancel(client, action_id)

    assert (cancelled["ok"], cancelled["state"], cancelled["approval"]) == (True, "cancelled", None)
    assert (approved["ok"], approved["state"], approved["reason"]) == (
        False,
        "cancelled",
        "cancelled",
    )
    assert approved["approval"] is None
    assert approved["payload"] is None
    assert (cancelled_again["ok"], cancelled_again["reason"]) == (False, "cancelled")
    assert await transitions(client, action_id) == [(None, "pending"), ("pending", "cancelled")]


async def test_approve_after_done_is_refused(client: Client[Any]) -> None:
    action_id = (await stage(client))["action_id"]
    await approve(client, action_id)

    during = await approve(client, action_id)
    await call(client, "complete", action_id=action_id, result={})
    after = await approve(client, action_id)
    cancelled = await cancel(client, action_id)

    assert (during["ok"], during["state"], during["reason"]) == (
        False,
        "executing",
        "being done right now",
    )
    assert (after["ok"], after["state"], after["reason"]) == (False, "done", "already done")
    assert (cancelled["ok"], cancelled["state"]) == (False, "done")


async def test_approve_after_expiry_marks_the_action_expired_and_keeps_it(
    client: Client[Any], clock: Clock
) -> None:
    staged = await stage(client, {**MILK, "ttl_s": 600})

    clock.advance(600)
    approved = await approve(client, staged["action_id"])
    cancelled = await cancel(client, staged["action_id"])
    batch = await call(client, "get_batch", batch_id=staged["batch_id"])
    history = await call(client, "history", action_id=staged["action_id"])

    assert (approved["ok"], approved["state"], approved["reason"]) == (False, "expired", "expired")
    assert approved["approval"] is None
    assert (cancelled["ok"], cancelled["state"]) == (False, "expired")
    assert [action["state"] for action in batch["actions"]] == ["expired"]
    assert [(e["from_state"], e["to_state"], e["at"], e["actor"]) for e in history["events"]] == [
        (None, "pending", clock.now - 600, AGENT),
        ("pending", "expired", clock.now, None),
    ]


async def test_an_action_is_live_until_its_last_second(client: Client[Any], clock: Clock) -> None:
    action_id = (await stage(client, {**MILK, "ttl_s": 600}))["action_id"]

    clock.advance(599.5)

    assert (await approve(client, action_id))["ok"] is True


@pytest.mark.parametrize(
    ("staged_for", "tapped_by"),
    [
        ({}, {"chat_id": "43"}),
        ({"user_id": USER}, {"user_id": "7002"}),
        ({"user_id": USER}, {"user_id": "7002", "chat_id": "43"}),
    ],
    ids=["other-chat", "other-user", "both"],
)
async def test_an_action_of_another_chat_or_user_is_not_found_and_unchanged(
    client: Client[Any], staged_for: dict[str, str], tapped_by: dict[str, str]
) -> None:
    action_id = (await stage(client, MILK, **staged_for))["action_id"]

    approved = await approve(client, action_id, **tapped_by)
    cancelled = await cancel(client, action_id, **tapped_by)

    for decision in (approved, cancelled):
        assert decision == {
            "ok": False,
            "action_id": action_id,
            "batch_id": None,
            "state": "unknown",
            "summary": None,
            "reason": "not found",
            "server": None,
            "kind": None,
            "payload": None,
            "approval": None,
            "resumed": False,
            "batch": None,  # nothing of another chat's batch either
            "granted_until": None,
        }
    assert await transitions(client, action_id) == [(None, "pending")]
    assert (await approve(client, action_id))["ok"] is True  # the right chat and user


async def test_an_action_staged_without_a_user_may_be_decided_by_anyone_in_its_chat(
    client: Client[Any],
) -> None:
    action_id = (await stage(client))["action_id"]

    assert (await cancel(client, action_id, user_id="7002"))["ok"] is True


@pytest.mark.parametrize(
    "action_id", ["act_000000000000", "act_XYZ", "act_0123456789ab\n", "bat_0123456789ab", "milk"]
)
async def test_an_unknown_or_malformed_id_is_not_found(client: Client[Any], action_id: str) -> None:
    approved = await approve(client, action_id)
    cancelled = await cancel(client, action_id)

    for decision in (approved, cancelled):
        assert (decision["ok"], decision["state"], decision["reason"]) == (
            False,
            "unknown",
            "not found",
        )
        assert decision["action_id"] == action_id


# Where a tap is taken from: the agent, chat and message its buttons were sent in


@pytest.mark.parametrize(
    "tapped_from",
    [
        pytest.param({"message_key": "reply:1:901"}, id="another-message"),
        pytest.param({"message_key": "fire:clawdia/prompt/x@2026"}, id="a-forged-key"),
        pytest.param({"agent": "bob"}, id="another-agent"),
        pytest.param(
            {"agent": "bob", "message_key": "reply:1:901"}, id="another-agent-and-message"
        ),
        pytest.param({"chat_id": "43"}, id="another-chat"),
    ],
)
async def test_a_tap_from_anywhere_but_where_the_buttons_were_sent_is_not_found(
    client: Client[Any], tapped_from: dict[str, str]
) -> None:
    first = await stage(client, MILK, user_id=USER)
    second = await stage(client, EGGS, batch_id=first["batch_id"], user_id=USER)

    decisions = [
        await approve(client, first["action_id"], **tapped_from),
        await cancel(client, second["action_id"], **tapped_from),
    ]
    batches = [
        await approve_batch(client, first["batch_id"], **tapped_from),
        await cancel_batch(client, first["batch_id"], **tapped_from),
    ]

    for decision in decisions:
        assert (decision["ok"], decision["state"], decision["reason"]) == (
            False,
            "unknown",
            "not found",
        )
        assert (decision["batch_id"], decision["approval"], decision["batch"]) == (None,) * 3
    assert [(b["decisions"], b["batch"]) for b in batches] == [([], None), ([], None)]
    for staged in (first, second):
        assert await transitions(client, staged["action_id"]) == [(None, "pending")]
    assert (await approve_batch(client, first["batch_id"]))["batch"]["message_key"] == MESSAGE


async def test_a_batch_staged_without_a_message_key_takes_no_tap(client: Client[Any]) -> None:
    staged = await stage(client, shown_in=None)

    approved = await approve(client, staged["action_id"])
    batch = await approve_batch(client, staged["batch_id"])

    assert (approved["ok"], approved["reason"]) == (False, "not found")
    assert batch["decisions"] == []
    assert await transitions(client, staged["action_id"]) == [(None, "pending")]


async def test_a_batch_staged_under_a_key_another_holds_takes_it_over(
    client: Client[Any],
) -> None:
    # A turn redone after a crash stages again under its reply's key: the message shows
    # the second batch's buttons (the first try's are replaced), the first takes no tap.
    first = await stage(client, MILK)
    second = await stage(client, EGGS)
    elsewhere = await stage(client, MILK, chat_id="43")  # the same key in another chat

    refused = await approve(client, first["action_id"])
    approved = await approve(client, second["action_id"])
    other_chat = await approve(client, elsewhere["action_id"], chat_id="43")

    assert (refused["ok"], refused["reason"]) == (False, "not found")
    assert (approved["ok"], approved["state"]) == (True, "executing")
    assert (other_chat["ok"], other_chat["state"]) == (True, "executing")
    assert (await call(client, "get_batch", batch_id=first["batch_id"]))["message_key"] is None


async def test_actions_staged_into_a_batch_take_its_key(client: Client[Any]) -> None:
    first = await stage(client, MILK)
    second = await stage(client, EGGS, batch_id=first["batch_id"])
    where = {"agent": AGENT, "chat_id": CHAT, "server": "shopping", "proposal": EGGS}

    same = await call(client, "stage", batch_id=first["batch_id"], message_key=MESSAGE, **where)
    other = await call_error(
        client, "stage", batch_id=first["batch_id"], message_key="reply:1:901", **where
    )

    assert (await approve(client, second["action_id"]))["ok"] is True
    assert same["batch_id"] == first["batch_id"]
    assert other.startswith(f"Batch {first['batch_id']} is shown under another message key")


# Batches


async def test_actions_staged_into_one_batch_share_it_and_its_first_text(
    client: Client[Any],
) -> None:
    first = await stage(client, batch_text="Milk and eggs?")
    second = await stage(client, EGGS, batch_id=first["batch_id"], batch_text="Ignored")

    batch = await call(client, "get_batch", batch_id=first["batch_id"])

    assert second["batch_id"] == first["batch_id"]
    assert batch["text"] == "Milk and eggs?"
    assert [a["action_id"] for a in batch["actions"]] == [first["action_id"], second["action_id"]]


async def test_a_batch_text_given_later_is_kept(client: Client[Any]) -> None:
    first = await stage(client)
    await stage(client, EGGS, batch_id=first["batch_id"], batch_text="Milk and eggs?")

    assert (await call(client, "get_batch", batch_id=first["batch_id"]))["text"] == "Milk and eggs?"


async def test_approve_batch_approves_the_pending_actions_and_reports_the_others(
    client: Client[Any], clock: Clock, approvals: Approvals
) -> None:
    batch_id = (await stage(client, {**MILK, "ttl_s": 60}))["batch_id"]
    ids = [(await stage(client, EGGS, batch_id=batch_id))["action_id"] for _ in range(3)]
    expiring = (await call(client, "get_batch", batch_id=batch_id))["actions"][0]["action_id"]
    await cancel(client, ids[0])
    await approve(client, ids[1])
    await call(client, "complete", action_id=ids[1], result={"added": "eggs"})
    clock.advance(60)

    result = await approve_batch(client, batch_id)

    decisions = result["decisions"]
    assert result["batch_id"] == batch_id
    assert [d["action_id"] for d in decisions] == [expiring, *ids]
    assert [(d["ok"], d["state"], d["reason"]) for d in decisions] == [
        (False, "expired", "expired"),
        (False, "cancelled", "cancelled"),
        (False, "done", "already done"),
        (True, "executing", None),
    ]
    approvals.check(decisions[3]["approval"], "shopping", "add_item", EGGS["payload"], agent=AGENT)
    again = await approve_batch(client, batch_id)
    assert [d["ok"] for d in again["decisions"]] == [False] * 4


async def test_cancel_batch_cancels_the_pending_actions_and_reports_the_others(
    client: Client[Any],
) -> None:
    first = await stage(client)
    batch_id = first["batch_id"]
    second = (await stage(client, EGGS, batch_id=batch_id))["action_id"]
    await approve(client, first["action_id"])

    result = await cancel_batch(client, batch_id)

    assert [(d["action_id"], d["ok"], d["state"]) for d in result["decisions"]] == [
        (first["action_id"], False, "executing"),
        (second, True, "cancelled"),
    ]
    assert await transitions(client, second) == [(None, "pending"), ("pending", "cancelled")]


async def test_a_batch_of_another_chat_gets_no_decisions(client: Client[Any]) -> None:
    staged = await stage(client)

    approved = await approve_batch(client, staged["batch_id"], chat_id="43")
    cancelled = await cancel_batch(client, staged["batch_id"], chat_id="43")
    unknown = await approve_batch(client, "bat_000000000000")

    assert approved["decisions"] == cancelled["decisions"] == unknown["decisions"] == []
    assert await transitions(client, staged["action_id"]) == [(None, "pending")]


async def test_staging_into_a_batch_of_another_chat_is_refused(client: Client[Any]) -> None:
    batch_id = (await stage(client))["batch_id"]

    foreign = await call_error(
        client,
        "stage",
        agent=AGENT,
        chat_id="43",
        server="shopping",
        proposal=EGGS,
        batch_id=batch_id,
    )
    unknown = await call_error(
        client,
        "stage",
        agent=AGENT,
        chat_id=CHAT,
        server="shopping",
        proposal=EGGS,
        batch_id="bat_000000000000",
    )

    assert foreign.startswith(f"Batch {batch_id} belongs to another agent or chat")
    assert unknown.startswith("There is no batch 'bat_000000000000'")
    assert len((await call(client, "get_batch", batch_id=batch_id))["actions"]) == 1


async def test_an_unknown_batch_is_an_error(client: Client[Any]) -> None:
    error = await call_error(client, "get_batch", batch_id="bat_000000000000")

    assert error == "There is no batch 'bat_000000000000'."


# Listing and history


async def test_list_pending_shows_the_chats_live_actions_oldest_first(
    client: Client[Any], clock: Clock
) -> None:
    short = await stage(client, {**MILK, "ttl_s": 60})
    clock.advance(1)
    first = await stage(client, EGGS)
    clock.advance(1)
    second = await stage(client)
    await stage(client, chat_id="43")
    await stage(client, agent="other")
    await cancel(client, second["action_id"])
    third = await stage(client, EGGS)
    clock.advance(58)

    listed = await call(client, "list_pending", agent=AGENT, chat_id=CHAT)

    assert [a["action_id"] for a in listed["actions"]] == [first["action_id"], third["action_id"]]
    assert await transitions(client, short["action_id"]) == [
        (None, "pending"),
        ("pending", "expired"),  # the sweep marked it
    ]


async def test_the_sweep_marks_every_expired_action(client: Client[Any], clock: Clock) -> None:
    other_chat = await stage(client, {**MILK, "ttl_s": 60}, chat_id="43")
    clock.advance(60)

    await call(client, "list_pending", agent=AGENT, chat_id=CHAT)
    history = await call(client, "history", action_id=other_chat["action_id"])

    assert [(e["to_state"], e["at"]) for e in history["events"]] == [
        ("pending", clock.now - 60),
        ("expired", clock.now),
    ]


async def test_history_shows_every_transition_with_who_and_when(
    client: Client[Any], clock: Clock
) -> None:
    action_id = (await stage(client, user_id=USER))["action_id"]
    clock.advance(5)
    await approve(client, action_id)
    clock.advance(2)
    await call(client, "fail", action_id=action_id, error="the shop is closed")

    history = await call(client, "history", action_id=action_id)

    start = clock.now - 7
    assert history == {
        "action_id": action_id,
        "events": [
            {
                "at": start,
                "from_state": None,
                "to_state": "pending",
                "actor": AGENT,
                "detail": None,
            },
            {
                "at": start + 5,
                "from_state": "pending",
                "to_state": "executing",
                "actor": USER,
                "detail": None,
            },
            {
                "at": start + 7,
                "from_state": "executing",
                "to_state": "failed",
                "actor": None,
                "detail": "the shop is closed",
            },
        ],
    }
    assert (await call_error(client, "history", action_id="act_000000000000")).startswith(
        "There is no action"
    )


# Bad input


async def test_a_ttl_longer_than_the_servers_cap_is_cut(
    settings: Any, clock: Clock, approvals: Approvals
) -> None:
    from mcp_pending_actions.server import build_server

    capped = settings.model_copy(update={"max_ttl_s": 3600})
    async with Client(build_server(capped, clock=clock)) as client:
        staged = await stage(client, {**MILK, "ttl_s": 7200})

    assert staged["expires_at"] == clock.now + 3600


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"agent": " "}, "agent must not be empty."),
        ({"chat_id": "\t"}, "chat_id must not be empty."),
        ({"user_id": " "}, "user_id must not be empty."),
        ({"batch_text": "  "}, "batch_text must not be empty."),
        ({"server": "Shopping"}, "String should match pattern"),
        ({"server": "a" * 41}, "String should have at most 40 characters"),
        ({"batch_text": "x" * 4097}, "String should have at most 4096 characters"),
        ({"agent": ""}, "String should have at least 1 character"),
        ({"batch_id": "b" * 101}, "String should have at most 100 characters"),
        ({"proposal": {**MILK, "summary": ""}}, "String should have at least 1 character"),
        ({"proposal": {**MILK, "kind": "Add"}}, "String should match pattern"),
        ({"proposal": {**MILK, "ttl_s": 0}}, "greater than or equal to 1"),
        (
            {"proposal": {**MILK, "payload": {"text": "x" * 64_000}}},
            "payload is too large (",
        ),
    ],
)
async def test_bad_stage_arguments_are_clear_errors(
    client: Client[Any], arguments: dict[str, Any], message: str
) -> None:
    defaults = {"agent": AGENT, "chat_id": CHAT, "server": "shopping", "proposal": MILK}

    error = await call_error(client, "stage", **{**defaults, **arguments})

    assert message in error
    assert (await call(client, "list_pending", agent=AGENT, chat_id=CHAT))["actions"] == []


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("approve", {"action_id": "", **tap()}),
        ("approve", {"action_id": "act_000000000000", **tap(user_id=" ")}),
        ("approve", {"action_id": "act_000000000000", **tap(message_key=" ")}),
        ("approve", {"action_id": "act_000000000000", "user_id": USER, "chat_id": CHAT}),
        ("cancel", {"action_id": "x" * 101, **tap()}),
        ("cancel", {"action_id": "act_000000000000", "user_id": USER}),
        ("complete", {"action_id": "act_000000000000", "result": "done"}),
        ("complete", {"action_id": "act_000000000000", "result": {"x": "y" * 64_000}}),
        ("fail", {"action_id": "act_000000000000", "error": ""}),
        ("fail", {"action_id": "act_000000000000", "error": "x" * 2001}),
        ("list_pending", {"agent": AGENT, "chat_id": " "}),
        ("approve_batch", {"batch_id": "bat_000000000000", "user_id": USER}),
        ("cancel_batch", {"batch_id": "bat_000000000000", **tap(agent="")}),
        (
            "stage",
            {
                "agent": AGENT,
                "chat_id": CHAT,
                "server": "shopping",
                "proposal": MILK,
                "message_key": " ",
            },
        ),
    ],
)
async def test_bad_arguments_are_tool_errors(
    client: Client[Any], tool: str, arguments: dict[str, Any]
) -> None:
    result = await client.call_tool(tool, arguments, raise_on_error=False)

    assert result.is_error
