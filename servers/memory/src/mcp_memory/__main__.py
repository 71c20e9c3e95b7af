"""Serve the memory tools, or move remembered rules and notes in and out as Markdown.

    python -m mcp_memory                       Streamable HTTP at /mcp on $MCP_PORT (default
                                               8104; needs MESH_TOKEN_SHA256)
    python -m mcp_memory --stdio               stdio, for local MCP clients
    python -m mcp_memory export|import ...     clawmesh memory export|import, in the
                                               server's container (commands.py)

Data lives in $DATA_DIR (memory.sqlite3, memories.sqlite3, questions.sqlite3).
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp_memory.server import build_server
from mcp_memory.settings import MemorySettings
from meshkit.serve import run_server


def main(argv: Sequence[str] | None = None) -> None:
    run_server(
        MemorySettings,
        build_server,
        name="memory",
        default_port=8104,
        argv=argv,
        description=__doc__,
        secrets=lambda settings: [settings.relay_credential],
        commands=("export", "import"),
    )


if __name__ == "__main__":
    main()
