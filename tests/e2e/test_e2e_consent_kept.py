"""What the docs promise about consent and the allowance, kept, through Telegram and another
MCP client: real processes (tests/fakes/mesh.py), the fake Telegram and the fake OpenAI.

- A denial in the chat is in the ledger, written by pending-actions, as a client's is.
- A client's change confirmed by a tap reaches the next turn's model, after ``/new`` too.
- The tool output of a change the policy allows says it is being made, not "nothing changed".
- ``/audit`` says when a grant ends in local time, once; ending one in ``/grants`` redraws it.
- Two messages held at the allowance's cap are answered once each, in order, after one tap,
  across a restart of the orchestrator; the second "Allow more" grants nothing more.

One mesh is shared by the consent tests (each writes as a user of its own); the allowance
test starts its own, with an allowance.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import anyio.to_thread
import pytest
from mcp import Client

from fakes.mesh import TOKENS, USER, Mesh, running_mesh
from fakes.responses_api import call, calls, text
from fakes.serving import sdk_client
from fakes.telegram_api import Sent

pytestmark = pytest.mark.anyio

CLAWDIA = TOKENS["clawdia"]
ORDERS = "date,item,store,quantity,price\n2026-10-20,Oat milk 1L,Lidl,4,1.19\n"
CONSENT = {
    "clawdia": {
        "shopping.reorder": "deny",
        "shopping.add_to_list": "auto",
        "shopping.remove_from_list": "{policy: ask, grant: 1h}",
    }
}
ALLOWANCE = "{per_user: {daily: '1000 tokens'}, more: '500 tokens'}"
ZONE = ZoneInfo("Europe/Paris")  # the mesh's agents' time zone


@pytest.fixture(scope="module")
async def mesh(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Mesh]:
    async with running_mesh(
        tmp_path_factory.mktemp("kept"), consent=CONSENT, orders_csv=ORDERS
    ) as mesh:
        yield mesh


async def said(mesh: Mesh, user: int, words: str, count: int = 1) -> list[Sent]:
    """The user writes ``words``; the bot's next ``count`` messages."""
    before = len(mesh.telegram.sent(CLAWDIA, user))
    mesh.telegram.user_message(CLAWDIA, user, words)
    await mesh.telegram.wait_for(
        lambda: len(mesh.telegram.sent(CLAWDIA, user)) >= before + count, 60
    )
    return mesh.telegram.sent(CLAWDIA, user)[before : before + count]


async def tapped(mesh: Mesh, user: int, message: Sent, label: str, edits: int = 1) -> None:
    """The user taps ``message``'s button labelled ``label``; until the message is redrawn."""
    mesh.telegram.tap(CLAWDIA, user, message.message_id, data_of(message, label))
    await mesh.telegram.wait_for(lambda: len(message.edits) >= edits, 60)


def data_of(message: Sent, label: str) -> str:
    for row in (message.reply_markup or {}).get("inline_keyboard", []):
        for button in row:
            if label in button["text"]:
                return str(button["callback_data"])
    raise AssertionError(f"no button {label!r} on {message.reply_markup}")


def buttons(message: Sent) -> list[str]:
    rows = (message.reply_markup or {}).get("inline_keyboard", [])
    return [button["text"] for row in rows for button in row]


def outputs(request: dict[str, Any]) -> list[str]:
    """The function_call_output strings a Responses request carries."""
    return [i["output"] for i in request["input"] if i.get("type") == "function_call_output"]


def told(request: dict[str, Any]) -> list[str]:
    """The developer notes a Responses request carries."""
    return [
        str(i["content"])
        for i in request["input"]
        if i.get("type") == "message" and i.get("role") == "developer"
    ]


