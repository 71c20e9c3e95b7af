"""The registry: every configured MCP server, its tools, and calls by qualified name.

Tool calls never raise: each becomes a :class:`ToolOutcome` whose ``output`` is
the ``function_call_output`` string the model reads, errors included.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

import anyio
from mcp.shared.exceptions import MCPError

from meshkit.tool_classes import PRODUCER, READ
from orchestrator.bridge import render_result
from orchestrator.config import ServerEntry
from orchestrator.connection import ServerConnection, ServerDown, ToolInfo, TransportFailure

logger = logging.getLogger(__name__)

LLM_CLASSES = frozenset({READ, PRODUCER})


@dataclass(frozen=True)
class ToolOutcome:
    output: str  # what the model reads
    ok: bool
    structured: dict[str, Any] | None = None
    duration_ms: float = 0.0
    answered: bool = True  # False: no answer (down, lost, timed out); it may work later


@dataclass(frozen=True)
class ServerStatus:
    name: str
    transport: str
    up: bool
    tools: int
    error: str | None


def error_output(message: str) -> str:
    return json.dumps({"error": message}, ensure_ascii=False)


class Registry:
    def __init__(
        self,
        entries: Mapping[str, ServerEntry],
        *,
        token: str | None,
        default_timeout_s: float = 30.0,
        retry_initial_s: float = 0.5,
        retry_max_s: float = 30.0,
        connect_wait_s: float = 10.0,
    ) -> None:
        self._connections = {
            name: ServerConnection(
                name,
                entry,
                token=token,
                default_timeout_s=default_timeout_s,
                retry_initial_s=retry_initial_s,
                retry_max_s=retry_max_s,
            )
            for name, entry in entries.items()
        }
        self._connect_wait_s = connect_wait_s

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Registry]:
        """Connect every server, supervise them, close on exit.

        Waits until each server has connected or failed once (at most ``connect_wait_s``);
        a server that is down keeps reconnecting in the background.
        """
        async with anyio.create_task_group() as tasks:
            for connection in self._connections.values():
                tasks.start_soon(connection.run, name=f"mcp:{connection.name}")
            with anyio.move_on_after(self._connect_wait_s):
                for connection in self._connections.values():
                    await connection.wait_tried()
            try:
                yield self
            finally:
                for connection in self._connections.values():
                    await connection.close()

    async def reload(self) -> None:
        """Re-discover tools on every connected server (down ones reconnect by themselves)."""
        async with anyio.create_task_group() as tasks:
            for connection in self._connections.values():
                tasks.start_soon(connection.refresh)

    async def wait_up(self, server: str, timeout_s: float) -> bool:
        """Whether ``server`` is connected, waiting up to ``timeout_s`` for it."""
        return await self._connections[server].wait_up(timeout_s)

    def status(self) -> list[ServerStatus]:
        return [
            ServerStatus(c.name, c.entry.transport, c.is_up, len(c.tools), c.last_error)
            for c in self._connections.values()
        ]

    def tools(
        self, servers: Iterable[str] | None = None, classes: frozenset[str] = LLM_CLASSES
    ) -> list[ToolInfo]:
        """Tools of the given servers (all when None) in the given classes, by name."""
        names = self._connections if servers is None else servers
        found = [
            tool
            for name in names
            if name in self._connections
            for tool in self._connections[name].tools.values()
            if tool.tool_class in classes
        ]
        return sorted(found, key=lambda t: t.qualified)

    def find(self, server: str, tool: str) -> ToolInfo | None:
        connection = self._connections.get(server)
        return connection.tools.get(tool) if connection else None

    def has_server(self, server: str) -> bool:
        return server in self._connections

    async def call(self, tool: ToolInfo, arguments: dict[str, Any]) -> ToolOutcome:
        connection = self._connections[tool.server]
        started = time.perf_counter()
        try:
            result = await connection.call(tool, arguments)
        except TimeoutError:
            outcome = ToolOutcome(
                error_output(
                    f"{tool.qualified} did not answer within {connection.timeout_s:g} s; "
                    "it may still complete. Do not assume it worked."
                ),
                ok=False,
                answered=False,
            )
        except ServerDown:
            outcome = ToolOutcome(
                error_output(
                    f"The {tool.server} server is unavailable right now; tell the user and "
                    "suggest trying again shortly."
                ),
                ok=False,
                answered=False,
            )
        except TransportFailure:
            logger.warning("call %s lost in transport", tool.qualified)
            outcome = ToolOutcome(
                error_output(
                    f"The call to {tool.qualified} failed in transport and was not retried because "
                    "it may change something. Tell the user it may not have happened."
                ),
                ok=False,
                answered=False,
            )
        except MCPError as error:
            outcome = ToolOutcome(
                error_output(f"{tool.qualified} refused the call: {error.error.message}"), ok=False
            )
        else:
            output, ok = render_result(result)
            outcome = ToolOutcome(output, ok, result.structured_content)
        elapsed = (time.perf_counter() - started) * 1000
        return replace(outcome, duration_ms=elapsed)
