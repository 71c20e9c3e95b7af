"""The gateway's one connection to the server behind it, started again when it died.

The server is a child process; it may exit (a crash, an out-of-memory kill). The next call
finds the session gone: :meth:`Upstream.reset` drops it, and :meth:`Upstream.client` starts
the server again (fastmcp's stdio transport notices the dead child and makes a new one). A
read that failed in transport is tried once more on the new connection: reading twice
changes nothing. A change is never sent twice (``mcp_gateway.changes``); before one is
sent, a ping makes sure the server is there (a server found dead is started first).
"""

from __future__ import annotations

import contextlib
import logging
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any

import anyio
import mcp_types
from fastmcp import Client
from fastmcp.client.transports import ClientTransport
from fastmcp.server.context import Context
from fastmcp.server.providers.proxy import ProxyTool
from fastmcp.tools.base import ToolResult
from mcp.shared.exceptions import MCPError
from pydantic import PrivateAttr

from meshkit.tool_classes import READ

logger = logging.getLogger(__name__)

_TRANSPORT_CODES = {mcp_types.CONNECTION_CLOSED, mcp_types.INTERNAL_ERROR}


def lost(error: BaseException) -> bool:
    """Whether ``error`` says the connection is gone (not a tool's answer)."""
    if isinstance(error, MCPError):
        return error.error.code in _TRANSPORT_CODES
    return isinstance(
        error,
        RuntimeError
        | OSError
        | anyio.ClosedResourceError
        | anyio.BrokenResourceError
        | anyio.EndOfStream,
    )


class Upstream:
    """The server behind the gateway: one client, remade after the server died."""

    def __init__(self, transport: ClientTransport) -> None:
        self._transport = transport
        self._client: Client[Any] | None = None
        self._held = AsyncExitStack()
        self._lock = anyio.Lock()

    async def client(self) -> Client[Any]:
        """The connected client; the server started (again) when there is none."""
        async with self._lock:
            if self._client is None:
                client: Client[Any] = Client(self._transport)
                await self._held.enter_async_context(client)
                self._client = client
            return self._client

    async def live_client(self) -> Client[Any]:
        """The client, after a ping: a server found dead is started again first, so a change
        is never lost to a death that came before it was sent."""
        client = await self.client()
        try:
            await answered(client)
        except Exception as error:
            if not lost(error):
                raise
            await self.reset()
            client = await self.client()
        return client

    async def check(self) -> None:
        """The ``upstream`` health check: the server answers (else it is started again at
        the next call)."""
        try:
            await answered(await self.client())
        except Exception:
            await self.reset()
            raise

    async def reset(self) -> None:
        """Drop a connection found dead: the next :meth:`client` starts the server anew."""
        async with self._lock:
            held, self._held, self._client = self._held, AsyncExitStack(), None
            with contextlib.suppress(Exception):
                await held.aclose()

    async def __aenter__(self) -> Upstream:
        await self.client()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.reset()


async def answered(client: Client[Any]) -> None:
    """A ping that the server answers, whatever it says: some servers answer a ping with
    "method not found", which is an answer all the same; a lost connection raises."""
    try:
        await client.ping()
    except MCPError as error:
        if lost(error):
            raise


class ReadTool(ProxyTool):
    """A read tool of the server behind the gateway (fastmcp's proxy), tried once more on a
    new connection when the old one was lost. Its class is the gateway's word, not the
    server's: no tag or meta of its own."""

    _upstream: Upstream | None = PrivateAttr(default=None)

    @classmethod
    def of(cls, upstream: Upstream, tool: mcp_types.Tool) -> ReadTool:
        proxy = cls.from_mcp_tool(upstream.client, tool).model_copy(
            update={"tags": {READ}, "meta": None}
        )
        assert isinstance(proxy, ReadTool)  # from_mcp_tool and model_copy keep the class
        proxy._upstream = upstream
        return proxy

    async def run(self, arguments: dict[str, Any], context: Context | None = None) -> ToolResult:
        try:
            return await super().run(arguments, context)
        except Exception as error:
            if not lost(error) or self._upstream is None:
                raise
            logger.warning(
                "%s: the server behind the gateway is gone; starting it again", self.name
            )
        await self._upstream.reset()
        return await super().run(arguments, context)
