"""``python -m mcp_gateway [--stdio]``: serve one MCP server (``GATEWAY_COMMAND``, over stdio)
as a capability of the mesh: its reads as they are, its changes behind a tap."""

from __future__ import annotations

from mcp_gateway.server import build_server
from mcp_gateway.settings import GatewaySettings
from meshkit.serve import run_server

PORT = 8110


def main() -> None:
    run_server(
        GatewaySettings,
        build_server,
        name="gateway",
        default_port=PORT,
        secrets=lambda settings: [settings.relay_credential, *settings.secret_values()],
        description=__doc__,
    )


if __name__ == "__main__":
    main()
