"""``python -m mcp_memory [--stdio]``: serve the conversation memory tools."""

from __future__ import annotations

from mcp_memory.server import build_server
from mcp_memory.settings import MemorySettings
from meshkit.serve import run_server


def main() -> None:
    run_server(MemorySettings, build_server, name="memory", default_port=8104)


if __name__ == "__main__":
    main()
