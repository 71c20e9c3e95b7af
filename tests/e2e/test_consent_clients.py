"""Consent from any MCP client, end to end: the official SDK client as Claude Desktop (stdio,
``python -m mcp_shopping --stdio`` bound to a user) and as a script (Streamable HTTP with a
``MESH_CLIENTS`` credential bound to a user) → shopping → pending-actions (``stage_for_client``
with shopping's relay token) → the orchestrator's consent channel → the fake Telegram, and
back by a tap. Real processes (tests/fakes/mesh.py), one mesh shared by the module; each test
writes as users of its own.

The last test tries every path to a change that no tap allowed (a client calling a confirm
tool, forged taps, a denied kind, a grant stretched across agents, users and clients, a
replayed approval, a server staging in another server's name) and counts the changes: 0.

The tests before it follow a client's proposals on their way to the chat: a flood is
bounded (so many wait, the rest refused in words) and comes in few messages with Confirm
all; a proposal Telegram will not take now is tried again until it can; one it refuses for
good fails, and get_action says why. pending-actions runs with short waits between tries
(``PENDING_NOTICE_RETRY_S``) and a short pace per chat, so nothing waits on real backoffs.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from fakes.mesh import MORE_USERS, STRANGER, TOKENS, Mesh, eventually, running_mesh
from fakes.serving import sdk_client
from fakes.telegram_api import Sent
from meshkit.credentials import Binding, new_client
from meshkit.secret_files import relay_token

pytestmark = pytest.mark.anyio

CLAWDIA, BOB = TOKENS["clawdia"], TOKENS["bob"]
# HTTP clients are admitted at start (MESH_CLIENTS): each bound to a user no other test
# takes (Mesh.new_user hands MORE_USERS out from the front).
SCRIPT_USER, GRANT_USER, OTHER_USER, SOMEONE = reversed(MORE_USERS[-4:])
SCRIPT_TOKEN, SCRIPT = new_client("nightly-script", Binding("clawdia", str(SCRIPT_USER)))
GRANT_SCRIPT_TOKEN, GRANT_SCRIPT = new_client("grant-script", Binding("clawdia", str(GRANT_USER)))
CONSENT = {
    "clawdia": {
        "shopping.add_to_list": "{policy: ask, grant: 1h}",
        "shopping.remove_from_list": "deny",
    }
}
FIRST_MESSAGE_S = 10.0  # the goal is 1 s (bench/consent.py measures it); this bounds a hang
MAX_PENDING = 10  # pending-actions' default bound of a client's proposals waiting for a user
QUICK_NOTICES = {  # tries again within a second, a chat's messages a second apart
    "PENDING_NOTICE_RETRY_S": "0.2",
    "PENDING_NOTICE_RETRY_MAX_S": "1",
    "PENDING_NOTICE_INTERVAL_S": "1",
}


@pytest.fixture(scope="module")
async def mesh(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Mesh]:
    clients = ",".join(client.entry() for client in (SCRIPT, GRANT_SCRIPT))
    async with running_mesh(
        tmp_path_factory.mktemp("consent"),
        agents=("clawdia", "bob"),
        consent=CONSENT,
        server_env={"shopping": {"MESH_CLIENTS": clients}},
        pending_env=QUICK_NOTICES,
    ) as mesh:
        yield mesh


async def met(mesh: Mesh, user: int, bot: str = CLAWDIA, text: str = "/start") -> Sent:
    """The user writes to the bot (a bot may write to a user only once they have); the
    bot's answer."""
    before = len(mesh.telegram.sent(bot, user))
    mesh.telegram.user_message(bot, user, text)
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(bot, user)) > before, 30)
    return mesh.telegram.sent(bot, user)[before]


def desktop(
    mesh: Mesh, user: int, *, agent: str = "clawdia", client: str = "claude-desktop"
) -> StdioServerParameters:
    """Claude Desktop's entry for the shopping server, bound to ``user`` of ``agent``."""
    return mesh.stdio_client("shopping", user, agent=agent, client=client)


@asynccontextmanager
async def script(mesh: Mesh, token: str) -> AsyncIterator[Client]:
    async with sdk_client(mesh.url("shopping"), token) as client:
        yield client


async def propose(
    session: Client, tool: str = "propose_add_to_list", **args: Any
) -> dict[str, Any]:
    result = await session.call_tool(tool, args)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


