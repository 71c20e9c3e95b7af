"""Tool input schemas for the SDK's ``Mcp-Param-*`` header check, listed once at startup.

On the 2026-07-28 HTTP path the MCP SDK checks every ``tools/call`` that carries
arguments against the called tool's input schema (a header a tool declares with
``x-mcp-header`` must equal the argument it mirrors). Unless the low-level server
has a ``get_tool_input_schema`` lookup, the SDK finds that schema by running the
whole ``tools/list`` handler (fastmcp's middleware, providers, serialization) on
every call, which costs about as much as the call itself.

``ToolSchemaSnapshot`` sits in front of the HTTP app: once the app has started,
it lists the tools as a client would see them and installs that SDK lookup,
answered from memory. A listing that fails stops startup.

The snapshot is exact while the tool set is fixed after startup, as in every
clawmesh server (``build_server`` registers all tools). A tool added or enabled
later is served without the header check, as the SDK serves a call whose tool
its listing misses; a tool removed later is still refused by dispatch.

It reaches fastmcp's low-level server through the private ``_mcp_server`` (fastmcp 4.1
has no public accessor); tests/meshkit/test_tool_schemas.py fails if that moves or the SDK
stops asking. Unnecessary once fastmcp installs ``get_tool_input_schema`` itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastmcp import FastMCP
from fastmcp.utilities.versions import dedupe_with_versions
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class ToolSchemaSnapshot:
    """ASGI wrapper that answers the SDK's tool-schema lookups from a startup snapshot."""

    def __init__(self, app: ASGIApp, server: FastMCP[Any]) -> None:
        self._app = app
        self._server = server
        self._schemas: dict[str, dict[str, Any]] = {}

    def lookup(self, name: str) -> Mapping[str, Any] | None:
        return self._schemas.get(name)

    async def refresh(self) -> None:
        # The same listing tools/list answers (middleware, visibility, highest version).
        tools = dedupe_with_versions(list(await self._server.list_tools()), lambda t: t.name)
        self._schemas = {tool.name: tool.to_mcp_tool(name=tool.name).input_schema for tool in tools}
        # The SDK's documented hook; fastmcp exposes its low-level server only as _mcp_server.
        self._server._mcp_server.get_tool_input_schema = self.lookup

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self._app(scope, receive, send)
            return

        async def send_after_snapshot(message: Message) -> None:
            # Before startup completes, so no request is served without the snapshot;
            # an exception here makes Starlette report lifespan.startup.failed.
            if message["type"] == "lifespan.startup.complete":
                await self.refresh()
            await send(message)

        await self._app(scope, receive, send_after_snapshot)
