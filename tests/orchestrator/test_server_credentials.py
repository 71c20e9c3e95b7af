"""The orchestrator's credential goes only to the servers configured for it: a third-party
``url:`` server (here the official SDK's MCPServer on a loopback port, recording every
request's headers) gets no Authorization header unless its entry names one."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

from fakes.serving import serving
from orchestrator.config import ConfigError, ServerEntry, load_registry
from orchestrator.mesh.bridge import output_of
from orchestrator.mesh.registry import Registry

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).parents[2]
MESH_TOKEN = "mesh-token-for-own-servers-only-0123"
OWN_TOKEN = "a-token-of-the-third-party-service"


class HeaderRecorder:
    """ASGI wrapper keeping the headers of every request the server receives."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[dict[str, str]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.seen.append({k.decode(): v.decode() for k, v in scope["headers"]})
        await self.app(scope, receive, send)

    def authorizations(self) -> set[str | None]:
        return {headers.get("authorization") for headers in self.seen}


def third_party() -> HeaderRecorder:
    server = MCPServer("third-party")

    @server.tool()
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    return HeaderRecorder(server.streamable_http_app(stateless_http=True, json_response=True))


@asynccontextmanager
async def served(*apps: ASGIApp) -> AsyncIterator[list[str]]:
    async with AsyncExitStack() as stack:
        yield [f"{await stack.enter_async_context(serving(app))}/mcp" for app in apps]


async def test_a_third_party_url_server_receives_no_mesh_credential() -> None:
    plain, asks_mesh, own_token = third_party(), third_party(), third_party()
    async with served(plain, asks_mesh, own_token) as (plain_url, mesh_url, own_url):
        entries = {
            "plain": ServerEntry(url=plain_url),
            "ours": ServerEntry(url=mesh_url, auth="mesh"),
            "keyed": ServerEntry(url=own_url, token=OWN_TOKEN),
        }
        async with Registry(entries, token=MESH_TOKEN).running() as registry:
            for server in entries:
                tool = registry.find(server, "shout")
                assert tool is not None, registry.status()
                assert "HI" in output_of(await registry.call(tool, {"text": "hi"}))
    assert plain.seen
    assert plain.authorizations() == {None}
    assert asks_mesh.authorizations() == {f"Bearer {MESH_TOKEN}"}
    assert own_token.authorizations() == {f"Bearer {OWN_TOKEN}"}
    assert not any(MESH_TOKEN in str(headers) for headers in plain.seen + own_token.seen)


def test_the_shipped_registry_sends_mesh_token_to_every_clawmesh_server() -> None:
    entries = load_registry(ROOT / "config" / "mcp_servers.yaml", environ={})
    assert entries
    assert {name: entry.bearer("t") for name, entry in entries.items()} == dict.fromkeys(
        entries, "t"
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("w: {command: [x], auth: mesh}", "auth and token are for url entries (HTTP) only"),
        ("w: {url: 'http://w:1/mcp', auth: mesh, token: t}", "give auth: mesh (clawmesh's"),
        ("w: {url: 'http://w:1/mcp', auth: everyone}", "servers.w.auth: Input should be 'mesh'"),
        ("w: {url: 'http://w:1/mcp', token: '${UNSET_TOKEN:-}'}", "token is empty: set the"),
    ],
)
def test_a_malformed_credential_entry_is_one_clear_error(
    tmp_path: Path, body: str, expected: str
) -> None:
    path = tmp_path / "servers.yaml"
    path.write_text(f"servers:\n  {body}\n")
    with pytest.raises(ConfigError) as raised:
        load_registry(path, environ={})
    assert expected in str(raised.value)
    assert "\n" not in str(raised.value)


def test_auth_mesh_without_mesh_token_stops_the_orchestrator_with_one_line(
    tmp_path: Path,
) -> None:
    registry = tmp_path / "servers.yaml"
    registry.write_text("servers:\n  weather: {url: 'http://127.0.0.1:9/mcp', auth: mesh}\n")
    env = {
        **os.environ,
        "CLAWMESH_REGISTRY": str(registry),
        "OPENAI_API_KEY": "sk-test",
        "MESH_TOKEN": "",
    }
    result = subprocess.run(
        [sys.executable, "-m", "orchestrator", "chat"],
        env=env,
        cwd=ROOT,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"configuration error: {registry}: servers.weather.auth: mesh needs MESH_TOKEN, which is "
        "not set; set it in .env (the same value the servers have)"
    ]
