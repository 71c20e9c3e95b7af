"""A server restarted between calls is used by the very next call: real server processes
over HTTP and stdio, the background retry set far longer than any test (``NEVER``), so
only the reconnect a call makes itself can bring a server back in time."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel, SecretStr

from fakes.mcp_toys import build_toys
from fakes.mesh import Service
from fakes.open_meteo import FakeOpenMeteo
from fakes.responses_api import call, calls, text
from fakes.serving import credentials_file, free_port, serving
from fakes.world import ROOT, World, clawdia, last_output, say
from meshkit.credentials import token_digest
from meshkit.http import build_http_app
from orchestrator.config.registry import ServerEntry
from orchestrator.core.routes import TextContext
from orchestrator.mesh.bridge import output_of_error
from orchestrator.mesh.errors import ServerUnavailable, ToolCallError
from orchestrator.mesh.registry import Registry, ToolResult
from orchestrator.mesh.tools import ToolInfo

pytestmark = pytest.mark.anyio

TOKEN = "restart-test-token-0123456789abcdef"
NEVER = 60.0  # background retry delay: no test waits for it
PARIS = {"location": "Paris"}
UNAVAILABLE = {
    "error": "The weather server is unavailable right now; tell the user and suggest "
    "trying again shortly."
}


def mesh_registry(entries: dict[str, ServerEntry]) -> Registry:
    """Every entry sent TOKEN; no reconnecting in the background: only calls reconnect."""
    return Registry(
        entries, credentials=dict.fromkeys(entries, TOKEN), retry_initial_s=NEVER, retry_max_s=NEVER
    )


def weather_service(tmp_path: Path, open_meteo: str) -> Service:
    """``python -m mcp_weather`` over HTTP on a fixed port (a restart keeps its address)."""
    port = free_port()
    return Service(
        "weather",
        [sys.executable, "-m", "mcp_weather"],
        {
            **os.environ,
            "MESH_TOKEN_SHA256": token_digest(TOKEN),
            "MCP_PORT": str(port),
            "DATA_DIR": str(tmp_path / "weather"),
            "WEATHER_FORECAST_URL": f"{open_meteo}/v1/forecast",
            "WEATHER_GEOCODING_URL": f"{open_meteo}/v1/search",
            "FASTMCP_SHOW_SERVER_BANNER": "false",
            "FASTMCP_CHECK_FOR_UPDATES": "off",
        },
        tmp_path / "weather.log",
        f"http://127.0.0.1:{port}/health",
    )


@asynccontextmanager
async def weather_process(tmp_path: Path) -> AsyncIterator[Service]:
    async with serving(FakeOpenMeteo().app) as open_meteo:
        weather = weather_service(tmp_path, open_meteo)
        await weather.start()
        try:
            yield weather
        finally:
            await weather.stop()


def mcp_url(service: Service) -> str:
    assert service.health_url is not None
    return service.health_url.removesuffix("/health") + "/mcp"


def found(registry: Registry, server: str, name: str) -> ToolInfo:
    tool = registry.find(server, name)
    assert tool is not None, name
    return tool


def child_pids() -> list[int]:
    """This process's children (Linux /proc): the stdio servers the registry started."""
    return [
        int(pid)
        for task in Path("/proc/self/task").iterdir()
        for pid in (task / "children").read_text().split()
    ]


async def kill_and_wait(pid: int) -> None:
    """SIGKILL ``pid`` and return once it has exited (its pidfd turns readable)."""
    fd = os.pidfd_open(pid)
    try:
        os.kill(pid, signal.SIGKILL)
        readable, _, _ = await anyio.to_thread.run_sync(select.select, [fd], [], [], 10)
        assert readable, f"process {pid} still alive"
    finally:
        os.close(fd)


