"""The guard in front of /mcp, exercised over real HTTP with a real MCP client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio
import httpx2
import pytest
from fastmcp import Client, FastMCP
from pydantic import Field, SecretStr

from fakes.serving import serving
from meshkit.http import build_http_app
from meshkit.server import create_server
from meshkit.tool_classes import read

pytestmark = pytest.mark.anyio

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def echo_server(*, checks_fail: bool = False) -> FastMCP[Any]:
    async def database() -> None:
        if checks_fail:
            raise ConnectionError("database is locked")

    server = create_server(
        "echo", version="1.2.3", instructions="Echoes.", checks={"database": database}
    )

    @server.tool(**read())
    async def echo(text: Annotated[str, Field(max_length=1000)]) -> str:
        """Repeat the text."""
        return text

    return server


@asynccontextmanager
async def start(
    allowed_hosts: Iterable[str] = (), *, checks_fail: bool = False, max_body_bytes: int = 4096
) -> AsyncIterator[str]:
    app = build_http_app(
        echo_server(checks_fail=checks_fail),
        token=SecretStr(TOKEN),
        allowed_hosts=allowed_hosts,
        max_body_bytes=max_body_bytes,
    )
    async with serving(app) as base_url:
        yield base_url


@pytest.fixture
async def base_url() -> AsyncIterator[str]:
    async with start() as url:
        yield url


async def test_health_answers_without_a_token(base_url: str) -> None:
    async with httpx2.AsyncClient() as http:
        response = await http.get(f"{base_url}/health")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "server": "echo",
        "version": "1.2.3",
        "checks": {"database": "ok"},
    }


async def test_health_names_the_failing_check_with_503() -> None:
    async with start(checks_fail=True) as url:
        async with httpx2.AsyncClient() as http:
            response = await http.get(f"{url}/health")
        assert response.status_code == 503
        body = response.json()
        assert body["status"] == "fail"
        assert body["failing"] == ["database"]
        assert body["checks"]["database"].startswith("fail")


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": TOKEN},
        {"Authorization": f"Basic {TOKEN}"},
    ],
    ids=["missing", "wrong", "longer", "no-scheme", "basic"],
)
async def test_mcp_refuses_a_missing_or_wrong_token_with_401(
    base_url: str, headers: dict[str, str]
) -> None:
    async with httpx2.AsyncClient() as http:
        response = await http.post(
            f"{base_url}/mcp",
            headers=headers,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        )
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert TOKEN not in response.text


async def test_unknown_paths_are_behind_the_token_too(base_url: str) -> None:
    async with httpx2.AsyncClient() as http:
        response = await http.get(f"{base_url}/anything")
    assert response.status_code == 401


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "localhost.evil.example"])
async def test_a_foreign_host_header_gets_421(base_url: str, host: str) -> None:
    async with httpx2.AsyncClient() as http:
        for path in ("/health", "/mcp"):
            response = await http.post(f"{base_url}{path}", headers={**AUTH, "Host": host})
            assert response.status_code == 421, path


@pytest.mark.parametrize(
    "host", ["localhost:8101", "127.0.0.1", "[::1]:8101", "echo:8101", "mcp-echo", "LOCALHOST"]
)
async def test_local_and_own_names_are_allowed_hosts(base_url: str, host: str) -> None:
    async with httpx2.AsyncClient() as http:
        response = await http.get(f"{base_url}/health", headers={"Host": host})
    assert response.status_code == 200


async def test_configured_hosts_are_added_and_star_allows_any() -> None:
    async with start(["pi.local"]) as url, httpx2.AsyncClient() as http:
        assert (await http.get(f"{url}/health", headers={"Host": "pi.local"})).status_code == 200
        assert (await http.get(f"{url}/health", headers={"Host": "x.local"})).status_code == 421
    async with start(["*"]) as url, httpx2.AsyncClient() as http:
        assert (await http.get(f"{url}/health", headers={"Host": "x.local"})).status_code == 200


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("https://evil.example", 403),
        ("null", 403),
        ("http://localhost:3000", 200),
        ("http://127.0.0.1", 200),
    ],
)
async def test_origin_must_name_an_allowed_host(base_url: str, origin: str, status: int) -> None:
    async with httpx2.AsyncClient() as http:
        response = await http.get(f"{base_url}/health", headers={"Origin": origin})
    assert response.status_code == status


async def test_an_oversized_body_gets_413_declared_or_streamed() -> None:
    async with start(max_body_bytes=2048) as url:
        big = b"x" * 5000

        async def chunks() -> AsyncIterator[bytes]:
            for i in range(0, len(big), 1000):
                yield big[i : i + 1000]

        async with httpx2.AsyncClient(headers=AUTH) as http:
            declared = await http.post(f"{url}/mcp", content=big)
            streamed = await http.post(f"{url}/mcp", content=chunks())
        assert declared.status_code == 413
        assert streamed.status_code == 413


async def test_a_client_with_the_token_lists_and_calls_tools(base_url: str) -> None:
    async with Client(f"{base_url}/mcp", auth=TOKEN) as client:
        tools = await client.list_tools()
        result = await client.call_tool("echo", {"text": "hi"})
    assert [tool.name for tool in tools] == ["echo"]
    assert result.data == "hi"


async def test_the_server_is_stateless_across_clients(base_url: str) -> None:
    # No session is kept: a second client (or a client after a server restart) just works.
    for _ in range(2):
        async with Client(f"{base_url}/mcp", auth=TOKEN) as client:
            assert (await client.call_tool("echo", {"text": "again"})).data == "again"


@pytest.mark.parametrize("bad", ['{"a": 1}', "[1]", "true", "null", "1.5"])
async def test_a_request_id_neither_string_nor_integer_is_refused_not_ignored(
    base_url: str, bad: str
) -> None:
    headers = {**AUTH, "Content-Type": "application/json", "Accept": "application/json"}
    body = f'{{"jsonrpc": "2.0", "id": {bad}, "method": "tools/list"}}'
    async with httpx2.AsyncClient(headers=headers) as http:
        refused = await http.post(f"{base_url}/mcp", content=body)
        batch = await http.post(f"{base_url}/mcp", content=f"[{body}]")
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == -32600
    assert "id must be a string or an integer" in refused.json()["error"]["message"]
    assert batch.status_code == 400


@pytest.mark.parametrize("host", ["[::1]evil.example", "localhost:80x", "a:b:c", "[::1", ""])
async def test_a_host_that_does_not_parse_strictly_gets_421(base_url: str, host: str) -> None:
    async with httpx2.AsyncClient() as http:
        response = await http.get(f"{base_url}/health", headers={"Host": host})
    assert response.status_code == 421


async def test_two_host_headers_are_refused(base_url: str) -> None:
    port = int(base_url.rsplit(":", 1)[1])
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        # Sent by hand: HTTP clients refuse to send a second Host header.
        await stream.send(
            b"GET /health HTTP/1.1\r\nHost: evil.example\r\nHost: localhost\r\n"
            b"Connection: close\r\n\r\n"
        )
        answer = b""
        with anyio.fail_after(5):
            async for chunk in stream:
                answer += chunk
    assert answer.startswith(b"HTTP/1.1 421 ")


@pytest.mark.parametrize(
    "origin", ["null", "file://localhost", "chrome-extension://localhost", "http://localhost/x"]
)
async def test_an_origin_that_is_not_an_http_site_gets_403(base_url: str, origin: str) -> None:
    async with httpx2.AsyncClient() as http:
        refused = await http.get(f"{base_url}/health", headers={"Origin": origin})
        allowed = await http.get(f"{base_url}/health", headers={"Origin": "https://localhost:8101"})
    assert refused.status_code == 403
    assert allowed.status_code == 200


async def raw_exchange(base_url: str, request: bytes) -> bytes:
    """Send bytes as they are (HTTP clients refuse to send some heads) and read the answer."""
    port = int(base_url.rsplit(":", 1)[1])
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(request)
        answer = b""
        with anyio.fail_after(5):
            async for chunk in stream:
                answer += chunk
    return answer


@pytest.mark.parametrize("depth", [65, 5_000, 200_000])
async def test_json_nested_too_deep_gets_400_in_one_line(
    depth: int, caplog: pytest.LogCaptureFixture
) -> None:
    nested = "[" * depth + "]" * depth
    body = f'{{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {{"x": {nested}}}}}'
    headers = {**AUTH, "Content-Type": "application/json", "Accept": "application/json"}
    async with start(max_body_bytes=1_000_000) as url, httpx2.AsyncClient(headers=headers) as http:
        response = await http.post(f"{url}/mcp", content=body)
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": -32700,
        "message": "Parse error: JSON nested deeper than 64 levels",
    }
    assert not [record for record in caplog.records if record.exc_info]


async def test_json_nested_as_deep_as_allowed_is_served(base_url: str) -> None:
    nested = "[" * 60 + "]" * 60
    body = f'{{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {{"x": {nested}}}}}'
    headers = {**AUTH, "Content-Type": "application/json", "Accept": "application/json"}
    async with httpx2.AsyncClient(headers=headers) as http:
        response = await http.post(f"{base_url}/mcp", content=body)
    assert "nested deeper" not in response.text


async def test_two_authorization_headers_get_400(base_url: str) -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
    for second in (b"Bearer wrong", f"Bearer {TOKEN}".encode()):
        answer = await raw_exchange(
            base_url,
            b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
            + f"Authorization: Bearer {TOKEN}\r\n".encode()
            + b"Authorization: "
            + second
            + b"\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body,
        )
        assert answer.startswith(b"HTTP/1.1 400 ")
        assert b"more than one Authorization header" in answer
