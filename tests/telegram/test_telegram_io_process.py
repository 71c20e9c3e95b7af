"""`python -m mcp_telegram_io` as a real process over HTTP, against the fake Bot API served by
the test, with a second poller on the same bot token (as a second instance of the bot would be).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from fastmcp import Client

from fakes.mesh import Service, eventually
from fakes.serving import free_port
from fakes.telegram_api import FakeTelegram
from meshkit.credentials import token_digest

pytestmark = pytest.mark.anyio

TOKEN = "7300000001:AAFakeTokenForProcess0123456789abcde"
MESH_TOKEN = "telegram-io-process-test-token-0123456789"
USER = 42
CONFLICT_BACKOFF_S = 0.25


@asynccontextmanager
async def telegram_io_process(tmp_path: Path, fake_url: str) -> AsyncIterator[Service]:
    """telegram-io polling the fake for one bot, its conflict backoff an eighth of the default
    (0.25, 0.5, 1 s... instead of 2, 4, 8 s...: the same steps, a test that does not sit
    through them)."""
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n  ada: {bot_token_env: ADA_TOKEN}\n")
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TELEGRAM_"))},
        "FASTMCP_SHOW_SERVER_BANNER": "false",
        "FASTMCP_CHECK_FOR_UPDATES": "off",
        "PTB_TIMEDELTA": "true",
        "LOG_LEVEL": "INFO",
        "CLAWMESH_AGENTS": str(agents),
        "ADA_TOKEN": TOKEN,
        "MESH_TOKEN_SHA256": token_digest(MESH_TOKEN),
        "MCP_PORT": str(port),
        "DATA_DIR": str(tmp_path / "data"),
        "TELEGRAM_API_BASE": fake_url,
        "TELEGRAM_POLL_TIMEOUT_S": "5",
        "TELEGRAM_CONFLICT_BACKOFF_S": str(CONFLICT_BACKOFF_S),
    }
    service = Service(
        "telegram-io",
        [sys.executable, "-m", "mcp_telegram_io"],
        env,
        tmp_path / "telegram-io.log",
        f"http://127.0.0.1:{port}/health",
    )
    try:
        await service.start()
        yield service
    finally:
        with anyio.CancelScope(shield=True):
            await service.stop()


async def other_poller(fake_url: str) -> None:
    """Another instance of the bot: long-polls the same token again as soon as a poll ends
    (a 409 included), until cancelled."""
    async with httpx.AsyncClient(timeout=10) as client:
        while True:
            await client.post(f"{fake_url}/bot{TOKEN}/getUpdates", data={"timeout": 5})


async def test_a_second_poller_shows_conflict_and_updates_flow_again_soon_after_it_leaves(
    tmp_path: Path,
) -> None:
    fake = FakeTelegram()
    fake.add_bot(TOKEN)
    async with fake.serve() as fake_url, telegram_io_process(tmp_path, fake_url) as telegram_io:
        port = telegram_io.env["MCP_PORT"]

        async def health_says(code: int, text: str) -> bool:
            response = await telegram_io.health()
            return response.status_code == code and text in response.text

        await eventually(lambda: health_says(200, '"ok"'))
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(other_poller, fake_url)
            await eventually(lambda: health_says(503, "ada: conflict"))
            log = telegram_io.log.read_text()
            assert "409 CONFLICT" in log

            async def refused(times: int) -> bool:  # telegram-io's polls answered 409
                return telegram_io.log.read_text().count("409") >= times

            # The conflict lasts through telegram-io's first two waits (about 0.25 s and
            # 0.5 s): it is in its third (about 1 s) when the other poller leaves.
            await eventually(lambda: refused(3))
            tasks.cancel_scope.cancel()  # the other poller leaves
        left = time.monotonic()
        fake.user_message(TOKEN, USER, "anyone there?")

        async with Client(f"http://127.0.0.1:{port}/mcp", auth=MESH_TOKEN) as client:
            texts: list[Any] = []
            with anyio.fail_after(20):  # the old fixed wait after a 409 was 30-36 s
                while not texts:
                    result = await client.call_tool("next_updates", {"wait_s": 5})
                    assert result.structured_content is not None
                    texts = [u["text"] for u in result.structured_content["updates"]]
            delivered = time.monotonic() - left
        assert texts == ["anyone there?"]
        await eventually(lambda: health_says(200, '"ok"'))
        print(f"\nthe other poller left; the next update was handed over {delivered:.2f} s later")
        assert TOKEN not in telegram_io.log.read_text()
