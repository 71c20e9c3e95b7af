"""``clawmesh mcp``, Claude Desktop's one entry for the whole mesh: the official SDK client
spawns the endpoint as a real process over stdio, as Claude Desktop does, and the endpoint
forwards over real HTTP to the mesh's server processes (tests/fakes/mesh.py) with a client
credential bound to one user of clawdia (MESH_CLIENTS, the client file make client writes).
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters, stdio_client

from fakes.mesh import MORE_USERS, TOKENS, Mesh, eventually, running_mesh
from fakes.serving import sdk_client
from fakes.telegram_api import Sent
from meshkit.client_file import write_client_file
from meshkit.credentials import Binding, new_client

pytestmark = pytest.mark.anyio

CLAWDIA = TOKENS["clawdia"]
USER = MORE_USERS[-1]  # no other test of this module's mesh writes as this user
BINDING = Binding("clawdia", str(USER))
TOKEN, CREDENTIAL = new_client("claude-desktop", BINDING)
CLIENT_SERVERS = ("weather", "memory", "shopping", "scheduler")  # those with client tools
CLAWMESH = Path(sys.executable).with_name("clawmesh")
GONE = pytest.RaisesExc(MCPError, match="Connection closed")  # what the SDK client then says
MIB = 1024 * 1024


@pytest.fixture(scope="module")
async def mesh(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Mesh]:
    admitted = {"MESH_CLIENTS": CREDENTIAL.entry()}
    async with running_mesh(
        tmp_path_factory.mktemp("clawmesh-mcp"),
        servers=("weather", "memory", "shopping", "scheduler"),
        server_env={name: admitted for name in CLIENT_SERVERS},
    ) as mesh:
        yield mesh


def client_file(mesh: Mesh, token: str = TOKEN, name: str = "claude-desktop") -> Path:
    """What make client writes, with the mesh's URLs (each server on its own port)."""
    urls = {server: mesh.url(server) for server in CLIENT_SERVERS}
    return write_client_file(mesh.tmp / "clients" / token[:8], name, BINDING, token, urls)


def desktop_entry(path: Path) -> StdioServerParameters:
    """Claude Desktop's one entry: the command and the client file, nothing secret."""
    env = {"FASTMCP_SHOW_SERVER_BANNER": "false", "FASTMCP_CHECK_FOR_UPDATES": "off"}
    return StdioServerParameters(
        command=str(CLAWMESH), args=["mcp", str(path)], env=env, cwd=str(path.parent)
    )


@asynccontextmanager
async def desktop(path: Path, errlog: Path | None = None) -> AsyncIterator[Client]:
    # the child's stderr, a file it writes (opened once, before it starts)
    with open(errlog or os.devnull, "w", encoding="utf-8") as err:  # noqa: ASYNC230
        async with Client(stdio_client(desktop_entry(path), errlog=err)) as client:
            yield client


async def met(mesh: Mesh, user: int) -> None:
    """The user has written to the bot (a bot may write to a user only once they have)."""
    before = len(mesh.telegram.sent(CLAWDIA, user))
    mesh.telegram.user_message(CLAWDIA, user, "/start")
    await mesh.telegram.wait_for(lambda: len(mesh.telegram.sent(CLAWDIA, user)) > before, 30)


def shown(mesh: Mesh, words: str) -> Sent | None:
    return next(
        (
            m
            for m in mesh.telegram.sent(CLAWDIA, USER)
            if words in m.text and m.reply_markup is not None
        ),
        None,
    )


