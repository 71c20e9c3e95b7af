"""The registry: every configured MCP server, its tools, and calls by qualified name.

A call returns the tool's :class:`ToolResult` or raises a
:class:`~orchestrator.mesh.errors.ToolCallError` saying why there is none. Internal
callers read results into the wire models they share with the servers (``call_as``);
the model's view of either is written by :mod:`orchestrator.mesh.bridge` alone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel, ValidationError

from meshkit.tool_classes import PRODUCER, READ
from orchestrator.config.registry import Role, ServerEntry
from orchestrator.mesh.connection import ServerConnection
from orchestrator.mesh.errors import BrokenContract, ServerUnavailable, ToolFailed
from orchestrator.mesh.tools import ToolInfo

logger = logging.getLogger(__name__)

LLM_CLASSES = frozenset({READ, PRODUCER})
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class ToolResult:
    """A tool's successful answer: its structured content (if any), its text, and the files
    it holds (images, audio, embedded blobs: what the model reads as "[image omitted]")."""

    structured: dict[str, Any] | None
    text: str
    wrapped: bool = False  # fastmcp wrapped a bare return value as {"result": value}
    duration_ms: float = 0.0
    files: tuple[Blob, ...] = ()


@dataclass(frozen=True)
class Blob:
    """A file in a tool's answer: its type and its bytes, base64."""

    mime_type: str
    data: str


@dataclass(frozen=True)
class ServerStatus:
    name: str
    transport: str
    up: bool
    tools: int
    error: str | None  # why it is down, in a few words (no URL, no secret)


class Registry:
    def __init__(
        self,
        entries: Mapping[str, ServerEntry],
        *,
        credentials: Mapping[str, str] | None = None,
        default_timeout_s: float = 30.0,
        retry_initial_s: float = 0.5,
        retry_max_s: float = 30.0,
        connect_wait_s: float = 10.0,
        module_options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        """``module_options``: server → what its ``module:`` factory is called with (none by
        default; the operator's command builds telegram-io without its pollers)."""
        self._connections = {
            name: ServerConnection(
                name,
                entry,
                token=(credentials or {}).get(name),
                default_timeout_s=default_timeout_s,
                retry_initial_s=retry_initial_s,
                retry_max_s=retry_max_s,
                options=(module_options or {}).get(name),
            )
            for name, entry in entries.items()
        }
        self._roles = {entry.role: name for name, entry in entries.items() if entry.role}
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

    async def check(self) -> None:
        """Bring the status up to date (``/status``): every server at once, a ping for the
        connected ones, one reconnect attempt for the others."""
        async with anyio.create_task_group() as tasks:
            for connection in self._connections.values():
                tasks.start_soon(connection.check)

    async def wait_up(self, server: str, timeout_s: float) -> bool:
        """Whether ``server`` is connected, waiting up to ``timeout_s`` for it."""
        return await self._connections[server].wait_up(timeout_s)

    def server_for(self, role: Role) -> str | None:
        """The name of the server that plays ``role`` (telegram-io, pending-actions, memory)."""
        return self._roles.get(role)

    def status(self) -> list[ServerStatus]:
        return [
            ServerStatus(c.name, c.entry.transport, c.is_up, len(c.tools), c.last_error)
            for c in self._connections.values()
        ]

    def tools(
        self, servers: Iterable[str] | None = None, classes: frozenset[str] = LLM_CLASSES
    ) -> list[ToolInfo]:
        """Tools of the given servers (all when None) in the given classes, by name; never
        a tool for other clients only (``get_action``)."""
        names = self._connections if servers is None else servers
        found = [
            tool
            for name in names
            if name in self._connections
            for tool in self._connections[name].tools.values()
            if tool.tool_class in classes and not tool.clients_only
        ]
        return sorted(found, key=lambda t: t.qualified)

    def find(self, server: str, tool: str) -> ToolInfo | None:
        connection = self._connections.get(server)
        return connection.tools.get(tool) if connection else None

    def has_server(self, server: str) -> bool:
        return server in self._connections

    def proposes(self, server: str) -> bool:
        """Whether ``server``'s registry entry allows it to propose changes (``proposes``):
        its producer tools are offered, and its confirm tools called after a tap."""
        connection = self._connections.get(server)
        return connection is not None and connection.entry.may_propose

    async def call(self, tool: ToolInfo, arguments: dict[str, Any]) -> ToolResult:
        """The tool's result; a ToolCallError when there is none."""
        started = time.perf_counter()
        result = await self._connections[tool.server].call(tool, arguments)
        text = "\n".join(_block_text(block) for block in result.content).strip()
        if result.is_error:
            raise ToolFailed(tool.qualified, text or "the tool failed")
        meta = result.meta or {}
        structured = result.structured_content
        wrapped = bool(meta.get("fastmcp", {}).get("wrap_result")) and (
            structured is not None and set(structured) == {"result"}
        )
        elapsed = (time.perf_counter() - started) * 1000
        files = tuple(blob for block in result.content if (blob := _blob(block)) is not None)
        return ToolResult(structured, text, wrapped, elapsed, files)

    async def call_named(self, server: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Call ``server``'s tool ``name``: its result (a ToolCallError when there is none)."""
        tool = self.find(server, name)
        if tool is None and server in self._connections:
            # Down since the start, its tools are not known yet: one attempt now.
            await self._connections[server].reconnect()
            tool = self.find(server, name)
        if tool is None:
            raise ServerUnavailable(f"{server}__{name}", f"no tool {name} on {server} right now")
        return await self.call(tool, arguments)

    async def call_as(self, server: str, name: str, arguments: dict[str, Any], model: type[M]) -> M:
        """Call ``server``'s tool ``name`` and read its structured result as ``model``."""
        result = await self.call_named(server, name, arguments)
        tool = f"{server}__{name}"
        try:
            return model.model_validate(result.structured or {})
        except ValidationError as error:
            logger.error("%s answered outside its contract: %s", tool, error)
            raise BrokenContract(tool, f"not a {model.__name__}") from None


def _blob(block: Any) -> Blob | None:
    kind = getattr(block, "type", "")
    if kind in ("image", "audio"):
        return Blob(str(block.mime_type), str(block.data))
    blob = getattr(getattr(block, "resource", None), "blob", None) if kind == "resource" else None
    if blob is None:
        return None
    return Blob(str(block.resource.mime_type or "application/octet-stream"), str(blob))


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind == "resource":
        resource = block.resource
        return str(getattr(resource, "text", None) or f"[resource {resource.uri}]")
    if kind == "resource_link":
        return f"[resource {block.uri}]"
    return f"[{kind or 'content'} omitted]"
