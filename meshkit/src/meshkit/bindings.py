"""A client bound to a person speaks for that person only, on every tool of every server.

A read or producer tool names its context arguments (``agent``, ``user``, ``timezone``,
``meshkit.tool_classes``): for the orchestrator they are whoever its turn is for. A client of
``MESH_CLIENTS`` is bound to one agent and one user (``meshkit.credentials.Binding``), and this
fastmcp middleware makes the binding the only answer:

- ``tools/list`` shows such a client its tools without the arguments it decides (``timezone``
  stays listed when the server does not know the agent's zone): its model has nothing to guess,
  and nothing to try;
- ``tools/call`` fills ``agent`` and ``user`` in from the binding; a value naming anyone else
  (another agent, another user, ``default``) is a tool error, "forbidden (403)", and a log line
  naming the client: refused, never silently replaced, so a script learns its mistake;
- ``timezone`` names no one and selects no data (it reads and writes times only): it is the
  bound agent's zone when the server can read the fleet file (``zones``), else the client's.

Every id a client may pass (a note's ``mem_…``, a reminder's) is looked up within the agent and
user the tool was given, so binding these arguments binds the ids too. Any parameter named
``agent`` or ``user`` counts, declared or not: a tool that forgot to declare one is bound all
the same. The caller comes from ``meshkit.scopes.request_caller``: the orchestrator and
unfiltered local clients have no binding and pass every argument as before.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as mt
from fastmcp import FastMCP
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import Tool, ToolResult

from meshkit.credentials import Binding, Caller
from meshkit.errors import ModelError
from meshkit.scopes import ScopeGate, request_caller

logger = logging.getLogger(__name__)

IDENTITY = ("agent", "user")  # arguments that name whose data a tool reads or proposes on
ZONE = "timezone"


def context_arguments(tool: Tool) -> set[str]:
    """The arguments of ``tool`` a binding decides: its declared context, and any parameter
    named ``agent`` or ``user``."""
    clawmesh = (tool.meta or {}).get("clawmesh")
    declared = clawmesh.get("context", []) if isinstance(clawmesh, dict) else []
    params = set((tool.parameters or {}).get("properties", {}))
    return (set(declared) & params) | (set(IDENTITY) & params)


def bound_arguments(
    arguments: Mapping[str, Any], names: set[str], binding: Binding, zone: str | None
) -> dict[str, Any]:
    """``arguments`` with the context ``names`` taken from the binding; ModelError when one
    given names another agent or user."""
    given = dict(arguments)
    for name, own in (("agent", binding.agent), ("user", binding.user)):
        if name not in names:
            continue
        value = given.get(name)
        if value not in (None, "") and str(value) != own:
            raise ModelError(
                f"forbidden (403): {name} {str(value)[:64]!r} is not yours to pass; this client "
                f"speaks for user {binding.user} of agent {binding.agent} only. Leave {name} "
                "out: it is filled in."
            )
        given[name] = own
    if ZONE in names and zone is not None:
        given[ZONE] = zone
    return given


def without(tool: Tool, names: set[str]) -> Tool:
    """``tool`` as listed without the arguments ``names``."""
    schema = dict(tool.parameters or {})
    schema["properties"] = {
        key: value for key, value in schema.get("properties", {}).items() if key not in names
    }
    if "required" in schema:
        schema["required"] = [key for key in schema["required"] if key not in names]
    return tool.model_copy(update={"parameters": schema})


class ContextBinding(Middleware):
    def __init__(
        self,
        server: FastMCP[Any],
        *,
        zones: Mapping[str, str] | None = None,
        local: Caller | None = None,
    ) -> None:
        """``zones``: each agent's IANA zone, when the server can know it; ``local``: the
        caller of requests that do not come over HTTP (see ``meshkit.scopes``)."""
        self._server = server
        self._zones = dict(zones or {})
        self._local = local

    def _binding(self) -> tuple[Caller, Binding] | None:
        caller = request_caller(self._local)
        if caller is None or caller.binding is None:
            return None
        return caller, caller.binding

    async def on_list_tools(
        self,
        context: MiddlewareContext[mt.ListToolsRequest],
        call_next: CallNext[mt.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        tools = await call_next(context)
        bound = self._binding()
        if bound is None:
            return tools
        decided = set(IDENTITY) | ({ZONE} if bound[1].agent in self._zones else set())
        return [without(tool, context_arguments(tool) & decided) for tool in tools]

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        bound = self._binding()
        tool = await self._server.get_tool(context.message.name) if bound else None
        if bound is None or tool is None:
            return await call_next(context)
        caller, binding = bound
        try:
            arguments = bound_arguments(
                context.message.arguments or {},
                context_arguments(tool),
                binding,
                self._zones.get(binding.agent),
            )
        except ModelError:
            logger.warning(
                "refused %s on %s to client %s: an argument named another agent or user "
                "(the client speaks for %s)",
                tool.name,
                self._server.name,
                caller.name,
                binding,
            )
            raise
        message = context.message.model_copy(update={"arguments": arguments})
        return await call_next(context.copy(message=message))


def bind_local_client(
    server: FastMCP[Any], caller: Caller, *, zones: Mapping[str, str] | None = None
) -> None:
    """Serve every request that does not come over HTTP (stdio) as ``caller``: its tool
    classes only, its binding as the context arguments."""
    server.add_middleware(ScopeGate(server, local=caller))
    server.add_middleware(ContextBinding(server, zones=zones, local=caller))
