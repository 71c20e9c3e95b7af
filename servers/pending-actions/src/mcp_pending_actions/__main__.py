"""Serve the pending-actions tools, or read the consent ledger.

    python -m mcp_pending_actions              Streamable HTTP at /mcp on $MCP_PORT (default
                                               8105; needs MESH_TOKEN_SHA256)
    python -m mcp_pending_actions --stdio      stdio
    python -m mcp_pending_actions audit ...    clawmesh audit, in the server's container
                                               (commands.py)

Data lives in $DATA_DIR (pending_actions.sqlite3).
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp_pending_actions.server import build_server
from mcp_pending_actions.settings import PendingSettings
from meshkit.serve import run_server
from meshkit.stopping import Stopping


def main(argv: Sequence[str] | None = None) -> None:
    stopping = Stopping()  # ends open next_notices polls at once on SIGTERM
    run_server(
        PendingSettings,
        lambda settings: build_server(settings, stopping=stopping),
        name="pending-actions",
        default_port=8105,
        stopping=stopping,
        argv=argv,
        description=__doc__,
        commands=("audit",),
    )


if __name__ == "__main__":
    main()
