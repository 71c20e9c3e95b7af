"""meshkit: what every clawmesh MCP server and the orchestrator share."""

from __future__ import annotations

from meshkit.health import Check
from meshkit.http import build_http_app
from meshkit.logs import configure_logging
from meshkit.serve import run_server
from meshkit.server import create_server
from meshkit.settings import DataSettings, ServeSettings, load_settings

__all__ = [
    "Check",
    "DataSettings",
    "ServeSettings",
    "build_http_app",
    "configure_logging",
    "create_server",
    "load_settings",
    "run_server",
]
