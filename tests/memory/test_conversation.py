"""Conversation rules: what is stored, and which items the next window holds.

Through ConversationService over a real SQLite file under tmp_path, with an injected clock.
"""

import sqlite3
from contextlib import closing
from typing import Any

import pytest

from fakes.clock import Clock
from mcp_memory.errors import InvalidItem, InvalidRequest
from mcp_memory.service import MAX_NOTES, ConversationService
from mcp_memory.settings import MemorySettings
from mcp_memory.tokens import encode, estimate

pytestmark = pytest.mark.anyio

AGENT = "clawdia"
CHAT = "42"
Item = dict[str, Any]


def user(text: str) -> Item:
    return {"type": "message", "role": "user", "content": text}


def assistant(text: str) -> Item:
    return {"type": "message", "role": "assistant", "content": text}


def call(call_id: str, name: str = "weather__get_forecast") -> Item:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"}


def output(call_id: str, text: str = "sunny") -> Item:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def turn(n: int) -> list[Item]:
    return [user(f"question {n}"), assistant(f"answer {n}")]


async def window_items(service: ConversationService, **limits: int) -> list[Item]:
    return (await service.window(AGENT, CHAT, **limits)).items


# Appending


async def test_an_appended_turn_comes_back_exactly(service: ConversationService) -> None:
    items = [
        user("Weather in Paris?"),
        call("c1"),
        output("c1", '{"temp": 21}'),
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_1",
            "content": [{"type": "output_text", "text": "21 °C", "annotations": []}],
        },
    ]

    result = await service.append(AGENT, CHAT, items)
    window = await service.window(AGENT, CHAT)

    assert result.stored == 4
    assert result.ignored == 0
    assert window.items == items
    assert window.dropped == 0
    assert window.token_estimate == sum(estimate(encode(item)) for item in items)


async def test_items_are_stamped_with_the_server_clock(
    service: ConversationService, clock: Clock
) -> None:
    result = await service.append(AGENT, CHAT, turn(1))
    clock.advance(10)

    window = await service.window(AGENT, CHAT)

    assert result.at == window.last_activity == clock.now - 10


async def test_a_message_without_a_type_is_stored_as_a_message(
    service: ConversationService,
) -> None:
    await service.append(AGENT, CHAT, [{"role": "user", "content": "hi"}])

    assert await window_items(service) == [user("hi")]


async def test_reasoning_items_are_not_stored_but_counted(service: ConversationService) -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"}

    result = await service.append(AGENT, CHAT, [user("hi"), reasoning, assistant("hello")])

    assert (result.stored, result.ignored) == (2, 1)
    assert await window_items(service) == [user("hi"), assistant("hello")]


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ({"content": "no type, no role"}, "neither a 'type' nor a 'role'"),
        ({"type": 7}, "'type' must be a non-empty string"),
        ({"type": "message", "role": "tool", "content": "x"}, "'role' to be one of"),
        ({"type": "message", "role": "user"}, "'content' as a string or a list"),
        ({"type": "function_call", "name": "f", "arguments": "{}"}, "'call_id'"),
        ({"type": "function_call", "call_id": "c", "arguments": "{}"}, "'name'"),
        ({"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}, "JSON string"),
        ({"type": "function_call_output", "call_id": "c"}, "'output'"),
        ({"type": "function_call_output", "call_id": "", "output": "x"}, "'call_id'"),
    ],
)
async def test_a_malformed_item_rejects_the_whole_call_and_names_its_index(
    service: ConversationService, bad: Item, why: str
) -> None:
    with pytest.raises(InvalidItem, match=r"items\[2\] is malformed") as raised:
        await service.append(AGENT, CHAT, [user("hi"), assistant("hello"), bad])

    assert why in str(raised.value)
    assert "Nothing was stored" in str(raised.value)
    assert await window_items(service) == []


@pytest.mark.parametrize(("agent", "chat_id"), [("", CHAT), (AGENT, ""), ("  ", CHAT)])
async def test_an_empty_agent_or_chat_is_refused(
    service: ConversationService, agent: str, chat_id: str
) -> None:
    with pytest.raises(InvalidRequest, match="must not be empty"):
        await service.append(agent, chat_id, turn(1))
    with pytest.raises(InvalidRequest, match="must not be empty"):
        await service.window(agent, chat_id)
    with pytest.raises(InvalidRequest, match="must not be empty"):
        await service.reset(agent, chat_id)


# Limits


