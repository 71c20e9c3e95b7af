"""Consent in the agent's own chat: the policy in force decides what a proposed change does.

In-process clawdia (fakes/world.py): shopping and pending-actions are the real servers, the
model the fake. Each test writes the agent's ``consent:`` rules into the fleet file before
the app starts; pending-actions reads the same file (``CLAWMESH_AGENTS``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import mcp_types
import pytest
from fastmcp import Client, FastMCP

from fakes.responses_api import call, calls, text
from fakes.world import World, clawdia, last_output
from meshkit.tool_classes import read
from orchestrator.app import App
from orchestrator.channels.consent import ConsentChannel
from orchestrator.channels.console import Console
from orchestrator.core.callbacks import decode
from orchestrator.core.replies import Reply
from orchestrator.core.routes import CommandContext, Deliver, TapContext, TextContext
from orchestrator.mesh.tools import describe
from orchestrator.shutdown import Shutdown

pytestmark = pytest.mark.anyio

CHAT = USER = "4242"


@asynccontextmanager
async def with_consent(
    world: World, monkeypatch: pytest.MonkeyPatch, rules: str
) -> AsyncIterator[App]:
    """Clawdia with ``rules`` (YAML lines under ``consent:``) in her fleet entry."""
    agents = world.settings.agents
    body = "".join(f"      {line.strip()}\n" for line in rules.strip().splitlines())
    agents.write_text(agents.read_text() + "    consent:\n" + body)
    monkeypatch.setenv("CLAWMESH_AGENTS", str(agents))
    async with clawdia(world) as app:
        yield app


async def ask(app: App, words: str, shown_in: str = "1") -> Reply:
    async def deliver(reply: Reply) -> str:
        return shown_in

    return await app.dispatcher.on_text(
        TextContext("clawdia", CHAT, words, user=USER, deliver=Deliver(shown_in, deliver))
    )


async def command(app: App, name: str) -> Reply:
    asked = CommandContext(app.dispatcher.agents["clawdia"], CHAT, USER)
    return await app.dispatcher.command_routes[name].run(asked)


async def tap(app: App, reply: Reply, label: str, shown_in: str = "1") -> tuple[str, Reply | None]:
    """Tap the button of ``reply`` whose label holds ``label``: its notice and the redraw."""
    [data] = [b.data for row in reply.buttons for b in row if label in b.label]
    notices: list[str] = []
    edits: list[Reply] = []

    async def answer(notice: str) -> None:
        notices.append(notice)

    async def edit(new: Reply) -> None:
        edits.append(new)

    await app.dispatcher.on_callback(
        TapContext("clawdia", CHAT, USER, shown_in, data, answer, edit, key=shown_in)
    )
    return notices[0], (edits[0] if edits else None)


async def tool(app: App, server: str, name: str, /, **arguments: Any) -> dict[str, Any]:
    found = app.registry.find(server, name)
    assert found is not None, f"{server}.{name} missing"
    result = await app.registry.call(found, {"agent": "clawdia", **arguments})
    assert result.structured is not None, result.text
    return result.structured


async def on_list(app: App) -> list[str]:
    listing = await tool(app, "shopping", "get_list", list_name="groceries")
    return [i["name"] for lst in listing["lists"] for i in lst["items"]]


def add(world: World, *names: str, said: str = "On it.") -> None:
    world.llm.script(
        calls(*(call("shopping__propose_add_to_list", name=name) for name in names)), text(said)
    )


async def test_a_denied_change_is_told_to_the_model_and_never_staged(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.llm.script(
        calls(call("shopping__propose_add_to_list", name="crisps")),
        lambda body: text(f"Sorry: {last_output(body)['error']}"),
    )
    async with with_consent(world, monkeypatch, "shopping.add_to_list: deny") as app:
        reply = await ask(app, "add crisps to the list")
        pending = app.registry.find("pending-actions", "list_pending")
        assert pending is not None
        staged = await app.registry.call(pending, {"agent": "clawdia", "chat_id": CHAT})

    assert reply.buttons == []  # nothing to confirm: nothing was proposed
    # get_action is for other clients only (with the consent kernel's servers): not the model's
    assert "shopping__propose_add_to_list" in world.requested_tool_names()
    assert "shopping__get_action" not in world.requested_tool_names()
    assert "shopping.add_to_list is not allowed by Clawdia's policy" in reply.text
    assert staged.structured == {"actions": []}


async def test_a_denial_is_decided_and_recorded_by_pending_actions_not_copied(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    add(world, "crisps", said="Shall I?")
    add(world, "nuts", said="Not allowed.")
    async with with_consent(world, monkeypatch, "shopping.add_to_list: deny") as app:
        agents = world.settings.agents
        denying = agents.read_text()
        # Edited while running: pending-actions reads it again, the orchestrator does not.
        agents.write_text(denying.replace("shopping.add_to_list: deny", "shopping.*: ask"))
        asked = await ask(app, "add crisps", shown_in="1")
        agents.write_text(denying + "\n")
        denied = await ask(app, "add nuts", shown_in="2")
        audit = (await command(app, "/audit")).text

    assert asked.buttons  # pending-actions' rule asks: staged, with buttons
    assert denied.buttons == []
    assert "refused by your policy: Shopping: Add nuts to groceries" in audit
    assert "proposed: Shopping: Add crisps to groceries" in audit
    assert "refused by your policy: Shopping: Add crisps" not in audit


async def test_status_shows_each_rule_in_force_and_what_everything_else_gets(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = """
        shopping.add_to_list: auto
        shopping.*: {policy: ask, grant: 1h}
        memory.remember: deny
    """
    async with with_consent(world, monkeypatch, rules) as app:
        status = (await command(app, "/status")).text

    assert status.splitlines()[-4:] == [
        "🔐 memory.remember: deny",
        "🔐 shopping.*: ask (a tap may allow 1 h)",
        "🔐 shopping.add_to_list: auto",
        "🔐 everything else: ask",
    ]


async def test_a_change_the_policy_allows_is_done_at_once_and_the_reply_says_why(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    add(world, "oat milk", said="Added.")
    async with with_consent(world, monkeypatch, "shopping.add_to_list: auto") as app:
        reply = await ask(app, "add oat milk")
        listed = await on_list(app)

    assert reply.buttons == []
    assert reply.text.splitlines()[-1] == (
        "✅ Shopping: Add oat milk to groceries: done (your policy allows it)"
    )
    assert listed == ["oat milk"]


async def test_a_tap_that_allows_for_an_hour_lets_the_next_change_of_its_kind_through(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    add(world, "apples", said="Shall I?")
    add(world, "bread", said="Added.")
    zone = ZoneInfo("Europe/Paris")
    rules = "shopping.add_to_list: {policy: ask, grant: 1h}"
    async with with_consent(world, monkeypatch, rules) as app:
        first = await ask(app, "add apples", shown_in="1")
        labels = [[b.label for b in row] for row in first.buttons]
        notice, redrawn = await tap(app, first, "and allow for 1 h")
        started = datetime.now(zone)
        second = await ask(app, "and bread", shown_in="2")
        grants = await command(app, "/grants")
        listed = await on_list(app)

        [[end]] = grants.buttons
        ended_notice, _ = await tap(app, grants, "End", shown_in="3")
        add(world, "cheese", said="Shall I?")
        third = await ask(app, "and cheese", shown_in="4")
        audit = (await command(app, "/audit")).text

    until = (started.hour + 1) % 24
    assert labels[1] == ["✅ and allow for 1 h"]
    assert decode(first.buttons[1][0].data) is not None
    assert notice.startswith(f"Confirmed: on it. Changes like it need no tap until {until:02d}:")
    assert redrawn is not None
    assert redrawn.buttons == []
    assert second.buttons == []
    assert second.text.splitlines()[-1].startswith(
        "✅ Shopping: Add bread to groceries: done (allowed until "
    )
    assert f"until {until:02d}:" in second.text
    assert listed == ["apples", "bread"]
    assert "shopping.add_to_list: until" in grants.text
    assert end.label == "1. End"
    assert ended_notice.startswith("Ended")
    assert third.buttons  # asks again
    assert "you confirmed: Shopping: Add apples" in audit
    assert "you allowed shopping.add_to_list" in audit
    assert "allowed by your grant: Shopping: Add bread" in audit
    assert "grant ended: shopping.add_to_list" in audit


def clients_only_server() -> FastMCP[Any]:
    server: FastMCP[Any] = FastMCP("follow")
    options = read(title="Follow an action")
    options["meta"] = {"clawmesh": {"clients_only": True}}

    @server.tool(**options)
    def get_action(action_id: str) -> str:
        """How an action a client proposed stands."""
        return action_id

    @server.tool(**read(title="Forecast"))
    def forecast(city: str) -> str:
        """Tomorrow's weather."""
        return city

    return server


