"""Crashes and the fleet, end to end with real processes (see test_e2e_telegram.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from fakes.mesh import TOKENS, USER, Mesh, eventually, running_mesh
from fakes.responses_api import HANG, Reply, text

pytestmark = pytest.mark.anyio

CLAWDIA, BOB = TOKENS["clawdia"], TOKENS["bob"]


async def inbox_status(mesh: Mesh) -> dict[str, Any]:
    io = "telegram-io"
    async with Client(mesh.url(io), auth=mesh.token(io)) as client:
        result = await client.call_tool("status", {})
    status: dict[str, Any] | None = result.structured_content
    assert status is not None
    return status


async def wait_inbox_empty(mesh: Mesh) -> None:
    async def empty() -> bool:
        return bool((await inbox_status(mesh))["pending"] == 0)

    await eventually(empty)


async def test_telegram_io_killed_as_updates_arrive_answers_exactly_once(tmp_path: Path) -> None:
    async with running_mesh(tmp_path) as mesh:
        telegram_io = mesh.services["telegram-io"]
        killed: list[list[int]] = []

        async def crash(token: str, ids: list[int]) -> None:
            if not killed:
                killed.append(ids)
                await telegram_io.kill()  # the batch is on the wire, maybe not in the inbox

        mesh.telegram.after_updates_delivered = crash
        mesh.llm.script(text("Answered once."))
        update = mesh.telegram.user_message(CLAWDIA, USER, "are you there?")
        await mesh.telegram.wait_for(lambda: bool(killed), 30)
        assert killed == [[update]]
        await telegram_io.start()
        await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, USER)) == 1, 60)
        await wait_inbox_empty(mesh)
        assert [s.text for s in mesh.telegram.sent(CLAWDIA, USER)] == ["Answered once."]
        assert len(mesh.llm.requests) == 1
        assert update not in mesh.telegram.pending(CLAWDIA)


async def test_orchestrator_killed_mid_turn_answers_once_after_restart(tmp_path: Path) -> None:
    async with running_mesh(tmp_path, lease_s=3) as mesh:
        mesh.llm.script(HANG, text("Here after the crash."))
        mesh.telegram.user_message(CLAWDIA, USER, "what's up?")
        await mesh.telegram.wait_for(lambda: len(mesh.llm.requests) == 1, 60)
        await mesh.orchestrator.kill()
        mesh.llm.release()
        await mesh.orchestrator.start()
        await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, USER)) == 1, 60)
        await wait_inbox_empty(mesh)
        assert [s.text for s in mesh.telegram.sent(CLAWDIA, USER)] == ["Here after the crash."]
        # The killed turn stored nothing: the second attempt saw only the user's message.
        assert [i.get("content") for i in mesh.llm.requests[-1]["input"]] == ["what's up?"]


def persona_name(body: dict[str, Any]) -> Reply:
    identity = str(body.get("instructions", "")).split("You are ", 1)[1]
    return text(f"{identity.split(',')[0].split(' ')[0].strip('.')} here.")


async def test_two_agents_answer_each_in_their_own_persona(tmp_path: Path) -> None:
    async with running_mesh(tmp_path, agents=("clawdia", "bob")) as mesh:
        mesh.llm.default = persona_name
        mesh.telegram.user_message(CLAWDIA, USER, "who are you?")
        mesh.telegram.user_message(BOB, USER, "who are you?")
        await mesh.telegram.wait_for(
            lambda: (
                len(mesh.telegram.sent(CLAWDIA, USER)) == 1
                and len(mesh.telegram.sent(BOB, USER)) == 1
            ),
            60,
        )
        assert mesh.telegram.sent(CLAWDIA, USER)[0].text == "Clawdia here."
        assert mesh.telegram.sent(BOB, USER)[0].text == "Bob here."
