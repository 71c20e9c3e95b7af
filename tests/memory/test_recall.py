"""recall through an in-memory MCP client, on real SQLite files: FTS5 over the user's notes and
the conversation older than the window, dated, and never another user's or agent's."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import START, Clock
from mcp_memory.server import build_server
from mcp_memory.settings import MemorySettings
from meshkit.approval_keys import load_signing_key
from meshkit.proposals import ApprovalSigner

pytestmark = pytest.mark.anyio

DAY = 24 * 3600
ME = {"agent": "clawdia", "user": "42", "timezone": "Europe/Paris"}


@pytest.fixture
def small(tmp_path: Path) -> MemorySettings:
    """A window of two items, so a turn of two messages pushes the one before out."""
    return MemorySettings(
        window_max_items=2, window_max_tokens=24_000, inactivity_s=30 * DAY,
        data_dir=tmp_path / "data",
    )  # fmt: skip


@pytest.fixture
async def client(small: MemorySettings, clock: Clock) -> AsyncIterator[Client[Any]]:
    async with Client(build_server(small, clock=clock)) as client:
        yield client


async def said(client: Client[Any], text: str, chat: str = "42", agent: str = "clawdia") -> None:
    items = [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]
    await client.call_tool("append_items", {"agent": agent, "chat_id": chat, "items": items})


async def recall(client: Client[Any], query: str, **more: Any) -> list[dict[str, Any]]:
    result = await client.call_tool("recall", {"query": query, **ME, **more})
    assert result.structured_content is not None
    return list(result.structured_content["hits"])


async def test_recall_finds_an_archived_message_with_its_date(
    client: Client[Any], clock: Clock
) -> None:
    await said(client, "My dentist is Dr Molar, on rue de la Paix")
    clock.advance(DAY)
    await said(client, "What's the weather like?")

    hits = await recall(client, "dentist")

    assert hits == [
        {"source": "conversation", "when": "2027-01-15 09:00", "who": "user",
         "snippet": "My [dentist] is Dr Molar, on rue de la Paix"}
    ]  # fmt: skip


async def test_what_is_still_in_the_window_is_not_recalled(client: Client[Any]) -> None:
    await said(client, "My dentist is Dr Molar")

    assert await recall(client, "dentist") == []


async def test_recall_never_finds_another_users_or_another_agents_words(
    client: Client[Any], clock: Clock
) -> None:
    await said(client, "My dentist is Dr Molar", chat="77")
    await said(client, "My dentist is Dr Molar", agent="otto")
    clock.advance(DAY)
    await said(client, "hello", chat="77")
    await said(client, "hello", agent="otto")
    await said(client, "hello")

    assert await recall(client, "dentist") == []


async def test_recall_finds_the_users_notes_and_honours_since(
    client: Client[Any], small: MemorySettings, clock: Clock
) -> None:
    signer = ApprovalSigner(load_signing_key(small.data_dir), clock=clock)
    who = {"agent": "clawdia", "user": "42"}
    proposal = await client.call_tool("propose_remember", {"text": "Allergic to penicillin", **who})
    assert proposal.structured_content is not None
    payload = proposal.structured_content["payload"]
    token = signer.mint("act_0123456789ab", "memory", "remember", payload, agent="clawdia")
    await client.call_tool("confirm_remember", {"payload": payload, "approval": token})

    found = await recall(client, "penicillin allergy")
    later = await recall(client, "penicillin", since="2027-01-16")

    assert found == [{"source": "note", "when": "2027-01-15 09:00", "who": None,
                      "snippet": "Allergic to [penicillin]"}]  # fmt: skip
    assert later == []


async def test_fts_syntax_in_a_query_is_taken_as_words(client: Client[Any], clock: Clock) -> None:
    await said(client, "The code is NEAR the door")
    clock.advance(DAY)
    await said(client, "ok")

    hits = await recall(client, 'NEAR(code door) OR "* -')

    assert [hit["snippet"] for hit in hits] == ["The [code] is [NEAR] the [door]"]


async def test_a_conversation_stored_before_recall_existed_is_searchable(
    small: MemorySettings, clock: Clock
) -> None:
    small.data_dir.mkdir(parents=True)
    with sqlite3.connect(small.db_path) as db:  # the version-1 schema, one archived message
        db.executescript(
            "CREATE TABLE items (id INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT NOT NULL,"
            " chat_id TEXT NOT NULL, created_at REAL NOT NULL, body TEXT NOT NULL);"
            "CREATE TABLE resets (id INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT NOT NULL,"
            " chat_id TEXT NOT NULL, after_item_id INTEGER NOT NULL, at REAL NOT NULL);"
            "PRAGMA user_version = 1;"
        )
        for text in ("I love kayaks", "Hi", "Hello"):  # the window holds the newest two
            body = f'{{"type":"message","role":"user","content":"{text}"}}'
            db.execute(
                "INSERT INTO items (agent, chat_id, created_at, body) VALUES (?, ?, ?, ?)",
                ("clawdia", "42", START - DAY, body),
            )
    db.close()

    async with Client(build_server(small, clock=clock)) as client:
        hits = await recall(client, "kayaks")

    assert [hit["snippet"] for hit in hits] == ["I love [kayaks]"]
