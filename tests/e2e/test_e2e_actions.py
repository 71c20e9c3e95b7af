"""Pending actions end to end: real processes (telegram-io, memory, weather, shopping,
pending-actions over HTTP with a token, the orchestrator), fake Telegram and fake OpenAI.

A proposal arrives with buttons; only a tap performs it, once. The tests share one mesh;
each writes as a user of its own (``user``). Tests that need other settings or stop
processes start their own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from fakes.mesh import STRANGER, TOKENS, USER, Mesh, eventually, running_mesh
from fakes.responses_api import call, calls, text
from fakes.serving import sdk_client
from fakes.telegram_api import Sent

pytestmark = pytest.mark.anyio

CLAWDIA = TOKENS["clawdia"]
WATER = "Kirkland Signature Purified Water 40pk"
ORDERS = (
    "date,item,store,quantity,price\n"
    f"2026-10-02,{WATER},Costco,1,4.99\n"
    f"2026-09-12,{WATER},Costco,2,4.89\n"
    "2026-10-20,Oat milk 1L,Lidl,4,1.19\n"
)


@asynccontextmanager
async def mcp_client(mesh: Mesh, server: str) -> AsyncIterator[Client]:
    """The official SDK client on a server of the mesh, as any MCP client could connect."""
    async with sdk_client(mesh.url(server), mesh.token(server)) as client:
        yield client


async def shopping(mesh: Mesh, tool: str, **arguments: Any) -> dict[str, Any]:
    async with mcp_client(mesh, "shopping") as client:
        result = await client.call_tool(tool, {"agent": "clawdia", **arguments})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


async def on_list(mesh: Mesh, list_name: str = "groceries") -> list[str]:
    listing = await shopping(mesh, "get_list", list_name=list_name)
    return [
        i["name"]
        for found in listing["lists"]
        if found["name"] == list_name
        for i in found["items"]
    ]


async def order_count(mesh: Mesh) -> int:
    return len((await shopping(mesh, "get_recent_orders", limit=100))["orders"])


async def proposal_message(mesh: Mesh, prompt: str, user: int = USER) -> Sent:
    """The user asks; the bot's message with buttons."""
    before = len(mesh.telegram.sent(CLAWDIA, user))
    mesh.telegram.user_message(CLAWDIA, user, prompt)
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, user)) > before, 60)
    return mesh.telegram.sent(CLAWDIA, user)[before]


def data_of(message: Sent, label: str) -> str:
    for row in (message.reply_markup or {}).get("inline_keyboard", []):
        for button in row:
            if label in button["text"]:
                return str(button["callback_data"])
    raise AssertionError(f"no button {label!r} on {message.reply_markup}")


def labels(message: Sent) -> list[list[str]]:
    rows = (message.reply_markup or {}).get("inline_keyboard", [])
    return [[button["text"] for button in row] for row in rows]


async def edited(mesh: Mesh, message: Sent, edits: int = 1) -> Sent:
    await mesh.telegram.wait_for(lambda: len(message.edits) >= edits, 30)
    return message


async def answered(mesh: Mesh, count: int) -> list[str | None]:
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.callback_answers(CLAWDIA)) >= count, 30)
    return [a.text for a in mesh.telegram.callback_answers(CLAWDIA)]


def reorder(mesh: Mesh) -> None:
    mesh.llm.script(
        calls(call("shopping__propose_reorder", item="the Kirkland water")),
        text("Shall I reorder the Kirkland water?"),
    )


async def inbox_empty(mesh: Mesh) -> bool:
    """Whether telegram-io holds no update that is not acked (every one fully handled)."""
    async with mcp_client(mesh, "telegram-io") as client:
        status = await client.call_tool("status", {})
    return (status.structured_content or {}).get("pending") == 0


async def readers_waiting(mesh: Mesh, count: int) -> bool:
    """Whether ``count`` next_updates calls wait in telegram-io right now."""
    async with mcp_client(mesh, "telegram-io") as client:
        status = await client.call_tool("status", {})
    return (status.structured_content or {}).get("readers") == count


async def batch_states(mesh: Mesh, batch_id: str) -> list[str]:
    """The states of a batch's actions, as pending-actions reports them."""
    async with mcp_client(mesh, "pending-actions") as client:
        result = await client.call_tool("get_batch", {"batch_id": batch_id})
    return [a["state"] for a in (result.structured_content or {})["actions"]]


async def action_is(mesh: Mesh, action_id: str, state: str) -> bool:
    """Whether pending-actions reports the action in ``state`` (asking settles expiry)."""
    async with mcp_client(mesh, "pending-actions") as client:
        result = await client.call_tool("history", {"action_id": action_id})
    return bool((result.structured_content or {})["events"][-1]["to_state"] == state)