async def test_a_tool_for_other_clients_only_is_never_the_models() -> None:
    async with Client(clients_only_server()) as client:
        listed: list[mcp_types.Tool] = await client.list_tools()
    tools = describe("follow", listed, proposes=False)

    assert tools["get_action"].clients_only
    assert not tools["forecast"].clients_only


class Screen:
    """The console's lines as written; ``wait_for`` a line holding some text."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._changed = anyio.Event()

    def write(self, line: str) -> None:
        self.lines.append(line)
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, words: str, timeout_s: float = 5.0) -> None:
        with anyio.fail_after(timeout_s):
            while not any(words in line for line in self.lines):
                await self._changed.wait()


async def test_the_console_shows_a_clients_proposal_and_its_number_taps_it(
    world: World,
) -> None:
    screen = Screen()
    typed, typing = anyio.create_memory_object_stream[str](4)

    async def keyboard() -> AsyncIterator[str]:
        async with typing:
            async for line in typing:
                yield line

    async with clawdia(world) as app:
        console = Console(app.dispatcher, "clawdia", write=screen.write, color=False)
        channel = ConsentChannel(
            app.dispatcher, app.registry, console.notice, wait_s=1, allowed_only=False
        )
        shutdown = Shutdown()
        async with anyio.create_task_group() as running:
            running.start_soon(channel.run, shutdown)
            running.start_soon(console.run, keyboard())
            proposal = await tool(app, "shopping", "propose_add_to_list", name="oat milk")
            await tool(
                app, "pending-actions", "stage_for_client", server="shopping",
                agent="clawdia", user_id=USER, client="claude-desktop", proposal=proposal,
            )  # fmt: skip
            await screen.wait_for("From Claude Desktop:")
            before = await on_list(app)
            await typed.send("1\n")  # [1] ➕ Add
            await screen.wait_for("✅ Shopping: Add oat milk to groceries")
            after = await on_list(app)
            await typed.aclose()
            shutdown.request()
            shutdown.request()

    assert "  [1] ➕ Add" in screen.lines
    assert before == []
    assert after == ["oat milk"]
