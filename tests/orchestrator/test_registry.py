"""The registry over real transports: in-process, stdio (a server not ours) and HTTP."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from pydantic import SecretStr

from fakes.mcp_toys import CALLS, build_toys
from fakes.serving import free_port, serving
from meshkit import build_http_app
from orchestrator.config import ServerEntry
from orchestrator.connection import ToolInfo
from orchestrator.registry import Registry

pytestmark = pytest.mark.anyio

TOKEN = "registry-test-token"


def toys_entry(**extra: float) -> dict[str, ServerEntry]:
    return {"toys": ServerEntry(module="fakes.mcp_toys:build_toys", **extra)}


def tool(registry: Registry, name: str) -> ToolInfo:
    found = registry.find("toys", name)
    assert found is not None, name
    return found


@asynccontextmanager
async def toys_over_http(port: int) -> AsyncIterator[str]:
    app = build_http_app(
        build_toys(), token=SecretStr(TOKEN), allowed_hosts=[], max_body_bytes=1 << 20
    )
    async with serving(app, port=port) as base_url:
        yield f"{base_url}/mcp"


async def wait_until(predicate: object, timeout_s: float = 10) -> None:
    assert callable(predicate)
    with anyio.fail_after(timeout_s):
        while not predicate():  # noqa: ASYNC110 (state of another component, no event to wait on)
            await anyio.sleep(0.02)


async def test_classes_and_names_come_from_the_server_tags() -> None:
    async with Registry(toys_entry(), token=None).running() as registry:
        llm_tools = {t.qualified: t.tool_class for t in registry.tools()}
        everything = {
            t.qualified
            for t in registry.tools(classes=frozenset({"read", "producer", "confirm", "internal"}))
        }
    assert llm_tools == {
        "toys__echo": "read",
        "toys__slow": "read",
        "toys__fail": "read",
        "toys__meet": "read",
        "toys__propose_thing": "producer",
    }
    assert {"toys__bump", "toys__confirm_thing"} <= everything


async def test_calls_return_outputs_and_tool_errors_are_marked() -> None:
    async with Registry(toys_entry(), token=None).running() as registry:
        ok = await registry.call(tool(registry, "echo"), {"text": "hi", "times": 2})
        failed = await registry.call(tool(registry, "fail"), {"reason": "the test said so"})
    assert ok.ok
    assert json.loads(ok.output) == {"echo": "hi hi"}
    assert not failed.ok
    assert json.loads(failed.output) == {"error": "failed because the test said so"}


async def test_a_call_that_hangs_times_out_as_an_output() -> None:
    async with Registry(toys_entry(timeout_s=0.3), token=None).running() as registry:
        with anyio.fail_after(5):
            outcome = await registry.call(tool(registry, "slow"), {})
    assert not outcome.ok
    assert "did not answer within 0.3 s" in outcome.output


async def test_a_third_party_stdio_server_works_and_read_only_tools_are_shown() -> None:
    entries = {"time": ServerEntry(command=["python", "-m", "mcp_server_time"])}
    async with Registry(entries, token=None).running() as registry:
        tools = {t.qualified: t for t in registry.tools()}
        assert set(tools) == {"time__get_current_time", "time__convert_time"}
        outcome = await registry.call(tools["time__get_current_time"], {"timezone": "Asia/Tokyo"})
    assert outcome.ok
    assert json.loads(outcome.output)["timezone"] == "Asia/Tokyo"
    assert sys.executable  # the registry ran "python" as this interpreter


async def test_a_server_down_at_start_appears_when_it_comes_up() -> None:
    port = free_port()
    entries = {"toys": ServerEntry(url=f"http://127.0.0.1:{port}/mcp")}
    registry = Registry(
        entries, token=TOKEN, retry_initial_s=0.05, retry_max_s=0.2, connect_wait_s=0.3
    )
    async with registry.running():
        assert registry.tools() == []
        assert [s.up for s in registry.status()] == [False]
        down = await registry.call(
            ToolInfo("toys", "echo", "toys__echo", "read", "Echo", "", {}, True, True),
            {"text": "x"},
        )
        assert not down.ok
        assert "unavailable right now" in down.output
        async with toys_over_http(port):
            assert await registry.wait_up("toys", 10)
            assert "toys__echo" in {t.qualified for t in registry.tools()}
            outcome = await registry.call(tool(registry, "echo"), {"text": "up"})
    assert json.loads(outcome.output) == {"echo": "up"}


async def test_a_wrong_token_keeps_the_server_down() -> None:
    port = free_port()
    entries = {"toys": ServerEntry(url=f"http://127.0.0.1:{port}/mcp")}
    async with (
        toys_over_http(port),
        Registry(
            entries, token="wrong", connect_wait_s=1, retry_initial_s=0.05
        ).running() as registry,
    ):
        assert registry.tools() == []
        status = registry.status()[0]
    assert not status.up
    assert status.error is not None
    assert "wrong" not in status.error


async def restart_during_call(tool_name: str) -> tuple[bool, str, int]:
    """Stop the HTTP server, call, bring it back while the call waits; return the outcome."""
    port = free_port()
    entries = {"toys": ServerEntry(url=f"http://127.0.0.1:{port}/mcp")}
    registry = Registry(
        entries, token=TOKEN, retry_initial_s=0.05, retry_max_s=0.1, connect_wait_s=0.2
    )
    async with registry.running():
        async with toys_over_http(port):
            assert await registry.wait_up("toys", 10)
            info = tool(registry, tool_name)
        before = CALLS.get(tool_name, 0)
        results = []
        async with anyio.create_task_group() as tasks:

            async def call() -> None:
                results.append(
                    await registry.call(info, {"text": "again"} if tool_name == "echo" else {})
                )

            tasks.start_soon(call)
            await wait_until(lambda: not registry.status()[0].up)
            async with toys_over_http(port):
                await wait_until(lambda: bool(results))
        return results[0].ok, results[0].output, CALLS.get(tool_name, 0) - before


async def test_a_read_only_call_lost_in_transport_is_retried_once_after_reconnecting() -> None:
    ok, output, calls = await restart_during_call("echo")
    assert ok, output
    assert json.loads(output) == {"echo": "again"}
    assert calls == 1


async def test_a_non_idempotent_call_lost_in_transport_is_not_retried() -> None:
    ok, output, calls = await restart_during_call("bump")
    assert not ok
    assert "was not retried" in output
    assert calls == 0


async def test_reload_rediscovers_tools() -> None:
    async with Registry(toys_entry(), token=None).running() as registry:
        before = {t.qualified for t in registry.tools()}
        await registry.reload()
        assert {t.qualified for t in registry.tools()} == before
