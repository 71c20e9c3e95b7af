"""The consent channel: a change another MCP client proposed reaches its user's Telegram chat.

In-process, with the Telegram and consent channels running as ``make run`` runs them:
shopping, memory, telegram-io and pending-actions are the real servers (pending-actions
on the movable ``CLOCK``), Telegram and the model the fakes. A client's proposal is staged
as a server staging it for a bound client does (``stage_for_client``, in-process: the
server argument stands); pending-actions queues its notice, and the channel's long poll
brings it to the chat. The policies are the fleet file's ``consent:`` (``CLAWMESH_AGENTS``),
read by pending-actions.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import SecretStr

from fakes.clocked import CLOCK
from fakes.counted import CALLS, Call
from fakes.responses_api import FakeOpenAI, text
from fakes.telegram_api import FakeTelegram, Sent
from fakes.world import API_KEY, write_telegram_fleet
from meshkit.wire.pending_actions import ActionStatus, ClientStaged
from orchestrator.app import App, open_app
from orchestrator.channels.consent import ConsentChannel, telegram_show
from orchestrator.channels.telegram import TelegramChannel
from orchestrator.channels.telegram_io import TelegramIO
from orchestrator.settings import OrchestratorSettings
from orchestrator.shutdown import Shutdown

pytestmark = pytest.mark.anyio

TOKEN = "7000000001:AAFakeTokenForClawdia0123456789abcde"
USER = 4242
DESKTOP = "claude-desktop"


@dataclass
class Mesh:
    telegram: FakeTelegram
    llm: FakeOpenAI
    app: App
    before: int = 0  # the bot's messages to the user before the test's (/start's answer)
    stop: Shutdown = field(default_factory=Shutdown)  # the consent channel's own
    stopped: anyio.Event = field(default_factory=anyio.Event)  # its run has returned

    async def tool(self, server: str, tool: str, /, **arguments: Any) -> dict[str, Any]:
        found = self.app.registry.find(server, tool)
        assert found is not None, f"{server}.{tool} missing"
        result = await self.app.registry.call(found, arguments)
        assert result.structured is not None, result.text
        return result.structured

    async def propose(self, name: str, client: str = DESKTOP, user: int = USER) -> ClientStaged:
        """``client``, bound to clawdia and ``user``, proposes adding ``name`` to the list."""
        proposal = await self.tool("shopping", "propose_add_to_list", agent="clawdia", name=name)
        staged = await self.tool(
            "pending-actions", "stage_for_client", server="shopping", agent="clawdia",
            user_id=str(user), client=client, proposal=proposal,
        )  # fmt: skip
        return ClientStaged.model_validate(staged)

    async def status(self, action_id: str, user: int = USER) -> ActionStatus:
        found = await self.tool(
            "pending-actions", "action_status", action_id=action_id, agent="clawdia",
            user_id=str(user), server="shopping",
        )  # fmt: skip
        return ActionStatus.model_validate(found)

    async def on_list(self) -> list[str]:
        listing = await self.tool("shopping", "get_list", agent="clawdia", list_name="groceries")
        return [i["name"] for found in listing["lists"] for i in found["items"]]

    async def message(self, count: int) -> Sent:
        """The bot's ``count``-th message to the user in the test, once sent."""
        count += self.before
        await self.telegram.wait_for(lambda: len(self.telegram.sent(TOKEN, USER)) >= count)
        return self.telegram.sent(TOKEN, USER)[count - 1]

    async def tap(self, sent: Sent, label: str) -> None:
        """The user taps the button whose label holds ``label``; until the message is
        redrawn."""
        rows = (sent.reply_markup or {}).get("inline_keyboard", [])
        [data] = [b["callback_data"] for row in rows for b in row if label in b["text"]]
        edits = len(sent.edits)
        self.telegram.tap(TOKEN, USER, sent.message_id, data)
        await self.telegram.wait_for(lambda: len(sent.edits) > edits)

    async def told(self) -> list[str]:
        """What the conversation was told outside the model's turns (developer notes)."""
        window = await self.tool("memory", "load_window", agent="clawdia", chat_id=str(USER))
        return [str(i["content"]) for i in window["items"] if i.get("role") == "developer"]


def told_of(made: Call, words: str) -> bool:
    """Whether ``made`` is memory's answered append of a note holding ``words``."""
    items = made.arguments.get("items") or [] if made.tool == "append_items" else []
    return made.answered and any(words in str(item.get("content")) for item in items)


