"""``python -m mcp_memory [--stdio]``: serve the conversation memory tools."""

from __future__ import annotations

from mcp_memory.settings import MemorySettings
from meshkit import lean, load_settings, serve

DEFAULT_PORT = 8104


def main() -> None:
    lean.install()  # before fastmcp, mcp and uvicorn are imported
    from mcp_memory.server import build_server  # noqa: PLC0415

    memory = load_settings(MemorySettings)

    serve(lambda _: build_server(memory), name="memory", default_port=DEFAULT_PORT)


if __name__ == "__main__":
    main()