@pytest.fixture(scope="module")
async def mesh(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Mesh]:
    async with running_mesh(tmp_path_factory.mktemp("mesh"), orders_csv=ORDERS) as mesh:
        yield mesh


@pytest.fixture
def user(mesh: Mesh) -> int:
    return mesh.new_user()


async def test_reorder_the_kirkland_water_takes_one_tap_and_records_one_order(
    mesh: Mesh, user: int
) -> None:
    before = await order_count(mesh)
    cart = await on_list(mesh, "cart:costco")
    reorder(mesh)
    message = await proposal_message(mesh, "reorder the Kirkland water", user)
    assert message.text.startswith("Shall I reorder the Kirkland water?")
    assert f"Reorder 1 × {WATER} at Costco" in message.text
    assert labels(message) == [["🛒 Add to cart", "Skip"]]
    assert await order_count(mesh) == before  # nothing happened before the tap

    # The button's answer does not wait for the work or the edit: with the edit held, it comes.
    mesh.telegram.hold("editMessageText")
    mesh.telegram.tap(CLAWDIA, user, message.message_id, data_of(message, "Add to cart"))
    assert await answered(mesh, 1) == ["Confirmed: on it."]
    mesh.telegram.release("editMessageText")
    await edited(mesh, message)
    assert "✅ Shopping: Reorder 1 × " in message.text
    assert message.reply_markup in (None, {}, {"inline_keyboard": []})
    assert await order_count(mesh) == before + 1
    assert await on_list(mesh, "cart:costco") == (cart if WATER in cart else [*cart, WATER])
    assert len(mesh.llm.requests) == 2  # the tap never reached the model
    offered = {tool["name"] for request in mesh.llm.requests for tool in request["tools"]}
    assert "shopping__propose_reorder" in offered
    assert not [name for name in offered if "confirm" in name or name.startswith("pending")]


async def test_two_taps_at_once_execute_once_and_both_are_answered(mesh: Mesh, user: int) -> None:
    before = await order_count(mesh)
    reorder(mesh)
    message = await proposal_message(mesh, "reorder the Kirkland water", user)
    data = data_of(message, "Add to cart")
    mesh.telegram.tap(CLAWDIA, user, message.message_id, data)
    mesh.telegram.tap(CLAWDIA, user, message.message_id, data)
    notices = await answered(mesh, 2)
    assert "Confirmed: on it." in notices
    assert all(notices)
    await edited(mesh, message)
    await eventually(lambda: inbox_empty(mesh))  # both taps handled to the end
    assert await order_count(mesh) == before + 1


async def test_cancel_changes_nothing(mesh: Mesh, user: int) -> None:
    before = await order_count(mesh)
    reorder(mesh)
    message = await proposal_message(mesh, "reorder the Kirkland water", user)
    mesh.telegram.tap(CLAWDIA, user, message.message_id, data_of(message, "Skip"))
    await edited(mesh, message)
    assert await answered(mesh, 1) == ["Cancelled: nothing will change."]
    assert "❌ Shopping: Reorder" in message.text
    assert await order_count(mesh) == before


async def test_a_proposal_expires(tmp_path: Path) -> None:
    # Real processes keep real time: proposals here live at most 1 s (the in-process
    # tests move pending-actions' clock instead, tests/orchestrator/test_actions.py).
    async with running_mesh(
        tmp_path, orders_csv=ORDERS, pending_env={"PENDING_MAX_TTL_S": "1"}
    ) as mesh:
        before = await order_count(mesh)
        reorder(mesh)
        message = await proposal_message(mesh, "reorder the Kirkland water")
        confirm = data_of(message, "Add to cart")  # pa:c:<action id>
        await eventually(lambda: action_is(mesh, confirm.split(":")[2], "expired"))
        mesh.telegram.tap(CLAWDIA, USER, message.message_id, confirm)
        await edited(mesh, message)
        assert "expired" in str((await answered(mesh, 1))[0]).lower()
        assert "⌛ Shopping: Reorder" in message.text
        assert await order_count(mesh) == before


async def test_a_batch_of_two_with_confirm_all(mesh: Mesh, user: int) -> None:
    groceries = await on_list(mesh)
    mesh.llm.script(
        calls(
            call("shopping__propose_add_to_list", name="apples", quantity=2, unit="kg"),
            call("shopping__propose_add_to_list", name="bread"),
        ),
        text("Two things for the list."),
    )
    message = await proposal_message(mesh, "add apples and bread", user)
    assert labels(message)[-1] == ["✅ Confirm all 2", "❌ Cancel all"]
    mesh.telegram.tap(CLAWDIA, user, message.message_id, data_of(message, "Confirm all"))
    await edited(mesh, message)
    assert message.text.count("✅") == 2
    assert sorted(await on_list(mesh)) == sorted([*groceries, "apples", "bread"])


