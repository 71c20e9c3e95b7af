"""A client credential speaks for one person: over real HTTP with the official SDK client, a
MESH_CLIENTS client bound to an agent and a user gets its context arguments (agent, user,
timezone) from the binding, on a toy server and on every shipped server, and an argument naming
anyone else is refused; the orchestrator still passes them freely."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from fastmcp import FastMCP
from pydantic import Field, SecretStr

from fakes.serving import sdk_client, serving_in_thread
from mcp_calendar.server import build_server as build_calendar
from mcp_calendar.settings import CalendarSettings
from mcp_memory.server import build_server as build_memory
from mcp_memory.settings import MemorySettings
from mcp_scheduler.server import build_server as build_scheduler
from mcp_scheduler.settings import SchedulerSettings
from mcp_shopping.server import build_server as build_shopping
from mcp_shopping.settings import ShoppingSettings
from mcp_weather.server import build_server as build_weather
from mcp_weather.settings import WeatherSettings
from meshkit.credentials import Binding, new_client
from meshkit.http import build_http_app
from meshkit.server import create_server
from meshkit.tool_classes import producer, read

pytestmark = pytest.mark.anyio

ORCHESTRATOR_TOKEN = "orchestrator-token-bindings-0123456789"
ALICE = Binding("clawdia", "1001")
DESKTOP_TOKEN, DESKTOP = new_client("claude-desktop", ALICE)
# Bound to an agent whose zone the server does not know: its own timezone stands.
ROAMING_TOKEN, ROAMING = new_client("roaming", Binding("nomad", "1001"), ["read"])
ZONES = {"clawdia": "Europe/Berlin"}
CONTEXT = {"agent", "user", "timezone"}


Short = Annotated[str, Field(max_length=64)]  # every argument is bounded (meshkit.bounds)


def toy_server() -> FastMCP[Any]:
    server = create_server("toy", version="1", instructions="Whose data is this?")

    @server.tool(**read(context=("agent", "user", "timezone")))
    async def whose(agent: Short = "default", user: Short = "", timezone: Short = "UTC") -> str:
        """Read someone's data."""
        return f"{agent}/{user}/{timezone}"

    @server.tool(**producer(context=("agent",)))
    async def propose(text: Short, agent: Short = "default") -> str:
        """Propose something for an agent."""
        return f"{agent}: {text}"

    @server.tool(**read())
    async def peek(user: Short = "") -> str:
        """A tool that forgot to declare its user as context."""
        return f"peeked at {user or 'nobody'}"

    return server


def text_of(result: Any) -> str:
    return " ".join(getattr(part, "text", "") for part in result.content)


@pytest.fixture(scope="module")
def toy_url() -> Iterator[str]:
    app = build_http_app(
        toy_server(),
        token=SecretStr(ORCHESTRATOR_TOKEN),
        clients=[DESKTOP, ROAMING],
        allowed_hosts=[],
        max_body_bytes=1 << 20,
        zones=ZONES,
    )
    with serving_in_thread(app) as base:
        yield f"{base}/mcp"


async def test_a_bound_client_gets_its_agent_user_and_the_agents_zone(toy_url: str) -> None:
    async with sdk_client(toy_url, DESKTOP_TOKEN) as client:
        plain = await client.call_tool("whose", {})
        same = await client.call_tool("whose", {"agent": "clawdia", "user": "1001"})
        zoned = await client.call_tool("whose", {"timezone": "Asia/Tokyo"})
        proposed = await client.call_tool("propose", {"text": "milk"})
    assert text_of(plain) == "clawdia/1001/Europe/Berlin"
    assert text_of(same) == "clawdia/1001/Europe/Berlin"  # its own names are no offence
    assert text_of(zoned) == "clawdia/1001/Europe/Berlin"  # the agent's clock, not the client's
    assert text_of(proposed) == "clawdia: milk"


async def test_a_client_whose_agents_zone_is_unknown_keeps_its_own_timezone(toy_url: str) -> None:
    async with sdk_client(toy_url, ROAMING_TOKEN) as client:
        result = await client.call_tool("whose", {"timezone": "Asia/Tokyo"})
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert text_of(result) == "nomad/1001/Asia/Tokyo"
    assert set(listed["whose"].input_schema["properties"]) == {"timezone"}


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("whose", {"user": "1002"}),
        ("whose", {"agent": "rival"}),
        ("whose", {"agent": "default"}),
        ("whose", {"user": 1002}),
        ("propose", {"text": "milk", "agent": "rival"}),
        ("peek", {"user": "1002"}),
    ],
)
async def test_an_argument_naming_another_agent_or_user_is_refused(
    toy_url: str, tool: str, arguments: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="meshkit.bindings")
    async with sdk_client(toy_url, DESKTOP_TOKEN) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    text = text_of(result)
    assert text.startswith("forbidden (403): ")
    assert "this client speaks for user 1001 of agent clawdia only" in text
    assert "peeked" not in text
    assert any(
        f"refused {tool} on toy to client claude-desktop" in r.getMessage() for r in caplog.records
    )


