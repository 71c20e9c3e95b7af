"""Claude Desktop's one entry against the compose stack: ``clawmesh mcp`` runs on the host
(outside every container), spawned over stdio by the official SDK client, and forwards over
HTTP to the servers' ports that an overlay publishes on 127.0.0.1 (what compose.clients.yaml
does, compose.clients.example.yaml), with a client credential of MESH_CLIENTS bound to the
stack's user.

Its own project, beside the suite's stack, on the suite's images; the stack is taken down
with its volumes after.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters, stdio_client

from containers.stack import (
    BOT_TOKEN,
    CAPABILITIES_SKIPPED,
    ROOT,
    RUN,
    USER_ID,
    Stack,
    build,
    compose_command,
    down,
    engine_problem,
    stack_environment,
    up,
)
from containers.test_stack_runtime import Chat, notes_written, until_done, with_capabilities
from meshkit.client_file import write_client_file
from meshkit.credentials import Binding, new_client
from orchestrator.config.registry import GATEWAY_PORT

pytestmark = [pytest.mark.timeout(2400)]  # may build everything first

PROJECT = f"clawmesh-mcp-test-{RUN}"  # its own volumes and ports; the suite's images
BINDING = Binding("clawdia", str(USER_ID))
TOKEN, CREDENTIAL = new_client("claude-desktop", BINDING)
PORTS = {"weather": 8101, "calendar": 8102, "shopping": 8103, "memory": 8104, "scheduler": 8107}
NOTES_PORT = 8121  # the capability's port: entry
CLAWMESH = Path(sys.executable).with_name("clawmesh")
GONE = pytest.RaisesExc(MCPError, match="Connection closed")  # what the SDK client then says
Body = dict[str, Any]


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    problem = engine_problem() or (None if compose_command() else "no Compose v2 here")
    if problem:
        pytest.skip(f"container tests need a Docker engine: {problem}")
    tmp = tmp_path_factory.mktemp("proxied")
    # The plain SDK server too, a capability published for clients (clawmesh capability add
    # --port), its port a free one of the host's as well.
    env = stack_environment(
        dict(os.environ), tmp / "secrets", capabilities=("notes",), ports={"notes": NOTES_PORT}
    )
    env |= {"MESH_CLIENTS": CREDENTIAL.entry()}
    # The shipped example, each port on a free one of the host's (beside other stacks).
    example = yaml.safe_load((ROOT / "compose.clients.example.yaml").read_text())
    assert set(example["services"]) == set(PORTS)
    for name, port in PORTS.items():
        assert example["services"][name]["ports"] == [f"127.0.0.1:{port}:{port}"]
        example["services"][name]["ports"] = [f"127.0.0.1::{port}"]
    published = tmp / "compose.clients.yaml"
    published.write_text(yaml.safe_dump(example), encoding="utf-8")
    stack = Stack(env, project=PROJECT)
    stack.command += ["-f", str(published)]
    for step, seconds in build(stack).items():
        print(f"{step}: {seconds:.0f} s")
    try:  # a stack that never got healthy is taken down too
        print(f"stack up, all healthy: {up(stack):.0f} s")
        yield stack
    finally:
        down(stack)


def client_file(stack: Stack, tmp: Path, token: str = TOKEN) -> Path:
    """make client's client file, with the URLs the overlay published."""
    urls = {
        name: "http://" + stack.compose("port", name, str(port)).stdout.strip() + "/mcp"
        for name, port in {**PORTS, **capability_ports(stack)}.items()
    }
    return write_client_file(tmp / "clients", "claude-desktop", BINDING, token, urls)


def capability_ports(stack: Stack) -> dict[str, int]:
    """The capabilities this stack publishes for clients: none where the package index could
    not be reached (``CAPABILITIES_SKIPPED`` says why)."""
    return {} if stack.env.get(CAPABILITIES_SKIPPED) else {"notes": GATEWAY_PORT}


@asynccontextmanager
async def desktop(path: Path, errlog: Path) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=str(CLAWMESH), args=["mcp", str(path)], env={})
    with open(errlog, "w", encoding="utf-8") as err:  # noqa: ASYNC230  # the child's stderr
        async with Client(stdio_client(params, errlog=err)) as client:
            yield client


def content(result: Any) -> Body:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


