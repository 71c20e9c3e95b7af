"""The gateway: one MCP server that somebody else wrote, served as a capability of the mesh.

At start it starts the server behind it (``GATEWAY_COMMAND``, over stdio), lists its tools
once and serves each by its class (``mcp_gateway.upstream``): a read as it is, through
fastmcp's proxy; a change as a producer of the same name, whose kind the consent kernel
declares (``confirm_<kind>``: pending-actions' approval over exactly this call, checked here,
then the call made once, ``mcp_gateway.changes``). Nothing else in the mesh can reach the
server behind it: in a container it is a child of this process, with no port of its own.

Its tools take the schemas the server behind it wrote, which meshkit cannot bound argument
by argument: the gateway bounds a call's arguments as a whole (``GATEWAY_MAX_ARGUMENTS_BYTES``,
and over HTTP the body bound), and adds the tools after the start's bound check.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any

from fastmcp import FastMCP
from fastmcp.client.transports import ClientTransport, StdioTransport

from mcp_gateway.changes import ProposeCall, change_kind
from mcp_gateway.connection import ReadTool, Upstream
from mcp_gateway.settings import GatewaySettings
from mcp_gateway.store import CallRecords
from mcp_gateway.upstream import CHANGE, READ, Classified, classify
from meshkit.consent import Consent
from meshkit.server import create_server
from meshkit.settings import load_settings

logger = logging.getLogger(__name__)


def upstream_transport(settings: GatewaySettings) -> ClientTransport:
    """The server behind the gateway, as a child process with its own variables only."""
    program, *arguments = settings.command
    if settings.workdir is not None:
        settings.workdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    cwd = str(settings.workdir) if settings.workdir is not None else None
    return StdioTransport(program, arguments, env=settings.child_env() or None, cwd=cwd)


def build_server(
    settings: GatewaySettings | None = None,
    *,
    upstream: ClientTransport | None = None,
    clock: Callable[[], float] = time.time,
) -> FastMCP[Any]:
    """The gateway for ``settings.name``; ``upstream``: how to reach the server behind it
    (default: ``settings.command`` over stdio)."""
    settings = settings or load_settings(GatewaySettings)
    records = CallRecords(settings.db_path, max_bytes=settings.max_db_bytes)
    server = Upstream(upstream or upstream_transport(settings))

    @asynccontextmanager
    async def lifespan(mcp: FastMCP[Any]) -> AsyncIterator[None]:
        async with server:
            listed = await (await server.client()).list_tools()
            serve_tools(mcp, classify(listed), consent, server, records, settings, clock)
            yield

    mcp = create_server(
        settings.name,
        version=version("mcp-gateway"),
        instructions=(
            f"The {settings.name} capability. Its tools that change things are proposals: the "
            "user confirms each with a tap before it is made."
        ),
        lifespan=lifespan,
        checks={"upstream": server.check},
        stores=[records],
    )
    consent = Consent.from_settings(mcp, settings.name, settings, clock=clock)
    return mcp


def serve_tools(  # noqa: PLR0917 (what the tools are made of)
    mcp: FastMCP[Any],
    tools: list[Classified],
    consent: Consent,
    server: Upstream,
    records: CallRecords,
    settings: GatewaySettings,
    clock: Callable[[], float],
) -> None:
    """Serve the listing's tools by class; the hidden ones are logged with why."""
    for classified in tools:
        tool = classified.tool
        if classified.tool_class == READ:
            mcp.add_tool(ReadTool.of(server, tool))
        elif classified.tool_class == CHANGE:
            consent.declare(
                change_kind(
                    classified, server, records, timeout_s=settings.call_timeout_s, clock=clock
                )
            )
            mcp.add_tool(ProposeCall.of(classified, consent, settings.max_arguments_bytes))
        else:
            logger.warning("%s: tool %r not offered: %s", settings.name, tool.name, classified.why)
