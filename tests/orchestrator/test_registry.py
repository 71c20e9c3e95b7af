"""The registry over real transports: in-process, stdio (a server not ours) and HTTP."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel, SecretStr

from fakes.mcp_toys import CALLS, build_toys
from fakes.serving import free_port, serving
from meshkit.http import build_http_app
from meshkit.tool_classes import read
from orchestrator.config.registry import ServerEntry
from orchestrator.mesh.bridge import output_of, output_of_error
from orchestrator.mesh.errors import (
    BrokenContract,
    CallLost,
    CallTimedOut,
    ServerUnavailable,
    ToolCallError,
    ToolFailed,
)
from orchestrator.mesh.registry import Registry, ToolResult
from orchestrator.mesh.tools import ToolInfo

pytestmark = pytest.mark.anyio

TOKEN = "registry-test-token"


def toys_entry(**extra: float) -> dict[str, ServerEntry]:
    return {"toys": ServerEntry(module="fakes.mcp_toys:build_toys", proposes=True, **extra)}


def tool_named(name: str, *, idempotent: bool = True) -> ToolInfo:
    """A tool of the toys server as the registry would know it, for calls while it is down."""
    return ToolInfo("toys", name, f"toys__{name}", "read", name, "", {}, idempotent, idempotent)


def child_executables() -> list[str]:
    """The programs this process's children run, resolved (Linux /proc)."""
    found = []
    for task in Path("/proc/self/task").iterdir():
        for pid in (task / "children").read_text().split():
            found.append(str(Path(f"/proc/{pid}/exe").resolve()))
    return found


def this_interpreter() -> str:
    return str(Path(sys.executable).resolve())


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
    async with Registry(toys_entry()).running() as registry:
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
        "toys__propose_unheard": "producer",
    }
    assert {"toys__bump", "toys__confirm_thing"} <= everything


async def test_a_producer_tool_is_offered_only_when_the_servers_entry_says_it_proposes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    entries = {"toys": ServerEntry(module="fakes.mcp_toys:build_toys")}  # no proposes: true
    with caplog.at_level(logging.WARNING, logger="orchestrator.mesh.connection"):
        async with Registry(entries).running() as registry:
            offered = {t.qualified for t in registry.tools()}
            await registry.reload()  # listed again: the operator is not told twice
            withheld = tool(registry, "propose_thing")
    assert "toys__echo" in offered
    assert not {"toys__propose_thing", "toys__propose_unheard"} & offered
    assert withheld.tool_class == "withheld"  # kept, but no producer: nothing it says is staged
    told = [r.getMessage() for r in caplog.records if "servers.toys" in r.getMessage()]
    assert told == [
        "servers.toys: producer tools propose_thing, propose_unheard not offered to the model: "
        "its registry entry does not allow it to propose changes; set proposes: true on "
        "servers.toys if you trust it to (clawmesh's calendar, shopping, memory and scheduler)"
    ]


async def test_a_server_with_no_change_kinds_is_never_offered_as_a_producer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Its entry says it proposes, but it lists no confirm_<kind> tool: nothing it proposed
    # could ever be done, so nothing is offered (its confirm tool "apply" names no kind).
    module = "fakes.class_server:without_change_kinds"
    entries = {"plain": ServerEntry(module=module, proposes=True)}
    with caplog.at_level(logging.WARNING, logger="orchestrator.mesh.connection"):
        async with Registry(entries).running() as registry:
            offered = {t.qualified for t in registry.tools()}
    assert offered == {"plain__look"}
    assert any(
        "servers.plain: producer tools suggest not offered" in r.getMessage()
        and "no change kind" in r.getMessage()
        for r in caplog.records
    )


async def test_calls_return_results_and_tool_errors_raise_with_the_servers_words() -> None:
    async with Registry(toys_entry()).running() as registry:
        ok = await registry.call(tool(registry, "echo"), {"text": "hi", "times": 2})
        with pytest.raises(ToolFailed) as failed:
            await registry.call(tool(registry, "fail"), {"reason": "the test said so"})
    assert ok.structured == {"echo": "hi hi"}
    assert json.loads(output_of(ok)) == {"echo": "hi hi"}
    assert failed.value.message == "failed because the test said so"
    assert failed.value.answered
    output = output_of_error(failed.value, tool_named("fail"))
    assert json.loads(output) == {"error": "failed because the test said so"}


class Counted(BaseModel):
    count: int


async def test_a_result_off_its_declared_schema_is_judged_by_its_reader() -> None:
    # The orchestrator reads every result itself (call_as into the shared model; the model
    # reads the rest as JSON), so the client does not check it against the declared
    # schema first (the SDK raised a RuntimeError here): a result its reader cannot use
    # fails as a broken contract.
    async with Registry(toys_entry()).running() as registry:
        result = await registry.call(tool(registry, "off_schema"), {})
        with pytest.raises(BrokenContract) as broken:
            await registry.call_as("toys", "off_schema", {}, Counted)
    assert result.structured == {"count": "seven"}
    assert broken.value.detail == "not a Counted"


