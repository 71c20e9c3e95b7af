"""The durable inbox: a real SQLite file, an injected clock, no Telegram."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from fakes.clock import Clock
from mcp_telegram_io.fleet import load_bots
from mcp_telegram_io.service import BadUpdateId, Inbox
from mcp_telegram_io.settings import TelegramIOSettings
from mcp_telegram_io.store import InboxStore
from meshkit.yaml_config import ConfigError

pytestmark = pytest.mark.anyio

BOT = "7000001"


def message(update_id: int, text: str, *, user: int = 42, chat_type: str = "private") -> str:
    chat = {"id": user if chat_type == "private" else -100, "type": chat_type}
    body = {
        "update_id": update_id,
        "message": {
            "message_id": update_id * 10,
            "date": 0,
            "chat": chat,
            "from": {"id": user, "is_bot": False, "first_name": "Ada"},
            "text": text,
        },
    }
    return json.dumps(body)


def settings(tmp_path: Path, lease_s: float = 120) -> TelegramIOSettings:
    return TelegramIOSettings(data_dir=tmp_path, agents=tmp_path / "agents.yaml", lease_s=lease_s)


async def test_a_batch_handed_over_twice_is_kept_once_with_the_offset_after_it(
    tmp_path: Path,
) -> None:
    store = InboxStore(tmp_path / "inbox.sqlite3")
    batch = [(5, message(5, "hi")), (6, message(6, "there"))]
    assert await store.record(BOT, "clawdia", batch, 7, 1.0) == 2
    assert await store.record(BOT, "clawdia", batch, 7, 2.0) == 0  # Telegram resent it
    assert await store.offset(BOT) == 7
    await store.aclose()
    reopened = InboxStore(tmp_path / "inbox.sqlite3")
    assert await reopened.offset(BOT) == 7
    assert await reopened.pending() == 2
    assert await reopened.offset("other-bot") is None
    await reopened.aclose()


async def test_the_offset_never_moves_back(tmp_path: Path) -> None:
    store = InboxStore(tmp_path / "inbox.sqlite3")
    await store.record(BOT, "clawdia", [(9, message(9, "a"))], 10, 1.0)
    await store.record(BOT, "clawdia", [(3, message(3, "old"))], 4, 1.0)
    assert await store.offset(BOT) == 10
    await store.aclose()


async def test_leased_updates_are_handed_to_no_one_else_until_the_lease_runs_out(
    tmp_path: Path,
) -> None:
    clock = Clock()
    store = InboxStore(tmp_path / "inbox.sqlite3")
    inbox = Inbox(settings(tmp_path, lease_s=120), store, clock=clock)
    await store.record(BOT, "clawdia", [(1, message(1, "hello"))], 2, clock())

    first = (await inbox.next_updates(10, 0)).updates
    assert [(u.id, u.kind, u.text, u.chat_id, u.user_id, u.deliveries) for u in first] == [
        (f"{BOT}:1", "text", "hello", "42", "42", 1)
    ]
    assert (await inbox.next_updates(10, 0)).updates == []
    clock.advance(119)
    assert (await inbox.next_updates(10, 0)).updates == []
    clock.advance(2)
    again = (await inbox.next_updates(10, 0)).updates
    assert [(u.id, u.deliveries) for u in again] == [(f"{BOT}:1", 2)]

    assert await inbox.ack([f"{BOT}:1"]) == 1
    assert await inbox.ack([f"{BOT}:1"]) == 0  # twice is harmless
    clock.advance(500)
    assert (await inbox.next_updates(10, 0)).updates == []
    await store.aclose()


async def test_next_updates_waits_for_an_arrival_and_wakes_at_once(tmp_path: Path) -> None:
    store = InboxStore(tmp_path / "inbox.sqlite3")
    inbox = Inbox(settings(tmp_path), store)
    got: list[str] = []

    async def poll() -> None:
        updates = (await inbox.next_updates(10, 30)).updates
        got.extend(u.id for u in updates)

    with anyio.fail_after(5):  # far less than the 30 s long poll
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(poll)
            await anyio.wait_all_tasks_blocked()
            await store.record(BOT, "clawdia", [(1, message(1, "hi"))], 2, 1.0)
            await inbox.arrived("clawdia", [])
    assert got == [f"{BOT}:1"]
    await store.aclose()


async def test_a_poller_lets_the_waiting_reader_take_new_updates_before_it_goes_on(
    tmp_path: Path,
) -> None:
    store = InboxStore(tmp_path / "inbox.sqlite3")
    # The order, not the race: a reader slower than the usual 50 ms is still waited for here
    # (test_with_no_reader_a_poller_goes_on_after_a_moment has the short default).
    inbox = Inbox(settings(tmp_path), store, hand_over_s=10)
    order: list[str] = []

    async def read() -> None:
        updates = (await inbox.next_updates(10, 30)).updates
        order.append(f"handed over {[u.id for u in updates]}")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            await anyio.wait_all_tasks_blocked()
            await store.record(BOT, "clawdia", [(1, message(1, "hi"))], 2, 1.0)
            await inbox.arrived("clawdia", [])
            order.append("poller goes on")
    assert order == [f"handed over ['{BOT}:1']", "poller goes on"]
    await store.aclose()


async def test_with_no_reader_a_poller_goes_on_after_a_moment(tmp_path: Path) -> None:
    store = InboxStore(tmp_path / "inbox.sqlite3")
    inbox = Inbox(settings(tmp_path), store)
    await store.record(BOT, "clawdia", [(1, message(1, "hi"))], 2, 1.0)
    with anyio.fail_after(5):
        await inbox.arrived("clawdia", [])  # nobody reads: it does not wait for one
    assert await store.pending() == 1
    await store.aclose()


async def test_an_empty_long_poll_returns_nothing_after_its_wait(tmp_path: Path) -> None:
    store = InboxStore(tmp_path / "inbox.sqlite3")
    inbox = Inbox(settings(tmp_path), store)
    with anyio.fail_after(5):
        assert (await inbox.next_updates(10, 0.05)).updates == []
    await store.aclose()


async def test_updates_are_normalized_by_kind(tmp_path: Path) -> None:
    store = InboxStore(tmp_path / "inbox.sqlite3")
    inbox = Inbox(settings(tmp_path), store)
    tap = {
        "update_id": 2,
        "callback_query": {
            "id": "cb-1",
            "from": {"id": 42, "is_bot": False, "first_name": "Ada"},
            "chat_instance": "x",
            "data": "pa:c:act_0123456789ab",
            "message": {"message_id": 77, "date": 0, "chat": {"id": 42, "type": "private"}},
        },
    }
    photo = json.loads(message(3, ""))
    del photo["message"]["text"]
    photo["message"]["photo"] = [{"file_id": "f", "file_unique_id": "u", "width": 1, "height": 1}]
    photo["message"]["caption"] = "look"
    edited = {"update_id": 4, "edited_message": json.loads(message(4, "x"))["message"]}
    rows = [
        (1, message(1, "hi", chat_type="group")),
        (2, json.dumps(tap)),
        (3, json.dumps(photo)),
        (4, json.dumps(edited)),
        (5, "{not json"),
    ]
    await store.record(BOT, "clawdia", rows, 6, 1.0)
    updates = {u.update_id: u for u in (await inbox.next_updates(10, 0)).updates}
    assert (updates[1].kind, updates[1].chat_type, updates[1].chat_id) == ("text", "group", "-100")
    assert (updates[2].kind, updates[2].callback_id, updates[2].callback_data) == (
        "callback",
        "cb-1",
        "pa:c:act_0123456789ab",
    )
    assert (updates[2].message_id, updates[2].user_id) == (77, "42")
    assert (updates[3].kind, updates[3].media, updates[3].text) == ("media", "photo", "look")
    assert updates[4].kind == "other"
    assert updates[5].kind == "other"  # unreadable: handed over so it can be acked
    await store.aclose()


async def test_a_malformed_id_is_refused_with_what_to_pass(tmp_path: Path) -> None:
    store = InboxStore(tmp_path / "inbox.sqlite3")
    inbox = Inbox(settings(tmp_path), store)
    with pytest.raises(BadUpdateId, match="pass the 'id' fields of next_updates"):
        await inbox.ack(["12"])
    await store.aclose()


async def test_old_acked_updates_and_sends_are_pruned_but_waiting_ones_kept(tmp_path: Path) -> None:
    store = InboxStore(tmp_path / "inbox.sqlite3")
    await store.record(BOT, "clawdia", [(1, message(1, "a")), (2, message(2, "b"))], 3, 10.0)
    await Inbox(settings(tmp_path), store, clock=lambda: 20.0).ack([f"{BOT}:1"])
    await store.record_part("reply:x", 0, 99, 20.0, bot=BOT, chat_id="42")
    assert await store.prune(before=30.0) == 1
    assert await store.pending() == 1
    assert await store.before_send("clawdia", "42", "reply:x") == (False, {})
    await store.aclose()


async def test_a_blocked_chat_is_recorded_until_the_user_writes_again(tmp_path: Path) -> None:
    store = InboxStore(tmp_path / "inbox.sqlite3")
    await store.block("clawdia", "42", 1.0)
    assert (await store.before_send("clawdia", "42", None))[0]
    assert not (await store.before_send("other", "42", None))[0]
    await store.record(BOT, "clawdia", [(1, message(1, "sorry"))], 2, 2.0, writers=["7"])
    assert (await store.before_send("clawdia", "42", None))[0]  # another chat wrote
    await store.record(BOT, "clawdia", [(2, message(2, "back"))], 3, 3.0, writers=["42"])
    assert not (await store.before_send("clawdia", "42", None))[0]
    await store.aclose()


def test_the_fleet_gives_each_agent_its_first_token_set(tmp_path: Path) -> None:
    agents = tmp_path / "agents.yaml"
    agents.write_text(
        "agents:\n"
        "  clawdia: {bot_token_env: [CLAWDIA_BOT_TOKEN, TELEGRAM_BOT_TOKEN]}\n"
        "  bob: {bot_token_env: BOB_TOKEN}\n"
        "  mute: {}\n"
    )
    env = {"TELEGRAM_BOT_TOKEN": "111:aaa", "BOB_TOKEN": "222:bbb"}
    bots = load_bots(agents, env)
    assert {a: (b.bot_id, b.token.get_secret_value()) for a, b in bots.items()} == {
        "clawdia": ("111", "111:aaa"),
        "bob": ("222", "222:bbb"),
    }
    assert "111:aaa" not in repr(bots)


def test_fleet_token_mistakes_name_the_file_key_and_fix(tmp_path: Path) -> None:
    agents = tmp_path / "agents.yaml"
    agents.write_text("agents:\n  a: {bot_token_env: A}\n  b: {bot_token_env: B}\n")
    with pytest.raises(ConfigError, match=r"agents\.a\.bot_token_env: .*@BotFather"):
        load_bots(agents, {"A": "not a token"})
    with pytest.raises(ConfigError, match="use the same bot"):
        load_bots(agents, {"A": "5:x", "B": "5:x"})
