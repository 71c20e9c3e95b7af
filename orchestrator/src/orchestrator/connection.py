"""One supervised connection to one MCP server (HTTP, stdio or in-process).

A task per server keeps a ``fastmcp.Client`` open. When the server is down at
start, or a call finds it gone, the task rebuilds the client with capped
exponential backoff and jitter; callers never wait for that longer than a
short grace period. Tools are (re)listed on every connect and on ``refresh()``.
"""

from __future__ import annotations

import importlib
import logging
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types
from fastmcp import Client, FastMCP
from fastmcp.client.transports import (
    ClientTransport,
    FastMCPTransport,
    StdioTransport,
    StreamableHttpTransport,
)
from mcp.shared.exceptions import MCPError

from meshkit.tool_classes import CLASSES, CONTEXT_ARGUMENTS, READ
from orchestrator.config import ServerEntry, qualified_name

logger = logging.getLogger(__name__)

UNCLASSIFIED = "unclassified"
# Codes the SDK raises for a dead connection or an HTTP failure (401, 5xx), not a tool's answer.
_TRANSPORT_CODES = {mcp_types.CONNECTION_CLOSED, mcp_types.INTERNAL_ERROR}


class TransportFailure(Exception):
    """The call did not reach the server or its answer was lost."""


class ServerDown(Exception):
    """The server is not connected (at start, or while reconnecting)."""


@dataclass(frozen=True)
class ToolInfo:
    server: str
    name: str
    qualified: str
    tool_class: str
    title: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool
    idempotent: bool
    context: tuple[str, ...] = ()  # arguments the orchestrator fills in (``agent``)

    @property
    def retry_safe(self) -> bool:
        """A lost call may be sent again only when doing it twice changes nothing."""
        return self.read_only or self.idempotent


def classify(tool: mcp_types.Tool) -> str:
    """The tool class from its tag; untagged third-party tools are ``read`` only when
    they declare themselves read-only, and otherwise never shown to the model."""
    meta = tool.meta or {}
    tags = set(meta.get("fastmcp", {}).get("tags", [])) & CLASSES
    if len(tags) == 1:
        return str(tags.pop())
    if not tags and tool.annotations is not None and tool.annotations.read_only_hint:
        return READ
    return UNCLASSIFIED


def context_arguments(tool: mcp_types.Tool) -> tuple[str, ...]:
    """The arguments a tool asks the orchestrator to fill in (``meta.clawmesh.context``),
    among those the orchestrator knows and the tool's schema has."""
    meta = tool.meta or {}
    clawmesh = meta.get("clawmesh")
    declared = clawmesh.get("context", []) if isinstance(clawmesh, dict) else []
    properties = (tool.input_schema or {}).get("properties") or {}
    if not isinstance(declared, list):
        return ()
    return tuple(name for name in declared if name in CONTEXT_ARGUMENTS and name in properties)