async def audit(mesh: Mesh, user: int) -> list[dict[str, Any]]:
    """``python -m mcp_pending_actions audit --json`` for ``user``, as an operator runs it."""
    pending = mesh.services["pending-actions"]
    done = await anyio.to_thread.run_sync(
        lambda: subprocess.run(
            [sys.executable, "-m", "mcp_pending_actions", "audit", "--json", "--user", str(user)],
            env=pending.env,
            cwd=pending.cwd,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    )
    assert done.returncode == 0, done.stderr
    entries: list[dict[str, Any]] = json.loads(done.stdout)["entries"]
    return entries


async def pending_call(mesh: Mesh, tool: str, **arguments: Any) -> dict[str, Any]:
    async with sdk_client(mesh.url("pending-actions"), mesh.token("pending-actions")) as client:
        result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return dict(result.structured_content or {})


# 8a: a denial in the chat is in the ledger


async def test_a_change_the_policy_denies_in_the_chat_is_in_the_ledger(mesh: Mesh) -> None:
    user = mesh.new_user()
    mesh.llm.script(
        calls(call("shopping__propose_reorder", item="oat milk")),
        text("I am not allowed to reorder that."),
    )
    [reply] = await said(mesh, user, "reorder oat milk")
    [audited] = await said(mesh, user, "/audit")
    entries = await audit(mesh, user)
    waiting = await pending_call(mesh, "list_pending", agent="clawdia", chat_id=str(user))

    assert reply.text == "I am not allowed to reorder that."
    assert buttons(reply) == []
    [output] = outputs(mesh.llm.requests[1])
    assert "shopping.reorder is not allowed by Clawdia's policy" in output
    assert [(e["event"], e["how"], e["client"], e["kind"]) for e in entries] == [
        ("denied", "policy", "chat", "reorder")
    ]
    assert entries[0]["summary"].startswith("Reorder 4 × Oat milk 1L")
    assert "refused by your policy: Shopping: Reorder 4 × Oat milk 1L" in audited.text
    assert waiting == {"actions": []}  # never staged


# 8c: the tool output the model reads says what happens


async def test_a_change_the_policy_allows_is_read_by_the_model_as_being_made(mesh: Mesh) -> None:
    user = mesh.new_user()
    mesh.llm.script(
        calls(call("shopping__propose_add_to_list", name="oat milk", list_name=f"auto{user}")),
        text("Adding oat milk."),
    )
    [reply] = await said(mesh, user, "add oat milk")

    [output] = outputs(mesh.llm.requests[1])
    assert "done (your policy allows it)" in reply.text
    assert "Nothing has changed yet" not in output
    assert "Do not say it is done" not in output
    assert "made as soon as your reply is sent" in json.loads(output)["note"]


async def test_a_change_a_grant_may_allow_is_read_by_the_model_both_ways(mesh: Mesh) -> None:
    user = mesh.new_user()
    listed = f"both{user}"
    mesh.llm.script(
        calls(call("shopping__propose_add_to_list", name="oat milk", list_name=listed)),
        text("Added."),
        calls(call("shopping__propose_remove_from_list", name="oat milk", list_name=listed)),
        text("Shall I remove it?"),
    )
    await said(mesh, user, "add oat milk")
    [reply] = await said(mesh, user, "remove the oat milk")

    note = json.loads(outputs(mesh.llm.requests[-1])[-1])["note"]
    assert "✅ and allow for 1 h" in buttons(reply)
    assert note.startswith("Nothing has changed yet")
    assert "unless they have allowed such changes for a while" in note


# 8b: a client's change reaches the next turn, in a new conversation


async def test_a_clients_change_confirmed_by_a_tap_is_told_to_the_next_turn_after_new(
    mesh: Mesh,
) -> None:
    user = mesh.new_user()
    listed = f"desk{user}"
    mesh.llm.script(text("Hello!"), text("Claude Desktop removed the oat milk."))
    await said(mesh, user, "hello")
    [fresh] = await said(mesh, user, "/new")
    async with Client(mesh.stdio_client("shopping", user)) as desktop:
        added = await desktop.call_tool(
            "propose_add_to_list", {"name": "oat milk", "list_name": listed}
        )
        assert not added.is_error, added.content  # allowed by the policy: done at once
        await mesh.telegram.wait_for(
            lambda: any("From Claude Desktop" in m.text for m in mesh.telegram.sent(CLAWDIA, user)),
            30,
        )
        removal = await desktop.call_tool(
            "propose_remove_from_list", {"name": "oat milk", "list_name": listed}
        )
        assert not removal.is_error, removal.content

        def shown() -> Sent | None:
            return next(
                (
                    m
                    for m in mesh.telegram.sent(CLAWDIA, user)
                    if "Remove" in m.text and m.reply_markup
                ),
                None,
            )

        await mesh.telegram.wait_for(lambda: shown() is not None, 30)
        message = shown()
        assert message is not None
        await tapped(mesh, user, message, "Remove")
    await mesh.all_acked()  # the tap's outcome told to the conversation
    [answer] = await said(mesh, user, "what changed on my desk list?")

    notes = told(mesh.llm.requests[-1])
    assert fresh.text.startswith("Fresh start")
    assert answer.text == "Claude Desktop removed the oat milk."
    assert any("The user confirmed and it is done: Remove" in note for note in notes), notes
    assert not [
        i for i in mesh.llm.requests[-1]["input"] if i.get("content") == "hello"
    ]  # the conversation before /new stays forgotten


# 8d: grants in /audit and /grants


async def granted(mesh: Mesh, user: int) -> None:
    """A grant for shopping.remove_from_list, given by the user's tap."""
    listed = f"g{user}"
    mesh.llm.script(
        calls(call("shopping__propose_add_to_list", name="rye", list_name=listed)),
        text("Added."),
        calls(call("shopping__propose_remove_from_list", name="rye", list_name=listed)),
        text("Remove it?"),
    )
    await said(mesh, user, "add rye")
    [proposal] = await said(mesh, user, "remove the rye")
    await tapped(mesh, user, proposal, "allow for 1 h")
    await mesh.all_acked()


async def test_audit_says_when_a_grant_ends_in_local_time(mesh: Mesh) -> None:
    user = mesh.new_user()
    await granted(mesh, user)
    [grant] = (await pending_call(mesh, "list_grants", agent="clawdia", user_id=str(user)))[
        "grants"
    ]
    [audited] = await said(mesh, user, "/audit")

    ends = datetime.fromtimestamp(grant["until"], ZONE)
    line = next(line for line in audited.text.splitlines() if "you allowed" in line)
    assert line.endswith(f"you allowed shopping.remove_from_list until {ends:%H:%M}") or (
        line.endswith(f"until {ends:%b %d %H:%M}")  # past midnight: with its day
    )
    assert "until until" not in audited.text
    assert "Z" not in line.split("until", 1)[1]


async def test_ending_a_grant_takes_it_and_its_button_off_the_message(mesh: Mesh) -> None:
    user = mesh.new_user()
    await granted(mesh, user)
    [listing] = await said(mesh, user, "/grants")
    assert "shopping.remove_from_list" in listing.text
    assert buttons(listing) == ["1. End"]

    await tapped(mesh, user, listing, "End")

    assert str(mesh.telegram.callback_answers(CLAWDIA)[-1].text).startswith("Ended")
    assert "shopping.remove_from_list" not in listing.text
    assert listing.text.startswith("No grants are running")
    assert buttons(listing) == []


# 9: no held message is lost at the allowance's cap


async def test_two_messages_held_at_the_cap_are_answered_in_order_after_one_tap_across_a_restart(
    tmp_path: Path,
) -> None:
    async with running_mesh(tmp_path, allowance=ALLOWANCE) as mesh:
        mesh.llm.script(text("Sure.", usage=(900, 200)))
        await said(mesh, USER, "hello")
        [first] = await said(mesh, USER, "first question?")
        [second] = await said(mesh, USER, "second question?")
        assert len(mesh.llm.requests) == 1  # both held at the cap: no model call
        assert data_of(first, "Allow 500 tokens")
        await mesh.all_acked()
        await mesh.orchestrator.kill()  # between the hold and the tap
        await mesh.orchestrator.start()
        mesh.llm.script(text("One.", usage=(10, 5)), text("Two.", usage=(10, 5)))

        before = len(mesh.telegram.sent(CLAWDIA, USER))
        await tapped(mesh, USER, first, "Allow 500 tokens")
        await mesh.telegram.wait_for(
            lambda: len(mesh.telegram.sent(CLAWDIA, USER)) >= before + 2, 60
        )
        await mesh.all_acked()
        await tapped(mesh, USER, second, "Allow 500 tokens")
        await mesh.all_acked()
        answers = [m.text for m in mesh.telegram.sent(CLAWDIA, USER)[before:]]
        asked = [r["input"][-1]["content"] for r in mesh.llm.requests[1:]]
        async with sdk_client(mesh.url("memory"), mesh.token("memory")) as memory:
            report = await memory.call_tool("usage_report", {"since": 0, "until": 4e9})

    assert answers == ["One.", "Two."]  # each once, in order, after the first tap
    assert asked == ["first question?", "second question?"]
    assert "✅ Memory: Allow 500 tokens more today" in first.text
    assert "no longer needed" in second.text
    assert buttons(first) == buttons(second) == []
    assert len((report.structured_content or {})["grants"]) == 1