async def test_a_failing_confirm_shows_the_failure(mesh: Mesh, user: int) -> None:
    mesh.llm.script(calls(call("shopping__propose_add_to_list", name="milk")), text("Milk?"))
    added = await proposal_message(mesh, "add milk", user)
    mesh.telegram.tap(CLAWDIA, user, added.message_id, data_of(added, "Add"))
    await edited(mesh, added)
    mesh.llm.script(
        calls(
            call("shopping__propose_remove_from_list", name="milk"),
            call("shopping__propose_remove_from_list", name="milk"),
        ),
        text("Removing the milk."),
    )
    message = await proposal_message(mesh, "remove the milk", user)
    confirm_all = data_of(message, "Confirm all")  # pb:c:<batch id>
    mesh.telegram.tap(CLAWDIA, user, message.message_id, confirm_all)
    await edited(mesh, message)
    assert "✅ 1. Shopping: Remove" in message.text
    assert "⚠️ 2. Shopping: Remove" in message.text
    assert "failed:" in message.text
    await handled(mesh)  # the outcomes are recorded beside the edit: the tap's ack waits for them
    assert await batch_states(mesh, confirm_all.split(":")[2]) == ["done", "failed"]


async def test_pending_actions_restarted_between_proposal_and_tap(mesh: Mesh, user: int) -> None:
    before = await order_count(mesh)
    reorder(mesh)
    message = await proposal_message(mesh, "reorder the Kirkland water", user)
    pending = mesh.services["pending-actions"]
    await pending.kill()
    await pending.start()
    mesh.telegram.tap(CLAWDIA, user, message.message_id, data_of(message, "Add to cart"))
    await edited(mesh, message)
    assert "✅ Shopping: Reorder" in message.text
    assert await order_count(mesh) == before + 1


async def test_a_strangers_tap_does_nothing(mesh: Mesh, user: int) -> None:
    before = await order_count(mesh)
    reorder(mesh)
    message = await proposal_message(mesh, "reorder the Kirkland water", user)
    mesh.telegram.tap(
        CLAWDIA, STRANGER, message.message_id, data_of(message, "Add to cart"), chat_id=user
    )
    mesh.telegram.user_message(CLAWDIA, user, "/help")  # after the tap: handled after it
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, user)) == 2, 60)
    assert message.edits == []
    assert await order_count(mesh) == before


async def handled(mesh: Mesh) -> None:
    """Until every update (taps included) was handled to the end, its edits made."""
    await eventually(lambda: inbox_empty(mesh))


async def test_real_action_and_batch_ids_tapped_on_another_message_are_refused(
    mesh: Mesh, user: int
) -> None:
    mesh.llm.script(
        calls(
            call("shopping__propose_add_to_list", name="pears"),
            call("shopping__propose_add_to_list", name="rice"),
        ),
        text("Two things for the list."),
    )
    proposal = await proposal_message(mesh, "add pears and rice", user)
    mesh.telegram.user_message(CLAWDIA, user, "/help")
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, user)) == 2, 60)
    other = mesh.telegram.sent(CLAWDIA, user)[1]  # the same bot and chat, no buttons

    # A crafted client sends the proposal's real button data from the other message.
    for label in ("1. ", "2. ", "Confirm all", "Cancel all"):
        data = data_of(proposal, label)
        mesh.telegram.tap(CLAWDIA, user, other.message_id, data, forged=True)
    assert await answered(mesh, 4) == ["That button is no longer active."] * 4
    await handled(mesh)
    assert (proposal.edits, other.edits) == ([], [])
    batch_id = data_of(proposal, "Confirm all").split(":")[2]
    assert await batch_states(mesh, batch_id) == ["pending", "pending"]
    assert not {"pears", "rice"} & set(await on_list(mesh))

    mesh.telegram.tap(CLAWDIA, user, proposal.message_id, data_of(proposal, "Confirm all"))
    await edited(mesh, proposal)  # where they were shown, the same buttons work
    assert {"pears", "rice"} <= set(await on_list(mesh))