@pytest.mark.anyio
async def test_claude_desktops_one_entry_lists_reads_and_proposes_for_the_bound_user(
    proxied: Stack, tmp_path: Path
) -> None:
    chat = Chat(proxied)
    count = chat.open()
    async with desktop(client_file(proxied, tmp_path), tmp_path / "stderr") as client:
        tools = (await client.list_tools()).tools
        names = {tool.name for tool in tools}
        assert {name.split("__")[0] for name in names} == set(PORTS) | set(
            capability_ports(proxied)
        )
        for tool in tools:
            tags = set((tool.meta or {}).get("fastmcp", {}).get("tags", []))
            assert tags & {"read", "producer"}, tool.name
            assert not tags & {"confirm", "internal"}, tool.name
        assert {"calendar__propose_event_add", "shopping__propose_add_to_list"} <= names

        forecast = content(
            await client.call_tool(
                "weather__get_forecast", {"location": "Paris, France", "days": 1}
            )
        )
        assert forecast["place"]["name"].startswith("Paris")

        proposed = content(
            await client.call_tool(
                "shopping__propose_add_to_list", {"name": "proxied milk", "list_name": "proxy"}
            )
        )
        action = proposed["staged"]["action_id"]
        message, confirm = chat.from_desktop(count)
        assert "proxied milk" in message["text"]
        status = content(await client.call_tool("shopping__get_action", {"action_id": action}))
        assert status["state"] == "pending"  # staged for the user, nothing done before a tap
        assert status["client"] == "claude-desktop"
        chat.tap(message["message_id"], confirm)
        await until_done(client, action, "shopping__get_action")
        listed = content(await client.call_tool("shopping__get_list", {"list_name": "proxy"}))
    assert [i["name"] for found in listed["lists"] for i in found["items"]] == ["proxied milk"]
    assert BOT_TOKEN not in (tmp_path / "stderr").read_text()


@pytest.mark.anyio
async def test_a_wrong_credential_is_refused_by_the_stack_with_one_line(
    proxied: Stack, tmp_path: Path
) -> None:
    wrong, _ = new_client("claude-desktop", BINDING)
    errlog = tmp_path / "stderr"
    with pytest.RaisesGroup(GONE, flatten_subgroups=True):  # the endpoint ended at once
        async with desktop(client_file(proxied, tmp_path, wrong), errlog) as client:
            await client.list_tools()
    said = errlog.read_text()
    assert said.startswith(
        "Error: calendar, memory, notes, scheduler, shopping, weather refused the credential"
        if capability_ports(proxied)
        else "Error: calendar, memory, scheduler, shopping, weather refused the credential"
    )
    assert "Traceback" not in said


def test_a_server_published_for_clients_joins_no_egress_network(proxied: Stack) -> None:
    # calendar is on mesh and clients only: its port is published, and it reaches nothing of
    # the egress network (weather, on egress, does); clients translates no address out.
    connect = "import socket; socket.create_connection(('fake-telegram', 8443), timeout=3)"
    assert proxied.exec("weather", "python", "-c", connect).returncode == 0
    assert proxied.exec("calendar", "python", "-c", connect).returncode != 0
    resolved = json.loads(proxied.compose("config", "--format", "json").stdout)
    options = resolved["networks"]["clients"]["driver_opts"]
    assert options == {"com.docker.network.bridge.enable_ip_masquerade": "false"}
    assert not resolved["networks"]["clients"].get("internal")


@pytest.mark.anyio
async def test_a_capability_published_on_its_port_proposes_for_the_bound_user_through_clawmesh_mcp(
    proxied: Stack, tmp_path: Path
) -> None:
    # The plain SDK server's tools carry no annotations: each is a change, offered to the
    # client as a proposal, staged for the bound user's chat, made once after the tap.
    with_capabilities(proxied)
    chat = Chat(proxied)
    count = chat.open()
    async with desktop(client_file(proxied, tmp_path), tmp_path / "stderr") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        notes = {name for name in tools if name.startswith("notes__")}
        assert {"notes__add_note", "notes__clear_notes", "notes__get_action"} <= notes
        for name in notes:
            tags = set((tools[name].meta or {}).get("fastmcp", {}).get("tags", []))
            assert not tags & {"confirm", "internal"}, name
        proposed = content(await client.call_tool("notes__add_note", {"text": "over http"}))
        action = proposed["staged"]["action_id"]
        message, confirm = chat.from_desktop(count)
        assert 'add_note: text="over http"' in message["text"]
        status = content(await client.call_tool("notes__get_action", {"action_id": action}))
        assert status["state"] == "pending"
        assert notes_written(proxied) == []  # nothing before the tap
        chat.tap(message["message_id"], confirm)
        await until_done(client, action, "notes__get_action")
    assert notes_written(proxied) == ["over http"]
    # Published as compose.clients.yaml publishes the mesh's own: on the clients network,
    # which lets the port in and nothing out; the server behind it reaches no egress.
    networks = set(proxied.inspect("notes")["NetworkSettings"]["Networks"])
    assert networks == {f"{PROJECT}_mesh", f"{PROJECT}_clients"}