async def test_the_window_holds_the_newest_items_within_the_item_limit(
    service: ConversationService,
) -> None:
    for n in range(30):
        await service.append(AGENT, CHAT, turn(n))

    window = await service.window(AGENT, CHAT)
    smaller = await service.window(AGENT, CHAT, max_items=4)

    assert len(window.items) == 40
    assert window.items[0] == user("question 10")
    assert window.items[-1] == assistant("answer 29")
    assert window.dropped == 20
    assert smaller.items == [*turn(28), *turn(29)]
    assert smaller.dropped == 56


@pytest.mark.parametrize("limits", [{"max_items": 0}, {"max_tokens": 0}, {"max_items": 1001}])
async def test_a_limit_out_of_range_is_refused(
    service: ConversationService, limits: dict[str, int]
) -> None:
    with pytest.raises(InvalidRequest, match="must be between 1 and"):
        await service.window(AGENT, CHAT, **limits)


async def test_the_window_holds_the_newest_items_within_the_token_budget(
    service: ConversationService,
) -> None:
    for n in range(10):
        await service.append(AGENT, CHAT, turn(n))
    per_turn = sum(estimate(encode(item)) for item in turn(9))

    window = await service.window(AGENT, CHAT, max_tokens=3 * per_turn + 1)

    assert window.items == [*turn(7), *turn(8), *turn(9)]
    assert window.token_estimate <= 3 * per_turn + 1
    assert window.dropped == 14


async def test_an_item_over_the_budget_ends_the_window_even_if_older_ones_fit(
    service: ConversationService,
) -> None:
    await service.append(AGENT, CHAT, turn(1))
    await service.append(AGENT, CHAT, [user("x" * 10_000), assistant("long")])
    await service.append(AGENT, CHAT, turn(2))

    assert await window_items(service, max_tokens=1000) == turn(2)


async def test_a_user_message_over_the_whole_budget_leaves_the_window_empty(
    service: ConversationService,
) -> None:
    await service.append(AGENT, CHAT, [user("x" * 10_000), assistant("ok")])

    window = await service.window(AGENT, CHAT, max_tokens=1000)

    assert (window.items, window.token_estimate, window.dropped) == ([], 0, 2)


# Shape: start at a user message, calls with their outputs


async def test_the_window_starts_at_a_user_message(service: ConversationService) -> None:
    await service.append(AGENT, CHAT, [user("q1"), call("c1"), output("c1"), assistant("a1")])
    await service.append(AGENT, CHAT, turn(2))

    # The newest 5 items begin at c1's call: everything before q2 goes.
    assert await window_items(service, max_items=5) == turn(2)


async def test_a_cut_between_a_call_and_its_output_keeps_neither(
    service: ConversationService,
) -> None:
    await service.append(AGENT, CHAT, [user("q1"), call("c1"), output("c1"), assistant("a1")])

    assert await window_items(service) == [user("q1"), call("c1"), output("c1"), assistant("a1")]
    assert await window_items(service, max_items=2) == []


async def test_parallel_calls_stay_with_their_outputs(service: ConversationService) -> None:
    parallel = [
        user("Paris and Rome?"),
        call("c1"),
        call("c2"),
        output("c1", "Paris: sun"),
        output("c2", "Rome: rain"),
        assistant("Sun in Paris, rain in Rome."),
    ]
    await service.append(AGENT, CHAT, parallel)

    assert await window_items(service) == parallel


async def test_a_call_left_dangling_by_a_crash_is_dropped(service: ConversationService) -> None:
    # Crash mid-turn: both calls were stored, only one output.
    await service.append(AGENT, CHAT, [user("Paris and Rome?"), call("c1"), call("c2")])
    await service.append(AGENT, CHAT, [output("c1")])
    await service.append(AGENT, CHAT, [user("hello?")])

    assert await window_items(service) == [
        user("Paris and Rome?"),
        call("c1"),
        output("c1"),
        user("hello?"),
    ]


async def test_a_dangling_call_at_the_very_end_is_dropped(service: ConversationService) -> None:
    await service.append(AGENT, CHAT, [user("Paris?"), call("c1")])

    assert await window_items(service) == [user("Paris?")]


async def test_an_output_without_its_call_is_dropped(service: ConversationService) -> None:
    await service.append(
        AGENT, CHAT, [user("q1"), call("c1"), user("q2"), output("c1"), assistant("a2")]
    )

    # The window starts at q2 (item limit), so c1's call is out: its output goes too.
    assert await window_items(service, max_items=3) == [user("q2"), assistant("a2")]


# Inactivity and reset


async def test_the_window_is_empty_once_the_chat_has_been_idle_too_long(
    service: ConversationService, clock: Clock
) -> None:
    await service.append(AGENT, CHAT, turn(1))
    stored_at = clock.now

    clock.advance(3600)
    assert await window_items(service) == turn(1)
    clock.advance(1)
    window = await service.window(AGENT, CHAT)

    assert window.items == []
    assert window.dropped == 2
    assert window.last_activity == stored_at


