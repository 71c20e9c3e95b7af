"""A server with one tool of each class, to try a credential's scopes over the real guard.

Its own module, not ``fakes.serving``: the fake Telegram and OpenAI processes import that one,
and need not load fastmcp's server to start."""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP

from meshkit.server import create_server
from meshkit.tool_classes import confirm, internal, producer, read


def one_tool_per_class(name: str) -> FastMCP[Any]:
    """``look`` (read), ``suggest`` (producer), ``apply`` (confirm), ``plumb`` (internal)."""
    server = create_server(name, version="1", instructions="One tool per class.")

    @server.tool(**read())
    async def look() -> str:
        """Read."""
        return "looked"

    @server.tool(**producer())
    async def suggest() -> str:
        """Propose."""
        return "suggested"

    @server.tool(**confirm())
    async def apply() -> str:
        """Perform."""
        return "applied"

    @server.tool(**internal())
    async def plumb() -> str:
        """Plumbing."""
        return "plumbed"

    return server


def without_change_kinds() -> FastMCP[Any]:
    """A module factory (``fakes.class_server:without_change_kinds``): a producer, and a
    confirm tool that names no change kind (``apply``, not ``confirm_<kind>``)."""
    return one_tool_per_class("plain")
