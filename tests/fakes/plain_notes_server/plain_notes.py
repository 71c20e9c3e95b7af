"""A stdio MCP server written with the official SDK alone, as many published servers are: its
tools carry no annotations at all, so by the MCP specification's defaults each may change
anything. It keeps notes in the JSON file its one argument names, for a test to read.

    python tests/fakes/plain_notes_server/plain_notes.py NOTES.json
    plain-notes NOTES.json          (installed from its wheel: pyproject.toml beside it)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer


def build(path: Path) -> MCPServer:
    server = MCPServer("notes")

    def notes() -> list[str]:
        return list(json.loads(path.read_text())) if path.exists() else []

    @server.tool()
    def add_note(text: str) -> str:
        """Add a note."""
        path.write_text(json.dumps([*notes(), text]))
        return f"added note {len(notes())}: {text}"

    @server.tool()
    def count_notes() -> str:
        """How many notes there are (it changes nothing, but does not say so)."""
        return str(len(notes()))

    @server.tool()
    def clear_notes() -> str:
        """Remove every note."""
        path.write_text("[]")
        return "cleared"

    return server


def main() -> None:
    build(Path(sys.argv[1])).run("stdio")


if __name__ == "__main__":
    main()