class ServerConnection:
    def __init__(
        self,
        name: str,
        entry: ServerEntry,
        *,
        token: str | None,
        default_timeout_s: float,
        retry_initial_s: float = 0.5,
        retry_max_s: float = 30.0,
        grace_s: float = 3.0,
    ) -> None:
        self.name = name
        self.entry = entry
        self.timeout_s = entry.timeout_s or default_timeout_s
        self.tools: dict[str, ToolInfo] = {}
        self.last_error: str | None = None
        self._token = token
        self._retry_initial_s = retry_initial_s
        self._retry_max_s = retry_max_s
        self._grace_s = grace_s
        self._client: Client[Any] | None = None
        self._up = anyio.Event()
        self._broken = anyio.Event()
        self._closing = False
        # In-process: built now (an import error is a configuration error), reused on reconnect.
        self._server = load_module_server(name, entry.module) if entry.module else None
        self._tried = anyio.Event()  # the first connection attempt is over, either way
        self._down_since: float | None = 0.0  # never connected: down "forever"

    def closing(self) -> bool:
        return self._closing

    @property
    def is_up(self) -> bool:
        return self._client is not None

    def _down_for(self) -> float:
        return 0.0 if self._down_since is None else time.monotonic() - self._down_since

    async def run(self) -> None:
        """Keep the connection open until ``close()``; reconnect with backoff when it breaks."""
        delay = self._retry_initial_s
        warned = False
        while not self.closing():
            try:
                async with self._new_client() as client:
                    await self._discover(client)
                    self._client = client
                    self.last_error = None
                    self._down_since = None
                    self._up.set()
                    self._tried.set()
                    delay, warned = self._retry_initial_s, False
                    logger.info(
                        "server %s up (%s, %d tools)",
                        self.name,
                        self.entry.transport,
                        len(self.tools),
                    )
                    await self._broken.wait()
            except Exception as error:  # any failure to connect: log, back off, retry
                self.last_error = f"{type(error).__name__}: {error}"[:300]
                if not warned:
                    logger.warning(
                        "server %s is down (%s); retrying in the background",
                        self.name,
                        self.last_error,
                    )
                    warned = True
            finally:
                self._client = None
                if self._down_since is None:
                    self._down_since = time.monotonic()
                if self._up.is_set():
                    self._up = anyio.Event()
                self._broken = anyio.Event()
            self._tried.set()
            if self.closing():
                return
            await anyio.sleep(delay * random.uniform(0.8, 1.2))  # noqa: S311 (jitter, not crypto)
            delay = min(delay * 2, self._retry_max_s)

    async def close(self) -> None:
        self._closing = True
        self._broken.set()

    async def wait_tried(self) -> None:
        """Until the first connection attempt has succeeded or failed."""
        await self._tried.wait()

    async def wait_up(self, timeout_s: float) -> bool:
        with anyio.move_on_after(timeout_s):
            await self._up.wait()
        return self.is_up

    async def refresh(self) -> None:
        """Re-list the tools (reload); a failure breaks the connection so it is rebuilt."""
        client = self._client
        if client is None:
            return
        try:
            with anyio.fail_after(self.timeout_s):
                await self._discover(client)
        except Exception:
            logger.warning("server %s: listing tools failed; reconnecting", self.name)
            self._mark_broken(client)

    async def call(self, tool: ToolInfo, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """One call; a lost call is retried once after reconnecting, if the tool allows it."""
        try:
            return await self._call_once(tool.name, arguments)
        except ServerDown:
            # Long down: fail fast. Just broken: it may be back within the grace period.
            if not tool.retry_safe or self._down_for() > self._grace_s:
                raise
        except TransportFailure:
            if not tool.retry_safe:
                raise
        if not await self.wait_up(self._grace_s):
            raise ServerDown(self.name)
        return await self._call_once(tool.name, arguments)

    async def _call_once(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        client = self._client
        if client is None:
            raise ServerDown(self.name)
        try:
            with anyio.fail_after(self.timeout_s):
                return await client.call_tool_mcp(name, arguments)
        except TimeoutError:
            raise
        except MCPError as error:
            if error.code not in _TRANSPORT_CODES:
                raise
            self._mark_broken(client)
            raise TransportFailure(str(error)) from error
        except Exception as error:
            self._mark_broken(client)
            raise TransportFailure(f"{type(error).__name__}: {error}") from error

    def _mark_broken(self, client: Client[Any]) -> None:
        """Stop using ``client`` now; waiters wait for the next connection, not this one."""
        if self._client is client:
            self._client = None
            self._down_since = time.monotonic()
            self._up = anyio.Event()
        self._broken.set()

    async def _discover(self, client: Client[Any]) -> None:
        tools: dict[str, ToolInfo] = {}
        for tool in await client.list_tools():
            qualified = qualified_name(self.name, tool.name)
            if qualified is None:
                logger.warning(
                    "server %s: tool %r skipped: its name cannot form a valid 'server__tool' name",
                    self.name,
                    tool.name,
                )
                continue
            hints = tool.annotations
            tools[tool.name] = ToolInfo(
                server=self.name,
                name=tool.name,
                qualified=qualified,
                tool_class=classify(tool),
                title=tool.title or (hints.title if hints and hints.title else tool.name),
                description=tool.description or "",
                input_schema=dict(tool.input_schema),
                read_only=bool(hints and hints.read_only_hint),
                idempotent=bool(hints and hints.idempotent_hint),
                context=context_arguments(tool),
            )
        hidden = [t.name for t in tools.values() if t.tool_class == UNCLASSIFIED]
        if hidden:
            logger.warning(
                "server %s: tools %s have no class tag and are not read-only: "
                "never shown to the model",
                self.name,
                hidden,
            )
        self.tools = tools

    def _new_client(self) -> Client[Any]:
        return Client(self._transport(), timeout=self.timeout_s, init_timeout=self.timeout_s)

    def _transport(self) -> ClientTransport:
        entry = self.entry
        if entry.url:
            headers = dict(entry.headers)
            token = entry.token or self._token
            return StreamableHttpTransport(entry.url, headers=headers, auth=token)
        if entry.command:
            # "python" means this interpreter, so a registry works inside any virtualenv.
            command = list(entry.command)
            if command[0] == "python":
                command[0] = sys.executable
            return StdioTransport(command[0], command[1:], env=entry.env or None)
        if self._server is None:
            raise RuntimeError(f"server {self.name}: no url, command or module")
        return FastMCPTransport(self._server)


class ModuleNotLoadable(Exception):
    """An in-process server's ``module:`` cannot be imported or has no such factory."""


def load_module_server(name: str, spec: str) -> FastMCP[Any]:
    """``package.module:factory`` → the server the factory builds (called without arguments)."""
    module_name, _, attribute = spec.partition(":")
    try:
        factory: Callable[[], FastMCP[Any]] = getattr(
            importlib.import_module(module_name), attribute
        )
    except (ImportError, AttributeError) as error:
        raise ModuleNotLoadable(
            f"servers.{name}.module: {spec!r} cannot be loaded ({error})"
        ) from None
    return factory()