def buttons(sent: Sent) -> list[list[str]]:
    return [
        [b["text"] for b in row] for row in (sent.reply_markup or {}).get("inline_keyboard", [])
    ]


@asynccontextmanager
async def mesh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, consent: str = ""
) -> AsyncIterator[Mesh]:
    """Clawdia on the fake Telegram with ``consent`` (YAML lines under ``consent:``)."""
    telegram, llm = FakeTelegram(), FakeOpenAI()
    telegram.add_bot(TOKEN, name="Clawdia")
    async with telegram.serve() as api, llm.serve() as llm_url:
        registry, agents, env = write_telegram_fleet(
            tmp_path,
            {"CLAWDIA_BOT_TOKEN": TOKEN, "TELEGRAM_API_BASE": api, "TELEGRAM_POLL_TIMEOUT_S": "1"},
            servers={
                "shopping": "{module: 'mcp_shopping.server:build_server', proposes: true}",
                "memory": "{module: 'fakes.counted:memory', role: memory, proposes: true}",
                "telegram-io": "{module: 'fakes.counted:telegram_io', role: telegram-io}",
                "pending-actions": (
                    "{module: 'fakes.counted:pending_actions', role: pending-actions}"
                ),
            },
            tools=["shopping", "memory"],
            prompts={},
            user=USER,
        )
        if consent:
            lines = "".join(f"      {line.strip()}\n" for line in consent.strip().splitlines())
            agents.write_text(agents.read_text() + "    consent:\n" + lines)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        # No chat pace: these tests show one notice after another and wait on each (the pace
        # has its own tests, tests/pending_actions/test_pending_client_notices.py).
        monkeypatch.setenv("PENDING_NOTICE_INTERVAL_S", "0")
        for name in ("MESH_APPROVAL_SIGNING_KEY_FILE", "MESH_APPROVAL_PUBLIC_KEY_FILE"):
            monkeypatch.delenv(name, raising=False)  # the one key pair in DATA_DIR
        CLOCK.offset = 0.0
        settings = OrchestratorSettings(
            registry=registry,
            agents=agents,
            openai_api_key=SecretStr(API_KEY),
            openai_base_url=llm_url,
            llm_timeout_s=5,
            tool_timeout_s=5,
        )
        async with open_app(settings) as app:
            shutdown = Shutdown()
            channel = TelegramChannel(app.dispatcher, app.registry, wait_s=1, say=lambda _: None)
            io = TelegramIO(app.registry, consumer="orchestrator", run="consent")
            consent_channel = ConsentChannel(
                app.dispatcher, app.registry, telegram_show(io), wait_s=1, grace_s=5
            )
            world = Mesh(telegram, llm, app)

            async def consent_run() -> None:
                await consent_channel.run(world.stop)
                world.stopped.set()

            async with anyio.create_task_group() as running:
                running.start_soon(channel.run, shutdown)
                running.start_soon(consent_run)
                await telegram.wait_for(lambda: bool(telegram.commands(TOKEN)))  # live
                telegram.user_message(TOKEN, USER, "/start")  # the bot may write to the user
                await telegram.wait_for(lambda: bool(telegram.sent(TOKEN, USER)))
                world.before = len(telegram.sent(TOKEN, USER))
                CALLS.clear()
                yield world
                telegram.release()
                for stop in (shutdown, world.stop):
                    stop.request()
                    stop.request()  # hurried: nothing of a test is left to finish


async def test_a_clients_proposal_is_shown_from_the_client_and_done_only_after_the_tap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with mesh(tmp_path, monkeypatch) as world:
        world.llm.script(text("Hello!"))
        world.telegram.user_message(TOKEN, USER, "hi")  # a conversation under way
        await world.message(1)
        staged = await world.propose("oat milk")
        shown = await world.message(2)
        offered = buttons(shown)
        before = await world.on_list()
        waiting = await world.status(staged.action_id)

        await world.tap(shown, "Add")
        await CALLS.wait_for(lambda made: any(c.tool == "complete" and c.answered for c in made))
        await CALLS.wait_for(lambda made: any(told_of(c, "Claude Desktop proposed") for c in made))
        after = await world.on_list()
        done = await world.status(staged.action_id)
        told = await world.told()

    assert staged.state == "pending"
    assert shown.text.startswith("From Claude Desktop:")
    assert "Add oat milk to groceries" in shown.text
    assert offered == [["➕ Add", "Skip"]]
    assert before == []  # nothing changes until the tap
    assert waiting.state == "pending"
    assert after == ["oat milk"]
    assert done.state == "done"
    assert done.decided_by == "tap"
    assert buttons(shown) == []  # redrawn: done, no buttons left
    assert "✅ Shopping: Add oat milk to groceries" in shown.edits[-1].text
    assert any("Claude Desktop proposed" in note and "oat milk" in note for note in told)


