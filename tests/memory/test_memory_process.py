"""`python -m mcp_memory` as a real process, over HTTP and stdio, with the official SDK client."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from fakes.serving import ServerProcess, sdk_client

pytestmark = pytest.mark.anyio

TOKEN = "memory-process-test-token-7"
TOOLS = {
    "turn_context", "append_items", "load_window", "reset", "evicted_items", "save_summary",
    "hold_message", "held_messages",
    "ask_question", "choose_answer",
    "list_memories", "propose_remember", "propose_forget", "confirm_remember", "confirm_forget",
    "recall", "show_memories", "forget_tapped", "get_action",
    "record_usage", "usage_totals", "usage_report", "confirm_allow_more",
}  # fmt: skip
KEY = {"agent": "clawdia", "chat_id": "42"}
TURN = [
    {"type": "message", "role": "user", "content": "Remember the milk?"},
    {"type": "message", "role": "assistant", "content": "Noted."},
]


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = ServerProcess("mcp_memory", tmp_path_factory.mktemp("memory-http"), TOKEN)
    try:
        yield server
    finally:
        assert TOKEN not in server.stop(), "the bearer token leaked into the server's log"


def check_tools(tools: list[Any]) -> None:
    assert {tool.name for tool in tools} == TOOLS
    tags = {tool.name: tool.meta["fastmcp"]["tags"] for tool in tools}
    assert tags["load_window"] == ["internal"]
    assert tags["propose_remember"] == ["producer"]
    assert tags["confirm_remember"] == ["confirm"]


async def round_trip(client: Client) -> None:
    appended = await client.call_tool("append_items", {**KEY, "items": TURN})
    assert appended.structured_content is not None
    assert appended.structured_content["stored"] == 2
    window = await client.call_tool("load_window", KEY)
    assert window.structured_content is not None
    assert window.structured_content["items"] == TURN
    bad = await client.call_tool("append_items", {**KEY, "items": [{"type": "message"}]})
    assert bad.is_error
    assert "items[0] is malformed" in bad.content[0].text  # type: ignore[union-attr]


async def test_the_official_sdk_client_works_over_stdio(
    tmp_path: Path, http_server: ServerProcess
) -> None:
    # http_server is requested only to start it now: it boots while this test runs.
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_memory", "--stdio"],
        env={"DATA_DIR": str(tmp_path), "FASTMCP_CHECK_FOR_UPDATES": "off"},
    )
    async with Client(params) as client:
        check_tools((await client.list_tools()).tools)
        await round_trip(client)
    assert (tmp_path / "memory.sqlite3").is_file()


async def test_the_official_sdk_client_works_over_http_with_the_token(
    http_server: ServerProcess,
) -> None:
    url = http_server.ready()
    health = httpx2.get(f"{url}/health")
    refused = httpx2.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})

    async with sdk_client(f"{url}/mcp", TOKEN) as client:
        check_tools((await client.list_tools()).tools)
        await round_trip(client)

    assert (health.status_code, health.json()["checks"]) == (
        200,
        {"database": "ok", "storage": "ok"},
    )
    assert health.json()["server"] == "memory"
    assert refused.status_code == 401
