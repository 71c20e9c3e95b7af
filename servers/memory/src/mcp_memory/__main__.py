"""Serve the memory tools, or move remembered rules and notes in and out as Markdown.

    python -m mcp_memory                       Streamable HTTP at /mcp on $MCP_PORT (default
                                               8104; needs MESH_TOKEN_SHA256)
    python -m mcp_memory --stdio               stdio, for local MCP clients
    python -m mcp_memory export --agent X [--user U] > memory.md
    python -m mcp_memory import memory.md --agent X
                                               see `python -m mcp_memory import --help`

Data lives in $DATA_DIR (memory.sqlite3, memories.sqlite3, questions.sqlite3).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from mcp_memory import markdown
from mcp_memory.server import build_server
from mcp_memory.settings import MemorySettings
from meshkit.serve import run_server
from meshkit.settings import load_dotenv


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["export"]:
        load_dotenv()
        raise SystemExit(markdown.export_main(args[1:]))
    if args[:1] == ["import"]:
        load_dotenv()
        raise SystemExit(markdown.import_main(args[1:]))
    run_server(
        MemorySettings,
        build_server,
        name="memory",
        default_port=8104,
        argv=args,
        description=__doc__,
        secrets=lambda settings: [settings.relay_credential],
    )


if __name__ == "__main__":
    main()
