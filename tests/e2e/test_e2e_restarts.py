"""Restarts of the orchestrator, in both shapes: a crash (SIGKILL) mid-turn, and a stop
(SIGTERM, SIGINT) while the model is answering. Real processes, fake Telegram and model.

    embedded   one ``python -m orchestrator`` with every server in it (make run)
    mesh       the servers as HTTP processes, the orchestrator as another
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from fastmcp import Client

from fakes.mesh import TOKENS, USER, Mesh, eventually, running_embedded, running_mesh
from fakes.responses_api import HANG, Slow, text

pytestmark = pytest.mark.anyio

CLAWDIA = TOKENS["clawdia"]
MODES = ["embedded", "mesh"]


@asynccontextmanager
async def running(
    mode: str, tmp: Path, *, lease_s: float = 120.0, grace_s: float = 20.0
) -> AsyncIterator[Mesh]:
    """The fleet in ``mode``, telegram-io leasing for ``lease_s``, the orchestrator stopping
    within ``grace_s``."""
    grace = {"SHUTDOWN_GRACE_S": str(grace_s)}
    if mode == "mesh":
        async with running_mesh(tmp, lease_s=lease_s, orchestrator_env=grace) as mesh:
            yield mesh
    else:
        async with running_embedded(tmp, env={**grace, "TELEGRAM_LEASE_S": str(lease_s)}) as mesh:
            yield mesh


def replies(mesh: Mesh) -> list[str]:
    return [s.text for s in mesh.telegram.sent(CLAWDIA, USER)]


@pytest.mark.parametrize("mode", MODES)
async def test_a_crash_mid_turn_is_answered_once_within_seconds_of_the_restart(
    mode: str, tmp_path: Path
) -> None:
    # Leases of two minutes: the restarted run must not wait for the crashed run's to run out.
    async with running(mode, tmp_path, lease_s=120) as mesh:
        mesh.llm.script(HANG, text("Here after the crash."))
        mesh.telegram.user_message(CLAWDIA, USER, "what's up?")
        await mesh.telegram.wait_for(lambda: len(mesh.llm.requests) == 1, 60)
        await mesh.orchestrator.kill()
        mesh.llm.release()
        await mesh.orchestrator.start()
        await mesh.telegram.wait_for(lambda: len(replies(mesh)) == 1, 30)
        await mesh.all_acked()
        assert replies(mesh) == ["Here after the crash."]
        assert len(mesh.llm.requests) == 2


async def test_a_slow_turn_is_handed_to_no_one_else_while_it_runs(tmp_path: Path) -> None:
    # Leases of three seconds, a turn of nine: the orchestrator keeps extending its lease
    # (every second, so a loaded machine has two seconds' slack before the lease runs out).
    async with running("mesh", tmp_path, lease_s=3) as mesh:
        mesh.llm.script(Slow(9, text("Thought it through.")))
        mesh.telegram.user_message(CLAWDIA, USER, "a hard question")
        await mesh.telegram.wait_for(lambda: len(mesh.llm.requests) == 1, 60)
        io = "telegram-io"
        async with Client(mesh.url(io), auth=mesh.token(io)) as other:
            # Another reader polls for as long as the turn runs, and gets nothing.
            while not replies(mesh):
                got = await other.call_tool("next_updates", {"max": 10, "wait_s": 1})
                assert got.structured_content is not None
                assert got.structured_content["updates"] == []
        await mesh.all_acked()
        assert replies(mesh) == ["Thought it through."]
        assert len(mesh.llm.requests) == 1


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("mode", MODES)
async def test_a_stop_while_the_model_answers_delivers_the_reply_then_exits_0(
    mode: str, stop: signal.Signals, tmp_path: Path
) -> None:
    async with running(mode, tmp_path) as mesh:
        mesh.llm.script(Slow(3, text("Worth the wait.")))
        mesh.telegram.user_message(CLAWDIA, USER, "take your time")
        await mesh.telegram.wait_for(lambda: len(mesh.llm.requests) == 1, 60)
        mesh.orchestrator.send_signal(stop)
        assert await mesh.orchestrator.exited() == 0
        assert replies(mesh) == ["Worth the wait."]  # sent before the process ended
        assert mesh.unacked() == 0


@pytest.mark.parametrize("mode", MODES)
async def test_a_turn_longer_than_the_grace_is_left_unacked_and_redone_once_by_the_next_run(
    mode: str, tmp_path: Path
) -> None:
    async with running(mode, tmp_path, grace_s=1) as mesh:
        mesh.llm.script(HANG, text("Redone after the stop."))
        mesh.telegram.user_message(CLAWDIA, USER, "think hard")
        await mesh.telegram.wait_for(lambda: len(mesh.llm.requests) == 1, 60)
        mesh.orchestrator.send_signal(signal.SIGTERM)
        assert await mesh.orchestrator.exited() == 0
        assert (replies(mesh), mesh.unacked()) == ([], 1)
        mesh.llm.release()
        await mesh.orchestrator.start()
        await mesh.telegram.wait_for(lambda: len(replies(mesh)) == 1, 30)
        await mesh.all_acked()
        assert replies(mesh) == ["Redone after the stop."]
        assert len(mesh.llm.requests) == 2


async def test_a_second_signal_cuts_the_grace_short(tmp_path: Path) -> None:
    async with running("embedded", tmp_path, grace_s=600) as mesh:
        mesh.llm.script(HANG)
        mesh.telegram.user_message(CLAWDIA, USER, "think very hard")
        await mesh.telegram.wait_for(lambda: len(mesh.llm.requests) == 1, 60)
        mesh.orchestrator.send_signal(signal.SIGTERM)
        await eventually(lambda: _logged(mesh, "running turns may finish"))
        mesh.orchestrator.send_signal(signal.SIGINT)
        assert await mesh.orchestrator.exited(30) == 0  # not the 600 s of grace
        assert (replies(mesh), mesh.unacked()) == ([], 1)


async def _logged(mesh: Mesh, text: str) -> bool:
    return text in mesh.orchestrator.log.read_text(errors="replace")
