"""telegram-io with a full inbox (DATA_MAX_MB a few pages above the empty database, so the
real SQLite engine answers SQLITE_FULL): the pollers live on, the batch stays unconfirmed
at Telegram for later, and the fault is said once in the log, not as a traceback."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import anyio
import pytest
from fastmcp import Client

from fakes.telegram_api import FakeTelegram
from fakes.tool_calls import call
from mcp_telegram_io.poller import STORAGE_RETRY_S, PollPolicy
from mcp_telegram_io.server import build_server
from mcp_telegram_io.settings import DB_FILE, TelegramIOSettings

pytestmark = pytest.mark.anyio

ADA = "7100000001:AAFakeTokenForAda00000123456789abcdef"
USER = 42
PAGE = 4096


async def test_a_full_inbox_keeps_the_poller_alive_and_the_updates_at_telegram(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeTelegram()
    fake.add_bot(ADA)
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n  ada: {bot_token_env: ADA_TOKEN}\n")
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    monkeypatch.setenv("ADA_TOKEN", ADA)
    retried = anyio.Event()

    async def sleep(seconds: float) -> None:
        if seconds == STORAGE_RETRY_S:
            retried.set()  # the poller waits to fetch the refused batch again
        await anyio.sleep(0.01)

    caplog.set_level(logging.INFO)
    async with fake.serve() as base:
        data_dir = tmp_path / "data"
        build_server(TelegramIOSettings(api_base=base, agents=agents, data_dir=data_dir))
        with sqlite3.connect(data_dir / DB_FILE) as db:
            (pages,) = db.execute("PRAGMA page_count").fetchone()
        settings = TelegramIOSettings(
            api_base=base, agents=agents, data_dir=data_dir, max_db_mb=(pages + 2) * PAGE / 1e6
        )
        policy = PollPolicy(timeout_s=1, backoff_initial_s=0.05, sleep=sleep)
        async with Client(build_server(settings, policy=policy)) as client:
            updates = [fake.user_message(ADA, USER, f"{n} " + "long " * 800) for n in range(6)]
            with anyio.fail_after(10):
                await retried.wait()
            status = await call(client, "status")

    assert [bot["state"] for bot in status["bots"]] != ["failed"]
    assert set(fake.pending(ADA)) & set(updates)  # not confirmed: Telegram sends them again
    reports = [r for r in caplog.records if r.name == "meshkit.storage"]
    assert len(reports) == 1
    assert "telegram-io.sqlite3 failed: the disk is full" in reports[0].getMessage()
    assert [r for r in caplog.records if r.exc_info and r.levelno >= logging.WARNING] == []