async def refused(session: Client, tool: str, **args: Any) -> str:
    """The error text of a call that must fail."""
    result = await session.call_tool(tool, args)
    assert result.is_error, result.structured_content
    return " ".join(getattr(part, "text", "") for part in result.content)


async def items(mesh: Mesh, list_name: str, agent: str = "clawdia") -> list[str]:
    """What the list holds, read with the orchestrator's credential."""
    async with sdk_client(mesh.url("shopping"), mesh.token("shopping")) as client:
        result = await client.call_tool("get_list", {"agent": agent, "list_name": list_name})
    listing = result.structured_content or {}
    return sorted(
        f"{item['quantity']:g} {item['name']}"
        for found in listing.get("lists", [])
        if found["name"] == list_name
        for item in found["items"]
    )


async def shown(mesh: Mesh, bot: str, user: int, words: str, timeout_s: float) -> Sent:
    """The bot's message in the user's chat that has ``words`` and buttons."""

    def find() -> Sent | None:
        return next(
            (m for m in mesh.telegram.sent(bot, user) if words in m.text and m.reply_markup),
            None,
        )

    await mesh.telegram.wait_for(lambda: find() is not None, timeout_s)
    found = find()
    assert found is not None
    return found


def button(message: Sent, prefix: str) -> str:
    """The callback data of the button whose data starts with ``prefix`` (``pa:c:`` confirm,
    ``pa:x:`` cancel, ``pa:g:`` confirm and allow for a while)."""
    for row in (message.reply_markup or {}).get("inline_keyboard", []):
        for key in row:
            if str(key.get("callback_data", "")).startswith(prefix):
                return str(key["callback_data"])
    raise AssertionError(f"no {prefix} button on {message.reply_markup}")


async def state_of(client: Client, action_id: str) -> dict[str, Any]:
    return await propose(client, "get_action", action_id=action_id)


async def reaches(client: Client, action_id: str, state: str) -> None:
    async def there() -> bool:
        return bool((await state_of(client, action_id))["state"] == state)

    await eventually(there)


async def test_claude_desktop_over_stdio_proposes_the_user_taps_and_it_is_done_once(
    mesh: Mesh,
) -> None:
    user = mesh.new_user()
    await met(mesh, user)
    async with Client(desktop(mesh, user)) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        assert "propose_add_to_list" in listed
        assert "get_action" in listed
        assert not [name for name in listed if name.startswith("confirm_")]
        started = time.perf_counter()
        proposal = await propose(client, name="oat milk", quantity=2, list_name="desk")
        answered_s = time.perf_counter() - started
        staged = proposal["staged"]
        assert staged["state"] == "pending"
        assert proposal.get("note")  # tells the client's model to follow it with get_action
        message = await shown(mesh, CLAWDIA, user, "From Claude Desktop", FIRST_MESSAGE_S)
        assert "Add 2 oat milk to desk" in message.text
        assert answered_s < FIRST_MESSAGE_S  # the client never waits for the human
        assert await items(mesh, "desk") == []  # nothing changes before the tap
        assert (await state_of(client, staged["action_id"]))["state"] == "pending"

        data = button(message, "pa:c:")
        mesh.telegram.tap(CLAWDIA, user, message.message_id, data)
        mesh.telegram.tap(CLAWDIA, user, message.message_id, data)  # a double tap
        await reaches(client, staged["action_id"], "done")
        status = await state_of(client, staged["action_id"])
        assert status["client"] == "claude-desktop"
        assert status["decided_by"] == "tap"
        assert status["result"]
    await mesh.all_acked()
    assert await items(mesh, "desk") == ["2 oat milk"]  # once


async def test_a_script_over_http_proposes_and_a_cancel_changes_nothing(mesh: Mesh) -> None:
    await met(mesh, SCRIPT_USER)
    async with script(mesh, SCRIPT_TOKEN) as client:
        proposal = await propose(client, name="rye bread", list_name="script")
        action = proposal["staged"]["action_id"]
        message = await shown(mesh, CLAWDIA, SCRIPT_USER, "From Nightly Script", FIRST_MESSAGE_S)
        assert "rye bread to script" in message.text
        assert await items(mesh, "script") == []
        mesh.telegram.tap(CLAWDIA, SCRIPT_USER, message.message_id, button(message, "pa:x:"))
        await reaches(client, action, "cancelled")
        proposal = await propose(client, name="rye bread", list_name="script")
        message = await shown(mesh, CLAWDIA, SCRIPT_USER, "rye bread", FIRST_MESSAGE_S)
        latest = mesh.telegram.sent(CLAWDIA, SCRIPT_USER)[-1]
        mesh.telegram.tap(CLAWDIA, SCRIPT_USER, latest.message_id, button(latest, "pa:c:"))
        await reaches(client, proposal["staged"]["action_id"], "done")
    assert await items(mesh, "script") == ["1 rye bread"]