async def test_after_a_silence_the_window_holds_only_the_new_conversation(
    service: ConversationService, clock: Clock
) -> None:
    await service.append(AGENT, CHAT, turn(1))
    clock.advance(2 * 3600)
    await service.append(AGENT, CHAT, turn(2))
    clock.advance(1800)
    await service.append(AGENT, CHAT, turn(3))

    window = await service.window(AGENT, CHAT)

    assert window.items == [*turn(2), *turn(3)]
    assert window.dropped == 2


# Notes: what the orchestrator told the conversation outside a turn


def note(text: str) -> Item:
    return {"type": "message", "role": "developer", "content": text}


async def test_notes_told_before_the_first_message_are_in_the_window(
    service: ConversationService,
) -> None:
    await service.append(AGENT, CHAT, [note("Claude Desktop proposed: Add milk")])
    first_contact = await window_items(service)
    await service.append(AGENT, CHAT, turn(1))

    assert first_contact == [note("Claude Desktop proposed: Add milk")]
    assert await window_items(service) == [note("Claude Desktop proposed: Add milk"), *turn(1)]


async def test_notes_told_after_a_reset_are_in_the_new_conversation_and_earlier_ones_not(
    service: ConversationService,
) -> None:
    await service.append(AGENT, CHAT, [*turn(1), note("before the reset")])
    await service.reset(AGENT, CHAT)
    await service.append(AGENT, CHAT, [note("The user confirmed and it is done: Add milk")])

    assert await window_items(service) == [note("The user confirmed and it is done: Add milk")]


async def test_notes_since_the_model_last_spoke_survive_a_silence_until_a_turn_reads_them(
    service: ConversationService, clock: Clock
) -> None:
    await service.append(AGENT, CHAT, turn(1))
    clock.advance(2 * 3600)
    await service.append(AGENT, CHAT, [note("The user confirmed and it is done: Add milk")])
    clock.advance(5 * 3600)  # hours of silence after it

    silent = await service.window(AGENT, CHAT)
    await service.append(AGENT, CHAT, turn(2))  # the turn that read it
    clock.advance(2 * 3600)
    after = await window_items(service)

    assert silent.items == [note("The user confirmed and it is done: Add milk")]
    assert silent.summary is None
    assert after == []  # read once: the next silence ends it with its turn


async def test_notes_kept_through_a_silence_are_the_newest_few_of_the_last_week(
    service: ConversationService, clock: Clock
) -> None:
    await service.append(AGENT, CHAT, [note("eight days ago")])
    clock.advance(8 * 24 * 3600)
    await service.append(AGENT, CHAT, [note("today"), note("and again")])
    clock.advance(2 * 3600)
    within_the_week = await window_items(service)
    for n in range(MAX_NOTES):
        await service.append(AGENT, CHAT, [note(f"note {n}")])
    clock.advance(2 * 3600)
    the_newest = await window_items(service)

    assert within_the_week == [note("today"), note("and again")]
    assert the_newest == [note(f"note {n}") for n in range(MAX_NOTES)]


async def test_reset_starts_a_new_conversation_and_keeps_the_old_rows(
    service: ConversationService, settings: MemorySettings, clock: Clock
) -> None:
    await service.append(AGENT, CHAT, turn(1))
    await service.append(AGENT, CHAT, turn(2))

    result = await service.reset(AGENT, CHAT)
    emptied = await service.window(AGENT, CHAT)
    await service.append(AGENT, CHAT, turn(3))
    again = await service.reset(AGENT, CHAT)
    await service.append(AGENT, CHAT, turn(4))

    assert (result.previous_items, result.at) == (4, clock.now)
    assert (emptied.items, emptied.dropped, emptied.last_activity) == ([], 0, None)
    assert again.previous_items == 2
    assert await window_items(service) == turn(4)
    with closing(sqlite3.connect(settings.db_path)) as db:
        assert db.execute("SELECT COUNT(*) FROM items").fetchone() == (8,)


async def test_conversations_are_kept_apart_by_agent_and_chat(
    service: ConversationService,
) -> None:
    await service.append("clawdia", "1", [user("clawdia in chat 1")])
    await service.append("clawdia", "2", [user("clawdia in chat 2")])
    await service.append("other", "1", [user("other in chat 1")])

    await service.reset("clawdia", "2")

    assert (await service.window("clawdia", "1")).items == [user("clawdia in chat 1")]
    assert (await service.window("clawdia", "2")).items == []
    assert (await service.window("other", "1")).items == [user("other in chat 1")]
    assert (await service.window("other", "2")).last_activity is None
