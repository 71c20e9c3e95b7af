"""A read client bound to one user gets nothing of another user from a real memory process,
over HTTP (a MESH_CLIENTS credential) and over stdio (MESH_STDIO_AGENT/MESH_STDIO_USER), while
the orchestrator's credential still reads any user's memory for the turn it runs."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from fakes.serving import ServerProcess, sdk_client
from meshkit.credentials import Binding, new_client

pytestmark = pytest.mark.anyio

TOKEN = "memory-binding-test-token-3"
ALICE, BOB = "1001", "1002"
READER_TOKEN, READER = new_client("nightly-script", Binding("clawdia", ALICE), ["read"])
NOTES = f"""\
# Remembered by clawdia

## About user {ALICE}
- Likes green tea

## About user {BOB}
- Bank PIN is 4711
"""
AGENTS = "agents:\n  clawdia: {timezone: Europe/Berlin}\n"


def turn(user_text: str) -> list[dict[str, str]]:
    return [
        {"type": "message", "role": "user", "content": user_text},
        {"type": "message", "role": "assistant", "content": "Noted."},
    ]


def text_of(result: Any) -> str:
    return " ".join(getattr(part, "text", "") for part in result.content)


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    content: dict[str, Any] = result.structured_content
    return content


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both users' notes, imported as the operator would (no tap needed)."""
    data = tmp_path_factory.mktemp("memory-binding")
    (data / "notes.md").write_text(NOTES, encoding="utf-8")
    (data / "agents.yaml").write_text(AGENTS, encoding="utf-8")
    notes = str(data / "notes.md")
    subprocess.run(
        [sys.executable, "-m", "mcp_memory", "import", notes, "--agent", "clawdia"],
        env={"PATH": "", "DATA_DIR": str(data)},
        check=True,
        capture_output=True,
        timeout=60,
    )
    return data


@pytest.fixture(scope="module")
def memory(data: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(
        "mcp_memory",
        data,
        TOKEN,
        MESH_CLIENTS=READER.entry(),
        MEMORY_WINDOW_MAX_ITEMS="2",  # a turn's items leave the window at the next turn
        CLAWMESH_AGENTS=str(data / "agents.yaml"),
    )
    try:
        yield server
    finally:
        server.stop()


async def test_a_read_client_bound_to_one_user_gets_nothing_of_another(
    memory: ServerProcess,
) -> None:
    url = f"{memory.ready()}/mcp"
    async with sdk_client(url, TOKEN) as orchestrator:
        for user, said in ((BOB, "my bank PIN is 4711"), (ALICE, "my tea is green")):
            for items in (turn(said), turn("thanks")):
                key = {"agent": "clawdia", "chat_id": user}
                structured(await orchestrator.call_tool("append_items", {**key, "items": items}))
        bobs = structured(
            await orchestrator.call_tool(
                "recall", {"query": "PIN", "agent": "clawdia", "user": BOB}
            )
        )
    async with sdk_client(url, READER_TOKEN) as reader:
        pin = structured(await reader.call_tool("recall", {"query": "bank PIN 4711"}))
        tea = structured(await reader.call_tool("recall", {"query": "tea"}))
        notes = structured(await reader.call_tool("list_memories", {}))
        asked = [
            await reader.call_tool("recall", {"query": "PIN", "user": BOB}),
            await reader.call_tool("list_memories", {"user": BOB}),
            await reader.call_tool("list_memories", {"agent": "other"}),
        ]
    log = memory.stop()

    assert "4711" in str(bobs), "the orchestrator reads Bob's memory in Bob's turn"
    assert pin["hits"] == []
    assert {hit["source"] for hit in tea["hits"]} == {"note", "conversation"}
    assert [m["text"] for m in notes["memories"]] == ["Likes green tea"]
    for result in asked:
        assert result.is_error
        assert text_of(result).startswith("forbidden (403): ")
        assert "4711" not in text_of(result)
    assert "refused recall on memory to client nightly-script" in log
    assert READER_TOKEN not in log
    assert TOKEN not in log


async def test_a_stdio_server_bound_to_one_user_serves_that_user_only(data: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_memory", "--stdio"],
        env={
            "DATA_DIR": str(data),
            "FASTMCP_CHECK_FOR_UPDATES": "off",
            "MESH_STDIO_AGENT": "clawdia",
            "MESH_STDIO_USER": ALICE,
            "CLAWMESH_AGENTS": str(data / "agents.yaml"),
        },
    )
    async with Client(params) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        notes = structured(await client.call_tool("list_memories", {}))
        asked = await client.call_tool("list_memories", {"user": BOB})
        window = await client.call_tool("load_window", {"agent": "clawdia", "chat_id": BOB})
    assert listed == {"recall", "list_memories", "propose_remember", "propose_forget", "get_action"}
    assert [m["text"] for m in notes["memories"]] == ["Likes green tea"]
    assert asked.is_error
    assert text_of(asked).startswith("forbidden (403): ")
    assert window.is_error
    assert text_of(window).startswith("forbidden (403): load_window is a internal tool")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"MESH_STDIO_AGENT": "clawdia"}, "MESH_STDIO_AGENT and MESH_STDIO_USER go together"),
        (
            {"MESH_STDIO_AGENT": "clawdia", "MESH_STDIO_USER": "alice"},
            "MESH_STDIO_AGENT/MESH_STDIO_USER: user 'alice' is not a Telegram user id",
        ),
        (
            {"MESH_STDIO_AGENT": "nobody", "MESH_STDIO_USER": ALICE},
            "no agent 'nobody', which a client is bound to (MESH_CLIENTS or MESH_STDIO_AGENT)",
        ),
    ],
    ids=["agent-alone", "user-not-a-number", "agent-not-in-the-fleet"],
)
def test_a_bad_stdio_binding_stops_the_server_with_one_line(
    data: Path, env: dict[str, str], expected: str
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mcp_memory", "--stdio"],
        env={
            "PATH": "",
            "DATA_DIR": str(data),
            "CLAWMESH_AGENTS": str(data / "agents.yaml"),
            **env,
        },
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("configuration error: ")
    assert expected in lines[0]
