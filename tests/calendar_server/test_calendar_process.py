"""`python -m mcp_calendar` as a real process, with the official MCP SDK client: over HTTP
with the bearer token (read, propose, confirm with a minted approval), and over stdio as
Claude Desktop starts it."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import TextContent

from calendar_server.calls import HOSTILE, mint
from fakes.approval_keys import write_public_key
from fakes.clock import Clock
from fakes.serving import ServerProcess, sdk_client

pytestmark = pytest.mark.anyio

TOKEN = "calendar-process-test-token-7"
TOOLS = {
    "list_calendars",
    "get_events",
    "search_events",
    "find_free_time",
    "propose_event_add",
    "propose_event_move",
    "propose_event_cancel",
    "confirm_event_add",
    "confirm_event_move",
    "confirm_event_cancel",
    "confirm_import_events",
    "stage_import",  # the orchestrator's: a calendar file sent in chat
    "get_action",  # a client follows its proposals (clients only: the orchestrator skips it)
}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("calendar-http")


@pytest.fixture(scope="module")
def server(data_dir: Path) -> Iterator[ServerProcess]:
    public_key = write_public_key(data_dir.parent / f"{data_dir.name}-keys")
    server = ServerProcess(
        "mcp_calendar",
        data_dir,
        TOKEN,
        CALENDAR_TIMEZONE="Europe/Berlin",
        MESH_APPROVAL_PUBLIC_KEY_FILE=str(public_key),
    )
    try:
        yield server
    finally:
        log = server.stop()
        assert TOKEN not in log, "the bearer token leaked into the server's log"


async def test_the_sdk_client_adds_an_event_over_http_after_an_approval(
    server: ServerProcess, data_dir: Path
) -> None:
    url = server.ready()
    health = httpx2.get(f"{url}/health")
    refused = httpx2.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})

    async with sdk_client(f"{url}/mcp", TOKEN) as client:
        tools = (await client.list_tools()).tools
        proposed = await client.call_tool(
            "propose_event_add",
            {"title": "Dentist", "start": "2030-05-14T15:00", "agent": "clawdia"},
        )
        assert proposed.structured_content is not None
        payload = proposed.structured_content["payload"]
        unsigned = await client.call_tool("confirm_event_add", {"payload": payload})
        token = mint(Clock(time.time()), "event_add", payload, "act_00000000cafe")
        done = await client.call_tool("confirm_event_add", {"payload": payload, "approval": token})
        day = await client.call_tool("get_events", {"start": "2030-05-14"})

    assert health.status_code == 200
    assert health.json()["checks"] == {"calendar": "ok", "storage": "ok"}
    assert health.json()["server"] == "calendar"
    assert refused.status_code == 401
    assert {tool.name for tool in tools} == TOOLS
    assert proposed.structured_content["summary"] == (
        "Add “Dentist” Tue 14 May 2030, 15:00–16:00 (Europe/Berlin)"
    )
    assert unsigned.is_error
    assert done.structured_content is not None
    assert done.structured_content["replayed"] is False
    assert day.structured_content is not None
    assert [e["start"] for e in day.structured_content["events"]] == ["2030-05-14T15:00:00+02:00"]
    assert (data_dir / "calendar.sqlite3").is_file()


async def test_hostile_rules_are_refused_and_the_server_answers_right_after(
    server: ServerProcess,
) -> None:
    url = server.ready()
    rules = [rule for rule, _ in HOSTILE]

    # A deadline, so a server that hangs on a rule fails the test rather than the run.
    with anyio.fail_after(120):
        async with sdk_client(f"{url}/mcp", TOKEN) as client:
            refused = [
                await client.call_tool(
                    "propose_event_add",
                    {"title": "Flood", "start": "2030-06-01T09:00", "recurrence": rule},
                )
                for rule in rules
            ]
            day = await client.call_tool("get_events", {"start": "2030-06-01"})
        health = httpx2.get(f"{url}/health", timeout=10)

    assert [r.is_error for r in refused] == [True] * len(rules)
    for rule, result in zip(rules, refused, strict=True):
        assert isinstance(result.content[0], TextContent)
        assert result.content[0].text.startswith(f"The recurrence {rule} cannot be used: ")
    assert day.structured_content is not None
    assert day.structured_content["events"] == []
    assert health.status_code == 200


async def test_the_sdk_client_reads_the_calendar_over_stdio(tmp_path: Path) -> None:
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_calendar", "--stdio"],
        env={
            "DATA_DIR": str(tmp_path),
            "CALENDAR_TIMEZONE": "Australia/Sydney",
            "FASTMCP_CHECK_FOR_UPDATES": "off",
        },
    )

    async with Client(parameters) as client:
        calendars = await client.call_tool("list_calendars", {})

    assert calendars.structured_content == {
        "calendars": [{"id": "personal", "name": "Personal", "writable": True}],
        "default": "personal",
        "timezone": "Australia/Sydney",
    }
