"""``python -m mcp_pending_actions [--stdio]``: serve the pending-actions tools."""

from __future__ import annotations

from mcp_pending_actions.server import build_server
from mcp_pending_actions.settings import PendingSettings
from meshkit.serve import run_server


def main() -> None:
    run_server(PendingSettings, build_server, name="pending-actions", default_port=8105)


if __name__ == "__main__":
    main()
