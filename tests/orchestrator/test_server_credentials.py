"""The orchestrator's credentials go only to the servers configured for them, each its own:
a third-party ``url:`` server (here the official SDK's MCPServer on a loopback port,
recording every request's headers) gets no Authorization header unless its entry names one."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

from fakes.checkout import orchestrator
from fakes.serving import credentials_file, serving
from meshkit.yaml_config import ConfigError
from orchestrator.config.registry import ServerEntry, load_registry, mesh_credentials
from orchestrator.mesh.bridge import output_of
from orchestrator.mesh.registry import Registry

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).parents[2]
OUR_CREDENTIAL = "credential-for-our-server-only-0123"
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
        async with Registry(entries, credentials={"ours": OUR_CREDENTIAL}).running() as registry:
            for server in entries:
                tool = registry.find(server, "shout")
                assert tool is not None, registry.status()
                assert "HI" in output_of(await registry.call(tool, {"text": "hi"}))
    assert plain.seen
    assert plain.authorizations() == {None}
    assert asks_mesh.authorizations() == {f"Bearer {OUR_CREDENTIAL}"}
    assert own_token.authorizations() == {f"Bearer {OWN_TOKEN}"}
    assert not any(OUR_CREDENTIAL in str(headers) for headers in plain.seen + own_token.seen)


def test_the_shipped_registry_sends_every_clawmesh_server_its_own_credential(
    tmp_path: Path,
) -> None:
    path = ROOT / "config" / "mcp_servers.yaml"
    entries = load_registry(path, environ={})
    assert entries
    tokens = {name: f"credential-of-{name}-0123456789" for name in entries}
    sent = mesh_credentials(entries, path, credentials_file(tmp_path, tokens))
    assert {name: entry.bearer(sent.get(name)) for name, entry in entries.items()} == tokens


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


def orchestrator_chat(registry: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MESH_")},
        "CLAWMESH_REGISTRY": str(registry),
        "OPENAI_API_KEY": "sk-test",
        **env,
    }
    return orchestrator(environment, "chat")  # the shipped fleet, no .env


def test_auth_mesh_without_a_credentials_file_stops_the_orchestrator_with_one_line(
    tmp_path: Path,
) -> None:
    registry = tmp_path / "servers.yaml"
    registry.write_text("servers:\n  weather: {url: 'http://127.0.0.1:9/mcp', auth: mesh}\n")
    # A plain MESH_TOKEN, as one .env used to give to all, is not a credential any more.
    result = orchestrator_chat(registry, MESH_TOKEN="an-old-shared-token-0123456789")
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"configuration error: {registry}: servers.weather.auth: mesh needs the orchestrator's "
        "credential for it, and MESH_CREDENTIALS_FILE is not set; point it at the file make up "
        "writes (secrets/mesh_credentials, clawmesh secrets)"
    ]


def test_a_server_with_no_line_in_the_credentials_file_is_named_in_one_line(
    tmp_path: Path,
) -> None:
    registry = tmp_path / "servers.yaml"
    registry.write_text(
        "servers:\n"
        "  memory: {url: 'http://127.0.0.1:9/mcp', auth: mesh}\n"
        "  weather: {url: 'http://127.0.0.1:9/mcp', auth: mesh}\n"
    )
    file = credentials_file(tmp_path, {"memory": "memory-credential-0123456789"})
    result = orchestrator_chat(registry, MESH_CREDENTIALS_FILE=str(file))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"configuration error: {registry}: servers.weather.auth: mesh has no credential in "
        f"{file}; run make up (clawmesh secrets) to add one, then restart the "
        "server with its new MESH_TOKEN_SHA256"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("weather\n", "line 1: expected '<server> <token>'"),
        ("# ok\nweather a b\n", "line 2: expected '<server> <token>'"),
        ("weather shared-token-0123456789\nmemory shared-token-0123456789\n", "share a token"),
        ("weather token-one-0123456789\nweather token-two-0123456789\n", "listed twice"),
    ],
)
def test_a_malformed_credentials_file_is_one_line_that_shows_no_token(
    tmp_path: Path, text: str, expected: str
) -> None:
    file = tmp_path / "mesh_credentials"
    file.write_text(text)
    entries = {"weather": ServerEntry(url="http://127.0.0.1:9/mcp", auth="mesh")}
    with pytest.raises(ConfigError) as raised:
        mesh_credentials(entries, tmp_path / "servers.yaml", file)
    message = str(raised.value)
    assert message.startswith(f"MESH_CREDENTIALS_FILE: {file}")
    assert expected in message
    assert "\n" not in message
    assert "0123456789" not in message
