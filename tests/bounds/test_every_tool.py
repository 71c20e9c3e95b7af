"""Every tool of every server, through the in-memory client: each argument has a bound, and
hostile arguments get a worded error, never a masked exception (a logged traceback)."""

from __future__ import annotations

import logging
import random
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from mcp_types import TextContent

from bounds.every_server import NAMES
from bounds.fuzz import calls
from meshkit.bounds import unbounded

pytestmark = pytest.mark.anyio

CALLS_PER_TOOL = 5
SEED = 22


async def test_every_server_is_built_and_every_argument_of_every_tool_has_a_bound(
    servers: dict[str, FastMCP[Any]],
) -> None:
    assert sorted(servers) == sorted(NAMES)
    seen = 0
    for name, server in servers.items():
        async with Client(server) as client:  # starting it checks the bounds as well
            for tool in await client.list_tools():
                assert unbounded(tool.input_schema) == [], f"{name}.{tool.name}"
                seen += 1
    assert seen > 60


async def test_hostile_arguments_to_every_tool_get_worded_errors_never_a_masked_exception(
    servers: dict[str, FastMCP[Any]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    rng = random.Random(SEED)
    made, masked = 0, []
    for name, server in servers.items():
        async with Client(server) as client:
            for tool in await client.list_tools():
                for arguments in calls(tool.input_schema, rng, CALLS_PER_TOOL):
                    caplog.clear()
                    result = await client.call_tool(tool.name, arguments, raise_on_error=False)
                    made += 1
                    said = _text(result.content)
                    logged = [r.getMessage() for r in caplog.records if r.exc_info]
                    if said == f"Error calling tool {tool.name!r}" or logged:
                        masked.append(f"{name}.{tool.name}({_short(arguments)}): {logged}")
    assert made >= 300
    assert masked == []


def _text(content: list[Any]) -> str:
    return content[0].text if content and isinstance(content[0], TextContent) else ""


def _short(arguments: dict[str, Any]) -> str:
    return ", ".join(f"{key}={value!r:.40}" for key, value in arguments.items())
