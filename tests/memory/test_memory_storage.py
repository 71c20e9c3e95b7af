"""The SQLite file: where it lives, what survives a restart, and rows that went bad."""

import logging
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import pytest

from fakes.clock import Clock
from mcp_memory.conversation_store import ConversationStore
from mcp_memory.service import ConversationService
from mcp_memory.settings import MemorySettings

pytestmark = pytest.mark.anyio

AGENT = "clawdia"
CHAT = "42"


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": text}


def turn(n: int) -> list[dict[str, Any]]:
    return [user(f"question {n}"), assistant(f"answer {n}")]


@pytest.mark.parametrize(
    "body",
    ["{not json", "[1, 2]", '{"type": "computer_call"}', '{"type": "message", "role": "user"}'],
    ids=["bad-json", "not-an-object", "unknown-type", "missing-content"],
)
async def test_a_malformed_stored_row_is_skipped_and_logged(
    service: ConversationService,
    settings: MemorySettings,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
    body: str,
) -> None:
    await service.append(AGENT, CHAT, [user("before")])
    with closing(sqlite3.connect(settings.db_path)) as db, db:
        db.execute(
            "INSERT INTO items (agent, chat_id, created_at, body) VALUES (?, ?, ?, ?)",
            (AGENT, CHAT, clock.now, body),
        )
    await service.append(AGENT, CHAT, [assistant("after")])

    with caplog.at_level(logging.WARNING, logger="mcp_memory"):
        window = await service.window(AGENT, CHAT)

    assert window.items == [user("before"), assistant("after")]
    assert window.dropped == 1
    assert "skipping malformed stored item 2" in caplog.text


async def test_history_survives_a_restart(
    settings: MemorySettings, store: ConversationStore, clock: Clock
) -> None:
    first = ConversationService(settings, store, clock=clock)
    await first.append(AGENT, CHAT, turn(1))
    await store.aclose()

    reopened = ConversationStore(settings.db_path)
    try:
        second = ConversationService(settings, reopened, clock=clock)
        assert (await second.window(AGENT, CHAT)).items == turn(1)
    finally:
        await reopened.aclose()


async def test_the_database_is_created_in_the_data_dir(tmp_path: Path) -> None:
    settings = MemorySettings(data_dir=tmp_path / "new" / "dir")
    store = ConversationStore(settings.db_path)

    await store.open()
    try:
        await store.ping()
        with closing(sqlite3.connect(settings.db_path)) as db:
            assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        await store.aclose()
    assert settings.db_path == tmp_path / "new" / "dir" / "memory.sqlite3"


def test_settings_come_from_memory_variables_and_data_dir(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMORY_WINDOW_MAX_ITEMS", "12")
    monkeypatch.setenv("MEMORY_INACTIVITY_S", "60")
    monkeypatch.setenv("DATA_DIR", "/srv/data")
    monkeypatch.setenv("MEMORY_DATA_DIR", "/not/this")

    settings = MemorySettings()

    assert (settings.window_max_items, settings.window_max_tokens) == (12, 24_000)
    assert settings.inactivity_s == 60
    assert settings.db_path == Path("/srv/data/memory.sqlite3")


async def test_concurrent_appends_to_many_chats_all_land(service: ConversationService) -> None:
    async with anyio.create_task_group() as tasks:
        for chat in range(10):
            for n in range(3):
                tasks.start_soon(service.append, AGENT, str(chat), turn(n))

    for chat in range(10):
        window = await service.window(AGENT, str(chat))
        assert len(window.items) == 6