async def attempt(session: Client, name: str, list_name: str) -> dict[str, Any] | str:
    """A proposal to add ``name``: staged (the proposal), or the refusal's words."""
    result = await session.call_tool("propose_add_to_list", {"name": name, "list_name": list_name})
    if result.is_error:
        return " ".join(getattr(part, "text", "") for part in result.content)
    return dict(result.structured_content or {})


def offered(message: Sent) -> set[str]:
    """The actions a message has buttons for (``pa:c:<action id>``)."""
    rows = (message.reply_markup or {}).get("inline_keyboard", [])
    return {
        str(key["callback_data"])[len("pa:c:") :]
        for row in rows
        for key in row
        if str(key.get("callback_data", "")).startswith("pa:c:")
    }


async def test_a_flood_from_two_desktops_waits_at_most_the_bound_in_two_messages_at_most(
    mesh: Mesh,
) -> None:
    user, listed = mesh.new_user(), "flood"
    await met(mesh, user)
    outcomes: list[dict[str, Any] | str] = []
    async with Client(desktop(mesh, user)) as one, Client(desktop(mesh, user)) as two:
        # The orchestrator is held still while the flood comes (SIGSTOP), as a busy one
        # would be: whatever is handed to it meanwhile is all it will show.
        mesh.orchestrator.send_signal(signal.SIGSTOP)
        try:
            async with anyio.create_task_group() as flood:
                for number in range(60):

                    async def one_more(session: Client, number: int) -> None:
                        outcomes.append(await attempt(session, f"item {number}", listed))

                    flood.start_soon(one_more, (one, two)[number % 2], number)
        finally:
            mesh.orchestrator.send_signal(signal.SIGCONT)
        staged = {o["staged"]["action_id"] for o in outcomes if isinstance(o, dict)}
        refusals = [o for o in outcomes if isinstance(o, str)]
        assert len(staged) == MAX_PENDING  # however many relays stage at once

        def messages() -> list[Sent]:
            return [m for m in mesh.telegram.sent(CLAWDIA, user) if offered(m)]

        def shown_all() -> bool:
            return set().union(*(offered(m) for m in messages())) == staged

        await mesh.telegram.wait_for(shown_all, 30)
        chat = messages()
        [last] = [m for m in chat if len(offered(m)) > 1][-1:]
        together, confirm_all = offered(last), str(last.reply_markup)  # before the tap redraws it
        mesh.telegram.tap(CLAWDIA, user, last.message_id, button(last, "pb:c:"))
        for action in together:
            await reaches(one, action, "done")
        followed = await state_of(two, next(iter(together)))

    assert len(refusals) == 60 - MAX_PENDING
    assert all(
        r.startswith(f"Not proposed: {MAX_PENDING} of your proposals already wait")
        and "Nothing was staged" in r
        for r in refusals
    ), refusals[:3]
    assert len(chat) <= 2  # the flood came in two messages at most, every proposal shown
    assert f"Confirm all {len(together)}" in confirm_all
    assert followed["state"] == "done"
    assert followed["shown_at"] is not None
    assert len(await items(mesh, listed)) == len(together)


async def test_a_proposal_telegram_will_not_take_now_is_tried_again_until_it_is_shown(
    mesh: Mesh,
) -> None:
    user = mesh.new_user()
    await met(mesh, user)
    tries = len(mesh.telegram.calls("sendMessage"))
    # Telegram rate-limits the chat for longer than telegram-io waits, until further notice.
    mesh.telegram.fail_next("sendMessage", 429, retry_after=120, times=1_000_000)
    async with Client(desktop(mesh, user)) as client:
        proposal = await propose(client, name="figs", list_name="later")
        action = proposal["staged"]["action_id"]

        async def said_why() -> bool:
            return "rate-limits" in ((await state_of(client, action))["not_shown"] or "")

        await eventually(said_why)
        await mesh.telegram.wait_for(
            lambda: len(mesh.telegram.calls("sendMessage")) >= tries + 3, 30
        )  # tried again, and again
        waiting = await state_of(client, action)
        mesh.telegram.forget()  # Telegram takes messages again
        message = await shown(mesh, CLAWDIA, user, "figs", 30)

        async def in_the_chat() -> bool:
            return (await state_of(client, action))["shown_at"] is not None

        await eventually(in_the_chat)
        mesh.telegram.tap(CLAWDIA, user, message.message_id, button(message, "pa:c:"))
        await reaches(client, action, "done")

    assert "queued" in proposal["note"]
    assert "was sent" not in proposal["note"]  # the client is not told the chat has it
    assert (waiting["state"], waiting["shown_at"]) == ("pending", None)
    assert len([m for m in mesh.telegram.sent(CLAWDIA, user) if "figs" in m.text]) == 1
    assert await items(mesh, "later") == ["1 figs"]


