"""Summaries of what left the window: written by the model in a call of its own after the
reply, bounded, given to later turns, never breaking one; /new clears them, not the rules.
Real memory server (embedded, a window of 4 items), the fake model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from fakes.mesh import eventually
from fakes.responses_api import Gated, Step, call, calls, server_error, text
from fakes.world import World, clawdia
from meshkit.wire.memory import Window
from orchestrator.app import App
from orchestrator.core.remembered import EARLIER_OPEN, OPEN
from orchestrator.core.replies import Reply
from orchestrator.core.routes import Deliver, TapContext, TextContext
from orchestrator.core.summaries import PROMPT

pytestmark = pytest.mark.anyio

CHAT = "4242"
SUMMARY = "The user is planning a kayak trip to Annecy in June."
LATER_SUMMARY = "The kayak trip to Annecy is in June; the user wants a campsite by the lake."


def summary_requests(world: World) -> list[dict[str, Any]]:
    return [r for r in world.llm.requests if r.get("instructions") == PROMPT]


def answering(summary: Step) -> Step:
    """The model: the summary for a summary request, "ok" for a turn."""
    return lambda body: summary if body.get("instructions") == PROMPT else text("ok")


async def say(app: App, message: str) -> Reply:
    async def deliver(reply: Reply) -> str:
        return "1"

    return await app.dispatcher.on_text(
        TextContext("clawdia", CHAT, message, user=CHAT, deliver=Deliver("1", deliver))
    )


async def window(app: App) -> Window:
    return await app.registry.call_as(
        "memory", "load_window", {"agent": "clawdia", "chat_id": CHAT}, Window
    )


@pytest.fixture
async def app(world: World, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[App]:
    monkeypatch.setenv("MEMORY_WINDOW_MAX_ITEMS", "4")  # two turns
    async with clawdia(world) as app:
        yield app


async def test_a_summary_is_written_once_ten_items_left_the_window_and_given_to_later_turns(
    world: World, app: App
) -> None:
    world.llm.default = answering(text(SUMMARY))
    for n in range(6):
        await say(app, f"message {n}: kayaks")
    assert summary_requests(world) == []  # 8 items out of the window: not yet

    await say(app, "message 6: Annecy")

    async def summarized() -> bool:
        return (await window(app)).summary == SUMMARY

    await eventually(summarized)
    await say(app, "and the weather?")
    (request,) = summary_requests(world)
    lines = request["input"][0]["content"]
    assert "user: message 0: kayaks\nassistant: ok\n" in lines
    assert "message 5" not in lines  # still in the window when it was asked
    assert not request.get("tools")  # a call of its own, without tools
    assert f"{EARLIER_OPEN}\n{SUMMARY}" in world.llm.requests[-1]["instructions"]


async def test_items_pushed_out_while_a_summary_is_written_get_a_round_of_their_own(
    world: World, app: App
) -> None:
    writing = anyio.Event()
    world.llm.default = answering(Gated(writing, text(SUMMARY)))
    for n in range(7):  # 10 items out of the window: the first summary is asked for
        await say(app, f"message {n}")
    await eventually(lambda: _true(len(summary_requests(world)) == 1))
    world.llm.default = answering(text(LATER_SUMMARY))
    for n in range(7, 12):  # 10 more go while the model still writes the first
        await say(app, f"message {n}")
    writing.set()

    async def summarized_again() -> bool:
        return (await window(app)).summary == LATER_SUMMARY

    await eventually(summarized_again)
    first, second = summary_requests(world)
    assert "user: message 4\n" in first["input"][0]["content"]
    later = second["input"][0]["content"]
    assert later.startswith(f"Summary so far:\n{SUMMARY}\n")
    assert "user: message 5\n" in later
    assert "user: message 9\n" in later
    assert "message 4" not in later
    assert "message 10" not in later  # still in the window


async def test_a_model_failing_to_summarize_leaves_the_turns_intact(world: World, app: App) -> None:
    world.llm.default = answering(server_error())
    replies = [(await say(app, f"message {n}")).text for n in range(7)]
    await eventually(lambda: _true(bool(summary_requests(world))))
    replies.append((await say(app, "still there?")).text)

    assert replies == ["ok"] * 8
    current = await window(app)
    assert current.summary is None
    assert [i["content"] for i in current.items if i.get("role") == "user"] == [
        "message 6",
        "still there?",
    ]
    assert EARLIER_OPEN not in world.llm.requests[-1]["instructions"]


async def test_new_clears_the_window_and_its_summary_but_not_the_rules(
    world: World, app: App
) -> None:
    world.llm.script(calls(call("memory__propose_remember", text="Use metric units")), text("ok?"))
    proposed = await say(app, "from now on metric units")
    taps: list[str] = []

    async def note(notice: str) -> None:
        taps.append(notice)

    async def edit(reply: Reply) -> None:
        pass

    remember = proposed.buttons[0][0].data
    await app.dispatcher.on_callback(
        TapContext("clawdia", CHAT, CHAT, "1", remember, note, edit, key="1")
    )
    world.llm.default = answering(text(SUMMARY))
    for n in range(7):
        await say(app, f"message {n}")

    async def summarized() -> bool:
        return (await window(app)).summary == SUMMARY

    await eventually(summarized)
    await say(app, "/new")
    await say(app, "hello again")

    instructions = world.llm.requests[-1]["instructions"]
    assert taps == ["Confirmed: on it."]
    assert EARLIER_OPEN not in instructions
    assert OPEN in instructions
    assert "Use metric units" in instructions
    assert (await window(app)).summary is None


async def _true(value: bool) -> bool:
    return value