async def test_an_http_server_restarted_after_a_call_found_it_gone_answers_the_next_call(
    tmp_path: Path,
) -> None:
    async with weather_process(tmp_path) as weather:
        entries = {"weather": ServerEntry(url=mcp_url(weather), auth="mesh")}
        registry = mesh_registry(entries)
        async with registry.running():
            current = found(registry, "weather", "get_current_weather")
            assert (await registry.call(current, PARIS)).structured is not None
            await weather.kill()
            with pytest.raises(ServerUnavailable) as down:
                await registry.call(current, PARIS)
            # The model reads one clear error; /status says down, and why, in a few words.
            assert json.loads(output_of_error(down.value, current)) == UNAVAILABLE
            [status] = registry.status()
            assert (status.up, status.error) == (False, "connection refused")

            await weather.start()
            with anyio.fail_after(20):
                result = await registry.call(current, PARIS)
            [status] = registry.status()
    assert result.structured is not None
    assert result.structured["place"]["name"].startswith("Paris")
    assert (status.up, status.error) == (True, None)


async def test_an_http_server_restarted_while_nobody_called_is_seen_down_then_up_by_a_check(
    tmp_path: Path,
) -> None:
    async with weather_process(tmp_path) as weather:
        entries = {"weather": ServerEntry(url=mcp_url(weather), auth="mesh")}
        registry = mesh_registry(entries)
        async with registry.running():
            await weather.kill()
            await registry.check()  # what /status does before it answers
            down = registry.status()[0]
            await weather.start()
            await registry.check()
            up = registry.status()[0]
    assert (down.up, down.error) == (False, "connection refused")
    assert (up.up, up.error, up.tools) == (True, None, 3)


async def test_a_stdio_server_that_died_is_started_again_by_the_next_call() -> None:
    entries = {"time": ServerEntry(command=["python", "-m", "mcp_server_time"])}
    registry = Registry(entries, retry_initial_s=NEVER, retry_max_s=NEVER)
    async with registry.running():
        now = found(registry, "time", "get_current_time")
        [first] = child_pids()
        await kill_and_wait(first)
        with anyio.fail_after(30):
            result = await registry.call(now, {"timezone": "Asia/Tokyo"})
        second = child_pids()
    assert json.loads(result.text)["timezone"] == "Asia/Tokyo"
    assert len(second) == 1
    assert second != [first]


# A stdio server that counts its starts and serves only once ``ready`` exists.
STARTS_THEN_SERVES = """
import pathlib, runpy, sys
starts, ready = map(pathlib.Path, sys.argv[1:3])
with starts.open("a") as log:
    log.write("start\\n")
if not ready.exists():
    sys.exit("not ready")
sys.argv = ["mcp_server_time"]
runpy.run_module("mcp_server_time", run_name="__main__")
"""