async def test_an_undeclared_user_argument_is_bound_too(toy_url: str) -> None:
    async with sdk_client(toy_url, DESKTOP_TOKEN) as client:
        result = await client.call_tool("peek", {})
    assert text_of(result) == "peeked at 1001"


async def test_a_bound_client_is_listed_no_context_argument(toy_url: str) -> None:
    async with sdk_client(toy_url, DESKTOP_TOKEN) as client:
        mine = {tool.name: tool for tool in (await client.list_tools()).tools}
    async with sdk_client(toy_url, ORCHESTRATOR_TOKEN) as client:
        theirs = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(mine["whose"].input_schema["properties"]) == set()
    assert set(mine["propose"].input_schema["properties"]) == {"text"}
    assert mine["propose"].input_schema["required"] == ["text"]
    assert set(theirs["whose"].input_schema["properties"]) == CONTEXT


async def test_the_orchestrator_still_passes_context_arguments_freely(toy_url: str) -> None:
    async with sdk_client(toy_url, ORCHESTRATOR_TOKEN) as client:
        result = await client.call_tool(
            "whose", {"agent": "rival", "user": "1002", "timezone": "Asia/Tokyo"}
        )
    assert text_of(result) == "rival/1002/Asia/Tokyo"


# --- every shipped server with read or producer tools --------------------------------------


def shipped(name: str, data: Path) -> FastMCP[Any]:
    if name == "weather":
        return build_weather(WeatherSettings())
    if name == "calendar":
        return build_calendar(CalendarSettings(data_dir=data, timezone="Europe/Paris"))
    if name == "shopping":
        return build_shopping(ShoppingSettings(data_dir=data, example_agent="rival"))
    if name == "memory":
        return build_memory(MemorySettings(data_dir=data))
    (data / "agents.yaml").write_text("agents:\n  clawdia: {timezone: Europe/Berlin}\n")
    return build_scheduler(SchedulerSettings(data_dir=data, agents=data / "agents.yaml"))


@pytest.fixture(scope="module", params=["weather", "calendar", "shopping", "memory", "scheduler"])
def shipped_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    data = tmp_path_factory.mktemp(request.param)
    app = build_http_app(
        shipped(request.param, data),
        token=SecretStr(ORCHESTRATOR_TOKEN),
        clients=[DESKTOP],
        allowed_hosts=[],
        max_body_bytes=1 << 20,
        zones=ZONES,
    )
    with serving_in_thread(app) as base:
        yield f"{base}/mcp"


async def test_no_tool_of_any_server_takes_an_agent_or_user_from_a_bound_client(
    shipped_url: str,
) -> None:
    async with sdk_client(shipped_url, DESKTOP_TOKEN) as client:
        tools = (await client.list_tools()).tools
        refused = {}
        for tool in tools:
            assert not CONTEXT & set(tool.input_schema.get("properties", {})), tool.name
            declared = set((tool.meta or {}).get("clawmesh", {}).get("context", []))
            for name in declared & {"agent", "user"}:
                result = await client.call_tool(tool.name, {name: "rival"})
                refused[f"{tool.name}({name})"] = result.is_error and text_of(result).startswith(
                    "forbidden (403): "
                )
    assert all(refused.values()), refused


async def test_a_client_bound_to_one_agent_gets_nothing_of_another_agents_shopping(
    tmp_path: Path,
) -> None:
    # The example orders belong to agent "rival"; the client is bound to clawdia.
    app = build_http_app(
        shipped("shopping", tmp_path),
        token=SecretStr(ORCHESTRATOR_TOKEN),
        clients=[DESKTOP],
        allowed_hosts=[],
        max_body_bytes=1 << 20,
    )
    with serving_in_thread(app) as base:
        async with sdk_client(f"{base}/mcp", DESKTOP_TOKEN) as client:
            mine = await client.call_tool("get_recent_orders", {})
            found = await client.call_tool("find_item", {"query": "water"})
            asked = await client.call_tool("get_recent_orders", {"agent": "rival"})
        async with sdk_client(f"{base}/mcp", ORCHESTRATOR_TOKEN) as orchestrator:
            theirs = await orchestrator.call_tool("get_recent_orders", {"agent": "rival"})
    assert mine.structured_content is not None
    assert mine.structured_content["orders"] == []
    assert found.structured_content is not None
    assert found.structured_content["matches"] == []
    assert asked.is_error
    assert theirs.structured_content is not None
    assert theirs.structured_content["orders"], "the orchestrator sees rival's orders"
