"""`python -m mcp_weather` as a real process, over HTTP and stdio, with the official SDK client."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from fakes.open_meteo import FakeOpenMeteo
from fakes.serving import free_port, sdk_client, serving_in_thread
from meshkit.credentials import token_digest

pytestmark = pytest.mark.anyio

TOKEN = "process-test-token-42"
TOOLS = {"get_current_weather", "get_forecast", "get_hourly_forecast"}


@pytest.fixture(scope="module")
def open_meteo() -> Iterator[str]:
    with serving_in_thread(FakeOpenMeteo().app) as base_url:
        yield base_url


def weather_env(open_meteo: str, **extra: str) -> dict[str, str]:
    return {
        "WEATHER_FORECAST_URL": f"{open_meteo}/v1/forecast",
        "WEATHER_GEOCODING_URL": f"{open_meteo}/v1/search",
        "FASTMCP_CHECK_FOR_UPDATES": "off",
        **extra,
    }


@pytest.fixture(scope="module")
def weather_url(open_meteo: str) -> Iterator[str]:
    port = free_port()
    digest = token_digest(TOKEN)
    env = {**os.environ, **weather_env(open_meteo, MESH_TOKEN_SHA256=digest, MCP_PORT=str(port))}
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_weather"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base_url, process)
        yield base_url
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=10)
        assert TOKEN not in stderr, "a bearer token reached the server's log"


def wait_healthy(base_url: str, process: subprocess.Popen[str], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"mcp_weather exited: {process.stderr and process.stderr.read()}")
        try:
            if httpx2.get(f"{base_url}/health", timeout=1).status_code == 200:
                return
        except httpx2.TransportError:
            pass
        time.sleep(0.05)
    raise TimeoutError("mcp_weather did not become healthy")


def test_http_mode_refuses_to_start_without_a_token(open_meteo: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MESH_TOKEN")}
    result = subprocess.run(
        [sys.executable, "-m", "mcp_weather"],
        env=env,
        timeout=60,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "MESH_TOKEN_SHA256 is not set" in result.stderr
    assert "--stdio" in result.stderr


def test_health_answers_without_a_token(weather_url: str) -> None:
    response = httpx2.get(f"{weather_url}/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["server"] == "weather"
    assert body["checks"] == {"open_meteo_client": "ok"}


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer not-the-token"}], ids=["no-token", "wrong-token"]
)
def test_mcp_answers_401_without_the_right_token(weather_url: str, headers: dict[str, str]) -> None:
    response = httpx2.post(
        f"{weather_url}/mcp",
        headers=headers,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
    assert response.status_code == 401


def test_a_foreign_host_gets_421(weather_url: str) -> None:
    response = httpx2.post(
        f"{weather_url}/mcp",
        headers={"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
    assert response.status_code == 421


def check_tools(tools: list[Any]) -> None:
    assert {tool.name for tool in tools} == TOOLS
    for tool in tools:
        assert tool.annotations.read_only_hint is True
        assert tool.meta["fastmcp"]["tags"] == ["read"]


async def call_all(client: Client) -> None:
    current = await client.call_tool("get_current_weather", {"location": "Paris"})
    assert not current.is_error
    assert current.structured_content is not None
    assert current.structured_content["place"]["country"] == "France"
    forecast = await client.call_tool("get_forecast", {"location": "Zürich", "days": 2})
    assert forecast.structured_content is not None
    assert len(forecast.structured_content["days"]) == 2
    hourly = await client.call_tool(
        "get_hourly_forecast", {"location": "48.85,2.35", "date": "today"}
    )
    assert hourly.structured_content is not None
    assert len(hourly.structured_content["hours"]) == 24
    unknown = await client.call_tool("get_current_weather", {"location": "Atlantis"})
    assert unknown.is_error
    assert "try adding the country" in unknown.content[0].text  # type: ignore[union-attr]


async def test_the_official_sdk_client_lists_and_calls_over_http(weather_url: str) -> None:
    async with sdk_client(f"{weather_url}/mcp", TOKEN) as client:
        check_tools((await client.list_tools()).tools)
        await call_all(client)


async def test_the_official_sdk_client_lists_and_calls_over_stdio(open_meteo: str) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_weather", "--stdio"], env=weather_env(open_meteo)
    )
    async with Client(params) as client:
        check_tools((await client.list_tools()).tools)
        await call_all(client)


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_ends_the_server_with_exit_0(open_meteo: str, number: signal.Signals) -> None:
    port = free_port()
    env = {
        **os.environ,
        **weather_env(open_meteo, MESH_TOKEN_SHA256=token_digest(TOKEN), MCP_PORT=str(port)),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_weather"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", process)
        process.send_signal(number)
        _, stderr = process.communicate(timeout=20)
    finally:
        process.kill()
    # A stop asked for and done is a success to Docker (not 143, death by SIGTERM).
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
