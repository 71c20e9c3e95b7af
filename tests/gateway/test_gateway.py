"""The gateway in front of a server nobody here wrote (``fakes/plain_notes_server``, the official
SDK's server with unannotated tools, over stdio): its tools by class, every change a proposal,
made once after a valid approval and never otherwise."""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from fakes.approval_keys import signer, write_public_key
from mcp_gateway.server import build_server
from mcp_gateway.settings import GatewaySettings
from meshkit.proposals import payload_hash

pytestmark = pytest.mark.anyio

NOTES_SERVER = (
    Path(__file__).resolve().parents[1] / "fakes" / "plain_notes_server" / "plain_notes.py"
)


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[tuple[Client[Any], Path]]:
    notes = tmp_path / "notes.json"
    settings = GatewaySettings(
        name="notes",
        command=[sys.executable, str(NOTES_SERVER), str(notes)],
        data_dir=tmp_path / "data",
        approval_public_key_file=write_public_key(tmp_path / "keys"),
    )
    async with Client(build_server(settings)) as client:
        yield client, notes


def written(notes: Path) -> list[str]:
    return json.loads(notes.read_text()) if notes.exists() else []


async def propose(client: Client[Any], tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, {"agent": "clawdia", **arguments})
    assert result.structured_content is not None
    return dict(result.structured_content)


def approve(proposal: dict[str, Any], action: str = "act_0123456789ab") -> str:
    """A token as pending-actions mints it on the user's tap."""
    return signer(time.time).mint(
        action, "notes", proposal["kind"], proposal["payload"], agent="clawdia"
    )


async def test_unannotated_tools_are_changes_offered_as_producers_with_a_confirm_each(
    gateway: tuple[Client[Any], Path],
) -> None:
    client, _ = gateway
    tools = {tool.name: tool for tool in await client.list_tools()}
    tags = {name: set((tool.meta or {})["fastmcp"]["tags"]) for name, tool in tools.items()}
    assert tags == {
        "add_note": {"producer"},
        "count_notes": {"producer"},  # says nothing: by the specification it may change things
        "clear_notes": {"producer"},
        "confirm_add_note": {"confirm"},
        "confirm_count_notes": {"confirm"},
        "confirm_clear_notes": {"confirm"},
        "get_action": {"read"},
    }
    assert (tools["add_note"].meta or {})["clawmesh"]["context"] == ["agent"]
    assert "confirm" in (tools["add_note"].description or "")


async def test_a_change_is_a_proposal_that_changes_nothing_and_says_the_call_in_plain_words(
    gateway: tuple[Client[Any], Path],
) -> None:
    client, notes = gateway
    proposal = await propose(client, "add_note", text='milk "2L"\u202e')
    assert written(notes) == []
    # Unannotated: destructive by the specification's default, so always a tap.
    assert proposal["summary"] == '⚠️ add_note: text="milk \\"2L\\""'
    assert proposal["tap_only"] is True
    assert proposal["payload"]["arguments"] == {"text": 'milk "2L"\u202e'}
    assert "\\u202e" in proposal["detail"]  # the whole call, as it will be made


async def test_the_call_is_made_once_after_a_valid_approval_and_a_replay_answers_the_first(
    gateway: tuple[Client[Any], Path],
) -> None:
    client, notes = gateway
    proposal = await propose(client, "add_note", text="milk")
    token = approve(proposal)
    first = await client.call_tool(
        "confirm_add_note", {"payload": proposal["payload"], "approval": token}
    )
    assert first.structured_content == {"message": "added note 1: milk", "replayed": False}
    again = await client.call_tool(
        "confirm_add_note", {"payload": proposal["payload"], "approval": token}
    )
    assert again.structured_content == {"message": "added note 1: milk", "replayed": True}
    assert written(notes) == ["milk"]


