"""How a registry entry is reached: a fastmcp client transport per way (url, command, module).

Every transport is wrapped in :class:`ReadByUs`: the sessions it opens do not check a
tool's structured result against the output schema the server declared. The MCP client
does that with jsonschema on every call (a sixth of an in-process call's CPU for a
20-item window), and the orchestrator reads every result itself: an internal one into
the pydantic wire model it shares with the server (``Registry.call_as``, which fails
the call on a mismatch), a result for the model as JSON text, which the model reads as
it is. This is the session fastmcp's own proxies use for results they only pass on,
given through the transport options a wrapping transport is documented to pass along.

``FastMCP`` is named for type checking only: importing it loads fastmcp's whole server side
(its auth, joserfc and cryptography, its providers: 141 modules, 6.4 MiB), which only a
``module:`` entry uses, and that entry's own module imports it. The orchestrator of the
container stack reaches every server by URL and loads the client side alone.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

import mcp_types
from fastmcp.client.transports import (
    ClientTransport,
    FastMCPTransport,
    StdioTransport,
    StreamableHttpTransport,
)
from fastmcp.client.transports.base import SessionKwargs, TransportOptions
from mcp import ClientSession
from pydantic import ValidationError

from meshkit.yaml_config import ConfigError
from orchestrator.config.registry import ServerEntry
from orchestrator.mesh.environments import environment

if TYPE_CHECKING:
    from fastmcp import FastMCP


class ModuleNotLoadable(Exception):
    """An in-process server's ``module:`` cannot be imported or has no such factory."""


def load_module_server(name: str, spec: str, **options: Any) -> FastMCP[Any]:
    """``package.module:factory`` → the server the factory builds (called with ``options``:
    none, but for the operator's command, see ``orchestrator.cli.mesh``)."""
    module_name, _, attribute = spec.partition(":")
    try:
        factory: Callable[[], FastMCP[Any]] = getattr(
            importlib.import_module(module_name), attribute
        )
    except (ImportError, AttributeError) as error:
        raise ModuleNotLoadable(
            f"servers.{name}.module: {spec!r} cannot be loaded ({error})"
        ) from None
    try:
        inspect.signature(factory).bind(**options)
    except TypeError:
        raise ModuleNotLoadable(
            f"servers.{name}.module: {spec!r} takes no {', '.join(options)}"
        ) from None
    return factory(**options)


class ResultsReadByUs(ClientSession):
    """A session that leaves a tool's structured result to its reader (see the module)."""

    async def validate_tool_result(self, name: str, result: mcp_types.CallToolResult) -> None:
        return None


class ReadByUs(ClientTransport):
    """``inner``, its sessions made :class:`ResultsReadByUs`."""

    def __init__(self, inner: ClientTransport) -> None:
        self.inner = inner
        self.legacy_only = inner.legacy_only

    @asynccontextmanager
    async def connect_session(
        self,
        *,
        transport_options: TransportOptions | None = None,
        **session_kwargs: Unpack[SessionKwargs],
    ) -> AsyncIterator[ClientSession]:
        options = replace(transport_options or TransportOptions(), session_class=ResultsReadByUs)
        async with self.inner.connect_session(
            transport_options=options, **session_kwargs
        ) as session:
            yield session

    async def close(self) -> None:
        close: Callable[[], Awaitable[None]] = self.inner.close  # untyped in fastmcp
        await close()

    def get_session_id(self) -> str | None:
        return self.inner.get_session_id()

    def __repr__(self) -> str:
        return f"<ReadByUs {self.inner!r}>"


def transport_for(
    entry: ServerEntry, *, token: str | None, server: FastMCP[Any] | None
) -> ClientTransport:
    """The transport of ``entry``; ``token`` is the orchestrator's credential for this one
    server, sent only when the entry asks for it (``auth: mesh``); ``server`` the in-process
    server a ``module:`` entry was built into."""
    return ReadByUs(_transport(entry, token=token, server=server))


def _transport(
    entry: ServerEntry, *, token: str | None, server: FastMCP[Any] | None
) -> ClientTransport:
    if entry.url:
        return StreamableHttpTransport(
            entry.url, headers=dict(entry.headers), auth=entry.bearer(token)
        )
    if server is None:
        raise ValueError("a module, command or package entry needs its server built first")
    return FastMCPTransport(server)


def upstream_of(entry: ServerEntry) -> StdioTransport:
    """The stdio server a ``command`` or ``package`` entry names, as the gateway reaches it:
    a child process with a minimal environment plus the entry's ``env``."""
    if entry.package:
        made = environment(entry.lock_file or Path(f"{entry.package_name}.lock"))
        program, *words = entry.capability_command()
        found = made / "bin" / program
        command = [str(found) if found.is_file() else program, *words]
    else:
        command = list(entry.command or [])
        # "python" means this interpreter, so a registry works inside any virtualenv.
        if command[0] == "python":
            command[0] = sys.executable
    return StdioTransport(command[0], command[1:], env=entry.env or None)


def gateway_server(name: str, entry: ServerEntry) -> FastMCP[Any]:
    """The gateway of a ``command`` or ``package`` entry, in this process (``mcp_gateway``):
    its reads as they are, its changes behind a tap. Its record of the calls it made is in
    ``DATA_DIR``, beside the embedded servers' databases."""
    from mcp_gateway.server import build_server  # noqa: PLC0415 (a gatewayed entry's only)
    from mcp_gateway.settings import GatewaySettings  # noqa: PLC0415

    upstream = upstream_of(entry)
    try:
        settings = GatewaySettings(name=name, command=[upstream.command, *upstream.args])
    except ValidationError as error:
        why = error.errors()[0]["msg"]
        raise ConfigError(f"servers.{name}: {why}; fix its command or package") from None
    return build_server(settings, upstream=upstream)
