"""The telegram-io server through an in-memory MCP client, against the fake Bot API."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from fakes.telegram_api import FakeTelegram
from fakes.tool_calls import call, call_error
from mcp_telegram_io.poller import PollPolicy
from mcp_telegram_io.server import build_server
from mcp_telegram_io.settings import TelegramIOSettings
from meshkit.wire.telegram_io import TRY_LATER

pytestmark = pytest.mark.anyio

ADA = "7100000001:AAFakeTokenForAda00000123456789abcdef"
BEN = "7100000002:AAFakeTokenForBen00000123456789abcdef"
USER = 42


@asynccontextmanager
async def telegram_io(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    policy: PollPolicy | None = None,
    **settings: Any,
) -> AsyncIterator[tuple[FakeTelegram, Client[Any], TelegramIOSettings]]:
    fake = FakeTelegram()
    fake.add_bot(ADA)
    fake.add_bot(BEN)
    agents = tmp_path / "agents.yaml"
    agents.write_text(
        "agents:\n  ada: {bot_token_env: ADA_TOKEN}\n  ben: {bot_token_env: BEN_TOKEN}\n"
    )
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    monkeypatch.setenv("ADA_TOKEN", ADA)
    monkeypatch.setenv("BEN_TOKEN", BEN)
    async with fake.serve() as base:
        settings.setdefault("pace_s", 0)
        config = TelegramIOSettings(
            api_base=base, agents=agents, data_dir=tmp_path / "data", **settings
        )
        policy = policy or PollPolicy(timeout_s=1, backoff_initial_s=0.05, park_check_s=0.05)
        async with Client(build_server(config, policy=policy)) as client:
            yield fake, client, config


async def eventually(check: Callable[[], Awaitable[bool]]) -> None:
    with anyio.fail_after(10):
        while not await check():  # noqa: ASYNC110 (the pollers are tasks of the server)
            await anyio.sleep(0.02)


def states(status: dict[str, Any]) -> dict[str, str]:
    return {bot["agent"]: bot["state"] for bot in status["bots"]}


async def test_updates_are_leased_acked_and_normalized(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "hello")
        fake.user_message(BEN, USER, "/start")
        got = await call(client, "next_updates", max=10, wait_s=10)
        updates = got["updates"]
        while len(updates) < 2:
            updates += (await call(client, "next_updates", max=10, wait_s=10))["updates"]
        assert sorted((u["agent"], u["kind"], u["text"]) for u in updates) == [
            ("ada", "text", "hello"),
            ("ben", "text", "/start"),
        ]
        assert (await call(client, "ack", ids=[u["id"] for u in updates]))["acked"] == 2
        assert (await call(client, "status"))["pending"] == 0


async def test_a_revoked_token_stops_that_bot_and_the_other_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.revoke(BEN)

        async def ben_stopped() -> bool:
            return states(await call(client, "status")).get("ben") == "unauthorized"

        await eventually(ben_stopped)
        fake.user_message(ADA, USER, "still here")
        got = await call(client, "next_updates", max=10, wait_s=10)
        assert [u["text"] for u in got["updates"]] == ["still here"]
        assert states(await call(client, "status"))["ada"] == "ok"


async def test_the_kill_switch_parks_every_poller_until_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, config):
        config.kill_switch.touch()

        async def parked() -> bool:
            status = await call(client, "status")
            return bool(status["parked"]) and set(states(status).values()) == {"parked"}

        await eventually(parked)
        fake.user_message(ADA, USER, "anyone?")
        assert (await call(client, "next_updates", max=10, wait_s=0.3))["updates"] == []
        config.kill_switch.unlink()
        got = await call(client, "next_updates", max=10, wait_s=10)
        assert [u["text"] for u in got["updates"]] == ["anyone?"]


async def test_a_send_with_the_same_key_is_delivered_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "hi")
        send = {"agent": "ada", "chat_id": str(USER), "text": "Once.", "idempotency_key": "k1"}
        first = await call(client, "send_message", **send)
        again = await call(client, "send_message", **send)
        assert (first["duplicate"], again["duplicate"]) == (False, True)
        assert first["message_ids"] == again["message_ids"]
        assert [s.text for s in fake.sent(ADA, USER)] == ["Once."]


async def test_a_send_acks_the_updates_it_answers_once_sent_and_again_when_repeated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "first")
        fake.user_message(ADA, USER, "second")
        updates: list[dict[str, Any]] = []
        while len(updates) < 2:
            updates += (await call(client, "next_updates", max=10, wait_s=10))["updates"]
        first, second = sorted(updates, key=lambda u: u["update_id"])
        fake.fail_next("sendMessage", 429, retry_after=120)
        refused = {"agent": "ada", "chat_id": str(USER), "text": "No.", "ack": [first["id"]]}
        with pytest.raises(ToolError, match="rate-limits"):
            await client.call_tool("send_message", refused)
        pending_after_refusal = (await call(client, "status"))["pending"]

        send = {"agent": "ada", "chat_id": str(USER), "text": "Done.", "idempotency_key": "k"}
        sent = await call(client, "send_message", **send, ack=[first["id"]])
        again = await call(client, "send_message", **send, ack=[first["id"]])  # a redelivery

        assert pending_after_refusal == 2  # a send that failed acks nothing
        assert (sent["acked"], sent["duplicate"]) == (1, False)
        assert (again["acked"], again["duplicate"]) == (0, True)
        assert [s.text for s in fake.sent(ADA, USER)] == ["Done."]
        assert (await call(client, "status"))["pending"] == 1  # the second: not named
        assert (await call(client, "ack", ids=[first["id"], second["id"]]))["acked"] == 1


async def test_a_blocked_user_is_recorded_and_not_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "hi")
        # The message is in the inbox first: a message that arrives later unblocks the chat.
        assert (await call(client, "next_updates", max=10, wait_s=10))["updates"]
        fake.block(ADA, USER)
        with pytest.raises(ToolError, match="blocked this bot"):
            await client.call_tool(
                "send_message", {"agent": "ada", "chat_id": str(USER), "text": "a"}
            )
        tries = len(fake.calls("sendMessage"))
        with pytest.raises(ToolError, match="blocked this bot"):
            await client.call_tool(
                "send_message", {"agent": "ada", "chat_id": str(USER), "text": "b"}
            )
        assert len(fake.calls("sendMessage")) == tries  # not sent again


async def test_a_long_rate_limit_gives_up_and_says_how_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "hi")
        fake.fail_next("sendMessage", 429, retry_after=120)
        with pytest.raises(ToolError, match="rate-limits this chat for 120 s"):
            await client.call_tool(
                "send_message", {"agent": "ada", "chat_id": str(USER), "text": "a"}
            )
        assert fake.sent(ADA, USER) == []


async def test_a_send_worth_trying_later_says_so_and_a_refusal_for_good_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    never_wrote = USER + 1
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "hi")
        send = {"agent": "ada", "chat_id": str(USER), "text": "a"}
        fake.fail_next("sendMessage", 429, retry_after=120)
        rate_limited = await call_error(client, "send_message", **send)
        not_found = await call_error(
            client, "send_message", **{**send, "chat_id": str(never_wrote)}
        )
        fake.block(ADA, USER)
        blocked = await call_error(client, "send_message", **send)

    assert rate_limited.startswith(TRY_LATER)
    assert not not_found.startswith(TRY_LATER)
    assert "chat not found (the user has not written to this bot yet" in not_found
    assert not blocked.startswith(TRY_LATER)


async def test_buttons_edits_and_callback_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "hi")
        buttons = [[{"label": "✅ Yes", "data": "pa:c:act_0123456789ab"}]]
        sent = await call(
            client, "send_message", agent="ada", chat_id=str(USER), text="Sure?", buttons=buttons
        )
        message_id = sent["message_ids"][0]
        markup = fake.sent(ADA, USER)[0].reply_markup
        assert markup is not None
        assert markup["inline_keyboard"][0][0]["callback_data"] == "pa:c:act_0123456789ab"
        query = fake.tap(ADA, USER, message_id, "pa:c:act_0123456789ab")
        answered = await call(client, "answer_callback", agent="ada", callback_id=query, text="Ok")
        assert answered["ok"]
        await call(
            client, "edit_message", agent="ada", chat_id=str(USER), message_id=message_id,
            text="✅ **Done**",
        )  # fmt: skip
        edited = fake.sent(ADA, USER)[0]
        assert (edited.text, edited.reply_markup) == ("✅ Done", None)
        too_long = [[{"label": "x", "data": "é" * 33}]]  # 33 characters, 66 bytes
        with pytest.raises(ToolError, match="1-64 bytes"):
            await client.call_tool(
                "send_message",
                {"agent": "ada", "chat_id": str(USER), "text": "t", "buttons": too_long},
            )
        with pytest.raises(ToolError, match="no bot for agent 'zed'"):
            await client.call_tool("send_message", {"agent": "zed", "chat_id": "1", "text": "t"})


async def test_sends_to_one_chat_are_paced_after_a_burst(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch, pace_s=0.5, pace_burst=2) as (fake, client, _):
        fake.user_message(ADA, USER, "hi")
        start = time.time()  # the fake's clock; the chat's bucket starts full after this
        for n in range(4):
            await call(client, "send_message", agent="ada", chat_id=str(USER), text=f"m{n}")
        times = [s.time - start for s in fake.sent(ADA, USER)]
        assert [s.text for s in fake.sent(ADA, USER)] == ["m0", "m1", "m2", "m3"]
        # Two at once, then one every 0.5 s: the third is not sent before 0.5 s, the fourth not
        # before 1 s. Only lower bounds: a slow machine may delay any send, and a delayed send
        # leaves the next one less to wait (the pacer's exact turns: tests/telegram/test_pacer.py).
        # 10 ms allow for the fake's wall clock against the pacer's monotonic one.
        assert times[2] >= 0.49
        assert times[3] >= 0.99


async def test_a_bug_stops_only_its_bots_poller_which_status_shows_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken_sleep(seconds: float) -> None:
        raise RuntimeError("a bug, not the network")  # where ada's poller backs off

    policy = PollPolicy(timeout_s=1, sleep=broken_sleep)
    async with telegram_io(tmp_path, monkeypatch, policy) as (fake, client, _):
        fake.fail_next("getUpdates", 502, token=ADA)  # ada backs off once: into the bug

        async def ada_failed() -> bool:
            return states(await call(client, "status"))["ada"] == "failed"

        await eventually(ada_failed)
        ada_polls = [c.token for c in fake.calls("getUpdates")].count(ADA)
        fake.user_message(BEN, USER, "still here?")
        batch = await call(client, "next_updates", wait_s=5)
        assert [u["text"] for u in batch["updates"]] == ["still here?"]  # ben polls on
        assert states(await call(client, "status"))["ben"] == "ok"
        # ada's poller was not retried as if the network had failed: no poll since.
        assert [c.token for c in fake.calls("getUpdates")].count(ADA) == ada_polls


async def test_409_backs_off_from_2_s_doubling_to_60_s_and_starts_again_at_2_after_polling_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each wait of the poller is handed to the test, which lets it end when it wants.
    asked, waits = anyio.create_memory_object_stream[float](100)
    permit, permits = anyio.create_memory_object_stream[None](100)

    async def recorded_sleep(seconds: float) -> None:
        await asked.send(seconds)
        await permits.receive()

    policy = PollPolicy(timeout_s=1, sleep=recorded_sleep)  # the default conflict backoff
    async with telegram_io(tmp_path, monkeypatch, policy) as (fake, client, _):
        fake.conflict(ADA)  # another poller holds ada's token; ben is not affected
        steps = [2, 4, 8, 16, 32, 60, 60, 60]
        seen = []
        for n, step in enumerate(steps, 1):
            with anyio.fail_after(10):
                wait = await waits.receive()
            seen.append(wait)
            assert 0.8 * step <= wait <= step, (step, seen)
            if n < len(steps):  # the last wait lasts until the conflict is over
                await permit.send(None)
        status = await call(client, "status")
        assert states(status) == {"ada": "conflict", "ben": "ok"}
        (ada,) = [bot for bot in status["bots"] if bot["agent"] == "ada"]
        assert "another poller or a webhook" in ada["detail"]

        fake.conflict(ADA, on=False)  # the other poller left
        fake.user_message(ADA, USER, "back?")
        await permit.send(None)
        got = await call(client, "next_updates", max=10, wait_s=10)
        assert [u["text"] for u in got["updates"]] == ["back?"]
        assert states(await call(client, "status"))["ada"] == "ok"

        fake.conflict(ADA)  # a new conflict starts again from the first step
        with anyio.fail_after(10):
            wait = await waits.receive()
        assert 1.6 <= wait <= 2
        fake.conflict(ADA, on=False)
        await permit.send(None)


async def test_a_reply_longer_than_five_messages_is_sent_as_five_ending_with_a_line_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paragraphs = [f"**Part {i}:** " + " ".join(f"w{i}.{j}" for j in range(120)) for i in range(60)]
    reply = "\n\n".join(paragraphs)  # about 60,000 characters: some fifteen messages
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "tell me everything")
        send = {"agent": "ada", "chat_id": str(USER), "text": reply, "idempotency_key": "long"}
        sent = await call(client, "send_message", **send)
        assert sent["parts"] == 5
        messages = fake.sent(ADA, USER)
        assert len(messages) == 5
        assert all(len(m.text.encode("utf-16-le")) // 2 <= 4096 for m in messages)
        *kept, notice = messages[-1].text.split("\n")
        match = re.fullmatch(
            r"✂ The reply was cut here: ([\d,]+) more characters were too long to send\.", notice
        )
        assert match is not None, notice
        delivered = [w for m in messages[:-1] for w in m.text.split()] + "\n".join(kept).split()
        shown = reply.replace("**", "")  # the whole reply as Telegram would show it
        assert delivered == shown.split()[: len(delivered)]  # what was sent is its beginning
        left_out = len(shown) - shown.index(delivered[-1]) - len(delivered[-1])  # words unique
        assert int(match[1].replace(",", "")) == left_out
        assert messages[-1].entities  # the formatting of the last part is kept beside the line

        again = await call(client, "send_message", **send)
        assert again["duplicate"] is True
        assert len(fake.sent(ADA, USER)) == 5


async def test_an_edit_too_long_for_one_message_is_cut_with_a_line_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "hi")
        sent = await call(client, "send_message", agent="ada", chat_id=str(USER), text="Soon.")
        smileys = "😀 " * 2000  # 4,000 characters, but 6,000 UTF-16 units for Telegram
        edit = {"agent": "ada", "chat_id": str(USER), "message_id": sent["message_ids"][0]}
        await call(client, "edit_message", **edit, text=smileys)
        (message,) = fake.sent(ADA, USER)
        assert message.text.startswith("😀 😀")
        assert message.text.endswith("more characters were too long to send.")
        assert len(message.text.encode("utf-16-le")) // 2 <= 4096


async def test_a_reply_of_300000_characters_is_sent_as_five_messages_saying_it_was_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reply = "\n\n".join(f"{i:06d} " + "lorem ipsum " * 40 for i in range(600))  # 300,000+
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "everything, please")
        sent = await call(client, "send_message", agent="ada", chat_id=str(USER), text=reply)
        assert sent["parts"] == 5
        messages = fake.sent(ADA, USER)
        assert len(messages) == 5
        assert messages[0].text.startswith("000000 lorem ipsum")
        match = re.search(r"([\d,]+) more characters were too long to send\.$", messages[-1].text)
        assert match is not None
        assert int(match[1].replace(",", "")) > 250_000


async def test_the_tools_take_a_consumer_and_its_run_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch, lease_s=60) as (fake, client, _):
        fake.user_message(ADA, USER, "hello")
        holder = {"consumer": "orchestrator", "run": "a1"}
        got = await call(client, "next_updates", max=10, wait_s=10, **holder)
        assert (got["lease_s"], [u["text"] for u in got["updates"]]) == (60, ["hello"])
        held = [u["id"] for u in got["updates"]]
        assert (await call(client, "extend_leases", ids=held, **holder))["extended"] == 1
        restarted = {"consumer": "orchestrator", "run": "a2"}
        again = await call(client, "next_updates", max=10, wait_s=10, **restarted)
        assert [u["id"] for u in again["updates"]] == held
        assert "newer run" in await call_error(client, "next_updates", max=1, **holder)
        refused = await call_error(client, "next_updates", max=1, consumer="orchestrator")
        assert refused == "pass consumer and run together (or neither)"


# A tap as it is handed out (with the key its message was sent under), and its outcome

BUTTONS = [[{"label": "✅ Yes", "data": "pa:c:act_0123456789ab"}]]
DATA = "pa:c:act_0123456789ab"


async def send(client: Client[Any], agent: str, key: str | None = None) -> int:
    """A message with BUTTONS to USER, under ``key``; its id."""
    keyed = {} if key is None else {"idempotency_key": key}
    sent = await call(
        client, "send_message", agent=agent, chat_id=str(USER), text="Sure?", buttons=BUTTONS,
        **keyed,
    )  # fmt: skip
    return int(sent["message_ids"][-1])


async def taps(client: Client[Any], count: int) -> list[dict[str, Any]]:
    """The next ``count`` taps handed out (the user's messages before them acked)."""
    found: list[dict[str, Any]] = []
    with anyio.fail_after(10):
        while len(found) < count:
            updates = (await call(client, "next_updates", max=10, wait_s=5))["updates"]
            await call(client, "ack", ids=[u["id"] for u in updates if u["kind"] != "callback"])
            found += [u for u in updates if u["kind"] == "callback"]
    return found


async def test_a_tap_is_handed_out_with_the_key_its_message_was_sent_under(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "hi")
        fake.user_message(BEN, USER, "hi")
        keyed = await send(client, "ada", "reply:ada:1")
        plain = await send(client, "ada")
        bens = await send(client, "ben", "reply:ben:1")  # Ben's chat has message ids of its own

        fake.tap(ADA, USER, keyed, DATA)
        fake.tap(ADA, USER, plain, DATA)
        fake.tap(BEN, USER, bens, DATA)
        handed = await taps(client, 3)

    by_message = {(u["agent"], u["message_id"]): u["message_key"] for u in handed}
    assert by_message == {
        ("ada", keyed): "reply:ada:1",
        ("ada", plain): None,  # not sent under a key: no binding can name it
        ("ben", bens): "reply:ben:1",
    }
    assert keyed == bens  # the same message id in each bot's chat, told apart


async def test_a_tap_that_comes_before_its_sends_answer_waits_for_that_send(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The user sees the message (and taps) before Telegram's answer to the send reaches
    # telegram-io: the tap is not handed out without its key.
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "hi")
        await taps(client, 0)
        fake.hold("sendMessage", answers=True)
        handed: list[dict[str, Any]] = []
        async with anyio.create_task_group() as running:
            running.start_soon(send, client, "ada", "reply:ada:2")
            await fake.wait_for(lambda: bool(fake.sent(ADA, USER)))
            fake.tap(ADA, USER, fake.sent(ADA, USER)[-1].message_id, DATA)

            async def poll() -> None:
                handed.extend(await taps(client, 1))

            running.start_soon(poll)
            with anyio.move_on_after(0.5):  # not before the send is recorded
                await fake.wait_for(lambda: bool(handed))
            assert handed == []
            fake.release()

    [tap] = handed
    assert tap["message_key"] == "reply:ada:2"


async def test_a_taps_answer_redraw_and_ack_are_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "hi")
        message = await send(client, "ada", "reply:ada:3")
        query = fake.tap(ADA, USER, message, DATA)
        [tap] = await taps(client, 1)

        done = await call(
            client, "edit_message", agent="ada", chat_id=str(USER), message_id=message,
            text="✅ Added", callback_id=query, notice="Confirmed: on it.", ack=[tap["id"]],
        )  # fmt: skip
        again = await call(
            client, "edit_message", agent="ada", chat_id=str(USER), message_id=message,
            text="✅ Added", callback_id=query, notice="Confirmed: on it.", ack=[tap["id"]],
        )  # fmt: skip
        status = await call(client, "status")

    assert (done["ok"], done["acked"], again["ok"], again["acked"]) == (True, 1, True, 0)
    assert [a.text for a in fake.callback_answers(ADA)][:1] == ["Confirmed: on it."]
    assert fake.sent(ADA, USER)[-1].text == "✅ Added"
    assert status["pending"] == 0


