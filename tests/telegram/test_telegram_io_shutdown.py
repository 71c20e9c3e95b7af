"""``python -m mcp_telegram_io`` as a real process: what SIGTERM does to requests in flight."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from fakes.mesh import Service, eventually
from fakes.serving import free_port
from fakes.telegram_api import FakeTelegram
from meshkit.credentials import token_digest

pytestmark = pytest.mark.anyio

TOKEN = "7100000003:AAFakeTokenForAda00000123456789abcdef"
MESH_TOKEN = "mesh-token-process-0123456789abcdef"
USER = 42
# Telegram answers the send this late: longer than the 2 s servers used to give requests
# in flight on SIGTERM, well within the time they give now.
SLOW_TELEGRAM_S = 3.0


async def call(url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tools/call as its own HTTP request (the server is stateless): no session to
    open or close around it while the server stops."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    headers = {
        "Authorization": f"Bearer {MESH_TOKEN}",
        "Accept": "application/json, text/event-stream",
    }
    async with httpx2.AsyncClient(timeout=60) as http:
        response = await http.post(url, json=request, headers=headers)
    response.raise_for_status()
    result: dict[str, Any] = response.json()["result"]
    assert not result.get("isError"), result
    return dict(result["structuredContent"])


async def test_sigterm_lets_a_send_in_flight_finish_and_ends_long_polls_at_once(
    tmp_path: Path,
) -> None:
    fake = FakeTelegram()
    fake.add_bot(TOKEN)
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n  ada: {bot_token_env: ADA_TOKEN}\n")
    port = free_port()
    async with fake.serve() as base:
        server = Service(
            "telegram-io",
            [sys.executable, "-m", "mcp_telegram_io"],
            {
                **{k: v for k, v in os.environ.items() if not k.startswith("TELEGRAM_")},
                "ADA_TOKEN": TOKEN,
                "CLAWMESH_AGENTS": str(agents),
                "TELEGRAM_API_BASE": base,
                "TELEGRAM_PACE_S": "0",
                "MESH_TOKEN_SHA256": token_digest(MESH_TOKEN),
                "MCP_PORT": str(port),
                "DATA_DIR": str(tmp_path / "data"),
                "FASTMCP_SHOW_SERVER_BANNER": "false",
                "FASTMCP_CHECK_FOR_UPDATES": "off",
                "PTB_TIMEDELTA": "true",
            },
            tmp_path / "telegram-io.log",
            f"http://127.0.0.1:{port}/health",
        )
        await server.start()
        fake.user_message(TOKEN, USER, "hi")  # the chat exists for the send
        results: dict[str, Any] = {}
        polled = anyio.Event()
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            await call(url, "next_updates", {"max": 10, "wait_s": 10})  # takes "hi"
            fake.hold("sendMessage")

            async def send() -> None:
                arguments = {"agent": "ada", "chat_id": str(USER), "text": "Made it."}
                results["send"] = await call(url, "send_message", arguments)

            async def poll() -> None:
                results["poll"] = await call(url, "next_updates", {"max": 10, "wait_s": 40})
                polled.set()

            async def reading() -> bool:
                return bool((await call(url, "status", {}))["readers"] == 1)

            async with anyio.create_task_group() as calls:
                calls.start_soon(poll)
                await eventually(reading, 10)  # the long poll is in before the signal
                calls.start_soon(send)
                await fake.wait_for(lambda: bool(fake.calls("sendMessage")), 10)
                server.send_signal(signal.SIGTERM)
                with anyio.fail_after(5):  # far less than its 40 s
                    await polled.wait()
                await anyio.sleep(SLOW_TELEGRAM_S)
                fake.release("sendMessage")
            assert results["poll"]["updates"] == []
            assert results["send"]["message_ids"]
            assert [s.text for s in fake.sent(TOKEN, USER)] == ["Made it."]
            # The send answered, the stop asked for is done: exit 0, not death by the signal.
            assert await server.exited(20) == 0
        finally:
            await server.stop()
