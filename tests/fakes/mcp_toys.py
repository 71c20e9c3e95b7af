"""A small MCP server with one tool of each class and behaviour, for orchestrator tests.

``build_toys()`` is a module factory (``fakes.mcp_toys:build_toys``) so the
registry can load it in-process, and ``toys_app()`` serves it over HTTP.
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools import ToolResult
from pydantic import Field

from meshkit.server import create_server
from meshkit.tool_classes import confirm, internal, producer, read

CALLS: dict[str, int] = {}  # per-process call counts, read by tests after a run
# Every argument has a bound, as create_server requires (meshkit.bounds).
Words = Annotated[str, Field(max_length=1000)]
Count = Annotated[int, Field(le=1000)]


def build_toys() -> FastMCP[Any]:
    server = create_server("toys", version="1.0", instructions="Toys for tests.")

    @server.tool(**read(title="Echo"))
    async def echo(
        text: Annotated[str, Field(max_length=1000, description="what to repeat")],
        times: Count = 1,
    ) -> dict[str, Any]:
        """Repeat a text."""
        CALLS["echo"] = CALLS.get("echo", 0) + 1
        return {"echo": " ".join([text] * times)}

    meeting = {"arrived": 0}
    everyone_here = anyio.Event()

    @server.tool(**read(title="Meet"))
    async def meet(n: Count) -> str:
        """Wait until n calls of this tool run at the same time (10 s at most)."""
        meeting["arrived"] += 1
        if meeting["arrived"] >= n:
            everyone_here.set()
        with anyio.fail_after(10):  # only a run that never meets waits this long
            await everyone_here.wait()
        return f"met {n}"

    @server.tool(**read(title="Slow"))
    async def slow() -> str:
        """Never answers."""
        await anyio.Event().wait()
        return "unreachable"

    @server.tool(**read(title="Fail"))
    async def fail(reason: Words) -> str:
        """Always fails with the reason."""
        raise ToolError(f"failed because {reason}")

    @server.tool(**internal(title="Bump"))
    async def bump() -> int:
        """Not idempotent: counts calls."""
        CALLS["bump"] = CALLS.get("bump", 0) + 1
        return CALLS["bump"]

    @server.tool(
        **internal(title="Off schema"),
        output_schema={
            "type": "object",
            "properties": {"count": {"type": "integer"}},
            "required": ["count"],
        },
    )
    async def off_schema() -> ToolResult:
        """Answers outside the output schema it declares (a server with a bug)."""
        return ToolResult(structured_content={"count": "seven"})

    @server.tool(**producer(title="Propose"))
    async def propose_thing(thing: Words) -> dict[str, str]:
        """Propose a thing."""
        return {"kind": "thing", "summary": f"Add {thing}"}

    @server.tool(**producer(title="Propose what it cannot do"))
    async def propose_unheard(thing: Words) -> dict[str, Any]:
        """Propose a change of a kind this server has no confirm tool for (a server with a
        bug, or broken into)."""
        return {"kind": "unheard", "summary": f"Unheard {thing}", "payload": {"thing": thing}}

    @server.tool(**confirm(title="Confirm"))
    async def confirm_thing(thing: Words) -> str:
        """Do the thing (needs a human tap)."""
        CALLS["confirm_thing"] = CALLS.get("confirm_thing", 0) + 1
        return f"did {thing}"

    return server
