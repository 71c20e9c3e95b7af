"""A server's relay token (``MESH_PEERS`` on pending-actions) admits that server to relay
tools only, under its own name; ``make up`` writes one per server with confirm tools; and a
bound stdio server goes by ``MESH_STDIO_CLIENT``. Over real HTTP with the official SDK client."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import FastMCP
from pydantic import SecretStr

from fakes.class_server import one_tool_per_class
from fakes.serving import sdk_client, serving_in_thread
from meshkit.credentials import (
    Binding,
    CredentialError,
    PeerCredential,
    new_client,
    parse_peers,
    token_digest,
)
from meshkit.http import build_http_app
from meshkit.scopes import request_caller
from meshkit.secret_files import PEERS, RELAY_PREFIX, make_secrets, relay_token
from meshkit.serve import local_caller
from meshkit.settings import ServeSettings
from meshkit.tool_classes import relay

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
ORCHESTRATOR_TOKEN = "orchestrator-token-0123456789abcdef"
SHOPPING_TOKEN = "shopping-relay-token-0123456789abcdef"
DESKTOP_TOKEN, DESKTOP = new_client("claude-desktop", Binding("clawdia", "1001"))
SHOPPING = PeerCredential("shopping", token_digest(SHOPPING_TOKEN))
TOOL_OF_CLASS = {
    "read": "look",
    "producer": "suggest",
    "confirm": "apply",
    "internal": "plumb",
    "relay": "stage_for_client",
}


def relaying_server() -> FastMCP[Any]:
    server = one_tool_per_class("pending-actions")

    @server.tool(**relay())
    async def stage_for_client() -> str:
        """Stage, saying who asked."""
        caller = request_caller(None)
        return f"staged for {caller.name if caller else 'nobody'}"

    return server


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[str]:
    app = build_http_app(
        relaying_server(),
        token=SecretStr(ORCHESTRATOR_TOKEN),
        clients=[DESKTOP],
        peers=[SHOPPING],
        allowed_hosts=[],
        max_body_bytes=1 << 20,
    )
    with serving_in_thread(app) as base:
        yield f"{base}/mcp"


async def test_a_peer_is_listed_the_relay_tools_only(mcp_url: str) -> None:
    async with sdk_client(mcp_url, SHOPPING_TOKEN) as session:
        listed = {tool.name for tool in (await session.list_tools()).tools}
    assert listed == {"stage_for_client"}


@pytest.mark.parametrize("tool_class", list(TOOL_OF_CLASS))
async def test_a_peer_calls_relay_tools_under_its_servers_name_and_nothing_else(
    mcp_url: str, tool_class: str
) -> None:
    async with sdk_client(mcp_url, SHOPPING_TOKEN) as session:
        result = await session.call_tool(TOOL_OF_CLASS[tool_class], {})
    text = " ".join(getattr(part, "text", "") for part in result.content)
    if tool_class == "relay":
        assert not result.is_error, text
        assert text == "staged for shopping"
    else:
        assert result.is_error
        assert text.startswith("forbidden (403)")


@pytest.mark.parametrize(
    "token", [ORCHESTRATOR_TOKEN, DESKTOP_TOKEN], ids=["orchestrator", "client"]
)
async def test_neither_the_orchestrator_nor_a_client_may_call_a_relay_tool(
    mcp_url: str, token: str
) -> None:
    async with sdk_client(mcp_url, token) as session:
        listed = {tool.name for tool in (await session.list_tools()).tools}
        result = await session.call_tool("stage_for_client", {})
    assert "stage_for_client" not in listed
    assert result.is_error


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("shopping", "a peer entry must look like <server>:sha256:<64 hex digits>"),
        (f"orchestrator:sha256:{'0' * 64}", "peer 'orchestrator': give the server's registry"),
        ("shopping:sha256:not-hex", "peer 'shopping': the digest must be 64 lowercase hex"),
        (f"{SHOPPING.entry()}\n{SHOPPING.entry()}", "peer 'shopping' is listed twice"),
    ],
)
def test_a_malformed_peer_entry_is_named(text: str, expected: str) -> None:
    with pytest.raises(CredentialError, match="^" + expected.replace("(", r"\(")):
        parse_peers(text)


def test_the_peers_file_takes_one_entry_a_line_with_comments(tmp_path: Path) -> None:
    file = tmp_path / "mesh_peers"
    file.write_text(f"# the servers that relay\n{SHOPPING.entry()}\n")
    settings = ServeSettings(peers=f"calendar:sha256:{'1' * 64}", peers_file=str(file))
    assert [peer.name for peer in settings.all_peers] == ["calendar", "shopping"]


def test_make_up_writes_a_relay_token_for_each_server_with_confirm_tools(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets"
    registry = ROOT / "config" / "mcp_servers.yaml"
    written = make_secrets(secrets, registry, {})
    relaying = sorted(n.removeprefix(RELAY_PREFIX) for n in written if n.startswith(RELAY_PREFIX))
    assert relaying == ["calendar", "memory", "scheduler", "shopping"]
    peers = parse_peers((secrets / PEERS).read_text())
    tokens = {server: relay_token(secrets, server) for server in relaying}
    assert {p.name: p.digest for p in peers} == {
        server: token_digest(str(token)) for server, token in tokens.items()
    }
    assert len(set(tokens.values())) == len(tokens)  # each its own
    assert make_secrets(secrets, registry, {}) == []  # kept: nothing rewritten
    assert relay_token(secrets, "weather") is None  # no confirm tools, nothing to relay


def test_a_bound_stdio_server_goes_by_its_client_name() -> None:
    settings = ServeSettings(
        stdio_agent="clawdia", stdio_user="1001", stdio_client="claude-desktop"
    )
    caller = local_caller(settings)
    assert caller is not None
    assert caller.name == "claude-desktop"
    assert local_caller(ServeSettings(stdio_agent="clawdia", stdio_user="1001")) == (
        local_caller(ServeSettings(stdio_agent="clawdia", stdio_user="1001", stdio_client="stdio"))
    )


def test_a_malformed_peers_file_stops_pending_actions_with_one_line(tmp_path: Path) -> None:
    file = tmp_path / "mesh_peers"
    file.write_text("shopping:sha256:the-token-itself\n")
    result = subprocess.run(
        [sys.executable, "-m", "mcp_weather"],
        env={
            **os.environ,
            "DATA_DIR": str(tmp_path),
            "MESH_TOKEN_SHA256": token_digest(ORCHESTRATOR_TOKEN),
            "MESH_PEERS_FILE": str(file),
            "MCP_PORT": "1",
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("configuration error: MESH_PEERS_FILE is invalid: peer 'shopping'")