async def test_a_proposal_telegram_refuses_for_good_fails_and_get_action_says_why(
    mesh: Mesh,
) -> None:
    stranger = mesh.new_user()  # allowed, but has never written to the bot
    blocker = mesh.new_user()
    await met(mesh, blocker)
    mesh.telegram.block(CLAWDIA, blocker)
    failed: dict[int, dict[str, Any]] = {}
    for user in (stranger, blocker):
        async with Client(desktop(mesh, user)) as client:
            proposal = await propose(client, name="dates", list_name="never")
            action = proposal["staged"]["action_id"]

            async def ended(client: Client = client, action: str = action) -> bool:
                return bool((await state_of(client, action))["state"] != "pending")

            await eventually(ended)
            failed[user] = await state_of(client, action)
    entries = json.loads((await audit(mesh, "--json", "--user", str(stranger))).stdout)

    assert failed[stranger]["state"] == failed[blocker]["state"] == "failed"
    assert "chat not found" in failed[stranger]["error"]
    assert "has not written to this bot" in failed[stranger]["error"]
    assert "blocked this bot" in failed[blocker]["error"]
    assert all(f["error"].startswith("Never shown to the user") for f in failed.values())
    assert [e["event"] for e in entries["entries"]] == ["proposed", "failed"]
    assert entries["entries"][-1]["outcome"] == failed[stranger]["error"]
    assert await items(mesh, "never") == []


@contextmanager
def fleet_rule(mesh: Mesh, kind: str, rule: str) -> Iterator[None]:
    """clawdia's consent gets ``kind: rule`` while the mesh runs (pending-actions reads the
    edited file at the next proposal; the orchestrator checked the file only at start)."""
    fleet = mesh.tmp / "config" / "agents.yaml"
    before = fleet.read_text()
    fleet.write_text(before.replace("    consent:\n", f"    consent:\n      {kind}: {rule}\n", 1))
    try:
        yield
    finally:
        fleet.write_text(before)


async def test_a_clients_allow_more_waits_for_the_tap_when_the_fleet_says_auto(
    mesh: Mesh,
) -> None:
    """memory stages an "allow more" for Claude Desktop's user as its consent kernel sends
    every proposal of the kind (tap_only), with ``memory.allow_more: auto`` in the fleet: it
    is shown with buttons (no "allow for a while") and nothing is granted until the tap."""
    user = mesh.new_user()
    await met(mesh, user)
    payload = {"agent": "clawdia", "user": str(user), "day": "2030-01-15", "amount": 0.5,
               "unit": "money"}  # fmt: skip
    proposal = {
        "kind": "allow_more",
        "summary": "Allow $0.50 more today (2030-01-15)",
        "payload": payload,
        "confirm_label": "➕ Allow $0.50 today",
        "tap_only": True,
    }
    relay = str(relay_token(mesh.tmp / "secrets", "memory"))
    where = {"agent": "clawdia", "user_id": str(user), "server": "memory"}
    with fleet_rule(mesh, "memory.allow_more", "auto"):
        async with sdk_client(mesh.url("pending-actions"), relay) as memory:
            staged = await propose(
                memory, "stage_for_client", client="claude-desktop", proposal=proposal,
                **where,
            )  # fmt: skip
            assert (staged["state"], staged["decided_by"]) == ("pending", None)
            message = await shown(mesh, CLAWDIA, user, "Allow $0.50 more", FIRST_MESSAGE_S)
            waiting = await propose(memory, "action_status", action_id=staged["action_id"], **where)
            assert waiting["state"] == "pending"
            assert "From Claude Desktop" in message.text
            with pytest.raises(AssertionError):
                button(message, "pa:g:")  # no grant offered for it

            mesh.telegram.tap(CLAWDIA, user, message.message_id, button(message, "pa:c:"))

            async def done() -> bool:
                status = await propose(
                    memory, "action_status", action_id=staged["action_id"], **where
                )
                return bool(status["state"] == "done")

            await eventually(done)
            status = await propose(memory, "action_status", action_id=staged["action_id"], **where)
    assert status["decided_by"] == "tap"
    entries = json.loads((await audit(mesh, "--json", "--user", str(user))).stdout)["entries"]
    assert [(e["event"], e["how"], bool(e["outcome"])) for e in entries][:2] == [
        ("proposed", None, True),  # "always asked: …"
        ("decided", "tap", True),
    ]
    assert entries[0]["outcome"].startswith("always asked")


