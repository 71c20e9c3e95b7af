"""Serve the shopping tools, or import order history.

    python -m mcp_shopping                     Streamable HTTP at /mcp on $MCP_PORT (default
                                               8103; needs MESH_TOKEN_SHA256)
    python -m mcp_shopping --stdio             stdio, for local MCP clients
    python -m mcp_shopping import|forget-examples ...
                                               clawmesh shopping import|forget-examples, in
                                               the server's container (commands.py)

Data lives in $DATA_DIR/shopping.sqlite3. Approval tokens are checked with pending-actions'
public key: MESH_APPROVAL_PUBLIC_KEY_FILE, else $DATA_DIR/approval_public_key.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp_shopping.server import build_server
from mcp_shopping.settings import ShoppingSettings
from meshkit.serve import run_server


def main(argv: Sequence[str] | None = None) -> None:
    run_server(
        ShoppingSettings,
        build_server,
        name="shopping",
        default_port=8103,
        argv=argv,
        description=__doc__,
        secrets=lambda settings: [settings.relay_credential],
        commands=("import", "forget-examples"),
    )


if __name__ == "__main__":
    main()
