"""The role servers, real, with every tool call they receive recorded: module factories for
the registry's ``module:`` (``fakes.counted:memory`` and so on).

Each factory builds the real server (memory, pending-actions and the scheduler on the
movable ``CLOCK`` of ``fakes.clocked``; telegram-io from the environment) and adds a fastmcp
middleware that records each ``tools/call`` in ``CALLS`` as the server receives it: what a
test counts is what crossed the MCP boundary, nothing patched inside.

``fakes.counted:shopping`` is the shopping server, its calls not counted (the model's tools
and the changes they propose are not the mesh's own calls) but held while a test holds the
tool (``CALLS.hold("confirm_add_to_list")``): a slow change, without waiting for real time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as mt
from fastmcp import FastMCP
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult

from fakes.clocked import CLOCK
from mcp_memory.server import build_server as build_memory
from mcp_pending_actions.server import build_server as build_pending_actions
from mcp_scheduler.server import build_server as build_scheduler
from mcp_shopping.server import build_server as build_shopping
from mcp_telegram_io.server import build_server as build_telegram_io


@dataclass
class Call:
    server: str
    tool: str
    arguments: dict[str, Any]
    answered: bool = False  # the server has answered it (a result or an error)

    @property
    def name(self) -> str:
        return f"{self.server}.{self.tool}"


@dataclass
class Calls:
    """The calls the counted servers received, in order; ``wait_for`` a condition on them.
    ``hold(tool)``: the calls of ``tool`` a holding server receives (``shopping``) wait
    until ``release``."""

    made: list[Call] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # the tool of each call waiting now
    _holding: set[str] = field(default_factory=set)
    _changed: anyio.Event | None = None

    def record(self, call: Call) -> None:
        self.made.append(call)
        self.changed()

    def changed(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def clear(self) -> None:
        self.made.clear()

    def names(self, *, without: tuple[str, ...] = ()) -> list[str]:
        """``server.tool`` of each call, leaving out the tools named in ``without``."""
        return [c.name for c in self.made if c.tool not in without]

    async def wait_for(self, done: Callable[[list[Call]], bool], timeout_s: float = 10.0) -> None:
        with anyio.fail_after(timeout_s):
            while not done(self.made):
                await self._next_change()

    def hold(self, tool: str) -> None:
        self._holding.add(tool)

    def release(self) -> None:
        """Let the held calls go on, and hold no tool any more."""
        self._holding.clear()
        self.changed()

    async def passing(self, tool: str) -> None:
        """Once ``tool`` is not held (at once if it is not)."""
        if tool not in self._holding:
            return
        self.held.append(tool)
        self.changed()
        try:
            while tool in self._holding:
                await self._next_change()
        finally:
            self.held.remove(tool)

    async def _next_change(self) -> None:
        if self._changed is None:
            self._changed = anyio.Event()
        await self._changed.wait()


CALLS = Calls()


class Counting(Middleware):
    def __init__(self, server: str) -> None:
        self._server = server

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        message = context.message
        made = Call(self._server, message.name, dict(message.arguments or {}))
        CALLS.record(made)
        try:
            return await call_next(context)
        finally:
            made.answered = True
            CALLS.changed()


class Holding(Middleware):
    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        await CALLS.passing(context.message.name)
        return await call_next(context)


def _counted(name: str, server: FastMCP[Any]) -> FastMCP[Any]:
    server.add_middleware(Counting(name))
    return server


def memory() -> FastMCP[Any]:
    return _counted("memory", build_memory(clock=CLOCK))


def telegram_io() -> FastMCP[Any]:
    return _counted("telegram-io", build_telegram_io())


def pending_actions() -> FastMCP[Any]:
    return _counted("pending-actions", build_pending_actions(clock=CLOCK))


def scheduler() -> FastMCP[Any]:
    return _counted("scheduler", build_scheduler(clock=CLOCK))


def shopping() -> FastMCP[Any]:
    server = build_shopping()
    server.add_middleware(Holding())
    return server
