"""``clawmesh agent stop|start|status``: one agent paused and resumed on a running fleet.

Real processes (``fakes.mesh``: every server over HTTP, the orchestrator, fake Telegram and
model); the command is run as the operator runs it in compose (``docker compose exec
orchestrator clawmesh …``): a process with the orchestrator's environment and credentials.
The model answers each message by naming it (``re: msg-2``), so the order is visible.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from fakes.mesh import TOKENS, USER, Mesh, eventually, running_embedded, running_mesh
from fakes.responses_api import Body, Reply, text

pytestmark = pytest.mark.anyio

CLAWDIA, BOB = TOKENS["clawdia"], TOKENS["bob"]
CLAWMESH = str(Path(sys.executable).with_name("clawmesh"))
MARK = re.compile(r"msg-[a-z0-9]+")


def named(body: Body) -> Reply:
    """``re: <the last message's mark>``."""
    users = [item for item in body["input"] if item.get("role") == "user"]
    found = MARK.findall(json.dumps(users[-1]["content"]))
    return text(f"re: {found[-1] if found else '?'}")


async def clawmesh(mesh: Mesh, *args: str) -> subprocess.CompletedProcess[bytes]:
    done = await anyio.run_process(
        [CLAWMESH, *args], env=mesh.orchestrator.env, cwd=mesh.tmp, check=False
    )
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout, done.stderr)


async def status(mesh: Mesh, agent: str) -> dict[str, Any]:
    done = await clawmesh(mesh, "agent", "status", agent, "--json")
    assert done.returncode == 0, done.stderr.decode()
    [one] = json.loads(done.stdout)
    return dict(one)


def replies(mesh: Mesh, token: str) -> list[str]:
    return [s.text for s in mesh.telegram.sent(token, USER)]


@pytest.fixture(scope="module")
async def mesh(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Mesh]:
    """Clawdia and bob on one mesh, for the tests here: a stop refused changes nothing."""
    async with running_mesh(tmp_path_factory.mktemp("fleet"), agents=("clawdia", "bob")) as mesh:
        yield mesh


async def test_a_paused_agent_keeps_its_messages_through_a_restart_and_answers_them_in_order(
    mesh: Mesh,
) -> None:
    mesh.llm.default = named
    for token in (CLAWDIA, BOB):
        mesh.telegram.user_message(token, USER, "msg-hello")
    await mesh.telegram.wait_for(
        lambda: replies(mesh, CLAWDIA) == replies(mesh, BOB) == ["re: msg-hello"], 60
    )

    stopped = await clawmesh(mesh, "agent", "stop", "bob")
    assert stopped.returncode == 0, stopped.stderr.decode()
    assert stopped.stdout.decode().splitlines()[0] == "bob: paused"

    for mark in ("msg-1", "msg-2", "msg-3"):
        mesh.telegram.user_message(BOB, USER, mark)
    mesh.telegram.user_message(CLAWDIA, USER, "msg-a")
    await mesh.telegram.wait_for(lambda: len(replies(mesh, CLAWDIA)) == 2, 30)

    async def all_in() -> bool:  # bob's poller stores them as they come
        return mesh.unacked() == 3

    await eventually(all_in)
    waiting = await status(mesh, "bob")
    assert waiting["state"] == "paused"
    assert waiting["paused_in"] == ["telegram-io", "scheduler"]
    assert (waiting["inbox_backlog"], waiting["bot_state"]) == (3, "ok")
    assert waiting["bot_username"] is not None
    assert replies(mesh, BOB) == ["re: msg-hello"]  # answered nothing since

    # A restart of the inbox and of the orchestrator keeps the pause; clawdia goes on.
    await mesh.orchestrator.stop()
    await mesh.services["telegram-io"].stop()
    await mesh.services["telegram-io"].start()
    await mesh.orchestrator.start()
    mesh.telegram.user_message(CLAWDIA, USER, "msg-b")
    await mesh.telegram.wait_for(lambda: len(replies(mesh, CLAWDIA)) == 3, 60)
    assert replies(mesh, CLAWDIA) == ["re: msg-hello", "re: msg-a", "re: msg-b"]
    after = await status(mesh, "bob")
    assert (after["state"], after["inbox_backlog"]) == ("paused", 3)
    assert replies(mesh, BOB) == ["re: msg-hello"]
    assert (await status(mesh, "clawdia"))["state"] == "running"

    started = await clawmesh(mesh, "agent", "start", "bob", "--json")
    assert started.returncode == 0, started.stderr.decode()
    resumed = json.loads(started.stdout)
    assert (resumed["paused"], resumed["changed"], resumed["inbox_waiting"]) == (
        False,
        True,
        3,
    )
    await mesh.telegram.wait_for(lambda: len(replies(mesh, BOB)) == 4, 60)
    assert replies(mesh, BOB) == ["re: msg-hello", "re: msg-1", "re: msg-2", "re: msg-3"]
    await mesh.all_acked()
    assert (await status(mesh, "bob"))["state"] == "running"


async def test_stopping_an_agent_not_in_the_fleet_says_so_in_the_one_form(mesh: Mesh) -> None:
    done = await clawmesh(mesh, "agent", "stop", "nobody")
    as_json = await clawmesh(mesh, "agent", "stop", "nobody", "--json")
    assert done.returncode == as_json.returncode == 1
    assert done.stdout == b""
    fleet_file = mesh.tmp / "config" / "agents.yaml"
    assert done.stderr.decode() == (
        f"Error: no agent 'nobody' in {fleet_file} - use one of "
        "bob, clawdia (clawmesh agent list)\n"
    )
    assert json.loads(as_json.stdout) == {
        "error": f"no agent 'nobody' in {fleet_file}",
        "suggestion": "use one of bob, clawdia (clawmesh agent list)",
    }


def test_the_command_is_the_workspace_console_script() -> None:
    done = subprocess.run([CLAWMESH, "agent", "--help"], capture_output=True, check=False)
    assert done.returncode == 0
    assert "stop" in done.stdout.decode()


async def test_in_embedded_mode_the_command_beside_the_orchestrator_pauses_and_resumes(
    tmp_path: Path,
) -> None:
    # make run's shape: the servers in the orchestrator's process; the command opens them
    # on the same DATA_DIR (telegram-io without pollers) and the running inbox sees a start
    # from the other process within a second.
    async with running_embedded(tmp_path, agents=("clawdia", "bob")) as mesh:
        mesh.llm.default = named
        stopped = await clawmesh(mesh, "agent", "stop", "bob")
        assert stopped.returncode == 0, stopped.stderr.decode()
        mesh.telegram.user_message(BOB, USER, "msg-1")
        mesh.telegram.user_message(CLAWDIA, USER, "msg-a")
        await mesh.telegram.wait_for(lambda: replies(mesh, CLAWDIA) == ["re: msg-a"], 60)

        async def stored() -> bool:
            return mesh.unacked() == 1

        await eventually(stored)
        assert replies(mesh, BOB) == []
        started = await clawmesh(mesh, "agent", "start", "bob")
        assert started.returncode == 0, started.stderr.decode()
        await mesh.telegram.wait_for(lambda: replies(mesh, BOB) == ["re: msg-1"], 30)
        assert "409" not in mesh.logs()  # the command polled no bot