async def test_a_clients_change_the_policy_allows_is_done_and_the_chat_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with mesh(tmp_path, monkeypatch, "shopping.add_to_list: auto") as world:
        staged = await world.propose("oat milk")
        said = await world.message(1)
        listed = await world.on_list()
        done = await world.status(staged.action_id)

    assert staged.state == "executing"
    assert staged.decided_by == "policy"
    assert said.text.startswith(
        "✅ From Claude Desktop: Shopping: Add oat milk to groceries: done (your policy allows it)"
    )
    assert buttons(said) == []
    assert listed == ["oat milk"]
    assert done.state == "done"


async def test_a_grant_from_a_tap_lets_that_clients_next_change_through_and_no_other_clients(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = "shopping.add_to_list: {policy: ask, grant: 1h}"
    async with mesh(tmp_path, monkeypatch, rules) as world:
        await world.propose("apples")
        first = await world.message(1)
        offered = buttons(first)
        await world.tap(first, "and allow for 1 h")

        again = await world.propose("bread")
        second = await world.message(2)
        other = await world.propose("cheese", client="shopping-script")
        third = await world.message(3)
        listed = await world.on_list()

    assert offered == [["➕ Add", "Skip"], ["✅ and allow for 1 h"]]
    assert again.state == "executing"
    assert again.decided_by == "grant"
    assert second.text.startswith(
        "✅ From Claude Desktop: Shopping: Add bread to groceries: done (allowed until "
    )
    assert other.state == "pending"  # a grant never crosses clients
    assert third.text.startswith("From Shopping Script:")
    assert buttons(third) == [["➕ Add", "Skip"], ["✅ and allow for 1 h"]]
    assert listed == ["apples", "bread"]


def acked(made: list[Call]) -> list[list[str]]:
    """What each next_notices call acked, in the order they were made."""
    return [list(c.arguments.get("ack") or []) for c in made if c.tool == "next_notices"]


async def test_a_shown_notice_is_acked_by_the_next_poll_and_by_a_last_call_when_stopping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with mesh(tmp_path, monkeypatch) as world:
        await world.propose("apples")
        await world.message(1)
        await CALLS.wait_for(lambda made: any(acked(made)))
        [first] = [keys for keys in acked(CALLS.made) if keys]

        world.telegram.hold("sendMessage")
        await world.propose("bread")
        await world.telegram.wait_for(
            lambda: len(world.telegram.calls("sendMessage")) >= world.before + 2
        )
        world.stop.request()  # while the notice is being sent: it gets the grace
        polls = len(acked(CALLS.made))
        world.telegram.release("sendMessage")
        with anyio.fail_after(5):
            await world.stopped.wait()
        last = CALLS.made[-1]

    assert len(first) == 1
    assert first[0].startswith("consent:bat_")
    assert last.tool == "next_notices"  # the last call: the flush
    assert len(acked(CALLS.made)) == polls + 1  # no other poll came after the stop
    [second] = last.arguments["ack"]
    assert second.startswith("consent:bat_")
    assert second != first[0]
    assert (last.arguments["max"], last.arguments["wait_s"]) == (1, 0)


def reported(made: list[Call]) -> list[dict[str, Any]]:
    """What the next_notices calls reported undelivered, in the order they were made."""
    return [
        r for c in made if c.tool == "next_notices" for r in c.arguments.get("undelivered") or []
    ]


async def test_a_proposal_for_a_user_the_agent_does_not_talk_to_is_never_shown_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stranger = 5151
    async with mesh(tmp_path, monkeypatch) as world:
        world.telegram.user_message(TOKEN, stranger, "/start")  # a chat the bot could write to
        staged = await world.propose("crisps", user=stranger)
        await CALLS.wait_for(lambda made: any(reported(made)))  # handled: never to be shown
        failed = await world.status(staged.action_id, user=stranger)
        await world.propose("apples")  # the next one, for the agent's own user, is shown
        shown = await world.message(1)

    assert world.telegram.sent(TOKEN, stranger) == []
    assert failed.state == "failed"
    assert failed.error is not None
    assert "user 5151 is not one clawdia talks to" in failed.error
    assert "apples" in shown.text
