"""One supervised connection to one MCP server (HTTP, stdio or in-process).

A task per server keeps a ``fastmcp.Client`` open. When the server is down at
start, or a call finds it gone, the task rebuilds the client with capped
exponential backoff and jitter. A call to a server that is down does not wait for
that timer: it asks for one attempt now (``reconnect``), shared with every call that
asks meanwhile, and fails at once with ServerUnavailable if that attempt fails. So the
first call after a restart succeeds. Tools are (re)listed on every connect and on
``refresh()``.

Only the failures of a connection are caught here, by their types: the SDK's
"connection closed" and HTTP errors, httpx2's transport errors, a closed stream, and
fastmcp's "failed to connect" (a ``RuntimeError`` caused by one of those). Anything
else is a bug and propagates.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from typing import Any

import anyio
import httpx2
import mcp_types
from fastmcp import Client
from mcp.shared.exceptions import MCPError

from orchestrator.config.registry import ServerEntry
from orchestrator.mesh.errors import CallLost, CallRefused, CallTimedOut, ServerUnavailable
from orchestrator.mesh.reasons import reason_of
from orchestrator.mesh.tools import WITHHELD, ToolInfo, describe, withheld_reason
from orchestrator.mesh.transports import gateway_server, load_module_server, transport_for

logger = logging.getLogger(__name__)

# Codes the SDK raises for a dead connection or an HTTP failure (401, 5xx), not a tool's answer.
_TRANSPORT_CODES = {mcp_types.CONNECTION_CLOSED, mcp_types.INTERNAL_ERROR}
_TRANSPORT_ERRORS = (
    httpx2.TransportError,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    OSError,
)


# What connecting or listing can fail with when the server is unreachable or broken; fastmcp
# reports a failed connect as RuntimeError("Client failed to connect: ...") from its cause.
_CONNECT_ERRORS = (MCPError, TimeoutError, httpx2.HTTPError, RuntimeError, *_TRANSPORT_ERRORS)


def _bug(error: Exception) -> bool:
    """A RuntimeError with no cause is not fastmcp's report of a failed connect."""
    return isinstance(error, RuntimeError) and error.__cause__ is None


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
        reconnect_s: float = 10.0,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.entry = entry
        self.timeout_s = entry.timeout_s or default_timeout_s
        self.tools: dict[str, ToolInfo] = {}
        self.last_error: str | None = None  # a few words (reasons.py), never a URL or a body
        self._told: set[str] = set()  # withheld producer tools the operator was told of
        self._token = token
        self._retry_initial_s = retry_initial_s
        self._retry_max_s = retry_max_s
        self._grace_s = grace_s
        # How long a call waits for the attempt it asked for (the attempt may go on).
        self._reconnect_s = min(reconnect_s, self.timeout_s)
        self._client: Client[Any] | None = None
        self._up = anyio.Event()
        self._broken = anyio.Event()
        self._closing = False
        # In-process: built now (an import error is a configuration error), reused on reconnect.
        # ``options``: what the factory is called with (none, but for the operator's command).
        self._server = (
            load_module_server(name, entry.module, **(options or {}))
            if entry.module
            else gateway_server(name, entry)
            if entry.gatewayed
            else None
        )
        self._tried = anyio.Event()  # the first connection attempt is over, either way
        # On-call reconnects: ``_wake`` cuts the backoff sleep short; ``_asked`` is set when
        # the attempt made for the callers who asked is over, ``_attempt`` when the one under
        # way is (both replaced per attempt, so a caller never reads an older outcome).
        self._wake = anyio.Event()
        self._asked: anyio.Event | None = None
        self._attempt = anyio.Event()
        self._connecting = False

    def closing(self) -> bool:
        return self._closing  # a method: a call may change it (mypy keeps no narrowing)

    @property
    def is_up(self) -> bool:
        return self._client is not None

    async def run(self) -> None:
        """Keep the connection open until ``close()``; reconnect with backoff when it breaks,
        or at once when a call asks (``reconnect``)."""
        delay = self._retry_initial_s
        warned = False
        while not self.closing():
            self._attempt, self._asked = self._asked or anyio.Event(), None
            self._connecting = True
            try:
                await self._connected()
                delay, warned = self._retry_initial_s, False
            except _CONNECT_ERRORS as error:
                if _bug(error):
                    raise
                self.last_error = reason_of(error)
                if not warned:
                    logger.warning(
                        "server %s is down (%s); retrying in the background",
                        self.name,
                        self.last_error,
                    )
                    warned = True
            finally:
                self._connecting = False
                self._client = None
                if self._up.is_set():
                    self._up = anyio.Event()
                self._broken = anyio.Event()
                self._attempt.set()
            self._tried.set()
            if self.closing():
                return
            with anyio.move_on_after(delay * random.uniform(0.8, 1.2)):  # noqa: S311 (jitter)
                await self._wake.wait()
            self._wake = anyio.Event()
            delay = min(delay * 2, self._retry_max_s)

    async def _connected(self) -> None:
        """One connection: open, list the tools, serve calls until it breaks or closes."""
        transport = transport_for(
            self.entry, token=self.entry.token or self._token, server=self._server
        )
        async with Client(transport, timeout=self.timeout_s, init_timeout=self.timeout_s) as client:
            self._listed(await client.list_tools())
            self._client = client
            self.last_error = None
            self._connecting = False
            self._up.set()
            self._attempt.set()
            self._tried.set()
            logger.info(
                "server %s up (%s, %d tools)", self.name, self.entry.transport, len(self.tools)
            )
            await self._broken.wait()

    async def close(self) -> None:
        self._closing = True
        self._broken.set()
        self._wake.set()
        if self._asked is not None:  # no attempt will be made for those who asked
            self._asked.set()

    async def wait_tried(self) -> None:
        """Until the first connection attempt has succeeded or failed."""
        await self._tried.wait()

    async def wait_up(self, timeout_s: float) -> bool:
        with anyio.move_on_after(timeout_s):
            await self._up.wait()
        return self.is_up

    async def reconnect(self) -> bool:
        """Whether the server is up after one connection attempt made now (none if it is up).

        Calls that ask while an attempt is under way, or already asked for, share it. A
        call waits for it at most ``reconnect_s``; the attempt itself goes on."""
        if self.is_up:
            return True
        if self.closing():
            return False
        if self._connecting:
            attempt = self._attempt
        else:
            if self._asked is None:
                self._asked = anyio.Event()
                self._wake.set()
            attempt = self._asked
        with anyio.move_on_after(self._reconnect_s):
            await attempt.wait()
        return self.is_up

    async def check(self) -> bool:
        """Whether the server answers now: a ping when it is up (a dead one is marked down
        with its reason), one shared reconnect attempt when it is down."""
        client = self._client
        if client is not None:
            try:
                with anyio.fail_after(self._reconnect_s):
                    await client.ping()
                return True
            except MCPError as error:
                if error.code not in _TRANSPORT_CODES:
                    return True  # it answered, if only to refuse the ping
                self._mark_broken(client, error)
            except _CONNECT_ERRORS as error:
                if _bug(error) and client.is_connected():
                    raise
                self._mark_broken(client, error)
        return await self.reconnect()

    async def refresh(self) -> None:
        """Re-list the tools (reload); a failure breaks the connection so it is rebuilt."""
        client = self._client
        if client is None:
            return
        try:
            with anyio.fail_after(self.timeout_s):
                self._listed(await client.list_tools())
        except _CONNECT_ERRORS as error:
            if _bug(error):
                raise
            logger.warning("server %s: listing tools failed (%s); reconnecting", self.name, error)
            self._mark_broken(client, error)

    def _listed(self, tools: list[mcp_types.Tool]) -> None:
        """The tools as listed now; producer tools withheld (see ``mesh.tools``) are told
        to the operator once, in one line, not at every reconnect."""
        proposes = self.entry.may_propose
        self.tools = describe(self.name, tools, proposes=proposes)
        withheld = {name for name, tool in self.tools.items() if tool.tool_class == WITHHELD}
        if withheld - self._told:
            logger.warning("%s", withheld_reason(self.name, self.tools, proposes=proposes))
            self._told |= withheld

    async def call(self, tool: ToolInfo, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """One call. To a server that is down: one reconnect attempt first. A call lost in
        transport is retried once after reconnecting, if the tool allows it.

        Raises ServerUnavailable, CallTimedOut, CallLost or CallRefused."""
        if not await self.reconnect():
            raise self._unavailable(tool)
        try:
            return await self._call_once(tool, arguments)
        except (ServerUnavailable, CallLost):  # gone since a concurrent call: as if lost
            if not tool.retry_safe:
                raise
        # Gone under this call: if it is not back at once, it may be restarting; give it
        # the grace period (the background retries start from their shortest delay).
        if not await self.reconnect() and not await self.wait_up(self._grace_s):
            raise self._unavailable(tool)
        return await self._call_once(tool, arguments)

    def _unavailable(self, tool: ToolInfo) -> ServerUnavailable:
        why = f" ({self.last_error})" if self.last_error else ""
        return ServerUnavailable(tool.qualified, f"the {self.name} server is down{why}")

    async def _call_once(
        self, tool: ToolInfo, arguments: dict[str, Any]
    ) -> mcp_types.CallToolResult:
        client = self._client
        if client is None:
            raise self._unavailable(tool)
        try:
            with anyio.fail_after(self.timeout_s):
                return await client.call_tool_mcp(tool.name, arguments)
        except TimeoutError:
            raise CallTimedOut(tool.qualified, self.timeout_s) from None
        except MCPError as error:
            if error.code not in _TRANSPORT_CODES:
                raise CallRefused(tool.qualified, error.error.message) from error
            self._mark_broken(client, error)
            raise CallLost(tool.qualified, str(error)) from error
        except (*_TRANSPORT_ERRORS, RuntimeError) as error:
            # fastmcp raises RuntimeError("Client is not connected") for a session that died
            # under a concurrent call; any other RuntimeError is a bug.
            if isinstance(error, RuntimeError) and client.is_connected():
                raise
            self._mark_broken(client, error)
            raise CallLost(tool.qualified, f"{type(error).__name__}: {error}") from error

    def _mark_broken(self, client: Client[Any], error: BaseException) -> None:
        """Stop using ``client`` now, down for ``error``; waiters wait for the next
        connection, not this one. A late failure of a client already let go changes
        nothing: ``_broken`` may belong to its successor by now."""
        if self._client is not client:
            return
        self._client = None
        self._up = anyio.Event()
        self.last_error = reason_of(error)
        logger.warning("server %s is gone (%s)", self.name, self.last_error)
        self._broken.set()
