"""Every server of the mesh, built in memory the way its own tests build it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fastmcp import FastMCP

from fakes.approval_keys import PUBLIC_ENV, SIGNING_ENV, write_public_key, write_signing_key
from fakes.telegram_api import FakeTelegram
from mcp_calendar.server import build_server as calendar
from mcp_calendar.settings import CalendarSettings
from mcp_memory.server import build_server as memory
from mcp_memory.settings import MemorySettings
from mcp_pending_actions.server import build_server as pending_actions
from mcp_pending_actions.settings import PendingSettings
from mcp_scheduler.server import build_server as scheduler
from mcp_scheduler.settings import SchedulerSettings
from mcp_shopping.server import build_server as shopping
from mcp_shopping.settings import ShoppingSettings
from mcp_telegram_io.poller import PollPolicy
from mcp_telegram_io.server import build_server as telegram_io
from mcp_telegram_io.settings import TelegramIOSettings
from mcp_weather.server import build_server as weather
from mcp_weather.settings import WeatherSettings

BOT = "7100000001:AAFakeTokenForAda00000123456789abcdef"
AGENTS_YAML = """\
agents:
  ada:
    name: Ada
    persona: agents/clawdia
    timezone: Europe/Berlin
    bot_token_env: ADA_TOKEN
"""
NAMES = (
    "weather",
    "calendar",
    "shopping",
    "memory",
    "scheduler",
    "pending-actions",
    "telegram-io",
)


@asynccontextmanager
async def every_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[dict[str, FastMCP[Any]]]:
    """Each server by name, against a fake Bot API and an Open-Meteo nobody listens on."""
    monkeypatch.setenv(SIGNING_ENV, str(write_signing_key(tmp_path / "keys")))
    monkeypatch.setenv(PUBLIC_ENV, str(write_public_key(tmp_path / "keys")))
    monkeypatch.setenv("ADA_TOKEN", BOT)
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    (tmp_path / "agents.yaml").write_text(AGENTS_YAML, encoding="utf-8")
    (tmp_path / "schedule.yaml").write_text("jobs: []\n", encoding="utf-8")
    fake = FakeTelegram()
    fake.add_bot(BOT)
    async with AsyncExitStack() as stack:
        api = await stack.enter_async_context(fake.serve())
        stack.callback(fake.close)
        yield {
            "weather": weather(
                WeatherSettings(
                    geocoding_url="http://127.0.0.1:9/v1/search",
                    forecast_url="http://127.0.0.1:9/v1/forecast",
                    timeout_s=1.0,
                )
            ),
            "calendar": calendar(CalendarSettings(backend="local", data_dir=tmp_path / "calendar")),
            "shopping": shopping(ShoppingSettings(data_dir=tmp_path / "shopping")),
            "memory": memory(MemorySettings(data_dir=tmp_path / "memory")),
            "scheduler": scheduler(
                SchedulerSettings(
                    schedule=tmp_path / "schedule.yaml",
                    agents=tmp_path / "agents.yaml",
                    data_dir=tmp_path / "scheduler",
                )
            ),
            "pending-actions": pending_actions(PendingSettings(data_dir=tmp_path / "pending")),
            "telegram-io": telegram_io(
                TelegramIOSettings(
                    api_base=api, agents=tmp_path / "agents.yaml", data_dir=tmp_path / "telegram"
                ),
                policy=PollPolicy(timeout_s=1, backoff_initial_s=0.05, park_check_s=0.05),
            ),
        }
