"""Serve the pending-actions tools, or read the consent ledger.

    python -m mcp_pending_actions              Streamable HTTP at /mcp on $MCP_PORT (default
                                               8105; needs MESH_TOKEN_SHA256)
    python -m mcp_pending_actions --stdio      stdio
    python -m mcp_pending_actions audit [--since 2h|2026-11-01] [--json] [--verify]
                                               the ledger; --verify checks its hash chain

Data lives in $DATA_DIR (pending_actions.sqlite3).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from mcp_pending_actions import audit
from mcp_pending_actions.server import build_server
from mcp_pending_actions.settings import PendingSettings
from meshkit.serve import run_server
from meshkit.settings import load_dotenv
from meshkit.stopping import Stopping


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["audit"]:
        load_dotenv()
        raise SystemExit(audit.main(args[1:]))
    stopping = Stopping()  # ends open next_notices polls at once on SIGTERM
    run_server(
        PendingSettings,
        lambda settings: build_server(settings, stopping=stopping),
        name="pending-actions",
        default_port=8105,
        stopping=stopping,
        argv=args,
        description=__doc__,
    )


if __name__ == "__main__":
    main()
