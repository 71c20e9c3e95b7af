"""The clarify question tools through an in-memory MCP client, on real SQLite files: a
question is bound to the key its message is sent under, and a tap acts only with that key; a
tap is named by its ``tap_id``, so the same tap handed over again after a crash is still the
answer while another tap changes nothing; a questions file from before ``tap_id`` keeps its
questions."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fastmcp import Client

from fakes.clock import Clock
from mcp_memory.server import build_server
from mcp_memory.settings import MemorySettings

pytestmark = pytest.mark.anyio

KEY = {"agent": "clawdia", "chat_id": "42"}
SENT_UNDER = "reply:bot:7"  # the key the question's message is sent under
CHOICES = ["Paris, France", "Paris, Texas"]


@pytest.fixture
async def client(settings: MemorySettings, clock: Clock) -> AsyncIterator[Client[Any]]:
    async with Client(build_server(settings, clock=clock)) as client:
        yield client


async def call(client: Client[Any], tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert result.structured_content is not None
    return dict(result.structured_content)


async def shown_question(client: Client[Any], choices: list[str] = CHOICES) -> str:
    asked = await call(client, "ask_question", **KEY, question="Which Paris?", choices=choices,
                       ttl_s=3600, message_key=SENT_UNDER)  # fmt: skip
    return str(asked["id"])


async def tap(
    client: Client[Any], qid: str, choice: int | None, tap_id: str, key: str = SENT_UNDER
) -> dict[str, Any]:
    return await call(client, "choose_answer", **KEY, question_id=qid, message_key=key,
                      message_id="7", choice=choice, tap_id=tap_id)  # fmt: skip


async def test_a_tap_on_a_message_sent_under_another_key_finds_no_question(
    client: Client[Any],
) -> None:
    qid = await shown_question(client)

    elsewhere = await tap(client, qid, 1, "bot:101", key="reply:bot:8")
    here = await tap(client, qid, 1, "bot:102")

    assert (elsewhere["changed"], elsewhere["question"]) == (False, None)
    assert (here["changed"], here["question"]["answer"]) == (True, "Paris, Texas")
    assert here["question"]["message_id"] == "7"  # where a typed answer would be drawn


async def test_the_same_tap_again_is_still_the_answer_and_another_tap_is_not(
    client: Client[Any],
) -> None:
    qid = await shown_question(client)

    first = await tap(client, qid, 1, "bot:101")
    again = await tap(client, qid, 1, "bot:101")  # handed over again after a crash
    other = await tap(client, qid, 0, "bot:102")  # a second tap

    assert (first["changed"], first["question"]["answer"]) == (True, "Paris, Texas")
    assert (again["changed"], again["question"]["answer"]) == (True, "Paris, Texas")
    assert (other["changed"], other["question"]["answer"]) == (False, "Paris, Texas")


async def test_a_tap_without_an_id_answers_once(client: Client[Any]) -> None:
    qid = await shown_question(client)
    arguments = {**KEY, "question_id": qid, "message_key": SENT_UNDER, "message_id": "7",
                 "choice": 0}  # fmt: skip

    first = await call(client, "choose_answer", **arguments)
    again = await call(client, "choose_answer", **arguments)

    assert (first["changed"], again["changed"]) == (True, False)


async def test_after_a_typed_answer_the_other_tap_again_changes_nothing(
    client: Client[Any],
) -> None:
    qid = await shown_question(client)
    typing = await tap(client, qid, None, "bot:101")
    typed = await call(client, "turn_context", **KEY, user="42", text="Paris, Kentucky")
    again = await tap(client, qid, None, "bot:101")

    assert (typing["changed"], typing["question"]["state"]) == (True, "typing")
    assert typed["answered"]["answer"] == "Paris, Kentucky"
    assert (again["changed"], again["question"]["answer"]) == (False, "Paris, Kentucky")


async def test_a_tap_id_longer_than_100_characters_is_refused(client: Client[Any]) -> None:
    qid = await shown_question(client)
    result = await client.call_tool(
        "choose_answer",
        {
            **KEY,
            "question_id": qid,
            "message_key": SENT_UNDER,
            "message_id": "7",
            "choice": 0,
            "tap_id": "x" * 101,
        },
        raise_on_error=False,
    )
    assert result.is_error
    assert "tap_id" in str(result.content[0])


async def test_a_questions_file_from_before_tap_ids_keeps_its_open_question(
    settings: MemorySettings, clock: Clock
) -> None:
    settings.data_dir.mkdir(parents=True)
    with sqlite3.connect(settings.questions_path) as db:  # the version-1 schema
        db.executescript(
            "CREATE TABLE questions (id TEXT PRIMARY KEY, agent TEXT NOT NULL,"
            " chat_id TEXT NOT NULL, question TEXT NOT NULL, choices TEXT NOT NULL,"
            " state TEXT NOT NULL, message_id TEXT, answer TEXT, asked_at REAL NOT NULL,"
            " expires_at REAL NOT NULL, answered_at REAL);"
            "CREATE INDEX questions_by_chat ON questions (agent, chat_id, state);"
            "PRAGMA user_version = 1;"
        )
        db.execute(
            "INSERT INTO questions (id, agent, chat_id, question, choices, state, message_id,"
            " asked_at, expires_at) VALUES (?, ?, ?, ?, '[]', 'open', '7', ?, ?)",
            ("q_0123456789ab", "clawdia", "42", "Which city?", clock(), clock() + 3600),
        )
    db.close()

    async with Client(build_server(settings, clock=clock)) as client:
        typed = await call(client, "turn_context", **KEY, user="42", text="Lyon")

    assert (typed["answered"]["id"], typed["answered"]["answer"]) == ("q_0123456789ab", "Lyon")
    assert typed["answered"]["message_id"] == "7"  # drawn where it was shown
    with sqlite3.connect(settings.questions_path) as db:
        (version,) = db.execute("PRAGMA user_version").fetchone()
    db.close()
    assert version == 3