async def test_a_forged_or_misdirected_approval_is_refused_and_nothing_is_called(
    gateway: tuple[Client[Any], Path],
) -> None:
    client, notes = gateway
    proposal = await propose(client, "add_note", text="milk")
    token = approve(proposal)
    other = {**proposal["payload"], "arguments": {"text": "whisky"}}
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    cases = [
        ("confirm_add_note", other, token),  # another call under this approval
        ("confirm_add_note", proposal["payload"], forged),  # a signature nobody made
        ("confirm_add_note", proposal["payload"], "v3.act_0123456789ab.9999999999.x"),
        ("confirm_clear_notes", proposal["payload"], token),  # another tool
        ("confirm_add_note", {**proposal["payload"], "agent": "bob"}, token),  # another agent
    ]
    for tool, payload, approval in cases:
        with pytest.raises(ToolError, match="Nothing was changed"):
            await client.call_tool(tool, {"payload": payload, "approval": approval})
    assert written(notes) == []
    assert payload_hash(proposal["payload"]) != payload_hash(other)


async def test_a_call_the_server_refuses_is_a_failure_the_replay_repeats_without_calling(
    gateway: tuple[Client[Any], Path],
) -> None:
    client, notes = gateway
    proposal = await propose(client, "add_note", text=["not", "text"])
    token = approve(proposal)
    for _ in range(2):
        with pytest.raises(ToolError, match="add_note answered with an error"):
            await client.call_tool(
                "confirm_add_note", {"payload": proposal["payload"], "approval": token}
            )
    assert written(notes) == []


async def test_a_call_missing_what_its_schema_requires_is_refused_before_it_is_proposed(
    gateway: tuple[Client[Any], Path],
) -> None:
    client, _ = gateway
    with pytest.raises(ToolError, match=r"add_note needs text\. Nothing was proposed"):
        await propose(client, "add_note")


def child_pids() -> list[int]:
    """This process's children (Linux /proc): the server behind the gateway."""
    return [
        int(pid)
        for task in Path("/proc/self/task").iterdir()
        for pid in (task / "children").read_text().split()
    ]


async def killed(pid: int) -> None:
    """SIGKILL ``pid`` and return once it has exited (its pidfd turns readable)."""
    descriptor = os.pidfd_open(pid)
    try:
        os.kill(pid, signal.SIGKILL)
        readable, _, _ = await anyio.to_thread.run_sync(select.select, [descriptor], [], [], 10)
        assert readable, f"process {pid} still alive"
    finally:
        os.close(descriptor)


async def test_a_server_that_died_before_the_tap_is_started_again_and_the_change_made_once(
    gateway: tuple[Client[Any], Path],
) -> None:
    client, notes = gateway
    proposal = await propose(client, "add_note", text="milk")
    [first] = child_pids()
    await killed(first)
    done = await client.call_tool(
        "confirm_add_note", {"payload": proposal["payload"], "approval": approve(proposal)}
    )
    assert done.structured_content == {"message": "added note 1: milk", "replayed": False}
    assert written(notes) == ["milk"]
    assert child_pids() not in ([], [first])


# A server that reads one tool's answer from its environment (declared read-only).
ENV_SERVER = """
import os
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
server = MCPServer("env")

@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def variable(name: str) -> str:
    "A variable of this process's environment."
    return os.environ.get(name, "(unset)")

server.run("stdio")
"""


async def test_the_server_gets_its_env_file_and_nothing_of_the_gateways_own_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-gateways-own")
    env_file = tmp_path / "capability_env"
    env_file.write_text("# its variables\nNOTES_TOKEN=tok-0123456789\n")
    settings = GatewaySettings(
        name="env",
        command=[sys.executable, "-c", ENV_SERVER],
        env_file=env_file,
        data_dir=tmp_path / "data",
        approval_public_key_file=write_public_key(tmp_path / "keys"),
    )
    async with Client(build_server(settings)) as client:
        own = await client.call_tool("variable", {"name": "NOTES_TOKEN"})
        other = await client.call_tool("variable", {"name": "OPENAI_API_KEY"})
    assert own.content[0].text == "tok-0123456789"
    assert other.content[0].text == "(unset)"
    assert [s.get_secret_value() for s in settings.secret_values()] == ["tok-0123456789"]
