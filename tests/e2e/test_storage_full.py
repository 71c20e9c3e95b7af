"""A full disk at run time, through each database server's MCP interface (in-memory client):
the tool error says so in words, the log says it once a minute, and the next write that
fits works again. The database is capped with DATA_MAX_MB a few pages above its empty size,
so the real SQLite engine answers SQLITE_FULL exactly as on a full disk."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastmcp import Client, FastMCP
from fastmcp.client.client import CallToolResult

from fakes.approval_keys import PUBLIC_ENV, SIGNING_ENV, signer, write_public_key, write_signing_key
from fakes.clock import Clock
from fakes.tool_calls import call, text_of
from mcp_calendar.server import build_server as build_calendar
from mcp_calendar.settings import CalendarSettings
from mcp_memory.server import build_server as build_memory
from mcp_memory.settings import MemorySettings
from mcp_pending_actions.server import build_server as build_pending
from mcp_pending_actions.settings import PendingSettings
from mcp_shopping.server import build_server as build_shopping
from mcp_shopping.settings import ShoppingSettings

pytestmark = pytest.mark.anyio

PAGE = 4096
SPARE_PAGES = 3
Write = Callable[[Client[Any], Clock, int], Awaitable[CallToolResult]]


async def remember(client: Client[Any], _clock: Clock, n: int) -> CallToolResult:
    item = {"type": "message", "role": "user", "content": f"{n}: " + "words " * 300}
    arguments = {"agent": "clawdia", "chat_id": "42", "items": [item]}
    return await client.call_tool("append_items", arguments, raise_on_error=False)


async def record_usage(client: Client[Any], _clock: Clock, n: int) -> CallToolResult:
    record = {
        "id": f"use_{n:012x}", "at": 1_800_000_000.0, "agent": "clawdia", "user": "42",
        "chat_id": "42", "purpose": "turn", "model": "m" * 200, "turn_id": f"{n}" * 50,
        "input_tokens": 1000, "output_tokens": 200, "cost": 0.01,
    }  # fmt: skip
    return await client.call_tool("record_usage", {"records": [record]}, raise_on_error=False)


async def stage(client: Client[Any], _clock: Clock, n: int) -> CallToolResult:
    proposal = {"kind": "add_item", "summary": f"Add item {n}", "payload": {"note": "n" * 1500}}
    arguments = {"agent": "clawdia", "chat_id": "42", "server": "shopping", "proposal": proposal}
    return await client.call_tool("stage", arguments, raise_on_error=False)


async def add_to_list(client: Client[Any], clock: Clock, n: int) -> CallToolResult:
    proposal = await call(
        client, "propose_add_to_list", name=f"item {n}", note="n" * 300, agent="clawdia"
    )
    token = signer(clock).mint(
        f"act_{n:012x}", "shopping", proposal["kind"], proposal["payload"], agent="clawdia"
    )
    arguments = {"payload": proposal["payload"], "approval": token}
    return await client.call_tool("confirm_add_to_list", arguments, raise_on_error=False)


async def add_event(client: Client[Any], clock: Clock, n: int) -> CallToolResult:
    proposal = await call(
        client,
        "propose_event_add",
        title=f"Event {n}",
        start=f"2030-01-{n % 28 + 1:02d}T{n % 12 + 8:02d}:00",
        description="d" * 1500,
        agent="clawdia",
    )
    token = signer(clock).mint(
        f"act_{n:012x}", "calendar", proposal["kind"], proposal["payload"], agent="clawdia"
    )
    arguments = {"payload": proposal["payload"], "approval": token}
    return await client.call_tool("confirm_event_add", arguments, raise_on_error=False)


def calendar(data_dir: Path, cap: float | None, clock: Clock) -> FastMCP[Any]:
    settings = CalendarSettings(data_dir=data_dir, max_db_mb=cap, timezone="UTC")
    return build_calendar(settings, clock=clock)


def memory(data_dir: Path, cap: float | None, clock: Clock) -> FastMCP[Any]:
    return build_memory(MemorySettings(data_dir=data_dir, max_db_mb=cap), clock=clock)


def pending(data_dir: Path, cap: float | None, clock: Clock) -> FastMCP[Any]:
    return build_pending(PendingSettings(data_dir=data_dir, max_db_mb=cap), clock=clock)


def shopping(data_dir: Path, cap: float | None, clock: Clock) -> FastMCP[Any]:
    settings = ShoppingSettings(data_dir=data_dir, max_db_mb=cap, example_agent=None)
    return build_shopping(settings, clock=clock)


SERVERS = {
    "calendar": (calendar, "calendar.sqlite3", add_event),
    "memory": (memory, "memory.sqlite3", remember),
    "memory-usage": (memory, "usage.sqlite3", record_usage),
    "pending-actions": (pending, "pending_actions.sqlite3", stage),
    "shopping": (shopping, "shopping.sqlite3", add_to_list),
}


@pytest.fixture(autouse=True)
def approval_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The tests' key pair: pending-actions signs with it, shopping checks with it."""
    monkeypatch.setenv(SIGNING_ENV, str(write_signing_key(tmp_path / "keys")))
    monkeypatch.setenv(PUBLIC_ENV, str(write_public_key(tmp_path / "keys")))


