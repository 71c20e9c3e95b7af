"""Leases that belong to a consumer: released when it starts again, extended while it works.

A real SQLite file and an injected clock; the MCP surface through an in-memory client.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from fakes.clock import Clock
from mcp_telegram_io.service import Inbox
from mcp_telegram_io.settings import TelegramIOSettings
from mcp_telegram_io.store import InboxStore
from meshkit.queue import Fenced, Holder

pytestmark = pytest.mark.anyio

BOT = "7000001"
FIRST, SECOND = Holder("orchestrator", "run1"), Holder("orchestrator", "run2")

# The inbox as the first release wrote it (schema version 1), before leases had holders.
SCHEMA_V1 = """
CREATE TABLE updates (
    bot TEXT NOT NULL, update_id INTEGER NOT NULL, agent TEXT NOT NULL,
    received_at REAL NOT NULL, body TEXT NOT NULL, leased_until REAL NOT NULL DEFAULT 0,
    deliveries INTEGER NOT NULL DEFAULT 0, acked_at REAL, PRIMARY KEY (bot, update_id)
);
CREATE INDEX updates_waiting ON updates (acked_at, leased_until, received_at);
CREATE TABLE offsets (bot TEXT PRIMARY KEY, next_offset INTEGER NOT NULL);
CREATE TABLE sends (
    key TEXT NOT NULL, part INTEGER NOT NULL, message_id INTEGER NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (key, part)
);
CREATE TABLE blocked (
    agent TEXT NOT NULL, chat_id TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (agent, chat_id)
);
PRAGMA user_version = 1;
"""


def message(update_id: int, text: str) -> str:
    chat = {"id": 42, "type": "private"}
    sender = {"id": 42, "is_bot": False, "first_name": "Ada"}
    body = {"message_id": update_id, "date": 0, "chat": chat, "from": sender, "text": text}
    return json.dumps({"update_id": update_id, "message": body})


def inbox_of(tmp_path: Path, clock: Clock, lease_s: float = 15) -> tuple[Inbox, InboxStore]:
    settings = TelegramIOSettings(
        data_dir=tmp_path, agents=tmp_path / "agents.yaml", lease_s=lease_s
    )
    store = InboxStore(tmp_path / "inbox.sqlite3")
    return Inbox(settings, store, clock=clock), store


async def ids(inbox: Inbox, holder: Holder | None) -> list[str]:
    return [u.id for u in (await inbox.next_updates(10, 0, holder)).updates]


async def test_a_new_run_of_a_consumer_gets_what_its_last_run_held_at_once(tmp_path: Path) -> None:
    clock = Clock()
    inbox, store = inbox_of(tmp_path, clock, lease_s=120)
    await store.record(BOT, "clawdia", [(1, message(1, "hello"))], 2, clock())
    assert await ids(inbox, FIRST) == [f"{BOT}:1"]
    assert await ids(inbox, FIRST) == []  # leased: not handed out twice
    # The first run crashed; the same consumer starts again: no waiting out the 120 s.
    again = (await inbox.next_updates(10, 0, SECOND)).updates
    assert [(u.id, u.deliveries) for u in again] == [(f"{BOT}:1", 2)]
    await store.aclose()


async def test_a_new_run_releases_only_its_own_consumers_leases(tmp_path: Path) -> None:
    clock = Clock()
    inbox, store = inbox_of(tmp_path, clock)
    await store.record(BOT, "clawdia", [(1, message(1, "a")), (2, message(2, "b"))], 3, clock())
    assert await ids(inbox, Holder("other", "x")) == [f"{BOT}:1", f"{BOT}:2"]
    assert await ids(inbox, FIRST) == []
    assert await ids(inbox, None) == []  # an anonymous reader waits like everyone else
    await store.aclose()


async def test_a_superseded_run_gets_no_more_updates(tmp_path: Path) -> None:
    clock = Clock()
    inbox, store = inbox_of(tmp_path, clock)
    assert await ids(inbox, FIRST) == []
    assert await ids(inbox, SECOND) == []
    await store.record(BOT, "clawdia", [(1, message(1, "hello"))], 2, clock())
    with pytest.raises(Fenced, match="a newer run of consumer 'orchestrator' has started"):
        await inbox.next_updates(10, 0, FIRST)
    assert await ids(inbox, SECOND) == [f"{BOT}:1"]
    await store.aclose()


async def test_an_extended_lease_is_handed_to_no_one_else_while_its_holder_works(
    tmp_path: Path,
) -> None:
    clock = Clock()
    inbox, store = inbox_of(tmp_path, clock, lease_s=10)
    await store.record(BOT, "clawdia", [(1, message(1, "a long question"))], 2, clock())
    assert await ids(inbox, FIRST) == [f"{BOT}:1"]
    for _ in range(6):  # a minute of work, extended every 5 s
        clock.advance(5)
        assert await inbox.extend([f"{BOT}:1"], FIRST) == 1
        assert await ids(inbox, Holder("other", "y")) == []
    # Another run cannot extend what it does not hold; once acked, nobody can.
    assert await inbox.extend([f"{BOT}:1"], Holder("other", "y")) == 0
    await inbox.ack([f"{BOT}:1"])
    assert await inbox.extend([f"{BOT}:1"], FIRST) == 0
    await store.aclose()


async def test_a_lease_that_is_not_extended_runs_out_after_the_lease_time(tmp_path: Path) -> None:
    clock = Clock()
    inbox, store = inbox_of(tmp_path, clock, lease_s=10)
    await store.record(BOT, "clawdia", [(1, message(1, "hello"))], 2, clock())
    assert await ids(inbox, FIRST) == [f"{BOT}:1"]
    clock.advance(9)
    assert await ids(inbox, Holder("other", "y")) == []
    clock.advance(2)
    assert await ids(inbox, Holder("other", "y")) == [f"{BOT}:1"]
    assert await inbox.extend([f"{BOT}:1"], FIRST) == 0  # lost: another holds it now
    await store.aclose()


async def test_an_inbox_of_the_first_schema_keeps_its_updates_offsets_and_sends(
    tmp_path: Path,
) -> None:
    path = tmp_path / "inbox.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript(SCHEMA_V1)
        db.execute(
            "INSERT INTO updates (bot, update_id, agent, received_at, body, leased_until,"
            " deliveries) VALUES (?, 5, 'clawdia', 1.0, ?, 9e99, 1)",
            (BOT, message(5, "from before")),
        )
        db.execute("INSERT INTO offsets VALUES (?, 6)", (BOT,))
        db.execute("INSERT INTO sends VALUES ('reply:x', 0, 99, 1.0)")
    db.close()
    clock = Clock()
    inbox, store = inbox_of(tmp_path, clock)
    assert await store.offset(BOT) == 6
    assert await store.before_send("clawdia", "42", "reply:x") == (False, {0: 99})
    assert await store.pending() == 1
    await inbox.ack([f"{BOT}:5"])  # its lease had no holder: it runs out as before
    await store.record(BOT, "clawdia", [(6, message(6, "after"))], 7, clock())
    assert await ids(inbox, FIRST) == [f"{BOT}:6"]
    assert await store.sent_under(BOT, "42", 99) is None  # sent before sends said where
    await store.record_part("reply:y", 0, 100, clock(), bot=BOT, chat_id="42")
    assert await store.sent_under(BOT, "42", 100) == "reply:y"
    await store.aclose()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (4,)  # the paused table added at 4
    db.close()