async def test_a_real_action_id_tapped_in_another_bots_chat_is_refused(tmp_path: Path) -> None:
    async with running_mesh(tmp_path, agents=("clawdia", "bob"), orders_csv=ORDERS) as mesh:
        bob = TOKENS["bob"]
        before = await order_count(mesh)
        reorder(mesh)
        proposal = await proposal_message(mesh, "reorder the Kirkland water")
        mesh.telegram.user_message(bob, USER, "/help")
        await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(bob, USER)) == 1, 60)
        bobs = mesh.telegram.sent(bob, USER)[0]
        # Message ids count per chat: bob's message has the proposal's id, in a chat with
        # the same id; only the agent differs.
        assert (bobs.message_id, bobs.chat_id) == (proposal.message_id, proposal.chat_id)
        confirm = data_of(proposal, "Add to cart")

        mesh.telegram.tap(bob, USER, bobs.message_id, confirm, forged=True)

        await mesh.telegram.wait_for(lambda: len(mesh.telegram.callback_answers(bob)) == 1, 30)
        assert [a.text for a in mesh.telegram.callback_answers(bob)] == [
            "That button is no longer active."
        ]
        await handled(mesh)
        assert (bobs.edits, proposal.edits) == ([], [])
        assert await action_is(mesh, confirm.split(":")[2], "pending")
        assert await order_count(mesh) == before


async def test_a_real_action_id_tapped_in_another_users_chat_is_refused(
    mesh: Mesh, user: int
) -> None:
    other = mesh.new_user()  # a second allowed user (nothing is recorded yet to forget)
    before = await order_count(mesh)
    reorder(mesh)
    proposal = await proposal_message(mesh, "reorder the Kirkland water", user)
    mesh.telegram.user_message(CLAWDIA, other, "/help")
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, other)) == 1, 60)
    theirs = mesh.telegram.sent(CLAWDIA, other)[0]
    confirm = data_of(proposal, "Add to cart")

    mesh.telegram.tap(CLAWDIA, other, theirs.message_id, confirm, forged=True)

    assert await answered(mesh, 1) == ["That button is no longer active."]
    await handled(mesh)
    assert (theirs.edits, proposal.edits) == ([], [])
    assert await action_is(mesh, confirm.split(":")[2], "pending")
    assert await order_count(mesh) == before


async def test_a_restart_between_the_proposal_and_its_tap_changes_nothing(
    tmp_path: Path,
) -> None:
    # The batch was bound to its reply's key when it was staged, and the reply acked its
    # update: nothing is left to redo or record after the send. The binding lives in
    # pending-actions' SQLite, the key of the message in telegram-io's.
    async with running_mesh(tmp_path, orders_csv=ORDERS) as mesh:
        before = await order_count(mesh)
        reorder(mesh)
        message = await proposal_message(mesh, "reorder the Kirkland water")
        pending = mesh.services["pending-actions"]
        await mesh.orchestrator.kill()
        await pending.kill()
        await pending.start()
        await mesh.orchestrator.start()

        mesh.telegram.tap(CLAWDIA, USER, message.message_id, data_of(message, "Add to cart"))

        assert await answered(mesh, 1) == ["Confirmed: on it."]
        await edited(mesh, message)
        assert "✅ Shopping: Reorder" in message.text
        assert len(mesh.telegram.sent(CLAWDIA, USER)) == 1  # the turn was not redone
        assert await order_count(mesh) == before + 1


async def test_another_mcp_client_cannot_confirm_without_a_tap(mesh: Mesh) -> None:
    before = await order_count(mesh)
    payload = {"agent": "clawdia", "item": WATER, "store": "Costco", "quantity": 1}
    async with mcp_client(mesh, "shopping") as client:
        for approval in ["", "v2.act_0123456789ab.9999999999.AAAA", "please"]:
            result = await client.call_tool(
                "confirm_reorder", {"payload": payload, "approval": approval}
            )
            assert result.is_error
            assert "Nothing was changed" in str(result.content[0])
    assert await order_count(mesh) == before


async def test_stopping_telegram_io_answers_an_open_long_poll_at_once(tmp_path: Path) -> None:
    async with running_mesh(tmp_path) as mesh:  # its own: it stops processes
        await mesh.orchestrator.stop()
        answers = []
        async with mcp_client(mesh, "telegram-io") as client:
            # The SDK checks a result against the tool's listed output schema, listing the
            # tools first if it has not: list them now, not after the server has gone.
            await client.list_tools()

            async def poll() -> None:
                answers.append(await client.call_tool("next_updates", {"max": 5, "wait_s": 20}))

            async with anyio.create_task_group() as polling:
                polling.start_soon(poll)
                await eventually(lambda: readers_waiting(mesh, 1))  # the call waits inside
                process = mesh.services["telegram-io"].process
                assert process is not None
                process.terminate()
    # Answered (with nothing new), not cut off by uvicorn's graceful-shutdown timeout.
    assert not answers[0].is_error
    assert (answers[0].structured_content or {}).get("updates") == []