async def test_a_tap_that_changes_nothing_is_answered_and_acked_in_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "hi")
        message = await send(client, "ada", "reply:ada:4")
        query = fake.tap(ADA, USER, message, DATA)
        [tap] = await taps(client, 1)

        done = await call(
            client, "answer_callback", agent="ada", callback_id=query, text="already done",
            ack=[tap["id"]],
        )  # fmt: skip
        status = await call(client, "status")

    assert (done["ok"], done["acked"]) == (True, 1)
    assert [a.text for a in fake.callback_answers(ADA)] == ["already done"]
    assert status["pending"] == 0


async def bots_up(client: Client[Any]) -> None:
    """Until every bot is up (its poller has made it ready), as the orchestrator waits."""

    async def up() -> bool:
        return set(states(await call(client, "status")).values()) == {"ok"}

    await eventually(up)


async def test_a_draft_shows_the_reply_so_far_formatted_and_is_never_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "hi")
        await bots_up(client)
        draft = {"agent": "ada", "chat_id": str(USER), "draft_id": 7}
        assert (await call(client, "send_draft", **draft, text="Sunny in **Par"))["ok"]
        assert (await call(client, "send_draft", **draft, text="Sunny in **Paris**"))["ok"]
        assert (await call(client, "send_draft", **draft))["ok"]  # "" shows "Thinking…"

        shown = fake.drafts(ADA, USER)
        assert [(d.draft_id, d.text) for d in shown] == [
            (7, "Sunny in **Par"),  # half-written Markdown is shown as it is
            (7, "Sunny in Paris"),
            (7, ""),
        ]
        assert shown[1].entities == [{"type": "bold", "offset": 9, "length": 5}]
        assert fake.sent(ADA, USER) == []