def starts_of(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


async def calls_at_once(registry: Registry, tool: ToolInfo, n: int) -> list[object]:
    outcomes: list[object] = []

    async def one() -> None:
        try:
            outcomes.append(await registry.call(tool, {"timezone": "UTC"}))
        except ToolCallError as error:
            outcomes.append(error)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tasks:
            for _ in range(n):
                tasks.start_soon(one)
    return outcomes


async def test_calls_to_a_down_server_share_one_reconnect_attempt_and_fail_or_succeed_with_it(
    tmp_path: Path,
) -> None:
    starts, ready = tmp_path / "starts", tmp_path / "ready"
    script = tmp_path / "server.py"
    script.write_text(STARTS_THEN_SERVES)
    entries = {"time": ServerEntry(command=["python", str(script), str(starts), str(ready)])}
    registry = Registry(entries, retry_initial_s=NEVER, retry_max_s=NEVER)
    # Never up yet, so not listed: the tool as the registry would know it.
    now = ToolInfo(
        "time", "get_current_time", "time__get_current_time", "read", "", "", {}, True, True
    )
    async with registry.running():
        assert starts_of(starts) == 1  # the first attempt, at start: it failed
        down = await calls_at_once(registry, now, 5)
        after_down = starts_of(starts)
        ready.touch()  # the server can start now
        up = await calls_at_once(registry, now, 5)
        after_up = starts_of(starts)
    assert all(isinstance(outcome, ServerUnavailable) for outcome in down), down
    assert after_down == 2  # five calls, one attempt
    assert all(isinstance(outcome, ToolResult) for outcome in up), up
    assert after_up == 3


class Echo(BaseModel):
    echo: str


async def test_an_internal_call_to_a_server_down_since_the_start_connects_it_first() -> None:
    port = free_port()
    entries = {"toys": ServerEntry(url=f"http://127.0.0.1:{port}/mcp", auth="mesh")}
    registry = mesh_registry(entries)
    app = build_http_app(
        build_toys(), token=SecretStr(TOKEN), allowed_hosts=[], max_body_bytes=1 << 20
    )
    async with registry.running():
        assert registry.tools() == []  # never connected: no tools known
        with pytest.raises(ServerUnavailable):
            await registry.call_as("toys", "echo", {"text": "hi"}, Echo)
        async with serving(app, port=port):
            answer = await registry.call_as("toys", "echo", {"text": "hi"}, Echo)
    assert answer == Echo(echo="hi")


async def test_a_call_to_a_server_that_accepts_but_never_answers_fails_within_its_timeout() -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # listens, never accepts
        port = silent.getsockname()[1]
        entries = {
            "mute": ServerEntry(url=f"http://127.0.0.1:{port}/mcp", auth="mesh", timeout_s=1)
        }
        registry = mesh_registry(entries)
        mute = ToolInfo("mute", "echo", "mute__echo", "read", "", "", {}, True, True)
        async with registry.running():
            with anyio.fail_after(5), pytest.raises(ServerUnavailable):
                await registry.call(mute, {})
            [status] = registry.status()
    assert (status.up, status.error) == (False, "no answer in time")


def weather_and_memory(tmp_path: Path, weather: Service) -> tuple[Path, Path]:
    """Mesh mode for weather (its own process), memory in-process: registry and fleet."""
    registry, agents = tmp_path / "servers.yaml", tmp_path / "agents.yaml"
    registry.write_text(
        "servers:\n"
        f"  weather: {{url: '{mcp_url(weather)}', auth: mesh}}\n"
        "  memory: {module: 'mcp_memory.server:build_server', role: memory, proposes: true}\n"
    )
    agents.write_text(
        "agents:\n"
        "  clawdia:\n"
        "    name: Clawdia\n"
        f"    persona: {ROOT / 'agents' / 'clawdia'}\n"
        "    servers: [weather, memory]\n"
        "    timezone: Europe/Paris\n"
    )
    return registry, agents


async def test_status_and_the_model_see_the_weather_server_as_it_is_at_each_moment(
    world: World, tmp_path: Path
) -> None:
    world.llm.script(
        calls(call("weather__get_current_weather", location="Paris")),
        lambda body: text(f"Sorry, I could not check: {last_output(body)['error']}"),
        calls(call("weather__get_current_weather", location="Paris")),
        lambda body: text(f"In {last_output(body)['place']['name']} now."),
    )
    async with weather_process(tmp_path) as weather:
        registry, agents = weather_and_memory(tmp_path, weather)
        world.settings = world.settings.model_copy(
            update={
                "registry": registry,
                "agents": agents,
                "mesh_credentials_file": credentials_file(tmp_path, {"weather": TOKEN}),
            }
        )
        async with clawdia(world) as app:

            async def status() -> str:
                return (await app.dispatcher.on_text(TextContext("clawdia", "c", "/status"))).text

            assert "✅ weather (http): up, 3 tools" in await status()
            await weather.kill()
            gone = await status()  # no call has found it gone yet: /status looks itself
            with anyio.fail_after(20):
                while_down = await say(app, "weather in Paris?")
            down_output = last_output(world.llm.requests[1])
            await weather.start()
            back = await status()
            with anyio.fail_after(20):
                after = await say(app, "and now?")
    assert "❌ weather (http): down (connection refused)" in gone
    assert down_output == UNAVAILABLE  # one clear error, nothing of the transport
    assert while_down.startswith("Sorry, I could not check: The weather server is unavailable")
    assert "✅ weather (http): up, 3 tools" in back
    assert after == "In Paris, Île-de-France, France now."