async def test_no_path_but_a_tap_or_the_users_own_grant_changes_anything(mesh: Mesh) -> None:
    """Every change here is counted against the list; only the ones a tap (or the grant that
    tap gave, for the same agent, user and client) allowed may be there."""
    user, listed = GRANT_USER, "paths"
    allowed: list[str] = []
    secrets = mesh.tmp / "secrets"
    for who, bot in ((user, CLAWDIA), (OTHER_USER, CLAWDIA), (SOMEONE, CLAWDIA), (user, BOB)):
        await met(mesh, who, bot)

    async with Client(desktop(mesh, user)) as desk, script(mesh, GRANT_SCRIPT_TOKEN) as http:
        # 1. A client calls a confirm tool itself: it is not even listed, and refused.
        fake = {"payload": {"agent": "clawdia", "name": "x"}, "approval": "v2.act_0.1.AAAA"}
        assert "forbidden" in (await refused(http, "confirm_add_to_list", **fake)).lower()
        assert await refused(desk, "confirm_add_to_list", **fake)

        # 2. A proposal, pending; forged taps on it change nothing.
        pending = await propose(desk, name="butter", list_name=listed)
        action = pending["staged"]["action_id"]
        message = await shown(mesh, CLAWDIA, user, "butter", FIRST_MESSAGE_S)
        confirm_data = button(message, "pa:c:")
        await forge_taps(mesh, user, message, confirm_data)
        assert (await state_of(desk, action))["state"] == "pending"
        assert await items(mesh, listed) == []

        # 3. The user's tap with a grant: done, and the same client's next one too...
        mesh.telegram.tap(CLAWDIA, user, message.message_id, button(message, "pa:g:"))
        await reaches(desk, action, "done")
        allowed.append("1 butter")
        granted = await propose(desk, name="jam", list_name=listed)
        assert granted["staged"]["state"] == "executing"
        assert granted["staged"]["decided_by"] == "grant"
        await reaches(desk, granted["staged"]["action_id"], "done")
        allowed.append("1 jam")
        # 4. A kind the agent's policy denies is never staged, never shown (and no grant
        # stretches to it).
        await mesh.all_acked()
        before = len(mesh.telegram.sent(CLAWDIA, user))
        text = await refused(desk, "propose_remove_from_list", name="butter", list_name=listed)
        assert "not allowed" in text
        # ... but not another client of the same user and agent,
        other_client = await propose(http, name="honey", list_name=listed)
        assert other_client["staged"]["state"] == "pending"
        await shown(mesh, CLAWDIA, user, "honey", FIRST_MESSAGE_S)
        assert not [m for m in mesh.telegram.sent(CLAWDIA, user)[before:] if "butter" in m.text]
    # ... nor another user of the same agent through the same client,
    async with Client(desktop(mesh, OTHER_USER)) as other_user:
        assert (await propose(other_user, name="salt", list_name=listed))["staged"][
            "state"
        ] == "pending"
    # ... nor the same user of another agent.
    async with Client(desktop(mesh, user, agent="bob")) as bob:
        assert (await propose(bob, name="pepper", list_name=listed))["staged"]["state"] == "pending"

    # 5. An approval replayed, or used for another payload, changes nothing more.
    allowed.append(await replay_an_approval(mesh, user, listed))

    # 6. A server broken into stages nothing in another server's name, and decides nothing.
    async with sdk_client(mesh.url("pending-actions"), str(relay_token(secrets, "shopping"))) as pa:
        proposal = {"kind": "add_to_list", "summary": "Add 1 × caviar", "payload": {}}
        args = {"agent": "clawdia", "user_id": str(user), "client": "evil", "proposal": proposal}
        assert await refused(pa, "stage_for_client", server="calendar", **args)
        assert await refused(
            pa, "stage_for_client", server="shopping", **{**args, "client": "chat"}
        )
        tap = {"user_id": str(user), "chat_id": str(user), "agent": "clawdia"}
        assert (
            "forbidden"
            in (await refused(pa, "approve", action_id=action, message_key="x", **tap)).lower()
        )

    await mesh.all_acked()
    assert await items(mesh, listed) == sorted(allowed)
    assert await items(mesh, listed, agent="bob") == []
    ledger = await audit(mesh, "--verify")
    assert ledger.returncode == 0, ledger.stdout + ledger.stderr  # the chain is whole
    entries = json.loads((await audit(mesh, "--json", "--user", str(user))).stdout)["entries"]
    events = {(e["event"], e["how"], e["client"]) for e in entries}
    assert ("denied", "policy", "claude-desktop") in events
    assert ("decided", "tap", "claude-desktop") in events
    assert ("decided", "grant", "claude-desktop") in events
    assert [e for e in entries if e["event"] == "granted" and e["client"] == "claude-desktop"]