def content(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


def rss_mib(path: Path) -> tuple[float, float]:
    """VmRSS and VmHWM (its peak) of the endpoint process serving ``path``, in MiB."""
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if str(path).encode() not in argv:
                continue
            status = (proc / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        return (
            int(fields["VmRSS"].split()[0]) / 1024,
            int(fields["VmHWM"].split()[0]) / 1024,
        )
    raise AssertionError(f"no endpoint process for {path}")


async def test_one_entry_lists_every_servers_client_tools_as_server__tool_and_nothing_else(
    mesh: Mesh,
) -> None:
    expected = set()
    for server in CLIENT_SERVERS:
        async with sdk_client(mesh.url(server), TOKEN) as direct:
            expected |= {f"{server}__{t.name}" for t in (await direct.list_tools()).tools}
    path = client_file(mesh)
    async with desktop(path) as client:
        tools = (await client.list_tools()).tools
        rss, peak = rss_mib(path)
    names = {tool.name for tool in tools}
    assert names == expected
    assert {name.split("__")[0] for name in names} == set(CLIENT_SERVERS)
    assert "shopping__propose_add_to_list" in names
    assert "weather__get_forecast" in names
    for tool in tools:
        tags = set((tool.meta or {}).get("fastmcp", {}).get("tags", []))
        assert tags & {"read", "producer"}, tool.name
        assert not tags & {"confirm", "internal"}, tool.name
        assert not {"agent", "user"} & set(tool.input_schema.get("properties", {})), tool.name
    assert not [name for name in names if "__confirm_" in name]
    print(f"clawmesh mcp RSS after listing {len(names)} tools: {rss:.0f} MiB (peak {peak:.0f})")
    assert peak < 192  # what one server container may use: it fits where a server fits


async def test_a_read_tool_answers_through_the_endpoint(mesh: Mesh) -> None:
    path = client_file(mesh)
    async with desktop(path) as client:
        where = {"location": "London, United Kingdom", "days": 2}
        forecast = content(await client.call_tool("weather__get_forecast", where))
        listing = content(await client.call_tool("shopping__get_list", {}))
        for _ in range(20):
            await client.call_tool("weather__get_forecast", where)
        rss, peak = rss_mib(path)
    print(f"clawmesh mcp RSS after 22 calls: {rss:.0f} MiB (peak {peak:.0f})")
    assert forecast["days"]
    assert "lists" in listing


async def test_a_proposal_is_staged_for_the_bound_user_shown_on_telegram_and_done_on_a_tap(
    mesh: Mesh,
) -> None:
    await met(mesh, USER)
    async with desktop(client_file(mesh)) as client:
        proposal = content(
            await client.call_tool(
                "shopping__propose_add_to_list", {"name": "oat milk", "list_name": "desktop"}
            )
        )
        staged = proposal["staged"]
        assert staged["state"] == "pending"
        await mesh.telegram.wait_for(lambda: shown(mesh, "From Claude Desktop") is not None, 30)
        message = shown(mesh, "From Claude Desktop")
        assert message is not None
        assert "oat milk" in message.text
        status = content(
            await client.call_tool("shopping__get_action", {"action_id": staged["action_id"]})
        )
        assert status["state"] == "pending"
        assert status["client"] == "claude-desktop"
        listing = content(await client.call_tool("shopping__get_list", {"list_name": "desktop"}))
        assert not [i for found in listing["lists"] for i in found["items"]]  # not before a tap

        confirm = next(
            key["callback_data"]
            for row in (message.reply_markup or {})["inline_keyboard"]
            for key in row
            if str(key.get("callback_data", "")).startswith("pa:c:")
        )
        mesh.telegram.tap(CLAWDIA, USER, message.message_id, confirm)

        async def done() -> bool:
            found = await client.call_tool(
                "shopping__get_action", {"action_id": staged["action_id"]}
            )
            return bool(content(found)["state"] == "done")

        await eventually(done)
        listing = content(await client.call_tool("shopping__get_list", {"list_name": "desktop"}))
    assert [i["name"] for found in listing["lists"] for i in found["items"]] == ["oat milk"]


async def test_a_wrong_credential_stops_the_endpoint_with_one_line_saying_what_to_do(
    mesh: Mesh, tmp_path: Path
) -> None:
    wrong, _ = new_client("claude-desktop", BINDING)  # a token no server admits
    errlog = tmp_path / "stderr.txt"
    with pytest.RaisesGroup(GONE, flatten_subgroups=True):  # the endpoint ended at once
        async with desktop(client_file(mesh, wrong), errlog) as client:
            await client.list_tools()
    said = errlog.read_text()
    assert said.startswith("Error: memory, scheduler, shopping, weather refused the credential")
    assert "(401" in said
    assert "make client NAME=claude-desktop" in said
    assert "Traceback" not in said
    assert wrong not in said
    assert len(said.strip().splitlines()) == 1


async def test_a_server_that_is_down_leaves_only_its_own_tools_out(
    mesh: Mesh, tmp_path: Path
) -> None:
    with socket.socket() as closed:  # a port nothing listens on, once this is closed
        closed.bind(("127.0.0.1", 0))
        gone = f"http://127.0.0.1:{closed.getsockname()[1]}/mcp"
    urls = {"weather": mesh.url("weather"), "calendar": gone}
    path = write_client_file(tmp_path / "clients", "claude-desktop", BINDING, TOKEN, urls)
    errlog = tmp_path / "stderr"
    async with desktop(path, errlog) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        where = {"location": "London, United Kingdom", "days": 1}
        content(await client.call_tool("weather__get_forecast", where))
    assert "weather__get_forecast" in names
    assert not [name for name in names if name.startswith("calendar__")]
    assert "calendar (" in errlog.read_text()
    assert "is not reachable now" in errlog.read_text()