async def test_a_call_that_hangs_times_out() -> None:
    # 2 s: the timeout also bounds connecting and listing the tools, which must succeed.
    async with Registry(toys_entry(timeout_s=2)).running() as registry:
        with anyio.fail_after(10), pytest.raises(CallTimedOut) as timed_out:
            await registry.call(tool(registry, "slow"), {})
    assert timed_out.value.timeout_s == 2
    assert not timed_out.value.answered
    assert "did not answer within 2 s" in output_of_error(timed_out.value, tool_named("slow"))


async def test_a_third_party_stdio_server_works_and_read_only_tools_are_shown() -> None:
    entries = {"time": ServerEntry(command=["python", "-m", "mcp_server_time"])}
    async with Registry(entries).running() as registry:
        tools = {t.qualified: t for t in registry.tools()}
        assert set(tools) == {"time__get_current_time", "time__convert_time"}
        result = await registry.call(tools["time__get_current_time"], {"timezone": "Asia/Tokyo"})
        children = child_executables()
    assert json.loads(output_of(result))["timezone"] == "Asia/Tokyo"
    # "python" in the registry ran as this interpreter (the one whose venv has the server).
    assert this_interpreter() in children


async def test_a_server_down_at_start_appears_when_it_comes_up() -> None:
    port = free_port()
    entries = {"toys": ServerEntry(url=f"http://127.0.0.1:{port}/mcp", auth="mesh")}
    registry = Registry(
        entries,
        credentials={"toys": TOKEN},
        retry_initial_s=0.05,
        retry_max_s=0.2,
        connect_wait_s=0.3,
    )
    async with registry.running():
        assert registry.tools() == []
        assert [s.up for s in registry.status()] == [False]
        with pytest.raises(ServerUnavailable) as down:
            await registry.call(tool_named("echo"), {"text": "x"})
        assert "unavailable right now" in output_of_error(down.value, tool_named("echo"))
        async with toys_over_http(port):
            assert await registry.wait_up("toys", 10)
            assert "toys__echo" in {t.qualified for t in registry.tools()}
            result = await registry.call(tool(registry, "echo"), {"text": "up"})
    assert result.structured == {"echo": "up"}


async def test_a_wrong_token_keeps_the_server_down() -> None:
    port = free_port()
    entries = {"toys": ServerEntry(url=f"http://127.0.0.1:{port}/mcp", auth="mesh")}
    async with (
        toys_over_http(port),
        Registry(
            # running() returns once the first attempt failed: the deadline is for a hang.
            entries,
            credentials={"toys": "wrong"},
            connect_wait_s=30,
            retry_initial_s=0.05,
        ).running() as registry,
    ):
        assert registry.tools() == []
        status = registry.status()[0]
    assert not status.up
    assert status.error == "HTTP error (check the token and the server's log)"


async def restart_during_call(tool_name: str) -> tuple[ToolResult | ToolCallError, int]:
    """Stop the HTTP server, call, bring it back while the call waits; return the outcome."""
    port = free_port()
    entries = {"toys": ServerEntry(url=f"http://127.0.0.1:{port}/mcp", auth="mesh")}
    registry = Registry(
        entries,
        credentials={"toys": TOKEN},
        retry_initial_s=0.05,
        retry_max_s=0.1,
        connect_wait_s=0.2,
    )
    async with registry.running():
        async with toys_over_http(port):
            assert await registry.wait_up("toys", 10)
            info = tool(registry, tool_name)
        before = CALLS.get(tool_name, 0)
        results: list[ToolResult | ToolCallError] = []
        async with anyio.create_task_group() as tasks:

            async def call() -> None:
                try:
                    arguments = {"text": "again"} if tool_name == "echo" else {}
                    results.append(await registry.call(info, arguments))
                except ToolCallError as error:
                    results.append(error)

            tasks.start_soon(call)
            await wait_until(lambda: not registry.status()[0].up)
            async with toys_over_http(port):
                await wait_until(lambda: bool(results))
        return results[0], CALLS.get(tool_name, 0) - before


async def test_a_read_only_call_lost_in_transport_is_retried_once_after_reconnecting() -> None:
    result, calls = await restart_during_call("echo")
    assert isinstance(result, ToolResult), result
    assert result.structured == {"echo": "again"}
    assert calls == 1


async def test_a_non_idempotent_call_lost_in_transport_is_not_retried() -> None:
    lost, calls = await restart_during_call("bump")
    assert isinstance(lost, CallLost), lost
    assert "was not retried" in output_of_error(lost, tool_named("bump", idempotent=False))
    assert calls == 0


async def test_reload_rediscovers_tools_a_server_added_since_it_connected() -> None:
    port = free_port()
    server = build_toys()
    app = build_http_app(server, token=SecretStr(TOKEN), allowed_hosts=[], max_body_bytes=1 << 20)
    entries = {"toys": ServerEntry(url=f"http://127.0.0.1:{port}/mcp", auth="mesh")}
    async with (
        serving(app, port=port),
        Registry(entries, credentials={"toys": TOKEN}).running() as registry,
    ):
        before = {t.qualified for t in registry.tools()}
        assert "toys__late" not in before

        @server.tool(**read(title="Late"))
        async def late() -> str:
            """Added after the registry connected."""
            return "here"

        assert {t.qualified for t in registry.tools()} == before  # not seen until a reload
        await registry.reload()
        assert {t.qualified for t in registry.tools()} == before | {"toys__late"}
        assert output_of(await registry.call(tool(registry, "late"), {})) == "here"
