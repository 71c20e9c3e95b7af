"""Remembered rules and notes as Markdown a person can edit, to keep memory in git or a
synced folder (``clawmesh memory export|import``: commands.py).

    # Remembered by clawdia

    ## For everyone
    - Answer in English

    ## About user 4242
    - Has a dog called Rex

``## For everyone`` holds the agent's rules (scope agent), ``## About user <id>`` one user's
notes; each memory is one ``- `` line of at most 300 characters, imported as plain text
(``meshkit.text.one_line``, as a tap remembers it). Blank lines and ``#``
titles are ignored. Forgetting stays a tap (/memory): an import only adds.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from pathlib import Path

from mcp_memory.memories import MAX_TEXT
from mcp_memory.memory_store import MemoryStore
from meshkit.errors import BadFile
from meshkit.text import one_line

EVERYONE = "## For everyone"
_USER = re.compile(r"## About user (\S{1,200})")
Entry = tuple[str, str, str]  # scope, user ("" for agent), text


def render(agent: str, entries: Iterable[Entry]) -> str:
    lines = [f"# Remembered by {agent}"]
    heading = None
    for scope, user, text in entries:
        wanted = EVERYONE if scope == "agent" else f"## About user {user}"
        if wanted != heading:
            lines += ["", wanted]
            heading = wanted
        lines.append(f"- {text}")
    return "\n".join(lines) + "\n"


def parse(lines: Iterable[str]) -> list[Entry]:
    """Every memory of the file, or BadFile naming every problem (with line numbers)."""
    entries: list[Entry] = []
    problems: list[str] = []
    section: tuple[str, str] | None = None
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\n").strip()
        if not line or (line.startswith("# ") and not line.startswith("## ")):
            continue
        found = _USER.fullmatch(line)
        if line == EVERYONE:
            section = ("agent", "")
        elif found is not None:
            section = ("user", found.group(1))
        elif line.startswith("## "):
            problems.append(
                f"line {number}: unknown section {line!r}; use '{EVERYONE}' or '## About user <id>'"
            )
            section = None
        elif line.startswith(("- ", "* ")):
            text = one_line(line[2:])
            if section is None:
                problems.append(f"line {number}: a memory outside a section; put it under one")
            elif not text:
                problems.append(f"line {number}: an empty memory")
            elif len(text) > MAX_TEXT:
                problems.append(f"line {number}: {len(text)} characters, at most {MAX_TEXT}")
            else:
                entries.append((*section, text))
        else:
            problems.append(
                f"line {number}: not a '- ' memory line or a '##' section: {line[:40]!r}"
            )
    if problems:
        raise BadFile(problems)
    return entries


async def export_markdown(path: Path, agent: str, user: str | None) -> str:
    store = MemoryStore(path)
    try:
        return render(agent, await store.everything(agent, user))
    finally:
        await store.aclose()


async def import_entries(path: Path, agent: str, entries: list[Entry]) -> tuple[int, int]:
    store = MemoryStore(path)
    try:
        return await store.load(agent, entries, time.time())
    finally:
        await store.aclose()
