"""``clawmesh memory export|import``: remembered rules and notes as Markdown (markdown.py
says the format). In a container: ``docker compose exec memory python -m mcp_memory export``.

    clawmesh memory export --agent X [--user U] > memory.md
    clawmesh memory import memory.md --agent X [--json]

An import checks the whole file first: on any problem, each is printed with its line number,
nothing is imported and the exit code is 2. Memories remembered already are skipped, so
importing a file again adds nothing.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import anyio
from cyclopts import App, Parameter

from mcp_memory.markdown import export_markdown, import_entries, parse
from mcp_memory.settings import MemorySettings
from meshkit.command import Json, guarded, read_file, run, settings_of
from meshkit.private import private_output

app = App(name="memory", help="Remembered rules and notes as Markdown, out and in.")


@app.command
def export(
    *,
    agent: Annotated[str, Parameter(help="whose memory")],
    user: Annotated[str | None, Parameter(help="only this user's notes (default: all)")] = None,
) -> None:
    """Write an agent's rules and notes as Markdown on stdout (> memory.md: private)."""

    def run() -> None:
        settings = settings_of(MemorySettings)
        private_output(sys.stdout)  # "> memory.md": the notes are as private as the database
        sys.stdout.write(anyio.run(export_markdown, settings.memories_path, agent, user))

    guarded(run, as_json=False)


@app.command(name="import")
def import_(
    file: Path,
    /,
    *,
    agent: Annotated[str, Parameter(help="whose memory it becomes")],
    as_json: Json = False,
) -> None:
    """Add the memories of a Markdown file (from export): checked first, nothing on an error;
    what is remembered already is skipped."""

    def run() -> None:
        settings = settings_of(MemorySettings)
        entries = read_file(file, parse)
        added, present = anyio.run(import_entries, settings.memories_path, agent, entries)
        if as_json:
            print(json.dumps({"agent": agent, "added": added, "present": present}))
            return
        print(f"imported {added} memories ({present} already remembered) for agent {agent}")

    guarded(run, as_json=as_json)


def main(argv: Sequence[str]) -> None:
    """``python -m mcp_memory export|import ...``, in the server's container."""
    run(app, argv, prog="python -m mcp_memory")
