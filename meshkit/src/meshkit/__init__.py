"""meshkit: what every clawmesh MCP server and the orchestrator share.

Importing meshkit does not import fastmcp, mcp or uvicorn (``build_http_app`` and
``create_server`` load on first use), so ``meshkit.lean.install()`` can run first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from meshkit.health import Check
from meshkit.logs import configure_logging
from meshkit.serve import serve
from meshkit.settings import ServeSettings, load_settings

if TYPE_CHECKING:
    from meshkit.http import build_http_app
    from meshkit.server import create_server

__all__ = [
    "Check",
    "ServeSettings",
    "build_http_app",
    "configure_logging",
    "create_server",
    "load_settings",
    "serve",
]


def __getattr__(name: str) -> Any:
    if name == "build_http_app":
        from meshkit.http import build_http_app  # noqa: PLC0415

        return build_http_app
    if name == "create_server":
        from meshkit.server import create_server  # noqa: PLC0415

        return create_server
    raise AttributeError(f"module 'meshkit' has no attribute {name!r}")
