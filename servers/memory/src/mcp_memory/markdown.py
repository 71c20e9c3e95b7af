"""``python -m mcp_memory export|import``: remembered rules and notes as Markdown a person can
edit, to keep memory in git or a synced folder.

    # Remembered by clawdia

    ## For everyone
    - Answer in English

    ## About user 4242
    - Has a dog called Rex

``## For everyone`` holds the agent's rules (scope agent), ``## About user <id>`` one user's
notes; each memory is one ``- `` line of at most 300 characters, imported as plain text
(``meshkit.text.one_line``, as a tap remembers it). Blank lines and ``#``
titles are ignored. An import checks the whole file first: on any problem, each is printed
with its line number, nothing is imported and the exit code is 2. Memories remembered
already are skipped, so importing a file again adds nothing. Forgetting stays a tap
(/memory): an import only adds.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import anyio

from mcp_memory.memories import MAX_TEXT
from mcp_memory.memory_store import MemoryStore
from mcp_memory.settings import MemorySettings
from meshkit.private import private_output
from meshkit.settings import load_settings
from meshkit.text import one_line

BAD_FILE_EXIT = 2
EVERYONE = "## For everyone"
_USER = re.compile(r"## About user (\S{1,200})")
Entry = tuple[str, str, str]  # scope, user ("" for agent), text


class BadFile(Exception):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


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


async def _export(path: Path, agent: str, user: str | None) -> str:
    store = MemoryStore(path)
    try:
        return render(agent, await store.everything(agent, user))
    finally:
        await store.aclose()


async def _import(path: Path, agent: str, entries: list[Entry]) -> tuple[int, int]:
    store = MemoryStore(path)
    try:
        return await store.load(agent, entries, time.time())
    finally:
        await store.aclose()


def export_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mcp_memory export", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument("--agent", required=True, help="whose memory")
    parser.add_argument("--user", help="only this user's notes (default: every user's)")
    args = parser.parse_args(argv)
    settings = load_settings(MemorySettings)
    private_output(sys.stdout)  # "> memory.md": the notes are as private as the database
    sys.stdout.write(anyio.run(_export, settings.memories_path, args.agent, args.user))
    return 0


def import_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mcp_memory import", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument("file", type=Path, help="the Markdown file (from export)")
    parser.add_argument("--agent", required=True, help="whose memory it becomes")
    args = parser.parse_args(argv)
    settings = load_settings(MemorySettings)
    try:
        with args.file.open(encoding="utf-8-sig") as lines:
            entries = parse(lines)
    except OSError as error:
        return _refuse([f"cannot read {args.file}: {error.strerror}"])
    except UnicodeDecodeError:
        return _refuse([f"{args.file} is not UTF-8 text"])
    except BadFile as bad:
        return _refuse([*bad.problems, f"nothing was imported from {args.file}"])
    added, present = anyio.run(_import, settings.memories_path, args.agent, entries)
    print(f"imported {added} memories ({present} already remembered) for agent {args.agent}")
    return 0


def _refuse(problems: list[str]) -> int:
    for problem in problems:
        print(problem, file=sys.stderr)
    return BAD_FILE_EXIT
