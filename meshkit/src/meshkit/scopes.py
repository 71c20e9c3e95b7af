"""Tool classes as scopes: an HTTP caller lists and calls only the classes it holds.

The HTTP guard (``meshkit.http``) proves who the caller is and leaves a ``Caller`` in the
ASGI scope; this fastmcp middleware reads it back from the request being served:

- ``tools/list`` shows the caller only the tools it may call (Claude Desktop never sees a
  confirm or internal tool, so its model is not tempted to try one);
- ``tools/call`` of a tool outside the caller's scopes is a tool error, "forbidden (403)",
  naming the scope it needs, and a log line naming the client (never its token).

A tool without a class tag counts as ``internal``: unknown means the most restricted.
Requests that did not come over HTTP (in-process, stdio) are not filtered: those clients
run as the operator, beside the data, and hold no credential to check; unless the server
was given a ``local`` caller (stdio bound to a person, ``MESH_STDIO_AGENT``/``_USER``), who
then stands for every such request.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

import mcp_types as mt
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.dependencies import get_http_request
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import Tool, ToolResult

from meshkit.credentials import Caller
from meshkit.tool_classes import CLASSES, CONFIRM, INTERNAL, PRODUCER, READ, RELAY

logger = logging.getLogger(__name__)

CALLER_KEY = "clawmesh.caller"  # where the guard leaves the Caller in the ASGI scope
NOBODY = Caller("unidentified", frozenset())
# The local caller of the call being served (set by ScopeGate around it): how a tool learns
# it serves a bound stdio client (current_caller), which no HTTP request can tell it.
_LOCAL: ContextVar[Caller | None] = ContextVar("clawmesh_local_caller", default=None)
_ORDER = (READ, PRODUCER, CONFIRM, INTERNAL, RELAY)


def tool_class(tags: set[str]) -> str:
    found = tags & CLASSES
    return next(iter(found)) if len(found) == 1 else INTERNAL


def in_order(scopes: frozenset[str]) -> list[str]:
    return [scope for scope in _ORDER if scope in scopes]


def http_caller() -> Caller | None:
    """The caller of the HTTP request being served; None when not serving HTTP."""
    try:
        request = get_http_request()
    except RuntimeError:
        return None
    caller = request.scope.get(CALLER_KEY)
    return caller if isinstance(caller, Caller) else NOBODY  # HTTP but unproven: nothing


def request_caller(local: Caller | None) -> Caller | None:
    """The caller of the request being served: over HTTP the one the guard proved, else
    ``local`` (None: an unfiltered in-process or stdio client)."""
    caller = http_caller()
    return local if caller is None else caller


def current_caller() -> Caller | None:
    """Inside a tool: who called it (the HTTP caller, or the bound stdio client); None for an
    unfiltered in-process or stdio client, the operator's."""
    return request_caller(_LOCAL.get())


class ScopeGate(Middleware):
    def __init__(self, server: FastMCP[Any], local: Caller | None = None) -> None:
        self._server = server
        self._local = local

    async def on_list_tools(
        self,
        context: MiddlewareContext[mt.ListToolsRequest],
        call_next: CallNext[mt.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        tools = await call_next(context)
        caller = request_caller(self._local)
        if caller is None:
            return tools
        return [tool for tool in tools if tool_class(tool.tags) in caller.scopes]

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        caller = request_caller(self._local)
        if caller is not None:
            name = context.message.name
            tool = await self._server.get_tool(name)
            needed = INTERNAL if tool is None else tool_class(tool.tags)
            if tool is not None and needed not in caller.scopes:
                logger.warning(
                    "refused %s on %s to client %s: it needs the %s scope (client has: %s)",
                    name,
                    self._server.name,
                    caller.name,
                    needed,
                    ", ".join(in_order(caller.scopes)) or "none",
                )
                raise ToolError(
                    f"forbidden (403): {name} is a {needed} tool and needs the {needed!r} "
                    f"scope; this client ({caller.name}) may call "
                    f"{', '.join(in_order(caller.scopes)) or 'no'} tools only"
                )
        token = _LOCAL.set(self._local)
        try:
            return await call_next(context)
        finally:
            _LOCAL.reset(token)
