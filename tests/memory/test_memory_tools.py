"""The memory MCP surface, through an in-memory MCP client against a real SQLite file."""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import Clock
from fakes.tool_calls import text_of
from mcp_memory.server import build_server
from mcp_memory.settings import MemorySettings

pytestmark = pytest.mark.anyio

CONVERSATION_TOOLS = {"turn_context", "append_items", "load_window", "reset"}
QUESTION_TOOLS = {"ask_question", "choose_answer"}
SUMMARY_TOOLS = {"evicted_items", "save_summary"}
HELD_TOOLS = {"hold_message", "held_messages"}
USAGE_TOOLS = {"record_usage", "usage_totals", "usage_report", "confirm_allow_more"}
TOOLS = (
    CONVERSATION_TOOLS
    | QUESTION_TOOLS
    | SUMMARY_TOOLS
    | HELD_TOOLS
    | USAGE_TOOLS
    | {
        "list_memories",
        "propose_remember",
        "propose_forget",
        "confirm_remember",
        "confirm_forget",
        "recall",
        "show_memories",
        "forget_tapped",
        "get_action",  # a client follows what it proposed (meshkit.consent)
    }
)
KEY = {"agent": "clawdia", "chat_id": "42"}
TURN = [
    {"role": "user", "content": "Weather in Paris?"},
    {"type": "function_call", "call_id": "c1", "name": "weather__get_forecast", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "sunny, 21 °C"},
    {"type": "message", "role": "assistant", "content": "Sunny, 21 °C."},
]
STORED = [{"type": "message", **TURN[0]}, *TURN[1:]]


@pytest.fixture
async def client(settings: MemorySettings, clock: Clock) -> AsyncIterator[Client[Any]]:
    async with Client(build_server(settings, clock=clock)) as client:
        yield client


async def load(client: Client[Any], **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("load_window", {**KEY, **arguments})
    assert result.structured_content is not None
    return result.structured_content


# The tool list


async def test_the_server_offers_the_conversation_question_and_memory_tools(
    client: Client[Any],
) -> None:
    assert {tool.name for tool in await client.list_tools()} == TOOLS


async def test_every_conversation_tool_is_internal_and_only_the_window_is_read_only(
    client: Client[Any],
) -> None:
    tools = {t.name: t for t in await client.list_tools() if t.name in CONVERSATION_TOOLS}

    for tool in tools.values():
        assert tool.meta is not None
        assert tool.meta["fastmcp"]["tags"] == ["internal"]
        assert tool.annotations is not None
        assert tool.annotations.destructive_hint is False
        assert tool.description
    hints = {
        name: (tool.annotations.read_only_hint, tool.annotations.idempotent_hint)
        for name, tool in tools.items()
        if tool.annotations is not None
    }
    assert hints == {
        "turn_context": (False, False),  # it may answer a question: a retry would not again
        "append_items": (False, False),  # a retried append would store the items twice
        "load_window": (True, True),
        "reset": (False, True),
    }


# Calls


async def test_an_appended_turn_comes_back_in_the_next_window(
    client: Client[Any], clock: Clock
) -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}

    appended = await client.call_tool("append_items", {**KEY, "items": [*TURN, reasoning]})
    clock.advance(60)
    window = await load(client)

    assert appended.structured_content == {
        "stored": 4,
        "ignored": 1,
        "at": clock.now - 60,
        "duplicate": False,
        "summary_due": False,
        "usage": None,  # no usage records given
    }
    assert window["items"] == STORED
    assert window["dropped"] == 0
    assert window["last_activity"] == clock.now - 60
    assert window["token_estimate"] > 0


async def test_a_turn_appended_again_with_its_id_is_stored_once(client: Client[Any]) -> None:
    first = await client.call_tool("append_items", {**KEY, "items": TURN, "turn_id": "u:7"})
    again = await client.call_tool("append_items", {**KEY, "items": TURN, "turn_id": "u:7"})
    other = await client.call_tool("append_items", {**KEY, "items": TURN, "turn_id": "u:8"})
    assert first.structured_content is not None
    assert again.structured_content is not None
    assert other.structured_content is not None
    assert (first.structured_content["stored"], first.structured_content["duplicate"]) == (4, False)
    assert (again.structured_content["stored"], again.structured_content["duplicate"]) == (0, True)
    assert other.structured_content["stored"] == 4
    assert (await load(client))["items"] == STORED + STORED


async def test_limits_can_be_given_per_call(client: Client[Any]) -> None:
    await client.call_tool("append_items", {**KEY, "items": TURN})
    await client.call_tool("append_items", {**KEY, "items": [TURN[0], TURN[3]]})

    window = await load(client, max_items=2)

    assert window["items"] == [STORED[0], STORED[3]]
    assert window["dropped"] == 4


async def test_a_malformed_item_is_a_tool_error_naming_its_index(client: Client[Any]) -> None:
    items = [*TURN, {"type": "function_call", "call_id": "c2", "name": "x"}]

    result = await client.call_tool("append_items", {**KEY, "items": items}, raise_on_error=False)

    assert result.is_error
    assert text_of(result).startswith("items[4] is malformed: a function_call needs 'arguments'")
    assert (await load(client))["items"] == []


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("append_items", {"agent": "", "chat_id": "42", "items": []}),
        ("load_window", {"agent": "clawdia", "chat_id": ""}),
        ("load_window", {**KEY, "max_items": 0}),
        ("reset", {"agent": "clawdia"}),
        ("append_items", {**KEY, "items": "not a list"}),
    ],
)
async def test_bad_arguments_are_tool_errors(
    client: Client[Any], tool: str, arguments: dict[str, Any]
) -> None:
    result = await client.call_tool(tool, arguments, raise_on_error=False)

    assert result.is_error


async def test_a_blank_chat_id_is_refused_with_a_clear_message(client: Client[Any]) -> None:
    result = await client.call_tool(
        "load_window", {"agent": "clawdia", "chat_id": "  "}, raise_on_error=False
    )

    assert result.is_error
    assert text_of(result) == "chat_id must not be empty."


async def test_reset_empties_the_window_and_reports_the_ended_conversation(
    client: Client[Any], clock: Clock
) -> None:
    await client.call_tool("append_items", {**KEY, "items": TURN})

    reset = await client.call_tool("reset", KEY)
    window = await load(client)

    assert reset.structured_content == {"at": clock.now, "previous_items": 4}
    assert window == {
        "items": [], "token_estimate": 0, "dropped": 0, "last_activity": None, "summary": None
    }  # fmt: skip


async def test_an_idle_chat_gets_an_empty_window(client: Client[Any], clock: Clock) -> None:
    await client.call_tool("append_items", {**KEY, "items": TURN})

    clock.advance(3601)
    window = await load(client)

    assert window["items"] == []
    assert window["dropped"] == 4


async def test_history_survives_a_restart(settings: MemorySettings, clock: Clock) -> None:
    async with Client(build_server(settings, clock=clock)) as first:
        await first.call_tool("append_items", {**KEY, "items": TURN})

    async with Client(build_server(settings, clock=clock)) as second:
        assert (await load(second))["items"] == STORED


async def test_embedded_mode_builds_the_server_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATA_DIR", str(tmp_path))

    async with Client(build_server()) as client:
        await client.call_tool("append_items", {**KEY, "items": TURN})

    assert (tmp_path / "memory.sqlite3").is_file()