async def audit(mesh: Mesh, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m mcp_pending_actions audit`` beside the running server, as an operator."""
    pending = mesh.services["pending-actions"]
    return await anyio.to_thread.run_sync(
        lambda: subprocess.run(
            [sys.executable, "-m", "mcp_pending_actions", "audit", *args],
            env=pending.env,
            cwd=pending.cwd,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    )


async def forge_taps(mesh: Mesh, user: int, message: Sent, data: str) -> None:
    """Taps no user made on this message: from a stranger, from another allowed user in their
    own chat, on another message of the same chat, through another bot; each handled to the
    end (acked) before the next."""
    mesh.telegram.tap(CLAWDIA, STRANGER, message.message_id, data, chat_id=user)
    someone = SOMEONE
    other = await met(mesh, user, text="/help")  # another message of the same chat
    theirs = mesh.telegram.sent(CLAWDIA, someone)[-1]
    mesh.telegram.tap(CLAWDIA, someone, theirs.message_id, data, forged=True)
    mesh.telegram.tap(CLAWDIA, user, other.message_id, data, forged=True)
    bobs = mesh.telegram.sent(BOB, user)[-1]
    mesh.telegram.tap(BOB, user, bobs.message_id, data, forged=True)
    await mesh.all_acked()


async def replay_an_approval(mesh: Mesh, user: int, listed: str) -> str:
    """The orchestrator's own path, approved by a tap: the approval used twice, and for
    another payload; returns the one change it made."""
    async with (
        sdk_client(mesh.url("shopping"), mesh.token("shopping")) as shopping,
        sdk_client(mesh.url("pending-actions"), mesh.token("pending-actions")) as pa,
    ):
        made = await shopping.call_tool(
            "propose_add_to_list", {"agent": "clawdia", "name": "tea", "list_name": listed}
        )
        where = {"agent": "clawdia", "chat_id": str(user)}
        staged = await pa.call_tool(
            "stage",
            {
                **where,
                "server": "shopping",
                "proposal": made.structured_content,
                "user_id": str(user),
                "message_key": "test:replay",
            },
        )
        action = (staged.structured_content or {})["action_id"]
        decided = await pa.call_tool(
            "approve",
            {**where, "action_id": action, "user_id": str(user), "message_key": "test:replay"},
        )
        decision = decided.structured_content or {}
        assert decision["ok"], decision
        payload, approval = decision["payload"], decision["approval"]
        first = await shopping.call_tool(
            "confirm_add_to_list", {"payload": payload, "approval": approval}
        )
        again = await shopping.call_tool(
            "confirm_add_to_list", {"payload": payload, "approval": approval}
        )
        assert not first.is_error
        replayed = dict(again.structured_content or {})
        assert replayed.pop("replayed", True) is True  # the first result, said to be again
        assert replayed == {
            k: v for k, v in (first.structured_content or {}).items() if k != "replayed"
        }
        more = {**payload, "quantity": 99}
        assert (
            await shopping.call_tool("confirm_add_to_list", {"payload": more, "approval": approval})
        ).is_error
        await pa.call_tool("complete", {"action_id": action, "result": first.structured_content})
    return "1 tea"
