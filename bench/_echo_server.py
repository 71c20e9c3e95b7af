"""A one-tool clawmesh server for ``bench.hop``, served the way every server is.

python -m bench._echo_server            guarded Streamable HTTP (needs MESH_TOKEN_SHA256, MCP_PORT)
python -m bench._echo_server --stdio    stdio
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from meshkit.serve import run_server
from meshkit.server import create_server
from meshkit.settings import DataSettings
from meshkit.tool_classes import read

DEFAULT_PORT = 8199


def build_server() -> FastMCP[Any]:
    server = create_server("echo", version="0.1.0", instructions="Echoes integers back.")

    @server.tool(**read())
    async def echo(x: Annotated[int, Field(le=2**63 - 1)]) -> int:
        """Return x unchanged."""
        return x

    return server


if __name__ == "__main__":
    run_server(DataSettings, lambda _: build_server(), name="echo", default_port=DEFAULT_PORT)
