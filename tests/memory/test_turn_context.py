"""A turn's memory in two calls, through an in-memory MCP client on real SQLite files:
``turn_context`` (the window with its summary, the remembered lines, the question a typed
text answers, whether a summary round is due) and ``append_items`` (which says whether a
round is due now). What they say agrees with the tools a turn called one by one before."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import Clock
from mcp_memory.server import build_server
from mcp_memory.settings import MemorySettings
from meshkit.approval_keys import load_signing_key
from meshkit.proposals import ApprovalSigner

pytestmark = pytest.mark.anyio

KEY = {"agent": "clawdia", "chat_id": "42"}
WHO = {**KEY, "user": "42"}
EVERY = 10


@pytest.fixture
def small_window(settings: MemorySettings) -> MemorySettings:
    return settings.model_copy(update={"window_max_items": 4})  # two turns


@pytest.fixture
async def client(small_window: MemorySettings, clock: Clock) -> AsyncIterator[Client[Any]]:
    async with Client(build_server(small_window, clock=clock)) as client:
        yield client


async def call(client: Client[Any], tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert result.structured_content is not None
    return dict(result.structured_content)


async def append(client: Client[Any], n: int, **more: Any) -> dict[str, Any]:
    turn = [
        {"type": "message", "role": "user", "content": f"message {n}"},
        {"type": "message", "role": "assistant", "content": f"answer {n}"},
    ]
    return await call(client, "append_items", **KEY, items=turn, **more)


async def remember(
    client: Client[Any], signer: ApprovalSigner, n: int, text: str, scope: str
) -> None:
    proposal = await call(client, "propose_remember", text=text, scope=scope, agent="clawdia",
                          user="42")  # fmt: skip
    payload = proposal["payload"]
    token = signer.mint(f"act_00000000000{n}", "memory", "remember", payload, agent="clawdia")
    await call(client, "confirm_remember", payload=payload, approval=token)


async def test_the_context_is_the_window_the_memories_and_the_summary_in_one_call(
    client: Client[Any], small_window: MemorySettings, clock: Clock
) -> None:
    signer = ApprovalSigner(load_signing_key(small_window.data_dir), clock=clock)
    await remember(client, signer, 1, "Use metric units", "agent")
    await remember(client, signer, 2, "Has a dog called Rex", "user")
    for n in range(7):
        await append(client, n)
    evicted = await call(client, "evicted_items", **KEY, min_items=EVERY)
    await call(client, "save_summary", **KEY, text="Talked of messages.",
               up_to_id=evicted["up_to_id"])  # fmt: skip

    context = await call(client, "turn_context", **WHO, summarize_every=EVERY)

    assert context["window"] == await call(client, "load_window", **KEY)
    assert context["window"]["summary"] == "Talked of messages."
    listed = await call(client, "list_memories", agent="clawdia", user="42")
    assert context["memories"] == listed["memories"]
    assert [m["text"] for m in context["memories"]] == ["Use metric units", "Has a dog called Rex"]
    assert (context["answered"], context["summary_due"]) == (None, False)


async def test_a_typed_text_answers_the_waiting_question_once(client: Client[Any]) -> None:
    asked = await call(client, "ask_question", **KEY, question="Which city?", choices=[],
                       ttl_s=3600, message_key="reply:bot:7")  # fmt: skip

    untyped = await call(client, "turn_context", **WHO)  # a scheduled prompt: no text
    typed = await call(client, "turn_context", **WHO, text="Lyon")
    later = await call(client, "turn_context", **WHO, text="and the weather?")

    assert untyped["answered"] is None
    assert typed["answered"]["id"] == asked["id"]
    assert (typed["answered"]["state"], typed["answered"]["answer"]) == ("answered", "Lyon")
    assert typed["answered"]["message_id"] is None  # never tapped: where the orchestrator sent it
    assert later["answered"] is None


async def test_a_summary_is_due_exactly_when_evicted_items_would_hand_one_out(
    client: Client[Any],
) -> None:
    due_on_append, due_on_read, evicted = [], [], []
    for n in range(20):
        appended = await append(client, n, turn_id=f"u:{n}", summarize_every=EVERY)
        due_on_append.append(appended["summary_due"])
        read = await call(client, "turn_context", **WHO, summarize_every=EVERY)
        due_on_read.append(read["summary_due"])
        handed = await call(client, "evicted_items", **KEY, min_items=EVERY)
        evicted.append(handed["up_to_id"] is not None)
        if n == 9:  # a summary saved midway: what it covers is no longer due
            await call(client, "save_summary", **KEY, text="So far.", up_to_id=handed["up_to_id"])

    # Window of 4 items (two turns): 10 items are out of it after the 7th turn.
    assert due_on_append == evicted
    assert due_on_read == evicted
    assert evicted == [False] * 6 + [True] * 4 + [False] * 4 + [True] * 6


async def test_a_turn_appended_again_stores_nothing_and_still_says_whether_a_summary_is_due(
    client: Client[Any],
) -> None:
    for n in range(7):
        await append(client, n, turn_id=f"u:{n}")

    again = await append(client, 6, turn_id="u:6", summarize_every=EVERY)
    unasked = await append(client, 7, turn_id="u:7")

    assert (again["stored"], again["duplicate"], again["summary_due"]) == (0, True, True)
    assert unasked["summary_due"] is False  # not asked: not counted


async def test_a_text_longer_than_a_telegram_message_is_a_clear_tool_error(
    client: Client[Any],
) -> None:
    result = await client.call_tool(
        "turn_context", {**WHO, "text": "x" * 4097}, raise_on_error=False
    )
    assert result.is_error
    assert "text" in str(result.content[0])
