"""The one way a clawmesh server is created: a FastMCP with health and safe errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastmcp import FastMCP
from fastmcp.server.server import LifespanCallable
from mcp.server.request_state import RequestStateSecurity

from meshkit.health import Check, health_endpoint
from meshkit.lean import LazyRequestStateCodec


def create_server(
    name: str,
    *,
    version: str,
    instructions: str,
    lifespan: LifespanCallable[Any] | None = None,
    checks: Mapping[str, Check] | None = None,
) -> FastMCP[Any]:
    """A FastMCP server with ``GET /health`` and masked internal errors.

    ``ToolError`` messages reach the client verbatim (they are written for the
    model); any other exception becomes a generic tool error, so stack details
    and secrets never leave the process.
    """
    server: FastMCP[Any] = FastMCP(
        name,
        version=version,
        instructions=instructions,
        lifespan=lifespan,
        mask_error_details=True,
        # What fastmcp installs by default (RequestStateSecurity.ephemeral()), with the
        # AES-GCM codec built at first use, so cryptography loads only if requestState does.
        request_state_security=RequestStateSecurity(codec=LazyRequestStateCodec()),
    )
    server.custom_route("/health", methods=["GET"])(
        health_endpoint(name, version, dict(checks or {}))
    )
    return server
