"""Each MCP client's credential admits it to the tool classes it holds, over real HTTP with
the official SDK client: the orchestrator (its credential for the server) to all four, other clients
(MESH_CLIENTS) to read and producer at most."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastmcp import FastMCP
from pydantic import SecretStr

from fakes.class_server import one_tool_per_class
from fakes.serving import (
    ServerProcess,
    free_port,
    sdk_client,
    serving_in_thread,
)
from meshkit.credentials import Binding, new_client, token_digest
from meshkit.http import build_http_app

pytestmark = pytest.mark.anyio

ORCHESTRATOR_TOKEN = "orchestrator-token-0123456789abcdef"
ALICE = Binding("clawdia", "1001")
DESKTOP_TOKEN, DESKTOP = new_client("claude-desktop", ALICE)  # read+producer, the default
READER_TOKEN, READER = new_client("nightly-script", ALICE, ["read"])
ZEROS = "0" * 64
TOKENS = {
    "orchestrator": ORCHESTRATOR_TOKEN,
    "claude-desktop": DESKTOP_TOKEN,
    "nightly-script": READER_TOKEN,
}
TOOL_OF_CLASS = {"read": "look", "producer": "suggest", "confirm": "apply", "internal": "plumb"}

# The scope table: credential x tool class -> allowed.
ALLOWED = {
    "orchestrator": {"read", "producer", "confirm", "internal"},
    "claude-desktop": {"read", "producer"},
    "nightly-script": {"read"},
}


def scoped_server() -> FastMCP[Any]:
    return one_tool_per_class("scoped")


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[str]:
    app = build_http_app(
        scoped_server(),
        token=SecretStr(ORCHESTRATOR_TOKEN),
        clients=[DESKTOP, READER],
        allowed_hosts=[],
        max_body_bytes=1 << 20,
    )
    with serving_in_thread(app) as base:
        yield f"{base}/mcp"


@pytest.mark.parametrize("tool_class", list(TOOL_OF_CLASS))
@pytest.mark.parametrize("client", list(ALLOWED))
async def test_a_call_is_allowed_exactly_when_the_credential_holds_the_tool_class(
    mcp_url: str, client: str, tool_class: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="meshkit.scopes")
    tool = TOOL_OF_CLASS[tool_class]
    async with sdk_client(mcp_url, TOKENS[client]) as session:
        result = await session.call_tool(tool, {})
    text = " ".join(getattr(part, "text", "") for part in result.content)
    if tool_class in ALLOWED[client]:
        assert not result.is_error, text
        assert text.endswith("ed")
        return
    assert result.is_error
    assert text.startswith("forbidden (403)")
    assert f"'{tool_class}' scope" in text
    assert f"({client})" in text
    assert any(f"to client {client}" in r.getMessage() for r in caplog.records)
    assert TOKENS[client] not in caplog.text


@pytest.mark.parametrize("client", list(ALLOWED))
async def test_a_client_is_listed_only_the_tools_it_may_call(mcp_url: str, client: str) -> None:
    async with sdk_client(mcp_url, TOKENS[client]) as session:
        listed = {tool.name for tool in (await session.list_tools()).tools}
    assert listed == {TOOL_OF_CLASS[c] for c in ALLOWED[client]}


async def test_the_stored_digest_is_no_token(mcp_url: str) -> None:
    async with httpx2.AsyncClient() as http:
        response = await http.post(
            mcp_url,
            headers={"Authorization": f"Bearer {DESKTOP.digest}"},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        )
    assert response.status_code == 401


async def test_a_served_process_admits_a_client_from_mesh_clients_to_read_and_producer_only(
    tmp_path: Path,
) -> None:
    server = ServerProcess(
        "mcp_shopping",
        tmp_path,
        ORCHESTRATOR_TOKEN,
        MESH_APPROVAL_KEY="",
        SHOPPING_EXAMPLE_AGENT="",
        MESH_CLIENTS=f"{DESKTOP.entry()}, {READER.entry()}",
    )
    try:
        url = f"{server.ready()}/mcp"
        async with sdk_client(url, DESKTOP_TOKEN) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool(
                "confirm_reorder", {"payload": {}, "approval": "v1.act_000000000000.0.x"}
            )
    finally:
        log = server.stop()
    assert result.is_error
    refused = " ".join(getattr(part, "text", "") for part in result.content)
    assert listed, "the client saw no tool"
    assert not any(name.startswith("confirm_") for name in listed)
    assert {"get_list", "propose_reorder"} <= listed
    assert refused.startswith("forbidden (403): confirm_reorder is a confirm tool")
    assert "refused confirm_reorder on shopping to client claude-desktop" in log
    assert DESKTOP_TOKEN not in log
    assert ORCHESTRATOR_TOKEN not in log


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            "claude-desktop:read",
            "an entry must look like name:read+producer:<user>@<agent>:sha256:",
        ),
        (
            f"desk:read:sha256:{ZEROS}",
            "client 'desk' is bound to no agent and user, so it could speak for anyone: run "
            "make client NAME=desk AGENT=<agent> USER=<Telegram user id> again",
        ),
        (
            f"bot:confirm:1001@clawdia:sha256:{ZEROS}",
            "client 'bot': confirm belongs to the orchestrator alone",
        ),
        (
            f"desk:read:clawdia:sha256:{ZEROS}",
            "client 'desk': 'clawdia' must be <Telegram user id>@<agent>",
        ),
        (
            f"desk:read:alice@clawdia:sha256:{ZEROS}",
            "client 'desk': user 'alice' is not a Telegram user id",
        ),
        (
            "desk:read:1001@clawdia:sha256:not-hex",
            "client 'desk': the digest must be 64 lowercase hex",
        ),
        (f"{DESKTOP.entry()},{DESKTOP.entry()}", "client 'claude-desktop' is listed twice"),
        (
            f"copy:read:1001@clawdia:sha256:{token_digest(ORCHESTRATOR_TOKEN)}",
            "two credentials share a token (a client's token equals the orchestrator's",
        ),
    ],
)
def test_a_malformed_mesh_clients_stops_the_server_with_one_line(
    tmp_path: Path, value: str, expected: str
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mcp_weather"],
        env={
            **os.environ,
            "DATA_DIR": str(tmp_path),
            "MESH_TOKEN_SHA256": token_digest(ORCHESTRATOR_TOKEN),
            "MCP_PORT": str(free_port()),
            "MESH_CLIENTS": value,
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("configuration error: MESH_CLIENTS is invalid: ")
    assert expected in lines[0]


async def test_a_server_given_only_the_digest_of_its_credential_admits_the_orchestrator(
    tmp_path: Path,
) -> None:
    # A server holds MESH_TOKEN_SHA256 only, never the token the orchestrator sends.
    server = ServerProcess(
        "mcp_shopping",
        tmp_path,
        ORCHESTRATOR_TOKEN,
        MESH_TOKEN_SHA256=token_digest(ORCHESTRATOR_TOKEN).upper(),
        MESH_APPROVAL_KEY="",
        SHOPPING_EXAMPLE_AGENT="",
    )
    try:
        url = f"{server.ready()}/mcp"
        async with sdk_client(url, ORCHESTRATOR_TOKEN) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
        wrong = httpx2.post(url, headers={"Authorization": "Bearer not-the-token"}, json={})
        digest = httpx2.post(
            url, headers={"Authorization": f"Bearer {token_digest(ORCHESTRATOR_TOKEN)}"}, json={}
        )
    finally:
        log = server.stop()
    assert {"get_list", "confirm_reorder", "propose_reorder"} <= listed  # every tool class
    assert (wrong.status_code, digest.status_code) == (401, 401)  # the digest is no token
    assert ORCHESTRATOR_TOKEN not in log


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"MESH_TOKEN_SHA256": "abc123"},
            "MESH_TOKEN_SHA256 is invalid: it must be the SHA-256 of the orchestrator's "
            "credential for this server, 64 hex digits",
        ),
        (
            {"MESH_TOKEN_SHA256_FILE": "/nonexistent/mesh_token_sha256"},
            "MESH_TOKEN_SHA256_FILE is invalid: cannot read the file "
            "/nonexistent/mesh_token_sha256 (No such file or directory)",
        ),
        ({}, "MESH_TOKEN_SHA256 is not set: HTTP mode admits the orchestrator by the SHA-256"),
        # A server has no setting for a token: one in its environment admits nobody.
        (
            {"MESH_TOKEN": ORCHESTRATOR_TOKEN},
            "MESH_TOKEN_SHA256 is not set: HTTP mode admits the orchestrator by the SHA-256",
        ),
    ],
    ids=["not-a-digest", "no-such-file", "neither", "a-plain-token"],
)
def test_a_bad_orchestrator_credential_stops_the_server_with_a_clear_message(
    tmp_path: Path, env: dict[str, str], expected: str
) -> None:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MESH_TOKEN")}
    result = subprocess.run(
        [sys.executable, "-m", "mcp_weather"],
        env={**base, "DATA_DIR": str(tmp_path), "MCP_PORT": str(free_port()), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("configuration error: ")
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    if env.get("MESH_TOKEN"):
        assert ORCHESTRATOR_TOKEN not in result.stderr