async def test_a_refused_draft_is_an_error_and_a_busy_one_says_try_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "hi")
        await bots_up(client)
        draft = {"agent": "ada", "chat_id": str(USER), "draft_id": 7, "text": "so far"}
        fake.refuse_drafts(ADA)
        refused = await call_error(client, "send_draft", **draft)
        fake.refuse_drafts(ADA, on=False)
        fake.fail_next("sendMessageDraft", 429, retry_after=5)
        busy = await call_error(client, "send_draft", **draft)

        assert refused.startswith("Telegram refused the draft: ")
        assert not refused.startswith(TRY_LATER)
        assert busy == f"{TRY_LATER}Telegram rate-limits drafts for 5 s"
        group = await call_error(client, "send_draft", **(draft | {"chat_id": "-100123"}))
        assert "private chats only" in group
        assert fake.drafts(ADA) == []


async def test_a_reply_takes_its_placeholders_place_and_a_tap_on_it_names_the_replys_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "hi")
        await bots_up(client)
        chat = {"agent": "ada", "chat_id": str(USER)}
        placeholder = await call(
            client, "send_message", **chat, text="Sunny in", idempotency_key="draft:u1"
        )
        [message_id] = placeholder["message_ids"]
        reply = {
            **chat, "text": "Sunny in **Paris**.", "idempotency_key": "reply:u1",
            "buttons": [[{"label": "OK", "data": "pa:c:act_1"}]], "replace": message_id,
        }  # fmt: skip
        first = await call(client, "send_message", **reply)
        again = await call(client, "send_message", **reply)

        assert first["message_ids"] == again["message_ids"] == [message_id]
        assert again["duplicate"]
        [sent] = fake.sent(ADA, USER)
        assert (sent.text, len(sent.edits)) == ("Sunny in Paris.", 1)
        assert sent.reply_markup == {
            "inline_keyboard": [[{"text": "OK", "callback_data": "pa:c:act_1"}]]
        }
        fake.tap(ADA, USER, message_id, "pa:c:act_1")
        taps: list[dict[str, Any]] = []
        while not taps:  # the message "hi" comes first
            tapped = await call(client, "next_updates", max=10, wait_s=10)
            taps = [u for u in tapped["updates"] if u["kind"] == "callback"]
        assert taps[0]["message_key"] == "reply:u1"


async def test_a_reply_whose_placeholder_is_gone_is_sent_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with telegram_io(tmp_path, monkeypatch) as (fake, client, _):
        fake.user_message(ADA, USER, "hi")
        await bots_up(client)
        chat = {"agent": "ada", "chat_id": str(USER)}
        sent = await call(
            client, "send_message", **chat, text="The whole reply.", replace=999
        )  # no such message: deleted by the user, say

        [message] = fake.sent(ADA, USER)
        assert sent["message_ids"] == [message.message_id]
        assert message.text == "The whole reply."
