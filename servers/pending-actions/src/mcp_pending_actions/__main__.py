"""``python -m mcp_pending_actions [--stdio]``: serve the pending-actions tools."""

from __future__ import annotations

from mcp_pending_actions.settings import PendingSettings
from meshkit import lean, load_settings, serve

DEFAULT_PORT = 8105


def main() -> None:
    lean.install()  # before fastmcp, mcp and uvicorn are imported
    from mcp_pending_actions.server import build_server  # noqa: PLC0415

    pending = load_settings(PendingSettings)

    serve(lambda _: build_server(pending), name="pending-actions", default_port=DEFAULT_PORT)


if __name__ == "__main__":
    main()
