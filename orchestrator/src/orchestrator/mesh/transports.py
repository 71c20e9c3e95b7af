"""How a registry entry is reached: a fastmcp client transport per way (url, command, module)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

from fastmcp import FastMCP
from fastmcp.client.transports import (
    ClientTransport,
    FastMCPTransport,
    StdioTransport,
    StreamableHttpTransport,
)

from orchestrator.config import ServerEntry


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


def transport_for(
    entry: ServerEntry, *, token: str | None, server: FastMCP[Any] | None
) -> ClientTransport:
    """The transport of ``entry``; ``token`` is the orchestrator's credential for this one
    server, sent only when the entry asks for it (``auth: mesh``); ``server`` the in-process
    server a ``module:`` entry was built into."""
    if entry.url:
        return StreamableHttpTransport(
            entry.url, headers=dict(entry.headers), auth=entry.bearer(token)
        )
    if entry.command:
        # "python" means this interpreter, so a registry works inside any virtualenv.
        command = list(entry.command)
        if command[0] == "python":
            command[0] = sys.executable
        return StdioTransport(command[0], command[1:], env=entry.env or None)
    if server is None:
        raise ValueError("a module entry needs its server built first")
    return FastMCPTransport(server)