def nearly_full(
    build: Callable[[Path, float | None, Clock], FastMCP[Any]],
    data_dir: Path,
    db_file: str,
    clock: Clock,
) -> FastMCP[Any]:
    """The server with DATA_MAX_MB a few pages above the size of its empty database."""
    build(data_dir, None, clock)  # creates the empty database
    with sqlite3.connect(data_dir / db_file) as db:
        (pages,) = db.execute("PRAGMA page_count").fetchone()
    return build(data_dir, (pages + SPARE_PAGES) * PAGE / 1e6, clock)


async def fill(client: Client[Any], write: Write, clock: Clock) -> tuple[int, str]:
    """Writes until one fails: how many went through, and the failure's text."""
    for n in range(1, 300):
        result = await write(client, clock, n)
        if result.is_error:
            return n - 1, text_of(result)
    raise AssertionError("the capped database never filled up")


@pytest.mark.parametrize("name", SERVERS)
async def test_a_full_disk_is_a_tool_error_in_words_the_model_can_pass_on(
    name: str, tmp_path: Path
) -> None:
    build, db_file, write = SERVERS[name]
    clock = Clock()
    async with Client(nearly_full(build, tmp_path, db_file, clock)) as client:
        written, error = await fill(client, write, clock)

    assert written >= 1
    assert error.startswith(
        "The server's storage failed (the disk is full, or the database reached DATA_MAX_MB ("
    )
    assert error.endswith(
        " MB)), so this request was not completed and nothing was changed. Tell the user it "
        "did not work and to try again later; the operator has been told."
    )


async def test_the_calendar_fails_health_on_a_full_disk_and_still_answers_reads(
    tmp_path: Path,
) -> None:
    clock = Clock()
    server = nearly_full(calendar, tmp_path, "calendar.sqlite3", clock)
    transport = httpx2.ASGITransport(app=server.http_app())
    async with (
        Client(server) as client,
        httpx2.AsyncClient(transport=transport, base_url="http://calendar") as http,
    ):
        before = (await http.get("/health")).json()["checks"]
        written, _ = await fill(client, add_event, clock)
        full = await http.get("/health")
        reads = await client.call_tool("get_events", {"start": "2030-01-02"})

    assert written >= 1
    assert before == {"calendar": "ok", "storage": "ok"}
    assert full.status_code == 503
    assert full.json()["checks"]["storage"].startswith(
        "fail: the disk is full, or the database reached DATA_MAX_MB ("
    )
    assert not reads.is_error  # reads go on


async def test_a_full_disk_is_logged_once_a_minute_however_often_it_is_called(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    build, db_file, write = SERVERS["memory"]
    clock = Clock()
    caplog.set_level(logging.INFO)
    async with Client(nearly_full(build, tmp_path, db_file, clock)) as client:
        written, _ = await fill(client, write, clock)
        for _ in range(29):  # a minute of calls, one every two seconds, each refused
            clock.advance(2)
            assert (await write(client, clock, 1000)).is_error
        first_minute = [r for r in caplog.records if r.name == "meshkit.storage"]
        clock.advance(2)
        assert (await write(client, clock, 1001)).is_error
        reports = [r for r in caplog.records if r.name == "meshkit.storage"]
        # What an operator sees (configure_logging shows fastmcp's records from WARNING up;
        # its INFO "Error calling tool" is the model's business, see meshkit.errors).
        shown = [r for r in caplog.records if r.levelno >= logging.WARNING]

    assert written >= 1
    assert len(first_minute) == 1
    assert len(reports) == 2
    assert "(29 more since the last report)" in reports[1].getMessage()
    assert shown == reports
    assert all(r.exc_info is None for r in reports)  # one line each, no traceback
